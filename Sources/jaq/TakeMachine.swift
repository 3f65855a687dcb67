/// The decisions of a take session, as a value: no queue, no threads, no clock. `RecordSession`
/// looks at the take (its writer, the server, the sources, signals) and hands what it saw in as
/// events; the machine answers with the step to take, and at the end with how the take ended,
/// what to say, and whether its files stay. TakeMachineTests walk it without a server.
///
/// Every kind of take goes through it: one file per track, interleaved, encoded; one take or a
/// tape machine's (`multi`) takes, one after another.
struct TakeMachine: Equatable {
    /// What one look at the writer and the server found.
    struct Look: Equatable {
        var writerError: String?
        var serverAlive = true
        /// The writer wrote this many take frames, of a take that ends after `end` (once known).
        var framesWritten: Int64 = 0
        var end: Int64?
        /// A SIGINT or SIGTERM arrived.
        var signal: Int32?
    }

    /// What the session does next.
    enum Step: Equatable {
        /// Look at the sources, the clock, signals and the trigger, then wait a moment.
        case carryOn
        /// The take reached its end and the tape machine goes on: close it (its frames through
        /// `end`), report it, and arm the next.
        case nextTake(end: Int64)
        /// The take is over: stop the queue and write what was captured.
        case stop
    }

    /// How the take ended, once the writer wrote everything: the line that says so, and
    /// whether its files go.
    struct Ending: Equatable {
        enum Line: Equatable {
            /// The writer failed (the disk, a header): said with how far the take is complete.
            case failed(String)
            /// The server lost its device (on a netjack2 slave: the master left).
            case deviceLost(String)
            case serverGone
            /// Recorded as asked, stopped or interrupted: `reason`.
            case recorded(reason: String)
            /// Nothing to say: a tape machine's next take that never rolled.
            case none
        }
        var line: Line
        /// The take never began, or nothing of it was recorded: its files go.
        var removesFiles: Bool
    }

    /// A tape machine (`--multi`): a take that reached its end arms the next.
    let multi: Bool
    /// Why the take stopped, said in its last line.
    private(set) var stopReason: String?
    private(set) var exitStatus: Int32 = 0
    /// The last take ended as asked (its duration, the transport's stop): kept even if empty.
    private(set) var reachedEnd = false
    private(set) var serverGone = false
    /// The port whose device went away (the server's own), ending the take.
    private(set) var deviceLost: String?

    init(multi: Bool) { self.multi = multi }

    /// A look at the writer and the server.
    mutating func look(_ look: Look) -> Step {
        if let error = look.writerError {
            stopReason = error
            exitStatus = 1
            return .stop
        }
        if !look.serverAlive {
            // Shut down or gone: nothing more will come; what was captured is written.
            serverGone = true
            exitStatus = 1
            return .stop
        }
        // A take whose every frame is written is done, whatever its sources do next. A tape
        // machine reports it and arms the next take, unless a signal came.
        if let end = look.end, look.framesWritten >= end {
            guard multi, look.signal == nil else {
                stopReason = stopReason ?? "duration reached"
                reachedEnd = true
                return .stop
            }
            return .nextTake(end: end)
        }
        return .carryOn
    }

    /// A source went away: the server's own device (`port`), or every port with the server.
    mutating func sourceLost(device port: String?, serverAlive: Bool) {
        if serverAlive, let port { deviceLost = port } else { serverGone = true }
        exitStatus = 1
    }

    /// A signal ends the take: SIGINT is "interrupted", others "terminated".
    mutating func signalled(isInterrupt: Bool) {
        stopReason = isInterrupt ? "interrupted" : "terminated"
    }

    /// The transport stopped: the take ends on its frame.
    mutating func transportStopped() { stopReason = "transport stopped" }

    /// The tape machine could not go on to the next take (its files, the writer).
    mutating func cannotGoOn(_ reason: String?) {
        if let reason { stopReason = reason }
        exitStatus = 1
    }

    /// The next take of a tape machine is armed: the last one's reason is said and gone.
    mutating func nextTakeArmed() -> String {
        defer { stopReason = nil }
        return stopReason ?? "duration reached"
    }

    /// How the take ended, from what the writer left: its error, the frames written, whether
    /// the take began.
    mutating func ending(writerError: String?, frames: Int64, takeBegan: Bool) -> Ending {
        let line: Ending.Line
        if let writerError {
            exitStatus = 1
            line = .failed(writerError)
        } else if let deviceLost {
            line = .deviceLost(deviceLost)
        } else if serverGone {
            line = .serverGone
        } else if multi && frames == 0 && !reachedEnd {
            line = .none  // a tape machine's next take that never rolled: said with the files
        } else {
            line = .recorded(reason: stopReason ?? "stopped")
        }
        // Files of a take that never began (the tape machine's next, or a server gone while
        // armed) go, and of one stopped before its first frame; one that ended as asked stays.
        let neverBegan = frames == 0 && !takeBegan
        let removes = neverBegan || (frames == 0 && writerError == nil && !serverGone && deviceLost == nil && !reachedEnd)
        return Ending(line: line, removesFiles: removes)
    }
}
