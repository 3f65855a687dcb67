import Foundation
import Testing
import JackTestSupport
import SoundFile

/// Sources/Examples/OfflineRender/offline_render.c, Apple's offline-render pattern in C, builds
/// with cc against the headers and libAudioToolbox.so, and bounces a file bit for bit.
@Suite(.serialized) struct COfflineRenderExampleTests {
    let scratch: Scratch
    init() throws { scratch = try Scratch() }

    static let source = "Sources/Examples/OfflineRender/offline_render.c"

    @Test func offlineRenderExampleBouncesA16BitFileBitForBit() throws {
        let program = scratch.url("offline_render")
        let build = try CProgram.compile(Self.source, into: program, flags: ["-Wall", "-Wextra", "-Werror", "-std=c11"])
        try #require(build.status == 0, "cc -Wall -Werror failed:\n\(build.diagnostics)")
        // 1.5 s of a 16-bit stereo signal at 44.1 kHz; the server runs at 48 kHz, the render at the file's rate: no resampling.
        let input = scratch.path("in.wav")
        let frames = 66150
        let file = try SoundFile(path: input, mode: .write,
                                 format: SoundFile.Info(sampleRate: 44100, channelCount: 2, format: SoundFile.Format(.wav, .pcm16)))
        let samples = (0..<(2 * frames)).map { i -> Int16 in Int16(truncatingIfNeeded: (i &* 7919) % 60_001 - 30_000) }
        _ = samples.withUnsafeBufferPointer { file.writeFrames($0) }
        try file.close()

        let server = try JackServer()
        defer { server.stop() }
        let output = scratch.path("out.caf")
        let result = try run(program.path, [input, output], environment: server.environment)
        let printed = String(decoding: result.stdout, as: UTF8.self)
        #expect(result.status == 0, "offline_render exited \(result.status): \(printed)\(result.stderr)")
        #expect(printed.contains("rendered \(frames) frames"), "\(printed)")
        let rendered = try SoundFile(path: output, mode: .read)
        #expect(rendered.info.sampleRate == 44100 && rendered.info.channelCount == 2)
        var back = [Int16](repeating: 0, count: 2 * frames)
        let transfer = back.withUnsafeMutableBufferPointer { rendered.readFrames(into: $0) }
        try rendered.close()
        #expect(transfer.count == frames)
        let same = back == samples  // (not inside #expect: a failure would diff 132300 samples)
        #expect(same, "the bounce is the file: \(zip(back, samples).enumerated().first { $0.element.0 != $0.element.1 }.map { "sample \($0.offset)" } ?? "")")
    }
}
