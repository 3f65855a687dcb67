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

    // MARK: Recording

    /// Records 1.5 s of a looping 16-bit source played by jaq into `take` with `options`;
    /// returns the source's planes and ffmpeg's decode of the take.
    func recordLoop(_ take: String, options: [String], dir: String, server: JackServer) throws -> (source: [[Float]], decoded: [[Float]]) {
        _ = try ffmpeg(["-f", "lavfi", "-i", "sine=frequency=441:sample_rate=48000:duration=1", "-f", "lavfi",
                        "-i", "sine=frequency=1234:sample_rate=48000:duration=1",
                        "-filter_complex", "[0][1]amerge=inputs=2", "-c:a", "pcm_s16le", "\(dir)/source.wav"])
        let source = try readCapture("\(dir)/source.wav")
        let play = try jaqInBackground(["play", "--quiet", "--loop", "source.wav"], server: server, log: "\(dir)/play.log", directory: dir)
        defer { play.terminate(); waitForExit(play, timeout: 10) }
        #expect(waitForPorts(server, containing: "jaq-1-source:out_", count: 2) != nil)
        usleep(1_500_000)  // playing, not starting
        let result = try jaq(["record", "-q", "-d", "1.5", "-o", take] + options + ["jaq-1-source:out_"], server: server, directory: dir)
        #expect(result.status == 0, "jaq record: \(result.error)")
        _ = try ffmpeg(["-i", "\(dir)/\(take)", "-c:a", "pcm_f32le", "\(dir)/decoded.wav"])
        return (source, try readCapture("\(dir)/decoded.wav"))
    }

    /// Where the 256 frames of `decoded` from `start` begin in the looping `source` (least
    /// squared error over both channels: their two tones together repeat only once a loop).
    func loopOffset(_ decoded: [[Float]], at start: Int, in source: [[Float]]) -> Int {
        var best = (offset: 0, error: Float.infinity)
        let length = source[0].count
        for offset in 0..<length {
            var error: Float = 0
            for i in 0..<256 {
                for c in 0..<2 {
                    let d = decoded[c][start + i] - source[c][(offset + i) % length]
                    error += d * d
                }
                if error >= best.error { break }
            }
            if error < best.error { best = (offset, error) }
        }
        return best.offset
    }

    /// `jaq record -f m4a --codec alac`: ffmpeg decodes the take to exactly the samples played
    /// (16-bit, lossless), 72000 frames.
    @Test func recordALACM4AIsBitExact() throws {
        let server = try JackServer()
        defer { server.stop() }
        let dir = scratchDirectory("compressed-record")
        defer { removeScratch(dir) }
        let (source, decoded) = try recordLoop("take.m4a", options: ["-f", "m4a", "--codec", "alac", "-b", "16"], dir: dir, server: server)
        // ffmpeg decodes the last packet whole; the take's length is in its packet table.
        #expect(decoded[0].count >= 72000, "ffmpeg decodes the whole take")
        let info = try jaq(["info", "\(dir)/take.m4a"], server: nil)
        #expect(info.output.contains("Apple Lossless (ALAC) from 16-bit source") && info.output.contains("frames:      72000"), "\(info.output)")
        let start = 1000
        let offset = loopOffset(decoded, at: start, in: source)
        let xruns = server.xrunCount
        try withKnownIssue(Comment(rawValue: "the server logged \(xruns) late cycles"), isIntermittent: true) {
            for c in 0..<2 {
                let mismatch = (start..<72000).first { decoded[c][$0] != source[c][(offset + $0 - start) % source[c].count] }
                #expect(mismatch == nil, "channel \(c): sample \(mismatch ?? -1) differs from what was played")
            }
        } when: { xruns > 0 }
    }

    /// `jaq record -f m4a` (AAC-LC, 128 kbit/s for two channels): ffprobe reads AAC, the take
    /// is 1.5 s after the priming, and the decoded signal matches the played one with an SNR
    /// of at least 30 dB.
    @Test func recordAACM4AHasTheSignalAt30dB() throws {
        let server = try JackServer()
        defer { server.stop() }
        let dir = scratchDirectory("compressed-record")
        defer { removeScratch(dir) }
        let (source, decoded) = try recordLoop("take.m4a", options: ["-f", "m4a"], dir: dir, server: server)
        let info = try jaq(["info", "--json", "\(dir)/take.m4a"], server: nil)
        #expect(info.output.contains("\"validFrames\" : 72000") && info.output.contains("\"primingFrames\" : 1024"), "\(info.output)")
        #expect(decoded[0].count >= 72000, "ffmpeg decodes the whole take")
        let start = 4000
        let offset = loopOffset(decoded, at: start, in: source)
        for c in 0..<2 {
            var signal: Float = 0
            var noise: Float = 0
            for i in start..<70000 {
                let s = source[c][(offset + i - start) % source[c].count]
                signal += s * s
                noise += (decoded[c][i] - s) * (decoded[c][i] - s)
            }
            let snr = 10 * log10(signal / max(noise, .leastNonzeroMagnitude))
            #expect(snr >= 30, "channel \(c): SNR \(snr) dB")
        }
    }

    /// `jaq record -f m4a --bitrate 48`: ffprobe reads the take at ~48 kbit/s (the default for
    /// two channels is 128, which these tones take ~100 of), and --bitrate where it cannot
    /// apply is one line and exit 2.
    @Test func recordAACM4AAtASetBitRate() throws {
        let server = try JackServer()
        defer { server.stop() }
        let dir = scratchDirectory("compressed-record")
        defer { removeScratch(dir) }
        _ = try recordLoop("take.m4a", options: ["-f", "m4a", "--bitrate", "48"], dir: dir, server: server)
        let probe = try runProcess(["/usr/bin/ffprobe", "-v", "error", "-select_streams", "a:0", "-show_entries", "stream=bit_rate",
                                    "-of", "csv=p=0", "\(dir)/take.m4a"], timeout: 60).output
        let rate = Double(probe.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        #expect(rate > 48_000 * 0.8 && rate < 48_000 * 1.1, "ffprobe: \(probe)")
        for options in [["-f", "m4a", "--codec", "alac", "--bitrate", "128"], ["-f", "wav", "--bitrate", "128"],
                        ["-f", "m4a", "--bitrate", "fast"], ["-f", "m4a", "--bitrate", "2"]] {
            let result = try jaq(["record", "-q", "-d", "0.5", "-o", "bad.m4a"] + options + ["system:capture_"], server: server, directory: dir)
            #expect(result.status == 2, "\(options): \(result.status)")
            #expect(result.error.contains("--bitrate") && result.error.split(separator: "\n").count == 1, "\(options): \(result.error)")
        }
    }
}
