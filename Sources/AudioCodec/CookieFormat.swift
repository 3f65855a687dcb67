internal import CFFmpeg

/// What a magic cookie says of its stream: the fields of a description it fixes (Audio Format
/// Services' kAudioFormatProperty_FormatInfo reads them). For layered AAC (HE-AAC, HE-AAC v2)
/// this is the base layer, AAC-LC, as Apple's FormatInfo gives it.
public struct CookieFormat: Sendable, Equatable {
    public var formatID: UInt32
    public var sampleRate: Double
    public var channelCount: Int
    public var framesPerPacket: Int
    /// The source bit depth of a lossless format (ALAC, FLAC); 0 for the others.
    public var sourceBits: Int

    /// Parses an Apple cookie of `formatID` (AAC: ES descriptor or AudioSpecificConfig; ALAC:
    /// ALACSpecificConfig or its atom; FLAC: 'dfLa' or STREAMINFO; Opus: OpusHead).
    /// - Throws: `.invalidCookie` for bytes that are no cookie of the format,
    ///   `.unsupportedFormat` for a format that has no cookie jaq reads.
    public init(formatID: UInt32, cookie: [UInt8]) throws(CodecError) {
        self.formatID = formatID
        sourceBits = 0
        switch formatID {
        case CompressedFormat.mpeg4AAC, CompressedFormat.mpeg4AAC_HE, CompressedFormat.mpeg4AAC_HE_V2:
            let config = try MagicCookie.audioSpecificConfig(fromESDS: cookie)
            (sampleRate, channelCount, framesPerPacket) = try Self.audioSpecificConfig(config)
            self.formatID = CompressedFormat.mpeg4AAC
        case CompressedFormat.appleLossless:
            let atom = try MagicCookie.alacAtom(fromCookie: cookie)
            let config = Array(atom[12...])
            framesPerPacket = Self.bigEndian(config, 0, 4)
            sourceBits = Int(config[5])
            channelCount = Int(config[9])
            sampleRate = Double(Self.bigEndian(config, 20, 4))
        case CompressedFormat.flac:
            let info = try MagicCookie.streamInfo(fromCookie: cookie)
            framesPerPacket = Self.bigEndian(info, 2, 2)
            let packed = Self.bigEndian(info, 10, 4)
            sampleRate = Double(packed >> 12)
            channelCount = (packed >> 9 & 7) + 1
            sourceBits = (packed >> 4 & 31) + 1
        case CompressedFormat.opus:
            guard cookie.count >= 19, Array(cookie.prefix(8)) == Array("OpusHead".utf8) else {
                throw .invalidCookie("\(cookie.count) bytes hold no OpusHead")
            }
            channelCount = Int(cookie[9])
            sampleRate = 48000  // Opus decodes at 48 kHz whatever rate the source had
            framesPerPacket = 960
        default:
            throw .unsupportedFormat("\(CompressedFormat.name(formatID)) has no magic cookie jaq reads")
        }
        guard channelCount > 0, sampleRate > 0, framesPerPacket > 0 else {
            throw .invalidCookie("the cookie names \(channelCount) channels at \(sampleRate) Hz, \(framesPerPacket) frames a packet")
        }
    }

    /// Rate, channels and frames per packet of an AudioSpecificConfig (ISO 14496-3 1.6.2.1),
    /// the SBR/PS extension's object types read through to the AAC core.
    static func audioSpecificConfig(_ config: [UInt8]) throws(CodecError) -> (Double, Int, Int) {
        var reader = BitReader(config)
        let rates: [Double] = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]
        func objectType() -> Int {
            let type = reader.read(5)
            return type == 31 ? 32 + reader.read(6) : type
        }
        func rate() throws(CodecError) -> Double {
            let index = reader.read(4)
            if index == 15 { return Double(reader.read(24)) }
            guard index < rates.count else { throw .invalidCookie("sampling frequency index \(index)") }
            return rates[index]
        }
        var type = objectType()
        let sampleRate = try rate()
        let channelConfiguration = reader.read(4)
        if type == 5 || type == 29 {  // explicit SBR (and PS): the extension rate, then the core
            _ = try rate()
            type = objectType()
        }
        // Channel configuration 7 is 7.1 (8 channels); 0 would need the program config element.
        let channels = [0, 1, 2, 3, 4, 5, 6, 8][min(channelConfiguration, 7)]
        guard reader.isValid, [1, 2, 3, 4, 6, 17, 19, 20, 22, 23].contains(type) else {
            throw .invalidCookie("AudioSpecificConfig of object type \(type)")
        }
        guard channelConfiguration <= 7 else { throw .invalidCookie("channel configuration \(channelConfiguration)") }
        let frameLengthFlag = reader.read(1)
        return (sampleRate, channels, frameLengthFlag == 1 ? 960 : 1024)
    }

    static func bigEndian(_ bytes: [UInt8], _ offset: Int, _ count: Int) -> Int {
        bytes[offset..<offset + count].reduce(0) { $0 << 8 | Int($1) }
    }
}

/// Reads bits MSB first; reading past the end gives zeros and clears `isValid`.
private struct BitReader {
    let bytes: [UInt8]
    var position = 0
    var isValid = true
    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func read(_ count: Int) -> Int {
        var value = 0
        for _ in 0..<count {
            let byte = position / 8
            guard byte < bytes.count else { isValid = false; return 0 }
            value = value << 1 | Int(bytes[byte] >> (7 - position % 8) & 1)
            position += 1
        }
        return value
    }
}

extension Codec {
    /// Whether this FFmpeg has an encoder for `formatID` that PacketEncoder uses (a format
    /// jaq encodes, with its encoder compiled in).
    public static func canEncode(formatID: UInt32) -> Bool {
        guard CompressedFormat.encodable.contains(formatID), let codec = Codec(formatID: formatID) else { return false }
        return avcodec_find_encoder(codec.avCodecID) != nil
            || (codec == .opus && avcodec_find_encoder_by_name("libopus") != nil)
    }

    /// Whether this FFmpeg has a decoder for `formatID` that PacketDecoder uses.
    public static func canDecode(formatID: UInt32) -> Bool {
        guard CompressedFormat.decodable.contains(formatID), let codec = Codec(formatID: formatID) else { return false }
        return avcodec_find_decoder(codec.avCodecID) != nil
    }
}
