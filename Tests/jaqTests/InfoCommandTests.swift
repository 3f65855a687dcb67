import AudioToolbox
import Foundation
import JackTestSupport
import RefereeTesting
import SoundFile
import Testing

/// `jaq info`, run as a user runs it: the built binary, its output and its exit status.
@Suite(.refereeCrashesAreKnownIssues) final class InfoCommandTests {
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("jaq-info-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    /// The jaq binary built next to this test binary.
    private var jaq: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("jaq").path
    }

    /// Runs jaq; its output here is a few kilobytes at most, well within a pipe's buffer.
    private func run(_ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, stdout: String, stderr: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: jaq)
        process.arguments = arguments
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        let (out, err) = (Pipe(), Pipe())
        (process.standardOutput, process.standardError) = (out, err)
        try process.run()
        process.waitUntilExit()
        let text = { (pipe: Pipe) in String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) }
        return (process.terminationStatus, text(out), text(err))
    }

    /// A 16-bit big-endian stereo AIFF: left peaks at full scale (-32768), right at half.
    private func makeTake(_ name: String, frames: Int = 48000) throws -> String {
        let url = directory.appendingPathComponent(name)
        var format = AudioStreamBasicDescription(
            mSampleRate: 48000, mFormatID: kAudioFormatLinearPCM,
            mFormatFlags: kAudioFormatFlagIsBigEndian | kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsPacked,
            mBytesPerPacket: 4, mFramesPerPacket: 1, mBytesPerFrame: 4, mChannelsPerFrame: 2, mBitsPerChannel: 16, mReserved: 0)
        var file: AudioFileID?
        try #require(AudioFileCreateWithURL(url as CFURL, kAudioFileAIFFType, &format, .eraseFile, &file) == noErr)
        var samples = [Int16](repeating: 0, count: frames * 2)
        samples[200] = -32768
        samples[301] = 16384
        samples[303] = -100
        let bigEndian = samples.map(\.bigEndian)
        var packets = UInt32(frames)
        try #require(bigEndian.withUnsafeBytes { AudioFileWritePackets(file!, false, UInt32($0.count), nil, 0, &packets, $0.baseAddress!) } == noErr)
        AudioFileClose(file!)
        return url.path
    }

    @Test func describesAFile() throws {
        let path = try makeTake("take.aiff")
        let result = try run(["info", path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.isEmpty)
        let expected = """
            \(path)
              container:   AIFF ('AIFF')
              format:      16-bit signed big-endian integer
              sample rate: 48000 Hz
              channels:    2
              frames:      48000
              duration:    1.000 s (00:00:01.000)
              peak:        ch1 0.00 dBFS (1.0000)  ch2 -6.02 dBFS (0.5000)

            """
        #expect(result.stdout == expected)
    }

    /// FFmpeg is opened on first use (CFFmpegLoad): where it cannot be, a compressed file gets one
    /// line naming why, and PCM files are described as ever.
    @Test func withoutFFmpegACompressedFileGetsOneLineAndPCMStillWorks() throws {
        let m4a = directory.appendingPathComponent("tone.m4a").path
        let made = try runReferee(["/usr/bin/ffmpeg", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:duration=1",
                                   "-c:a", "aac", m4a], environment: ProcessInfo.processInfo.environment, timeout: 60)
        try #require(made.status == 0, "ffmpeg: \(made.error)")
        let aiff = try makeTake("take.aiff")
        let missing = ["JAQ_FFMPEG_LIBRARY": "/nonexistent/libavformat.so.59"]
        let result = try run(["info", aiff, m4a], environment: missing)
        #expect(result.status == 1)
        #expect(result.stdout.contains("16-bit signed big-endian integer"), "\(result.stdout)")
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].hasPrefix("jaq info: \(m4a): ") && lines[0].contains("cannot open FFmpeg (/nonexistent/libavformat.so.59)"),
                "\(result.stderr)")
        // With FFmpeg, the same file is AAC.
        let found = try run(["info", m4a])
        #expect(found.status == 0 && found.stdout.contains("AAC-LC"), "\(found.stdout)\(found.stderr)")
    }

    @Test func jsonIsAnArrayForOneFileAndForSeveral() throws {
        let take = try makeTake("a.aiff"), other = try makeTake("b.aiff", frames: 24000)
        let one = try run(["info", "--json", take])
        #expect(one.status == 0)
        let list = try #require(try JSONSerialization.jsonObject(with: Data(one.stdout.utf8)) as? [[String: Any]])
        #expect(list.count == 1)
        let object = try #require(list.first)
        #expect(object["frames"] as? Int == 48000)
        #expect(object["sampleRate"] as? Double == 48000)
        #expect(object["channels"] as? Int == 2)
        #expect(object["fileType"] as? String == "AIFF")
        #expect(object["formatID"] as? String == "lpcm")
        #expect(object["bitsPerChannel"] as? Int == 16)
        #expect(object["duration"] as? Double == 1.0)
        let peaks = try #require(object["peaks"] as? [[String: Any]])
        #expect(peaks.count == 2)
        #expect(peaks[0]["linear"] as? Double == 1.0 && peaks[0]["dBFS"] as? Double == 0.0)
        #expect(peaks[1]["linear"] as? Double == 0.5)

        let several = try run(["info", "--json", take, other])
        let array = try #require(try JSONSerialization.jsonObject(with: Data(several.stdout.utf8)) as? [[String: Any]])
        #expect(array.map { $0["frames"] as? Int } == [48000, 24000])
    }

    @Test func aFileThatCannotBeReadGetsOneLineAndTheOthersStillPrint() throws {
        let take = try makeTake("good.aiff")
        let text = directory.appendingPathComponent("notes.txt").path
        try Data("not audio, just words in a file that is long enough".utf8).write(to: URL(fileURLWithPath: text))
        let missing = directory.appendingPathComponent("missing.wav").path
        let result = try run(["info", missing, take, text])
        #expect(result.status == 1)
        #expect(result.stderr == """
            jaq info: \(missing): no such file (-43)
            jaq info: \(text): not an audio file of a type jaq reads ('typ?')

            """)
        #expect(result.stdout.hasPrefix(take + "\n"))
        #expect(result.stdout.contains("frames:      48000"))
    }

    @Test func silenceHasNoDecibelValue() throws {
        let url = directory.appendingPathComponent("silence.wav")
        var format = AudioStreamBasicDescription(
            mSampleRate: 8000, mFormatID: kAudioFormatLinearPCM, mFormatFlags: kAudioFormatFlagIsFloat | kAudioFormatFlagIsPacked,
            mBytesPerPacket: 4, mFramesPerPacket: 1, mBytesPerFrame: 4, mChannelsPerFrame: 1, mBitsPerChannel: 32, mReserved: 0)
        var file: AudioFileID?
        try #require(AudioFileCreateWithURL(url as CFURL, kAudioFileWAVEType, &format, .eraseFile, &file) == noErr)
        var packets: UInt32 = 100
        let zeros = [Float](repeating: 0, count: 100)
        _ = zeros.withUnsafeBytes { AudioFileWritePackets(file!, false, 400, nil, 0, &packets, $0.baseAddress!) }
        AudioFileClose(file!)
        let text = try run(["info", url.path])
        #expect(text.stdout.contains("format:      32-bit little-endian float"))
        #expect(text.stdout.contains("peak:        ch1 -inf dBFS (0.0000)"))
        let json = try run(["info", "--json", url.path])
        #expect(json.stdout.contains("\"dBFS\" : null"))
    }

    @Test func helpHasExamples() throws {
        let result = try run(["info", "--help"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("Examples:"))
        #expect(result.stdout.contains("jaq info --json"))
        let root = try run(["--help"])
        #expect(root.stdout.contains("info"))
    }

    /// A container Apple has no type ID for (FileFormat 0) is named as libsndfile names it,
    /// through jaq's kAudioFilePropertyJaqContainerName; files of Apple's types have no such
    /// property ('pty?').
    @Test func aContainerAppleHasNoIDForIsNamedAsLibsndfileNamesIt() throws {
        let voc = directory.appendingPathComponent("old.voc").path
        let file = try SoundFile(path: voc, mode: .write,
                                 format: SoundFile.Info(sampleRate: 8000, channelCount: 1, format: SoundFile.Format(.voc, .pcm16)))
        let samples = [Int16](repeating: 16384, count: 800)
        _ = samples.withUnsafeBufferPointer { file.writeFrames($0) }
        try file.close()
        let text = try run(["info", voc])
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("container:   VOC"), "\(text.stdout)")
        #expect(text.stdout.contains("ch1 -6.02 dBFS (0.5000)"), "\(text.stdout)")

        let wav = directory.appendingPathComponent("new.wav")
        var format = AudioStreamBasicDescription(
            mSampleRate: 8000, mFormatID: kAudioFormatLinearPCM, mFormatFlags: kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsPacked,
            mBytesPerPacket: 2, mFramesPerPacket: 1, mBytesPerFrame: 2, mChannelsPerFrame: 1, mBitsPerChannel: 16, mReserved: 0)
        var made: AudioFileID?
        #expect(AudioFileCreateWithURL(wav as CFURL, kAudioFileWAVEType, &format, .eraseFile, &made) == noErr)
        var size: UInt32 = 0
        #expect(AudioFileGetPropertyInfo(made!, kAudioFilePropertyJaqContainerName, &size, nil) == kAudioFileUnsupportedPropertyError)
        AudioFileClose(made!)
    }
}
