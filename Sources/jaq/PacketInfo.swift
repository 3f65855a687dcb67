import AudioToolbox

/// What `jaq info` adds for files of compressed packets (AAC, ALAC... in .m4a, .caf, ADTS):
/// the packet count, the encoder's priming and the last packet's padding (the file's
/// PacketTableInfo), the bit rate, and peaks measured by decoding the packets.
struct PacketInfo: Encodable {
    let packets: UInt64
    let primingFrames: Int32
    let remainderFrames: Int32
    /// Frames of audio: the packets' frames less priming and remainder.
    let validFrames: Int64
    /// Bits per second, the file's average.
    let bitRate: UInt32
    let maximumPacketSize: UInt32

    /// The packet table of `file`, or nil for files of linear PCM (one frame a packet).
    init?(_ file: AudioFileID, format: AudioStreamBasicDescription) {
        guard format.mFormatID != kAudioFormatLinearPCM, format.mBytesPerFrame == 0 else { return nil }
        var table = AudioFilePacketTableInfo()
        var size = UInt32(MemoryLayout<AudioFilePacketTableInfo>.size)
        guard AudioFileGetProperty(file, kAudioFilePropertyPacketTableInfo, &size, &table) == noErr else { return nil }
        var packets: UInt64 = 0
        size = 8
        AudioFileGetProperty(file, kAudioFilePropertyAudioDataPacketCount, &size, &packets)
        var bitRate: UInt32 = 0
        var largest: UInt32 = 0
        size = 4
        AudioFileGetProperty(file, kAudioFilePropertyBitRate, &size, &bitRate)
        size = 4
        AudioFileGetProperty(file, kAudioFilePropertyMaximumPacketSize, &size, &largest)
        self.packets = packets
        primingFrames = table.mPrimingFrames
        remainderFrames = table.mRemainderFrames
        validFrames = table.mNumberValidFrames
        self.bitRate = bitRate
        maximumPacketSize = largest
    }

    /// The codec's name and what it says about itself: "AAC-LC, 128 kbit/s", "ALAC from 16-bit source".
    static func codecText(_ format: AudioStreamBasicDescription, bitRate: UInt32) -> String {
        let rate = bitRate > 0 ? ", \(Int((Double(bitRate) / 1000).rounded())) kbit/s" : ""
        switch format.mFormatID {
        case kAudioFormatMPEG4AAC: return "AAC-LC\(rate)"
        case kAudioFormatMPEG4AAC_HE: return "HE-AAC\(rate)"
        case kAudioFormatAppleLossless:
            let bits = Self.losslessSourceBits[format.mFormatFlags].map { " from \($0)-bit source" } ?? ""
            return "Apple Lossless (ALAC)\(bits)"
        case kAudioFormatMPEGLayer3: return "MP3\(rate)"
        case kAudioFormatFLAC: return "FLAC"
        case kAudioFormatOpus: return "Opus\(rate)"
        case kAudioFormatAppleIMA4: return "IMA4 ADPCM"
        default: return fourCharacterCode(format.mFormatID)
        }
    }

    /// The source depth an Apple Lossless format's flags name (kAppleLosslessFormatFlag_…).
    private static let losslessSourceBits: [AudioFormatFlags: Int] = [
        kAppleLosslessFormatFlag_16BitSourceData: 16, kAppleLosslessFormatFlag_20BitSourceData: 20,
        kAppleLosslessFormatFlag_24BitSourceData: 24, kAppleLosslessFormatFlag_32BitSourceData: 32,
    ]

    /// The largest absolute sample per channel of the decoded audio, priming and padding left
    /// out (1.0 is full scale).
    func peaks(_ file: AudioFileID, format: AudioStreamBasicDescription) throws(InfoFailure) -> [Double] {
        var size: UInt32 = 0
        var cookie: [UInt8] = []
        if AudioFileGetPropertyInfo(file, kAudioFilePropertyMagicCookieData, &size, nil) == noErr, size > 0 {
            cookie = [UInt8](repeating: 0, count: Int(size))
            AudioFileGetProperty(file, kAudioFilePropertyMagicCookieData, &size, &cookie)
        }
        return try FilePeaks.measure(file, format: format, packetCount: Int64(packets), maximumPacketSize: Int(maximumPacketSize),
                                     cookie: cookie, skip: Int64(primingFrames), frames: validFrames)
    }
}
