internal import CFFmpeg

/// A compressed format as Apple's AudioStreamBasicDescription names it, without the C type
/// (AudioCodec does not import AudioToolbox; the API layer maps the fields one to one).
public struct CodecFormat: Sendable, Equatable {
    public var formatID: UInt32
    public var formatFlags: UInt32
    public var sampleRate: Double
    public var channelCount: Int
    /// Frames in one packet; 0 for formats whose packets vary (taken from the codec then).
    public var framesPerPacket: Int
    /// Bytes in one packet; 0 for variable bit rate (every packet has a description).
    public var bytesPerPacket: Int

    public init(formatID: UInt32, formatFlags: UInt32 = 0, sampleRate: Double, channelCount: Int,
                framesPerPacket: Int = 0, bytesPerPacket: Int = 0) {
        self.formatID = formatID
        self.formatFlags = formatFlags
        self.sampleRate = sampleRate
        self.channelCount = channelCount
        self.framesPerPacket = framesPerPacket
        self.bytesPerPacket = bytesPerPacket
    }
}

/// Why a codec could not be made or a packet not be coded.
public enum CodecError: Error, Equatable, CustomStringConvertible, Sendable {
    /// No codec for this format ID in this direction (Apple: kAudioQueueErr_CodecNotFound / 'fmt?').
    case codecNotFound(String)
    /// The codec exists but not with these parameters ('fmt?').
    case unsupportedFormat(String)
    /// The magic cookie is not what the codec needs.
    case invalidCookie(String)
    /// A packet the decoder refused (corrupt or truncated); the FFmpeg code.
    case corruptPacket(Int32)
    /// Anything else FFmpeg reported.
    case failed(String)

    public var description: String {
        switch self {
        case .codecNotFound(let why): "codec not found: \(why)"
        case .unsupportedFormat(let why): "unsupported format: \(why)"
        case .invalidCookie(let why): "invalid magic cookie: \(why)"
        case .corruptPacket(let code): "corrupt packet (\(FFmpegError(code, "decode")))"
        case .failed(let why): why
        }
    }
}

/// Apple's compressed format IDs (`Codec(formatID:)` names the codec of each).
public enum CompressedFormat {
    public static let mpeg4AAC: UInt32 = 0x6161_6320       // 'aac '
    public static let mpeg4AAC_HE: UInt32 = 0x6161_6368    // 'aach'
    public static let mpeg4AAC_HE_V2: UInt32 = 0x6161_6370 // 'aacp'
    public static let appleLossless: UInt32 = 0x616C_6163  // 'alac'
    public static let mpegLayer3: UInt32 = 0x2E6D_7033     // '.mp3'
    public static let flac: UInt32 = 0x666C_6163           // 'flac'
    public static let opus: UInt32 = 0x6F70_7573           // 'opus'
    public static let appleIMA4: UInt32 = 0x696D_6134      // 'ima4'

    /// The format IDs this build decodes, in Apple's order of the issue.
    public static let decodable: [UInt32] = [mpeg4AAC, mpeg4AAC_HE, mpeg4AAC_HE_V2, appleLossless, mpegLayer3, flac, opus, appleIMA4]
    /// The format IDs this build encodes.
    public static let encodable: [UInt32] = [mpeg4AAC, appleLossless, flac, opus, appleIMA4]

    /// True for an ID this layer handles in either direction.
    public static func isCompressed(_ id: UInt32) -> Bool { decodable.contains(id) }

    /// Apple's frames per packet for a format (AAC 1024, HE-AAC 2048 at the output rate,
    /// ALAC 4096, MP3 1152, IMA4 64, Opus 960 = 20 ms at 48 kHz, FLAC 4096 as the encoder makes them).
    public static func defaultFramesPerPacket(_ id: UInt32, sampleRate: Double) -> Int {
        switch id {
        case mpeg4AAC: 1024
        case mpeg4AAC_HE, mpeg4AAC_HE_V2: 2048
        case appleLossless: 4096
        case mpegLayer3: sampleRate >= 32000 || sampleRate == 0 ? 1152 : 576
        case flac: 4096
        case opus: Int((sampleRate == 0 ? 48000 : sampleRate) / 50)
        case appleIMA4: 64
        default: 1
        }
    }

    /// Bytes per packet for constant-size formats (IMA4: 34 per channel), else 0.
    public static func constantBytesPerPacket(_ id: UInt32, channels: Int) -> Int {
        id == appleIMA4 ? 34 * channels : 0
    }

    /// The bits of the source a lossless format keeps (kAppleLosslessFormatFlag_16/20/24/32BitSourceData).
    public static func losslessBits(flags: UInt32) -> Int? {
        switch flags {
        case 1: 16
        case 2: 20
        case 3: 24
        case 4: 32
        default: nil
        }
    }

    /// The flag value for `bits` (the inverse of `losslessBits`).
    public static func losslessFlags(bits: Int) -> UInt32 {
        switch bits {
        case ...16: 1
        case ...20: 2
        case ...24: 3
        default: 4
        }
    }

    /// "'aac '" for messages.
    public static func name(_ id: UInt32) -> String {
        let bytes = [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: id >> $0) }
        if bytes.allSatisfy({ $0 >= 32 && $0 < 127 }) { return "'" + String(decoding: bytes, as: UTF8.self) + "'" }
        return "0x" + String(id, radix: 16)
    }
}
