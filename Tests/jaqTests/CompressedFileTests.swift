import Foundation
import JackTestSupport
import RefereeTesting
import SoundFile
import Testing

/// `jaq play` and `jaq info` of compressed files (.m4a and .caf of AAC and ALAC) made by
/// ffmpeg's command line tool: jack_capture records what jaq plays through a compressed output
/// queue, and it equals ffmpeg's own decode of the file, sample for sample, with the encoder's
/// priming and the last packet's padding left out.
@Suite(.serialized, .refereeCrashesAreKnownIssues) struct CompressedFileTests {
    /// Runs ffmpeg quietly.
    func ffmpeg(_ arguments: [String]) throws -> Data {
        let result = try runReferee(["/usr/bin/ffmpeg", "-nostdin", "-v", "error", "-y"] + arguments, timeout: 120)
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
        // jack_capture (a referee) crashing: the scenario again (withRefereeRetries).
        try withRefereeRetries {
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
            let captured = try waitForReferee(capture, tool: "jack_capture", timeout: 30, log: "\(dir)/capture.log")
            #expect(captured == 0)
            let recording = try readCapture("\(dir)/captured.wav")
            // A late cycle on the loaded test machine drops periods from jack_capture's recording.
            let xruns = server.xrunCount
            try withKnownIssue(Comment(rawValue: "the server logged \(xruns) late cycles"), isIntermittent: true) {
                try compare(recording, reference)
            } when: { xruns > 0 }
        }
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

    /// An MP3 (libmp3lame, LAME header) plays through a compressed output queue as ffmpeg
    /// decodes it: the encoder's delay and the padding the header names are trimmed.
    @Test func jaqPlaysAnMP3AsFFmpegDecodesIt() throws {
        try playMatchesFFmpeg("lame.mp3", codec: ["-c:a", "libmp3lame", "-b:a", "192k"])
    }

    /// `jaq render` of an MP3 and an AAC .m4a (offline, no server): the mix is ffmpeg's decode
    /// of each, sample for sample, with the delay and padding trimmed.
    @Test(arguments: [("render.mp3", ["-c:a", "libmp3lame", "-b:a", "192k"]), ("render.m4a", ["-c:a", "aac", "-b:a", "128k"])])
    func renderOfACompressedFileIsFFmpegsDecode(_ name: String, _ codec: [String]) throws {
        let dir = scratchDirectory("compressed-render")
        defer { removeScratch(dir) }
        try makeFile("\(dir)/\(name)", codec: codec, seconds: 1.5)
        let reference = try decode("\(dir)/\(name)", dir: dir).map { Array($0.prefix(72000)) }
        let result = try jaq(["render", "-o", "\(dir)/mix.wav", "\(dir)/\(name)"], server: nil)
        #expect(result.status == 0, "\(result.error)")
        let mix = try readCapture("\(dir)/mix.wav")
        for c in 0..<2 {
            #expect(mix[c].count == 72000, "channel \(c): \(mix[c].count) frames, the file's 72000 valid frames")
            let differing = zip(mix[c], reference[c]).enumerated().first { $0.element.0 != $0.element.1 }
            #expect(differing == nil, "channel \(c): sample \(differing?.offset ?? -1) differs from ffmpeg's decode")
        }
    }

    /// `jaq info` of an MP3: its packets, the LAME header's delay and padding, the valid frames.
    @Test func infoDescribesAnMP3() throws {
        let dir = scratchDirectory("compressed-info-mp3")
        defer { removeScratch(dir) }
        try makeFile("\(dir)/take.mp3", codec: ["-c:a", "libmp3lame", "-b:a", "128k"], seconds: 1.5)
        let result = try jaq(["info", "\(dir)/take.mp3"], server: nil)
        #expect(result.status == 0, "\(result.error)")
        #expect(result.output.contains("container:   MP3 ('MPG3')"), "\(result.output)")
        #expect(result.output.contains("format:      MP3"), "\(result.output)")
        #expect(result.output.contains("frames:      72000"), "\(result.output)")
        // 72000 frames after 1105 of delay: 64 packets of 1152, 623 frames of padding.
        #expect(result.output.contains("packets:     64, priming 1105 frames, remainder 623 frames"), "\(result.output)")
        #expect(!result.output.contains("-inf dBFS"), "peaks come from the decoded audio")
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

    /// ffmpeg's decode of a mono take as 24-bit integers.
    func decode24(_ path: String, dir: String) throws -> [Int32] {
        _ = try ffmpeg(["-i", path, "-c:a", "pcm_s32le", "\(dir)/decoded24.wav"])
        return try readSamples24("\(dir)/decoded24.wav").samples
    }

    /// `jaq record -f m4a --codec alac --at F --pre-roll 1 -d 2`: the take starts exactly on
    /// JACK frame F − 1 s, as a PCM take does, and holds the 24-bit ramp jaq play started on
    /// F + 0.5 s bit for bit (the encoder ran from before; the packet table's priming says
    /// where in the first packet the take begins).
    @Test func anALACTakeAtAFrameStartsOnItBitExactly() throws {
        let server = try JackServer()
        defer { server.stop() }
        let dir = scratchDirectory("compressed-at")
        defer { removeScratch(dir) }
        try writeRamp("\(dir)/ramp.wav", frames: 96000)
        let at = try frameNow(server) + startLead
        let play = try jaqInBackground(["play", "--at", "\(at + 24000)", "ramp.wav"], server: server, log: "\(dir)/play.log", directory: dir)
        #expect(waitForPorts(server, containing: "jaq-1-ramp:out_L") != nil)
        let record = try jaq(["record", "-f", "m4a", "--codec", "alac", "-b", "24", "--at", "\(at)", "--pre-roll", "1", "-d", "2",
                              "-o", "take.m4a", "jaq-1-ramp:out_L"], server: server, directory: dir)
        #expect(record.status == 0, "\(record.error)")
        waitForExit(play)
        let info = try jaq(["info", "\(dir)/take.m4a"], server: nil)
        #expect(info.output.contains("frames:      144000"), "pre-roll (1 s) plus duration (2 s): \(info.output)")
        let boxes = try topLevelBoxes("\(dir)/take.m4a")
        #expect(boxes.contains("moov") && !boxes.contains("moof"), "a take that ended is a regular MPEG-4 file: \(boxes)")
        let take = try decode24("\(dir)/take.m4a", dir: dir)
        #expect(take.count >= 144000, "ffmpeg decodes the whole take")
        guard take.count >= 144000 else { return }
        let xruns = server.xrunCount
        withKnownIssue(Comment(rawValue: "the server logged \(xruns) late cycles"), isIntermittent: true) {
            // Take frame 0 is JACK frame at - 48000; the ramp (1, 2, 3, ...) starts at at + 24000.
            #expect(take[0..<72000].allSatisfy { $0 == 0 }, "silence before the ramp")
            let mismatch = (72000..<144000).first { take[$0] != Int32($0 - 72000 + 1) }
            #expect(mismatch == nil, "frame \(mismatch ?? -1) is \(mismatch.map { take[$0] } ?? 0), the ramp's \((mismatch ?? 0) - 72000 + 1)")
        } when: { xruns > 0 }
    }

    /// `jaq record -f m4a --codec alac --transport`: the take starts on the frame the transport
    /// rolled and ends on the frame it stopped, as a PCM take does, bit for bit.
    @Test func anALACTakeFollowsTheTransportToTheFrame() throws {
        let server = try JackServer()
        defer { server.stop() }
        let dir = scratchDirectory("compressed-transport")
        defer { removeScratch(dir) }
        try writeRamp("\(dir)/ramp.wav", frames: 10 * 48000)
        let (at, play) = try playAhead(["ramp.wav"], options: ["--quiet"], server: server, dir: dir, ports: "jaq-1-ramp:out_L")
        let record = try jaqInBackground(["record", "-f", "m4a", "--codec", "alac", "-b", "24", "--transport", "-o", "take.m4a",
                                          "jaq-1-ramp:out_L"], server: server, log: "\(dir)/record.log", directory: dir)
        let logs = RecordCommandTests()
        try logs.rollTransport(server, after: at)
        #expect(waitForExit(record, timeout: 20) == 0)
        kill(play.processIdentifier, SIGTERM)
        waitForExit(play)
        let log = try String(contentsOfFile: "\(dir)/record.log", encoding: .utf8)
        let rolled = try #require(frame(after: "transport rolling at JACK frame", in: log), "\(log)")
        let stopped = try #require(frame(after: "transport stopped at JACK frame", in: log), "\(log)")
        let info = try jaq(["info", "\(dir)/take.m4a"], server: nil)
        #expect(info.output.contains("frames:      \(stopped - rolled)\n"), "the take spans exactly the rolling frames: \(info.output)")
        let take = try decode24("\(dir)/take.m4a", dir: dir)
        let xruns = server.xrunCount
        withKnownIssue(Comment(rawValue: "the server logged \(xruns) late cycles"), isIntermittent: true) {
            #expect(Int64(take.first ?? -1) == rolled - at + 1, "the take starts on the frame the transport rolled")
            let mismatch = (0..<Int(stopped - rolled)).first { $0 >= take.count || take[$0] != take[0] + Int32($0) }
            #expect(mismatch == nil, "the ramp runs on unbroken to the stop: frame \(mismatch ?? -1)")
        } when: { xruns > 0 }
    }

    /// `jaq record -f m4a --at F -d 1` (AAC): the decoded take lines up with what jaq play
    /// played from JACK frame F, on that frame (the best of the lags -3...3 is 0) and with the
    /// signal at 30 dB or better.
    @Test func anAACTakeAtAFrameStartsOnIt() throws {
        let server = try JackServer()
        defer { server.stop() }
        let dir = scratchDirectory("compressed-at-aac")
        defer { removeScratch(dir) }
        _ = try ffmpeg(["-f", "lavfi", "-i", "sine=frequency=441:sample_rate=48000:duration=3", "-f", "lavfi",
                        "-i", "sine=frequency=1234:sample_rate=48000:duration=3",
                        "-filter_complex", "[0][1]amerge=inputs=2", "-c:a", "pcm_s16le", "\(dir)/source.wav"])
        let source = try readCapture("\(dir)/source.wav")
        let (at, play) = try playAhead(["source.wav"], options: ["--quiet"], server: server, dir: dir, ports: "jaq-1-source:out_", count: 2)
        let record = try jaq(["record", "-q", "-f", "m4a", "--bitrate", "192", "--at", "\(at + 24000)", "-d", "1", "-o", "take.m4a",
                              "jaq-1-source:out_"], server: server, directory: dir)
        #expect(record.status == 0, "\(record.error)")
        waitForExit(play)
        let info = try jaq(["info", "\(dir)/take.m4a"], server: nil)
        #expect(info.output.contains("frames:      48000"), "\(info.output)")
        let decoded = decodeAll("\(dir)/take.m4a", dir: dir)
        #expect(decoded[0].count >= 48000, "ffmpeg decodes the whole take")
        guard decoded[0].count >= 48000 else { return }
        // Take frame n is source frame 24000 + n; AAC's edges aside (the first and last 2048 frames).
        func snr(lag: Int) -> Double {
            var signal = 0.0, noise = 0.0
            for c in 0..<2 {
                for n in 2048..<(48000 - 2048) {
                    let expected = Double(source[c][24000 + n + lag])
                    signal += expected * expected
                    noise += (Double(decoded[c][n]) - expected) * (Double(decoded[c][n]) - expected)
                }
            }
            return 10 * log10(signal / max(noise, 1e-20))
        }
        let xruns = server.xrunCount
        withKnownIssue(Comment(rawValue: "the server logged \(xruns) late cycles"), isIntermittent: true) {
            let lags = (-3...3).map { ($0, snr(lag: $0)) }
            let best = lags.max { $0.1 < $1.1 }!
            #expect(best.0 == 0, "the take lines up at lag \(best.0): \(lags)")
            #expect(best.1 >= 30, "SNR \(best.1) dB at lag \(best.0)")
            print("measured: AAC take --at: SNR \(String(format: "%.1f", best.1)) dB at lag \(best.0)")
        } when: { xruns > 0 }
    }

    /// ffmpeg's decode of a stereo file as planar floats.
    func decodeAll(_ path: String, dir: String) -> [[Float]] {
        _ = try? ffmpeg(["-i", path, "-c:a", "pcm_f32le", "\(dir)/decoded.wav"])
        return (try? readCapture("\(dir)/decoded.wav")) ?? [[], []]
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
        let boxes = try topLevelBoxes("\(dir)/take.m4a")
        #expect(boxes.contains("moov") && !boxes.contains("moof"), "a take that ended is a regular MPEG-4 file: \(boxes)")
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
        let probe = try runReferee(["/usr/bin/ffprobe", "-v", "error", "-select_streams", "a:0", "-show_entries", "stream=bit_rate",
                                    "-of", "csv=p=0", "\(dir)/take.m4a"], timeout: 60).output
        let rate = Double(probe.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        #expect(rate > 48_000 * 0.8 && rate < 48_000 * 1.1, "ffprobe: \(probe)")
        for options in [["-f", "m4a", "--codec", "alac", "--bitrate", "128"], ["-f", "wav", "--bitrate", "128"],
                        ["-f", "m4a", "--bitrate", "fast"], ["-f", "m4a", "--bitrate", "2"]] {
            let result = try jaq(["record", "-q", "-d", "0.5", "-o", "bad.{ext}"] + options + ["system:capture_"], server: server, directory: dir)
            #expect(result.status == 64, "\(options): \(result.status) (a usage error)")
            #expect(result.error.contains("--bitrate") && result.error.split(separator: "\n").count == 1, "\(options): \(result.error)")
        }
    }

    /// The top-level boxes of an MPEG-4 file, in order ("ftyp", "moov", "moof", "mdat"...).
    func topLevelBoxes(_ path: String) throws -> [String] {
        let data = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        var boxes: [String] = []
        var offset = 0
        while offset + 8 <= data.count {
            var size = data[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            boxes.append(String(decoding: data[offset + 4..<offset + 8], as: UTF8.self))
            if size == 1, offset + 16 <= data.count { size = data[offset + 8..<offset + 16].reduce(0) { $0 << 8 | Int($1) } }
            if size == 0 { size = data.count - offset }
            guard size >= 8 else { break }
            offset += size
        }
        return boxes
    }

    /// `jaq record -f m4a --codec alac` killed with SIGKILL about 3 s into the take: the file
    /// left behind is fragmented MPEG-4 that ffmpeg and jaq info open, with all but about the
    /// last second, and what is there is the ramp jaq play played, in order. (Its priming is
    /// not trimmed: the take may begin a little before its first frame.)
    @Test func anALACTakeKilledWithSIGKILLOpensWithAllButTheLastSecond() throws {
        let server = try JackServer()
        defer { server.stop() }
        let dir = scratchDirectory("compressed-kill")
        defer { removeScratch(dir) }
        try writeRamp("\(dir)/ramp.wav", frames: 20 * 48000)
        let play = try jaqInBackground(["play", "--quiet", "ramp.wav"], server: server, log: "\(dir)/play.log", directory: dir)
        #expect(waitForPorts(server, containing: "jaq-1-ramp:out_L") != nil)
        let record = try jaqInBackground(["record", "-f", "m4a", "--codec", "alac", "-b", "24", "-o", "take.m4a", "jaq-1-ramp:out_L"],
                                         server: server, log: "\(dir)/record.log", directory: dir)
        // About 3 s into the take (counted from jaq's "recording ..." line, not from its exec).
        killWithSIGKILL(record, secondsAfterRecordingIn: "\(dir)/record.log", seconds: 3)
        kill(play.processIdentifier, SIGTERM)
        waitForExit(play)
        let boxes = try topLevelBoxes("\(dir)/take.m4a")
        #expect(boxes.contains("moof"), "the killed take is fragmented: \(boxes)")
        let info = try jaq(["info", "\(dir)/take.m4a"], server: nil)
        #expect(info.status == 0 && info.output.contains("Apple Lossless (ALAC) from 24-bit source"), "jaq info opens it: \(info.error)\(info.output)")
        let take = try decode24("\(dir)/take.m4a", dir: dir)
        #expect(take.count >= 48000 * 3 / 2, "all but the last second of ~3 s (got \(take.count))")
        let first = try #require(take.first { $0 != 0 }, "the take holds the ramp")
        let index = take.firstIndex(of: first)!
        let broken = take[index...].indices.first { take[$0] != first + Int32($0 - index) }
        exactUnlessCyclesRanLate(server) {
            #expect(broken == nil, "the ramp breaks at frame \(broken ?? -1) of \(take.count)")
        }
    }
}
