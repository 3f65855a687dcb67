import Dispatch
import FoundationEssentials
import Glibc
import Sync
import Synchronization

/// Turns a hang inside libjack (a server that stops answering, a client open or close
/// that never returns) into one line on stderr and an exit, instead of a process that
/// waits forever. Armed around the parts of a command that talk to the server before
/// (or after) the real work; `disarm()` once it is under way.
final class Watchdog: @unchecked Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    private let cleanups = Locked<[@Sendable () -> Void]>([])

    /// - Parameters:
    ///   - seconds: how long the guarded part may take.
    ///   - status: the exit status if it fires.
    ///   - message: the line printed if it fires.
    init(seconds: Double, status: Int32 = 1, message: String) {
        let semaphore = self.semaphore
        let cleanups = self.cleanups
        QueueThread(name: "jaq-watchdog") {
            guard semaphore.wait(timeout: .now() + seconds) == .timedOut else { return }
            for cleanup in cleanups.withLock({ $0 }) { cleanup() }
            Log.error(message)
            ServerContext.running?.stop()
            _exit(status)
        }.detach()
    }

    /// Something to undo if it fires (e.g. remove files created for a take that never began).
    func onFire(_ cleanup: @escaping @Sendable () -> Void) {
        cleanups.withLock { $0.append(cleanup) }
    }

    /// The guarded part is done.
    func disarm() { semaphore.signal() }

    /// Seconds the start of a command may take talking to the server ($JAQ_SERVER_TIMEOUT, default 30).
    static let startupSeconds: Double = {
        if let text = Environment["JAQ_SERVER_TIMEOUT"], let value = Double(text), value > 0 { return value }
        return 30
    }()
    /// Seconds closing clients and a private server may take once the work is done.
    static let teardownSeconds = 15.0

    /// Guards the close of the command's JACK clients (and a private server) once its work has
    /// ended, however it ended: libjack's `jack_client_close` can wait for ever on a server that
    /// is going away (SIGTERM sent to jaq and jackd together). If the close takes over
    /// `teardownSeconds`, jaq says so, with `outcome` ("; the take is complete"), and exits with
    /// `status`, the one the command had. Call it before the closes begin: from a `defer` written
    /// after theirs (defers run last first), so that it is armed when they run, and before the
    /// queues' stops where those come first (a signal). Only the first call of a process arms it.
    static func guardTeardown(status: Int32, outcome: String) {
        guard !teardownGuarded.exchange(true, ordering: .relaxed) else { return }
        _ = Watchdog(seconds: teardownSeconds, status: status,
                     message: "closing the JACK clients took over \(Int(teardownSeconds)) s" + outcome)
    }
    private static let teardownGuarded = Atomic<Bool>(false)
}
