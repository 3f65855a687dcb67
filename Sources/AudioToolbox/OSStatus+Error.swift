import CAudioToolbox
import QueueCore

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

    var description: String { "\(fourCharString(status)) (\(status)): \(reason)" }
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

/// Renders a result code as Apple prints it: 'fmt?' for four-char codes, else the number.
func fourCharString(_ code: OSStatus) -> String {
    let value = UInt32(bitPattern: code)
    let bytes = [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    if bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) {
        return "'" + String(decoding: bytes, as: UTF8.self) + "'"
    }
    return String(code)
}
