import AudioToolbox
import Foundation
import Testing
import JackTestSupport

/// AAC through ExtAudioFile: the encoder's priming and remainder are recorded on writing and
/// trimmed on reading (jaq's files and ffmpeg's), and Seek lands on its frame exactly.
@Suite(.refereeCrashesAreKnownIssues) struct ExtAudioFileAACTests {
    let scratch: Scratch
    init() throws { scratch = try Scratch() }

    static let floatClient = EAF.pcm(44100, channels: 2, float: true, bits: 32)

    /// Writes `samples` (interleaved stereo float) as AAC at 192 kbit/s.
    func writeAAC(_ url: URL, _ type: AudioFileTypeID, _ samples: [Float]) throws {
        let (created, out) = EAF.create(url, type, EAF.compressed(kAudioFormatMPEG4AAC, 44100, channels: 2))
        try #require(created == noErr)
        expectStatus(EAF.setClient(out, Self.floatClient), noErr, "client format")
        var converter: AudioConverterRef?
        var size = UInt32(MemoryLayout<AudioConverterRef?>.size)
        expectStatus(ExtAudioFileGetProperty(out!, kExtAudioFileProperty_AudioConverter, &size, &converter), noErr, "converter")
        var bitRate: UInt32 = 192_000
        expectStatus(AudioConverterSetProperty(converter!, kAudioConverterEncodeBitRate, 4, &bitRate), noErr, "bit rate")
        var config: UnsafeRawPointer? = nil
        expectStatus(ExtAudioFileSetProperty(out!, kExtAudioFileProperty_ConverterConfig, UInt32(MemoryLayout<UnsafeRawPointer?>.size), &config), noErr)
        expectStatus(ExtAudioFileWriteAsync(out!, 0, nil), noErr, "the priming call")
        expectStatus(EAF.write(out, planes: [EAF.floatBytes(samples)], client: Self.floatClient, chunk: 1234, async: true), noErr, "write")
        expectStatus(ExtAudioFileDispose(out!), noErr, "dispose")
    }

    func readAll(_ url: URL) throws -> (length: Int64?, samples: [Float]) {
        let (opened, input) = EAF.open(url)
        try #require(opened == noErr)
        defer { ExtAudioFileDispose(input!) }
        expectStatus(EAF.setClient(input, Self.floatClient), noErr, "client format")
        let length = EAF.property(input, kExtAudioFileProperty_FileLengthFrames, Int64.self).1
        let (status, planes) = EAF.read(input, client: Self.floatClient, chunk: 3000)
        expectStatus(status, noErr, "read")
        return (length, EAF.floatsOf(planes[0]))
    }

    /// What jaq writes reads back with exactly the source's frames, in line (lag 0), ≥ 20 dB;
    /// ffmpeg decodes it without a message, to the same frame count.
    @Test(arguments: [(kAudioFileM4AType, "m4a"), (kAudioFileCAFType, "caf")])
    func aacWrittenReadsBackExactlyTheSourceFrames(_ type: AudioFileTypeID, _ ext: String) throws {
        let frames = 100_003
        let source = EAF.floats(frames: frames, channels: 2)
        let url = scratch.url("written.\(ext)")
        try writeAAC(url, type, source)
        let (length, decoded) = try readAll(url)
        #expect(length == Int64(frames), "FileLengthFrames")
        #expect(decoded.count == source.count, "\(decoded.count / 2) frames read of \(frames)")
        let (lag, snr) = EAF.alignment(source, decoded, channels: 2)
        #expect(lag == 0, "lag")
        #expect(snr >= 20, "SNR \(snr) dB")
        let check = try runReferee("/usr/bin/ffmpeg", ["-v", "error", "-i", url.path, "-f", "null", "-"])
        #expect(check.status == 0 && check.stderr.isEmpty, "ffmpeg: \(check.stderr)")
        if type == kAudioFileM4AType {
            #expect(try Self.ffprobeFrames(url) == frames, "ffprobe's duration_ts: the edit list holds the frames written")
            // ffmpeg 5.1 trims the priming (its decode starts with the signal) but decodes the remainder.
            let ffmpeg = try runReferee("/usr/bin/ffmpeg", ["-v", "error", "-i", url.path, "-f", "f32le", "-"])
            let theirs = ffmpeg.stdout.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
            #expect((frames..<frames + 1024).contains(theirs.count / 2), "ffmpeg decodes \(theirs.count / 2) frames")
            let worst = zip(decoded, theirs).map { abs($0 - $1) }.max() ?? 1
            #expect(worst < 1e-4, "ffmpeg's decode differs by up to \(worst)")
        }
    }

    /// The frames an MPEG-4 file's edit list keeps, as ffprobe reads them (the stream's duration_ts).
    static func ffprobeFrames(_ url: URL) throws -> Int? {
        let probe = try runReferee("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "a:0", "-show_entries", "stream=duration_ts",
                                                        "-of", "default=noprint_wrappers=1:nokey=1", url.path])
        return Int(String(decoding: probe.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// An .m4a ffmpeg made reads as many frames as ffmpeg encoded (its edit list's duration,
    /// ffprobe's duration_ts: 1.37 s of the rate), and says so first; the samples are
    /// ffmpeg's decode of them. (ffmpeg 5.1's own decode goes on through the remainder.)
    @Test(arguments: [44100, 48000])
    func ffmpegsM4AReadsFFmpegsFrameCount(_ rate: Int) throws {
        let url = scratch.url("ffmpeg-\(rate).m4a")
        let made = try runReferee("/usr/bin/ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:duration=1.37:sample_rate=\(rate)",
                                                      "-ac", "2", "-c:a", "aac", "-b:a", "160k", url.path])
        try #require(made.status == 0, "ffmpeg: \(made.stderr)")
        let decoded = try runReferee("/usr/bin/ffmpeg", ["-v", "error", "-i", url.path, "-f", "s16le", "-"])
        let ffmpegFrames = try #require(try Self.ffprobeFrames(url))
        #expect(ffmpegFrames == Int((1.37 * Double(rate)).rounded()), "the source's frames")
        #expect(decoded.stdout.count / 4 >= ffmpegFrames)
        let client = EAF.pcm(Double(rate), channels: 2)
        let (opened, input) = EAF.open(url)
        try #require(opened == noErr)
        defer { ExtAudioFileDispose(input!) }
        expectStatus(EAF.setClient(input, client), noErr)
        #expect(EAF.property(input, kExtAudioFileProperty_FileLengthFrames, Int64.self).1 == Int64(ffmpegFrames))
        let (status, planes) = EAF.read(input, client: client)
        expectStatus(status, noErr)
        #expect(planes[0].count / 4 == ffmpegFrames, "\(planes[0].count / 4) frames read, ffmpeg encoded \(ffmpegFrames)")
        // Same samples as ffmpeg's decode, give or take rounding.
        let ours = planes[0].withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        let theirs = decoded.stdout.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        let worst = zip(ours, theirs).map { abs(Int($0) - Int($1)) }.max() ?? 0
        #expect(worst <= 1, "largest difference from ffmpeg's decode: \(worst)")
    }

    /// Seek lands on the frame asked for (in a packet, across priming), Tell says where reading is.
    @Test func seekAndTellAreExactInAAC() throws {
        let url = scratch.url("seek.m4a")
        let frames = 60_000
        try writeAAC(url, kAudioFileM4AType, EAF.floats(frames: frames, channels: 2))
        let (_, whole) = try readAll(url)
        let (opened, input) = EAF.open(url)
        try #require(opened == noErr)
        defer { ExtAudioFileDispose(input!) }
        expectStatus(EAF.setClient(input, Self.floatClient), noErr)
        for target in [40_000, 0, 1, 1023, 1024, 2047, 5000, 12_345, frames - 100] {
            expectStatus(ExtAudioFileSeek(input!, Int64(target)), noErr, "seek \(target)")
            var told: Int64 = -1
            expectStatus(ExtAudioFileTell(input!, &told), noErr)
            #expect(told == Int64(target))
            let (status, planes) = EAF.read(input, client: Self.floatClient, chunk: 700, limit: 1500)
            expectStatus(status, noErr)
            let got = EAF.floatsOf(planes[0])
            let expected = Array(whole[(target * 2)..<min(whole.count, (target + 1500) * 2)])
            #expect(got.count == expected.count, "frames after seeking to \(target)")
            let worst = zip(got, expected).map { abs($0 - $1) }.max() ?? 0
            #expect(worst < 1e-6, "after seeking to \(target) the samples differ by up to \(worst)")
            expectStatus(ExtAudioFileTell(input!, &told), noErr)
            #expect(told == Int64(target + got.count / 2))
        }
        #expect(ExtAudioFileSeek(input!, Int64(frames + 1)) == kExtAudioFileError_InvalidSeek)
        #expect(ExtAudioFileSeek(input!, -1) == kExtAudioFileError_InvalidSeek)
    }

    /// kExtAudioFileProperty_PacketTable: the trimming in use, and an override (0, 0) that reads
    /// the priming and remainder too; the sizes of the file's and client's packets.
    @Test func packetTableOverrideAndPacketSizes() throws {
        let url = scratch.url("table.caf")
        let frames = 10_000
        try writeAAC(url, kAudioFileCAFType, EAF.floats(frames: frames, channels: 2))
        let (opened, input) = EAF.open(url)
        try #require(opened == noErr)
        defer { ExtAudioFileDispose(input!) }
        expectStatus(EAF.setClient(input, Self.floatClient), noErr)
        let table = try #require(EAF.property(input, kExtAudioFileProperty_PacketTable, AudioFilePacketTableInfo.self).1)
        #expect(table.mNumberValidFrames == Int64(frames) && table.mPrimingFrames == 1024)
        let total = Int64(frames) + Int64(table.mPrimingFrames) + Int64(table.mRemainderFrames)
        #expect(total % 1024 == 0, "whole packets: \(table)")
        #expect(EAF.property(input, kExtAudioFileProperty_ClientMaxPacketSize, UInt32.self).1 == 8)
        #expect((EAF.property(input, kExtAudioFileProperty_FileMaxPacketSize, UInt32.self).1 ?? 0) > 0)
        var everything = AudioFilePacketTableInfo(mNumberValidFrames: 0, mPrimingFrames: 0, mRemainderFrames: 0)
        expectStatus(ExtAudioFileSetProperty(input!, kExtAudioFileProperty_PacketTable, UInt32(MemoryLayout<AudioFilePacketTableInfo>.size), &everything), noErr)
        #expect(EAF.property(input, kExtAudioFileProperty_FileLengthFrames, Int64.self).1 == total)
        let (status, planes) = EAF.read(input, client: Self.floatClient)
        expectStatus(status, noErr)
        #expect(Int64(planes[0].count / 8) == total, "priming and remainder are read too")
        var fileValues = AudioFilePacketTableInfo(mNumberValidFrames: 0, mPrimingFrames: kExtAudioFilePacketTableInfoOverride_UseFileValue,
                                                  mRemainderFrames: kExtAudioFilePacketTableInfoOverride_UseFileValue)
        expectStatus(ExtAudioFileSetProperty(input!, kExtAudioFileProperty_PacketTable, UInt32(MemoryLayout<AudioFilePacketTableInfo>.size), &fileValues), noErr)
        #expect(EAF.property(input, kExtAudioFileProperty_FileLengthFrames, Int64.self).1 == Int64(frames))
    }
}
