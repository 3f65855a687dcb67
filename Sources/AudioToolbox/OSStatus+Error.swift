import CAudioToolbox

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
    default: return kAudioFileUnspecifiedError
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
