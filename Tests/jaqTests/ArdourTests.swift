import Testing
import Foundation
import JackTestSupport
import SoundFile

/// Ardour, headless: Debian's `ardour` ships `ardour7-lua` (a Lua session host on Ardour's JACK
/// backend) and `ardour7-export` (Ardour's own export of a session's range, from the master bus).
struct Ardour {
    static let luaHost = "/usr/bin/ardour7-lua"
    static let exporter = "/usr/bin/ardour7-export"

    /// Why Ardour cannot run here, or nil.
    static let unavailableReason: String? = {
        for tool in [luaHost, exporter] where !FileManager.default.isExecutableFile(atPath: tool) {
            return "\(tool) is missing: the Ardour tests need Debian's ardour package (apt-get install ardour)"
        }
        return nil
    }()

    let server: JackServer
    let dir: String
    let session = "sess"
    var sessionDirectory: String { "\(dir)/\(session)" }

    /// Ardour follows and drives JACK transport: its transport master is "JACK Transport" (the
    /// user configuration, in a private XDG_CONFIG_HOME) and the session syncs to it.
    init(server: JackServer, dir: String) throws {
        self.server = server
        self.dir = dir
        try FileManager.default.createDirectory(atPath: "\(dir)/xdg/ardour7", withIntermediateDirectories: true)
        try """
        <?xml version="1.0" encoding="UTF-8"?>
        <Ardour>
          <TransportMasters current="JACK Transport">
            <TransportMaster type="Engine" name="JACK Transport" removeable="0"/>
          </TransportMasters>
        </Ardour>
        """.write(toFile: "\(dir)/xdg/ardour7/config", atomically: true, encoding: .utf8)
    }

    /// A private server and a scratch directory of its own; `finish()` stops and removes them.
    init(scratch name: String) throws {
        let server = try JackServer()
        do { try self.init(server: server, dir: scratchDirectory(name)) } catch { server.stop(); throw error }
    }

    func finish() {
        server.stop()
        removeScratch(dir)
    }

    var environment: [String: String] {
        var environment = server.environment
        environment["XDG_CONFIG_HOME"] = "\(dir)/xdg"
        return environment
    }

    /// Lua that opens (or creates) the session on the JACK backend, as client "ardour".
    func prelude(create: Bool) -> String {
        """
        AudioEngine:set_backend("JACK", "ardour", "")
        local s = \(create ? "create_session(\"\(sessionDirectory)\", \"\(session)\", 48000)" : "load_session(\"\(sessionDirectory)\", \"\(session)\")")
        assert(s, "no session")
        Session:cfg():set_external_sync(true)
        local UI = ARDOUR.TransportRequestSource.TRS_UI
        local function say(text) io.stderr:write(text .. "\\n") end
        local function sleep(seconds) ARDOUR.LuaAPI.usleep(math.floor(seconds * 1000000)) end
        -- Rolls, and waits until the transport (JACK's, which Ardour chases) rolls: a request
        -- made while Ardour is still taking JACK transport as its master can be dropped.
        local function roll()
          for i = 1, 100 do
            if i % 10 == 1 then Session:request_roll(UI) end
            sleep(0.02)
            if Session:transport_rolling() then return true end
          end
          say("the transport did not roll")
          return false
        end
        local function stop() Session:request_stop(false, false, UI) end
        local function locate(frame) Session:request_locate(frame, false, ARDOUR.LocateTransportDisposition.MustStop, UI) end
        -- Waits until the test creates `path` (no JACK client from here: a program started with
        -- os.execute inherits Ardour's JACK sockets, and the server then drops Ardour).
        local function wait_for_file(path)
          for i = 1, 600 do
            local f = io.open(path, "r")
            if f then f:close() return true end
            sleep(0.1)
          end
          say("no " .. path)
          return false
        end

        """
    }

    /// Runs a Lua script in the session host; returns its output (stdout and stderr).
    @discardableResult
    func run(_ body: String, create: Bool = false, name: String, timeout: Double = 90) throws -> String {
        let path = "\(dir)/\(name).lua"
        try (prelude(create: create) + body + "\nSession:save_state(\"\", false, false, false, false, false)\nclose_session()\n")
            .write(toFile: path, atomically: true, encoding: .utf8)
        let result = try runProcess([Self.luaHost, path], environment: environment, timeout: timeout, currentDirectory: dir)
        let output = result.output + result.error
        try? output.write(toFile: "\(dir)/\(name).out", atomically: true, encoding: .utf8)
        if output.contains("JACK HALTED") { throw ArdourHalted(output: output, serverLog: server.logText) }
        let failures = ["Error:", "the transport did not roll", "no \(dir)"]
        guard result.status == 0, !failures.contains(where: { output.contains($0) }) else {
            throw JackServerError("ardour7-lua \(name).lua exited \(result.status): \(output)")
        }
        return output
    }

    /// Runs `moves` (Lua) in the session host once jaq is ready: starts the host, returns when
    /// the session is loaded (its ports are there); the script waits for `jaqIsReady()`.
    func runWhenJaqIsReady(_ moves: String, name: String) -> DetachedResult<String> {
        try? FileManager.default.removeItem(atPath: "\(dir)/jaq-ready")
        let loaded = "\(dir)/ardour-ready-\(name)"
        let run = Thread.detachedResult {
            try self.run("""
                sleep(1)
                io.open("\(loaded)", "w"):close()
                wait_for_file("\(self.dir)/jaq-ready")
                \(moves)
                sleep(1)
                """, name: name)
        }
        let deadline = Date().addingTimeInterval(60)
        while !FileManager.default.fileExists(atPath: loaded) && Date() < deadline { usleep(50_000) }
        return run
    }

    /// Lets a script started with `runWhenJaqIsReady` go on once `jaq record --transport` (its
    /// output in `log`) says it is armed: its queue records, so a roll from now on is a take.
    func jaqIsReady(log: String) {
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline,
              !((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("waiting for JACK transport to roll") {
            usleep(20_000)
        }
        FileManager.default.createFile(atPath: "\(dir)/jaq-ready", contents: nil)
    }

    /// Ardour's export of the session range (master bus, 24-bit WAV).
    func export(to path: String) throws {
        // Without the JACK transport master: ardour7-export runs its own engine, and crashes
        // (SIGSEGV) when its configuration names JACK transport as the master.
        let result = try runProcess([Self.exporter, "-b", "24", "-o", path, sessionDirectory, session],
                                    environment: server.environment, timeout: 120)
        guard result.status == 0 else { throw JackServerError("ardour7-export exited \(result.status): \(result.output) \(result.error)") }
    }

    /// The session range's start (frames at 48 kHz), from the session file (Ardour 7 writes
    /// positions in superclock units, "a<ticks>", 282240000 per second).
    func sessionRangeStart() -> Int? {
        guard let text = try? String(contentsOfFile: "\(sessionDirectory)/\(session).ardour", encoding: .utf8),
              let range = text.range(of: #"<Location [^>]*start="a(\d+)"[^>]*IsSessionRange"#, options: .regularExpression)
        else { return nil }
        let location = text[range]
        guard let start = location.range(of: #"start="a\d+""#, options: .regularExpression),
              let ticks = Int(location[start].dropFirst(8).dropLast()) else { return nil }
        return ticks * 48000 / 282_240_000
    }

    /// The files Ardour captured for track `track` (its interchange audiofiles).
    func capturedFile(track: String) -> String? {
        let folder = "\(sessionDirectory)/interchange/\(session)/audiofiles"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.sorted().first { $0.contains("_\(track)-") }.map { "\(folder)/\($0)" }
    }
}

/// A mono 24-bit WAV: `silence` frames of zeros, then a ramp whose sample n is `offset + n`.
func writePaddedRamp(_ path: String, silence: Int, frames: Int, offset: Int32) throws {
    let file = try SoundFile(path: path, mode: .write, format: SoundFile.Info(sampleRate: 48000, channelCount: 1,
                                                                               format: SoundFile.Format(.wav, .pcm24)))
    let samples = [Int32](repeating: 0, count: silence) + (0..<frames).map { (offset + Int32($0)) << 8 }
    let transfer = samples.withUnsafeBufferPointer { file.writeFrames($0) }
    guard transfer.count == samples.count else { throw JackServerError("short write of \(path)") }
    try file.close()
}

/// jackd dropped Ardour's client: its log says "Unknown request 0" (a request it could not read)
/// and Ardour prints "JACK HALTED". Seen in 2 of about 10 runs on a loaded 2-core machine, with
/// jackd 1.9.21 and Ardour 7.3; not jaq's doing (no jaq client is involved in that socket).
struct ArdourHalted: Error, CustomStringConvertible {
    let output: String
    let serverLog: String
    var description: String {
        "jackd dropped Ardour (\(serverLog.components(separatedBy: "Unknown request 0").count - 1) \"Unknown request 0\" in its log): "
            + output.split(separator: "\n").filter { $0.contains("JACK") }.joined(separator: "; ")
    }
}

/// Runs a test body that drives Ardour; jackd dropping Ardour (ArdourHalted) is a known issue
/// of the peers, reported as such, not a pass.
func withArdour(_ body: () throws -> Void) throws {
    do {
        try body()
    } catch let halted as ArdourHalted {
        withKnownIssue(Comment(rawValue: halted.description)) { throw halted }
    }
}

/// One channel of a file as 24-bit integers, read as float (exact for 24-bit integer files and
/// for Ardour's 32-bit float captures of 24-bit sources alike).
func channel(_ path: String, _ index: Int) throws -> [Int32] {
    let file = try SoundFile(path: path, mode: .read)
    let channels = file.info.channelCount
    var samples = [Float](repeating: 0, count: Int(file.info.frameCount) * channels)
    let transfer = samples.withUnsafeMutableBufferPointer { file.readFrames(into: $0) }
    try file.close()
    return stride(from: index, to: transfer.count * channels, by: channels).map { Int32((samples[$0] * 8_388_608).rounded()) }
}

/// The timelines of a ramp (sample n = offset + n) in a track: sample - position → how many
/// nonzero samples; a bit-exact contiguous copy of the ramp has exactly one.
func rampTimelines(_ samples: [Int32]) -> [Int32: Int] {
    var counts: [Int32: Int] = [:]
    for (n, sample) in samples.enumerated() where sample != 0 { counts[sample - Int32(n), default: 0] += 1 }
    return counts
}

/// jaq beside Ardour, headless (`ardour7-lua` on the test's private jackd): Ardour records what
/// `jaq play` plays, `jaq record --transport` records what Ardour plays, and both equal the
/// sources and Ardour's own export, sample for sample.
@Suite(.serialized, .enabled(if: Ardour.unavailableReason == nil, Comment(rawValue: Ardour.unavailableReason ?? "")))
struct ArdourTests {
    /// Only under `make test-daw` (JAQ_DAW_LONG=1): jackd drops Ardour in about 3 runs in 10 and a
    /// clean-clone run saw the take 512 frames off Ardour's export (issue #14), so until that is
    /// understood these tests are not part of `make test`.
    static let long = ProcessInfo.processInfo.environment["JAQ_DAW_LONG"] != nil

    func log(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }

    /// Makes a session whose two mono tracks hold the ramps a.wav (on master left) and b.wav
    /// (master right), recorded by Ardour from `jaq play --transport` when Lua rolls Ardour.
    func recordIntoArdour(_ ardour: Ardour, dir: String) throws -> (played: String, ardour: String) {
        // A second of silence first: Ardour, chasing JACK transport, starts capturing a few
        // cycles after the roll that starts jaq play.
        try writePaddedRamp("\(dir)/a.wav", silence: 48000, frames: 96000, offset: 100_000)
        try writePaddedRamp("\(dir)/b.wav", silence: 48000, frames: 96000, offset: 300_000)
        let play = try jaqInBackground(["play", "--transport", "a.wav", "b.wav"], server: ardour.server,
                                       log: "\(dir)/play.log", directory: dir)
        #expect(waitForPorts(ardour.server, containing: "jaq-2-b:out_L") != nil)
        let output = try ardour.run("""
            local tracks = Session:new_audio_track(1, 1, nil, 2, "T", ARDOUR.PresentationInfo.max_order, ARDOUR.TrackMode.Normal, true)
            local sources = { "jaq-1-a:out_L", "jaq-2-b:out_L" }
            local i = 1
            for t in tracks:iter() do
              t:input():disconnect_all(nil)
              t:input():audio(0):connect(sources[i])
              t:output():disconnect_all(nil)
              t:output():audio(0):connect("ardour:Master/audio_in " .. i)
              t:rec_enable_control():set_value(1, PBD.GroupControlDisposition.NoGroup)
              i = i + 1
            end
            Session:maybe_enable_record(false)
            sleep(1)
            roll()
            sleep(3)
            stop()
            sleep(1)
            pcall(function() Session:disable_record(false, false) end)
            for t in tracks:iter() do
              t:rec_enable_control():set_value(0, PBD.GroupControlDisposition.NoGroup)
            end
            """, create: true, name: "record")
        #expect(waitForExit(play, timeout: 30) == 0, "jaq play: \(log("\(dir)/play.log"))")
        return (log("\(dir)/play.log"), output)
    }

    @Test(.enabled(if: long, "with Ardour: make test-daw (not yet reliable enough for make test)"))
    func ardourRecordsJaqPlayAndJaqRecordsArdourLikeItsExport() throws {
        try withArdour {
            let ardour = try Ardour(scratch: "ardour")
            defer { ardour.finish() }
            let (server, dir) = (ardour.server, ardour.dir)

            // 1. jaq play → Ardour's tracks, recorded by Ardour: its captured files hold the sources.
            let recorded = try recordIntoArdour(ardour, dir: dir)
            let xrunsWhileRecording = server.xrunCount
            try withKnownIssue(Comment(rawValue: "the server logged \(xrunsWhileRecording) xruns; jaq play: \(recorded.played)"),
                               isIntermittent: true) {
                for (track, offset) in [("T 1", Int32(100_000)), ("T 2", Int32(300_000))] {
                    let path = try #require(ardour.capturedFile(track: track), "Ardour captured \(track): \(recorded.ardour)")
                    let samples = try channel(path, 0)
                    let lines = rampTimelines(samples)
                    #expect(lines.count == 1 && lines.values.first == 96000, "\(track): the source, every frame, bit-exact: \(lines)")
                    #expect(samples.contains(offset) && samples.contains(offset + 95999), "\(track)")
                }
            } when: { xrunsWhileRecording > 0 }

            // 2. Ardour plays the session from a locate made while stopped; `jaq record --transport`
            //    records its master outputs from the roll to the stop.
            let locate = 12000
            let ardourPlay = ardour.runWhenJaqIsReady("""
                locate(\(locate))
                sleep(0.5)
                roll()
                sleep(2.5)
                stop()
                sleep(1)
                pcall(function()
                  local o = Session:master_out():output():audio(0)
                  say(string.format("master out playback latency %d", o:public_latency_range(true).max))
                end)
                """, name: "play")
            guard waitForPorts(server, containing: "ardour:Master/audio_out 2") != nil else {
                _ = try ardourPlay.wait()  // throws ArdourHalted when jackd dropped Ardour
                Issue.record("Ardour's master ports did not appear")
                return
            }
            let recorder = try jaqInBackground(["record", "--transport", "-o", "take-{n}.wav", "ardour:Master/audio_out 1$",
                                                "ardour:Master/audio_out 2$"], server: server, log: "\(dir)/record.log", directory: dir)
            #expect(waitForPorts(server, containing: "jaq-record:", count: 2) != nil)
            ardour.jaqIsReady(log: "\(dir)/record.log")
            let status = waitForExit(recorder, timeout: 60)
            let played = try ardourPlay.wait()
            let record = (status: status, error: log("\(dir)/record.log"))
            #expect(record.status == 0, "jaq record: \(record.error)")
            #expect(record.error.contains("transport stopped"), "\(record.error)")

            // 3. Ardour's own export of the session range; the take must equal it sample for sample.
            try ardour.export(to: "\(dir)/export.wav")
            let xruns = server.xrunCount
            try withKnownIssue(Comment(rawValue: "the server logged \(xruns) xruns; jaq record: \(record.error); Ardour: \(played)"),
                               isIntermittent: true) {
                var shifts: [Int32] = []
                for side in 0..<2 {
                    let take = try channel("\(dir)/take-0\(side + 1).wav", 0)
                    let export = try channel("\(dir)/export.wav", side)
                    let takeLine = rampTimelines(take)
                    let exportLine = rampTimelines(export)
                    #expect(takeLine.count == 1 && exportLine.count == 1, "one contiguous copy each: take \(takeLine), export \(exportLine)")
                    guard let t = takeLine.keys.first, let e = exportLine.keys.first else { continue }
                    // take[n] == export[n + shift] wherever both hold the ramp.
                    let shift = t - e
                    shifts.append(shift)
                    var differing = 0
                    for n in take.indices where Int(Int32(n) + shift) >= 0 && Int(Int32(n) + shift) < export.count {
                        if take[n] != export[Int(Int32(n) + shift)] { differing += 1 }
                    }
                    #expect(differing == 0, "side \(side): \(differing) samples differ from Ardour's export")
                }
                #expect(shifts.count == 2 && shifts[0] == shifts[1], "both sides aligned: \(shifts)")
                // The take's frame 0 is the session frame the transport rolled from (the locate):
                // Ardour has taken its output latency out already, nothing is left over.
                let start = try #require(ardour.sessionRangeStart(), "the session range in \(ardour.session).ardour")
                #expect(shifts.first.map(Int.init) == locate - start, "take frame 0 = session frame \(locate); export frame 0 = \(start)")
                print("Ardour: take frame 0 is export frame \(shifts.first ?? -1); \(played)")
            } when: { xruns > 0 }
        }
    }

    /// Transport moves a DAW makes — a start and stop in quick succession, a locate while
    /// stopped, a loop request — never leave `jaq record --transport` hung or its take off the
    /// frames the transport rolled.
    @Test(.enabled(if: long, "a longer DAW test: make test-daw"))
    func transportMovesNeverLeaveATakeHungOrMisaligned() throws {
        try withArdour {
            let ardour = try Ardour(scratch: "ardour-moves")
            defer { ardour.finish() }
            let (server, dir) = (ardour.server, ardour.dir)
            _ = try recordIntoArdour(ardour, dir: dir)
            for (name, moves) in [("quick", "roll()\nsleep(0.05)\nstop()"),
                                  ("locate", "locate(30000)\nsleep(0.3)\nlocate(60000)\nsleep(0.3)\nroll()\nsleep(1)\nstop()"),
                                  ("loop", """
                                      pcall(function()
                                        local loc = ARDOUR.Location(Session, Temporal.timepos_t(24000), Temporal.timepos_t(72000), "loop", ARDOUR.LocationFlags.IsAutoLoop, 0)
                                        Session:locations():add(loc, true)
                                        Session:request_play_loop(true, true)
                                      end)
                                      sleep(0.3)
                                      roll()
                                      sleep(2)
                                      stop()
                                      """)] {
                let ardourRun = ardour.runWhenJaqIsReady(moves, name: name)
                let recorder = try jaqInBackground(["record", "--transport", "-o", "\(name)-{n}.wav", "ardour:Master/audio_out 1$"],
                                                   server: server, log: "\(dir)/\(name).log", directory: dir)
                guard waitForPorts(server, containing: "jaq-record:") != nil else {
                    waitForExit(recorder, timeout: 5)
                    ardour.jaqIsReady(log: "\(dir)/\(name).log")
                    _ = try ardourRun.wait()  // throws ArdourHalted when jackd dropped Ardour (its ports went)
                    Issue.record("\(name): jaq record did not arm: \(log("\(dir)/\(name).log"))")
                    return
                }
                ardour.jaqIsReady(log: "\(dir)/\(name).log")
                let status = waitForExit(recorder, timeout: 60)
                _ = try ardourRun.wait()
                let recordLog = log("\(dir)/\(name).log")
                #expect(status == 0, "\(name): jaq record ends when the transport stops: \(recordLog)")
                // The take holds exactly the frames from the roll to the stop.
                let rolled = frame(after: "transport rolling at JACK frame", in: recordLog)
                let stopped = frame(after: "transport stopped at JACK frame", in: recordLog)
                let frames = recordLog.range(of: #"\((\d+) frames\)"#, options: .regularExpression)
                    .flatMap { Int64(recordLog[$0].dropFirst().prefix { $0.isNumber }) }
                #expect(rolled != nil && stopped != nil && frames == stopped! - rolled!, "\(name): \(recordLog)")
            }
        }
    }

    /// The frame named in a log line "... <words> N ...".
    func frame(after words: String, in log: String) -> Int64? {
        guard let range = log.range(of: words) else { return nil }
        return Int64(log[range.upperBound...].drop { !$0.isNumber }.prefix { $0.isNumber })
    }
}

extension Thread {
    /// Runs `body` on a new thread; `wait()` returns its result.
    static func detachedResult<T>(_ body: @escaping @Sendable () throws -> T) -> DetachedResult<T> {
        let result = DetachedResult<T>()
        Thread.detachNewThread { result.finish(Result { try body() }) }
        return result
    }
}

final class DetachedResult<T>: @unchecked Sendable {
    private var value: Result<T, Error>?
    private let done = DispatchSemaphore(value: 0)
    func finish(_ result: Result<T, Error>) { value = result; done.signal() }
    func wait() throws -> T {
        done.wait()
        return try value!.get()
    }
}
