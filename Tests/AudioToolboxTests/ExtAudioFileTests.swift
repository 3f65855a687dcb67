import AudioToolbox
import Foundation
import Testing
import JackTestSupport

/// Extended Audio File Services: round trips through a client format, encoder priming trimmed
/// on reading and recorded on writing (ffmpeg as the referee), exact Seek/Tell, result codes.
@Suite(.refereeCrashesAreKnownIssues) struct ExtAudioFileTests {
    let scratch: Scratch
    init() throws { scratch = try Scratch() }

    struct PCMCase: Sendable, CustomTestStringConvertible {
        let type: AudioFileTypeID
        let bits: Int
        let float: Bool
        let nonInterleavedClient: Bool
        var testDescription: String { "\(fourCC(type)) \(float ? "f" : "i")\(bits) \(nonInterleavedClient ? "non-interleaved" : "interleaved") client" }
    }

    static let pcmCases: [PCMCase] = [kAudioFileWAVEType, kAudioFileCAFType, kAudioFileAIFFType].flatMap { type in
        [(16, false), (24, false), (32, true)].flatMap { bits, float in
            [false, true].compactMap { ni in type == kAudioFileAIFFType && float ? nil : PCMCase(type: type, bits: bits, float: float, nonInterleavedClient: ni) }
        }
    }

    /// Linear PCM written and read through a client format of the same samples (interleaved
    /// or not) comes back bit for bit, with its frame count.
    @Test(arguments: pcmCases)
    func linearPCMRoundTripsBitExactly(_ c: PCMCase) throws {
        // An even count: ffmpeg reads an AIFF's (correct) pad byte after odd-sized 24-bit data as
        // a short packet and says so; sox writes no pad byte.
        let channels = 3, frames = 10_008
        let url = scratch.url("pcm." + (c.type == kAudioFileWAVEType ? "wav" : c.type == kAudioFileCAFType ? "caf" : "aiff"))
        var fileFormat = EAF.pcm(44100, channels: channels, float: c.float, bits: c.bits)
        if c.type == kAudioFileAIFFType { fileFormat.mFormatFlags |= kAudioFormatFlagIsBigEndian }
        let client = EAF.pcm(44100, channels: channels, float: c.float, bits: c.bits, nonInterleaved: c.nonInterleavedClient)
        let sampleBytes = c.bits / 8
        var interleaved = [UInt8]()
        var noise: UInt32 = 99
        for _ in 0..<(frames * channels) {
            noise = noise &* 1_664_525 &+ 1_013_904_223
            if c.float {
                withUnsafeBytes(of: Float(Int32(bitPattern: noise)) / Float(Int32.max)) { interleaved += $0 }
            } else {
                withUnsafeBytes(of: noise.littleEndian) { interleaved += $0.prefix(sampleBytes) }
            }
        }
        let planes = c.nonInterleavedClient ? EAF.split(interleaved, channels: channels, sampleBytes: sampleBytes) : [interleaved]
        let (created, out) = EAF.create(url, c.type, fileFormat)
        try #require(created == noErr)
        expectStatus(EAF.setClient(out, client), noErr, "client format")
        expectStatus(EAF.write(out, planes: planes, client: client, chunk: 999), noErr, "write")
        #expect(EAF.property(out, kExtAudioFileProperty_FileLengthFrames, Int64.self).1 == Int64(frames))
        expectStatus(ExtAudioFileDispose(out!), noErr, "dispose")

        let (opened, input) = EAF.open(url)
        try #require(opened == noErr)
        defer { ExtAudioFileDispose(input!) }
        #expect(EAF.property(input, kExtAudioFileProperty_FileLengthFrames, Int64.self).1 == Int64(frames))
        expectStatus(EAF.setClient(input, client), noErr, "client format")
        let (status, read) = EAF.read(input, client: client, chunk: 1500)
        expectStatus(status, noErr, "read")
        #expect(read == planes, "the samples come back exactly")
        let ffmpeg = try runReferee("/usr/bin/ffmpeg", ["-v", "error", "-i", url.path, "-f", "null", "-"])
        #expect(ffmpeg.status == 0 && ffmpeg.stderr.isEmpty, "ffmpeg decodes it without a message: \(ffmpeg.stderr)")
    }

    /// A mono client flagged non-interleaved is one buffer, as Apple's is.
    @Test func monoNonInterleavedClient() throws {
        let url = scratch.url("mono.caf")
        let client = EAF.pcm(22050, channels: 1, float: true, bits: 32, nonInterleaved: true)
        let samples = EAF.floatBytes(EAF.floats(frames: 3000, channels: 1))
        let (created, out) = EAF.create(url, kAudioFileCAFType, EAF.pcm(22050, channels: 1, float: true, bits: 32))
        try #require(created == noErr)
        expectStatus(EAF.setClient(out, client), noErr)
        expectStatus(EAF.write(out, planes: [samples], client: client), noErr)
        expectStatus(ExtAudioFileDispose(out!), noErr)
        let (_, input) = EAF.open(url)
        defer { ExtAudioFileDispose(input!) }
        expectStatus(EAF.setClient(input, client), noErr)
        let (status, read) = EAF.read(input, client: client)
        expectStatus(status, noErr)
        #expect(read == [samples])
    }

    /// A float client reads and writes an int16 file: int16 → float → int16 is exact.
    @Test func floatClientOfAnInt16FileIsExact() throws {
        let url = scratch.url("i16.wav")
        let samples = EAF.floats(frames: 5000, channels: 2).map { ($0 * 32768).rounded() / 32768 }
        let (created, out) = EAF.create(url, kAudioFileWAVEType, EAF.pcm(48000, channels: 2))
        try #require(created == noErr)
        let floatClient = EAF.pcm(48000, channels: 2, float: true, bits: 32)
        expectStatus(EAF.setClient(out, floatClient), noErr)
        expectStatus(EAF.write(out, planes: [EAF.floatBytes(samples)], client: floatClient), noErr)
        ExtAudioFileDispose(out!)
        let (_, input) = EAF.open(url)
        defer { ExtAudioFileDispose(input!) }
        let (status, read) = EAF.read(input, client: EAF.pcm(48000, channels: 2))
        expectStatus(status, noErr)
        #expect(read[0] == EAF.int16Bytes(samples))
    }

    /// ALAC in CAF and MPEG-4 is lossless: int16 and int24 come back exactly, with the frame
    /// count; ffmpeg decodes the file without a message and to the same frame count.
    @Test(arguments: [(kAudioFileCAFType, "caf", 16), (kAudioFileM4AType, "m4a", 16), (kAudioFileCAFType, "caf", 24)])
    func alacRoundTripsBitExactly(_ type: AudioFileTypeID, _ ext: String, _ bits: Int) throws {
        let url = scratch.url("alac.\(ext)")
        let frames = 30_011, channels = 2
        let client = EAF.pcm(44100, channels: channels, bits: bits)
        var bytes = [UInt8]()
        for (i, s) in EAF.floats(frames: frames, channels: channels, peak: 0.7).enumerated() {
            let v = Int32((s * 8_388_607).rounded()) ^ Int32(i & 1)
            withUnsafeBytes(of: bits == 16 ? Int32(v >> 8).littleEndian : v.littleEndian) { bytes += $0.prefix(bits / 8) }
        }
        let flags: AudioFormatFlags = bits == 16 ? 1 : 3  // kAppleLosslessFormatFlag_16BitSourceData / _24BitSourceData
        let (created, out) = EAF.create(url, type, EAF.compressed(kAudioFormatAppleLossless, 44100, channels: channels, flags: flags))
        try #require(created == noErr)
        expectStatus(EAF.setClient(out, client), noErr, "client format")
        expectStatus(EAF.write(out, planes: [bytes], client: client, chunk: 3000), noErr, "write")
        expectStatus(ExtAudioFileDispose(out!), noErr, "dispose")

        let (opened, input) = EAF.open(url)
        try #require(opened == noErr)
        defer { ExtAudioFileDispose(input!) }
        #expect(EAF.property(input, kExtAudioFileProperty_FileLengthFrames, Int64.self).1 == Int64(frames))
        expectStatus(EAF.setClient(input, client), noErr)
        let (status, read) = EAF.read(input, client: client)
        expectStatus(status, noErr)
        #expect(read[0].count == bytes.count, "\(read[0].count / (channels * bits / 8)) frames read of \(frames)")
        #expect(read[0] == bytes, "ALAC is lossless")
        try expectFFmpegDecodes(url, frames: frames, channels: channels)
    }

    /// ffmpeg decodes the file without a message, to `frames` frames.
    func expectFFmpegDecodes(_ url: URL, frames: Int?, channels: Int, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let check = try runReferee("/usr/bin/ffmpeg", ["-v", "error", "-i", url.path, "-f", "null", "-"])
        #expect(check.status == 0 && check.stderr.isEmpty, "ffmpeg: \(check.stderr)", sourceLocation: sourceLocation)
        guard let frames else { return }
        let decoded = try runReferee("/usr/bin/ffmpeg", ["-v", "error", "-i", url.path, "-f", "s16le", "-"])
        #expect(decoded.stdout.count / (2 * channels) == frames, "ffmpeg decodes \(decoded.stdout.count / (2 * channels)) frames", sourceLocation: sourceLocation)
    }
}

func fourCC(_ code: UInt32) -> String {
    String(decoding: [24, 16, 8, 0].map { UInt8((code >> $0) & 0xFF) }, as: UTF8.self)
}
