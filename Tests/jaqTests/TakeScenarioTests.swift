import Foundation
import JackTestSupport
import Testing

/// The same take scenarios over every kind of take file: a 24-bit WAV, a 24-bit FLAC and an
/// ALAC .m4a (one file of every track) all go through the one take session (RecordSession),
/// so a start on a frame with a pre-roll, latency compensation and the tape machine behave
/// alike, and each lands the source's frames bit for bit where a WAV take puts them.
@Suite(.serialized) struct TakeScenarioTests {
    /// A take kind: its options and extension.
    struct Kind: CustomTestStringConvertible, Sendable {
        let options: [String]
        let ext: String
        var testDescription: String { ext }
        /// Every track in one file (encoded takes).
        var oneFile: Bool { ext == "m4a" }

        static let all = [Kind(options: ["-f", "wav", "-b", "24"], ext: "wav"),
                          Kind(options: ["-f", "flac", "-b", "24"], ext: "flac"),
                          Kind(options: ["-f", "m4a", "--codec", "alac", "-b", "24"], ext: "m4a")]
    }

    /// A take's samples as 24-bit integers, interleaved. ffmpeg decodes an .m4a, and its last
    /// packet whole: the take is as long as its packet table says (`jaq info`).
    func samples24(_ path: String, dir: String) throws -> (channels: Int, samples: [Int32]) {
        guard path.hasSuffix(".m4a") else { return try readSamples24(path) }
        let decoded = "\(dir)/decoded-\(UUID().uuidString).wav"
        _ = try CompressedFileTests().ffmpeg(["-i", path, "-c:a", "pcm_s24le", decoded])
        let all = try readSamples24(decoded)
        let info = try jaq(["info", path], server: nil).output
        let frames = try #require(frames(after: "frames:", in: info).first, "\(info)")
        #expect(all.samples.count >= Int(frames) * all.channels, "ffmpeg decodes the whole take")
        return (all.channels, Array(all.samples.prefix(Int(frames) * all.channels)))
    }

    /// `--at F --pre-roll 1 -d 2` on a ramp jaq play starts at F + 0.5 s: 3 s of take, its first
    /// frame F − 1 s, silence up to the ramp, then the ramp bit for bit; the same report lines.
    @Test(arguments: Kind.all) func aTakeOnAFrameWithAPreRoll(kind: Kind) throws {
        let server = try JackServer()
        defer { server.stop() }
        let dir = scratchDirectory("scenario-at")
        defer { removeScratch(dir) }
        try writeRamp("\(dir)/ramp.wav", frames: 96000)
        let at = try frameNow(server) + startLead
        let play = try jaqInBackground(["play", "--at", "\(at + 24000)", "ramp.wav"], server: server, log: "\(dir)/play.log", directory: dir)
        defer { waitForExit(play) }
        #expect(waitForPorts(server, containing: "jaq-1-ramp:out_L") != nil)
        let record = try jaq(["record", "--at", "\(at)", "--pre-roll", "1", "-d", "2", "-o", "take.\(kind.ext)"] + kind.options
                             + ["jaq-1-ramp:out_L"], server: server, directory: dir)
        #expect(record.status == 0, "\(record.error)")
        #expect(record.error.contains("recording 1 track from JACK frame \(at) to take.\(kind.ext)"), "\(record.error)")
        #expect(record.error.contains("duration reached: 00:03.0 (144000 frames) in take.\(kind.ext)"), "\(record.error)")
        let take = try samples24("\(dir)/take.\(kind.ext)", dir: dir).samples
        #expect(take.count == 144000, "pre-roll (1 s) plus duration (2 s)")
        guard take.count == 144000 else { return }
        exactUnlessCyclesRanLate(server) {
            // Take frame 0 is JACK frame at − 48000; the ramp (1, 2, 3, ...) starts at at + 24000.
            #expect(take[0..<72000].allSatisfy { $0 == 0 }, "silence before the ramp")
            let mismatch = (72000..<144000).first { take[$0] != Int32($0 - 72000 + 1) }
            #expect(mismatch == nil, "frame \(mismatch ?? -1) is \(mismatch.map { take[$0] } ?? 0), the ramp's \((mismatch ?? 0) - 72000 + 1)")
        }
    }

    /// Two ports with different capture latencies (the dummy backend's capture port: 256 frames;
    /// jaq play's: none): every kind of take compensates, and says so; the track without extra
    /// latency starts on the take's first frame, bit for bit.
    @Test(arguments: Kind.all) func latencyCompensation(kind: Kind) throws {
        let server = try JackServer()
        defer { server.stop() }
        let dir = scratchDirectory("scenario-latency")
        defer { removeScratch(dir) }
        try writeRamp("\(dir)/ramp.wav", frames: 72000, offset: 1)
        let at = try frameNow(server) + startLead
        let play = try jaqInBackground(["play", "--at", "\(at)", "ramp.wav"], server: server, log: "\(dir)/play.log", directory: dir)
        defer { waitForExit(play) }
        #expect(waitForPorts(server, containing: "jaq-1-ramp:out_L") != nil)
        let output = kind.oneFile ? "take.\(kind.ext)" : "take-{n}.\(kind.ext)"
        let record = try jaq(["record", "--at", "\(at)", "-d", "48000f", "-o", output] + kind.options
                             + ["system:capture_1", "jaq-1-ramp:out_L"], server: server, directory: dir)
        #expect(record.status == 0, "\(record.error)")
        #expect(record.error.contains("latency compensation (frames): system:capture_1 +256, jaq-1-ramp:out_L +0"), "\(record.error)")
        let ramp: [Int32]
        if kind.oneFile {
            let take = try samples24("\(dir)/take.\(kind.ext)", dir: dir)
            #expect(take.channels == 2)
            ramp = stride(from: 1, to: take.samples.count, by: 2).map { take.samples[$0] }
        } else {
            ramp = try samples24("\(dir)/take-02.\(kind.ext)", dir: dir).samples
            #expect(try samples24("\(dir)/take-01.\(kind.ext)", dir: dir).samples.count == 48000)
        }
        #expect(ramp.count == 48000)
        exactUnlessCyclesRanLate(server) {
            #expect(ramp.indices.allSatisfy { ramp[$0] == Int32($0 + 1) }, "the ramp track starts on frame \(at)")
        }
    }

    /// `--transport --multi`: two rolls make two takes of their rolling frames plus the pre-roll,
    /// each reported with its file, whatever the take's kind.
    @Test(arguments: Kind.all) func aTapeMachineOfTwoRolls(kind: Kind) throws {
        let server = try JackServer()
        defer { server.stop() }
        let dir = scratchDirectory("scenario-tape")
        defer { removeScratch(dir) }
        try writeRamp("\(dir)/ramp.wav", frames: 20 * 48000)
        let (at, play) = try playAhead(["ramp.wav"], options: ["--quiet"], server: server, dir: dir, ports: "jaq-1-ramp:out_L")
        defer { kill(play.processIdentifier, SIGTERM); waitForExit(play) }
        let log = "\(dir)/record.log"
        let record = try jaqInBackground(["record", "--transport", "--multi", "--pre-roll", "0.1", "-o", "take-{take}.\(kind.ext)"]
                                         + kind.options + ["jaq-1-ramp:out_L"], server: server, log: log, directory: dir)
        let tape = TapeMachineTests()
        #expect(tape.waitForLog(log, count: 1, of: "waiting for JACK transport"))
        while try frameNow(server) < at + 24000 { usleep(20_000) }
        for roll in 0..<2 {
            #expect(try jaq(["transport", "start"], server: server).status == 0)
            usleep(600_000)
            #expect(try jaq(["transport", "stop"], server: server).status == 0)
            #expect(tape.waitForLog(log, count: roll + 2, of: "waiting for JACK transport"), "armed again after take \(roll + 1)")
        }
        kill(record.processIdentifier, SIGINT)
        #expect(waitForExit(record, timeout: 20) == 0, "Ctrl-C while armed ends the tape machine with 0")
        let text = try String(contentsOfFile: log, encoding: .utf8)
        let rolled = frames(after: "transport rolling at JACK frame", in: text)
        let stopped = frames(after: "transport stopped at JACK frame", in: text)
        try #require(rolled.count == 2 && stopped.count == 2, "\(text)")
        for index in 0..<2 {
            let name = "take-\(String(format: "%03d", index + 1)).\(kind.ext)"
            let take = try samples24("\(dir)/\(name)", dir: dir).samples
            #expect(Int64(take.count) == stopped[index] - rolled[index] + 4800, "\(name): \(text)")
            #expect(text.contains(" in \(name)"), "\(name) is reported: \(text)")
            let first = rolled[index] - 4800 - at + 1
            exactUnlessCyclesRanLate(server) {
                #expect(take.first.map(Int64.init) == first, "\(name) starts on the pre-roll's frame")
                #expect(take.indices.allSatisfy { Int64(take[$0]) == first + Int64($0) }, "\(name) holds the ramp in order")
            }
        }
        #expect(text.contains("2 takes recorded"), "\(text)")
    }
}
