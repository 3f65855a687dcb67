import ArgumentParser
import JackCommon

/// An error the CLI reports in one line and exits non-zero for.
struct CLIError: Error, CustomStringConvertible {
    /// The exit status of every usage error (a bad option or value), whichever layer finds it:
    /// 64 (EX_USAGE), as swift-argument-parser exits for the errors it finds itself.
    static let usage: Int32 = 64

    let description: String
    let exitCode: Int32
    init(_ description: String, exitCode: Int32 = 1) {
        self.description = description
        self.exitCode = exitCode
    }
}

/// Runs a command's body as every jaq command does: messages prefixed with `command`, and a
/// CLIError reported in one line, the private server jaq started (if any) stopped, and the
/// error's exit code returned.
func runReportingFailure(_ command: String, quiet: Bool = false, _ body: () throws -> Void) throws {
    Log.command = command
    Log.quiet = quiet
    do {
        try body()
    } catch let error as CLIError {
        noteCloseLeftBehind()
        Log.error(error.description)
        ServerContext.running?.stop()
        throw ExitCode(error.exitCode)
    } catch {
        // An exit status (a signal, a take that ended with its line said), or another error.
        noteCloseLeftBehind()
        throw error
    }
    noteCloseLeftBehind()
}

/// Says so when a close of a JACK client was left to its thread (JackClients: libjack
/// deadlocked in it after the server went away), which the process's exit then ends.
private func noteCloseLeftBehind() {
    guard JackClients.stuckReason != nil else { return }
    Log.info("libjack did not finish closing a client of the JACK server that went away (jack2 issue #395); "
             + "left after \(Int(JackClients.abandonSeconds)) s")
}
