import AudioCodec
import CAudioToolbox
import CFFmpeg

/// The compressed formats files of packets hold, with Apple's format IDs and what each
/// container needs of them: frames per packet, the largest packet, FFmpeg's codec, and the
/// conversions between Apple's magic cookies and the codec configurations containers store.
enum CompressedFormat: CaseIterable, Sendable {
    case aac, aacHE, alac, mp3, flac, opus, ima4

    init?(formatID: AudioFormatID) {
        guard let match = Self.allCases.first(where: { $0.formatID == formatID }) else { return nil }
        self = match
    }

    init?(codecID: AVCodecID) {
        switch codecID {
        case AV_CODEC_ID_AAC: self = .aac
        case AV_CODEC_ID_ALAC: self = .alac
        case AV_CODEC_ID_MP3: self = .mp3
        case AV_CODEC_ID_FLAC: self = .flac
        case AV_CODEC_ID_OPUS: self = .opus
        case AV_CODEC_ID_ADPCM_IMA_QT: self = .ima4
        default: return nil
        }
    }

    var formatID: AudioFormatID {
        switch self {
        case .aac: kAudioFormatMPEG4AAC
        case .aacHE: kAudioFormatMPEG4AAC_HE
        case .alac: kAudioFormatAppleLossless
        case .mp3: kAudioFormatMPEGLayer3
        case .flac: kAudioFormatFLAC
        case .opus: kAudioFormatOpus
        case .ima4: kAudioFormatAppleIMA4
        }
    }

    var codecID: AVCodecID {
        switch self {
        case .aac, .aacHE: AV_CODEC_ID_AAC
        case .alac: AV_CODEC_ID_ALAC
        case .mp3: AV_CODEC_ID_MP3
        case .flac: AV_CODEC_ID_FLAC
        case .opus: AV_CODEC_ID_OPUS
        case .ima4: AV_CODEC_ID_ADPCM_IMA_QT
        }
    }

    /// Frames per packet when the format fixes it; 0 when packets vary (FLAC, Opus).
    var standardFramesPerPacket: UInt32 {
        switch self {
        case .aac: 1024
        case .aacHE: 2048
        case .alac: 4096
        case .mp3: 1152
        case .ima4: 64
        case .flac, .opus: 0
        }
    }

    /// The largest packet an encoder of this format can make for `channels` channels of
    /// `framesPerPacket` frames (the file's PacketSizeUpperBound).
    func packetSizeUpperBound(channels: Int, framesPerPacket: Int, bitsPerSample: Int) -> Int {
        switch self {
        // 6144 bits per channel and raw data block (ISO 14496-3, 4.5.3.2).
        case .aac, .aacHE: 768 * channels
        // An escaped (uncompressed) ALAC frame: samples at full depth plus the frame headers.
        case .alac: framesPerPacket * channels * max(bitsPerSample, 16) / 8 + 16 * channels + 16
        // 320 kbit/s at 32 kHz, with padding.
        case .mp3: 1441
        case .flac: max(framesPerPacket, 4096) * channels * max(bitsPerSample, 16) / 8 + 64
        // 120 ms at 510 kbit/s, the RFC 6716 maximum.
        case .opus: 1275 * 3 * channels
        case .ima4: 34 * channels
        }
    }

    /// The file's DataFormat for this format.
    func streamDescription(sampleRate: Double, channels: Int, framesPerPacket: UInt32, sourceBitDepth: Int) -> AudioStreamBasicDescription {
        var flags: UInt32 = 0
        if self == .alac {
            // kAppleLosslessFormatFlag_16/20/24/32BitSourceData.
            flags = switch sourceBitDepth { case 20: 2; case 24: 3; case 32: 4; default: 1 }
        }
        return AudioStreamBasicDescription(
            mSampleRate: sampleRate, mFormatID: formatID, mFormatFlags: flags,
            mBytesPerPacket: self == .ima4 ? UInt32(34 * channels) : 0, mFramesPerPacket: framesPerPacket,
            mBytesPerFrame: 0, mChannelsPerFrame: UInt32(channels), mBitsPerChannel: 0, mReserved: 0)
    }
}

// MARK: - Magic cookies

/// Apple's magic cookies and the codec configurations of the containers.
///
/// - AAC: Apple's cookie (AudioQueue's MagicCookie, a CAF's 'kuki', AudioFile's MagicCookieData)
///   is an MPEG-4 ES_Descriptor (the body of an 'esds' atom); MPEG-4 files and FFmpeg keep the
///   AudioSpecificConfig inside it.
/// - ALAC: the cookie is the 24-byte ALACSpecificConfig, which may come wrapped in 'frma' and
///   'alac' atoms; MPEG-4 files and FFmpeg keep it as a 36-byte 'alac' atom.
enum MagicCookie {
    /// The AudioSpecificConfig inside an AAC cookie: an ES_Descriptor, an 'esds' atom, or an
    /// AudioSpecificConfig already.
    static func audioSpecificConfig(fromAAC cookie: [UInt8]) -> [UInt8]? {
        var bytes = cookie[...]
        // An 'esds' atom: size, 'esds', version and flags.
        if bytes.count >= 12, Array(bytes[bytes.startIndex + 4..<bytes.startIndex + 8]) == Array("esds".utf8) {
            bytes = bytes.dropFirst(12)
        }
        guard bytes.first == 0x03 else { return bytes.count >= 2 ? Array(bytes) : nil }
        var reader = DescriptorReader(bytes: Array(bytes))
        guard let es = reader.descriptor(tag: 0x03), es.count >= 3 else { return nil }
        var esReader = DescriptorReader(bytes: es)
        let flags = es[2]
        // ES_ID, flags, then what the flags announce: dependsOn_ES_ID, a URL, OCR_ES_ID.
        esReader.skip(3)
        if flags & 0x80 != 0 { esReader.skip(2) }
        if flags & 0x40 != 0 { esReader.skip(1 + Int(esReader.byte ?? 0)) }
        if flags & 0x20 != 0 { esReader.skip(2) }
        guard let decoderConfig = esReader.descriptor(tag: 0x04), decoderConfig.count >= 13 else { return nil }
        var configReader = DescriptorReader(bytes: decoderConfig)
        configReader.skip(13)
        guard let specific = configReader.descriptor(tag: 0x05), specific.count >= 2 else { return nil }
        return specific
    }

    /// An ES_Descriptor for AAC holding `config` (an AudioSpecificConfig), as Apple's encoder
    /// makes it: the cookie of AAC in CAF and in AudioQueue.
    static func esDescriptor(audioSpecificConfig config: [UInt8], averageBitRate: UInt32 = 0, maximumBitRate: UInt32 = 0,
                             bufferSize: UInt32 = 0) -> [UInt8] {
        func descriptor(_ tag: UInt8, _ body: [UInt8]) -> [UInt8] {
            // Sizes in the 4-byte expandable form, as Apple and FFmpeg write them.
            let size = UInt32(body.count)
            return [tag, UInt8(0x80 | (size >> 21) & 0x7F), UInt8(0x80 | (size >> 14) & 0x7F),
                    UInt8(0x80 | (size >> 7) & 0x7F), UInt8(size & 0x7F)] + body
        }
        func bigEndian(_ value: UInt32, _ count: Int) -> [UInt8] {
            (0..<count).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * UInt32($0))) }
        }
        // objectTypeIndication 0x40 (MPEG-4 audio), streamType 5 (audio) << 2 | 1 (reserved).
        let decoderConfig = [0x40, 0x15] + bigEndian(bufferSize, 3) + bigEndian(maximumBitRate, 4)
            + bigEndian(averageBitRate, 4) + descriptor(0x05, config)
        // ES_ID 0, no flags; the SLConfigDescriptor predefined 2 (MP4).
        return descriptor(0x03, [0, 0, 0] + descriptor(0x04, decoderConfig) + descriptor(0x06, [0x02]))
    }

    /// The AudioSpecificConfig of AAC-LC at `sampleRate` with `channels` (a cookie made from
    /// the data format when the caller gave none).
    static func audioSpecificConfig(sampleRate: Double, channels: Int) -> [UInt8]? {
        let rates: [Double] = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]
        guard let rateIndex = rates.firstIndex(of: sampleRate), (1...7).contains(channels) else { return nil }
        let channelConfiguration = channels == 8 ? 7 : channels
        let value = UInt16(2) << 11 | UInt16(rateIndex) << 7 | UInt16(channelConfiguration) << 3
        return [UInt8(value >> 8), UInt8(value & 0xFF)]
    }

    /// The 24-byte ALACSpecificConfig inside an ALAC cookie (bare, in an 'alac' atom, or after a
    /// 'frma' atom).
    static func alacSpecificConfig(fromALAC cookie: [UInt8]) -> [UInt8]? {
        var bytes = cookie[...]
        func atom(_ name: String) -> Bool {
            bytes.count >= 8 && Array(bytes[bytes.startIndex + 4..<bytes.startIndex + 8]) == Array(name.utf8)
        }
        if atom("frma") { bytes = bytes.dropFirst(12) }
        if atom("alac") { bytes = bytes.dropFirst(12) }
        guard bytes.count >= 24 else { return nil }
        return Array(bytes.prefix(24))
    }

    /// The 'alac' atom FFmpeg and MPEG-4 files keep (size 36, 'alac', version 0, config).
    static func alacAtom(config: [UInt8]) -> [UInt8] {
        [0, 0, 0, 36] + Array("alac".utf8) + [0, 0, 0, 0] + config.prefix(24)
    }

    /// The ALACSpecificConfig's bit depth (byte 5).
    static func alacBitDepth(_ config: [UInt8]) -> Int {
        config.count >= 6 ? Int(config[5]) : 16
    }

    /// The cookie Apple's API shows for a codec configuration FFmpeg read from a container.
    static func cookie(_ format: CompressedFormat, extradata: [UInt8]) -> [UInt8]? {
        guard !extradata.isEmpty else { return nil }
        switch format {
        case .aac, .aacHE: return esDescriptor(audioSpecificConfig: audioSpecificConfig(fromAAC: extradata) ?? extradata)
        case .alac: return alacSpecificConfig(fromALAC: extradata) ?? extradata
        default: return extradata
        }
    }

    /// The codec configuration an MPEG-4 file stores for an Apple cookie.
    static func extradata(_ format: CompressedFormat, cookie: [UInt8]) -> [UInt8]? {
        switch format {
        case .aac, .aacHE: return audioSpecificConfig(fromAAC: cookie)
        case .alac: return alacSpecificConfig(fromALAC: cookie).map(alacAtom(config:))
        default: return cookie
        }
    }
}

/// Reads MPEG-4 descriptors (tag, expandable size, body).
private struct DescriptorReader {
    let bytes: [UInt8]
    var offset = 0

    /// The byte at the read position.
    var byte: UInt8? { offset < bytes.count ? bytes[offset] : nil }

    mutating func skip(_ count: Int) {
        offset = min(offset + count, bytes.count)
    }

    /// The body of the next descriptor if it has `tag`.
    mutating func descriptor(tag: UInt8) -> [UInt8]? {
        guard offset < bytes.count, bytes[offset] == tag else { return nil }
        offset += 1
        var size = 0
        for _ in 0..<4 {
            guard offset < bytes.count else { return nil }
            let byte = bytes[offset]
            offset += 1
            size = size << 7 | Int(byte & 0x7F)
            if byte & 0x80 == 0 { break }
        }
        guard size <= bytes.count - offset else { return nil }
        defer { offset += size }
        return Array(bytes[offset..<offset + size])
    }
}
