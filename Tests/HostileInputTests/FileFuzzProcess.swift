import Foundation
import JackTestSupport
import Testing

/// Runs the FileFuzz executable (Sources/Fuzz/FileFuzz) as a child process, so that a crash
/// on hostile input fails the test that caused it instead of killing the test runner.
enum FileFuzzProcess {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    /// FileFuzz, built next to this test binary (the test target depends on it).
    static func executable() throws -> String {
        let directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        let candidates = [directory.appendingPathComponent("FileFuzz").path,
                          directory.deletingLastPathComponent().appendingPathComponent("FileFuzz").path,
                          packageRoot.appendingPathComponent(".build/debug/FileFuzz").path]
        return try #require(candidates.first { FileManager.default.isExecutableFile(atPath: $0) }, "FileFuzz is not built")
    }

    /// Runs FileFuzz with `arguments`; a signal, a non-zero exit or a hang is a failure.
    /// - Returns: its standard output.
    static func run(_ arguments: [String], timeout: Double = 120, environment extra: [String: String] = [:],
                    sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        var environment = ProcessInfo.processInfo.environment
        environment["JACK_NO_START_SERVER"] = "1"  // a queue must never start a server of its own here
        environment["SWIFT_BACKTRACE"] = "enable=no"
        environment.merge(extra) { $1 }
        let result = try runProcess([try executable()] + arguments, environment: environment, timeout: timeout)
        let stderrTail = String(result.error.suffix(3000))
        #expect(result.status == 0, "FileFuzz \(arguments.joined(separator: " ")) exited \(result.status) (a signal number if killed):\n\(stderrTail)",
                sourceLocation: sourceLocation)
        return result.output
    }

    /// The `name=value` words of the line FileFuzz printed for `key` ("file: a=0 b=dta?").
    static func results(_ output: String, for key: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: String] {
        let line = try #require(output.split(separator: "\n").first { $0.hasPrefix("\(key): ") },
                                "no result line for \(key) in:\n\(output)", sourceLocation: sourceLocation)
        var values: [String: String] = [:]
        for word in line.dropFirst(key.count + 2).split(separator: " ") {
            let parts = word.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { values[String(parts[0])] = String(parts[1]) }
        }
        return values
    }
}

