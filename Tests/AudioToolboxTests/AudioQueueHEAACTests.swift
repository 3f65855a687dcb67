import AudioToolbox
import Foundation
import JackTestSupport
import QueueCore
import Testing
@testable import AudioCodec

/// HE-AAC ('aach') and HE-AAC v2 ('aacp') in an output queue. Debian's ffmpeg has no HE-AAC
/// encoder, so the packets are AAC-LC that ffmpeg encodes at 24 kHz, described to the queue as
/// HE-AAC at 48 kHz with a cookie that signals SBR (and PS) explicitly (ISO 14496-3 1.6.2.1,
/// hierarchical signalling). The packets carry no SBR (or PS) payload, so FFmpeg's decoder runs
/// its SBR stage with an empty high band: what plays is the 24 kHz core through the SBR QMF
/// banks at 48 kHz, 2048 frames a packet, and for 'aacp' the mono core on both channels.
extension AudioQueueCodecTests {
    /// An AudioSpecificConfig with explicit hierarchical SBR signalling: `objectType` 5 (SBR)
    /// or 29 (PS), the core's rate index and channels, the extension (output) rate index,
    /// then the core's AAC-LC (2) GASpecificConfig (960-frame flag, core coder, extension: all 0).
    static func explicitSBRConfig(objectType: UInt32, coreRateIndex: UInt32, channels: UInt32, extensionRateIndex: UInt32) -> [UInt8] {
        let bits = objectType << 27 | coreRateIndex << 23 | channels << 19 | extensionRateIndex << 15 | 2 << 10
        return [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: bits >> $0) }
    }

    /// The power of `frequency` in `samples` (Goertzel), as the amplitude of a sine there.
    static func toneAmplitude(_ samples: ArraySlice<Float>, frequency: Double, rate: Double) -> Double {
        let coefficient = 2 * cos(2 * Double.pi * frequency / rate)
        var s1 = 0.0, s2 = 0.0
        for x in samples {
            let s0 = Double(x) + coefficient * s1 - s2
            s2 = s1
            s1 = s0
        }
        let power = s1 * s1 + s2 * s2 - coefficient * s1 * s2
        return 2 * power.squareRoot() / Double(samples.count)
    }

    /// Each format with the explicit cookie, and with the core's own config as the cookie
    /// (implicit signalling, as many .m4a files have it): the format ID says HE-AAC, so jaq
    /// makes the signalling explicit and the queue plays at 48 kHz either way.
    @Test(arguments: [(kAudioFormatMPEG4AAC_HE, UInt32(2), true), (kAudioFormatMPEG4AAC_HE_V2, UInt32(1), true),
                      (kAudioFormatMPEG4AAC_HE, UInt32(2), false), (kAudioFormatMPEG4AAC_HE_V2, UInt32(1), false)])
    func heAACPlaysItsCoreAtTheOutputRate(formatID: AudioFormatID, coreChannels: UInt32, explicitCookie: Bool) throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // 2 s of 440 Hz (left) and 660 Hz (right; 'aacp': one channel of 440 Hz), AAC-LC at 24 kHz.
        let tones = coreChannels == 2 ? "0.3*sin(2*PI*440*t)|0.3*sin(2*PI*660*t)" : "0.3*sin(2*PI*440*t)"
        try Self.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "aevalsrc=\(tones):s=24000:d=2",
                      "-c:a", "aac", "-b:a", "\(48 * coreChannels)k", "-f", "adts", dir + "/core.aac"])
        let (packets, core) = ADTS.split(Array(try Data(contentsOf: URL(fileURLWithPath: dir + "/core.aac"))))
        // ADTS names the core: AAC-LC (2) at 24 kHz (index 6).
        #expect(core.count == 2 && core[0] >> 3 == 2 && (core[0] & 7) << 1 | core[1] >> 7 == 6, "core config \(core)")
        #expect(packets.count == 48, "2 s of 24 kHz in 1024-frame packets, one of priming, the last padded: \(packets.count)")
        let config = Self.explicitSBRConfig(objectType: formatID == kAudioFormatMPEG4AAC_HE ? 5 : 29,
                                            coreRateIndex: 6, channels: coreChannels, extensionRateIndex: 3)
        #expect(MagicCookie.explicitSBR(core, formatID: formatID, sampleRate: 48000) == config)
        #expect(MagicCookie.explicitSBR(core, formatID: kAudioFormatMPEG4AAC, sampleRate: 48000) == core, "AAC-LC stays AAC-LC")
        let cookie = MagicCookie.esds(audioSpecificConfig: explicitCookie ? config : core, averageBitRate: 48_000 * Int(coreChannels), bufferSize: 1536)
        var format = AudioStreamBasicDescription(
            mSampleRate: 48000, mFormatID: formatID, mFormatFlags: 0, mBytesPerPacket: 0, mFramesPerPacket: 2048,
            mBytesPerFrame: 0, mChannelsPerFrame: 2, mBitsPerChannel: 0, mReserved: 0)

        // The queue takes the format and says it back: 48 kHz, 2048 frames a packet.
        let device = ManualDriver()
        var queue: AudioQueueRef?
        #expect(AudioQueueNewOutput(&format, Self.playerCallback, nil, nil, nil, 0, &queue, device: device) == noErr)
        let q = try #require(queue)
        #expect(AudioQueueSetProperty(q, kAudioQueueProperty_MagicCookie, cookie, UInt32(cookie.count)) == noErr)
        var described = AudioStreamBasicDescription()
        var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        #expect(AudioQueueGetProperty(q, kAudioQueueProperty_StreamDescription, &described, &size) == noErr)
        #expect(described.mFormatID == formatID && described.mSampleRate == 48000 && described.mFramesPerPacket == 2048
                && described.mChannelsPerFrame == 2)
        #expect(AudioQueueDispose(q, true) == noErr)

        // Played with the encoder's priming (1024 core frames, one packet: 2048 output frames) trimmed.
        let priming = 2048
        let (played, player) = try Self.play(packets, format: format, cookie: cookie, trim: priming,
                                             driver: ManualDriver(periodFrames: 256))
        #expect(player.statuses.withLock { $0 }.isEmpty)
        #expect(player.converterErrors.withLock { $0 }.isEmpty, "no ConverterError")
        let length = packets.count * 2048 - priming
        let rate = 48000.0
        let frequencies = coreChannels == 2 ? [440.0, 660.0] : [440.0, 440.0]
        for c in 0..<2 {
            let signal = played[c]
            // Nothing after the packets' frames less the priming; the tone up to its end at 2 s.
            let end = (signal.lastIndex { $0 != 0 } ?? -1) + 1
            #expect(end <= length && end > length - 2048, "channel \(c): \(end) frames played, \(packets.count) packets make \(length)")
            let start = signal.firstIndex { abs($0) > 0.1 } ?? signal.count
            #expect(start < 2048, "channel \(c): the tone starts at frame \(start)")
            // One second of steady tone: the source's frequency, at the source's amplitude
            // (0.3, within 1 dB), its neighbours and the core's image above 12 kHz 40 dB down.
            let window = signal[4800..<52800]
            let f = frequencies[c]
            let amplitude = Self.toneAmplitude(window, frequency: f, rate: rate)
            #expect(amplitude > 0.267 && amplitude < 0.337, "channel \(c): \(f) Hz at \(amplitude)")
            for other in [f - 40, f + 40, 2 * f, 24000 - f] {
                let leak = Self.toneAmplitude(window, frequency: other, rate: rate)
                #expect(leak < amplitude / 100, "channel \(c): \(other) Hz at \(leak) against \(amplitude) at \(f) Hz")
            }
            // Zero crossings: the tone's frequency at 48 kHz, within 1 Hz.
            let crossings = zip(window.dropLast(), window.dropFirst()).filter { $0 < 0 && $1 >= 0 }.count
            #expect(abs(Double(crossings) - f) <= 1, "channel \(c): \(crossings) rising zero crossings in 1 s")
            print("\(CompressedFormat.name(formatID)) (\(explicitCookie ? "explicit" : "implicit")) channel \(c): \(f) Hz at \(amplitude), tone from frame \(start), \(end) of \(length) frames")
        }
        if coreChannels == 1 {
            // No PS payload: both channels are the mono core.
            #expect(zip(played[0], played[1]).allSatisfy { $0 == $1 }, "'aacp' of a mono core plays it on both channels")
        }
    }
}

extension AudioFilePacketTests {
    /// An .m4a whose esds holds the explicit SBR config opens as 'aach' at the output rate,
    /// 2048 frames a packet, its packets as written (jaq's writer, libavformat's reader).
    @Test func anM4AWhoseConfigSignalsSBROpensAsHEAAC() throws {
        let core = scratch.path("core.aac")
        try AudioQueueCodecTests.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i",
                                      "aevalsrc=0.3*sin(2*PI*440*t)|0.3*sin(2*PI*660*t):s=24000:d=1",
                                      "-c:a", "aac", "-b:a", "64k", "-f", "adts", core])
        let (packets, _) = ADTS.split(Array(try Data(contentsOf: URL(fileURLWithPath: core))))
        let config = AudioQueueCodecTests.explicitSBRConfig(objectType: 5, coreRateIndex: 6, channels: 2, extensionRateIndex: 3)
        let format = AudioStreamBasicDescription(
            mSampleRate: 48000, mFormatID: kAudioFormatMPEG4AAC_HE, mFormatFlags: 0, mBytesPerPacket: 0, mFramesPerPacket: 2048,
            mBytesPerFrame: 0, mChannelsPerFrame: 2, mBitsPerChannel: 0, mReserved: 0)
        let url = scratch.url("he.m4a")
        try copy(PacketSource(format: format, read: ReadPackets(packets: packets),
                              cookie: MagicCookie.esds(audioSpecificConfig: config, averageBitRate: 64000, bufferSize: 1536), table: nil),
                 to: url, type: kAudioFileM4AType, chunk: packets.count)
        let (status, opened) = AF.open(url)
        #expect(status == noErr)
        let file = try #require(opened)
        defer { AudioFileClose(file) }
        let described = try #require(AF.dataFormat(file))
        #expect(described.mFormatID == kAudioFormatMPEG4AAC_HE && described.mSampleRate == 48000
                && described.mFramesPerPacket == 2048 && described.mChannelsPerFrame == 2, "\(described)")
        #expect(AF.property(file, kAudioFilePropertyAudioDataPacketCount, UInt64.self).1 == UInt64(packets.count))
    }
}
