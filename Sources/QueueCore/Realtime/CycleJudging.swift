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
#if JAQ_CHECK_NOLOCKS
@_noLocks
#endif
@inline(__always)
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
