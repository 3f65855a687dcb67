import CJack
import Glibc
import Sync
import Synchronization

/// Opens and closes jaq's JACK clients, and does not let a close that libjack never finishes
/// hang its caller.
///
/// libjack 1.9.x can deadlock in `jack_client_close` once the server has gone away. The close
/// cancels the client's notification thread (`pthread_cancel`); if that thread was handling a
/// notification, it holds libjack's process-wide synchro mutex and dies holding it. The close
/// then waits on that mutex for ever, and so does every later close in the process, which also
/// holds libjack's open mutex while it waits, so every later open hangs too (jack2 issue #395;
/// the fix, jack2 PR #889, is in no release). A server stopped under a `jaq play` on a loaded
/// machine hit it about once in 40 to 80 stops, in the close of the queue's client or of the
/// command's control client.
///
/// So once the server has gone away, each client is closed on a thread of its own, which the
/// caller waits for at most `abandonSeconds`. "Gone away" is libjack's own process-wide view
/// (it keeps one server per process): a shutdown callback of any of the process's clients ran
/// (`serverWentAway()`), or the client being closed was shut down, and no client has opened
/// since. A close that has not returned in time is left to its thread: the caller goes on, and
/// what the client's callbacks used is freed only if the close ever returns. Until it does, no
/// client can be opened in the process (`stuckReason` says why, and the opens refuse at once
/// instead of hanging), and every close is left to its thread at once (it would wait on the
/// stuck one).
///
/// While the server runs, a client is closed directly, as before: its close returns.
public enum JackClients {
    /// How long a close after the server went away may take before it is left to its thread.
    public static let abandonSeconds = 2.0

    /// Closes left to their threads that have not returned yet.
    private static let abandoned = Atomic<Int>(0)
    /// A client of this process was shut down by its server, and none has opened since.
    private static let serverGone = Atomic<Bool>(false)

    /// Notes that the server shut a client of this process down (its shutdown callback ran):
    /// the closes that follow are bounded. An atomic store only, for the shutdown callbacks.
    public static func serverWentAway() { serverGone.store(true, ordering: .releasing) }

    /// Opens a client as `jack_client_open` does (through the CJack shim, with `serverName` nil
    /// for the default server). Once one opens, the server runs: closes are direct again.
    public static func open(_ name: String, _ options: jack_options_t, _ status: inout jack_status_t,
                            _ serverName: String?) -> OpaquePointer? {
        guard let client = jaq_jack_client_open(name, options, &status, serverName) else { return nil }
        serverGone.store(false, ordering: .releasing)
        return client
    }

    /// Why no JACK client can be opened in this process now, or nil: a close of a client whose
    /// server went away has not returned (libjack's own deadlock, above).
    public static var stuckReason: String? {
        guard abandoned.load(ordering: .acquiring) > 0 else { return nil }
        return "libjack is stuck closing a client of a JACK server that went away (jack2 issue #395): "
            + "no JACK client can be opened in this process any more; start it again"
    }

    /// The state of one close on its own thread.
    private final class Pending: Sendable {
        static let running = 0, returned = 1, leftBehind = 2
        let state = Atomic<Int>(running)
        let returnedSignal = Semaphore()
    }

    /// Closes `client`, then runs `release` (which frees what the client's callbacks use: it runs
    /// only once no callback can run any more).
    /// - Parameters:
    ///   - serverGone: the server shut the client down (its shutdown callback ran). Then, after
    ///     `serverWentAway()`, or while an earlier close is stuck, the close runs on a thread of
    ///     its own and is left to it after `abandonSeconds`.
    ///   - release: run after the close returns, on whichever thread it returned on.
    /// - Returns: false if the close was left to its thread (it had not returned in time).
    @discardableResult
    public static func close(_ client: OpaquePointer, serverGone: Bool, release: @escaping () -> Void = {}) -> Bool {
        if serverGone { serverWentAway() }
        guard serverGone || self.serverGone.load(ordering: .acquiring) || abandoned.load(ordering: .acquiring) > 0 else {
            jack_client_close(client)
            release()
            return true
        }
        let pending = Pending()
        nonisolated(unsafe) let client = client
        nonisolated(unsafe) let release = release
        let thread = QueueThread(name: "jaq-jack-close") {
            jack_client_close(client)
            release()
            if pending.state.compareExchange(expected: Pending.running, desired: Pending.returned,
                                             ordering: .acquiringAndReleasing).exchanged {
                pending.returnedSignal.post()
            } else {
                // Left behind by its caller: one close fewer outstanding.
                abandoned.subtract(1, ordering: .releasing)
            }
        }
        guard thread.isStarted else {
            // No thread to wait on (the process is out of threads): close here, as before.
            jack_client_close(client)
            release()
            return true
        }
        thread.detach()
        // While an earlier close is stuck, this one waits on libjack's open mutex, which the
        // stuck one holds: no use waiting for it.
        let wait = abandoned.load(ordering: .acquiring) > 0 ? 0 : abandonSeconds
        if pending.returnedSignal.wait(timeout: wait) { return true }
        abandoned.add(1, ordering: .releasing)
        if pending.state.compareExchange(expected: Pending.running, desired: Pending.leftBehind,
                                         ordering: .acquiringAndReleasing).exchanged {
            return false
        }
        // It returned between the wait's end and here.
        abandoned.subtract(1, ordering: .releasing)
        return true
    }
}
