import Testing
import Foundation
import JackTestSupport
import SoundFile

/// What `jaq record` writes: every format and sample size, interleaved takes, and tracks
/// aligned by their ports' capture latency.
@Suite(.serialized) struct RecordFormatTests {
    /// The 24-bit value of ramp frame n (see writeRamp).
    func rampValue(_ n: Int, offset: Int32 = 0, step: Int32 = 1, channel: Int = 0) -> Int32 {
        (offset &+ Int32(n) &* step &+ Int32(channel) * 1_000_000) & 0x7FFFFF
    }

    /// Whether `samples` continue a ramp of steps of 256 (from whatever frame they began on).
    func firstBreakInRamp(_ samples: [Int32]) -> Int? {
        guard let first = samples.first else { return nil }
        return samples.indices.first { samples[$0] != (first &+ Int32($0) &* 256) & 0x7FFFFF }
    }

    @Test func everyFormatAndSampleSizeRecordsEveryFrame() throws {
        let server = try JackServer()
        defer { server.stop() }
        let dir = scratchDirectory("formats")
        defer { removeScratch(dir) }
        // Steps of 256: the ramp is exact in 16 bits too, so every lossless take must continue it.
        // 262144 frames is 8 whole turns of the 23-bit ramp, so looping it keeps it seamless.
        try writeRamp("\(dir)/ramp.wav", frames: 262_144, offset: 256, step: 256)
        let play = try jaqInBackground(["play", "--loop", "ramp.wav"], server: server, log: "\(dir)/play.log", directory: dir)
        defer { kill(play.processIdentifier, SIGTERM); waitForExit(play) }
        #expect(waitForPorts(server, containing: "jaq-1-ramp:out_L") != nil)
        // Record only once the ramp is playing (it starts "now + 0.25 s").
        var playing: Int64?
        for _ in 0..<200 where playing == nil {
            let log = (try? String(contentsOfFile: "\(dir)/play.log", encoding: .utf8)) ?? ""
            if let range = log.range(of: "from JACK frame ") { playing = Int64(log[range.upperBound...].prefix { $0.isNumber }) }
            usleep(20_000)
        }
        let firstFrame = try #require(playing, "jaq play said where it starts")
        while try frameNow(server) < firstFrame + 4800 { usleep(20_000) }
        let lossless: [(format: String, bits: String, ext: String)] = [
            ("wav", "16", "wav"), ("wav", "24", "wav"), ("wav", "32", "wav"), ("wav", "float", "wav"),
            ("w64", "24", "w64"), ("rf64", "24", "rf64"), ("aiff", "16", "aiff"), ("aiff", "24", "aiff"),
            ("aiff", "32", "aiff"), ("caf", "16", "caf"), ("caf", "24", "caf"), ("caf", "float", "caf"),
            ("flac", "16", "flac"), ("flac", "24", "flac"),
        ]
        for take in lossless {
            let path = "\(dir)/take-\(take.format)-\(take.bits).\(take.ext)"
            let record = try jaq(["record", "-q", "-d", "24000f", "-f", take.format, "-b", take.bits, "-o", path, "jaq-1-ramp:out_L"],
                                 server: server, directory: dir)
            #expect(record.status == 0, "\(take.format) \(take.bits): \(record.error)")
            // Float files are read as floats (libsndfile's float-to-int scaling is not exact).
            let samples = take.bits == "float" ? try readFloatsAs24(path) : try readSamples24(path)
            #expect(samples.channels == 1 && samples.samples.count == 24000, "\(path)")
            let mismatch = firstBreakInRamp(samples.samples)
            exactUnlessCyclesRanLate(server) {
                #expect(mismatch == nil, "\(take.format) \(take.bits)-bit breaks the ramp at frame \(mismatch ?? -1)")
            }
            // Other tools open it: sox (through its own readers) for all but W64 and RF64.
            if take.format != "w64" && take.format != "rf64" {
                let sox = soxInfo(path)
                #expect(sox?.channels == 1 && sox?.samples == 24000, "sox reads \(path)")
            }
        }
        // Without -f, the name's extension says the format (as jaq render and jaq convert read
        // it): an .aif take is AIFF and a .flac one FLAC, not WAV bytes under those names.
        for (name, magic) in [("named.aif", "FORM"), ("named.flac", "fLaC")] {
            let path = "\(dir)/\(name)"
            let record = try jaq(["record", "-q", "-d", "24000f", "-o", path, "jaq-1-ramp:out_L"], server: server, directory: dir)
            #expect(record.status == 0, "\(name): \(record.error)")
            let head = try #require(FileManager.default.contents(atPath: path)?.prefix(4), "\(path) was made")
            #expect(String(decoding: head, as: UTF8.self) == magic, "\(name) begins \(Array(head))")
            #expect(try readSamples24(path).samples.count == 24000, "\(name) holds the take")
        }
        for format in ["ogg", "opus", "mp3"] {
            let path = "\(dir)/take.\(format)"
            let record = try jaq(["record", "-q", "-d", "24000f", "-f", format, "-o", path, "jaq-1-ramp:out_L"],
                                 server: server, directory: dir)
            #expect(record.status == 0, "\(format): \(record.error)")
            // Codecs pad to their frame size (mp3: 1152); the length is the take's within a frame.
            let decoded = try readSamples24(path)
            #expect(decoded.channels == 1 && abs(decoded.samples.count - 24000) <= 1152, "\(format): \(decoded.samples.count) frames")
            if format != "opus" {  // Debian's sox has no Opus reader; an Ogg file is one stream, not a chain
                let sox = try #require(soxInfo(path), "sox reads \(path)")
                // (sox keeps the MP3 encoder's delay and padding: up to two frames more.)
                #expect(sox.channels == 1 && abs(sox.samples - 24000) <= 2304, "\(format): sox sees \(sox.samples) samples")
                let rate = try runProcess(["soxi", "-r", path]).output.trimmingCharacters(in: .whitespacesAndNewlines)
                #expect(rate == "48000", "\(format) rate \(rate)")
            }
        }
    }

    @Test(arguments: JackServer.Backend.allCases)
    func interleavedTakesHoldEveryTrackInOneFileInPortOrder(backend: JackServer.Backend) throws {
        let server = try JackServer(backend: backend)
        defer { server.stop() }
        let dir = scratchDirectory("interleaved")
        defer { removeScratch(dir) }
        try writeRamp("\(dir)/multi.wav", frames: 72000, channels: 3, offset: 7)
        let (at, play) = try playAhead(["multi.wav"], server: server, dir: dir, ports: "jaq-1-multi:out_", count: 3)
        // Ports named out of order: the file's channels follow the command line.
        let record = try jaq(["record", "-q", "--at", "\(at)", "-d", "48000f", "--interleaved", "-o", "all.wav",
                              "jaq-1-multi:out_3", "jaq-1-multi:out_1", "jaq-1-multi:out_2"],
                             server: server, directory: dir)
        #expect(record.status == 0, "\(record.error)")
        waitForExit(play)
        let take = try readSamples24("\(dir)/all.wav")
        #expect(take.channels == 3)
        exactUnlessCyclesRanLate(server) { #expect(take.samples.count == 3 * 48000, "\(take.samples.count / 3) frames") }
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/all-01.wav"), "one file, not one per track")
        let order = [2, 0, 1]
        let mismatch = take.samples.indices.first { take.samples[$0] != rampValue($0 / 3, offset: 7, channel: order[$0 % 3]) }
        exactUnlessCyclesRanLate(server) { #expect(mismatch == nil, "interleaved sample \(mismatch ?? -1) differs") }
    }

    /// One float file per track from a 6-channel player: tracks are taken from the window four
    /// at a time, then one by one; each file holds its own port's samples.
    @Test(arguments: JackServer.Backend.allCases)
    func floatTracksEachHoldTheirOwnPort(backend: JackServer.Backend) throws {
        let server = try JackServer(backend: backend)
        defer { server.stop() }
        let dir = scratchDirectory("tracks")
        defer { removeScratch(dir) }
        try writeRamp("\(dir)/six.wav", frames: 72000, channels: 6, offset: 3)
        let (at, play) = try playAhead(["six.wav"], server: server, dir: dir, ports: "jaq-1-six:out_", count: 6)
        let record = try jaq(["record", "-q", "--at", "\(at)", "-d", "48000f", "-b", "float", "-o", "t-{n}.wav", "jaq-1-six:out_"],
                             server: server, directory: dir)
        #expect(record.status == 0, "\(record.error)")
        waitForExit(play)
        for track in 1...6 {
            let take = try readFloatsAs24("\(dir)/t-0\(track).wav")
            #expect(take.channels == 1 && take.samples.count == 48000, "track \(track)")
            let mismatch = take.samples.indices.first { take.samples[$0] != rampValue($0, offset: 3, channel: track - 1) }
            exactUnlessCyclesRanLate(server) { #expect(mismatch == nil, "track \(track): frame \(mismatch ?? -1) differs") }
        }
    }

    /// Samples at full scale are counted the same in every sample format of the take and
    /// reported when the take ends.
    @Test func clippedSamplesAreCountedInEveryFormat() throws {
        let server = try JackServer()
        defer { server.stop() }
        let dir = scratchDirectory("clips")
        defer { removeScratch(dir) }
        // 48000 frames at a moderate level, 10 at +full scale and 7 at -full scale, scattered
        // (some in the first and last 8 samples of a buffer, some in the tail of a vector loop).
        var samples = [Int16](repeating: 1000, count: 48000)
        for i in [0, 7, 8, 1023, 4096, 9999, 23456, 40000, 47991, 47999] { samples[i] = .max }
        for i in [1, 9, 17, 2047, 30001, 45000, 47998] { samples[i] = .min }
        let info = SoundFile.Info(sampleRate: 48000, channelCount: 1, format: SoundFile.Format(.wav, .pcm16))
        let file = try SoundFile(path: "\(dir)/hot.wav", mode: .write, format: info)
        _ = samples.withUnsafeBufferPointer { file.writeFrames($0) }
        try file.close()
        for bits in ["float", "16", "24", "32"] {
            let (at, play) = try playAhead(["hot.wav"], server: server, dir: dir, ports: "jaq-1-hot:out_L")
            let record = try jaq(["record", "--at", "\(at)", "-d", "48000f", "-b", bits, "-o", "t\(bits)-{n}.wav", "jaq-1-hot:out_L"],
                                 server: server, directory: dir)
            #expect(record.status == 0, "\(record.error)")
            waitForExit(play)
            let said = record.output + record.error
            exactUnlessCyclesRanLate(server) { #expect(said.contains("; 17 samples clipped"), "-b \(bits): \(said)") }
        }
    }

    @Test func tracksAreAlignedByTheirPortsCaptureLatency() throws {
        let server = try JackServer()
        defer { server.stop() }
        let dir = scratchDirectory("latency")
        defer { removeScratch(dir) }
        try writeRamp("\(dir)/ramp.wav", frames: 72000, offset: 1)
        let at = try frameNow(server) + 5 * 48000
        let play = try jaqInBackground(["play", "--at", "\(at)", "ramp.wav"], server: server, log: "\(dir)/play.log", directory: dir)
        #expect(waitForPorts(server, containing: "jaq-1-ramp:out_L") != nil)
        // The dummy backend's capture ports report 256 frames of capture latency; jaq's own none.
        // The same take without compensation, recorded at the same time:
        let raw = try jaqInBackground(["record", "--at", "\(at)", "-d", "24000f", "--no-latency-compensation", "-o", "raw-{n}.wav",
                                       "system:capture_1", "jaq-1-ramp:out_L"], server: server, log: "\(dir)/raw.log", directory: dir)
        let compensated = try jaq(["record", "--at", "\(at)", "-d", "48000f", "-o", "comp-{n}.wav",
                                   "system:capture_1", "jaq-1-ramp:out_L"], server: server, directory: dir)
        #expect(compensated.status == 0, "\(compensated.error)")
        #expect(compensated.error.contains("latency compensation (frames): system:capture_1 +256, jaq-1-ramp:out_L +0"),
                "\(compensated.error)")
        #expect(waitForExit(raw) == 0)
        let rawLog = (try? String(contentsOfFile: "\(dir)/raw.log", encoding: .utf8)) ?? ""
        #expect(!rawLog.contains("latency compensation"), "\(rawLog)")
        waitForExit(play)
        // The track without extra latency is still the one on the take's first frame, bit-exact;
        // both tracks have the take's length.
        let ramp = try readSamples24("\(dir)/comp-02.wav").samples
        #expect(ramp.count == 48000 && readSamples24Count("\(dir)/comp-01.wav") == 48000)
        let rawRamp = try readSamples24("\(dir)/raw-02.wav").samples
        exactUnlessCyclesRanLate(server) {
            #expect(ramp.indices.allSatisfy { ramp[$0] == rampValue($0, offset: 1) }, "ramp track starts on frame \(at)")
            #expect(rawRamp.count == 24000 && rawRamp.indices.allSatisfy { rawRamp[$0] == rampValue($0, offset: 1) })
        }
    }

    /// Reads a float file as 24-bit integers (value × 2^23), interleaved.
    private func readFloatsAs24(_ path: String) throws -> (channels: Int, samples: [Int32]) {
        let file = try SoundFile(path: path, mode: .read)
        let frames = Int(file.info.frameCount)
        var samples = [Float](repeating: 0, count: frames * file.info.channelCount)
        let transfer = samples.withUnsafeMutableBufferPointer { file.readFrames(into: $0) }
        try file.close()
        return (file.info.channelCount, samples.prefix(transfer.count * file.info.channelCount).map { Int32(($0 * 8_388_608).rounded()) })
    }

    private func readSamples24Count(_ path: String) -> Int {
        (try? readSamples24(path).samples.count) ?? -1
    }
}
