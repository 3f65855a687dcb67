import AudioToolbox
import Foundation
import Glibc
import JackTestSupport
import Testing

/// Inputs that are not audio files at all, calls with formats out of every range, samples no
/// encoder takes, and the deterministic fuzzer: each returns result codes, never a signal.
@Suite struct HostileInputTests {
    let scratch: Scratch
    init() throws { scratch = try Scratch() }

    @Test func nonFilesAndEmptyAndTruncatedFiles() throws {
        let empty = scratch.path("empty.wav")
        _ = FileManager.default.createFile(atPath: empty, contents: Data())
        let fifo = scratch.path("fifo.wav")
        #expect(mkfifo(fifo, 0o600) == 0)
        // A WAVE file cut inside its fmt chunk, and one whose sizes say 4 GiB.
        let whole = scratch.path("whole.wav")
        #expect(writeWAVE(whole, frames: 100) == noErr)
        var bytes = try Data(contentsOf: URL(fileURLWithPath: whole))
        try bytes.prefix(30).write(to: URL(fileURLWithPath: scratch.path("cut.wav")))
        bytes.replaceSubrange(4..<8, with: [0xFF, 0xFF, 0xFF, 0xFF])
        bytes.replaceSubrange(40..<44, with: [0xF0, 0xFF, 0xFF, 0xFF])
        try bytes.write(to: URL(fileURLWithPath: scratch.path("huge.wav")))

        // A FIFO with no writer would block an open without O_NONBLOCK: the timeout catches a hang.
        let paths = [empty, scratch.path, fifo, "/dev/zero", "/dev/null", scratch.path("cut.wav"), scratch.path("huge.wav")]
        let output = try FileFuzzProcess.run(["walk"] + paths, timeout: 60)
        let expected = ["empty.wav": "typ?", (scratch.path as NSString).lastPathComponent: "!pth", "fifo.wav": "!pth",
                        "zero": "!pth", "null": "!pth", "cut.wav": "dta?", "huge.wav": "0"]
        for (name, open) in expected {
            let results = try FileFuzzProcess.results(output, for: name)
            #expect(results["open"] == open, "\(name)")
            expectOnlyResultCodes(results, name)
        }
        // The 4 GiB the header claims are cut to the 100 frames the file holds.
        let huge = try FileFuzzProcess.results(output, for: "huge.wav")
        #expect(huge["pcnt"] == "100")
        #expect(huge["packets"] == "100")
        var status = stat()
        #expect(stat(fifo, &status) == 0 && status.st_mode & S_IFMT == S_IFIFO, "the FIFO is still there")
    }

    @Test func eraseFileLeavesFIFOsAndDevicesAlone() throws {
        let fifo = scratch.path("take.wav")
        #expect(mkfifo(fifo, 0o600) == 0)
        var format = stereo16
        var file: AudioFileID?
        let status = AudioFileCreateWithURL(URL(fileURLWithPath: fifo), kAudioFileWAVEType, &format, .eraseFile, &file)
        #expect(status == kAudio_BadFilePathError)
        #expect(file == nil)
        var info = stat()
        #expect(stat(fifo, &info) == 0 && info.st_mode & S_IFMT == S_IFIFO, "EraseFile deleted the FIFO")
        // A symbolic link to /dev/null: the node it names is not erased either.
        let link = scratch.path("null.wav")
        #expect(symlink("/dev/null", link) == 0)
        #expect(AudioFileCreateWithURL(URL(fileURLWithPath: link), kAudioFileWAVEType, &format, .eraseFile, &file) == kAudio_BadFilePathError)
        #expect(stat("/dev/null", &info) == 0 && info.st_mode & S_IFMT == S_IFCHR)
        #expect(lstat(link, &info) == 0 && info.st_mode & S_IFMT == S_IFLNK)
    }

    @Test func hostileFormatsAreUnsupportedFormats() throws {
        let output = try FileFuzzProcess.run(["formats", scratch.path])
        let lines = output.split(separator: "\n").filter { !$0.hasPrefix("random: ") }
        #expect(lines.count >= 18)
        for line in lines {
            let name = String(line.prefix { $0 != ":" })
            let results = try FileFuzzProcess.results(output, for: name)
            #expect(results == ["output": "fmt?", "input": "fmt?", "file": "fmt?"], "\(line)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path).isEmpty, "a refused format left a file")
        // 2000 random ASBDs: 'fmt?', or for the few a queue accepts noErr (a playback queue is
        // made with no server) or kAudioQueueErr_InvalidDevice (a recording queue is not), or
        // noErr for the files that are valid WAVE formats.
        let random = try FileFuzzProcess.results(output, for: "random")
        #expect(random.values.compactMap { Int($0) }.reduce(0, +) == 6000, "\(random)")
        #expect(Set(random.keys).isSubset(of: ["fmt?", "-66680", "0"]), "\(random)")
    }

    @Test func nonFiniteSamplesReachLossyEncodersAsFiniteOnes() throws {
        // Was: libmp3lame aborts ("calc_energy: Assertion `el >= 0'") on NaN and infinity.
        let output = try FileFuzzProcess.run(["nonfinite", scratch.path])
        for name in ["mp3", "ogg", "opus"] {
            let results = try FileFuzzProcess.results(output, for: name)
            #expect(results["write"] == "0", "\(name)")
            #expect(results["open"] == "0", "\(name)")
            #expect(results["finite"] == "yes", "\(name)")
            // FLT_MAX is clamped to +24 dBFS (16.0); a codec may overshoot that a little.
            #expect((results["peak"].flatMap { Double($0) } ?? .infinity) < 24, "\(name): peak \(results["peak"] ?? "-")")
            #expect((results["frames"].flatMap { Int($0) } ?? 0) > 0, "\(name)")
        }
    }

    /// The deterministic fuzzer, briefly (make fuzz runs it for 10^5 mutants): mutants of
    /// seed files of every container and of the crashers above. A crash or hang saves the
    /// mutant; it should then join Fixtures/ with its fix.
    @Test func mutatedFilesReturnResultCodes() throws {
        let crashes = scratch.path("crashes")
        let output = try FileFuzzProcess.run(["fuzz", "--seed", "19", "--iterations", "600", "--corpus", FileFuzzProcess.fixtures.path,
                                              "--crashes", crashes], timeout: 300)
        #expect(output.contains("mutants=600"), "\(output)")
        let saved = (try? FileManager.default.contentsOfDirectory(atPath: crashes))?.filter { !$0.hasPrefix(".") } ?? []
        #expect(saved.isEmpty, "crashing inputs: \(saved)")
        // libsndfile writes an SD2 resource fork as "._" in the current directory, which then
        // stops it recognising MP3 files without an ID3 tag: nothing may leave one behind.
        #expect(!FileManager.default.fileExists(atPath: FileManager.default.currentDirectoryPath + "/._"))
    }

    /// The stream fuzzer, briefly (make fuzz-streams runs it for 10^5 mutants): the same
    /// mutants parsed by AudioFileStream in random pieces with discontinuities and seeks; every
    /// call returns one of Apple's AudioFileStream codes and no packet lies outside its bytes.
    @Test func mutatedStreamsReturnResultCodes() throws {
        let crashes = scratch.path("stream-crashes")
        let output = try FileFuzzProcess.run(["stream", "--seed", "23", "--iterations", "1500", "--corpus", FileFuzzProcess.fixtures.path,
                                              "--crashes", crashes], timeout: 300)
        #expect(output.contains("streams=1500") && output.contains("odd=0") && output.contains("parse=0:"), "\(output)")
        let saved = (try? FileManager.default.contentsOfDirectory(atPath: crashes))?.filter { !$0.hasPrefix(".") } ?? []
        #expect(saved.isEmpty, "crashing or odd streams: \(saved)")
    }

    private var stereo16: AudioStreamBasicDescription {
        AudioStreamBasicDescription(
            mSampleRate: 44100, mFormatID: kAudioFormatLinearPCM, mFormatFlags: kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsPacked,
            mBytesPerPacket: 4, mFramesPerPacket: 1, mBytesPerFrame: 4, mChannelsPerFrame: 2, mBitsPerChannel: 16, mReserved: 0)
    }

    private func writeWAVE(_ path: String, frames: Int) -> OSStatus {
        var format = stereo16
        var file: AudioFileID?
        let status = AudioFileCreateWithURL(URL(fileURLWithPath: path), kAudioFileWAVEType, &format, .eraseFile, &file)
        guard status == noErr, let file else { return status }
        let samples = [Int16](repeating: 1000, count: frames * 2)
        var packets = UInt32(frames)
        let written = AudioFileWritePackets(file, false, UInt32(frames * 4), nil, 0, &packets, samples)
        let closed = AudioFileClose(file)
        return written == noErr ? closed : written
    }
}
