internal import CFFmpeg
import CFFmpegLoad

/// An FFmpeg result code (a negative AVERROR) with FFmpeg's own words for it.
public struct FFmpegError: Error, CustomStringConvertible, Sendable {
    public let code: Int32
    public let operation: String

    public init(_ code: Int32, _ operation: String) {
        self.code = code
        self.operation = operation
    }

    public var description: String {
        // FFmpeg could not be opened (CFFmpegLoad): say why rather than "Function not implemented".
        if let reason = jaq_ffmpeg_error() { return "\(operation): \(String(cString: reason))" }
        var text = [CChar](repeating: 0, count: 128)
        av_strerror(code, &text, text.count)
        let bytes = text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return "\(operation): \(String(decoding: bytes, as: UTF8.self))"
    }
}

/// FFmpeg's libraries, opened on first use (CFFmpegLoad).
public enum FFmpegLibrary {
    /// Why FFmpeg could not be opened, once a compressed format tried to use it (nil otherwise:
    /// asking does not open it).
    public static var failure: String? { jaq_ffmpeg_failure().map { String(cString: $0) } }
}

/// FFmpeg's own log: off. A library must not write to the host program's stderr (a corrupt
/// packet is reported through result codes and ConverterError instead).
enum FFmpegLog {
    static let quiet: Void = { av_log_set_level(AV_LOG_QUIET) }()
}
