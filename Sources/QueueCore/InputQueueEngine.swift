import Glibc
import Synchronization

/// A recording audio queue: the realtime side captures into a ring with each
/// cycle's frame time; the queue thread converts (and resamples) into the
/// enqueued buffers and calls the input callback for each full buffer.
public final class InputQueueEngine: QueueEngine, @unchecked Sendable {
    let context: UnsafeMutablePointer<InputRealtimeContext>
    var realtime: UnsafeMutablePointer<InputRealtimeState> { context.pointee.state }
    let codec: SampleCodec
    private(set) var resampler: Resampler?
    /// The resampler was told its input ended (its tail is being drained) and not cleared since
    /// (queue thread): it must not be given input again before `resetResampler()`.
    private var resamplerEnded = false
    /// A processing tap on what is recorded (InputQueueEngine+Tap.swift); its lock is held while it runs.
    let tapSlot = Locked<ProcessingTap?>(nil)
    let inputCallback: @Sendable (QueueBuffer, Int, Int, QueueTimeStamp) -> Void
    /// Compressed queues: the encoder stage (nil for PCM, µ-law and A-law).
    let packetStage: InputPacketStage?

    private let chunkFrames = 1024
    /// Ring bytes (every channel's) that wake the queue thread whatever its head buffer still
    /// needs (`armWakeThreshold`).
    static let wakeBytes = 512 * 1024
    /// Frames read from the ring (device rate) and the stage (queue rate) they become.
    private var readPlanes: PlaneBuffers!
    var stagePlanes: PlaneBuffers!
    private var stageCapacity: Int { stagePlanes.capacity }
    var stageStart = 0
    var stageCount = 0
    /// Direct capture (InputQueueEngine+Direct.swift): native Float32 planes at the device
    /// rate, no encoder, so the realtime side may write straight into the head buffer.
    private(set) var capturesDirectly = false
    /// The head buffer lent to the realtime side, and the frames it held then (queue thread).
    var lentHead: QueueBuffer?
    var lentFromFrames = 0
    /// Frames the realtime side wrote straight into buffers (queue thread; for tests).
    var framesCapturedDirectly = 0

    /// Seconds of audio the capture ring holds by default: what may be captured
    /// while no buffer is enqueued before frames are lost.
    public static let defaultRingSeconds = 5.0

    /// Creates a recording queue and its JACK client.
    /// - Parameters:
    ///   - format: a rate of 0 means the server's rate.
    ///   - callback: (buffer, bytes filled, packets, start time) for each filled buffer.
    ///   - encoder: for a compressed stream; `format` is then planar Float32 at the encoder's rate
    ///     and buffers fill with whole packets (`QueueBuffer.packets`).
    public init(format: StreamFormat, provider: DeviceProvider, clientName: String, executor: CallbackExecutor,
                encoder: PacketEncoding? = nil,
                callback: @escaping @Sendable (QueueBuffer, Int, Int, QueueTimeStamp) -> Void) throws {
        try format.validate(allowsZeroRate: true, bytesPerPacket: format.bytesPerFrame, framesPerPacket: 1)
        inputCallback = callback
        packetStage = encoder.map(InputPacketStage.init)
        let context = UnsafeMutablePointer<InputRealtimeContext>.allocate(capacity: 1)
        self.context = context
        codec = SampleCodec(format: format)
        do {
            try super.init(direction: .input, format: format, provider: provider, clientName: clientName,
                           executor: executor, realtimeLink: InputRealtimeLink(context: context))
        } catch {
            context.deallocate()
            throw error
        }
        let deviceRate = device.sampleRate
        // From here on the engine is whole, and its deinit frees the realtime memory: it must be
        // initialized before anything below can throw.
        let state = UnsafeMutablePointer<InputRealtimeState>.allocate(capacity: 1)
        state.initialize(to: InputRealtimeState(
            channelCount: format.channelCount, ringFrames: Int(deviceRate * Self.defaultRingSeconds),
            meterWindowFrames: Int(deviceRate * 0.05)))
        context.initialize(to: InputRealtimeContext(state: state, queueWake: wake.raw, realtimeWake: realtimeWake.raw))
        if self.format.sampleRate != deviceRate {
            do {
                resampler = try Resampler(inputRate: deviceRate, outputRate: self.format.sampleRate,
                                          channelCount: format.channelCount)
            } catch {
                device.close()
                throw error
            }
        }
        capturesDirectly = packetStage == nil && resampler == nil && codec.copiesNativeFloatPlanes
        readPlanes = PlaneBuffers(channelCount: format.channelCount, capacity: chunkFrames)
        stagePlanes = PlaneBuffers(
            channelCount: format.channelCount,
            capacity: Int((Double(chunkFrames) * self.format.sampleRate / deviceRate).rounded(.up)) + 1024)
        device.setProcessor(RealtimeProcessor(context: UnsafeMutableRawPointer(context), entry: inputRealtimeEntry))
        finishSetup(threadName: "aq-in")
    }

    /// Whether the capture ring's pages have been touched (see FrameRing.touch).
    private var ringTouched = false

    override func prepareTimeline(_ state: inout EngineState) {
        state.input.queueFrames = 0
        stageStart = 0
        stageCount = 0
    }

    override func perform(_ action: LifecycleAction) {
        switch action {
        case .prepareToStart:
            // The realtime side must not fault the ring's pages in: touch them before the first start.
            if !ringTouched {
                realtime.pointee.ring.touch()
                ringTouched = true
            }
        case .beginCaptureDrain:
            // Capture ends now; the queue thread delivers what was captured, then stops.
            send(.stop, synchronous: true)
            wake.post()
        case .deliverInvalidation:
            // The server is gone: deliver what was captured.
            drain(ignoringState: true)
            if let head = lock.withLock({ $0.fifo.first }), head.filledBytes > 0 { deliverHead(head) }
        default: break
        }
    }

    // MARK: Buffers

    /// Enqueues an empty buffer for the queue to fill.
    public func enqueue(_ handle: UnsafeMutableRawPointer) throws {
        try lock.withLock { state in
            let buffer = try checkEnqueue(handle, &state)
            realtime.pointee.wakeThreshold.store(0, ordering: .relaxed)
            guard buffer.byteCapacity >= format.bytesPerFrame else {
                throw QueueError.invalidParameter("a \(buffer.byteCapacity)-byte buffer can't hold one \(format.bytesPerFrame)-byte frame")
            }
            buffer.filledBytes = 0
            buffer.packets = []
            buffer.ownership = .enqueued
            state.fifo.append(buffer)
        }
        realtimeWake.post()
        wake.post()
    }

    // MARK: Control

    /// Flush's work (`QueueEngine.flush`): the capture ring is converted and the partly filled
    /// buffer is delivered; capture goes on into the next buffer. The resampler's tail is
    /// drained only on a stopped queue: a queue that captures on (running, or paused to resume)
    /// keeps its resampler's stream whole, and the frames still in its filter come with the next
    /// buffer. (Ending that stream mid-capture restarted the filter cold, a click and a slip of
    /// the queue's time, and libsoxr 0.1.3 crashes on input after the end of its input.)
    override func flushQueued() throws {
        let done = runOnQueueThread(request: { $0.input.flushTickets.request() }, isDone: { $0.input.flushTickets.isDone($1) })
        if !done { throw QueueError.queueThreadTimedOut("Flush", controlTimeout) }
    }

    // MARK: Properties

    /// Loss of recorded data so far.
    public var underrunInfo: RecordUnderrunInfo { lock.withLock { $0.input.underrun } }

    /// Seconds the capture ring holds.
    public var ringSeconds: Double { Double(realtime.pointee.ring.capacity) / device.sampleRate }

    /// Resizes the capture ring; allowed while stopped.
    public func setRingSeconds(_ seconds: Double) throws {
        guard seconds >= 0.05, seconds <= 600 else {
            throw QueueError.invalidPropertyValue("capture ring of \(seconds) s (0.05...600)")
        }
        try lock.withLock {
            try $0.life.checkUsable()
            guard $0.runState == .stopped else { throw QueueError.invalidRunState("resize the ring while stopped") }
        }
        let replacement = UnsafeMutablePointer<InputRealtimeState>.allocate(capacity: 1)
        replacement.initialize(to: InputRealtimeState(
            channelCount: format.channelCount, ringFrames: Int(device.sampleRate * seconds),
            meterWindowFrames: Int(device.sampleRate * 0.05)))
        replacement.pointee.meters.enabled.store(realtime.pointee.meters.enabled.load(ordering: .relaxed), ordering: .relaxed)
        let old = realtime
        swapRealtimeState(on: device, context: context,
                          to: InputRealtimeContext(state: replacement, queueWake: wake.raw, realtimeWake: realtimeWake.raw),
                          entry: inputRealtimeEntry, freeing: old)
        ringTouched = false
        lock.withLock {
            $0.seenStartCount = 0
            $0.seenFinishCount = 0
        }
    }

    /// Frames captured while the ring was full (device rate).
    public var droppedFrames: Int { lostFrames }

    // MARK: The queue thread's work

    override func serviceQueue() {
        collectLentHeadIfDue()
        handleResetRequest()
        handleFlushRequest()
        drain()
        finishStopIfDone()
        lendHeadIfPlain()
        armWakeThreshold()
    }

    /// Asks the realtime side to wake this thread when the ring holds enough to fill the
    /// head buffer (or half the ring when no buffer waits), rather than every cycle, and at
    /// the latest once it holds `wakeBytes` (all channels): the copy out of the ring then
    /// reads what the realtime side wrote while it is still in the cache. (Waking only per
    /// buffer, a 64-track take's 4 MiB buffers cost 10 % more CPU than 50 ms polls did.)
    private func armWakeThreshold() {
        let needed: Int = lock.withLock {
            guard let head = $0.fifo.first else { return realtime.pointee.ring.capacity / 2 }
            let frames = (head.byteCapacity - head.filledBytes) / format.bytesPerFrame
            return max(1, Int((Double(frames) / rateRatio).rounded(.up)))
        }
        let cached = max(chunkFrames, Self.wakeBytes / (max(1, format.channelCount) * MemoryLayout<Float>.size))
        let threshold = min(needed, cached, realtime.pointee.ring.capacity / 2)
        realtime.pointee.wakeThreshold.store(threshold, ordering: .relaxed)
        // Data that arrived meanwhile must not wait for the next threshold crossing.
        if realtime.pointee.ring.readableFrames() >= threshold { wake.post() }
    }

    /// (`state`: the lock's.)
    private func canDrain(_ state: EngineState) -> Bool {
        if state.life.isShutDown { return false }
        return state.runState != .stopped || realtime.pointee.ring.readableFrames() > 0 || stageCount > 0
    }

    func drain(ignoringState: Bool = false) {
        // While the head is lent the realtime side has it and the ring (direct capture).
        guard collectLentHead(reclaiming: ignoringState) else { return }
        while true {
            let head: QueueBuffer? = lock.withLock {
                guard ignoringState || canDrain($0), $0.resetTickets.isIdle || ignoringState else { return nil }
                return $0.fifo.first
            }
            guard let head else { break }
            if handleGapIfDue(head: head) { continue }
            if let packetStage {
                guard fillPackets(into: head, stage: packetStage, flush: false) else { break }
                continue
            }
            if resampler == nil && stageCount == 0 && !hasTap {
                // Same rate: encode straight from the ring into the buffer (no staging copy).
                guard encodeFromRing(into: head) else { break }
                continue
            }
            if stageCount == 0 && !fillStage(flush: false) { break }
            let capacityFrames = head.byteCapacity / format.bytesPerFrame
            let filledFrames = head.filledBytes / format.bytesPerFrame
            let count = min(stageCount, capacityFrames - filledFrames)
            if count > 0 {
                if filledFrames == 0 { head.firstQueueFrame = lock.withLock { $0.input.queueFrames } }
                encodeStage(count: count, into: head)
                head.filledBytes += count * format.bytesPerFrame
                lock.withLock { $0.input.queueFrames += Double(count) }
            }
            if filledFrames + count == capacityFrames { deliverHead(head) }
        }
        realtimeWake.post()
    }

    /// Encodes ring frames (up to the next gap, the buffer's room and the ring's wrap point)
    /// directly into `head`, delivering it when full; false if the ring had nothing.
    private func encodeFromRing(into head: QueueBuffer) -> Bool {
        let ring = realtime
        let readIndex = ring.pointee.ring.readIndex.load(ordering: .relaxed)
        var available = ring.pointee.ring.readableFrames()
        if let gap = ring.pointee.gaps.peek() { available = min(available, max(0, gap.position - readIndex)) }
        let capacityFrames = head.byteCapacity / format.bytesPerFrame
        let filledFrames = head.filledBytes / format.bytesPerFrame
        let offset = readIndex & ring.pointee.ring.mask
        let count = min(available, capacityFrames - filledFrames, ring.pointee.ring.capacity - offset)
        guard count > 0 else { return false }
        if filledFrames == 0 { head.firstQueueFrame = lock.withLock { $0.input.queueFrames } }
        let planes = readPlanes.view(at: 0)  // the table only: pointed at the ring
        for c in 0..<format.channelCount { planes[c] = ring.pointee.ring.plane(c) + offset }
        let target = encodeTarget(head)
        codec.encode(UnsafeRawPointer(planes).assumingMemoryBound(to: UnsafePointer<Float>.self), frames: count,
                     into: target.destination, planeStride: target.planeStride)
        ring.pointee.ring.readIndex.store(readIndex + count, ordering: .releasing)
        head.filledBytes += count * format.bytesPerFrame
        lock.withLock { $0.input.queueFrames += Double(count) }
        if filledFrames + count == capacityFrames { deliverHead(head) }
        return true
    }

    /// Handles a capture gap at the ring's read position (true if there was one): PCM delivers
    /// the head buffer and the next one starts after the frames lost; a compressed stream has no
    /// gaps, so the encoder gets silence for them and what follows keeps its time.
    private func handleGapIfDue(head: QueueBuffer) -> Bool {
        guard stageCount == 0, let gap = realtime.pointee.gaps.peek(),
              gap.position <= realtime.pointee.ring.readIndex.load(ordering: .relaxed) else { return false }
        _ = realtime.pointee.gaps.pop()
        if packetStage == nil, head.filledBytes > 0 { deliverHead(head) }
        resetResampler()
        // Whole frames for an encoder (its stream counts them); PCM keeps the exact queue time.
        let lost = packetStage == nil ? Double(gap.count) * rateRatio : (Double(gap.count) * rateRatio).rounded()
        let event: Void = lock.withLock { state in
            state.discontinuities += 1
            state.input.underrun.eventCount += 1
            state.input.underrun.framesLost += Int64(lost.rounded())
            state.input.underrun.lastLossSampleTime = state.input.queueFrames
            if packetStage == nil { state.input.queueFrames += lost }  // the encoder's silence advances it
        }
        _ = event
        if let packetStage { encodeSilence(frames: Int(lost), stage: packetStage) }
        notify(.recordUnderrun)
        return true
    }

    /// Clears the resampler's state: its next input starts a new stream (queue thread).
    func resetResampler() {
        guard let resampler else { return }
        resampler.reset()
        resamplerEnded = false
        lock.withLock { $0.input.resamplerHasInput = false }
    }

    /// Fills the stage from the ring (up to the next gap), resampling if needed; false if nothing came.
    func fillStage(flush: Bool) -> Bool {
        stageStart = 0
        stageCount = 0
        let readIndex = realtime.pointee.ring.readIndex.load(ordering: .relaxed)
        var available = realtime.pointee.ring.readableFrames()
        if let gap = realtime.pointee.gaps.peek() { available = min(available, max(0, gap.position - readIndex)) }
        let count = min(available, chunkFrames)
        if let resampler {
            if count > 0 {
                // Input after an ended stream (a tail not drained to its end): the filter
                // starts again, as after a gap, rather than take input it no longer accepts.
                if resamplerEnded { resetResampler() }
                realtime.pointee.ring.read(into: readPlanes.planes, offset: 0, count: count)
                var consumed = 0
                while consumed < count {
                    let (used, produced) = resampler.process(
                        input: readPlanes.readableView(at: consumed), inputFrames: count - consumed,
                        output: UnsafePointer(stagePlanes.view(at: stageCount)),
                        outputCapacity: stageCapacity - stageCount)
                    consumed += used
                    stageCount += produced
                    if used == 0 && produced == 0 { break }
                }
                lock.withLock { $0.input.resamplerHasInput = true }
            } else if flush, lock.withLock({ $0.input.resamplerHasInput }) {
                resamplerEnded = true
                let (_, produced) = resampler.process(input: nil, inputFrames: 0, output: UnsafePointer(stagePlanes.planes),
                                                      outputCapacity: stageCapacity)
                stageCount = produced
                if produced == 0 { resetResampler() }
            }
        } else if count > 0 {
            realtime.pointee.ring.read(into: stagePlanes.planes, offset: 0, count: count)
            stageCount = count
        }
        if stageCount > 0 { runTap(on: stagePlanes.planes, frames: stageCount) }
        return stageCount > 0
    }

    func encodeStage(count: Int, into head: QueueBuffer) {
        let target = encodeTarget(head)
        codec.encode(stagePlanes.readableView(at: stageStart), frames: count, into: target.destination,
                     planeStride: target.planeStride)
        stageStart += count
        stageCount -= count
    }

    /// Where the head buffer's next frame goes, and the distance between its channel planes
    /// (non-interleaved: each plane is the buffer's whole-frame capacity long while it fills).
    private func encodeTarget(_ head: QueueBuffer) -> (destination: UnsafeMutableRawPointer, planeStride: Int) {
        guard format.isNonInterleaved else { return (head.data + head.filledBytes, 0) }
        let sampleBytes = format.bytesPerSample
        let filledFrames = head.filledBytes / format.bytesPerFrame
        return (head.data + filledFrames * sampleBytes, head.byteCapacity / format.bytesPerFrame * sampleBytes)
    }

    /// A partly filled non-interleaved buffer's planes moved together, so the callback finds
    /// plane c at c × mAudioDataByteSize / channels whatever the buffer's capacity.
    private func packPlanes(_ head: QueueBuffer) {
        let sampleBytes = format.bytesPerSample
        let capacityFrames = head.byteCapacity / format.bytesPerFrame
        let filledFrames = head.filledBytes / format.bytesPerFrame
        guard format.isNonInterleaved, filledFrames < capacityFrames, filledFrames > 0 else { return }
        for c in 1..<max(format.channelCount, 1) {
            (head.data + c * filledFrames * sampleBytes).copyMemory(from: head.data + c * capacityFrames * sampleBytes,
                                                                     byteCount: filledFrames * sampleBytes)
        }
    }

    /// Hands the head buffer to the callback with what it holds.
    func deliverHead(_ head: QueueBuffer, resetBatch: Bool = false) {
        let byteCount = head.filledBytes
        let stamp = timeStamp(forQueueFrame: head.firstQueueFrame, empty: byteCount == 0)
        // Once only: a Reset or Stop from a callback this loop ran may have returned it already.
        let queued: Bool = lock.withLock {
            guard let index = $0.fifo.firstIndex(where: { $0 === head }) else { return false }
            $0.fifo.remove(at: index)
            head.ownership = .returning
            return true
        }
        guard queued else { return }
        packPlanes(head)
        let callback = inputCallback
        let packets = packetStage == nil ? byteCount / format.bytesPerFrame : head.packets.count
        deliverBuffer(head, resetBatch: resetBatch) { callback(head, byteCount, packets, stamp) }
    }

    private func timeStamp(forQueueFrame frame: Double, empty: Bool) -> QueueTimeStamp {
        let time = empty ? lock.withLock { $0.input.queueFrames } : frame
        let deviceQueueFrames = Int64((time / rateRatio).rounded())
        // Before the first cycle: the zero time base.
        let published = withPublication { $0.time.read() } ?? PublishedTime()
        let deviceFrame = published.deviceFrame(forQueueFrames: deviceQueueFrames)
        return QueueTimeStamp(sampleTime: time, hostTime: device.hostTime(forFrame: deviceFrame))
    }
}

/// The input realtime state, as the direction-independent engine sees it.
struct InputRealtimeLink: RealtimeLink, @unchecked Sendable {
    let context: UnsafeMutablePointer<InputRealtimeContext>

    func withPublication<T>(_ body: (borrowing RealtimePublication) -> T) -> T { body(context.pointee.state.pointee.publication) }
    func push(_ command: RealtimeCommand) -> Bool { context.pointee.state.pointee.commands.push(command) }
    func applyCommandsDirectly() { applyInputCommandsDirectly(context.pointee.state) }
    var bufferedFrames: Int { context.pointee.state.pointee.ring.readableFrames() }
    func withMeters<T>(_ body: (borrowing MeterBank) -> T) -> T { body(context.pointee.state.pointee.meters) }

    func release() { releaseRealtime(context, state: context.pointee.state) }
}
