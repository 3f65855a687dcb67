import AudioToolbox
import Glibc

// What the guides leave out ("this listing excludes error handling"): the examples
// check the result codes a real program must check, and report each failure in one
// line, as Learning Core Audio's CheckError does.

/// The program's name for messages ("PlayFile").
public var programName: String {
    CommandLine.arguments.first.map { String($0.split(separator: "/").last ?? "") } ?? "example"
}

/// Writes `programName: message` and a newline to standard error.
public func printError(_ message: String) {
    let line = "\(programName): \(message)\n"
    _ = line.withCString { write(STDERR_FILENO, $0, strlen($0)) }
}

/// The queue `fail` disposes of before exiting, so that the JACK server sees its client
/// leave rather than die (set it once the queue exists; main thread only).
nonisolated(unsafe) public var queueToDisposeOnFailure: AudioQueueRef?

/// Prints `programName: message` on standard error and exits with status 1.
public func fail(_ message: String) -> Never {
    printError(message)
    if let queue = queueToDisposeOnFailure { AudioQueueDispose(queue, true) }
    exit(1)
}

/// Exits with one line naming `operation` and the result code if `status` is not noErr.
public func checkError(_ status: OSStatus, _ operation: @autoclosure () -> String) {
    guard status != noErr else { return }
    fail("\(operation()): \(describe(status))")
}

/// A result code as a user reads it: a reason where one is known, and Apple's code
/// ('typ?' for four-char codes, else the number).
public func describe(_ status: OSStatus) -> String {
    let bytes = withUnsafeBytes(of: UInt32(bitPattern: status).bigEndian) { Array($0) }
    let code = bytes.allSatisfy { (0x20..<0x7F).contains($0) }
        ? "'" + String(decoding: bytes, as: UTF8.self) + "'" : String(status)
    let reasons: [OSStatus: String] = [
        kAudioFileFileNotFoundError: "no such file or directory",
        kAudio_FilePermissionError: "permission denied",
        dupFNErr: "the file exists",
        kAudio_BadFilePathError: "not a file path",
        kAudioFileUnsupportedFileTypeError: "not an audio file of a known type",
        kAudioFileUnsupportedDataFormatError: "unsupported data format",
        kAudioFileInvalidFileError: "damaged audio file",
        kAudioFilePermissionsError: "the file is not open for that",
        kAudio_ParamError: "bad parameter",
        kAudioQueueErr_InvalidDevice: "no JACK server, or no such ports",
        kAudioQueueErr_QueueInvalidated: "the JACK server went away",
        kAudioQueueErr_CannotStart: "the queue cannot start",
    ]
    return reasons[status].map { "\($0) (\(code))" } ?? "error \(code)"
}
