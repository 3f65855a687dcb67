import Foundation
import Glibc

// The helpers every test target shares: a scratch directory, polling with a deadline,
// waiting for a child process, finding a tool on PATH, waiting for JACK ports.

/// A fresh directory for one test's files, removed when the test drops it.
public final class Scratch: @unchecked Sendable {
    public let url: URL
    public var path: String { url.path }

    /// Creates `$TMPDIR/<prefix>-<uuid>`.
    public init(prefix: String = "jaq-test") throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// The URL of `name` in the directory.
    public func url(_ name: String) -> URL { url.appendingPathComponent(name) }
    /// The path of `name` in the directory.
    public func path(_ name: String) -> String { url(name).path }

    deinit { try? FileManager.default.removeItem(at: url) }
}

/// Polls `condition` every `poll` seconds until it holds or `seconds` pass (on the monotonic
/// clock); returns whether it held.
public func waitUntil(_ seconds: Double = 5, poll: Double = 0.002, _ condition: () -> Bool) -> Bool {
    let deadline = monotonicSeconds() + seconds
    while monotonicSeconds() < deadline {
        if condition() { return true }
        usleep(useconds_t(poll * 1_000_000))
    }
    return condition()
}

private func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

/// Waits for `process` to exit, killing it (SIGKILL) after `timeout` seconds; returns its status.
@discardableResult
public func waitForExit(_ process: Process, timeout: Double = 60) -> Int32 {
    if !waitUntil(timeout, poll: 0.01, { !process.isRunning }) { kill(process.processIdentifier, SIGKILL) }
    process.waitUntilExit()
    return process.terminationStatus
}

/// The path of `name` on PATH, or nil.
public func tool(_ name: String) -> String? {
    let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
    return directories.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
}

/// The path of `name` on PATH; throws an error saying what to install when it is missing.
public func tool(_ name: String, package: String) throws -> String {
    guard let path = tool(name) else { throw JackServerError("\(name) is not installed (apt-get install \(package))") }
    return path
}

/// Waits until `count` ports of `server` whose names contain `fragment` exist; returns their
/// names, sorted, or nil after `timeout` seconds.
@discardableResult
public func waitForPorts(_ server: JackServer, containing fragment: String, count: Int = 1, timeout: Double = 10) -> [String]? {
    var found: [String] = []
    let appeared = waitUntil(timeout, poll: 0.05) {
        found = ((try? server.run(["jack_lsp"])) ?? "").split(separator: "\n").map(String.init).filter { $0.contains(fragment) }
        return found.count >= count
    }
    return appeared ? found.sorted() : nil
}
