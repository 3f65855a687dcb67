import Foundation

/// Messages to stderr, one line each, prefixed with the command.
enum Log {
    nonisolated(unsafe) static var command = "jaq"
    nonisolated(unsafe) static var quiet = false

    static func info(_ message: String) {
        guard !quiet else { return }
        FileHandle.standardError.write(Data("\(command): \(message)\n".utf8))
    }

    static func error(_ message: String) {
        FileHandle.standardError.write(Data("\(command): \(message)\n".utf8))
    }
}
