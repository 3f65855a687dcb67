import AudioToolbox
import Foundation
import Testing
import JackTestSupport

/// ExtAudioFile's C functions given NULL and dead pointers (CPrograms/ext_audio_file_nulls.c,
/// a child process: a crash fails this test, not the runner) return kAudio_ParamError, never trap.
@Suite struct CExtAudioFileNullTests {
    @Test func nullAndDeadPointersAreParamErrors() throws {
        let scratch = try Scratch()
        let helper = scratch.url("ext_audio_file_nulls")
        let build = try CProgram.compile("Tests/AudioToolboxTests/CPrograms/ext_audio_file_nulls.c", into: helper, flags: ["-Wall", "-Wextra", "-Werror"])
        try #require(build.status == 0, "cc failed:\n\(build.diagnostics)")
        let input = scratch.url("in.wav")
        let (created, out) = EAF.create(input, kAudioFileWAVEType, EAF.pcm(44100, channels: 2))
        try #require(created == noErr)
        #expect(EAF.write(out, planes: [EAF.int16Bytes(EAF.floats(frames: 100, channels: 2))], client: EAF.pcm(44100, channels: 2)) == noErr)
        ExtAudioFileDispose(out!)

        let result = try run(helper.path, [input.path, scratch.path("out.caf")])
        #expect(result.status == 0, "ended with \(result.status): \(result.stderr)")
        let line = String(decoding: result.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        let values = Dictionary(line.split(separator: " ").compactMap { pair -> (String, Int)? in
            let parts = pair.split(separator: "=")
            return parts.count == 2 ? (String(parts[0]), Int(parts[1]) ?? Int.min) : nil
        }, uniquingKeysWith: { first, _ in first })
        let param = Int(kAudio_ParamError)
        for name in ["open_null_out", "open_null_url", "create_null_format", "wrap_null", "dispose_null", "read_null_ref",
                     "read_null_frames", "read_null_list", "read_null_data", "write_null_list", "async_null_list", "tell_null",
                     "get_null_size", "get_null_data", "set_null_data", "dispose_again", "seek_dead"] {
            #expect(values[name] == param, "\(name): \(values[name].map(String.init) ?? "missing") in \(line)")
        }
        #expect(values["open_null_url_ref_cleared"] == 1)
        #expect(values["create_zero_channels"] == Int(kExtAudioFileError_InvalidDataFormat))
        #expect(values["info_null_outs"] == 0 && values["dispose"] == 0)
    }
}
