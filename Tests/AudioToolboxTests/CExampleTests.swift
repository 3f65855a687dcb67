import Foundation
import Testing
import JackTestSupport

/// Sources/Examples/AudioFileDemo/audiofile_demo.c builds with cc against the headers and
/// libAudioToolbox.so, and runs: the file it writes reads back byte for byte.
@Suite struct CExampleTests {
    let scratch: Scratch
    init() throws { scratch = try Scratch() }

    static let source = "Sources/Examples/AudioFileDemo/audiofile_demo.c"

    @Test func audioFileDemoBuildsCleanWithWarningsAsErrors() throws {
        let build = try CProgram.compile(Self.source, into: scratch.url("demo"), flags: ["-Wall", "-Wextra", "-Werror", "-std=c11"])
        #expect(build.status == 0, "cc -Wall -Werror failed:\n\(build.diagnostics)")
    }

    @Test func audioFileDemoWritesAndReadsBackItsFile() throws {
        let program = scratch.url("audiofile_demo")
        let build = try CProgram.compile(Self.source, into: program)
        try #require(build.status == 0, "cc failed:\n\(build.diagnostics)")

        let file = scratch.path("demo.aiff")
        let result = try run(program.path, [file])
        let output = String(decoding: result.stdout, as: UTF8.self)
        #expect(result.status == 0, "audiofile_demo exited \(result.status): \(output)\(result.stderr)")
        #expect(output.contains("data format: 44100 Hz, 'lpcm', flags 0xe, 16 bits, 2 channels, 4 bytes per packet"), "\(output)")
        #expect(output.contains("packets: 44100 written, 44100 in the file, 44100 read back"), "\(output)")
        #expect(output.contains("all packets match"), "\(output)")

        // What it wrote is a real AIFF file.
        let soxi = try #require(tool("soxi"), "soxi is not installed (apt-get install sox)")
        #expect(try run(soxi, ["-t", file]).stdout == Data("aiff\n".utf8))
        #expect(try run(soxi, ["-s", file]).stdout == Data("44100\n".utf8))
        #expect(try run(soxi, ["-b", file]).stdout == Data("16\n".utf8))
        #expect(try run(soxi, ["-c", file]).stdout == Data("2\n".utf8))
    }
}

/// Tests/AudioToolboxTests/CPrograms/processing_tap.c: a processing tap and PlayRate through the
/// C API on a private jackd; what JACK carries is the tap's output, sample for sample.
@Suite(.serialized) struct ProcessingTapCExampleTests {
    @Test func aTapAndPlayRateThroughTheCAPIAreHeardThroughJACK() throws {
        let scratch = try Scratch()
        let program = scratch.url("processing_tap")
        let build = try CProgram.compile("Tests/AudioToolboxTests/CPrograms/processing_tap.c", into: program,
                                         flags: ["-Wall", "-Wextra", "-Werror"], linking: ["-lm"])
        try #require(build.status == 0, "cc failed:\n\(build.diagnostics)")
        let server = try JackServer()
        defer { server.stop() }
        let result = try runProcess([program.path], environment: server.environment, timeout: 60)
        print(result.output)
        #expect(result.status == 0, "processing_tap:\n\(result.output)\(result.error)")
        #expect(result.output.contains("tap: 48000 of 48000 frames heard as tapped"), "\(result.output)")
        #expect(result.output.contains("0 failures"), "\(result.output)")
    }
}
