import AudioToolbox
import Foundation
import SoundFile
import Testing
import JackTestSupport
import QueueCore

/// FLAC, Ogg Vorbis, Ogg Opus and MP3 files are written from linear PCM (libsndfile encodes);
/// FLAC and Ogg files read as their decoded linear PCM, MP3 files as their packets.
@Suite struct AudioFileCompressedTests {
    let scratch: Scratch
    init() throws { scratch = try Scratch() }

    struct FLACCase: Sendable, CustomTestStringConvertible {
        let encoding: Encoding
        let bigEndian: Bool
        let channels: Int
        var testDescription: String { "\(encoding) \(bigEndian ? "BE" : "LE") ×\(channels)" }
    }

    static let flacCases: [FLACCase] = [Encoding.s8, .s16, .s24].flatMap { encoding in
        [false, true].flatMap { bigEndian in [1, 2, 3].map { FLACCase(encoding: encoding, bigEndian: bigEndian, channels: $0) } }
    }

    /// FLAC is lossless: the samples come back exactly, presented as native-endian integers
    /// of the file's bit depth.
    @Test(arguments: flacCases)
    func flacSamplesRoundTripExactly(_ flac: FLACCase) throws {
        let url = scratch.url("lossless.flac")
        let signal = AF.makeFile(url, kAudioFileFLACType, flac.encoding, channels: flac.channels, bigEndian: flac.bigEndian,
                                 frames: 4000, rate: 96000)
        let (status, file) = AF.open(url)
        expectStatus(status, noErr, "open")
        guard let file else { return }
        defer { AudioFileClose(file) }
        let presented = flac.encoding.format(channels: flac.channels, rate: 96000, bigEndian: false)
        #expect(AF.dataFormat(file)?.matches(presented) == true, "FLAC reads as native-endian \(flac.encoding)")
        #expect(AF.property(file, kAudioFilePropertyFileFormat, UInt32.self).1 == kAudioFileFLACType)
        #expect(AF.property(file, kAudioFilePropertyAudioDataPacketCount, UInt64.self).1 == 4000)
        #expect(AF.property(file, kAudioFilePropertySourceBitDepth, Int32.self).1 == Int32(flac.encoding.bits!))
        let (read, bytes) = AF.read(file, from: 0, packets: 4000, bytesPerPacket: Int(presented.mBytesPerPacket))
        expectStatus(read, noErr, "read")
        let written = int32Samples(signal, flac.encoding.format(channels: flac.channels, bigEndian: flac.bigEndian))
        #expect(int32Samples(bytes, presented) == written)
        // Seeking into the middle of the stream.
        let (_, middle) = AF.read(file, from: 2500, packets: 10, bytesPerPacket: Int(presented.mBytesPerPacket))
        #expect(int32Samples(middle, presented) == Array(written[2500 * flac.channels..<2510 * flac.channels]))
    }

    struct LossyCase: Sendable, CustomTestStringConvertible {
        let type: AudioFileTypeID
        let major: SoundFile.MajorFormat
        let subtype: SoundFile.Subtype
        let encoding: Encoding
        let rate: Double
        /// Frames the decoded length may differ from the written length by.
        let lengthTolerance: Int
        var testDescription: String { "\(fourCharacterCode(OSStatus(bitPattern: type))) from \(encoding)" }
    }

    static let vorbis = [Encoding.f32, .s16].map {
        LossyCase(type: kAudioFileOggVorbisType, major: .ogg, subtype: .vorbis, encoding: $0, rate: 44100, lengthTolerance: 0)
    }
    static let opus = [Encoding.f32, .s16].map {
        LossyCase(type: kAudioFileOggOpusType, major: .ogg, subtype: .opus, encoding: $0, rate: 48000, lengthTolerance: 0)
    }
    // MP3 frames are 1152 samples; the packet table (from LAME's tag) names the encoder delay and padding.
    static let mp3 = [Encoding.f32, .s16].map {
        LossyCase(type: kAudioFileMP3Type, major: .mpeg, subtype: .mpegLayerIII, encoding: $0, rate: 44100, lengthTolerance: 1152)
    }

    // The encoders are optional parts of libsndfile: without one, its tests are skipped (and
    // say why) rather than passing without having run.
    @Test(.enabled(if: SoundFile.isAvailable(.ogg, .vorbis), "this libsndfile has no Vorbis encoder"), arguments: vorbis)
    func vorbisDecodesToTheSignalWritten(_ lossy: LossyCase) throws { try checkLossy(lossy) }

    @Test(.enabled(if: SoundFile.isAvailable(.ogg, .opus), "this libsndfile has no Opus encoder"), arguments: opus)
    func opusDecodesToTheSignalWritten(_ lossy: LossyCase) throws { try checkLossy(lossy) }

    @Test(.enabled(if: SoundFile.isAvailable(.mpeg, .mpegLayerIII), "this libsndfile has no MP3 encoder"), arguments: mp3)
    func mp3DecodesToTheSignalWritten(_ lossy: LossyCase) throws { try checkLossy(lossy) }

    /// Lossy files decode to audio of the right length and shape: a stereo sine at -6 dBFS
    /// comes back with the same level and a correlation above 0.95 once aligned.
    private func checkLossy(_ lossy: LossyCase) throws {
        let url = scratch.url("lossy")
        let frames = Int(lossy.rate)
        let format = lossy.encoding.format(channels: 2, rate: lossy.rate, bigEndian: false)
        let original = (0..<frames * 2).map { index -> Double in
            let frame = Double(index / 2), frequency = index % 2 == 0 ? 440.0 : 660.0
            return 0.5 * sin(2 * .pi * frequency * frame / lossy.rate)
        }
        var bytes: [UInt8] = []
        for value in original {
            if lossy.encoding == .f32 {
                withUnsafeBytes(of: Float(value).bitPattern.littleEndian) { bytes += $0 }
            } else {
                withUnsafeBytes(of: Int16(value * 32767).littleEndian) { bytes += $0 }
            }
        }
        let (created, writer) = AF.create(url, lossy.type, format)
        expectStatus(created, noErr, "create")
        guard let writer else { return }
        // In several writes, as a recording would.
        for chunk in 0..<10 {
            let size = bytes.count / 10
            expectStatus(AF.write(writer, Array(bytes[chunk * size..<(chunk + 1) * size]), at: Int64(chunk * frames / 10),
                                  bytesPerPacket: Int(format.mBytesPerPacket)).0, noErr, "write \(chunk)")
        }
        expectStatus(AudioFileClose(writer), noErr, "close")

        let (opened, file) = AF.open(url)
        expectStatus(opened, noErr, "open")
        guard let file else { return }
        defer { AudioFileClose(file) }
        #expect(AF.property(file, kAudioFilePropertyFileFormat, UInt32.self).1 == lossy.type)
        #expect(AF.property(file, kAudioFilePropertyBitRate, UInt32.self).1.map { $0 > 8000 && $0 < 1_000_000 } == true)
        let samples = lossy.type == kAudioFileMP3Type ? try mp3Packets(file, lossy) : try decodedPCM(file, lossy)
        #expect(abs(samples.count / 2 - frames) <= lossy.lengthTolerance, "\(samples.count / 2) frames decoded, \(frames) written")

        // Align on the best lag (codec delay), then compare level and shape per channel.
        let lag = bestLag(original, samples)
        let best = correlation(original, samples, lag: lag)
        #expect(best > 0.95, "correlation \(best) at lag \(lag)")
        let level = rms(samples) / rms(original)
        #expect(level > 0.8 && level < 1.2, "level ratio \(level)")
    }

    /// Ogg files open as the linear PCM libsndfile decodes them to: native Float32, one frame a packet.
    private func decodedPCM(_ file: AudioFileID, _ lossy: LossyCase) throws -> [Double] {
        let decoded = try #require(AF.dataFormat(file))
        #expect(decoded.matches(Encoding.f32.format(channels: 2, rate: lossy.rate, bigEndian: false)), "decoded as native Float32: \(decoded)")
        let packets = Int(AF.property(file, kAudioFilePropertyAudioDataPacketCount, UInt64.self).1 ?? 0)
        expectStatus(AF.property(file, kAudioFilePropertyDataOffset, Int64.self).0, kAudioFileUnsupportedPropertyError, "DataOffset")
        let (read, data) = AF.read(file, from: 0, packets: packets + 10, bytesPerPacket: 8)
        expectStatus(read, kAudioFileEndOfFileError, "read to the end")
        let samples = data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)).map(Double.init) }
        #expect(samples.count == packets * 2)
        return samples
    }

    /// MP3 files open as their '.mp3' packets, as on Apple platforms: read with their
    /// descriptions, decoded by an AudioConverter, the encoder delay and padding the packet
    /// table names left out (what a player trims), as interleaved samples.
    private func mp3Packets(_ file: AudioFileID, _ lossy: LossyCase) throws -> [Double] {
        let format = try #require(AF.dataFormat(file))
        #expect(format.mFormatID == kAudioFormatMPEGLayer3 && format.mFramesPerPacket == 1152 && format.mChannelsPerFrame == 2)
        #expect((AF.property(file, kAudioFilePropertyDataOffset, Int64.self).1 ?? 0) > 0, "the first frame's offset")
        let table = try #require(AF.property(file, kAudioFilePropertyPacketTableInfo, AudioFilePacketTableInfo.self).1)
        let count = Int(AF.property(file, kAudioFilePropertyAudioDataPacketCount, UInt64.self).1 ?? 0)
        #expect(Int64(count) * 1152 == table.mNumberValidFrames + Int64(table.mPrimingFrames) + Int64(table.mRemainderFrames))
        let maximum = Int(AF.property(file, kAudioFilePropertyMaximumPacketSize, UInt32.self).1 ?? 0)
        var data = [UInt8](repeating: 0, count: maximum * count)
        var descriptions = [AudioStreamPacketDescription](repeating: .init(), count: count)
        var bytes = UInt32(data.count)
        var packets = UInt32(count)
        let status = AudioFileReadPacketData(file, false, &bytes, &descriptions, 0, &packets, &data)
        #expect(status == noErr || status == kAudioFileEndOfFileError)
        #expect(Int(packets) == count)
        let pcm = Encoding.f32.format(channels: 2, rate: lossy.rate, bigEndian: false)
        let decoded = try AudioConverterTests.decode(Array(data.prefix(Int(bytes))),
                                                     packets: descriptions.prefix(Int(packets)).map { (Int($0.mStartOffset), Int($0.mDataByteSize)) },
                                                     cookie: [], from: format, to: pcm)
        let floats = decoded.withUnsafeBytes { Array($0.bindMemory(to: Float.self)).map(Double.init) }
        #expect(floats.count == count * 1152 * 2, "every packet decodes to 1152 frames")
        let start = Int(table.mPrimingFrames) * 2
        return Array(floats[start..<min(floats.count, start + Int(table.mNumberValidFrames) * 2)])
    }

    /// The lag (frames) in -2000...2000 at which `decoded` best matches `original`: a coarse
    /// search on a sparse subset of frames, then a fine one around the best coarse lag.
    private func bestLag(_ original: [Double], _ decoded: [Double]) -> Int {
        let coarse = stride(from: -2000, through: 2000, by: 4).max {
            correlation(original, decoded, lag: $0, step: 97) < correlation(original, decoded, lag: $1, step: 97)
        }!
        return (coarse - 4...coarse + 4).max { correlation(original, decoded, lag: $0) < correlation(original, decoded, lag: $1) }!
    }

    /// Pearson correlation of two interleaved stereo signals, `decoded` shifted by `lag` frames,
    /// over every `step`th frame.
    private func correlation(_ original: [Double], _ decoded: [Double], lag: Int, step: Int = 3) -> Double {
        var sum = 0.0, a2 = 0.0, b2 = 0.0
        let frames = min(original.count, decoded.count) / 2
        for frame in stride(from: 2000, to: frames - 2000, by: step) {
            for channel in 0..<2 {
                let a = original[frame * 2 + channel], b = decoded[(frame + lag) * 2 + channel]
                sum += a * b
                a2 += a * a
                b2 += b * b
            }
        }
        return sum / max((a2 * b2).squareRoot(), 1e-12)
    }

    private func rms(_ values: [Double]) -> Double {
        (values.reduce(0) { $0 + $1 * $1 } / Double(max(values.count, 1))).squareRoot()
    }
}
