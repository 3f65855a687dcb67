import Glibc
import Synchronization

/// A playback audio queue: enqueued buffers are decoded (and resampled) into
/// the decode ring by the queue thread and played by the realtime side.
public final class OutputQueueEngine: QueueEngine, @unchecked Sendable {
    let context: UnsafeMutablePointer<OutputRealtimeContext>
    var realtime: UnsafeMutablePointer<OutputRealtimeState> { context.pointee.state }
    let codec: SampleCodec
    private(set) var resampler: Resampler?
    /// Taps and the time/pitch unit, ahead of the resampler (OutputQueueEngine+Effects.swift).
    let effects: EffectsChain
    let outputCallback: @Sendable (QueueBuffer) -> Void
    /// Compressed queues: the decoder stage (nil for PCM, µ-law and A-law).
    let packetStage: OutputPacketStage?
    /// Compressed queues: frames per packet when a description gives none, and bytes of
    /// constant-size packets (0 when they vary).
    let framesPerPacket: Int
    let constantPacketBytes: Int?

    // Scratch planes for decoding and resampling (queue thread only).
    let chunkFrames = 1024
    let decodePlanes: PlaneBuffers
    var resamplePlanes: PlaneBuffers!
    var resampleCapacity: Int { resamplePlanes?.capacity ?? 0 }


    /// Frames of the decode ring at the device rate (kAudioQueueProperty_DecodeBufferSizeFrames).
    public static let defaultDecodeFrames = 16384

    /// Creates a playback queue and its JACK client.
    /// - Parameters:
    ///   - callback: called (through `executor`) with each buffer whose data the queue has taken.
    ///   - compressed: for a compressed stream, makes its decoder from a magic cookie; `format` is then
    ///     the decoded planar Float32 and enqueued buffers carry packet descriptions.
    public init(format: StreamFormat, provider: DeviceProvider, clientName: String, executor: CallbackExecutor,
                compressed: CompressedStream? = nil,
                callback: @escaping @Sendable (QueueBuffer) -> Void) throws {
        try format.validate(allowsZeroRate: false, bytesPerPacket: format.bytesPerFrame, framesPerPacket: 1)
        outputCallback = callback
        packetStage = compressed.map { OutputPacketStage(channelCount: format.channelCount, makeDecoder: $0.makeDecoder) }
        framesPerPacket = compressed?.framesPerPacket ?? 1
        constantPacketBytes = compressed?.bytesPerPacket
        codec = SampleCodec(format: format)
        let decodeFrames = Self.defaultDecodeFrames
        // Placeholders until the device rate is known (set below).
        let placeholderState = UnsafeMutablePointer<OutputRealtimeState>.allocate(capacity: 1)
        let context = UnsafeMutablePointer<OutputRealtimeContext>.allocate(capacity: 1)
        self.context = context
        decodePlanes = PlaneBuffers(channelCount: format.channelCount, capacity: 1024)
        effects = EffectsChain(channelCount: format.channelCount, sampleRate: format.sampleRate)
        do {
            try super.init(direction: .output, format: format, provider: provider,
                           clientName: clientName, executor: executor, realtimeLink: OutputRealtimeLink(context: context))
        } catch {
            placeholderState.deallocate()
            context.deallocate()
            throw error
        }
        let deviceRate = device.sampleRate
        // From here on the engine is whole, and its deinit frees the realtime memory: it must be
        // initialized before anything below can throw.
        placeholderState.initialize(to: OutputRealtimeState(
            channelCount: format.channelCount, ringFrames: decodeFrames,
            meterWindowFrames: Int(deviceRate * 0.05)))
        context.initialize(to: OutputRealtimeContext(
            state: placeholderState, queueWake: wake.raw, realtimeWake: realtimeWake.raw))
        if format.sampleRate != deviceRate {
            do {
                resampler = try Resampler(inputRate: format.sampleRate, outputRate: deviceRate,
                                          channelCount: format.channelCount)
                resamplePlanes = PlaneBuffers(
                    channelCount: format.channelCount,
                    capacity: Int((Double(chunkFrames) * deviceRate / format.sampleRate).rounded(.up)) + 256)
            } catch {
                device.close()
                throw error
            }
        }
        device.setProcessor(RealtimeProcessor(context: UnsafeMutableRawPointer(context), entry: outputRealtimeEntry))
        finishSetup(threadName: "aq-out")
    }

    override func producerStateChanged() {
        let busy = lock.withLock {
            !$0.fifo.isEmpty || !$0.output.awaitingPlayout.isEmpty || $0.callbacksInFlight > 0 || ($0.life.playOutPending && !$0.output.endOfStreamSent)
        }
        context.pointee.producerBusy.store(busy, ordering: .releasing)
        realtimeWake.post()
    }

    /// A stopped queue's next start begins queue time at 0: called at Stop and the end of
    /// a Stop(false), not at Start, so that frames primed before Start count from 0.
    override func endTimeline(_ state: inout EngineState) {
        state.output.streamFrames = 0
        state.output.predictedEnd = 0
        state.output.lastStart = nil
        state.output.lostBaseline = realtime.pointee.publication.lostFrames.load(ordering: .relaxed)
        state.output.endOfStreamSent = false
        effects.beginTimeline()
    }

    /// The queue time (queue rate) at which the next frame written would play (`state`: the lock's).
    func streamPosition(_ state: EngineState) -> Int64 {
        let lost = realtime.pointee.publication.lostFrames.load(ordering: .relaxed) - state.output.lostBaseline
        return state.output.streamFrames + Int64((Double(lost) * rateRatio).rounded())
    }

    /// The queue time at the queue's rate: with time/pitch, the source frames played.
    public override func currentQueueTime() -> QueueTimeStamp {
        var time = super.currentQueueTime()
        if effects.isActive { time.sampleTime = effects.queueTime(forOutputFrames: time.sampleTime) }
        return time
    }

    // MARK: Enqueue

    /// Enqueues a buffer holding `byteCount` bytes; returns the queue time it will start at.
    /// - Parameters:
    ///   - trimStart, trimEnd: frames not played at the start and end.
    ///   - parameters: volume/pan taking effect on the buffer's first frame.
    ///   - startTime: queue time (queue rate) to start at; nil = right after the previous buffer.
    ///   - byteCount: read once the handle is known to be this queue's (it may name freed memory).
    @discardableResult
    ///   - packets: a compressed queue's packet descriptions (read once the handle is known).
    public func enqueue(_ handle: UnsafeMutableRawPointer, byteCount: @autoclosure () -> Int, trimStart: Int = 0,
                        trimEnd: Int = 0, parameters: [ParameterChange] = [], startTime: Int64? = nil,
                        packets: () throws -> [PacketDescription] = { [] }) throws -> Int64 {
        let actual: Int64 = try lock.withLock { state in
            let buffer = try checkEnqueue(handle, &state)
            let byteCount = byteCount()
            guard byteCount > 0 else { throw QueueError.bufferEmpty }
            guard byteCount <= buffer.byteCapacity else {
                throw QueueError.invalidParameter("mAudioDataByteSize \(byteCount) exceeds the capacity \(buffer.byteCapacity)")
            }
            var frames = byteCount / format.bytesPerFrame
            if let packetStage {
                buffer.packets = try checkedPackets(try packets(), byteCount: byteCount)
                frames = packetStage.frames(of: buffer.packets, framesPerPacket: framesPerPacket)
            }
            guard frames > 0 else { throw QueueError.bufferEmpty }
            guard trimStart >= 0, trimEnd >= 0, trimStart + trimEnd <= frames else {
                throw QueueError.invalidParameter("trims of \(trimStart)+\(trimEnd) frames exceed the buffer's \(frames)")
            }
            // Start times ascend: none may come before the previous buffer's.
            if let startTime, let lastStart = state.output.lastStart, startTime < lastStart { throw QueueError.nonAscendingStartTime }
            let base = max(state.output.predictedEnd, streamPosition(state))
            let start = max(startTime ?? base, base)
            state.output.lastStart = start
            buffer.frameCount = frames
            buffer.trimStart = trimStart
            buffer.trimEnd = trimEnd
            buffer.parameters = parameters
            buffer.requestedStart = startTime
            buffer.consumedFrames = -1
            buffer.ownership = .enqueued
            state.fifo.append(buffer)
            state.output.predictedEnd = start + Int64(frames - trimStart - trimEnd)
            return start
        }
        producerStateChanged()
        wake.post()
        return actual
    }

    // MARK: Control

    /// Decodes enqueued buffers before Start: `frames` frames (queue rate), or all if 0.
    /// Returns the frames ready to play.
    public func prime(frames: Int) throws -> Int {
        _ = try lock.withLock { try $0.life.handle(.prime) }
        let targetDevice = frames == 0 ? Int.max : Int((Double(frames) / rateRatio).rounded(.up))
        let ready = try primeRing(deviceFrames: targetDevice, timeout: 10)
        return Int((Double(ready) * rateRatio).rounded(.down))
    }

    /// Has the queue thread fill the ring up to `deviceFrames` (or the capacity, or the data); returns frames ready.
    private func primeRing(deviceFrames: Int, timeout: Double) throws -> Int {
        if onQueueThread {
            lock.withLock { $0.output.priming = true; $0.output.primeTarget = deviceFrames }
            serviceQueue()
            lock.withLock { $0.output.priming = false }
            return realtime.pointee.ring.readableFrames()
        }
        if runsInline {
            let ready = asQueueThread { try? primeRing(deviceFrames: deviceFrames, timeout: timeout) } ?? 0
            lock.withLock { $0.primedFrames = ready }
            return ready
        }
        let ticket: Int = lock.withLock {
            $0.output.priming = true
            $0.output.primeTarget = deviceFrames
            return $0.output.primeTickets.request()
        }
        wake.post()
        let done = lock.waitUntil(timeout: timeout) { $0.output.primeTickets.isDone(ticket) || $0.disposed || $0.invalidated }
        lock.withLock { $0.output.priming = false }
        if !done { throw QueueError.primeTimedOut }
        let ready = realtime.pointee.ring.readableFrames()
        lock.withLock { $0.primedFrames = ready }
        return ready
    }

    override func perform(_ action: LifecycleAction) {
        switch action {
        case .prepareToStart: decodeFirstPeriods()
        case .beginPlayOut:
            producerStateChanged()
            wake.post()
        default: break
        }
    }

    /// Decodes the first periods before the device starts, so the first cycle plays audio
    /// (unless called from a callback, where waiting for the queue thread would stall it).
    private func decodeFirstPeriods() {
        guard !onQueueThread, !lock.withLock({ isInCallback($0) }) else { return }
        if runsInline { return runInlineWork() }
        let target = 2 * device.periodFrames
        var waited = 0.0
        while waited < 2 {
            if realtime.pointee.ring.readableFrames() >= target { return }
            let idle = lock.withLock { $0.fifo.isEmpty && $0.callbacksInFlight == 0 || ($0.runState != .starting && $0.runState != .stopping) }
            if idle { return }
            HostClock.sleep(seconds: 0.001)
            waited += 0.001
        }
    }

    /// Flush: marks where the resampler's tail goes (`QueueEngine.flush`); returns at once: the
    /// queue decodes as it plays, and a queue whose callback keeps enqueueing has no end to wait for.
    override func flushQueued() throws {
        lock.withLock {
            if let last = $0.fifo.last { last.drainsDecoderAfter = true } else { $0.output.drainPending = true }
        }
        wake.post()
    }

    // MARK: Properties

    /// Frames of the decode ring (queue rate). Settable while stopped with nothing decoded.
    public var decodeBufferFrames: Int {
        Int((Double(realtime.pointee.ring.capacity) * rateRatio).rounded())
    }

    /// Resizes the decode ring (to at least `frames` queue-rate frames, a power of two at the device rate).
    public func setDecodeBufferFrames(_ frames: Int) throws {
        guard frames >= 64, frames <= 1 << 22 else {
            throw QueueError.invalidPropertyValue("decode buffer of \(frames) frames (64...4194304)")
        }
        try lock.withLock {
            let stoppedAndEmpty = "the decode buffer size can change only while stopped and empty"
            _ = try $0.life.handle(.reconfigure(stoppedAndEmpty))
            guard $0.fifo.isEmpty, $0.output.awaitingPlayout.isEmpty, realtime.pointee.ring.readableFrames() == 0 else {
                throw QueueError.invalidRunState(stoppedAndEmpty)
            }
        }
        replaceRealtimeState(ringFrames: Int((Double(frames) / rateRatio).rounded(.up)))
    }

    /// Replaces the realtime state (ring, meters, time) with a new one of `deviceFrames`
    /// frames at the device's rate now, keeping what control threads set (lock not held; the
    /// queue is stopped and nothing is decoded).
    private func replaceRealtimeState(ringFrames deviceFrames: Int, rampFrames: Int? = nil) {
        let replacement = UnsafeMutablePointer<OutputRealtimeState>.allocate(capacity: 1)
        replacement.initialize(to: OutputRealtimeState(
            channelCount: format.channelCount, ringFrames: deviceFrames,
            meterWindowFrames: Int(device.sampleRate * 0.05)))
        let old = realtime
        // Carry over what control threads set.
        replacement.pointee.requestedVolume.store(old.pointee.requestedVolume.load(ordering: .relaxed), ordering: .relaxed)
        replacement.pointee.requestedPan.store(old.pointee.requestedPan.load(ordering: .relaxed), ordering: .relaxed)
        replacement.pointee.volumeRampFrames.store(rampFrames ?? old.pointee.volumeRampFrames.load(ordering: .relaxed), ordering: .relaxed)
        replacement.pointee.meters.enabled.store(old.pointee.meters.enabled.load(ordering: .relaxed), ordering: .relaxed)
        swapRealtimeState(on: device, context: context,
                          to: OutputRealtimeContext(state: replacement, queueWake: wake.raw, realtimeWake: realtimeWake.raw),
                          entry: outputRealtimeEntry, freeing: old)
        lock.withLock {
            $0.seenStartCount = 0
            $0.seenFinishCount = 0
            $0.output.lostBaseline = 0
        }
    }

    /// Remakes the converter and the ring for the device's rate now (the device switched
    /// between JACK and an offline clock of another rate). The queue must be stopped with
    /// nothing decoded; the decode buffer keeps its length and the volume ramp its seconds.
    func adoptDeviceRate(decodeFrames: Int, rampSeconds: Float) throws {
        let deviceRate = device.sampleRate
        guard deviceRate != lock.withLock({ $0.converterRate }) else { return }
        try lock.withLock {
            guard $0.runState == .stopped, $0.output.awaitingPlayout.isEmpty, realtime.pointee.ring.readableFrames() == 0 else {
                throw QueueError.invalidRunState("the rendering rate can change only while stopped with nothing decoded (Reset first)")
            }
        }
        if format.sampleRate != deviceRate {
            resampler = try Resampler(inputRate: format.sampleRate, outputRate: deviceRate, channelCount: format.channelCount)
            resamplePlanes = PlaneBuffers(
                channelCount: format.channelCount,
                capacity: Int((Double(chunkFrames) * deviceRate / format.sampleRate).rounded(.up)) + 256)
        } else {
            resampler = nil
            resamplePlanes = nil
        }
        lock.withLock {
            $0.converterRate = deviceRate
            $0.output.resamplerHasInput = false
        }
        replaceRealtimeState(ringFrames: Int((Double(decodeFrames) / rateRatio).rounded(.up)),
                             rampFrames: Int((Double(rampSeconds) * deviceRate).rounded()))
    }

    /// Frames played as silence because the ring ran dry while running.
    public var starvedFrames: Int { lostFrames }

    // MARK: The queue thread's work

    override func serviceQueue() {
        handleResetRequest()
        returnPlayedBuffers()
        convert()
        handleFlushRequest()
        finishPrimeIfDone()
        armWakeThreshold()
    }

    /// The realtime side's news first: buffers it has played go back before a stop is reported.
    override func observeRealtime() {
        returnPlayedBuffers()
        super.observeRealtime()
    }
}

/// The output realtime state, as the direction-independent engine sees it.
struct OutputRealtimeLink: RealtimeLink, @unchecked Sendable {
    let context: UnsafeMutablePointer<OutputRealtimeContext>

    func withPublication<T>(_ body: (borrowing RealtimePublication) -> T) -> T { body(context.pointee.state.pointee.publication) }
    func push(_ command: RealtimeCommand) -> Bool { context.pointee.state.pointee.commands.push(command) }
    func applyCommandsDirectly() { _ = applyOutputCommands(context.pointee.state) }
    var bufferedFrames: Int { context.pointee.state.pointee.ring.readableFrames() }
    func withMeters<T>(_ body: (borrowing MeterBank) -> T) -> T { body(context.pointee.state.pointee.meters) }

    func release() { releaseRealtime(context, state: context.pointee.state) }
}
