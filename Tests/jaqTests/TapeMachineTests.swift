import Foundation
import JackTestSupport
import Testing

/// `jaq record --transport --multi`: a tape machine beside the DAW (Docs/cli.md). One take per
/// roll, numbered by {take}, each as long as its roll plus the pre-roll, each on its roll's
/// transport frame (Broadcast Wave); the frames are the source's, in order; Ctrl-C while armed
/// ends it with exit 0 and no empty take; `--on-take-end` runs once per take with its files.
@Suite(.serialized) struct TapeMachineTests {
    func waitForLog(_ path: String, count: Int, of words: String, timeout: Double = 20) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let log = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
            if log.components(separatedBy: words).count - 1 >= count { return true }
            usleep(20_000)
        }
        return false
    }

    @Test(arguments: JackServer.Backend.allCases)
    func twoRollsMakeTwoTakesOfTheirLengthsOnTheirPositions(backend: JackServer.Backend) throws {
        let server = try JackServer(backend: backend)
        defer { server.stop() }
        let dir = scratchDirectory("tape")
        defer { removeScratch(dir) }
        try writeRamp("\(dir)/ramp.wav", frames: 30 * 48000)
        let (at, play) = try playAhead(["ramp.wav"], options: ["--quiet"], server: server, dir: dir, ports: "jaq-1-ramp:out_L")
        defer { kill(play.processIdentifier, SIGTERM); waitForExit(play) }
        #expect(try jaq(["transport", "locate", "96000"], server: server).status == 0)
        let log = "\(dir)/record.log"
        let record = try jaqInBackground(["record", "--transport", "--multi", "--pre-roll", "0.1", "-o", "take-{take}.wav",
                                          "--on-take-end", "printf '%s\\n' >> ended.txt", "jaq-1-ramp:out_L"],
                                         server: server, log: log, directory: dir)
        #expect(waitForLog(log, count: 1, of: "waiting for JACK transport"))
        // Both rolls inside the ramp: it plays from `at`.
        while try frameNow(server) < at + 24000 { usleep(20_000) }
        #expect(try jaq(["transport", "start"], server: server).status == 0)
        usleep(800_000)
        #expect(try jaq(["transport", "stop"], server: server).status == 0)
        #expect(waitForLog(log, count: 2, of: "waiting for JACK transport"), "armed again after the first take")
        #expect(try jaq(["transport", "locate", "480000"], server: server).status == 0)
        #expect(try jaq(["transport", "start"], server: server).status == 0)
        usleep(500_000)
        #expect(try jaq(["transport", "stop"], server: server).status == 0)
        #expect(waitForLog(log, count: 3, of: "waiting for JACK transport"), "armed again after the second take")
        kill(record.processIdentifier, SIGINT)
        #expect(waitForExit(record, timeout: 20) == 0, "Ctrl-C while armed ends the tape machine with 0")

        let text = try String(contentsOfFile: log, encoding: .utf8)
        let rolled = frames(after: "transport rolling at JACK frame", in: text)
        let stopped = frames(after: "transport stopped at JACK frame", in: text)
        try #require(rolled.count == 2 && stopped.count == 2, "\(text)")
        for (index, position) in [96000, 480000].enumerated() {
            let path = "\(dir)/take-\(String(format: "%03d", index + 1)).wav"
            let take = try readSamples24(path)
            // The roll plus 0.1 s before it, the ramp's frames in order from the pre-roll's first.
            #expect(Int64(take.samples.count) == stopped[index] - rolled[index] + 4800, "\(path): \(text)")
            let first = rolled[index] - 4800 - at + 1
            #expect(take.samples.first.map(Int64.init) == first, "\(path) starts on the pre-roll's frame")
            // Under PipeWire a cycle that ran late can repeat or miss a period (Docs/queues.md),
            // and it does not always log one: once in the first of six runs here.
            let xruns = server.xrunCount
            let wrong = take.samples.indices.first { Int64(take.samples[$0]) != first + Int64($0) }
            withKnownIssue(Comment(rawValue: "PipeWire (\(xruns) late cycles logged) can repeat or miss a period"), isIntermittent: true) {
                #expect(wrong == nil, "\(path) holds the ramp's frames in order; from frame \(wrong ?? 0): \(wrong.map { Array(take.samples[$0...].prefix(3)) } ?? []), expected \(first + Int64(wrong ?? 0))")
            } when: { backend == .pipeWire }
            let info = try jaq(["info", "--json", path], server: nil)
            #expect(info.output.contains("\"timeReference\" : \(position - 4800)"), "\(path): \(info.output)")
        }
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/take-003.wav"), "the armed third take never rolled: no file")
        #expect(text.contains("2 takes recorded"), "\(text)")
        #expect(text.contains("transport stopped: ") && text.contains(" in take-001.wav") && text.contains(" in take-002.wav"),
                "each take is reported with its own file: \(text)")
        let ended = try String(contentsOfFile: "\(dir)/ended.txt", encoding: .utf8)
        #expect(ended == "take-001.wav\ntake-002.wav\n", "--on-take-end ran once per take: \(ended)")
    }

    /// A roll right after a stop (before the take is closed) still starts the next take on its
    /// frame, with its whole pre-roll (the previous take's tail); SIGTERM in the middle of a roll
    /// ends that take cleanly, with exit 0.
    @Test func aQuickSecondRollAndSIGTERMInATakeLoseNothing() throws {
        let server = try JackServer()
        defer { server.stop() }
        let dir = scratchDirectory("tape-quick")
        defer { removeScratch(dir) }
        try writeRamp("\(dir)/ramp.wav", frames: 30 * 48000)
        let (at, play) = try playAhead(["ramp.wav"], options: ["--quiet"], server: server, dir: dir, ports: "jaq-1-ramp:out_L")
        defer { kill(play.processIdentifier, SIGTERM); waitForExit(play) }
        let log = "\(dir)/record.log"
        // A pre-roll longer than the pause between the rolls: the second take's pre-roll is the first take's tail.
        let record = try jaqInBackground(["record", "--transport", "--multi", "--pre-roll", "0.5", "-o", "take-{take}.wav", "jaq-1-ramp:out_L"],
                                         server: server, log: log, directory: dir)
        #expect(waitForLog(log, count: 1, of: "waiting for JACK transport"))
        while try frameNow(server) < at + 48000 { usleep(20_000) }
        #expect(try jaq(["transport", "start"], server: server).status == 0)
        usleep(600_000)
        #expect(try jaq(["transport", "stop"], server: server).status == 0)
        #expect(try jaq(["transport", "start"], server: server).status == 0)  // at once: the first take is still being closed
        usleep(400_000)
        #expect(try jaq(["transport", "stop"], server: server).status == 0)
        // Armed again after the second take (the second roll came before jaq was armed: it said nothing then).
        #expect(waitForLog(log, count: 2, of: "waiting for JACK transport"))
        #expect(waitForLog(log, count: 2, of: "transport stopped: "))
        #expect(try jaq(["transport", "start"], server: server).status == 0)
        #expect(waitForLog(log, count: 3, of: "transport rolling at JACK frame"))
        usleep(700_000)
        kill(record.processIdentifier, SIGTERM)
        #expect(waitForExit(record, timeout: 20) == 0, "SIGTERM ends the take being recorded, exit 0")
        #expect(try jaq(["transport", "stop"], server: server).status == 0)

        let text = try String(contentsOfFile: log, encoding: .utf8)
        let rolled = frames(after: "transport rolling at JACK frame", in: text)
        let stopped = frames(after: "transport stopped at JACK frame", in: text)
        try #require(rolled.count == 3 && stopped.count == 2, "\(text)")
        for index in 0..<3 {
            let path = "\(dir)/take-\(String(format: "%03d", index + 1)).wav"
            let take = try readSamples24(path)
            let first = rolled[index] - 24000 - at + 1
            if index < 2 {
                #expect(Int64(take.samples.count) == stopped[index] - rolled[index] + 24000, "\(path): \(text)")
            } else {
                #expect(take.samples.count > 24000, "\(path): the take SIGTERM ended has its frames")
            }
            exactUnlessCyclesRanLate(server) {
                #expect(take.samples.enumerated().allSatisfy { Int64($0.element) == first + Int64($0.offset) },
                        "\(path) holds the ramp from its pre-roll's frame: \(take.samples.prefix(3))")
            }
        }
        #expect(text.contains("terminated"), "\(text)")
    }

    @Test func aFailingTakeEndCommandIsReportedAndTheTakeKept() throws {
        let server = try JackServer()
        defer { server.stop() }
        let dir = scratchDirectory("tape-hook")
        defer { removeScratch(dir) }
        let result = try jaq(["record", "-d", "0.2", "-o", "take-{n}.wav", "--on-take-end", "exit 3", "system:capture_1"],
                             server: server, directory: dir)
        #expect(result.status == 0, "\(result.error)")
        #expect(result.error.contains("--on-take-end: `exit 3` exited 3 for take-01.wav"), "\(result.error)")
        #expect(try readSamples24("\(dir)/take-01.wav").samples.count == 9600)
        // The command reads /dev/null, never jaq's standard input (a pipe here, a terminal for a user).
        let reader = try jaq(["record", "-d", "0.2", "-o", "read-{n}.wav", "--on-take-end", "cat > stdin.txt; true", "system:capture_1"],
                             server: server, timeout: 20, directory: dir)
        #expect(reader.status == 0 && (try? String(contentsOfFile: "\(dir)/stdin.txt", encoding: .utf8)) == "", "\(reader.error)")
        // An encoded take runs it too, once closed.
        let m4a = try jaq(["record", "-d", "0.2", "-f", "m4a", "-o", "take.m4a", "--on-take-end", "printf '%s\\n' >> ended.txt",
                           "system:capture_1"], server: server, directory: dir)
        #expect(m4a.status == 0, "\(m4a.error)")
        #expect((try? String(contentsOfFile: "\(dir)/ended.txt", encoding: .utf8)) == "take.m4a\n")
    }

    @Test(arguments: [(["--multi", "system"], "give --transport too"),
                      (["--multi", "--transport", "-o", "take.wav", "system"], "needs {take}")])
    func multiWithoutWhatItNeedsIsAUsageError(_ arguments: [String], _ words: String) throws {
        let result = try jaq(["record"] + arguments, server: nil)
        #expect(result.status == 64 && result.error.contains(words), "\(result.status): \(result.error)")
    }
}
