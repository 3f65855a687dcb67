import Testing
import Foundation
import JackTestSupport
import SoundFile

/// `jaq record` and `jaq play` end to end: the built binary on a private dummy server.
@Suite(.serialized) struct RecordCommandTests {
    /// The frame named in a log line "... JACK frame N ...".
    /// Rolls the transport for 1.2 s once the player started at `at` plays and the recorder
    /// waits for the transport (a second after `at`).
    func rollTransport(_ server: JackServer, after at: Int64) throws {
        var waited = 0
        while try frameNow(server) < at + 48000 && waited < 200 {
            usleep(50_000)
            waited += 1
        }
        #expect(try jaq(["transport", "start"], server: server).status == 0)
        usleep(1_200_000)
        #expect(try jaq(["transport", "stop"], server: server).status == 0)
    }

    @Test(arguments: JackServer.Backend.allCases)
    func playAndRecordStartedOnTheSameFrameAreBitExactAndAligned(backend: JackServer.Backend) throws {
        let server = try JackServer(backend: backend)
        defer { server.stop() }
        let dir = scratchDirectory("align")
        defer { removeScratch(dir) }
        for i in 1...4 { try writeRamp("\(dir)/r\(i).wav", frames: 96000, offset: Int32(i * 100_000)) }
        let at = try frameNow(server) + startLead
        let play = try jaqInBackground(["play", "--at", "\(at)", "r1.wav", "r2.wav", "r3.wav", "r4.wav"],
                                       server: server, log: "\(dir)/play.log", directory: dir)
        // Every player's port under its final name (a queue's client takes the name jaq gives it).
        for i in 1...4 { #expect(waitForPorts(server, containing: "jaq-\(i)-r\(i):out_L") != nil) }
        let record = try jaq(["record", "--at", "\(at)", "-d", "96000f", "-o", "take-{n}.wav", "jaq-[1-4]-r[1-4]:out_L"],
                             server: server, directory: dir)
        #expect(record.status == 0, "\(record.error)")
        #expect(waitForExit(play) == 0)
        let playLog = (try? String(contentsOfFile: "\(dir)/play.log", encoding: .utf8)) ?? ""
        // Exact, unless the machine was too loaded for the server to run its cycles in time
        // (it logged xruns) and jaq play said which frames it could not play: then a mismatch
        // is a known issue naming them, not jaq's failure.
        let xruns = server.xrunCount
        let lossReported = playLog.contains("frames not played")
        // PipeWire runs the graph on past a late client, which then reads the next cycle's data
        // (see Docs/queues.md, PipeWire): a mismatch is a known issue there when jaq record
        // reported the xruns.
        let lateUnderPipeWire = backend == .pipeWire && record.error.contains("xruns while recording")
        try withKnownIssue(Comment(rawValue: "the server logged \(xruns) xruns; jaq play: \(playLog); jaq record: \(record.error)"),
                           isIntermittent: true) {
            try checkTakes(dir: dir, playLog: playLog, record: record)
        } when: { (xruns > 0 && lossReported) || lateUnderPipeWire || (backend == .pipeWire && xruns > 0) }
    }

    func checkTakes(dir: String, playLog: String, record: (status: Int32, output: String, error: String)) throws {
        #expect(playLog.contains("done: every frame of every file played"), "\(playLog)")
        for i in 1...4 {
            guard FileManager.default.fileExists(atPath: "\(dir)/take-0\(i).wav") else {
                Issue.record("take-0\(i).wav is missing; jaq record said: \(record.error) \(record.output); play: \(playLog); files: \((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [])")
                continue
            }
            let take = try readSamples24("\(dir)/take-0\(i).wav")
            if take.samples.count != 96000 { Issue.record("record said: \(record.error)") }
            #expect(take.samples.count == 96000)
            // Sample n is the source's sample n: the ramp value names the frame.
            #expect(take.samples.first == Int32(i * 100_000) && take.samples.last == Int32(i * 100_000 + 95999), "track \(i)")
            #expect(take.samples.enumerated().allSatisfy { $0.element == Int32(i * 100_000) + Int32($0.offset) }, "track \(i) bit-exact")
        }
    }

    @Test(arguments: JackServer.Backend.allCases)
    func preRollIncludesTheSecondsBeforeTheStart(backend: JackServer.Backend) throws {
        let server = try JackServer(backend: backend)
        defer { server.stop() }
        let dir = scratchDirectory("preroll")
        defer { removeScratch(dir) }
        try writeRamp("\(dir)/ramp.wav", frames: 96000)
        let at = try frameNow(server) + startLead
        // The player starts 0.5 s after the take's nominal start; the take includes 1 s before it.
        let play = try jaqInBackground(["play", "--at", "\(at + 24000)", "ramp.wav"], server: server, log: "\(dir)/play.log", directory: dir)
        #expect(waitForPorts(server, containing: "jaq-1-ramp:out_L") != nil)
        let record = try jaq(["record", "--at", "\(at)", "--pre-roll", "1", "-d", "2", "-o", "take.wav", "jaq-1-ramp:out_L"],
                             server: server, directory: dir)
        #expect(record.status == 0, "\(record.error)")
        waitForExit(play)
        let take = try readSamples24("\(dir)/take.wav")
        #expect(take.samples.count == 3 * 48000, "pre-roll (1 s) plus duration (2 s)")
        // Under PipeWire a cycle that ran late can repeat or miss a period (Docs/queues.md).
        let xruns = server.xrunCount
        withKnownIssue(Comment(rawValue: "PipeWire logged \(xruns) late cycles"), isIntermittent: true) {
            // Take frame 0 is JACK frame at - 48000; the ramp starts at at + 24000.
            #expect(take.samples[0..<72000].allSatisfy { $0 == 0 })
            #expect(take.samples[72000] == 1)
            #expect(take.samples[72000 + 47999] == 48000)
        } when: { backend == .pipeWire && xruns > 0 }
    }

    /// A timed take ends once its last frame is captured: the queue's partly filled buffer is
    /// delivered then (AudioQueueFlush), not when its 16384 frames are full. The take starts on
    /// frame `at`, as does the queue's first buffer, so waiting for that buffer ended a 1000-frame
    /// take 15384 frames (0.32 s) after its end, at the earliest, before `jaq time` could even
    /// start. What is measured is the frame `jaq time` reads after jaq record exited, less the
    /// take's end: jaq's exit, a process start and a JACK client, well under the 12000 frames
    /// (0.25 s) allowed. A loaded machine may make one reading slow: the best of three counts.
    @Test func aTimedTakeEndsWhenItsLastFrameIsCapturedNotWhenItsBufferFills() throws {
        let server = try JackServer()
        defer { server.stop() }
        let dir = scratchDirectory("prompt-end")
        defer { removeScratch(dir) }
        var lags: [Int64] = []
        for attempt in 1...3 {
            let at = try frameNow(server) + 48000
            let record = try jaq(["record", "--quiet", "--at", "\(at)", "-d", "1000f", "-o", "take-\(attempt).wav", "system:capture_1"],
                                 server: server, directory: dir)
            let after = try frameNow(server)
            #expect(record.status == 0, "\(record.error)")
            #expect(try readSamples24("\(dir)/take-\(attempt).wav").samples.count == 1000, "the take holds exactly its frames")
            lags.append(after - (at + 1000))
            if lags.last! < 12000 { break }
        }
        #expect(lags.min()! < 12000, "frames from the take's end to the first reading after jaq record exited: \(lags)")
    }

    @Test(arguments: JackServer.Backend.allCases)
    func transportRollingStartsTheTakeAndStoppingEndsItOnTheFrame(backend: JackServer.Backend) throws {
        let server = try JackServer(backend: backend)
        defer { server.stop() }
        let dir = scratchDirectory("transport")
        defer { removeScratch(dir) }
        try writeRamp("\(dir)/ramp.wav", frames: 10 * 48000)
        let (at, play) = try playAhead(["ramp.wav"], options: ["--quiet"], server: server, dir: dir, ports: "jaq-1-ramp:out_L")
        let record = try jaqInBackground(["record", "--transport", "-o", "take.wav", "jaq-1-ramp:out_L"],
                                         server: server, log: "\(dir)/record.log", directory: dir)
        try rollTransport(server, after: at)
        #expect(waitForExit(record, timeout: 20) == 0)
        kill(play.processIdentifier, SIGTERM)
        waitForExit(play)
        let log = try String(contentsOfFile: "\(dir)/record.log", encoding: .utf8)
        let rolled = try #require(frame(after: "transport rolling at JACK frame", in: log), "\(log)")
        let stopped = try #require(frame(after: "transport stopped at JACK frame", in: log), "\(log)")
        let take = try readSamples24("\(dir)/take.wav")
        #expect(Int64(take.samples.count) == stopped - rolled, "the take spans exactly the rolling frames")
        #expect(Int64(take.samples.first ?? -1) == rolled - at + 1, "the take starts on the frame the transport rolled")
    }

    /// At most the last 1.5 s is missing: the headers are brought up to date once a second, and
    /// the queue buffer being filled holds 0.34 s (Docs/cli.md).
    @Test func aTakeKilledWithSIGKILLOpensInSoxWithAllButTheLastSecondAndAHalf() throws {
        let server = try JackServer()
        defer { server.stop() }
        let dir = scratchDirectory("kill")
        defer { removeScratch(dir) }
        try writeRamp("\(dir)/ramp.wav", frames: 20 * 48000, channels: 2)
        let play = try jaqInBackground(["play", "--quiet", "ramp.wav"], server: server, log: "\(dir)/play.log", directory: dir)
        #expect(waitForPorts(server, containing: "jaq-1-ramp:out_", count: 2) != nil)
        let record = try jaqInBackground(["record", "-o", "take-{n}.wav", "jaq-1-ramp:out_[12]"], server: server,
                                         log: "\(dir)/record.log", directory: dir)
        // About 4 s into the take (counted from jaq's "recording ..." line, not from its exec).
        killWithSIGKILL(record, secondsAfterRecordingIn: "\(dir)/record.log", seconds: 4)
        kill(play.processIdentifier, SIGTERM)
        waitForExit(play)
        for n in 1...2 {
            let info = try #require(soxInfo("\(dir)/take-0\(n).wav"), "sox reads track \(n)")
            #expect(info.channels == 1)
            #expect(info.samples >= 48000 * 24 / 10, "all but the last 1.5 s of ~4 s (got \(info.samples))")
            // What is there is the right audio, in order.
            let take = try readSamples24("\(dir)/take-0\(n).wav")
            let first = try #require(take.samples.first { $0 != 0 })
            let index = take.samples.firstIndex(of: first)!
            let broken = take.samples[index...].indices.first { take.samples[$0] != first + Int32($0 - index) }
            exactUnlessCyclesRanLate(server, "track \(n)") {
                #expect(broken == nil, "track \(n): the ramp breaks at frame \(broken ?? -1) of \(take.samples.count)")
            }
        }
    }

    @Test func aFullDiskEndsWithValidFilesAndAClearMessage() throws {
        let server = try JackServer()
        defer { server.stop() }
        let dir = scratchDirectory("full")
        let disk = "\(dir)/disk"
        try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
        let mounted = try runProcess(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", disk]).status == 0
        defer {
            if mounted { _ = try? runProcess(["umount", disk]) }
            try? FileManager.default.removeItem(atPath: dir)
        }
        try writeRamp("\(dir)/ramp.wav", frames: 20 * 48000, channels: 8)
        let play = try jaqInBackground(["play", "--quiet", "--loop", "ramp.wav"], server: server, log: "\(dir)/play.log", directory: dir)
        defer { kill(play.processIdentifier, SIGTERM); waitForExit(play) }
        #expect(waitForPorts(server, containing: "jaq-1-ramp:out_", count: 8) != nil)
        // Without a tmpfs (no privilege), a file size limit makes writes fail the same way (EFBIG).
        let arguments = ["record", "-b", "float", "-o", "\(disk)/take-{n}.wav", "jaq-1-ramp:out_"]
        let command = mounted ? arguments : ["prlimit", "--fsize=1000000", "--", jaqBinary] + arguments
        let start = Date()
        let result = mounted ? try jaq(command, server: server, timeout: 30)
            : try runProcess(command, environment: server.environment, timeout: 30)
        #expect(result.status == 1, "exit status")
        #expect(Date().timeIntervalSince(start) < 10, "stops within a second of the disk filling (~1.3 s of audio fits)")
        let why = mounted ? "disk full" : "too large"
        let message = result.error.split(separator: "\n").first { $0.contains(why) } ?? ""
        #expect(message.contains("\(disk)/take-0"), "one line naming the file and why: \(result.error)")
        var lengths: [Int] = []
        for n in 1...8 {
            let info = try #require(soxInfo("\(disk)/take-0\(n).wav"), "sox reads track \(n)")
            #expect(info.samples > 0)
            lengths.append(info.samples)
        }
        // The tracks of a take have one length, and jaq says what it is.
        #expect(Set(lengths).count == 1, "track lengths \(lengths)")
        if mounted {
            #expect(result.error.contains("(\(lengths[0]) frames in every file)"), "\(result.error)")
        }
    }

    @Test func aServerThatStopsAnsweringGetsOneLineInsteadOfAHang() throws {
        let server = try JackServer()
        let pid = server.process.processIdentifier
        defer { kill(pid, SIGCONT); server.stop() }
        let dir = scratchDirectory("stopped")
        defer { removeScratch(dir) }
        try writeRamp("\(dir)/ramp.wav", frames: 4800)
        // A server that no longer answers (stopped, as a hung or overloaded one).
        kill(pid, SIGSTOP)
        var environment = server.environment
        environment["JAQ_SERVER_TIMEOUT"] = "3"
        for (arguments, what) in [(["record", "-d", "1", "-o", "take.wav", "system:capture_1"], "nothing was recorded"),
                                  (["play", "ramp.wav"], "nothing was played"), (["time"], "did not answer")] {
            let began = Date()
            let result = try runProcess([jaqBinary] + arguments, environment: environment, timeout: 60, currentDirectory: dir)
            #expect(result.status == 1, "\(arguments[0])")
            #expect(Date().timeIntervalSince(began) < 15, "\(arguments[0]) gave up in time")
            let lines = result.error.split(separator: "\n")
            #expect(lines.count == 1 && lines[0].contains("did not answer within 3 s") && lines[0].contains(what), "\(result.error)")
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: dir).sorted()
        #expect(left == ["ramp.wav"], "no take files left behind: \(left)")
    }

    @Test func badInputGetsOneLineAndANonZeroExit() throws {
        let server = try JackServer()
        defer { server.stop() }
        let dir = scratchDirectory("bad")
        defer { removeScratch(dir) }
        try "not audio\n".write(toFile: "\(dir)/notes.txt", atomically: true, encoding: .utf8)
        try writeRamp("\(dir)/ok.wav", frames: 4800)
        let cases: [(arguments: [String], status: Int32, mentions: String)] = [
            (["record", "nosuch:port"], 1, "nosuch:port"),
            (["record", "zzz[0-9]+$"], 1, "zzz[0-9]+$"),
            (["record", "-o", "/nonexistent/dir/take-{n}.wav", "system"], 1, "/nonexistent/dir"),
            (["record", "-o", "/proc/take-{n}.wav", "system"], 1, "/proc/take-01.wav"),
            (["record", "-f", "xyz", "system"], 64, "xyz"),
            (["record", "-d", "soon", "system"], 64, "soon"),
            (["record", "-d", "90s", "system"], 64, "write 90 for seconds or 90f for frames"),
            (["play", "\(dir)/missing.wav"], 1, "missing.wav"),
            (["play", "\(dir)/notes.txt"], 1, "notes.txt"),
            (["play", "--to", "1:nothing:here", "\(dir)/ok.wav"], 1, "nothing:here"),
            (["record", "--server", "jaq-no-such-server", "system"], 1, "jaq-no-such-server"),
        ]
        for test in cases {
            let result = try jaq(test.arguments, server: server, directory: dir)
            #expect(result.status == test.status, "\(test.arguments): \(result.error)")
            let lines = result.error.split(separator: "\n")
            #expect(lines.count == 1, "one line: \(result.error)")
            #expect(result.error.contains(test.mentions), "\(test.arguments) names \(test.mentions): \(result.error)")
        }
        // Nothing half-written is left behind.
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/take-01.wav"))
    }

    /// While a client opens, libjack's metadata database (libdb) writes its errors straight to
    /// stderr, past jack_set_error_function: "/dev/shm/jack_db-0/__db.002: No such file or
    /// directory" when another server, stopping, removes the database this process is opening
    /// (one CI run in a few hit it). jaq's failure stays one line. The broken database is made
    /// for certain, where no other server can see it: a mount namespace with a /dev/shm of its
    /// own, in which jack_db-UID is a file. JAQ_JACK_VERBOSE shows libdb's line (so it is there).
    @Test func whatLibjacksLibrariesPrintWhileAClientOpensStaysQuiet() throws {
        let wrapper = "mount -t tmpfs jaq-shm /dev/shm && touch /dev/shm/jack_db-$(id -u) && exec \"$@\""
        var environment = ProcessInfo.processInfo.environment
        environment["JACK_NO_START_SERVER"] = "1"
        let probe = try runProcess(["/usr/bin/unshare", "-m", "/bin/sh", "-c", "mount -t tmpfs jaq-shm /dev/shm"],
                                   environment: environment, timeout: 10)
        try #require(probe.status == 0, "needs a mount namespace (root): \(probe.error)")
        func run(verbose: Bool) throws -> (status: Int32, output: String, error: String) {
            var environment = environment
            if verbose { environment["JAQ_JACK_VERBOSE"] = "1" }
            return try runProcess(["/usr/bin/unshare", "-m", "/bin/sh", "-c", wrapper, "sh", jaqBinary,
                                   "record", "--server", "jaq-quiet-\(getpid())", "system"], environment: environment, timeout: 30)
        }
        let loud = try run(verbose: true)
        #expect(loud.error.contains("jack_db"), "libdb's complaint is reproduced: \(loud.error)")
        let quiet = try run(verbose: false)
        #expect(quiet.status == 1)
        #expect(quiet.error.split(separator: "\n").count == 1, "one line: \(quiet.error)")
        #expect(quiet.error.contains("jaq-quiet-\(getpid())"), "names the server: \(quiet.error)")
    }

    /// A program that registers its ports a second before it activates its client (as ecasound
    /// does for a moment): JACK2 refuses connections to them meanwhile. `jaq record` started
    /// as soon as the ports are listed waits for the client and records it.
    @Test func portsOfAClientStillStartingAreRecordedOnceItIsActive() throws {
        let server = try JackServer()
        defer { server.stop() }
        let dir = scratchDirectory("late")
        defer { removeScratch(dir) }
        try """
        #include <jack/jack.h>
        #include <stdlib.h>
        #include <unistd.h>
        static jack_port_t *ports[2];
        static int process(jack_nframes_t frames, void *arg) {
            for (int p = 0; p < 2; p++) {
                float *out = jack_port_get_buffer(ports[p], frames);
                for (jack_nframes_t i = 0; i < frames; i++) out[i] = 0.25f * (p + 1);
            }
            return 0;
        }
        int main(int argc, char **argv) {
            jack_client_t *client = jack_client_open("late", JackNoStartServer, NULL);
            if (!client) return 1;
            jack_set_process_callback(client, process, NULL);
            ports[0] = jack_port_register(client, "out_1", JACK_DEFAULT_AUDIO_TYPE, JackPortIsOutput, 0);
            ports[1] = jack_port_register(client, "out_2", JACK_DEFAULT_AUDIO_TYPE, JackPortIsOutput, 0);
            usleep(1000000);
            if (jack_activate(client)) return 1;
            sleep(atoi(argv[1]));
            jack_client_close(client);
            return 0;
        }
        """.write(toFile: "\(dir)/late.c", atomically: true, encoding: .utf8)
        let cc = Process()
        cc.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        cc.arguments = ["cc", "\(dir)/late.c", "-o", "\(dir)/late", "-ljack"]
        try cc.run()
        cc.waitUntilExit()
        try #require(cc.terminationStatus == 0, "cc late.c -ljack")
        let late = try server.spawn(["\(dir)/late", "6"], output: "\(dir)/late.log")
        defer { if late.isRunning { late.terminate() } }
        #expect(waitForPorts(server, containing: "late:out_", count: 2) != nil)
        let record = try jaq(["record", "--quiet", "-b", "float", "-d", "24000f", "-o", "take-{n}.wav", "late:out_"],
                             server: server, directory: dir)
        #expect(record.status == 0, "\(record.error)")
        for (track, value) in [(1, Float(0.25)), (2, Float(0.5))] {
            let file = try SoundFile(path: "\(dir)/take-0\(track).wav", mode: .read)
            var samples = [Float](repeating: 0, count: Int(file.info.frameCount))
            _ = samples.withUnsafeMutableBufferPointer { file.readFrames(into: $0) }
            try file.close()
            #expect(samples.count == 24000)
            exactUnlessCyclesRanLate(server) { #expect(samples.allSatisfy { $0 == value }, "track \(track): every frame is the client's") }
        }
    }

    @Test(arguments: [[], ["record"], ["play"], ["ports"], ["time"], ["transport"], ["info"]])
    func everyCommandHasHelpWithExamples(command: [String]) throws {
        let result = try jaq(command + ["--help"], server: nil)
        #expect(result.status == 0)
        let text = result.output + result.error
        #expect(text.contains("USAGE"), "\(command)")
        if !command.isEmpty { #expect(text.contains("Examples") || text.contains("EXAMPLES") || text.contains("example"), "\(command)") }
    }
}

/// On a server without realtime scheduling, the JACK process threads of jaq's clients run at
/// nice -10 where the system allows it (root here), so that ordinary threads, jaq's own writer
/// among them, do not preempt a cycle and make the client late.
@Suite(.serialized) struct ProcessThreadPriorityTests {
    @Test func processThreadsOutrankOrdinaryThreadsOnANonRealtimeServer() throws {
        guard getuid() == 0 else { return }  // nice -10 needs CAP_SYS_NICE; without it nothing changes
        let server = try JackServer()
        defer { server.stop() }
        let dir = scratchDirectory("nice")
        defer { removeScratch(dir) }
        let record = try jaqInBackground(["record", "-q", "-d", "10", "-o", "t-{n}.wav", "system:capture_1"],
                                         server: server, log: "\(dir)/record.log", directory: dir)
        defer { record.interrupt(); waitForExit(record) }
        func niceValues() -> [Int] {
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(record.processIdentifier)/task")) ?? []
            return tasks.compactMap { tid in
                // Field 19 of /proc/PID/task/TID/stat is the nice value (after the ")" of the name).
                guard let stat = try? String(contentsOfFile: "/proc/\(record.processIdentifier)/task/\(tid)/stat", encoding: .utf8),
                      let close = stat.lastIndex(of: ")") else { return nil }
                let fields = stat[stat.index(after: close)...].split(separator: " ")
                return fields.count > 16 ? Int(fields[16]) : nil
            }
        }
        #expect(waitUntil(10, poll: 0.05) { niceValues().contains(-10) }, "thread nice values: \(niceValues())")
        // The others keep the default.
        #expect(niceValues().contains(0))
    }

    /// Nice alone does not make a waking thread preempt a running one on Linux 6.12 and later
    /// (EEVDF): the running one may finish its slice first (1.4 ms here, and a second thread
    /// per core does the same), and a 5.3 ms cycle is gone — the xruns an idle 2-core machine
    /// showed in the record-format tests (Docs/testing.md, "Xruns"). The process threads ask
    /// for a 0.5 ms slice, which makes them preempt threads with longer ones when they wake.
    @Test func processThreadsAskForAShortSliceOnANonRealtimeServer() throws {
        guard let release = try? String(contentsOfFile: "/proc/sys/kernel/osrelease", encoding: .utf8) else { return }
        let version = release.split(separator: ".").prefix(2).compactMap { Int($0.prefix { $0.isNumber }) }
        // Custom slices for ordinary threads came with Linux 6.12 (older kernels ignore the request).
        guard version.count == 2, (version[0], version[1]) >= (6, 12) else { return }
        let server = try JackServer()
        defer { server.stop() }
        let dir = scratchDirectory("slice")
        defer { removeScratch(dir) }
        let record = try jaqInBackground(["record", "-q", "-d", "10", "-o", "t-{n}.wav", "system:capture_1"],
                                         server: server, log: "\(dir)/record.log", directory: dir)
        defer { record.interrupt(); waitForExit(record) }
        func slices() -> [Int] {
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(record.processIdentifier)/task")) ?? []
            return tasks.compactMap { tid in
                // "se.slice  :  500000" in /proc/PID/task/TID/sched (nanoseconds).
                guard let sched = try? String(contentsOfFile: "/proc/\(record.processIdentifier)/task/\(tid)/sched", encoding: .utf8),
                      let line = sched.split(separator: "\n").first(where: { $0.hasPrefix("se.slice") }) else { return nil }
                return Int(line.split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? "")
            }
        }
        #expect(waitUntil(10, poll: 0.05) { slices().contains(500_000) }, "thread slices (ns): \(slices())")
        // The others keep the default.
        #expect(slices().contains { $0 != 500_000 }, "thread slices (ns): \(slices())")
    }
}

/// The server goes away in the middle of a take: jaq record writes what it captured, says what
/// every file holds, exits 1 — and does not wait for frames that will never come.
@Suite(.serialized) struct ServerGoneTests {
    @Test func aServerThatGoesAwayEndsTheTakeWithValidFilesOfEqualLength() throws {
        let server = try JackServer(capture: 4)
        let dir = scratchDirectory("gone")
        defer { removeScratch(dir) }
        let record = try jaqInBackground(["record", "-d", "60", "-o", "t-{n}.wav", "system"],
                                         server: server, log: "\(dir)/record.log", directory: dir)
        func said() -> String { (try? String(contentsOfFile: "\(dir)/record.log", encoding: .utf8)) ?? "" }
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline && !said().contains("tracks from JACK frame") && record.isRunning { usleep(20_000) }
        usleep(1_500_000)
        server.stop()
        let stopped = Date()
        #expect(waitForExit(record, timeout: 30) == 1, "\(said())")
        #expect(Date().timeIntervalSince(stopped) < 10, "jaq record ended within seconds of the server")
        let lengths = (1...4).map { soxInfo("\(dir)/t-0\($0).wav")?.samples ?? -1 }
        #expect(Set(lengths).count == 1 && lengths[0] > 0, "track lengths \(lengths)")
        #expect(said().contains("the JACK server went away") && said().contains("(\(lengths[0]) frames in every file)"), "\(said())")
    }
}

/// A source that leaves during a take, or just after it: one behaviour for every format.
@Suite(.serialized) struct SourceLeavingTests {
    func log(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }

    /// Seconds of wall time until JACK frame `frame`, from `now` (the dummy backend runs in real time).
    func seconds(until frame: Int64, from now: Int64) -> Double { Double(frame - now) / 48000 }

    /// `jaq record -f m4a` (ALAC, AAC) and `-f wav` of a player that quits a second into the
    /// 3 s take and starts again half a second later: the take reports both, records the
    /// source again once it is back, ends on time with exit 0 and holds exactly its 3 s. (The
    /// .m4a take did not end: the silence of the missing source made 6-byte AAC packets, and
    /// the queue's buffers, sized for the largest packets, came back only when their bytes
    /// were full; nor did it watch its sources. And every format said "connected again" of a
    /// port the returning player's own set-up had disconnected again.)
    @Test(arguments: [["-f", "m4a", "--codec", "alac"], ["-f", "m4a", "--codec", "aac"], ["-f", "wav"]])
    func aTakeWhoseSourceLeavesAndComesBackEndsOnTimeAndSaysSo(format: [String]) throws {
        let server = try JackServer()
        defer { server.stop() }
        let dir = scratchDirectory("source-leaves")
        defer { removeScratch(dir) }
        try writeRamp("\(dir)/src.wav", frames: 48000, step: 97)
        var play = try jaqInBackground(["play", "-q", "--loop", "src.wav"], server: server, log: "\(dir)/play1.log", directory: dir)
        #expect(waitForPorts(server, containing: "jaq-1-src:out_", count: 2) != nil)
        let now = try frameNow(server)
        let at = now + 2 * 48000
        let started = Date()
        let record = try jaqInBackground(["record", "--at", "\(at)", "-d", "3", "-o", "take-{n}.{ext}"] + format + ["jaq-1-src:out_"],
                                         server: server, log: "\(dir)/record.log", directory: dir)
        // A second into the take the player quits; half a second later it is back.
        usleep(UInt32(max(0, seconds(until: at + 48000, from: now) - Date().timeIntervalSince(started)) * 1_000_000))
        play.terminate()
        waitForExit(play, timeout: 10)
        usleep(500_000)
        play = try jaqInBackground(["play", "-q", "--loop", "src.wav"], server: server, log: "\(dir)/play2.log", directory: dir)
        defer { play.terminate(); waitForExit(play, timeout: 10) }
        // The take ends at at + 3 s: jaq has its last frames within a second or two of it.
        let end = seconds(until: at + 3 * 48000, from: now)
        #expect(waitForExit(record, timeout: end + 6 - Date().timeIntervalSince(started)) == 0, "\(log("\(dir)/record.log"))")
        let said = log("\(dir)/record.log")
        #expect(said.contains("jaq-1-src:out_L went away at") && said.contains("jaq-1-src:out_R went away at"),
                "the source leaving is reported: \(said)")
        #expect(said.contains("jaq-1-src:out_L is back at") && said.contains("connected again: a gap of"), "and its return: \(said)")
        #expect(said.contains("144000 frames"), "\(said)")
        // The take, decoded through jaq's own file and codec layers for an .m4a: exactly its
        // frames, and the source again in every channel once it was back.
        var channels: [[Float]] = []
        if format[1] == "m4a" {
            let render = try jaq(["render", "-o", "\(dir)/decoded.wav", "\(dir)/take-01.m4a"], server: nil)
            #expect(render.status == 0, "\(render.error)")
            let decoded = try readInterleaved("\(dir)/decoded.wav", as: Float.self)
            channels = (0..<decoded.channels).map { c in stride(from: c, to: decoded.samples.count, by: decoded.channels).map { decoded.samples[$0] } }
        } else {
            channels = try (1...2).map { try readInterleaved("\(dir)/take-0\($0).wav", as: Float.self).samples }
        }
        #expect(channels.count == 2 && channels.allSatisfy { $0.count == 144000 }, "\(channels.map(\.count)) frames")
        let back = said.firstMatch(of: #/out_L is back at 00:0(\d\.\d)/#).flatMap { Double($0.1) } ?? 3
        for (c, samples) in channels.enumerated() where back < 2.8 {
            let after = samples.dropFirst(Int((back + 0.1) * 48000))
            #expect(after.contains { $0 != 0 }, "channel \(c) holds the source again after its return at \(back) s: \(said)")
        }
    }

    /// The player quits 0.4 s after the take's last frame (as `make demo`'s players end with
    /// its take): the take is complete, nothing records silence, and nothing says a source went
    /// away. The take's end is just past the start of a queue buffer (16384 frames at 16 kHz:
    /// a second), so the last frames reach the file long after the player left.
    @Test(arguments: [["-f", "wav"], ["-f", "m4a", "--codec", "alac"]]) func aSourceLeavingRightAfterTheTakeIsNotReported(format: [String]) throws {
        let server = try JackServer()
        defer { server.stop() }
        let dir = scratchDirectory("source-leaves-after")
        defer { removeScratch(dir) }
        try writeRamp("\(dir)/src.wav", frames: 48000, step: 97)
        let play = try jaqInBackground(["play", "-q", "--loop", "src.wav"], server: server, log: "\(dir)/play.log", directory: dir)
        defer { if play.isRunning { play.terminate() }; waitForExit(play, timeout: 10) }
        #expect(waitForPorts(server, containing: "jaq-1-src:out_L", count: 1) != nil)
        let now = try frameNow(server)
        let at = now + 2 * 48000
        let started = Date()
        let frames = 2 * 16384 + 1  // at 16 kHz: 2.048 s
        let record = try jaqInBackground(["record", "--at", "\(at)", "-d", "\(frames)f", "-r", "16000", "-o", "take.{ext}"] + format
                                         + ["jaq-1-src:out_L$"], server: server, log: "\(dir)/record.log", directory: dir)
        let end = seconds(until: at + Int64(frames) * 3, from: now)
        usleep(UInt32(max(0, end + 0.4 - Date().timeIntervalSince(started)) * 1_000_000))
        play.terminate()
        waitForExit(play, timeout: 10)
        #expect(waitForExit(record, timeout: 20) == 0, "\(log("\(dir)/record.log"))")
        let said = log("\(dir)/record.log")
        #expect(said.contains("\(frames) frames"), "the take is complete: \(said)")
        #expect(!said.contains("went away") && !said.contains("records silence"), "\(said)")
    }
}
