import Glibc
import Sync
import Synchronization

/// SIGINT, SIGTERM and SIGHUP as a flag the main loop looks at. The handler stores the signal's
/// number (a lock-free atomic: safe in a handler), posts `mainLoopWake` and never touches audio.
/// It is installed with SA_RESTART, so a system call it interrupts on whichever thread takes
/// the signal goes on. (A dispatch signal source did the same with a handler of libdispatch's,
/// plus two worker threads started for it: issue #29.)
final class Interruption: Sendable {
    init() {
        // A file size limit makes writes fail with EFBIG (reported) instead of killing jaq.
        Glibc.signal(SIGXFSZ, SIG_IGN)
        // The flag and the main loop's wake are set up before a handler can look at them.
        _ = interruptionSignal.load(ordering: .relaxed)
        _ = mainLoopWake.raw
        var signals = sigset_t()
        sigemptyset(&signals)
        for number in [SIGINT, SIGTERM, SIGHUP] {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = interruptionHandler
            action.sa_flags = SA_RESTART
            sigemptyset(&action.sa_mask)
            sigaction(number, &action, nil)
            sigaddset(&signals, number)
        }
        // A parent may have started jaq with them blocked (the mask outlives exec): this
        // thread, and the threads it starts from now on, take them.
        pthread_sigmask(SIG_UNBLOCK, &signals, nil)
    }

    /// The signal received, if any (the first, when several came).
    var signal: Int32? {
        let value = interruptionSignal.load(ordering: .relaxed)
        return value == 0 ? nil : value
    }

    /// The conventional exit status for a signal: 128 + its number.
    static func exitStatus(_ number: Int32) -> Int32 { 128 + number }
}

/// The first signal received (0: none).
private let interruptionSignal = Atomic<Int32>(0)

/// The signal handler: one atomic store, and the main loop woken to see it.
private func interruptionHandler(_ number: Int32) {
    _ = interruptionSignal.compareExchange(expected: 0, desired: number, ordering: .relaxed)
    sem_post(mainLoopWake.raw)
}
