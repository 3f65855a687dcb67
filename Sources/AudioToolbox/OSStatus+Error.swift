import AudioCodec
import CAudioToolbox
import QueueCore

// `fourCharacterCode(_:quoted:)`, a jaq extension (Apple has none): a format ID, file type,
// property ID or result code as Apple's tools print it, `'fmt?'` or `-50`. Re-exported from
// the engine, so that a program that imports AudioToolbox alone (the `jaq` tool) prints codes
// with the same renderer as the library's messages.
@_exported import func QueueCore.fourCharacterCode

/// An error of the AudioToolbox layer: Apple's result code and a reason.
///
/// Lower layers throw their own error types (`SoundFileError`, `QueueError`);
/// `status(for:)` is the one place where any error becomes an `OSStatus`.
struct AudioToolboxError: Error, CustomStringConvertible {
    let status: OSStatus
    let reason: String

    init(_ status: OSStatus, _ reason: String = "") {
        self.status = status
        self.reason = reason
    }

    var description: String { "\(fourCharacterCode(status)) (\(status)): \(reason)" }
}

/// The OSStatus for any error thrown inside the AudioToolbox layer.
func status(for error: Error) -> OSStatus {
    switch error {
    case let error as AudioToolboxError: return error.status
    case let error as OSStatusConvertible: return error.osStatus
    case let error as QueueError: return status(forQueueError: error)
    default: return kAudioFileUnspecifiedError
    }
}

/// Apple's result code for each engine error.
private func status(forQueueError error: QueueError) -> OSStatus {
    switch error {
    case .invalidParameter: kAudio_ParamError
    case .unsupportedFormat: kAudioFormatUnsupportedDataFormatError
    case .invalidBuffer: kAudioQueueErr_InvalidBuffer
    case .bufferEmpty: kAudioQueueErr_BufferEmpty
    case .bufferInQueue: kAudioQueueErr_BufferInQueue
    case .bufferEnqueuedTwice: kAudioQueueErr_BufferEnqueuedTwice
    case .enqueueDuringReset: kAudioQueueErr_EnqueueDuringReset
    case .invalidQueueType: kAudioQueueErr_InvalidQueueType
    case .invalidRunState: kAudioQueueErr_InvalidRunState
    case .invalidDevice: kAudioQueueErr_InvalidDevice
    case .cannotStart: kAudioQueueErr_CannotStart
    case .queueInvalidated: kAudioQueueErr_QueueInvalidated
    case .disposalPending: kAudioQueueErr_DisposalPending
    case .primeTimedOut: kAudioQueueErr_PrimeTimedOut
    case .invalidPropertyValue: kAudioQueueErr_InvalidPropertyValue
    case .nonAscendingStartTime: kAudio_ParamError
    case .invalidOfflineMode: kAudioQueueErr_InvalidOfflineMode
    case .queueThreadTimedOut: kAudioQueueErr_InvalidRunState
    case .tooManyTaps: kAudioQueueErr_TooManyTaps
    case .invalidTapContext: kAudioQueueErr_InvalidTapContext
    case .invalidTapType: kAudioQueueErr_InvalidTapType
    }
}

/// Errors of lower layers that know their Apple result code.
protocol OSStatusConvertible: Error {
    var osStatus: OSStatus { get }
}

/// Runs an API body and converts what it throws into the OSStatus the C API returns.
/// Never traps on bad input: validation throws, and this turns it into a result code.
@inline(__always)
func withStatus(_ body: () throws -> Void) -> OSStatus {
    do {
        try body()
        return noErr
    } catch {
        return status(for: error)
    }
}

/// A result code in words for a one-line message: "no such file", "the JACK server went away";
/// nil for a code this table does not know (print its `fourCharacterCode` alone).
///
/// The one table of result-code words: jaq's messages and `jaq info` use it.
/// - Parameters:
///   - status: a result code of Audio File or Audio Queue Services.
///   - readingFile: the code came from opening or reading an audio file: 'typ?' then reads
///     "not an audio file of a type jaq reads" rather than "unsupported file type".
public func statusMessage(_ status: OSStatus, readingFile: Bool = false) -> String? {
    // A compressed format failed because FFmpeg could not be opened: that is the reason.
    if let failure = FFmpegLibrary.failure, [kAudioFileInvalidFileError, kAudioFileUnsupportedFileTypeError,
        kAudioFileUnsupportedDataFormatError, kAudioQueueErr_CodecNotFound, kAudioConverterErr_FormatNotSupported].contains(status) {
        return failure
    }
    return switch status {
    case kAudioFileFileNotFoundError: "no such file"
    case kAudio_FilePermissionError: "permission denied"
    case kAudio_BadFilePathError: "not a regular file"
    case kAudioFileInvalidFileError: "damaged or truncated audio file"
    case kAudioFileUnsupportedFileTypeError: readingFile ? "not an audio file of a type jaq reads" : "unsupported file type"
    case kAudioFileUnsupportedDataFormatError: "unsupported data format"
    case kAudioFilePermissionsError: "file not writable"
    case kAudio_TooManyFilesOpenError: "too many files open"
    case dskFulErr: "disk full"
    case ioErr: "input/output error"
    case dupFNErr: "file exists"
    case kAudioQueueErr_InvalidDevice: "no such JACK server or port"
    case kAudioQueueErr_QueueInvalidated: "the JACK server went away"
    default: nil
    }
}
