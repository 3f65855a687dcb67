import AudioToolbox
import Foundation
import Glibc
import Testing
import JackTestSupport

/// The result codes Audio File Services may return (AudioFile.h, CoreAudioBaseTypes.h), as
/// FileFuzz prints them.
let appleResultCodes: Set<String> = [
    "0", "wht?", "typ?", "fmt?", "pty?", "!siz", "prm?", "optm", "chk?", "off?", "pck?", "dep?", "dta?", "op??",
    "!pth", "-38", "-39", "-40", "-43", "-48", "-54", "-50", "-36", "-34", "-42", "-108",
]

/// The values of a walk that are values, not result codes.
private let valueKeys: Set<String> = ["pcnt", "bcnt", "psze", "pkub", "brat", "edur", "doff", "packets", "frames", "finite", "peak"]

/// Checks that every word of a walk is a result code from Apple's list (or a value).
func expectOnlyResultCodes(_ results: [String: String], _ name: String, sourceLocation: SourceLocation = #_sourceLocation) {
    for (key, value) in results where !valueKeys.contains(key) || Double(value) == nil {
        #expect(appleResultCodes.contains(value), "\(name): \(key)=\(value) is not a result code", sourceLocation: sourceLocation)
    }
}

/// The crashers: six files from the issue's fuzzing and walk, and those the fuzzer found since.
/// Each is walked (open, every property, every packet, read-write) in a child process.
@Suite struct HostileFileTests {
    let scratch: Scratch
    init() throws { scratch = try Scratch() }

    /// Walks a copy of a fixture (the walk writes to it) with `--write`.
    private func walk(_ fixture: String) throws -> [String: String] {
        let copy = scratch.path(fixture)
        try FileManager.default.copyItem(atPath: FileFuzzProcess.fixtures.appendingPathComponent(fixture).path, toPath: copy)
        let output = try FileFuzzProcess.run(["walk", "--write", copy])
        let results = try FileFuzzProcess.results(output, for: fixture)
        expectOnlyResultCodes(results, fixture)
        return results
    }

    /// Sizes that agree: bytes = packets × bytes per packet, and a packet count a file can hold.
    private func expectConsistentSizes(_ results: [String: String], _ name: String) throws {
        let packets = try #require(results["pcnt"].flatMap { Int64($0) }, "\(name): pcnt=\(results["pcnt"] ?? "-")")
        let packetSize = try #require(results["psze"].flatMap { Int64($0) })
        #expect(results["bcnt"] == String(packets * packetSize), "\(name): bcnt=\(results["bcnt"] ?? "-") for \(packets) packets")
        #expect(packets < 1 << 32, "\(name): \(packets) packets from a file of a few kilobytes")
    }

    @Test func truncatedOggReportsSizesThatFit() throws {
        // Was: AudioDataPacketCount 2^63-1, then an overflow trap in AudioDataByteCount.
        let results = try walk("crash-002725.ogg")
        #expect(results["open"] == "0")
        try expectConsistentSizes(results, "crash-002725.ogg")
    }

    @Test func oggWithoutFramesHasABitRate() throws {
        // Was: SIGFPE in sf_current_byterate (BitRate of a file libsndfile decodes no frames of).
        let results = try walk("crash-005483.ogg")
        #expect(results["open"] == "0")
        #expect(results["brat"] == "0")
        try expectConsistentSizes(results, "crash-005483.ogg")
    }

    @Test func damagedOggSeeksWithoutCrashing() throws {
        // Was: SIGSEGV in libvorbis under sf_seek (ReadPackets at packet 610).
        let results = try walk("crash-021463.ogg")
        #expect(results["open"] == "0")
        try expectConsistentSizes(results, "crash-021463.ogg")
        // The header promises 882 packets that do not decode: reads say the file is damaged.
        #expect(results["seek-610"] == "dta?")
        #expect(results["seek-0"] == "0" || results["seek-0"] == "-39")
    }

    @Test(arguments: ["sanitizer-005552.aiff", "sanitizer-009129.aiff", "sanitizer-014541.aiff", "crash-fuzz-5-157.aiff"])
    func damagedAIFFHeadersAreInvalidFiles(_ fixture: String) throws {
        // Were heap overflows in libsndfile: a huge SSND offset (005552, 014541), a CHAN chunk
        // for fewer channels than COMM (009129), a CHAN chunk of the wrong size (5-157).
        #expect(try walk(fixture)["open"] == "dta?")
    }

    @Test(arguments: ["crash-fuzz-2-4096.aifc", "crash-fuzz-4-487.aifc"])
    func aifcWithDataOffsetOpensReadOnly(_ fixture: String) throws {
        // Were heap corruption ("free(): invalid size") when libsndfile rewrote the header.
        let results = try walk(fixture)
        #expect(results["open"] == "0")
        #expect(results["open-rw"] == "op??")
        try expectConsistentSizes(results, fixture)
    }

    @Test func flacWithoutATotalCountsItsFrames() throws {
        // STREAMINFO's total samples may legally be 0 ("unknown"): libsndfile then says 2^63-1.
        let path = scratch.path("unknown-total.flac")
        var format = AudioStreamBasicDescription(
            mSampleRate: 44100, mFormatID: kAudioFormatLinearPCM, mFormatFlags: kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsPacked,
            mBytesPerPacket: 4, mFramesPerPacket: 1, mBytesPerFrame: 4, mChannelsPerFrame: 2, mBitsPerChannel: 16, mReserved: 0)
        var file: AudioFileID?
        #expect(AudioFileCreateWithURL(URL(fileURLWithPath: path), kAudioFileFLACType, &format, .eraseFile, &file) == noErr)
        let frames = 10_007
        let samples = (0..<frames * 2).map { Int16(truncatingIfNeeded: $0 &* 97) }
        var packets = UInt32(frames)
        #expect(AudioFileWritePackets(try #require(file), false, UInt32(frames * 4), nil, 0, &packets, samples) == noErr)
        #expect(AudioFileClose(try #require(file)) == noErr)
        // STREAMINFO: "fLaC", a 4-byte block header, then 34 bytes; the total is the low 36
        // bits of bytes 13...17 of the block (the high 4 bits of byte 13 are bits per sample).
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let total = 8 + 13
        #expect(bytes[total + 1...total + 4].reduce(0) { $0 << 8 | Int($1) } == frames)
        bytes[total] &= 0xF0
        bytes.replaceSubrange(total + 1...total + 4, with: [0, 0, 0, 0])
        try bytes.write(to: URL(fileURLWithPath: path))

        let output = try FileFuzzProcess.run(["walk", path])
        let results = try FileFuzzProcess.results(output, for: "unknown-total.flac")
        expectOnlyResultCodes(results, "unknown-total.flac")
        #expect(results["pcnt"] == String(frames))
        #expect(results["bcnt"] == String(frames * 4))
        #expect(results["packets"] == String(frames))
    }

    @Test func packetToByteOverflowIsAnInvalidPacket() throws {
        let results = try walk("crash-fuzz-2-4096.aifc")
        #expect(results["pkby"] == "0")
        #expect(results["pkby-max"] == "pck?")
        #expect(results["pkby-neg"] == "pck?")
        #expect(results["bypk-neg"] == "-40")
        for key in results.keys where key.hasSuffix("-short") {
            #expect(results[key] == "!siz", "\(key): a buffer one byte too small")
        }
    }
}
