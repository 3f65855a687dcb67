import FoundationEssentials
import Glibc

/// Messages to stderr, one line each, prefixed with the command.
enum Log {
    nonisolated(unsafe) static var command = "jaq"
    nonisolated(unsafe) static var quiet = false

    static func info(_ message: String) {
        guard !quiet else { return }
        StandardStreams.error("\(command): \(message)\n")
    }

    static func error(_ message: String) {
        StandardStreams.error("\(command): \(message)\n")
    }
}
