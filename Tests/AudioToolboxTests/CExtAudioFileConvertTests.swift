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
        let soxed = scratch.url("sox48.wav")
        let sox = try runReferee("/usr/bin/sox", [source.path, "-b", "32", "-e", "floating-point", soxed.path, "rate", "-v", "48000"])
        try #require(sox.status == 0, "sox: \(sox.stderr)")
        let reference = EAF.floatsOf(try readBack(soxed, client))
        let (lag, snr) = EAF.alignment(reference, decoded, channels: 2, range: 50)
        #expect(lag == 0, "lag \(lag)")
        #expect(snr >= 50, "SNR \(snr) dB against sox's rate -v (16-bit output: its quantization bounds it)")
        print("measured: ExtAudioFileConvert 44.1 -> 48 kHz 16-bit CAF against sox rate -v: lag \(lag), SNR \(String(format: "%.1f", snr)) dB")
    }
}
