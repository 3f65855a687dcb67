// The parts of a queue's lifecycle (`QueueLifecycle`): each one a value in which only
// legal combinations can be written.

/// Where a queue's run stands, with what only some run states have: whether IsRunning was
/// reported (never while stopped), an output Stop(false) asked for before Start, and how a
/// Stop(false) ends. One value instead of flags, so a stopped queue cannot report IsRunning
/// and a play-out cannot be pending beside a capture drain.
enum RunPhase: Hashable, Sendable {
    /// Stopped. `playOutArmed`: an output queue's Stop(false) came before Start (a callback
    /// at the end of the data while priming): once started it plays what is queued, then stops.
    case stopped(playOutArmed: Bool)
    /// Started; the device has not played or recorded its first frame yet. `isRunning`: what
    /// kAudioQueueProperty_IsRunning reports (true when resumed from a pause).
    case starting(isRunning: Bool)
    case running(isRunning: Bool)
    case paused(isRunning: Bool)
    /// Stop(false) in progress, ending as `ending` says.
    case stopping(StopEnding, isRunning: Bool)

    /// The run state the API reports.
    var state: QueueRunState {
        switch self {
        case .stopped: .stopped
        case .starting: .starting
        case .running: .running
        case .paused: .paused
        case .stopping: .stopping
        }
    }

    /// kAudioQueueProperty_IsRunning.
    var isRunning: Bool {
        switch self {
        case .stopped: false
        case .starting(let running), .running(let running), .paused(let running), .stopping(_, let running): running
        }
    }

    /// The same run state with IsRunning set (a stopped queue has none).
    func reporting(_ running: Bool) -> RunPhase {
        switch self {
        case .stopped: self
        case .starting: .starting(isRunning: running)
        case .running: .running(isRunning: running)
        case .paused: .paused(isRunning: running)
        case .stopping(let ending, _): .stopping(ending, isRunning: running)
        }
    }
}

/// How a Stop(false) ends.
enum StopEnding: Hashable, Sendable {
    /// Output: once what is queued has played, the realtime side stops (`realtimeFinished`).
    case playingOut
    /// Output: the queue thread discarded what was queued (a Reset while playing out); the
    /// realtime side still stops by itself.
    case discarded
    /// Input: what was captured is being delivered (`captureDelivered`).
    case deliveringCapture
}

/// Whether the queue is disposed of, or on the way to it.
enum DisposalPhase: Hashable, Sendable {
    case none
    /// Dispose(false) waits for the queue to play out or deliver what was captured: every call fails.
    case pending
    /// Dispose ran (or is running): every call fails.
    case disposed
    /// The disposal has detached the device: the queue thread is to exit.
    case tornDown
}

/// Resets in progress and the callbacks they still owe: enqueueing is refused meanwhile.
struct ResetCounts: Hashable, Sendable {
    /// Resets (Reset, Stop(true), Dispose) in progress.
    var inProgress = 0
    /// Buffers a reset returned that have not been through their callbacks yet.
    var deliveriesPending = 0
}
