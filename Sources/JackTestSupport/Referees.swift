import Foundation
import Glibc

// Referees: the third-party tools the tests measure jaq against (ardour7-export, ffmpeg,
// jack_capture). A referee that crashes (dies of a signal) says nothing about jaq: the tests
// run it again, a bounded number of times, and when it crashes every time they report that
// tool's crash as a known issue naming it (`withReferees` in the test targets), never as a
// failure of jaq. That is for a rare crash: a referee that crashes on every run on a fresh
// machine is a set-up to fix (Docs/testing.md, "Referees").

/// How many times a referee is run (or a scenario around one run again) before its crash is
/// reported as the referee's.
public let refereeAttempts = 3

/// A referee died of a signal in every one of `attempts` runs.
public struct RefereeCrashed: Error, CustomStringConvertible {
    /// The tool's name (ardour7-export, ffmpeg, jack_capture).
    public let tool: String
    public let signal: Int32
    /// How many runs died: `refereeAttempts` when the tool itself was run again
    /// (`runReferee`); 1 when only the scenario around it can be (`checkReferee`).
    public let attempts: Int
    /// The last run's output (its end).
    public let output: String

    public init(tool: String, signal: Int32, attempts: Int, output: String) {
        self.tool = tool
        self.signal = signal
        self.attempts = attempts
        self.output = output
    }

    public var description: String {
        "\(tool) (a referee, not jaq) died of \(signalName(signal))"
            + (attempts > 1 ? " in each of \(attempts) runs" : "") + ": " + String(output.suffix(600))
    }
}

/// "signal 6 (SIGABRT)".
public func signalName(_ signal: Int32) -> String {
    let names: [Int32: String] = [SIGABRT: "SIGABRT", SIGSEGV: "SIGSEGV", SIGBUS: "SIGBUS", SIGILL: "SIGILL",
                                  SIGFPE: "SIGFPE", SIGKILL: "SIGKILL", SIGTERM: "SIGTERM", SIGTRAP: "SIGTRAP"]
    return "signal \(signal)" + (names[signal].map { " (\($0))" } ?? "")
}

/// Runs a referee to completion (`runProcess`); a run that dies of a signal is run again, up
/// to `attempts` runs in all, each retry printed. Throws `RefereeCrashed` when every run died
/// of a signal; otherwise returns the first run that exited, whatever its status (a referee
/// that exits non-zero has refused something: that is the test's to judge).
public func runReferee(_ arguments: [String], environment: [String: String]? = nil, timeout: Double = 60,
                       currentDirectory: String? = nil, attempts: Int = refereeAttempts)
    throws -> (status: Int32, output: String, error: String) {
    let tool = URL(fileURLWithPath: arguments.first ?? "?").lastPathComponent
    var last: ProcessEnding?
    for attempt in 1...max(1, attempts) {
        let ending = try runProcessEnding(arguments, environment: environment, timeout: timeout,
                                          currentDirectory: currentDirectory)
        guard let signal = ending.signal else { return (ending.status, ending.output, ending.error) }
        print("\(tool) died of \(signalName(signal)) (run \(attempt) of \(attempts)): "
              + String((ending.output + ending.error).suffix(300)).replacingOccurrences(of: "\n", with: " "))
        last = ending
    }
    throw RefereeCrashed(tool: tool, signal: last?.signal ?? 0, attempts: max(1, attempts),
                         output: (last?.output ?? "") + (last?.error ?? ""))
}

/// Waits for a referee started in the background (`JackServer.spawn`) to exit, like
/// `waitForExit`; throws `RefereeCrashed` (attempts 1) when it died of a signal — other than
/// the SIGKILL of the timeout — so that the scenario around it can be run again.
@discardableResult
public func waitForReferee(_ process: Process, tool: String, timeout: Double = 60, log: String? = nil) throws -> Int32 {
    let status = waitForExit(process, timeout: timeout)
    if process.terminationReason == .uncaughtSignal && status != SIGKILL {
        let output = log.flatMap { try? String(contentsOfFile: $0, encoding: .utf8) } ?? ""
        throw RefereeCrashed(tool: tool, signal: status, attempts: 1, output: output)
    }
    return status
}

/// Runs `body` — a scenario around a referee that runs beside jaq (jack_capture recording what
/// jaq plays), which only a new run of the whole scenario can retry — again when it ends with
/// that referee's crash (`waitForReferee`), up to `attempts` runs in all. A crash in every run
/// is thrown with `attempts` set to that count; a crash that `runReferee` already retried, and
/// any other error, is thrown as it is.
public func withRefereeRetries<T>(attempts: Int = refereeAttempts, _ body: () throws -> T) throws -> T {
    var run = 1
    while true {
        do {
            return try body()
        } catch let crash as RefereeCrashed where crash.attempts == 1 {
            guard run < attempts else {
                throw RefereeCrashed(tool: crash.tool, signal: crash.signal, attempts: run, output: crash.output)
            }
            print("run \(run) of \(attempts): \(crash); the scenario again")
            run += 1
        }
    }
}
