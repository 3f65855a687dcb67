import AudioToolbox
import Foundation
import Testing
import JackTestSupport

/// Apple's ExtAudioFileConvert sample, ported to C (Sources/Examples/ExtAudioFileConvert),
/// builds with cc -Wall -Wextra -Werror and converts a 44.1 kHz WAV as on a Mac.
@Suite(.serialized, .refereeCrashesAreKnownIssues) struct CExtAudioFileConvertTests {
    let scratch: Scratch
    let program: URL
    let source: URL
    let sourceSamples: [UInt8]
    static let frames = 132_301

    init() throws {
        scratch = try Scratch()
        program = scratch.url("ExtAudioFileConvert")
        let build = try CProgram.compile("Sources/Examples/ExtAudioFileConvert/ext_audio_file_convert.c", into: program,
                                         flags: ["-Wall", "-Wextra", "-Werror", "-std=c11"])
        try #require(build.status == 0, "cc -Wall -Wextra -Werror failed:\n\(build.diagnostics)")
        source = scratch.url("source.wav")
        sourceSamples = EAF.int16Bytes(EAF.floats(frames: Self.frames, channels: 2, peak: 0.6))
        let (created, out) = EAF.create(source, kAudioFileWAVEType, EAF.pcm(44100, channels: 2))
        try #require(created == noErr)
        try #require(EAF.write(out, planes: [sourceSamples], client: EAF.pcm(44100, channels: 2)) == noErr)
        try #require(ExtAudioFileDispose(out!) == noErr)
    }

    func convert(_ arguments: [String]) throws -> URL {
        let output = scratch.url(arguments[0])
        let result = try run(program.path, [source.path, output.path] + arguments.dropFirst())
        #expect(result.status == 0, "ExtAudioFileConvert: \(String(decoding: result.stdout, as: UTF8.self))\(result.stderr)")
        let check = try runReferee("/usr/bin/ffmpeg", ["-v", "error", "-i", output.path, "-f", "null", "-"])
        #expect(check.status == 0 && check.stderr.isEmpty, "ffmpeg: \(check.stderr)")
        return output
    }

    func readBack(_ url: URL, _ client: AudioStreamBasicDescription) throws -> [UInt8] {
        let (opened, input) = EAF.open(url)
        try #require(opened == noErr)
        defer { ExtAudioFileDispose(input!) }
        expectStatus(EAF.setClient(input, client), noErr)
        let (status, planes) = EAF.read(input, client: client)
        expectStatus(status, noErr)
        return planes[0]
    }

    @Test func toALACInCAFIsLossless() throws {
        let output = try convert(["out.caf", "caff", "alac"])
        #expect(try readBack(output, EAF.pcm(44100, channels: 2)) == sourceSamples)
    }

    @Test(arguments: [("out.m4a", "m4af"), ("out-aac.caf", "caff")])
    func toAACKeepsTheFramesInLine(_ name: String, _ type: String) throws {
        let output = try convert([name, type, "aac", "44100", "192000"])
        let client = EAF.pcm(44100, channels: 2, float: true, bits: 32)
        let decoded = EAF.floatsOf(try readBack(output, client))
        #expect(decoded.count == Self.frames * 2, "\(decoded.count / 2) frames of \(Self.frames)")
        let reference = EAF.floatsOf(EAF.floatBytes(sourceSamples.withUnsafeBytes { $0.bindMemory(to: Int16.self).map { Float($0) / 32768 } }))
        let (lag, snr) = EAF.alignment(reference, decoded, channels: 2)
        #expect(lag == 0)
        #expect(snr >= 20, "SNR \(snr) dB")
    }

    /// 44.1 → 48 kHz 16-bit CAF: N·r₂/r₁ frames within 2, and the same signal as sox's
    /// `rate -v` of the source at lag 0, 50 dB or better.
    @Test func to48kHz16BitCAF() throws {
        let output = try convert(["out48.caf", "caff", "lpcm", "48000"])
        let client = EAF.pcm(48000, channels: 2, float: true, bits: 32)
        let decoded = EAF.floatsOf(try readBack(output, client))
        let expected = Int((Double(Self.frames) * 48000 / 44100).rounded())
        #expect(abs(decoded.count / 2 - expected) <= 2, "\(decoded.count / 2) frames, N·r₂/r₁ = \(expected)")
        let (lag, snr) = try againstSox(decoded, client, "sox48.wav")
        #expect(lag == 0, "lag \(lag)")
        #expect(snr >= 50, "SNR \(snr) dB against sox's rate -v (16-bit output: its quantization bounds it)")
        print("measured: ExtAudioFileConvert 44.1 -> 48 kHz 16-bit CAF against sox rate -v: lag \(lag), SNR \(String(format: "%.1f", snr)) dB")
    }

    /// 44.1 kHz client → 48 kHz AAC (.m4a) or ALAC (.caf): the packet table's valid frames are
    /// file frames (N·48000/44100 within 2, read back and by ffprobe), the signal is sox's
    /// `rate -v` at lag 0 (ALAC 50 dB, AAC 20 dB). Valid frames once counted in client frames
    /// cut the last 8 %.
    @Test(arguments: [("out48.m4a", "m4af", "aac", 20.0), ("out48-alac.caf", "caff", "alac", 50.0)])
    func resampledToCompressed48kHz(_ name: String, _ type: String, _ codec: String, _ minimumSNR: Double) throws {
        let output = try convert([name, type, codec, "48000"])
        let expected = Int((Double(Self.frames) * 48000 / 44100).rounded())
        let (opened, input) = EAF.open(output)
        try #require(opened == noErr)
        var length: Int64 = 0
        var size = UInt32(MemoryLayout<Int64>.size)
        expectStatus(ExtAudioFileGetProperty(input!, kExtAudioFileProperty_FileLengthFrames, &size, &length), noErr)
        ExtAudioFileDispose(input!)
        #expect(abs(Int(length) - expected) <= 2, "FileLengthFrames \(length), N·r₂/r₁ = \(expected)")
        if type == "m4af" {
            // The edit list's duration (ffmpeg's CAF demuxer ignores a packet table: read it below).
            let probe = try runReferee("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "a:0", "-show_entries", "stream=duration_ts",
                                                             "-of", "csv=p=0", output.path])
            let probed = Int(String(decoding: probe.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
            #expect(abs(probed - expected) <= 2, "ffprobe duration_ts \(probed), N·r₂/r₁ = \(expected)")
        } else {
            #expect(abs(try Self.cafValidFrames(output) - expected) <= 2, "the pakt chunk's mNumberValidFrames, N·r₂/r₁ = \(expected)")
        }
        let client = EAF.pcm(48000, channels: 2, float: true, bits: 32)
        let decoded = EAF.floatsOf(try readBack(output, client))
        #expect(abs(decoded.count / 2 - expected) <= 2, "\(decoded.count / 2) frames read, N·r₂/r₁ = \(expected)")
        let (lag, snr) = try againstSox(decoded, client, "sox48-\(codec).wav")
        #expect(lag == 0, "lag \(lag)")
        #expect(snr >= minimumSNR, "SNR \(snr) dB against sox's rate -v")
    }

    /// The lag and SNR of `decoded` (48 kHz float) against sox's `rate -v 48000` of the source.
    func againstSox(_ decoded: [Float], _ client: AudioStreamBasicDescription, _ name: String) throws -> (lag: Int, snr: Double) {
        let soxed = scratch.url(name)
        let sox = try runReferee("/usr/bin/sox", [source.path, "-b", "32", "-e", "floating-point", soxed.path, "rate", "-v", "48000"])
        try #require(sox.status == 0, "sox: \(sox.stderr)")
        return EAF.alignment(EAF.floatsOf(try readBack(soxed, client)), decoded, channels: 2, range: 50)
    }

    /// mNumberValidFrames of a CAF file's 'pakt' chunk, read from its bytes (-1 if none).
    static func cafValidFrames(_ url: URL) throws -> Int {
        let bytes = [UInt8](try Data(contentsOf: url))
        func integer(_ at: Int, _ count: Int) -> Int { bytes[at..<(at + count)].reduce(0) { $0 << 8 | Int($1) } }
        var at = 8  // the file header
        while at + 12 <= bytes.count {
            let type = String(decoding: bytes[at..<(at + 4)], as: UTF8.self)
            let size = integer(at + 4, 8)
            if type == "pakt" { return at + 28 <= bytes.count ? integer(at + 20, 8) : -1 }
            guard size >= 0, size < bytes.count else { return -1 }
            at += 12 + size
        }
        return -1
    }
}
