import AudioCodec
import CAudioToolbox

/// The compressed formats files of packets hold, with Apple's format IDs and what each
/// container needs of them: frames per packet, the largest packet, AudioCodec's codec, and the
/// conversions between Apple's magic cookies and the codec configurations containers store.
enum PacketFormat: CaseIterable, Sendable {
    case aac, aacHE, alac, mp3, flac, opus, ima4

    init?(formatID: AudioFormatID) {
        guard let match = Self.allCases.first(where: { $0.formatID == formatID }) else { return nil }
        self = match
    }

    /// The format of a stream of `codec`: AAC-LC for AAC (the caller tells HE-AAC by its
    /// AudioSpecificConfig).
    init(codec: Codec) {
        switch codec {
        case .aac: self = .aac
        case .alac: self = .alac
        case .mp3: self = .mp3
        case .flac: self = .flac
        case .opus: self = .opus
        case .ima4: self = .ima4
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

/// Apple's magic cookies and the codec configurations containers store, through AudioCodec's
/// `MagicCookie` (AAC: ES_Descriptor ↔ AudioSpecificConfig; ALAC: ALACSpecificConfig ↔ 'alac'
/// atom; FLAC: 'dfLa' ↔ STREAMINFO).
extension PacketFormat {
    /// The cookie Apple's API shows for a codec configuration libavformat read from a container.
    func cookie(extradata: [UInt8]) -> [UInt8]? {
        guard !extradata.isEmpty else { return nil }
        return MagicCookie.cookie(formatID: formatID, extradata: extradata, averageBitRate: 0, maximumPacketSize: 0)
    }

    /// The codec configuration a container stores for an Apple cookie; nil for a cookie that
    /// is not one of this format's.
    func extradata(cookie: [UInt8]) -> [UInt8]? {
        guard let extradata = try? MagicCookie.extradata(formatID: formatID, cookie: cookie), !extradata.isEmpty else { return nil }
        return extradata
    }

    /// The AudioSpecificConfig of AAC-LC at `sampleRate` with `channels` (the cookie made from
    /// the data format when the caller gave none).
    static func audioSpecificConfig(sampleRate: Double, channels: Int) -> [UInt8]? {
        let rates: [Double] = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]
        guard let rateIndex = rates.firstIndex(of: sampleRate), (1...8).contains(channels), channels != 7 else { return nil }
        let channelConfiguration = channels == 8 ? 7 : channels
        let value = UInt16(2) << 11 | UInt16(rateIndex) << 7 | UInt16(channelConfiguration) << 3
        return [UInt8(value >> 8), UInt8(value & 0xFF)]
    }

    /// The source bit depth an ALAC cookie names (the ALACSpecificConfig's bitDepth).
    static func alacBitDepth(cookie: [UInt8]) -> Int? {
        guard let atom = try? MagicCookie.extradata(formatID: kAudioFormatAppleLossless, cookie: cookie), atom.count >= 36 else { return nil }
        return Int(atom[17])
    }
}
