import AudioCodec
import CAudioToolbox

/// One frame header of an ADTS AAC or MPEG audio (MP3) stream, as the stream parsers read it.
struct MPEGFrameHeader: Equatable {
    /// Bytes of the whole frame, header included.
    var length: Int
    /// Where the packet starts in the frame: after the ADTS header; 0 for MPEG audio, whose
    /// packets are whole frames.
    var payloadOffset: Int
    var sampleRate: Double
    var channels: UInt32
    var framesPerPacket: UInt32
    var formatID: AudioFormatID
    /// Bits per second (MPEG audio; 0 for ADTS).
    var bitRate: UInt32
    /// What every frame of one stream shares (version, layer, rate, channel mode).
    var signature: UInt32

    static let adtsRates: [Double] = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]

    /// The ADTS header at `i` in `input` (7 bytes needed), nil when there is none.
    static func adts(_ input: StreamBuffer, at i: Int) -> MPEGFrameHeader? {
        guard input[i] == 0xFF, input[i + 1] & 0xF6 == 0xF0 else { return nil }  // sync, layer 0
        let protectionAbsent = input[i + 1] & 1 == 1
        let profile = input[i + 2] >> 6
        let rateIndex = Int(input[i + 2] >> 2 & 0xF)
        let channelConfiguration = UInt32((input[i + 2] & 1) << 2 | input[i + 3] >> 6)
        let length = Int(input[i + 3] & 3) << 11 | Int(input[i + 4]) << 3 | Int(input[i + 5]) >> 5
        let rawBlocks = input[i + 6] & 3
        let headerLength = protectionAbsent ? 7 : 9
        guard rateIndex < adtsRates.count, channelConfiguration != 0, rawBlocks == 0, length > headerLength else { return nil }
        return MPEGFrameHeader(length: length, payloadOffset: headerLength, sampleRate: adtsRates[rateIndex],
                               channels: channelConfiguration == 7 ? 8 : channelConfiguration, framesPerPacket: 1024,
                               formatID: kAudioFormatMPEG4AAC, bitRate: 0,
                               signature: UInt32(profile) << 8 | UInt32(rateIndex) << 4 | channelConfiguration)
    }

    /// The AudioSpecificConfig this ADTS header describes.
    static func audioSpecificConfig(_ input: StreamBuffer, at i: Int) -> [UInt8] {
        let objectType = (input[i + 2] >> 6) + 1
        let rateIndex = (input[i + 2] >> 2) & 0xF
        let channels = (input[i + 2] & 1) << 2 | input[i + 3] >> 6
        return [objectType << 3 | rateIndex >> 1, (rateIndex & 1) << 7 | channels << 3]
    }

    private static let mpeg1Rates: [Double] = [44100, 48000, 32000]
    // Bit rates (kbit/s) by [version is MPEG-1][layer index 1...3][bit-rate index].
    private static let bitRatesV1: [[UInt32]] = [
        [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320],    // layer III
        [0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384],   // layer II
        [0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448], // layer I
    ]
    private static let bitRatesV2: [[UInt32]] = [
        [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],        // layers II and III
        [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
        [0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256],   // layer I
    ]

    /// The MPEG audio frame header at `i` (4 bytes needed), nil when there is none (free
    /// format, reserved values).
    static func mpegAudio(_ input: StreamBuffer, at i: Int) -> MPEGFrameHeader? {
        guard input[i] == 0xFF, input[i + 1] & 0xE0 == 0xE0 else { return nil }
        let version = input[i + 1] >> 3 & 3   // 0: 2.5, 2: 2, 3: 1
        let layerBits = input[i + 1] >> 1 & 3 // 1: III, 2: II, 3: I
        let bitRateIndex = Int(input[i + 2] >> 4)
        let rateIndex = Int(input[i + 2] >> 2 & 3)
        let padding = Int(input[i + 2] >> 1 & 1)
        let mode = input[i + 3] >> 6
        guard version != 1, layerBits != 0, bitRateIndex != 0, bitRateIndex != 15, rateIndex != 3 else { return nil }
        let divisor: Double = version == 3 ? 1 : version == 2 ? 2 : 4
        let sampleRate = mpeg1Rates[rateIndex] / divisor
        let table = version == 3 ? bitRatesV1 : bitRatesV2
        let bitRate = table[Int(layerBits) - 1][bitRateIndex] * 1000
        let length: Int
        let frames: UInt32
        let formatID: AudioFormatID
        switch layerBits {
        case 3:
            length = (12 * Int(bitRate) / Int(sampleRate) + padding) * 4
            frames = 384
            formatID = kAudioFormatMPEGLayer1
        case 2:
            length = 144 * Int(bitRate) / Int(sampleRate) + padding
            frames = 1152
            formatID = kAudioFormatMPEGLayer2
        default:
            length = (version == 3 ? 144 : 72) * Int(bitRate) / Int(sampleRate) + padding
            frames = version == 3 ? 1152 : 576
            formatID = kAudioFormatMPEGLayer3
        }
        guard length > 4 else { return nil }
        return MPEGFrameHeader(length: length, payloadOffset: 0, sampleRate: sampleRate, channels: mode == 3 ? 1 : 2,
                               framesPerPacket: frames, formatID: formatID, bitRate: bitRate,
                               signature: UInt32(version) << 8 | UInt32(layerBits) << 4 | UInt32(rateIndex) << 2 | (mode == 3 ? 1 : 0))
    }

    /// A Xing/Info (LAME) header in the MPEG audio frame `frame`: the stream's packets and
    /// bytes, and the encoder delay and padding when LAME wrote them.
    static func xing(_ frame: [UInt8], header: MPEGFrameHeader) -> (packets: UInt32?, bytes: UInt32?, delay: Int?, padding: Int?)? {
        guard header.formatID == kAudioFormatMPEGLayer3 else { return nil }
        let mpeg1 = header.framesPerPacket == 1152
        let sideInfo = mpeg1 ? (header.channels == 1 ? 17 : 32) : (header.channels == 1 ? 9 : 17)
        let at = 4 + sideInfo
        let tag = frame.fourCC(at)
        guard tag == "Xing" || tag == "Info" else { return nil }
        let flags: UInt32 = frame.be(at + 4)
        var cursor = at + 8
        var packets: UInt32?, bytes: UInt32?
        if flags & 1 != 0 { packets = frame.be(cursor); cursor += 4 }
        if flags & 2 != 0 { bytes = frame.be(cursor); cursor += 4 }
        if flags & 4 != 0 { cursor += 100 }
        if flags & 8 != 0 { cursor += 4 }
        // The LAME extension: 9-byte encoder string, ..., delay and padding 12 bits each at +21.
        var delay: Int?, padding: Int?
        if cursor + 24 <= frame.count, frame.fourCC(cursor) == "LAME" || frame.fourCC(cursor) == "Lavc" || frame.fourCC(cursor) == "Lavf" {
            let d = cursor + 21
            delay = Int(frame[d]) << 4 | Int(frame[d + 1]) >> 4
            padding = Int(frame[d + 1] & 0xF) << 8 | Int(frame[d + 2])
        }
        return (packets, bytes, delay, padding)
    }
}
