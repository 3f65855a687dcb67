import Dispatch
import FoundationEssentials
import Glibc
import Sync

/// `--on-take-end CMD` (jack_capture's --hook-close): once a take's files are complete and
/// closed, `/bin/sh -c 'CMD "$@"' jaq FILE...` runs with their names as arguments, beside the
/// recording (a tape machine goes on to the next roll meanwhile). Its standard input is
/// /dev/null (a command that reads the terminal would stop jaq's), its output jaq's, and it is
/// in jaq's process group with the default signal handling, so Ctrl-C or a service's stop
/// reaches it as it reaches jaq. A command that fails or cannot start is reported in one line
/// naming it and the take; the take is never touched. jaq waits for the commands it started
/// before it exits.
final class TakeEndHooks: @unchecked Sendable {
    let command: String?
    private let running = DispatchGroup()

    init(command: String?) { self.command = command }

    func run(_ files: [String]) {
        guard let command, !files.isEmpty else { return }
        let names = files.joined(separator: ", ")
        let spawned = spawnProcess(["/bin/sh", "-c", "\(command) \"$@\"", "jaq"] + files, output: nil, newSession: false, closeOthers: true)
        guard spawned.status == 0 else {
            Log.error("--on-take-end: cannot run `\(command)` for \(names): \(String(cString: strerror(spawned.status))) (the take is kept as it is)")
            return
        }
        let pid = spawned.pid
        running.enter()
        QueueThread(name: "jaq-take-end") { [running] in
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            let signal = status & 0x7f
            let code = (status >> 8) & 0xff
            if signal != 0 || code != 0 {
                let how = signal != 0 ? "was killed by signal \(signal)" : "exited \(code)"
                Log.error("--on-take-end: `\(command)` \(how) for \(names) (the take is kept as it is)")
            }
            running.leave()
        }.detach()
    }

    /// Waits for every command started (saying so when one is still running).
    func waitForAll() {
        guard running.wait(timeout: .now()) == .timedOut else { return }
        Log.info("waiting for --on-take-end to finish…")
        running.wait()
    }
}
