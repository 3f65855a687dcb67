import Glibc
import Synchronization

// An input queue's realtime side: the JACK cycle captures the ports into the ring.
// No locks, no allocation, no reference counting, no waiting, no C calls in the kernels.

/// What the realtime entry of an input queue holds.
typealias InputRealtimeContext = RealtimeContext<InputRealtimeState>

/// The realtime entry of input queues (installed on the device).
let inputRealtimeEntry: RealtimeEntry = { context, frameTime, frameCount, ports, mayWait, freewheeling in
    let c = context.assumingMemoryBound(to: InputRealtimeContext.self)
    if mayWait { waitForInputSpace(c, frames: Int(frameCount)) }
    c.pointee.cycleEnded(captureInputCycle(c.pointee.state, frameTime: frameTime, frameCount: Int(frameCount), ports: ports,
                                           freewheeling: freewheeling))
}

/// Not realtime (freewheel, ManualDriver): waits for ring space rather than drop.
private func waitForInputSpace(_ c: UnsafeMutablePointer<InputRealtimeContext>, frames: Int) {
    let s = c.pointee.state
    let core = s.pointee.core
    c.pointee.waitForQueueThread {
        core.pointee.mode != ModeCode.running || core.pointee.commands.peek() != nil
            || s.pointee.ring.writableFrames() >= frames
    }
}

/// Captures one JACK cycle of an input queue from its ports into the ring.
///
/// Starts on exactly the requested device frame; when the ring is full the
/// frames are dropped, counted and reported as a gap at their ring position,
/// so queue time stays right. Realtime: no locks, no allocation, no waiting.
#if JAQ_CHECK_NOLOCKS
@_noLocks
#endif
public func captureInputCycle(
    _ s: UnsafeMutablePointer<InputRealtimeState>, frameTime: Int64, frameCount n: Int,
    ports: UnsafePointer<UnsafeMutablePointer<Float>>, freewheeling: Bool = false
) -> UInt32 {
    var outcome: UInt32 = 0
    let c = s.pointee.core
    // A lent buffer goes back before any command is applied (direct capture).
    if c.pointee.commands.peek() != nil, returnLentBuffer(s) { outcome |= realtimeWakeQueueThread }
    if applyCommands(InputSide(s: s)) { outcome |= realtimeWakeQueueThread }

    // Cycles the server skipped (an xrun left this client out): their frames were never
    // captured; they become a gap, so queue time stays right and the loss is reported.
    // A jump in frame time is judged over the next cycles (see CycleSkipTracker); meanwhile
    // cycles are captured on the continuous timeline and held back, so that a confirmed
    // loss still goes before them.
    // In freewheel the server skips no client's cycle: a jump is only its clock's.
    let verdict = judgeCycle(&c.pointee.skips, frameTime: frameTime, frameCount: n,
                             tracking: c.pointee.mode == ModeCode.running && !freewheeling)
    let frameTime = verdict.frame
    if verdict.resolved {
        publishHeldInput(s, loss: c.pointee.mode == ModeCode.running ? verdict.confirmedLoss : 0)
        outcome |= realtimeWakeQueueThread
    }
    let holding = c.pointee.skips.pending > 0

    guard let offset = startOffset(c, frameTime: frameTime, frameCount: n, outcome: &outcome) else { return outcome }

    guard c.pointee.mode == ModeCode.running else {
        publishIdleCycle(c, frameTime: frameTime, frameCount: n)
        return outcome
    }

    let queueFramesAtCycleStart = c.pointee.queueFrames - Int64(offset)
    // Straight into the lent head buffer first (direct capture); the rest into the ring.
    var returned = false
    var direct = 0
    if offset == 0 && !holding {
        direct = captureIntoLentBuffer(s, ports: ports, offset: 0, count: n, returned: &returned)
    } else {
        returned = returnLentBuffer(s)
    }
    if returned { outcome |= realtimeWakeQueueThread }
    let captured = n - offset
    let ringOffset = offset + direct
    let wanted = captured - direct
    let space = s.pointee.ring.writableFrames() - s.pointee.heldFrames
    let count = min(wanted, space)
    if count > 0 && holding {
        s.pointee.ring.writeUnpublished(UnsafeRawPointer(ports).assumingMemoryBound(to: UnsafePointer<Float>.self),
                                        offset: ringOffset, count: count, after: s.pointee.heldFrames)
        s.pointee.heldFrames += count
    } else if count > 0 {
        s.pointee.ring.write(UnsafeRawPointer(ports).assumingMemoryBound(to: UnsafePointer<Float>.self),
                             offset: ringOffset, count: count)
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
        s.pointee.gapsRecorded.wrappingAdd(1, ordering: .releasing)
        c.pointee.publication.lostFrames.wrappingAdd(lost, ordering: .relaxed)
        outcome |= realtimeWakeQueueThread
    } else if s.pointee.pendingGap.count > 0, s.pointee.gaps.push(s.pointee.pendingGap) {
        s.pointee.pendingGap.count = 0
        s.pointee.gapsRecorded.wrappingAdd(1, ordering: .releasing)
    }
    c.pointee.queueFrames += Int64(captured)
    // Wake the queue thread only once there is enough to fill what it waits for.
    if s.pointee.ring.readableFrames() >= s.pointee.wakeThreshold.load(ordering: .relaxed) {
        s.pointee.wakeThreshold.store(.max, ordering: .relaxed)
        outcome |= realtimeWakeQueueThread
    }

    if s.pointee.meters.enabled.load(ordering: .relaxed) {
        for c in 0..<s.pointee.channelCount { s.pointee.meters.accumulate(c, ports[c] + offset, count: captured) }
        s.pointee.meters.endCycle(frames: captured)
    }
    publishCycle(c, frameTime: frameTime, frameCount: n, queueFramesAtCycleStart: queueFramesAtCycleStart)
    return outcome
}

/// Input: settles an unconfirmed jump now (a stop or pause), as a loss, and publishes
/// the held frames after its gap.
#if JAQ_CHECK_NOLOCKS
@_noLocks
#endif
@inline(__always)
func settleHeldInput(_ s: UnsafeMutablePointer<InputRealtimeState>) -> Bool {
    let c = s.pointee.core
    let loss = c.pointee.skips.pending
    guard loss > 0 || s.pointee.heldFrames > 0 else { return false }
    if loss > 0 {
        c.pointee.skips.expected += loss
        c.pointee.skips.pending = 0
        c.pointee.skips.pendingCycles = 0
    }
    publishHeldInput(s, loss: loss)
    return true
}

/// Input: queues the gap of `loss` frames at the published end of the ring (before the
/// held frames), then publishes the held frames.
#if JAQ_CHECK_NOLOCKS
@_noLocks
#endif
@inline(__always)
func publishHeldInput(_ s: UnsafeMutablePointer<InputRealtimeState>, loss: Int64) {
    let c = s.pointee.core
    if loss > 0 {
        var gap = s.pointee.pendingGap
        if gap.count == 0 { gap.position = s.pointee.ring.writeIndex.load(ordering: .relaxed) }
        gap.count += Int(loss)
        if s.pointee.gaps.push(gap) { gap.count = 0 }
        s.pointee.pendingGap = gap
        s.pointee.gapsRecorded.wrappingAdd(1, ordering: .releasing)
        c.pointee.queueFrames += loss
        c.pointee.publication.lostFrames.wrappingAdd(Int(loss), ordering: .relaxed)
    }
    if s.pointee.heldFrames > 0 {
        s.pointee.ring.publish(s.pointee.heldFrames)
        s.pointee.heldFrames = 0
    }
}

/// An input queue's steps in the shared realtime core.
struct InputSide: RealtimeSide {
    let s: UnsafeMutablePointer<InputRealtimeState>

    var core: UnsafeMutablePointer<RealtimeCore> { @inline(__always) get { s.pointee.core } }

    /// Frames held back for an unconfirmed jump are settled (as after a loss) first.
    @inline(__always) func willHalt() { _ = settleHeldInput(s) }

    /// All frames before the stop position are final.
    @inline(__always) func didStop() {
        s.pointee.stopPosition.store(s.pointee.ring.writeIndex.load(ordering: .relaxed), ordering: .releasing)
    }

    @inline(__always) func applyRingCommand(_ command: RealtimeCommand) {}
}
