import Foundation
import JackTestSupport
import SoundFile
import Testing

/// `jaq play` and `jaq info` of compressed files (.m4a and .caf of AAC and ALAC) made by
/// ffmpeg's command line tool: jack_capture records what jaq plays through a compressed output
/// queue, and it equals ffmpeg's own decode of the file, sample for sample, with the encoder's
/// priming and the last packet's padding left out.
@Suite(.serialized) struct CompressedFileTests {
    /// Runs ffmpeg quietly.
    func ffmpeg(_ arguments: [String]) throws -> Data {
        let result = try runProcess(["/usr/bin/ffmpeg", "-nostdin", "-v", "error", "-y"] + arguments, timeout: 120)
        #expect(result.status == 0, "ffmpeg \(arguments.joined(separator: " ")): \(result.error)")
        return Data(result.output.utf8)
    }

    /// A stereo signal that never repeats (two tones and noise), encoded by ffmpeg into `path`.
    func makeFile(_ path: String, codec: [String], seconds: Double) throws {
        _ = try ffmpeg(["-f", "lavfi", "-i", "sine=frequency=441:sample_rate=48000:duration=\(seconds)",
                        "-f", "lavfi", "-i", "anoisesrc=r=48000:a=0.2:d=\(seconds):seed=11",
                        "-filter_complex", "amix=inputs=2,aformat=channel_layouts=stereo"] + codec + [path])
    }

    /// ffmpeg's decode of `path` (edit list and gapless padding applied) as planar floats.
    func decode(_ path: String, dir: String) throws -> [[Float]] {
        _ = try ffmpeg(["-i", path, "-c:a", "pcm_f32le", "\(dir)/reference.wav"])
        let file = try SoundFile(path: "\(dir)/reference.wav", mode: .read)
        defer { try? file.close() }
        var samples = [Float](repeating: 0, count: Int(file.info.frameCount) * 2)
        let moved = samples.withUnsafeMutableBufferPointer { file.readFrames(into: $0) }
        return (0..<2).map { c in stride(from: c, to: moved.count * 2, by: 2).map { samples[$0] } }
    }

    func readCapture(_ path: String) throws -> [[Float]] {
        let file = try SoundFile(path: path, mode: .read)
        defer { try? file.close() }
        var samples = [Float](repeating: 0, count: Int(file.info.frameCount) * 2)
        let moved = samples.withUnsafeMutableBufferPointer { file.readFrames(into: $0) }
        return (0..<2).map { c in stride(from: c, to: moved.count * 2, by: 2).map { samples[$0] } }
    }

    /// Plays `name` (made by ffmpeg with `codec`) with jaq while jack_capture records; the
    /// recording from jaq's first frame must equal ffmpeg's decode and be silent after it.
    func playMatchesFFmpeg(_ name: String, codec: [String]) throws {
        let server = try JackServer()
        defer { server.stop() }
        let dir = scratchDirectory("compressed-play")
        defer { removeScratch(dir) }
        try makeFile("\(dir)/\(name)", codec: codec, seconds: 2)
        // ffmpeg's decode starts after the priming (the edit list) but keeps the padding of
        // the last AAC packet: the file's valid frames are its first 2 s.
        let reference = try decode("\(dir)/\(name)", dir: dir).map { Array($0.prefix(2 * 48000)) }
        let stem = (name as NSString).deletingPathExtension
        let (_, play) = try playAhead([name], options: ["--quiet"], server: server, dir: dir, ports: "jaq-1-\(stem):out_", count: 2)
        let capture = try server.spawn(["jack_capture", "--daemon", "-d", "9", "-c", "2", "--port", "jaq-1-\(stem):out_1",
                                        "--port", "jaq-1-\(stem):out_2", "\(dir)/captured.wav"], output: "\(dir)/capture.log")
        #expect(waitForExit(play) == 0, "jaq play: \((try? String(contentsOfFile: "\(dir)/play.log", encoding: .utf8)) ?? "")")
        #expect(waitForExit(capture, timeout: 30) == 0)
        let recording = try readCapture("\(dir)/captured.wav")
        // A late cycle on the loaded test machine drops periods from jack_capture's recording.
        let xruns = server.xrunCount
        try withKnownIssue(Comment(rawValue: "the server logged \(xruns) late cycles"), isIntermittent: true) {
            try compare(recording, reference)
        } when: { xruns > 0 }
    }

    func compare(_ recording: [[Float]], _ reference: [[Float]]) throws {
        for c in 0..<2 {
            let got = recording[c]
            let expected = reference[c]
            let first = try #require(got.firstIndex { $0 != 0 }, "channel \(c) has audio")
            // The reference's first sample may itself be 0: line up on the reference's first non-zero.
            let lead = expected.firstIndex { $0 != 0 } ?? 0
            let start = first - lead
            #expect(start >= 0 && got.count >= start + expected.count, "channel \(c): the whole file was played")
            guard start >= 0, got.count >= start + expected.count else { continue }
            let played = Array(got[start..<start + expected.count])
            let differing = zip(played, expected).enumerated().first { $0.element.0 != $0.element.1 }
            #expect(differing == nil, "channel \(c): sample \(differing?.offset ?? -1) is \(differing?.element.0 ?? 0), ffmpeg \(differing?.element.1 ?? 0)")
            #expect(got[(start + expected.count)...].allSatisfy { $0 == 0 }, "channel \(c): nothing after the last valid frame (padding trimmed)")
        }
    }

    @Test func jaqPlaysAnAACM4AAsFFmpegDecodesIt() throws {
        try playMatchesFFmpeg("aac.m4a", codec: ["-c:a", "aac", "-b:a", "128k"])
    }

    @Test func jaqPlaysAnALACM4AAsFFmpegDecodesIt() throws {
        try playMatchesFFmpeg("alac.m4a", codec: ["-c:a", "alac", "-sample_fmt", "s16p"])
    }

    /// `jaq info` names the codec, the packets, the priming and the remainder; the frames are
    /// the valid frames (48000 × 1.5 s), not packets × 1024.
    @Test func infoDescribesAnAACM4A() throws {
        let dir = scratchDirectory("compressed-info")
        defer { removeScratch(dir) }
        try makeFile("\(dir)/take.m4a", codec: ["-c:a", "aac", "-b:a", "96k"], seconds: 1.5)
        let result = try jaq(["info", "\(dir)/take.m4a"], server: nil)
        #expect(result.status == 0, "\(result.error)")
        #expect(result.output.contains("container:   MPEG-4 audio (.m4a) ('m4af')"))
        #expect(result.output.contains("format:      AAC-LC"))
        #expect(result.output.contains("frames:      72000"))
        #expect(result.output.contains("packets:     72, priming 1024 frames, remainder 704 frames"), "\(result.output)")
        #expect(!result.output.contains("-inf dBFS"), "peaks come from the decoded audio")
    }
}
