import CSndFile
import Glibc

/// An error of libsndfile, or of the file I/O underneath it.
///
/// `code` is libsndfile's error number (`sf_error`): 1...4 are the public `SF_ERR_*` values, larger
/// numbers are libsndfile's internal `SFE_*` codes, whose text `reason` carries (`sf_strerror`).
/// When a system call failed (open, read, write, seek), `errno` holds its `errno` and `code` is
/// ``Code/system``.
public struct SoundFileError: Error, Equatable, CustomStringConvertible {
    /// libsndfile's error number.
    public struct Code: RawRepresentable, Hashable, Sendable {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }

        /// `SF_ERR_UNRECOGNISED_FORMAT`: the file is of no format libsndfile knows.
        public static let unrecognisedFormat = Code(rawValue: Int32(SF_ERR_UNRECOGNISED_FORMAT))
        /// `SF_ERR_SYSTEM`: a system call failed (see ``SoundFileError/errno``).
        public static let system = Code(rawValue: Int32(SF_ERR_SYSTEM))
        /// `SF_ERR_MALFORMED_FILE`: the file's header is damaged.
        public static let malformedFile = Code(rawValue: Int32(SF_ERR_MALFORMED_FILE))
        /// `SF_ERR_UNSUPPORTED_ENCODING`: the file's encoding is not supported.
        public static let unsupportedEncoding = Code(rawValue: Int32(SF_ERR_UNSUPPORTED_ENCODING))
    }

    /// libsndfile's error number, or ``Code/system`` for a failed system call.
    public let code: Code
    /// The reason in words: `sf_strerror`'s text, or `strerror(errno)`.
    public let reason: String
    /// The `errno` of the failed system call, if one failed.
    public let errno: Int32?

    public init(code: Code, reason: String, errno: Int32? = nil) {
        self.code = code
        self.reason = reason
        self.errno = errno
    }

    /// The error of a failed system call.
    public static func system(_ errno: Int32, _ context: String = "") -> SoundFileError {
        let text = String(cString: strerror(errno))
        return SoundFileError(code: .system, reason: context.isEmpty ? text : "\(context): \(text)", errno: errno)
    }

    /// The error libsndfile reports for `file` (or for the last failed open when `file` is nil).
    static func library(_ file: OpaquePointer?) -> SoundFileError {
        SoundFileError(code: Code(rawValue: sf_error(file)), reason: String(cString: sf_strerror(file)))
    }

    /// An error libsndfile reports without a number (a command it refused).
    static func refused(_ reason: String) -> SoundFileError {
        SoundFileError(code: .unsupportedEncoding, reason: reason)
    }

    public var description: String { reason }
}
