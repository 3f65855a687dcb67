import Foundation

/// `--on-take-end CMD` (jack_capture's --hook-close): once a take's files are complete and
/// closed, `/bin/sh -c 'CMD "$@"' jaq FILE...` runs with their names as arguments, beside the
/// recording (a tape machine goes on to the next roll meanwhile). A command that fails or
/// cannot start is reported in one line naming it and the take; the take is never touched.
/// jaq waits for the commands it started before it exits.
final class TakeEndHooks: @unchecked Sendable {
    let command: String?
    private let running = DispatchGroup()

    init(command: String?) { self.command = command }

    func run(_ files: [String]) {
        guard let command, !files.isEmpty else { return }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command + " \"$@\"", "jaq"] + files
        let names = files.joined(separator: ", ")
        do { try process.run() } catch {
            Log.error("--on-take-end: cannot run `\(command)` for \(names): \(error.localizedDescription) (the take is kept as it is)")
            return
        }
        running.enter()
        Thread.detachNewThread { [running] in
            process.waitUntilExit()
            if process.terminationReason != .exit || process.terminationStatus != 0 {
                let how = process.terminationReason == .exit ? "exited \(process.terminationStatus)"
                    : "was killed by signal \(process.terminationStatus)"
                Log.error("--on-take-end: `\(command)` \(how) for \(names) (the take is kept as it is)")
            }
            running.leave()
        }
    }

    /// Waits for every command started (saying so when one is still running).
    func waitForAll() {
        guard running.wait(timeout: .now()) == .timedOut else { return }
        Log.info("waiting for --on-take-end to finish…")
        running.wait()
    }
}
