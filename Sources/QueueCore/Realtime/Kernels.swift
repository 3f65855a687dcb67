import Synchronization

// Everything the JACK process thread runs, in one file: the @_noLocks checker
// must see every callee's body, and debug builds compile file by file.
// No locks, no allocation, no reference counting, no waiting, no C calls here.

/// Realtime mode codes (the raw values of `RealtimeMode`), as plain integers the
/// checker can see through.
enum ModeCode {
    @_transparent static var stopped: Int { 0 }
    @_transparent static var armed: Int { 1 }
    @_transparent static var running: Int { 2 }
    @_transparent static var paused: Int { 3 }
}

extension FrameRing {
    /// The plane of channel `channel`.
    @_noLocks @inline(__always)
    public func plane(_ channel: Int) -> UnsafeMutablePointer<Float> { storage + channel * capacity }

    /// Frames the consumer may read now.
    @_noLocks @inline(__always)
    public func readableFrames() -> Int {
        writeIndex.load(ordering: .acquiring) - readIndex.load(ordering: .relaxed)
    }

    /// Frames the producer may write now.
    @_noLocks @inline(__always)
    public func writableFrames() -> Int {
        capacity - (writeIndex.load(ordering: .relaxed) - readIndex.load(ordering: .acquiring))
    }

    /// Producer: copies `count` frames from `channelCount` source planes (offset `from`)
    /// into the ring and publishes them. The caller checked `writableFrames()`.
    @_noLocks @inline(__always)
    public func write(_ sources: UnsafePointer<UnsafePointer<Float>>, offset from: Int, count: Int) {
        writeUnpublished(sources, offset: from, count: count, after: 0)
        publish(count)
    }

    /// Producer: copies `count` frames after `held` frames already written past
    /// `writeIndex` but not published; publishes nothing. The caller checked that
    /// `writableFrames() - held` covers them.
    @_noLocks @inline(__always)
    public func writeUnpublished(_ sources: UnsafePointer<UnsafePointer<Float>>, offset from: Int, count: Int, after held: Int) {
        let start = writeIndex.load(ordering: .relaxed) + held
        let first = min(count, capacity - (start & mask))
        for c in 0..<channelCount {
            let plane = self.plane(c)
            let source = sources[c] + from
            UnsafeMutableRawPointer(plane + (start & mask)).copyMemory(from: source, byteCount: first * 4)
            if first < count {
                UnsafeMutableRawPointer(plane).copyMemory(from: source + first, byteCount: (count - first) * 4)
            }
        }
    }

    /// Producer: publishes `count` frames written with `writeUnpublished`.
    @_noLocks @inline(__always)
    public func publish(_ count: Int) {
        writeIndex.store(writeIndex.load(ordering: .relaxed) + count, ordering: .releasing)
    }
}

extension EventRing {
    /// Producer: appends `element`; false if the ring is full.
    @inline(__always) @discardableResult
    public func push(_ element: Element) -> Bool {
        let h = head.load(ordering: .relaxed)
        guard h - tail.load(ordering: .acquiring) < capacity else { return false }
        (storage + (h & mask)).initialize(to: element)
        head.store(h + 1, ordering: .releasing)
        return true
    }

    /// Consumer: the oldest element without removing it.
    @inline(__always)
    public func peek() -> Element? {
        let t = tail.load(ordering: .relaxed)
        guard t < head.load(ordering: .acquiring) else { return nil }
        return storage[t & mask]
    }

    /// Consumer: removes and returns the oldest element.
    @inline(__always)
    public func pop() -> Element? {
        let t = tail.load(ordering: .relaxed)
        guard t < head.load(ordering: .acquiring) else { return nil }
        let element = storage[t & mask]
        tail.store(t + 1, ordering: .releasing)
        return element
    }

}

extension MeterBank {
    /// Realtime: accumulates `count` frames of `channel` (called once per channel per cycle).
    @_noLocks @inline(__always)
    mutating func accumulate(_ channel: Int, _ samples: UnsafePointer<Float>, count: Int) {
        var sum: Float = 0
        var top = runningPeak[channel]
        for i in 0..<count {
            let x = samples[i]
            sum += x * x
            let magnitude = abs(x)
            if magnitude > top { top = magnitude }
        }
        sumSquares[channel] += Double(sum)
        runningPeak[channel] = top
    }

    /// Realtime: ends a cycle of `count` frames; publishes when a window is complete.
    @_noLocks @inline(__always)
    mutating func endCycle(frames count: Int) {
        accumulatedFrames += count
        guard accumulatedFrames >= windowFrames else { return }
        for c in 0..<channelCount {
            let meanSquare = Float(sumSquares[c] / Double(accumulatedFrames))
            average[c].store(meanSquare.bitPattern, ordering: .relaxed)
            peak[c].store(runningPeak[c].bitPattern, ordering: .relaxed)
            sumSquares[c] = 0
            runningPeak[c] = 0
        }
        accumulatedFrames = 0
    }
}

extension RealtimePublication {
    /// Realtime: publishes a cycle: the mode, queue time at its end, the cycle, and the time
    /// base (device frame `baseFrame` is queue time `baseQueueFrames`), as one group.
    @_noLocks @inline(__always)
    func publishCycle(mode: Int, queueFrames: Int64, cycleFrame: Int64, cycleFrameCount: Int,
                      baseFrame: Int64, baseQueueFrames: Int64) {
        self.mode.store(mode, ordering: .relaxed)
        var t = PublishedTime()
        t.mode = mode
        t.queueFrames = queueFrames
        t.cycleFrame = cycleFrame
        t.cycleFrameCount = cycleFrameCount
        t.baseFrame = baseFrame
        t.baseQueueFrames = baseQueueFrames
        time.write(t)
    }

    /// Realtime: publishes a new mode (commands applied between cycles).
    @_noLocks @inline(__always)
    func publishMode(_ mode: Int) {
        self.mode.store(mode, ordering: .relaxed)
        var t = time.writerValue()
        guard t.mode != mode else { return }
        t.mode = mode
        time.write(t)
    }

    /// Realtime: pauses queue time at `queueFrames`, where the last cycle ended.
    @_noLocks @inline(__always)
    func publishPause(queueFrames: Int64) {
        mode.store(ModeCode.paused, ordering: .relaxed)
        var t = time.writerValue()
        t.mode = ModeCode.paused
        t.baseFrame = t.cycleEndFrame
        t.baseQueueFrames = queueFrames
        time.write(t)
    }

    /// Realtime: the device frame to publish with `queueFrames` for a cycle in which the queue
    /// does not run, so that queue time does not advance. A paused queue's time 0 moves later
    /// with the pause (it resumes where it was): the cycle's frame. A stopped queue's time 0
    /// stays on the frame where its last run began, so that kAudioQueueProperty_StartDeviceFrame
    /// still names that frame after the stop (and stays 0 before the first start).
    @_noLocks @inline(__always)
    func idleBaseFrame(mode: Int, frameTime: Int64, queueFrames: Int64) -> Int64 {
        guard mode == ModeCode.stopped else { return frameTime }
        return time.writerValue().originFrame + queueFrames
    }
}

/// A realtime kernel's result bit: post the queue thread's semaphore after the
/// cycle (ring space or data, or a state change).
@_transparent public var realtimeWakeQueueThread: UInt32 { 1 }

/// Renders one JACK cycle of an output queue into its ports.
///
/// Starts on exactly the requested device frame (inside the period if need be),
/// plays the ring with volume (ramped), pan and per-buffer parameter events,
/// fills with silence when stopped, paused or starved, and stops by itself at
/// the end of stream. Realtime: no locks, no allocation, no waiting.
@_noLocks
public func renderOutputCycle(
    _ s: UnsafeMutablePointer<OutputRealtimeState>, frameTime: Int64, frameCount n: Int,
    ports: UnsafePointer<UnsafeMutablePointer<Float>>
) -> UInt32 {
    var outcome: UInt32 = 0
    let portCount = s.pointee.portCount

    if applyOutputCommands(s) { outcome |= realtimeWakeQueueThread }
    // What earlier cycles rendered has gone out: played.
    if publishPlayed(s, upTo: s.pointee.ring.readIndex.load(ordering: .relaxed)) { outcome |= realtimeWakeQueueThread }

    // Parameters requested by control threads.
    let panRequest = s.pointee.requestedPan.load(ordering: .relaxed)
    if panRequest != s.pointee.lastPanRequest {
        s.pointee.lastPanRequest = panRequest
        s.pointee.pan = min(max(Float(bitPattern: panRequest), -1), 1)
    }
    let volumeRequest = s.pointee.requestedVolume.load(ordering: .relaxed)
    if volumeRequest != s.pointee.lastVolumeRequest {
        s.pointee.lastVolumeRequest = volumeRequest
        startVolumeChange(s, to: Float(bitPattern: volumeRequest))
    }

    // Cycles the server skipped (an xrun left this client out): the frames they would have
    // played are dropped from the ring, so the queue stays on time (and aligned with others).
    // A jump in frame time is judged over the next cycles (see CycleSkipTracker); meanwhile
    // cycles play on the continuous timeline.
    let verdict = judgeCycle(&s.pointee.skips, frameTime: frameTime, frameCount: n,
                             tracking: s.pointee.mode == ModeCode.running)
    let frameTime = verdict.frame
    let missed = verdict.confirmedLoss
    if missed > 0 && s.pointee.mode == ModeCode.running {
        s.pointee.queueFrames += missed
        let read = s.pointee.ring.readIndex.load(ordering: .relaxed)
        var available = s.pointee.ring.writeIndex.load(ordering: .acquiring) - read
        if s.pointee.endOfStream != .max { available = min(available, s.pointee.endOfStream - read) }
        let dropped = min(Int(missed), max(available, 0))
        s.pointee.ring.readIndex.store(read + dropped, ordering: .releasing)
        s.pointee.publication.lostFrames.wrappingAdd(Int(missed), ordering: .relaxed)
        outcome |= realtimeWakeQueueThread

    }

    // Where in this cycle audio starts.
    var offset = 0
    if s.pointee.mode == ModeCode.armed {
        let start = s.pointee.armedFrame
        if start != .min && start - frameTime >= Int64(n) {
            // Not yet: the queue time runs up to the start frame (negative before it).
            publishCycle(s, frameTime: frameTime, frameCount: n, queueFramesAtCycleStart: s.pointee.queueFrames - (start - frameTime))
            silence(ports, portCount, from: 0, count: n)
            return outcome
        }
        offset = start == .min ? 0 : Int(max(0, start - frameTime))
        s.pointee.mode = ModeCode.running
        s.pointee.publication.startFrame.store(frameTime + Int64(offset), ordering: .relaxed)
        s.pointee.publication.startCount.wrappingAdd(1, ordering: .releasing)
        outcome |= realtimeWakeQueueThread
    }

    guard s.pointee.mode == ModeCode.running else {
        let queueFrames = s.pointee.queueFrames
        publishCycle(s, frameTime: frameTime, frameCount: n, queueFramesAtCycleStart: queueFrames,
                     baseFrame: s.pointee.publication.idleBaseFrame(mode: s.pointee.mode, frameTime: frameTime, queueFrames: queueFrames))
        silence(ports, portCount, from: 0, count: n)
        return outcome
    }

    silence(ports, portCount, from: 0, count: offset)
    let queueFramesAtCycleStart = s.pointee.queueFrames - Int64(offset)
    let wanted = n - offset
    let read = s.pointee.ring.readIndex.load(ordering: .relaxed)
    var available = s.pointee.ring.writeIndex.load(ordering: .acquiring) - read
    let atEnd = s.pointee.endOfStream != .max
    if atEnd { available = min(available, s.pointee.endOfStream - read) }
    let count = min(wanted, max(available, 0))

    renderFrames(s, ports: ports, from: offset, count: count, readIndex: read)
    s.pointee.ring.readIndex.store(read + count, ordering: .releasing)
    // Wake the queue thread only once there is the room it waits for.
    if count > 0 && s.pointee.ring.writableFrames() >= s.pointee.wakeThreshold.load(ordering: .relaxed) {
        s.pointee.wakeThreshold.store(.max, ordering: .relaxed)
        outcome |= realtimeWakeQueueThread
    }

    if atEnd && read + count >= s.pointee.endOfStream {
        // Played out: the queue stops by itself after its last frame.
        silence(ports, portCount, from: offset + count, count: wanted - count)
        s.pointee.queueFrames += Int64(count)
        s.pointee.mode = ModeCode.stopped
        s.pointee.endOfStream = .max
        // The stream's last frames are in this cycle's port buffers: nothing more is to play.
        _ = publishPlayed(s, upTo: read + count)
        s.pointee.publication.finishCount.wrappingAdd(1, ordering: .releasing)
        outcome |= realtimeWakeQueueThread
    } else {
        if count < wanted {
            silence(ports, portCount, from: offset + count, count: wanted - count)
            s.pointee.publication.lostFrames.wrappingAdd(wanted - count, ordering: .relaxed)
        }
        s.pointee.queueFrames += Int64(wanted)
    }

    if s.pointee.meters.enabled.load(ordering: .relaxed) {
        meterPorts(s, ports: ports, frameCount: n)
    }
    publishCycle(s, frameTime: frameTime, frameCount: n, queueFramesAtCycleStart: queueFramesAtCycleStart)
    return outcome
}

/// Publishes that the ring has been played up to `position`; true if the queue thread asked
/// to be woken by then (a buffer it holds until played can go back to its callback).
@_noLocks
@inline(__always)
func publishPlayed(_ s: UnsafeMutablePointer<OutputRealtimeState>, upTo position: Int) -> Bool {
    s.pointee.playedIndex.store(position, ordering: .sequentiallyConsistent)
    guard position >= s.pointee.returnWakePosition.load(ordering: .sequentiallyConsistent) else { return false }
    s.pointee.returnWakePosition.store(.max, ordering: .relaxed)
    return true
}

/// Applies the commands control threads queued; true if any was applied.
/// Realtime (called by each cycle), or on a control thread when no cycle can run.
@_noLocks
public func applyOutputCommands(_ s: UnsafeMutablePointer<OutputRealtimeState>) -> Bool {
    var lastSequence = -1
    while let command = s.pointee.commands.pop() {
        lastSequence = command.sequence
        switch command.kind {
        case .start:
            if s.pointee.mode == ModeCode.stopped { s.pointee.queueFrames = 0 }
            if s.pointee.mode != ModeCode.running {
                s.pointee.mode = ModeCode.armed
                s.pointee.armedFrame = command.frame
            }
        case .pause:
            if s.pointee.mode == ModeCode.running || s.pointee.mode == ModeCode.armed {
                s.pointee.mode = ModeCode.paused
                // Queue time stops where the last cycle ended.
                s.pointee.publication.publishPause(queueFrames: s.pointee.queueFrames)
            }
        case .stop:
            s.pointee.mode = ModeCode.stopped
            s.pointee.endOfStream = .max
        case .discard:
            let read = s.pointee.ring.readIndex.load(ordering: .relaxed)
            if command.position > read { s.pointee.ring.readIndex.store(command.position, ordering: .releasing) }
            while let event = s.pointee.parameterEvents.peek(), event.position < command.position {
                _ = s.pointee.parameterEvents.pop()
            }
        case .endOfStream:
            s.pointee.endOfStream = command.position
        }
    }
    guard lastSequence >= 0 else { return false }
    s.pointee.publication.publishMode(s.pointee.mode)
    s.pointee.publication.appliedSequence.store(lastSequence, ordering: .releasing)
    return true
}

/// Tells cycles the server skipped from late readings of its clock.
///
/// JACK's frame time (`jack_last_frame_time`) is the server's, not the client's: a client
/// whose cycle runs late, after the server began the next one, reads the next cycle's
/// frame, and then reads the same frame again in its next cycle. Only a jump that the
/// following cycles confirm (they stay on the jumped timeline) is a skipped cycle; a
/// jump followed by a return to the continuous timeline was a late reading, and nothing
/// was lost. Until it is judged (`cyclesToConfirm` cycles), cycles are placed on the
/// continuous timeline: input queues hold them back (3 cycles, so that even repeated late
/// readings are told apart and a loss still goes before them), output queues play them
/// (2 cycles: after a real skip, two cycles play late before the queue catches up).
public struct CycleSkipTracker: BitwiseCopyable {
    /// The frame the next cycle starts on if none is skipped (.min before the first).
    var expected: Int64 = .min
    /// Frames of a jump not yet confirmed (0: none).
    var pending: Int64 = 0
    /// Cycles seen on the jumped timeline so far.
    var pendingCycles = 0
    /// Cycles on the jumped timeline that confirm a jump.
    let cyclesToConfirm: Int
    public init(cyclesToConfirm: Int) { self.cyclesToConfirm = cyclesToConfirm }
}

/// One cycle as judged by `judgeCycle`.
struct CycleVerdict {
    /// The frame this cycle starts on (the continuous one while a jump is unconfirmed).
    var frame: Int64
    /// Frames of skipped cycles confirmed now (they come before the held cycles).
    var confirmedLoss: Int64 = 0
    /// An earlier jump was judged (confirmed or dismissed) now.
    var resolved = false
}

/// Judges this cycle's frame time against the tracker: see `CycleSkipTracker`.
/// `tracking`: whether a jump now may be a loss (the queue is running).
@_noLocks @inline(__always)
func judgeCycle(_ t: inout CycleSkipTracker, frameTime: Int64, frameCount n: Int, tracking: Bool) -> CycleVerdict {
    var verdict = CycleVerdict(frame: frameTime)
    guard n > 0 else { return verdict }
    guard t.expected != .min else {
        t.expected = frameTime + Int64(n)
        return verdict
    }
    var expected = t.expected
    if t.pending > 0 {
        let jump = frameTime - expected
        if jump == t.pending && t.pendingCycles < t.cyclesToConfirm {
            // Still on the jumped timeline: undecided.
            t.pendingCycles += 1
            verdict.frame = expected
            t.expected = expected + Int64(n)
            return verdict
        }
        verdict.resolved = true
        if jump != 0 {
            // Not back on the continuous timeline: the cycles were skipped.
            verdict.confirmedLoss = t.pending
            expected += t.pending
        }
        t.pending = 0
        t.pendingCycles = 0
    }
    let jump = frameTime - expected
    // Small negative or huge jumps (a late reading, a new server, a restart) are not losses.
    if tracking && jump > 0 && jump < 1 << 24 {
        t.pending = jump
        t.pendingCycles = 1
        verdict.frame = expected
        t.expected = expected + Int64(n)
        return verdict
    }
    t.expected = frameTime + Int64(n)
    return verdict
}

/// Input: settles an unconfirmed jump now (a stop or pause), as a loss, and publishes
/// the held frames after its gap.
@_noLocks @inline(__always)
func settleHeldInput(_ s: UnsafeMutablePointer<InputRealtimeState>) -> Bool {
    let loss = s.pointee.skips.pending
    guard loss > 0 || s.pointee.heldFrames > 0 else { return false }
    if loss > 0 {
        s.pointee.skips.expected += loss
        s.pointee.skips.pending = 0
        s.pointee.skips.pendingCycles = 0
    }
    publishHeldInput(s, loss: loss)
    return true
}

/// Input: queues the gap of `loss` frames at the published end of the ring (before the
/// held frames), then publishes the held frames.
@_noLocks @inline(__always)
func publishHeldInput(_ s: UnsafeMutablePointer<InputRealtimeState>, loss: Int64) {
    if loss > 0 {
        var gap = s.pointee.pendingGap
        if gap.count == 0 { gap.position = s.pointee.ring.writeIndex.load(ordering: .relaxed) }
        gap.count += Int(loss)
        if s.pointee.gaps.push(gap) { gap.count = 0 }
        s.pointee.pendingGap = gap
        s.pointee.queueFrames += loss
        s.pointee.publication.lostFrames.wrappingAdd(Int(loss), ordering: .relaxed)
    }
    if s.pointee.heldFrames > 0 {
        s.pointee.ring.publish(s.pointee.heldFrames)
        s.pointee.heldFrames = 0
    }
}

@_noLocks @inline(__always)
private func publishCycle(
    _ s: UnsafeMutablePointer<OutputRealtimeState>, frameTime: Int64, frameCount: Int, queueFramesAtCycleStart: Int64,
    baseFrame: Int64? = nil
) {
    s.pointee.publication.publishCycle(mode: s.pointee.mode, queueFrames: s.pointee.queueFrames,
                                       cycleFrame: frameTime, cycleFrameCount: frameCount,
                                       baseFrame: baseFrame ?? frameTime, baseQueueFrames: queueFramesAtCycleStart)
}

@_noLocks @inline(__always)
private func silence(_ ports: UnsafePointer<UnsafeMutablePointer<Float>>, _ portCount: Int, from: Int, count: Int) {
    guard count > 0 else { return }
    for p in 0..<portCount { (ports[p] + from).update(repeating: 0, count: count) }
}

@_noLocks @inline(__always)
private func startVolumeChange(_ s: UnsafeMutablePointer<OutputRealtimeState>, to target: Float) {
    let clamped = min(max(target, 0), 1)
    let rampFrames = s.pointee.volumeRampFrames.load(ordering: .relaxed)
    if rampFrames > 0 && clamped != s.pointee.volume {
        s.pointee.volumeTarget = clamped
        s.pointee.volumeStep = (clamped - s.pointee.volume) / Float(rampFrames)
        s.pointee.rampRemaining = rampFrames
    } else {
        s.pointee.volume = clamped
        s.pointee.volumeTarget = clamped
        s.pointee.rampRemaining = 0
    }
}

/// Balance gains: unity at centre, one side fades linearly to 0 towards the other.
@_noLocks @inline(__always)
private func balanceGains(_ pan: Float) -> (left: Float, right: Float) {
    let p = min(max(pan, -1), 1)
    return (min(1, 1 - p), min(1, 1 + p))
}

/// Plays `count` ring frames from `readIndex` into the ports at `from`, applying
/// parameter events exactly at their positions, the volume ramp and pan.
@_noLocks
private func renderFrames(
    _ s: UnsafeMutablePointer<OutputRealtimeState>, ports: UnsafePointer<UnsafeMutablePointer<Float>>,
    from: Int, count: Int, readIndex: Int
) {
    let capacity = s.pointee.ring.capacity
    let mask = capacity - 1
    let channels = s.pointee.channelCount
    let portCount = s.pointee.portCount
    var done = 0
    while done < count {
        let position = readIndex + done
        // Events due at or before this frame.
        while let event = s.pointee.parameterEvents.peek(), event.position <= position {
            _ = s.pointee.parameterEvents.pop()
            // The event's value becomes the parameter's value (what GetParameter reports),
            // unless a control thread set a newer one meanwhile.
            let bits = event.value.bitPattern
            switch event.kind {
            case .volume:
                startVolumeChange(s, to: event.value)
                if s.pointee.requestedVolume.compareExchange(
                    expected: s.pointee.lastVolumeRequest, desired: bits, ordering: .relaxed).exchanged {
                    s.pointee.lastVolumeRequest = bits
                }
            case .pan:
                s.pointee.pan = min(max(event.value, -1), 1)
                if s.pointee.requestedPan.compareExchange(
                    expected: s.pointee.lastPanRequest, desired: bits, ordering: .relaxed).exchanged {
                    s.pointee.lastPanRequest = bits
                }
            case .volumeRampFrames:
                // What GetParameter(VolumeRampTime) reports from here on, as if set then.
                s.pointee.volumeRampFrames.store(Int(event.value), ordering: .relaxed)
            }
        }
        var chunk = count - done
        if let event = s.pointee.parameterEvents.peek(), event.position < position + chunk {
            chunk = event.position - position
        }
        chunk = min(chunk, capacity - (position & mask))  // up to the ring's wrap
        let ramping = s.pointee.rampRemaining > 0
        if ramping { chunk = min(chunk, s.pointee.rampRemaining) }

        let (left, right) = balanceGains(s.pointee.pan)
        let volume = s.pointee.volume
        let step = s.pointee.volumeStep
        for p in 0..<portCount {
            let plane = s.pointee.ring.plane(channels == 1 ? 0 : p) + (position & mask)
            let out = ports[p] + from + done
            var panGain: Float = 1
            if portCount == 2 { panGain = p == 0 ? left : right }
            if ramping {
                for i in 0..<chunk { out[i] = plane[i] * (volume + step * Float(i + 1)) * panGain }
            } else {
                let gain = volume * panGain
                if gain == 1 {
                    UnsafeMutableRawPointer(out).copyMemory(from: plane, byteCount: chunk * 4)
                } else {
                    for i in 0..<chunk { out[i] = plane[i] * gain }
                }
            }
        }
        if ramping {
            s.pointee.rampRemaining -= chunk
            s.pointee.volume = s.pointee.rampRemaining == 0 ? s.pointee.volumeTarget : volume + step * Float(chunk)
        }
        done += chunk
    }
}

@_noLocks
private func meterPorts(
    _ s: UnsafeMutablePointer<OutputRealtimeState>, ports: UnsafePointer<UnsafeMutablePointer<Float>>, frameCount: Int
) {
    if s.pointee.channelCount == 1 {
        // A mono queue is metered on the louder of its two ports.
        let (left, right) = balanceGains(s.pointee.pan)
        s.pointee.meters.accumulate(0, ports[left >= right ? 0 : 1], count: frameCount)
    } else {
        for c in 0..<s.pointee.channelCount { s.pointee.meters.accumulate(c, ports[c], count: frameCount) }
    }
    s.pointee.meters.endCycle(frames: frameCount)
}

/// Captures one JACK cycle of an input queue from its ports into the ring.
///
/// Starts on exactly the requested device frame; when the ring is full the
/// frames are dropped, counted and reported as a gap at their ring position,
/// so queue time stays right. Realtime: no locks, no allocation, no waiting.
@_noLocks
public func captureInputCycle(
    _ s: UnsafeMutablePointer<InputRealtimeState>, frameTime: Int64, frameCount n: Int,
    ports: UnsafePointer<UnsafeMutablePointer<Float>>
) -> UInt32 {
    var outcome: UInt32 = 0
    var lastSequence = -1
    while let command = s.pointee.commands.pop() {
        lastSequence = command.sequence
        switch command.kind {
        case .start:
            if s.pointee.mode == ModeCode.stopped { s.pointee.queueFrames = 0 }
            if s.pointee.mode != ModeCode.running {
                s.pointee.mode = ModeCode.armed
                s.pointee.armedFrame = command.frame
            }
        case .pause:
            if s.pointee.mode == ModeCode.running || s.pointee.mode == ModeCode.armed {
                _ = settleHeldInput(s)
                s.pointee.mode = ModeCode.paused
                // Queue time stops where the last cycle ended.
                s.pointee.publication.publishPause(queueFrames: s.pointee.queueFrames)
            }
        case .stop:
            _ = settleHeldInput(s)
            s.pointee.mode = ModeCode.stopped
            s.pointee.stopPosition.store(s.pointee.ring.writeIndex.load(ordering: .relaxed), ordering: .releasing)
        case .discard, .endOfStream:
            break
        }
    }
    if lastSequence >= 0 {
        s.pointee.publication.appliedSequence.store(lastSequence, ordering: .releasing)
        outcome |= realtimeWakeQueueThread
    }

    // Cycles the server skipped (an xrun left this client out): their frames were never
    // captured; they become a gap, so queue time stays right and the loss is reported.
    // A jump in frame time is judged over the next cycles (see CycleSkipTracker); meanwhile
    // cycles are captured on the continuous timeline and held back, so that a confirmed
    // loss still goes before them.
    let verdict = judgeCycle(&s.pointee.skips, frameTime: frameTime, frameCount: n,
                             tracking: s.pointee.mode == ModeCode.running)
    let frameTime = verdict.frame
    if verdict.resolved {
        publishHeldInput(s, loss: s.pointee.mode == ModeCode.running ? verdict.confirmedLoss : 0)
        outcome |= realtimeWakeQueueThread
    }
    let holding = s.pointee.skips.pending > 0

    var offset = 0
    if s.pointee.mode == ModeCode.armed {
        let start = s.pointee.armedFrame
        if start != .min && start - frameTime >= Int64(n) {
            publishInputCycle(s, frameTime: frameTime, frameCount: n,
                              queueFramesAtCycleStart: s.pointee.queueFrames - (start - frameTime))
            return outcome
        }
        offset = start == .min ? 0 : Int(max(0, start - frameTime))
        s.pointee.mode = ModeCode.running
        s.pointee.publication.startFrame.store(frameTime + Int64(offset), ordering: .relaxed)
        s.pointee.publication.startCount.wrappingAdd(1, ordering: .releasing)
        outcome |= realtimeWakeQueueThread
    }

    guard s.pointee.mode == ModeCode.running else {
        let queueFrames = s.pointee.queueFrames
        publishInputCycle(s, frameTime: frameTime, frameCount: n, queueFramesAtCycleStart: queueFrames,
                          baseFrame: s.pointee.publication.idleBaseFrame(mode: s.pointee.mode, frameTime: frameTime, queueFrames: queueFrames))
        return outcome
    }

    let queueFramesAtCycleStart = s.pointee.queueFrames - Int64(offset)
    let wanted = n - offset
    let space = s.pointee.ring.writableFrames() - s.pointee.heldFrames
    let count = min(wanted, space)
    if count > 0 && holding {
        s.pointee.ring.writeUnpublished(UnsafeRawPointer(ports).assumingMemoryBound(to: UnsafePointer<Float>.self),
                                        offset: offset, count: count, after: s.pointee.heldFrames)
        s.pointee.heldFrames += count
    } else if count > 0 {
        s.pointee.ring.write(UnsafeRawPointer(ports).assumingMemoryBound(to: UnsafePointer<Float>.self),
                             offset: offset, count: count)
    }
    if count < wanted {
        // (While holding, a full ring settles the jump as a loss first, so positions stay in order.)
        if holding { _ = settleHeldInput(s) }
        let lost = wanted - count
        let position = s.pointee.ring.writeIndex.load(ordering: .relaxed)
        // A gap still waiting for room in the gap ring takes these frames too, so the total stays right.
        var gap = s.pointee.pendingGap
        if gap.count == 0 { gap.position = position }
        gap.count += lost
        if s.pointee.gaps.push(gap) { gap.count = 0 }
        s.pointee.pendingGap = gap
        s.pointee.publication.lostFrames.wrappingAdd(lost, ordering: .relaxed)
        outcome |= realtimeWakeQueueThread
    } else if s.pointee.pendingGap.count > 0, s.pointee.gaps.push(s.pointee.pendingGap) {
        s.pointee.pendingGap.count = 0
    }
    s.pointee.queueFrames += Int64(wanted)
    // Wake the queue thread only once there is enough to fill what it waits for.
    if s.pointee.ring.readableFrames() >= s.pointee.wakeThreshold.load(ordering: .relaxed) {
        s.pointee.wakeThreshold.store(.max, ordering: .relaxed)
        outcome |= realtimeWakeQueueThread
    }

    if s.pointee.meters.enabled.load(ordering: .relaxed) {
        for c in 0..<s.pointee.channelCount { s.pointee.meters.accumulate(c, ports[c] + offset, count: wanted) }
        s.pointee.meters.endCycle(frames: wanted)
    }
    publishInputCycle(s, frameTime: frameTime, frameCount: n, queueFramesAtCycleStart: queueFramesAtCycleStart)
    return outcome
}

@_noLocks @inline(__always)
private func publishInputCycle(
    _ s: UnsafeMutablePointer<InputRealtimeState>, frameTime: Int64, frameCount: Int, queueFramesAtCycleStart: Int64,
    baseFrame: Int64? = nil
) {
    s.pointee.publication.publishCycle(mode: s.pointee.mode, queueFrames: s.pointee.queueFrames,
                                       cycleFrame: frameTime, cycleFrameCount: frameCount,
                                       baseFrame: baseFrame ?? frameTime, baseQueueFrames: queueFramesAtCycleStart)
}
