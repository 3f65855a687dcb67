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
    private let decodePlanes: PlaneBuffers
    private var resamplePlanes: PlaneBuffers!
    var resampleCapacity: Int { resamplePlanes?.capacity ?? 0 }

    // Guarded by `lock`.
    /// Buffers whose frames are all in the decode ring, oldest first: each goes back to its
    /// callback once the ring has played it (`QueueBuffer.ringEnd`), not when it was copied,
    /// so that a program which stops after its last callback still hears what was enqueued.
    private var awaitingPlayout: [QueueBuffer] = []
    /// Queue-rate frames written into the stream (data and gaps) since the timeline began.
    private var streamFrames: Int64 = 0
    /// Realtime starvation (device frames) counted when the timeline began.
    private var lostBaseline = 0
    /// Queue time at which the last enqueued buffer is expected to end, and start.
    private var predictedEnd: Int64 = 0
    private var lastStart: Int64?
    private var endOfStreamSent = false
    private var priming = false
    private var primeTarget = 0
    private var primeTickets = QueueTickets()
    /// Flush: the resampler's tail goes into the ring before anything enqueued later.
    private var drainPending = false
    private var resamplerHasInput = false
    private var ringFrames: Int

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
        ringFrames = decodeFrames
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
            !fifo.isEmpty || !awaitingPlayout.isEmpty || callbacksInFlight > 0 || (life.playOutPending && !endOfStreamSent)
        }
        context.pointee.producerBusy.store(busy, ordering: .releasing)
        realtimeWake.post()
    }

    /// A stopped queue's next start begins queue time at 0 (lock held): called at
    /// creation, Stop and the end of a Stop(false), not at Start, so that frames
    /// primed before Start count from 0.
    private func beginTimeline() {
        streamFrames = 0
        predictedEnd = 0
        lastStart = nil
        lostBaseline = realtime.pointee.publication.lostFrames.load(ordering: .relaxed)
        endOfStreamSent = false
        effects.beginTimeline()
    }

    /// Moves the predicted end of what is enqueued (lock held): a compressed buffer decoded
    /// to another length than its descriptions said.
    func adjustPrediction(by frames: Int64) {
        predictedEnd += frames
    }

    /// The queue time (queue rate) at which the next frame written would play (lock held).
    private func streamPosition() -> Int64 {
        let lost = realtime.pointee.publication.lostFrames.load(ordering: .relaxed) - lostBaseline
        return streamFrames + Int64((Double(lost) * rateRatio).rounded())
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
        let actual: Int64 = try lock.withLock {
            let buffer = try checkEnqueue(handle)
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
            if let startTime, let lastStart, startTime < lastStart { throw QueueError.nonAscendingStartTime }
            let base = max(predictedEnd, streamPosition())
            let start = max(startTime ?? base, base)
            lastStart = start
            buffer.frameCount = frames
            buffer.trimStart = trimStart
            buffer.trimEnd = trimEnd
            buffer.parameters = parameters
            buffer.requestedStart = startTime
            buffer.consumedFrames = -1
            buffer.ownership = .enqueued
            fifo.append(buffer)
            predictedEnd = start + Int64(frames - trimStart - trimEnd)
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
        _ = try lock.withLock { try life.handle(.prime) }
        let targetDevice = frames == 0 ? Int.max : Int((Double(frames) / rateRatio).rounded(.up))
        let ready = try primeRing(deviceFrames: targetDevice, timeout: 10)
        return Int((Double(ready) * rateRatio).rounded(.down))
    }

    /// Has the queue thread fill the ring up to `deviceFrames` (or the capacity, or the data); returns frames ready.
    private func primeRing(deviceFrames: Int, timeout: Double) throws -> Int {
        if thread?.isCurrent == true {
            lock.withLock { priming = true; primeTarget = deviceFrames }
            serviceQueue()
            lock.withLock { priming = false }
            return realtime.pointee.ring.readableFrames()
        }
        let ticket: Int = lock.withLock {
            priming = true
            primeTarget = deviceFrames
            return primeTickets.request()
        }
        wake.post()
        let done: Bool = lock.withLock {
            let finished = lock.wait(timeout: timeout) { primeTickets.isDone(ticket) || disposed || invalidated }
            priming = false
            return finished
        }
        if !done { throw QueueError.primeTimedOut }
        let ready = realtime.pointee.ring.readableFrames()
        lock.withLock { primedFrames = ready }
        return ready
    }

    override func perform(_ action: LifecycleAction) {
        switch action {
        case .prepareToStart: decodeFirstPeriods()
        case .beginPlayOut:
            producerStateChanged()
            wake.post()
        case .endTimeline:
            primedFrames = 0
            beginTimeline()
        default: break
        }
    }

    /// Decodes the first periods before the device starts, so the first cycle plays audio
    /// (unless called from a callback, where waiting for the queue thread would stall it).
    private func decodeFirstPeriods() {
        guard thread?.isCurrent != true, !lock.withLock({ isInCallback }) else { return }
        let target = 2 * device.periodFrames
        var waited = 0.0
        while waited < 2 {
            if realtime.pointee.ring.readableFrames() >= target { return }
            let idle = lock.withLock { fifo.isEmpty && callbacksInFlight == 0 || (runState != .starting && runState != .stopping) }
            if idle { return }
            HostClock.sleep(seconds: 0.001)
            waited += 0.001
        }
    }

    /// Flush: marks where the resampler's tail goes (`QueueEngine.flush`); returns at once: the
    /// queue decodes as it plays, and a queue whose callback keeps enqueueing has no end to wait for.
    override func flushQueued() throws {
        lock.withLock {
            if let last = fifo.last { last.drainsDecoderAfter = true } else { drainPending = true }
        }
        wake.post()
    }

    // MARK: Parameters

    /// Volume 0...1 (applied next cycle, ramped by the ramp time).
    public var volume: Float {
        get { Float(bitPattern: realtime.pointee.requestedVolume.load(ordering: .relaxed)) }
        set { realtime.pointee.requestedVolume.store(min(max(newValue, 0), 1).bitPattern, ordering: .relaxed) }
    }

    /// Pan -1...1 (balance for stereo, position for mono).
    public var pan: Float {
        get { Float(bitPattern: realtime.pointee.requestedPan.load(ordering: .relaxed)) }
        set { realtime.pointee.requestedPan.store(min(max(newValue, -1), 1).bitPattern, ordering: .relaxed) }
    }

    /// The longest volume ramp, in seconds; longer (or infinite) ramp times are clamped to it.
    public static let maximumVolumeRampTime: Float = 86_400

    /// Seconds over which later volume changes ramp (0...`maximumVolumeRampTime`; NaN counts as 0).
    public var volumeRampTime: Float {
        get { Float(Double(realtime.pointee.volumeRampFrames.load(ordering: .relaxed)) / device.sampleRate) }
        set {
            let seconds = newValue.isNaN ? 0 : min(max(newValue, 0), Self.maximumVolumeRampTime)
            let frames = Int((Double(seconds) * device.sampleRate).rounded())
            realtime.pointee.volumeRampFrames.store(frames, ordering: .relaxed)
        }
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
            _ = try life.handle(.reconfigure(stoppedAndEmpty))
            guard fifo.isEmpty, awaitingPlayout.isEmpty, realtime.pointee.ring.readableFrames() == 0 else {
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
            seenStartCount = 0
            seenFinishCount = 0
            lostBaseline = 0
            ringFrames = deviceFrames
        }
    }

    /// Remakes the converter and the ring for the device's rate now (the device switched
    /// between JACK and an offline clock of another rate). The queue must be stopped with
    /// nothing decoded; the decode buffer keeps its length and the volume ramp its seconds.
    func adoptDeviceRate(decodeFrames: Int, rampSeconds: Float) throws {
        let deviceRate = device.sampleRate
        guard deviceRate != converterRate else { return }
        try lock.withLock {
            guard runState == .stopped, awaitingPlayout.isEmpty, realtime.pointee.ring.readableFrames() == 0 else {
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
            converterRate = deviceRate
            resamplerHasInput = false
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

    /// Asks the realtime side to wake this thread once the ring has room for a chunk
    /// (when there is something to convert), rather than every cycle.
    private func armWakeThreshold() {
        let waiting = lock.withLock { !fifo.isEmpty || (life.playOutPending && !endOfStreamSent) || drainPending }
        let chunk = resampler == nil ? chunkFrames : resampleCapacity
        var threshold = waiting ? min(chunk, realtime.pointee.ring.capacity / 2) : realtime.pointee.ring.capacity / 2
        if effects.isActive && waiting { threshold = realtime.pointee.ring.capacity - effectsFillLimit / 2 }
        realtime.pointee.wakeThreshold.store(threshold, ordering: .relaxed)
        if waiting && realtime.pointee.ring.writableFrames() >= threshold { wake.post() }
        armReturnWake()
    }

    /// Asks the realtime side to wake this thread once the oldest held buffer has been played.
    private func armReturnWake() {
        let due = lock.withLock { awaitingPlayout.first.map(playedPosition) } ?? .max
        realtime.pointee.returnWakePosition.store(due, ordering: .sequentiallyConsistent)
        // Played meanwhile (the realtime side looked before the store): no wake is coming.
        if due != .max && realtime.pointee.playedIndex.load(ordering: .sequentiallyConsistent) >= due { wake.post() }
    }

    /// The ring position at which `buffer` counts as played: its end, or what the ring holds
    /// if that is less (a resampler keeps a buffer's last frames until more input or a flush
    /// pushes them out; once the ring has played everything else, the buffer is done with).
    private func playedPosition(_ buffer: QueueBuffer) -> Int {
        min(buffer.ringEnd, realtime.pointee.ring.writeIndex.load(ordering: .acquiring))
    }

    /// Returns, oldest first, the held buffers the ring has played (or that a waiting cycle needs played).
    private func returnPlayedBuffers() {
        let played: [QueueBuffer] = lock.withLock {
            guard resetTickets.isIdle, !awaitingPlayout.isEmpty else { return [] }
            let position = max(realtime.pointee.playedIndex.load(ordering: .acquiring),
                               context.pointee.demandPosition.load(ordering: .sequentiallyConsistent))
            let count = awaitingPlayout.prefix { playedPosition($0) <= position }.count
            guard count > 0 else { return [] }
            let done = Array(awaitingPlayout.prefix(count))
            awaitingPlayout.removeFirst(count)
            for buffer in done { buffer.ownership = .returning }
            return done
        }
        guard !played.isEmpty else { return }
        for buffer in played { returnBuffer(buffer, resetBatch: false) }
        producerStateChanged()
    }

    /// The realtime side's news first: buffers it has played go back before a stop is reported.
    override func observeRealtime() {
        returnPlayedBuffers()
        super.observeRealtime()
    }

    private func handleResetRequest() {
        guard let pending = lock.withLock({ resetTickets.pending }) else { return }
        let position = realtime.pointee.ring.writeIndex.load(ordering: .relaxed)
        send(.discard, position: position, synchronous: true)
        resampler?.reset()
        effects.reset()
        packetStage?.reset()
        let returning: [QueueBuffer] = lock.withLock {
            let all = awaitingPlayout + fifo
            awaitingPlayout.removeAll()
            fifo.removeAll()
            for buffer in all {
                buffer.ownership = .returning
                buffer.consumedFrames = -1
            }
            resamplerHasInput = false
            drainPending = false
            for buffer in all { buffer.drainsDecoderAfter = false }
            _ = life.note(.queueDiscarded)
            endOfStreamSent = false
            // Later buffers with no start time play as soon as possible.
            predictedEnd = streamPosition()
            return all
        }
        for buffer in returning { returnBuffer(buffer, resetBatch: true) }
        lock.withLock {
            resetTickets.complete(pending)
            lock.broadcast()
        }
        producerStateChanged()
    }

    private func returnBuffer(_ buffer: QueueBuffer, resetBatch: Bool) {
        let callback = outputCallback
        deliverBuffer(buffer, resetBatch: resetBatch) { callback(buffer) }
    }

    private var conversionAllowed: Bool {
        if life.isShutDown || invalidated { return false }
        if priming { return true }
        switch runState {
        case .starting, .running, .paused, .stopping: return true
        case .stopped: return false
        }
    }

    /// Decodes enqueued buffers into the ring while there is room.
    private func convert() {
        if effects.isActive { _ = releaseEffects() }
        while true {
            // A flushed buffer's tail first; without room for it, later buffers wait.
            if lock.withLock({ drainPending }) {
                guard drainResampler() else { break }
                lock.withLock { drainPending = false }
            }
            let head: QueueBuffer? = lock.withLock {
                guard conversionAllowed, resetTickets.isIdle else { return nil }
                if priming && realtime.pointee.ring.readableFrames() >= primeTarget { return nil }
                return fifo.first
            }
            guard let head else { break }
            let finished = convertChunk(of: head)
            if finished {
                // Held until played. Frames a resampler still holds come out `delay` frames later.
                let held = effects.isActive ? Double(effects.heldFrames) / rateRatio : 0
                let end = realtime.pointee.ring.writeIndex.load(ordering: .relaxed)
                    + Int((resampler?.delay ?? 0).rounded(.up)) + Int(held.rounded(.up))
                lock.withLock {
                    if let index = fifo.firstIndex(where: { $0 === head }) { fifo.remove(at: index) }
                    head.ringEnd = end
                    awaitingPlayout.append(head)
                    if head.drainsDecoderAfter {
                        head.drainsDecoderAfter = false
                        drainPending = true
                    }
                }
                returnPlayedBuffers()
            } else if !hasRoomForChunk() {
                break
            }
        }
        sendEndOfStreamIfDue()
    }

    private func hasRoomForChunk() -> Bool {
        if effects.isActive { return effectsHaveRoom() }
        let needed = resampler == nil ? 1 : resampleCapacity
        return realtime.pointee.ring.writableFrames() >= needed
    }

    /// Converts the next part of `buffer`; true when all of it is in the ring.
    private func convertChunk(of buffer: QueueBuffer) -> Bool {
        // The start: silence up to the buffer's start time, then its parameter events.
        if buffer.consumedFrames < 0 {
            let gap: Int64 = lock.withLock {
                guard let start = buffer.requestedStart else { return 0 }
                return max(0, start - streamPosition())
            }
            if gap > 0 {
                let written = writeSilence(queueFrames: Int(min(gap, Int64(chunkFrames))))
                if written == 0 { return false }
                if Int64(written) < gap { return false }
            }
            // Frames the effects hold for the ring come before this buffer's first frame too.
            let held = effects.isActive ? Double(effects.heldFrames) / rateRatio : 0
            let position = realtime.pointee.ring.writeIndex.load(ordering: .relaxed)
                + Int((resampler?.delay ?? 0).rounded()) + Int(held.rounded())
            for change in buffer.parameters where !applyEffectsParameter(change) {
                guard let event = realtimeEvent(for: change, at: position) else { continue }
                _ = realtime.pointee.parameterEvents.push(event)
            }
            buffer.consumedFrames = 0
            if packetStage != nil { decodePackets(of: buffer) }
        }
        let playable = buffer.frameCount - buffer.trimStart - buffer.trimEnd
        while buffer.consumedFrames < playable {
            let space = realtime.pointee.ring.writableFrames()
            var count = min(chunkFrames, playable - buffer.consumedFrames)
            let ring = realtime  // the ring is not copyable: through the state's pointer
            let ringOffset = ring.pointee.ring.writeIndex.load(ordering: .relaxed) & ring.pointee.ring.mask
            // Without effects or resampling, decoded straight into the ring's planes.
            let direct = resampler == nil && !effects.isActive && packetStage == nil
            if effects.isActive {
                if !releaseEffects() || !effectsHaveRoom() { count = 0 }
            } else if resampler == nil {
                // Up to the ring's wrap point.
                count = min(count, space, ring.pointee.ring.capacity - ringOffset)
            } else if space < resampleCapacity {
                count = 0
            }
            if count == 0 { return false }
            if let packetStage {
                packetStage.copy(from: buffer.trimStart + buffer.consumedFrames, count: count, into: decodePlanes.planes)
                writeDecoded(frames: count)
            } else {
                // Non-interleaved (a jaq extension): plane c starts at c × frameCount samples.
                let step = format.isNonInterleaved ? format.bytesPerSample : format.bytesPerFrame
                let source = buffer.data + (buffer.trimStart + buffer.consumedFrames) * step
                let stride = buffer.frameCount * format.bytesPerSample
                if direct {
                    let planes = decodePlanes.view(at: 0)  // the table only: pointed at the ring
                    for c in 0..<format.channelCount { planes[c] = ring.pointee.ring.plane(c) + ringOffset }
                    codec.decode(UnsafeRawPointer(source), frames: count, into: UnsafePointer(planes), planeStride: stride)
                    ring.pointee.ring.publish(count)
                    realtimeWake.post()
                } else {
                    codec.decode(UnsafeRawPointer(source), frames: count, into: UnsafePointer(decodePlanes.planes), planeStride: stride)
                    writeDecoded(frames: count)
                }
            }
            buffer.consumedFrames += count
            lock.withLock { streamFrames += Int64(count) }
        }
        return true
    }

    /// Writes `frames` decoded frames (queue rate) from the decode planes into the ring.
    private func writeDecoded(frames: Int) {
        if effects.isActive {
            effects.push(decodePlanes.readable, frames: frames)
            _ = releaseEffects()
            return
        }
        writeToRing(decodePlanes.readable, frames: frames)
    }

    /// Writes `frames` frames (queue rate) through the resampler, if any, into the ring.
    func writeToRing(_ planes: UnsafePointer<UnsafePointer<Float>>, frames: Int) {
        if let resampler {
            var consumedTotal = 0
            while consumedTotal < frames {
                let (consumed, produced) = resampler.process(
                    input: effects.pending.offsetView(planes, by: consumedTotal), inputFrames: frames - consumedTotal,
                    output: UnsafePointer(resamplePlanes.planes), outputCapacity: resampleCapacity)
                if produced > 0 { realtime.pointee.ring.write(resamplePlanes.readable, offset: 0, count: produced) }
                consumedTotal += consumed
                if consumed == 0 && produced == 0 { break }
            }
            lock.withLock { resamplerHasInput = true }
        } else {
            realtime.pointee.ring.write(planes, offset: 0, count: frames)
        }
        realtimeWake.post()
    }

    /// Writes up to `queueFrames` frames of silence (a gap before a timed buffer); returns frames written.
    private func writeSilence(queueFrames: Int) -> Int {
        let space = realtime.pointee.ring.writableFrames()
        var count = queueFrames
        if effects.isActive {
            if !releaseEffects() || !effectsHaveRoom() { count = 0 }
        } else if resampler == nil { count = min(count, space) } else if space < resampleCapacity { count = 0 }
        guard count > 0 else { return 0 }
        decodePlanes.silence(count: count)
        writeDecoded(frames: count)
        lock.withLock { streamFrames += Int64(count) }
        return count
    }

    /// Drains the resampler's tail into the ring; true when done.
    private func drainResampler() -> Bool {
        guard drainEffects(endOfStream: lock.withLock { life.playOutPending }) else { return false }
        guard let resampler, lock.withLock({ resamplerHasInput }) else { return true }
        while true {
            guard realtime.pointee.ring.writableFrames() >= resampleCapacity else { return false }
            let (_, produced) = resampler.process(input: nil, inputFrames: 0, output: UnsafePointer(resamplePlanes.planes),
                                                  outputCapacity: resampleCapacity)
            if produced == 0 { break }
            realtime.pointee.ring.write(resamplePlanes.readable, offset: 0, count: produced)
            realtimeWake.post()
        }
        resampler.reset()
        lock.withLock { resamplerHasInput = false }
        return true
    }

    private func handleFlushRequest() {
        guard lock.withLock({ drainPending }), drainResampler() else { return }
        lock.withLock { drainPending = false }
    }

    private func sendEndOfStreamIfDue() {
        let due = lock.withLock { life.playOutPending && !endOfStreamSent && fifo.isEmpty && runState == .stopping }
        guard due, drainResampler() else { return }
        let position = realtime.pointee.ring.writeIndex.load(ordering: .relaxed)
        lock.withLock { endOfStreamSent = true }
        send(.endOfStream, position: position, synchronous: false)
        producerStateChanged()
    }

    private func finishPrimeIfDone() {
        lock.withLock {
            guard priming, let ticket = primeTickets.pending else { return }
            let ready = realtime.pointee.ring.readableFrames()
            let full = !hasRoomForChunk()
            if ready >= primeTarget || fifo.isEmpty || full {
                primeTickets.complete(ticket)
                lock.broadcast()
            }
        }
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

extension OutputQueueEngine {
    /// The realtime event that applies `change` at ring position `position`; nil for the
    /// parameters the queue thread applies itself (PlayRate and Pitch, in the time/pitch stage).
    func realtimeEvent(for change: ParameterChange, at position: Int) -> ParameterEvent? {
        switch change.parameter {
        case .volume: return ParameterEvent(kind: .volume, value: change.value, position: position)
        case .pan: return ParameterEvent(kind: .pan, value: change.value, position: position)
        case .volumeRampTime:
            let seconds = change.value.isNaN ? 0 : min(max(change.value, 0), Self.maximumVolumeRampTime)
            let frames = (Double(seconds) * device.sampleRate).rounded()
            return ParameterEvent(kind: .volumeRampFrames, value: Float(frames), position: position)
        case .playRate, .pitch: return nil
        }
    }
}
