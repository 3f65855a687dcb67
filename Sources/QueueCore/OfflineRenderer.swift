/// Offline rendering of a playback queue (AudioQueueSetOfflineRenderFormat /
/// AudioQueueOfflineRender): a private ManualDriver client with the queue's ports runs
/// the queue's own realtime kernel, one device period per cycle, whenever the caller asks
/// for frames. Callbacks, volume, ramps, pan, trims, timed buffers, parameter events and
/// resampling are the same code as on JACK; the cycles wait for the queue thread
/// instead of dropping, so nothing is lost however slow a callback is.
///
/// Cycles are always one device period (the JACK period when the queue went offline),
/// whatever the caller asks for: frames rendered and not yet asked for wait in a staging
/// buffer. So the samples are the ones JACK would play, to the bit, however the caller
/// slices the render (volume ramps and control-thread parameter changes fall on the same
/// cycle boundaries as on JACK).
///
/// The clock runs at the render format's rate: the queue converts to it as it would to a
/// JACK server at that rate, so a render at the queue's own rate is not resampled at all.
///
/// Thread safety: `render` and `discard` are serialized by the engine's offline lock.
final class OfflineRenderer: @unchecked Sendable {
    let driver: ManualDriver
    let device: ManualDevice
    /// The format the caller gets (interleaved linear PCM).
    let format: StreamFormat
    private let codec: SampleCodec
    private let portCount: Int
    /// Rendered frames not yet handed out.
    private let staging: PlaneBuffers
    private var stagedStart = 0
    private var stagedCount = 0
    private let zeros: UnsafeMutablePointer<Float>
    private let table: UnsafeMutablePointer<UnsafePointer<Float>>
    /// mSampleTime of the first render (the 0-frame priming call); nil before it.
    var origin: Double?
    /// Frames handed out (or discarded) since the origin.
    var position: Int64 = 0

    init(format: StreamFormat, online: AudioDevice, name: String, layout: PortLayout) throws {
        self.format = format
        codec = SampleCodec(format: format)
        portCount = layout.names.count
        // The clock runs at the render's rate: the queue converts to it as it would to a
        // server at that rate (and not at all when it is the queue's own rate).
        driver = ManualDriver(sampleRate: format.sampleRate, periodFrames: online.periodFrames,
                              physicalPortCount: 0, startFrame: online.currentFrame())
        // Nothing is real time offline: cycles wait for the queue thread, and never drop.
        driver.allowsWaiting = true
        guard let device = try driver.openDevice(name: name, direction: .output, layout: layout) as? ManualDevice else {
            throw QueueError.invalidDevice("offline client")
        }
        self.device = device
        let period = driver.periodFrames
        staging = PlaneBuffers(channelCount: format.channelCount, capacity: period)
        zeros = .allocate(capacity: period)
        zeros.initialize(repeating: 0, count: period)
        table = .allocate(capacity: format.channelCount)
    }

    deinit {
        zeros.deallocate()
        table.deallocate()
    }

    /// Renders `frames` frames into `destination` (interleaved, `format`).
    func render(frames: Int, into destination: UnsafeMutableRawPointer) {
        var done = 0
        while done < frames {
            if stagedCount == 0 { produce() }
            let count = min(stagedCount, frames - done)
            for c in 0..<format.channelCount { table[c] = UnsafePointer(staging.planes[c] + stagedStart) }
            codec.encode(UnsafePointer(table), frames: count, into: destination + done * format.bytesPerFrame)
            stagedStart += count
            stagedCount -= count
            done += count
        }
        position += Int64(frames)
    }

    /// Renders `frames` frames and drops them (a time stamp ahead of the frames rendered so far).
    func discard(frames: Int) {
        var done = 0
        while done < frames {
            if stagedCount == 0 { produce() }
            let count = min(stagedCount, frames - done)
            stagedStart += count
            stagedCount -= count
            done += count
        }
        position += Int64(frames)
    }

    /// Runs one device cycle and stages its frames (channel c is port c; channels
    /// beyond the queue's ports are silent).
    private func produce() {
        let period = driver.periodFrames
        driver.run(cycles: 1)
        for c in 0..<format.channelCount {
            let source = c < portCount ? UnsafePointer(device.buffers[c]) : UnsafePointer(zeros)
            staging.planes[c].update(from: source, count: period)
        }
        stagedStart = 0
        stagedCount = period
    }
}

extension OutputQueueEngine {
    /// True while the queue renders offline (AudioQueueSetOfflineRenderFormat).
    public var isOffline: Bool { deviceSwitch.renderer != nil }

    /// The offline render format, while offline.
    public var offlineFormat: StreamFormat? { deviceSwitch.renderer?.format }

    /// Switches the queue to offline rendering in `format` (interleaved linear PCM, any
    /// rate and channel count), or back to the device with nil. The queue must be stopped
    /// (`.invalidRunState`), and, to change the rate, have nothing decoded; buffers already
    /// enqueued stay enqueued.
    public func setOfflineRenderFormat(_ format: StreamFormat?) throws {
        _ = try lock.withLock { try life.handle(.reconfigure("stop the queue before changing its rendering mode")) }
        let decodeFrames = decodeBufferFrames
        let rampSeconds = volumeRampTime
        guard let format else {
            guard isOffline else { return }
            deviceSwitch.goOnline()
            try adoptDeviceRate(decodeFrames: decodeFrames, rampSeconds: rampSeconds)
            connectionLock.withLock {
                let target = lock.withLock { connectionTarget ?? currentTarget }
                let ports = target.isEmpty ? [] : ((try? device.connect(to: target)) ?? [])
                lock.withLock { connectedPorts = ports }
            }
            notify(.deviceChannelsChanged)
            return
        }
        guard format.encoding == .linearPCM else {
            throw QueueError.unsupportedFormat("offline rendering produces linear PCM")
        }
        guard !format.isNonInterleaved || format.channelCount == 1 else {
            throw QueueError.unsupportedFormat("offline rendering produces interleaved linear PCM")
        }
        try format.validate(allowsZeroRate: false, bytesPerPacket: format.bytesPerFrame, framesPerPacket: 1)
        if isOffline { deviceSwitch.goOnline() }
        let layout = PortLayout.forQueue(direction: .output, channelCount: self.format.channelCount)
        let renderer = try OfflineRenderer(format: format, online: deviceSwitch.online,
                                           name: clientName + "-offline", layout: layout)
        deviceSwitch.goOffline(renderer)
        do {
            try adoptDeviceRate(decodeFrames: decodeFrames, rampSeconds: rampSeconds)
        } catch {
            deviceSwitch.goOnline()
            try? adoptDeviceRate(decodeFrames: decodeFrames, rampSeconds: rampSeconds)
            throw error
        }
        let before = lock.withLock { () -> Int in
            defer { connectedPorts = [] }
            return connectedPorts.count
        }
        if before != 0 { notify(.deviceChannelsChanged) }
    }

    /// AudioQueueOfflineRender: renders the next `frames` frames, from `sampleTime` (the
    /// render's own time line: the first call sets its origin), into the data of the
    /// queue's buffer `handle`, which must not be enqueued. Returns the bytes written.
    /// Throws `.invalidOfflineMode` unless the queue is offline.
    public func renderOffline(sampleTime: Double, frames: Int, into handle: UnsafeMutableRawPointer) throws -> Int {
        let (destination, byteCapacity) = try lock.withLock { () throws -> (UnsafeMutableRawPointer, Int) in
            try checkUsable()
            guard let buffer = buffers[handle] else { throw QueueError.invalidBuffer }
            guard buffer.ownership == .application else { throw QueueError.bufferInQueue }
            return (buffer.data, buffer.byteCapacity)
        }
        return try deviceSwitch.offlineLock.withLock {
            guard let renderer = deviceSwitch.renderer else {
                throw QueueError.invalidOfflineMode("the queue is not in offline mode (AudioQueueSetOfflineRenderFormat)")
            }
            guard frames >= 0, frames <= byteCapacity / renderer.format.bytesPerFrame else {
                throw QueueError.invalidParameter("\(frames) frames do not fit the buffer's \(byteCapacity) bytes")
            }
            guard sampleTime.isFinite, abs(sampleTime) < Double(Int64(1) << 48) else {
                throw QueueError.invalidParameter("time stamp \(sampleTime)")
            }
            let origin = renderer.origin ?? sampleTime
            renderer.origin = origin
            let expected = origin + Double(renderer.position)
            let ahead = Int64((sampleTime - expected).rounded())
            guard ahead >= 0 else {
                throw QueueError.invalidParameter("time stamp \(sampleTime) is before the \(expected) rendered to")
            }
            if ahead > 0 { renderer.discard(frames: Int(ahead)) }
            renderer.render(frames: frames, into: destination)
            return frames * renderer.format.bytesPerFrame
        }
    }
}
