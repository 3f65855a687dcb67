import AudioToolbox
import Foundation
import Testing
import JackTestSupport
import RefereeTesting

/// Tests/AudioToolboxTests/CPrograms/audiofilestream_player.c: AudioFileStream from C as
/// AudioStreamer uses it (state made in the listener on ReadyToProducePackets, packets copied
/// in the packets callback, the discontinuity flag until the first packets), built with
/// -Wall -Wextra -Werror: it gets the packets the Swift tests check against ffprobe.
@Suite(.refereeCrashesAreKnownIssues) struct AudioFileStreamCProgramTests {
    let scratch: Scratch
    init() throws { scratch = try Scratch() }

    static let source = "Tests/AudioToolboxTests/CPrograms/audiofilestream_player.c"

    @Test(arguments: [("c.aac", ["-c:a", "aac", "-b:a", "96k"]), ("c.mp3", ["-c:a", "libmp3lame", "-b:a", "128k"]),
                      ("c.m4a", ["-c:a", "aac", "-movflags", "+faststart"]), ("c.wav", ["-c:a", "pcm_s16le"])])
    func theCPlayerGetsEveryPacket(_ name: String, _ codec: [String]) throws {
        let program = scratch.url("audiofilestream_player")
        let build = try CProgram.compile(Self.source, into: program, flags: ["-Wall", "-Wextra", "-Werror", "-std=c11"])
        try #require(build.status == 0, "cc -Wall -Wextra -Werror failed:\n\(build.diagnostics)")
        let path = scratch.path(name)
        let made = try runReferee(try #require(tool("ffmpeg")), ["-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i",
                                                                "sine=frequency=330:sample_rate=44100:duration=2"] + codec + [path])
        try #require(made.status == 0, "ffmpeg: \(made.stderr)")
        let result = try run(program.path, [path])
        let line = String(decoding: result.stdout, as: UTF8.self)
        #expect(result.status == 0, "audiofilestream_player exited \(result.status): \(line)\(result.stderr)")

        let file = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        let parsed = AFS.parse(file, chunk: 1500)
        expectStatus(parsed.status, noErr)
        let bytes = Array(parsed.capture.packets.joined())
        let format = try #require(parsed.capture.formatAtReady)
        let expected = "status=0 ready=1 type=\(fourCharacterCode(parsed.properties.fileFormat ?? 0, quoted: false)) "
            + "format=\(fourCharacterCode(format.mFormatID, quoted: false)) rate=44100 channels=\(format.mChannelsPerFrame) "
            + "frames_per_packet=\(format.mFramesPerPacket) cookie=\(parsed.properties.cookie?.count ?? 0) offset=\(parsed.properties.dataOffset ?? -1) "
            + "packets=\(parsed.capture.packets.count) bytes=\(bytes.count) adler32=\(AudioFilePacketTests.adler32(bytes)) outside=0 "
            + "pcm_callbacks=\(name.hasSuffix(".wav") ? parsed.capture.callbacks : 0) failed=0\n"
        #expect(line == expected)
        #expect(parsed.capture.packets.count > 40)
    }
}
