import Glibc

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
    /// Frames per cycle (the JACK period when the queue went offline).
    let period: Int
    /// Frames of the last cycle that are the queue's output (the kernel's `cycleOutputFrames`).
    var outputFrames: () -> Int = { 0 }
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
        period = driver.periodFrames
        staging = PlaneBuffers(channelCount: format.channelCount, capacity: period)
        zeros = .allocate(capacity: period)
        zeros.initialize(repeating: 0, count: period)
        table = .allocate(capacity: format.channelCount)
    }

    deinit {
        zeros.deallocate()
        table.deallocate()
    }

    /// Renders up to `frames` frames into `destination` (interleaved, `format`) and returns
    /// how many it rendered: fewer once the queue has played out what was enqueued (Apple:
    /// "may return fewer frames than requested ... if insufficient data was enqueued"), 0 while
    /// it is stopped or paused. `nextCycle(period)` says how many frames the next cycle may
    /// render (see `OutputQueueEngine.offlineCycleFrames`): never silence the queue did not play.
    func render(frames: Int, into destination: UnsafeMutableRawPointer, nextCycle: (Int) -> Int) -> Int {
        var done = 0
        while done < frames {
            if stagedCount == 0 && !produce(nextCycle) { break }
            let count = min(stagedCount, frames - done)
            for c in 0..<format.channelCount { table[c] = UnsafePointer(staging.planes[c] + stagedStart) }
            codec.encode(UnsafePointer(table), frames: count, into: destination + done * format.bytesPerFrame)
            stagedStart += count
            stagedCount -= count
            done += count
        }
        position += Int64(done)
        return done
    }

    /// Renders up to `frames` frames and drops them (a time stamp ahead of the frames rendered
    /// so far); returns how many.
    func discard(frames: Int, nextCycle: (Int) -> Int) -> Int {
        var done = 0
        while done < frames {
            if stagedCount == 0 && !produce(nextCycle) { break }
            let count = min(stagedCount, frames - done)
            stagedStart += count
            stagedCount -= count
            done += count
        }
        position += Int64(done)
        return done
    }

    /// Runs one device cycle of the frames the queue has for it (a period, or fewer while it
    /// waits for data or at the end of its stream) and stages the frames that are its output
    /// (channel c is port c; channels beyond the queue's ports are silent). False if there
    /// was nothing to render.
    private func produce(_ nextCycle: (Int) -> Int) -> Bool {
        let frames = nextCycle(period)
        guard frames > 0 else { return false }
        if frames != period { driver.periodFrames = frames }
        driver.run(cycles: 1)
        if frames != period { driver.periodFrames = period }
        let output = min(outputFrames(), frames)
        guard output > 0 else { return false }
        for c in 0..<format.channelCount {
            let source = c < portCount ? UnsafePointer(device.buffers[c]) : UnsafePointer(zeros)
            staging.planes[c].update(from: source, count: output)
        }
        stagedStart = 0
        stagedCount = output
        return true
    }
}

extension OutputQueueEngine {
    /// True while the queue renders offline (AudioQueueSetOfflineRenderFormat).
    public var isOffline: Bool { deviceSwitch.renderer != nil }

    /// Switches the queue to offline rendering in `format` (interleaved linear PCM, any
    /// rate and channel count), or back to the device with nil. The queue must be stopped
    /// (`.invalidRunState`), and, to change the rate, have nothing decoded; buffers already
    /// enqueued stay enqueued.
    public func setOfflineRenderFormat(_ format: StreamFormat?) throws {
        _ = try lock.withLock { try $0.life.handle(.reconfigure("stop the queue before changing its rendering mode")) }
        let decodeFrames = decodeBufferFrames
        let rampSeconds = volumeRampTime
        guard let format else {
            guard isOffline else { return }
            deviceSwitch.goOnline()
            try adoptDeviceRate(decodeFrames: decodeFrames, rampSeconds: rampSeconds)
            connectionLock.withLock {
                let target = lock.withLock { $0.effectiveTarget }
                let ports = target.isEmpty ? [] : ((try? device.connect(to: target)) ?? [])
                lock.withLock { $0.connectedPorts = ports }
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
        renderer.outputFrames = { [context] in context.pointee.state.pointee.cycleOutputFrames }
        deviceSwitch.goOffline(renderer)
        do {
            try adoptDeviceRate(decodeFrames: decodeFrames, rampSeconds: rampSeconds)
        } catch {
            deviceSwitch.goOnline()
            try? adoptDeviceRate(decodeFrames: decodeFrames, rampSeconds: rampSeconds)
            throw error
        }
        let before = lock.withLock { state -> Int in
            defer { state.connectedPorts = [] }
            return state.connectedPorts.count
        }
        if before != 0 { notify(.deviceChannelsChanged) }
    }

    /// AudioQueueOfflineRender: renders the next `frames` frames, from `sampleTime` (the
    /// render's own time line: the first call sets its origin), into the data of the
    /// queue's buffer `handle`, which must not be enqueued. Returns the bytes written: fewer
    /// than asked once the queue has played out what was enqueued, none while it is stopped.
    /// While the queue waits for its callback to enqueue more, the render waits too (the
    /// output has no silence the queue did not play); `pump` runs meanwhile, on this thread
    /// (the API layer runs there the callbacks posted to this thread's run loop).
    /// Throws `.invalidOfflineMode` unless the queue is offline.
    public func renderOffline(sampleTime: Double, frames: Int, into handle: UnsafeMutableRawPointer,
                              pump: () -> Void = {}) throws -> Int {
        let (destination, byteCapacity) = try lock.withLock { state throws -> (UnsafeMutableRawPointer, Int) in
            try state.life.checkUsable()
            guard let buffer = state.buffers[handle] else { throw QueueError.invalidBuffer }
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
            let nextCycle = { (period: Int) in self.offlineCycleFrames(renderer, period: period, pump: pump) }
            if ahead > 0 {
                let skipped = renderer.discard(frames: Int(ahead), nextCycle: nextCycle)
                // Nothing more to play: the time stamp is past the end of the queue's output.
                if skipped < Int(ahead) { return 0 }
            }
            return renderer.render(frames: frames, into: destination, nextCycle: nextCycle) * renderer.format.bytesPerFrame
        }
    }

    /// How many frames the next offline cycle may render (a period at most): it waits first,
    /// as a cycle in freewheel does, for the queue thread to convert what is enqueued and for
    /// callbacks out to return (running `pump` meanwhile). Then: a period while the queue waits
    /// for a scheduled start or plays towards a set end of stream; otherwise what the ring
    /// holds (the queue's callbacks enqueued no more); none while it is stopped or paused.
    /// Applies pending commands (Start, Stop, the end of stream) first, since no other cycle
    /// runs on the offline clock, so a cycle never starts on a ring the command would change.
    private func offlineCycleFrames(_ renderer: OfflineRenderer, period: Int, pump: () -> Void) -> Int {
        let c = context
        let frameTime = renderer.driver.frameTime
        let state = c.pointee.state
        let read = state.pointee.ring.readIndex.load(ordering: .relaxed)
        // Buffers whose frames the cycle needs played are returned to their callback meanwhile.
        c.pointee.demandPosition.store(read + period, ordering: .sequentiallyConsistent)
        defer { c.pointee.demandPosition.store(0, ordering: .relaxed) }
        // A callback that never returns (posted to a run loop nobody runs) ends the wait: the
        // render then returns what the queue had, never silence in its place.
        let cycleLock = renderer.driver.cycleLock
        c.pointee.waitForQueueThread(seconds: 10, pump: {
            pump()
            if cycleLock.withLock({ applyOutputCommands(state) }) { sem_post(c.pointee.queueWake) }
        }, until: { outputCycleNeedsNoWait(c, frameTime: frameTime, frames: period) })
        return cycleLock.withLock {
            if applyOutputCommands(state) { sem_post(c.pointee.queueWake) }
            let core = state.pointee.core
            var lead = 0
            switch core.pointee.mode {
            case ModeCode.running:
                break
            case ModeCode.armed:
                let start = core.pointee.armedFrame
                if start != .min {
                    if start - frameTime >= Int64(period) { return period }
                    lead = Int(max(0, start - frameTime))
                }
            default:
                return 0
            }
            if state.pointee.endOfStream != .max { return period }
            return lead + min(period - lead, state.pointee.ring.readableFrames())
        }
    }
}
