/// Apple's magic cookies ↔ FFmpeg's extradata.
///
/// | format | Apple's cookie (queue, converter, CAF 'kuki')       | FFmpeg extradata          |
/// |--------|-----------------------------------------------------|---------------------------|
/// | AAC    | an MPEG-4 ES_Descriptor (esds body) around the ASC   | AudioSpecificConfig       |
/// | ALAC   | the 24-byte ALACSpecificConfig (or inside 'frma'/'alac' atoms) | 36-byte 'alac' atom |
/// | FLAC   | 'dfLa' body: version 0 + STREAMINFO metadata block   | 34-byte STREAMINFO         |
/// | Opus   | the OpusHead packet                                  | the OpusHead packet        |
///
/// Parsing accepts every spelling above (and the bare extradata), so cookies copied from
/// files made elsewhere work.
public enum MagicCookie {
    // MARK: Apple → FFmpeg

    /// The decoder's extradata for an Apple cookie (empty in, empty out).
    public static func extradata(formatID: UInt32, cookie: [UInt8]) throws(CodecError) -> [UInt8] {
        guard !cookie.isEmpty else { return [] }
        switch formatID {
        case CompressedFormat.mpeg4AAC, CompressedFormat.mpeg4AAC_HE, CompressedFormat.mpeg4AAC_HE_V2:
            return try audioSpecificConfig(fromESDS: cookie)
        case CompressedFormat.appleLossless:
            return try alacAtom(fromCookie: cookie)
        case CompressedFormat.flac:
            return try streamInfo(fromCookie: cookie)
        default:
            return cookie
        }
    }

    /// For HE-AAC ('aach', 'aacp'): a two-byte AAC-LC AudioSpecificConfig whose core runs at
    /// half of `sampleRate` (implicit SBR signalling, which only SBR data in the packets would
    /// confirm) rewritten with explicit hierarchical signalling (ISO 14496-3 1.6.2.1: object
    /// type 5, or 29 for 'aacp' of a mono core, the extension rate, then the core), so the
    /// decoder gives the format's rate and 2048 frames a packet from the first packet, as the
    /// format ID says. Any other config is returned as it is.
    public static func explicitSBR(_ config: [UInt8], formatID: UInt32, sampleRate: Double) -> [UInt8] {
        let rates: [Double] = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]
        guard formatID == CompressedFormat.mpeg4AAC_HE || formatID == CompressedFormat.mpeg4AAC_HE_V2,
              config.count == 2, config[0] >> 3 == 2,  // AAC-LC, nothing after its GASpecificConfig
              config[1] & 3 == 0,                       // no core coder, no extension flag
              let extensionIndex = rates.firstIndex(of: sampleRate) else { return config }
        let coreIndex = Int((config[0] & 7) << 1 | config[1] >> 7)
        let channels = UInt32(config[1] >> 3 & 0xF)
        guard coreIndex < rates.count, rates[coreIndex] * 2 == sampleRate, channels != 0 else { return config }
        let objectType: UInt32 = formatID == CompressedFormat.mpeg4AAC_HE_V2 && channels == 1 ? 29 : 5
        let frameLengthFlag = UInt32(config[1] >> 2 & 1)
        let bits = objectType << 27 | UInt32(coreIndex) << 23 | channels << 19 | UInt32(extensionIndex) << 15 | 2 << 10
            | frameLengthFlag << 9
        return [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: bits >> $0) }
    }

    /// The AudioSpecificConfig in an ES_Descriptor (a bare 'esds' atom or full box accepted, or an ASC itself).
    static func audioSpecificConfig(fromESDS bytes: [UInt8]) throws(CodecError) -> [UInt8] {
        var data = bytes[...]
        // A whole 'esds' atom: size, 'esds', version/flags.
        if data.count >= 12, Array(data[data.startIndex + 4..<data.startIndex + 8]) == Array("esds".utf8) {
            data = data.dropFirst(12)
        } else if data.first == 0, data.count > 4, data[data.startIndex + 4] == 0x03 {
            data = data.dropFirst(4)  // esds body with its version/flags
        }
        guard data.first == 0x03 else {
            // No descriptor: an AudioSpecificConfig is 2 bytes or more, object type in the top 5 bits.
            guard bytes.count >= 2, bytes.count <= 64 else { throw .invalidCookie("neither an ES descriptor nor an AudioSpecificConfig") }
            return bytes
        }
        var reader = DescriptorReader(bytes: Array(data))
        guard let es = reader.next(), es.tag == 0x03 else { throw .invalidCookie("no ES_Descriptor") }
        var inner = DescriptorReader(bytes: es.body)
        guard inner.skip(3) else { throw .invalidCookie("short ES_Descriptor") }
        let flags = es.body[2]
        if flags & 0x80 != 0 { guard inner.skip(2) else { throw .invalidCookie("short ES_Descriptor") } }
        if flags & 0x40 != 0 {
            guard let length = inner.byte(), inner.skip(Int(length)) else { throw .invalidCookie("short ES_Descriptor URL") }
        }
        if flags & 0x20 != 0 { guard inner.skip(2) else { throw .invalidCookie("short ES_Descriptor") } }
        while let descriptor = inner.next() {
            guard descriptor.tag == 0x04 else { continue }
            var config = DescriptorReader(bytes: descriptor.body)
            guard config.skip(13) else { throw .invalidCookie("short DecoderConfigDescriptor") }
            while let specific = config.next() {
                guard specific.tag == 0x05 else { continue }
                guard specific.body.count >= 2 else { throw .invalidCookie("AudioSpecificConfig of \(specific.body.count) bytes") }
                return specific.body
            }
        }
        throw .invalidCookie("no DecoderSpecificInfo in the ES_Descriptor")
    }

    /// FFmpeg's 36-byte 'alac' atom from a 24-byte ALACSpecificConfig or a cookie holding the atom.
    static func alacAtom(fromCookie bytes: [UInt8]) throws(CodecError) -> [UInt8] {
        let tag = Array("alac".utf8)
        if bytes.count == 24 { return [0, 0, 0, 36] + tag + [0, 0, 0, 0] + bytes }
        // Find an 'alac' atom with version 0 followed by the 24-byte configuration.
        var i = 4
        while i + 8 + 24 <= bytes.count {
            if Array(bytes[i..<i + 4]) == tag, bytes[i + 4..<i + 8].allSatisfy({ $0 == 0 }) {
                let size = Int(bytes[i - 4]) << 24 | Int(bytes[i - 3]) << 16 | Int(bytes[i - 2]) << 8 | Int(bytes[i - 1])
                if size >= 36 { return [0, 0, 0, 36] + tag + [0, 0, 0, 0] + Array(bytes[i + 8..<i + 32]) }
            }
            i += 1
        }
        throw .invalidCookie("\(bytes.count) bytes hold no ALACSpecificConfig")
    }

    /// The 34-byte STREAMINFO from a 'dfLa' body, a "fLaC" stream header, a metadata block or itself.
    static func streamInfo(fromCookie bytes: [UInt8]) throws(CodecError) -> [UInt8] {
        if bytes.count == 34 { return bytes }
        var data = bytes[...]
        if data.count >= 8, Array(data.prefix(4)) == Array("fLaC".utf8) { data = data.dropFirst(4) }
        else if data.count >= 42, data.prefix(4).allSatisfy({ $0 == 0 }) { data = data.dropFirst(4) }  // dfLa version/flags
        guard data.count >= 38, data[data.startIndex] & 0x7F == 0,
              Int(data[data.startIndex + 1]) << 16 | Int(data[data.startIndex + 2]) << 8 | Int(data[data.startIndex + 3]) == 34
        else { throw .invalidCookie("\(bytes.count) bytes hold no FLAC STREAMINFO") }
        return Array(data.dropFirst(4).prefix(34))
    }

    // MARK: FFmpeg → Apple

    /// The cookie an Apple encoder hands out for FFmpeg's extradata.
    public static func cookie(formatID: UInt32, extradata: [UInt8], averageBitRate: Int, maximumPacketSize: Int) -> [UInt8] {
        guard !extradata.isEmpty else { return [] }
        switch formatID {
        case CompressedFormat.mpeg4AAC, CompressedFormat.mpeg4AAC_HE, CompressedFormat.mpeg4AAC_HE_V2:
            return esds(audioSpecificConfig: extradata, averageBitRate: averageBitRate, bufferSize: maximumPacketSize)
        case CompressedFormat.appleLossless:
            // The 24-byte ALACSpecificConfig, as CAF's 'kuki' and Apple's encoder give it.
            return extradata.count >= 36 ? Array(extradata[12..<36]) : extradata
        case CompressedFormat.flac:
            // 'dfLa' body: version/flags 0, then STREAMINFO as the last metadata block.
            let info = extradata.count == 34 ? extradata : (try? streamInfo(fromCookie: extradata)) ?? extradata
            return [0, 0, 0, 0, 0x80, 0, 0, 34] + info
        default:
            return extradata
        }
    }

    /// An ES_Descriptor (esds body without version/flags) around an AudioSpecificConfig.
    static func esds(audioSpecificConfig asc: [UInt8], averageBitRate: Int, bufferSize: Int) -> [UInt8] {
        func descriptor(_ tag: UInt8, _ body: [UInt8]) -> [UInt8] {
            // Four-byte expandable length, as Apple writes it.
            let n = body.count
            return [tag, UInt8(0x80 | (n >> 21) & 0x7F), UInt8(0x80 | (n >> 14) & 0x7F), UInt8(0x80 | (n >> 7) & 0x7F), UInt8(n & 0x7F)] + body
        }
        func be(_ value: Int, _ bytes: Int) -> [UInt8] { (0..<bytes).reversed().map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) } }
        let decoderConfig = [0x40, 0x15] + be(bufferSize, 3) + be(averageBitRate, 4) + be(averageBitRate, 4)
            + descriptor(0x05, asc)
        let es = [0, 0, 0] + descriptor(0x04, decoderConfig) + descriptor(0x06, [0x02])
        return descriptor(0x03, es)
    }
}

/// Reads MPEG-4 descriptors: a tag, an expandable length (7 bits a byte), the body.
private struct DescriptorReader {
    let bytes: [UInt8]
    var position = 0

    mutating func byte() -> UInt8? {
        guard position < bytes.count else { return nil }
        defer { position += 1 }
        return bytes[position]
    }

    mutating func skip(_ count: Int) -> Bool {
        guard count >= 0, position + count <= bytes.count else { return false }
        position += count
        return true
    }

    mutating func next() -> (tag: UInt8, body: [UInt8])? {
        guard let tag = byte() else { return nil }
        var length = 0
        for _ in 0..<4 {
            guard let b = byte() else { return nil }
            length = length << 7 | Int(b & 0x7F)
            if b & 0x80 == 0 { break }
        }
        guard position + length <= bytes.count else { return nil }
        defer { position += length }
        return (tag, Array(bytes[position..<position + length]))
    }
}
