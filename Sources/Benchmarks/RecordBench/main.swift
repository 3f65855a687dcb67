// jaq-bench: `jaq record` against `jack_capture`, side by side on one server.
//
// For each channel count, a private dummy JACK server runs in real time (256-frame
// periods at 48 kHz, realtime scheduling when allowed); `jaq play --loop` plays a ramp on
// N ports; `jaq record`, `jaq record --interleaved` and `jack_capture` record those N ports
// one after the other, for the same duration, as 32-bit float files. Each is measured by
// wait4's rusage (CPU seconds to the microsecond), /proc (peak RSS) and the cycletime LD_PRELOAD probe (time spent in
// its JACK process callback per cycle). The ramp lets the recordings be checked frame by
// frame for dropped or repeated frames. The results go to Docs/benchmarks.md.
// The referees `floor-record` and `floor-play` (Sources/Benchmarks/Floor) are the least a
// realtime-safe libjack recorder and player can do: the floor under every tool.
//
//   swift build -c release && .build/release/jaq-bench [--seconds 60] [--channels 2,16,64]

import Foundation
import JackTestSupport

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("jaq-bench: \(message)\n".utf8))
    exit(1)
}

let options = Options(CommandLine.arguments)
let here = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
let jaq = here.appendingPathComponent("jaq").path
guard FileManager.default.isExecutableFile(atPath: jaq) else { fail("\(jaq) not found: build jaq first") }
let root = here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
let packageRoot = FileManager.default.fileExists(atPath: root.appendingPathComponent("Package.swift").path)
    ? root : URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
let work = NSTemporaryDirectory() + "jaq-bench-\(getpid())"
try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: work) }

// The probe library.
let probeSource = packageRoot.appendingPathComponent("Sources/Benchmarks/CycleTime/cycletime.c").path
let probe = "\(work)/libcycletime.so"
let built = try runProcess(["cc", "-shared", "-fPIC", "-O2", probeSource, "-o", probe, "-ldl"])
guard built.status == 0 else { fail("cannot build the cycle-time probe: \(built.error)") }
// The floor referees.
let floorRecord = "\(work)/floor-record", floorPlay = "\(work)/floor-play"
for (program, libraries) in [(floorRecord, ["-ljack", "-lm"]), (floorPlay, ["-ljack", "-lsndfile"])] {
    let source = packageRoot.appendingPathComponent("Sources/Benchmarks/Floor/\((program as NSString).lastPathComponent).c").path
    let result = try runProcess(["cc", "-O2", source, "-o", program] + libraries)
    guard result.status == 0 else { fail("cannot build \(source): \(result.error)") }
}

// Realtime scheduling (as in a studio) when the privilege is there: fewer server xruns to
// blur the comparison. Both tools get the same server, so the comparison is fair either way.
let realtime = options.realtime ?? {
    var parameter = sched_param(sched_priority: 1)
    let previous = sched_getscheduler(0)
    var old = sched_param()
    sched_getparam(0, &old)
    guard sched_setscheduler(0, SCHED_FIFO, &parameter) == 0 else { return false }
    sched_setscheduler(0, previous, &old)
    return true
}()
print("JACK server scheduling: \(realtime ? "realtime (jackd --realtime)" : "not realtime (jackd --no-realtime)")")

var results: [(channels: Int, labels: [String], measurements: [Measurement], xruns: Int)] = []
var setAside: [SetAsideRound] = []
var startUp: StartUpCost?
for channels in options.channels {
    print("== \(channels) channels, \(Int(options.seconds)) s")
    let server = try JackServer(periodFrames: options.period, capture: 2, playback: 2, realtime: realtime)
    defer { server.stop() }
    try writeRamp("\(work)/ramp\(channels).wav", channels: channels)
    let player = try server.spawn([jaq, "play", "--quiet", "--loop", "\(work)/ramp\(channels).wav"],
                                  output: "\(work)/play\(channels).log")
    var waited = 0
    while waited < 200, (try? server.run(["jack_lsp"]))?.split(separator: "\n").filter({ $0.contains("jaq-1-ramp") }).count ?? 0 < max(channels, 2) {
        usleep(50_000)
        waited += 1
    }
    usleep(500_000)
    let outputs = (1...channels).map { channels == 1 ? "jaq-1-ramp\(channels):out_L" : "jaq-1-ramp\(channels):out_\($0)" }
    let roundSeconds = options.seconds / Double(options.rounds)
    let duration = roundSeconds == roundSeconds.rounded() ? String(Int(roundSeconds)) : String(format: "%.3f", roundSeconds)
    let baseline = xrunCount(server)
    var environment = server.environment
    environment["LD_PRELOAD"] = probe
    // The tools, recording the same ports: jaq's default (one file per track), jaq with
    // --interleaved (one multichannel file, as jack_capture writes), jack_capture.
    // 24-bit takes of both, each against its own kind.
    func tools(round: Int) -> [(label: String, name: String, file: String, arguments: [String])] {
        let n = "\(channels)r\(round)"
        return [
            ("jaq record", "jaq\(n)", "jaq\(n)-01.wav",
             [jaq, "record", "--quiet", "-b", "float", "-d", duration, "-o", "jaq\(n)-{n}.wav"] + outputs),
            ("jaq record --interleaved", "jaqi\(n)", "jaqi\(n).wav",
             [jaq, "record", "--quiet", "--interleaved", "-b", "float", "-d", duration, "-o", "jaqi\(n).wav"] + outputs),
            ("jack_capture", "capture\(n)", "capture\(n).wav",
             ["jack_capture", "--daemon", "-d", duration, "-c", "\(channels)", "-f", "wav"] + outputs.flatMap { ["--port", $0] }
                + ["capture\(n).wav"]),
            ("floor-record", "floor\(n)", "floor\(n)-1.wav", [floorRecord, duration, "float", "floor\(n)"] + outputs),
            ("jaq record -b 24", "jaq24\(n)", "jaq24\(n)-01.wav",
             [jaq, "record", "--quiet", "-b", "24", "-d", duration, "-o", "jaq24\(n)-{n}.wav"] + outputs),
            ("jack_capture --bitdepth 24", "capture24\(n)", "capture24\(n).wav",
             ["jack_capture", "--daemon", "-d", duration, "-c", "\(channels)", "-f", "wav", "--bitdepth", "24"]
                + outputs.flatMap { ["--port", $0] } + ["capture24\(n).wav"]),
            ("floor-record 24", "floor24\(n)", "floor24\(n)-1.wav", [floorRecord, duration, "24", "floor24\(n)"] + outputs),
        ]
    }
    let labels = tools(round: 1).map(\.label)
    // One after the other on the same server and player (three recorders of 64 tracks at once
    // on a small machine would measure the contention, not the tools), taking turns round by round.
    var measured = Array(repeating: Measurement(), count: labels.count)
    // A round whose floor-record takes are not contiguous measured the machine (SetAsideRound):
    // it is run again, up to `rounds` extra times in all, and not added to the totals.
    var round = 1, attempt = 0
    while round <= options.rounds {
        attempt += 1
        var thisRound: [Measurement] = []
        for tool in tools(round: attempt) {
            let before = xrunCount(server)
            var m = try runTimed(tool.name, tool.arguments, environment: environment)
            m.xruns = xrunCount(server) - before
            let check = checkRamp(path: "\(work)/\(tool.file)", channel: 0)
            m.frames = check.frames
            m.droppedFrames = check.dropped
            m.repeatedFrames = check.repeated
            let log = (try? String(contentsOfFile: "\(work)/\(tool.name).log", encoding: .utf8)) ?? ""
            if log.contains("dropped") || log.contains("lost") { m.note = "reported losses" }
            print("   round \(round) (attempt \(attempt)), \(tool.label): cpu \(String(format: "%.2f", m.cpuSeconds)) s, rss \(m.peakRSSKiB) KiB, cycle \(String(format: "%.1f", m.cycleMeanMicroseconds)) µs, frames \(m.frames), dropped \(m.droppedFrames), xruns \(m.xruns), steal \(String(format: "%.2f", m.stealSeconds)) s")
            thisRound.append(m)
            // The takes are checked; their disk space is needed for the next.
            for file in (try? FileManager.default.contentsOfDirectory(atPath: work)) ?? [] where file.hasSuffix(".wav") && !file.hasPrefix("ramp") {
                try? FileManager.default.removeItem(atPath: "\(work)/\(file)")
            }
        }
        let floors = zip(labels, thisRound).filter { $0.0.hasPrefix("floor-record") }.map(\.1)
        let floorDropped = floors.map(\.droppedFrames).reduce(0, +), floorRepeated = floors.map(\.repeatedFrames).reduce(0, +)
        if floorDropped + floorRepeated > 0 && attempt < 2 * options.rounds {
            let aside = SetAsideRound(channels: channels, attempt: attempt, floorDropped: floorDropped, floorRepeated: floorRepeated,
                                      serverXruns: thisRound.map(\.xruns).reduce(0, +), steal: thisRound.map(\.stealSeconds).reduce(0, +))
            setAside.append(aside)
            print("   round \(round) set aside: floor-record's takes are not contiguous (\(floorDropped) dropped, \(floorRepeated) repeated; server xruns \(aside.serverXruns), steal \(String(format: "%.2f", aside.steal)) s): run again")
            continue
        }
        for (i, m) in thisRound.enumerated() { measured[i].add(m) }
        round += 1
    }
    if channels == options.channels.first {
        startUp = StartUpCost.measure(jaq: jaq, floorRecord: floorRecord, ports: Array(outputs.prefix(2)),
                                      environment: server.environment, directory: work, runs: 9)
        print("   start-up (median of 9, ms CPU): jaq --version \(String(format: "%.1f", startUp!.version)), 0.2 s take: jaq \(String(format: "%.1f", startUp!.jaqTake)), floor-record \(String(format: "%.1f", startUp!.floorTake))")
    }
    let xruns = xrunCount(server) - baseline
    player.terminate()
    player.waitUntilExit()
    server.stop()
    for (label, m) in zip(labels, measured) {
        print("   \(label): cpu \(String(format: "%.2f", m.cpuSeconds)) s, rss \(m.peakRSSKiB) KiB, cycle \(String(format: "%.1f", m.cycleMeanMicroseconds)) µs, frames \(m.frames), dropped \(m.droppedFrames)")
    }
    results.append((channels, labels, measured, xruns))
}

// Playback: an N-channel 16-bit WAV played by `jaq play` and by `sndfile-jackplay`, in turns.
var playRows: [(label: String, m: Measurement)] = []
let playSeconds = max(5, (options.seconds / Double(options.rounds)).rounded())
if options.playChannels > 0 {
    let channels = options.playChannels
    print("== playback: \(channels)-channel 16-bit WAV, \(Int(playSeconds)) s per run")
    let server = try JackServer(periodFrames: options.period, capture: 2, playback: 2, realtime: realtime)
    defer { server.stop() }
    let path = "\(work)/play\(channels).wav"
    try writeWAV16(path, channels: channels, seconds: playSeconds)
    var environment = server.environment
    environment["LD_PRELOAD"] = probe
    let players = [("jaq play", [jaq, "play", "--quiet", path]), ("sndfile-jackplay", ["sndfile-jackplay", path]),
                   ("floor-play", [floorPlay, path])]
    var totals = Array(repeating: Measurement(), count: players.count)
    for round in 1...options.rounds {
        for (i, player) in players.enumerated() {
            let before = xrunCount(server)
            var m = try runTimed("player\(i)r\(round)", player.1, environment: environment)
            m.xruns = xrunCount(server) - before
            print("   round \(round), \(player.0): cpu \(String(format: "%.2f", m.cpuSeconds)) s, rss anon \(m.anonymousRSSKiB) KiB, xruns \(m.xruns)")
            totals[i].add(m)
        }
    }
    server.stop()
    playRows = zip(players.map(\.0), totals).map { ($0.0, $0.1) }
}

// Xruns on a non-realtime server (as in the tests): takes of 64 tracks, counting the cycles
// the server says a jaq client was late for.
var xrunRows: [(take: Int, serverXruns: Int, lateRecorder: Int, latePlayer: Int, lost: Bool, floorXruns: Int, lateFloor: Int)] = []
if options.xrunTakes > 0 {
    let channels = 64
    print("== \(options.xrunTakes) takes of \(channels) tracks on a non-realtime server")
    let server = try JackServer(periodFrames: options.period, capture: 2, playback: 2, realtime: false)
    defer { server.stop() }
    try writeRamp("\(work)/xramp.wav", channels: channels)
    let player = try server.spawn([jaq, "play", "--quiet", "--loop", "\(work)/xramp.wav"], output: "\(work)/xplay.log")
    var waited = 0
    while waited < 200, (try? server.run(["jack_lsp"]))?.split(separator: "\n").filter({ $0.contains("jaq-1-xramp") }).count ?? 0 < channels {
        usleep(50_000)
        waited += 1
    }
    usleep(500_000)
    let outputs = (1...channels).map { "jaq-1-xramp:out_\($0)" }
    for take in 1...options.xrunTakes {
        let before = (xrunCount(server), lateClientCount(server, client: "jaq-record"), lateClientCount(server, client: "jaq-1-xramp"))
        let m = try runTimed("xrun\(take)", [jaq, "record", "--quiet", "-b", "float", "-d", "5", "-o", "x\(take)-{n}.wav"] + outputs,
                             environment: server.environment)
        let log = (try? String(contentsOfFile: "\(work)/xrun\(take).log", encoding: .utf8)) ?? ""
        let jaqRow = (xrunCount(server) - before.0, lateClientCount(server, client: "jaq-record") - before.1,
                      lateClientCount(server, client: "jaq-1-xramp") - before.2, log.contains("lost") || m.exitStatus != 0)
        // The floor referee's take of the same ports, in turn: how often the scheduler alone
        // makes a recorder's callback late on this server.
        let floorBefore = (xrunCount(server), lateClientCount(server, client: "floor-record"))
        _ = try runTimed("xfloor\(take)", [floorRecord, "5", "float", "x\(take)-floor"] + outputs, environment: server.environment)
        let row = (take, jaqRow.0, jaqRow.1, jaqRow.2, jaqRow.3, xrunCount(server) - floorBefore.0,
                   lateClientCount(server, client: "floor-record") - floorBefore.1)
        print("   take \(take): server xruns \(row.1), jaq record late \(row.2), jaq play late \(row.3)\(row.4 ? ", losses reported" : ""); floor-record: server xruns \(row.5), late \(row.6)")
        xrunRows.append(row)
        for file in (try? FileManager.default.contentsOfDirectory(atPath: work)) ?? [] where file.hasPrefix("x\(take)-") {
            try? FileManager.default.removeItem(atPath: "\(work)/\(file)")
        }
    }
    player.terminate()
    player.waitUntilExit()
    server.stop()
}

// The report.
func ratio(_ a: Double, _ b: Double) -> String { b > 0 ? String(format: "%.2f", a / b) : "–" }
let minutes = options.seconds / 60
var report = """
# Benchmarks: `jaq record` and `jack_capture`

Generated by `make bench` (`.build/release/jaq-bench --seconds \(Int(options.seconds)) --rounds \(options.rounds)`) on \
\(ProcessInfo.processInfo.hostName), \(ProcessInfo.processInfo.activeProcessorCount) cores, \
\(ISO8601DateFormatter().string(from: Date())).

**Setup.** For each channel count a private JACK server runs **in real time** (dummy backend, \
48 kHz, \(options.period)-frame periods, \(realtime ? "**realtime scheduling** (`jackd --realtime`: the server and every client's process thread run SCHED_FIFO, as in a studio)" : "`--no-realtime` scheduling as in the tests (this machine did not allow realtime scheduling)")); `jaq play --loop` \
plays an N-channel ramp on N ports; **`jaq record` (twice) and `jack_capture` record those same N ports, \
one after the other on the same server**, as 32-bit float and as 24-bit integers, \(Int(options.seconds)) s each in all: \(options.rounds) rounds in which \
each tool records \(String(format: "%g", options.seconds / Double(options.rounds))) s in turn, so that a slow spell of this shared machine \
falls on every tool alike (the table sums the rounds; peaks are the largest of them). The runs: \
`jaq record -b float -d S` writing one file per track (its default), `jaq record --interleaved` \
writing one multichannel WAV, and `jack_capture --daemon -d S` writing one multichannel WAV \
(the only kind it writes); then `jaq record -b 24` and `jack_capture --bitdepth 24`. \
**`floor-record`** (`Sources/Benchmarks/Floor/floor-record.c`, float and 24-bit) is a referee, not a tool: \
the least a realtime-safe libjack recorder can do (one copy per port and cycle into a ring, one `write` per \
track every 0.5 s, nothing else), so its CPU is the floor under any recorder on this server and machine. Buffering at \
the defaults: jaq allocates 10 s of buffers up front (`--buffer 10`) but touches only those the \
disk needs; jack_capture starts with 8 s and grows to 40 s. \
Each run's CPU (user + system seconds, to the microsecond) comes from `wait4`'s rusage, its peak RSS (VmHWM) and RssAnon from `/proc`; each runs under the same \
`LD_PRELOAD` probe (`Sources/Benchmarks/CycleTime/cycletime.c`), which times every call of the \
program's JACK process callback. Dropped and repeated frames are counted by checking the ramp \
in the files frame by frame. Xruns are the server's, during each tool's run.

Every round's takes are checked, floor-record's too: floor-record cannot lose a cycle of its own, so a \
round in which its files are not contiguous source frames measured the machine (the server skipped cycles \
for every client), and is set aside and run again, not added in (below the tables). "Steal" is the CPU time \
the hypervisor gave other guests during the tool's runs (`/proc/stat`), for reading a slow round.

| channels | tool | CPU s per channel-minute | peak RSS MiB (with JACK shm) | peak RssAnon MiB | realtime callback µs/cycle (mean / max) | frames | dropped | repeated | server xruns | steal s | exit |
|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|

"""
for r in results {
    for (name, m) in zip(r.labels, r.measurements) {
        let perChannelMinute = m.cpuSeconds / Double(r.channels) / minutes
        report += "| \(r.channels) | \(name) | \(String(format: "%.4f", perChannelMinute)) | \(String(format: "%.1f", Double(m.peakRSSKiB) / 1024)) | \(String(format: "%.1f", Double(m.anonymousRSSKiB) / 1024)) | \(String(format: "%.1f / %.0f", m.cycleMeanMicroseconds, m.cycleMaxMicroseconds)) | \(m.frames) | \(m.droppedFrames) | \(m.repeatedFrames) | \(m.xruns) | \(String(format: "%.2f", m.stealSeconds)) | \(m.exitStatus) |\n"
    }
}
report += """

Ratios to jack_capture writing the same samples (float runs against `jack_capture`, 24-bit against `jack_capture --bitdepth 24`; below 1: less than jack_capture), and jaq's CPU against the floor (`floor-record` of the same kind):

| channels | run | CPU ÷ jack_capture | CPU ÷ floor-record | peak RSS | peak RssAnon | callback time (mean) | dropped frames (run, jack_capture) |
|---|---|---:|---:|---:|---:|---:|---:|

"""
for r in results {
    for (name, m) in zip(r.labels, r.measurements) where name.hasPrefix("jaq") || name.hasPrefix("floor") {
        // Each jaq run (and the floor) against jack_capture writing the same samples (float or 24-bit).
        let peerLabel = name.contains("24") ? "jack_capture --bitdepth 24" : "jack_capture"
        guard let peer = r.labels.firstIndex(of: peerLabel) else { continue }
        let capture = r.measurements[peer]
        let floorLabel = name.contains("24") ? "floor-record 24" : "floor-record"
        let floor = name.hasPrefix("floor") ? nil : r.labels.firstIndex(of: floorLabel).map { r.measurements[$0] }
        report += "| \(r.channels) | \(name) | \(ratio(m.cpuSeconds, capture.cpuSeconds)) | \(floor.map { ratio(m.cpuSeconds, $0.cpuSeconds) } ?? "–") | \(ratio(Double(m.peakRSSKiB), Double(capture.peakRSSKiB))) | \(ratio(Double(m.anonymousRSSKiB), Double(capture.anonymousRSSKiB))) | \(ratio(m.cycleMeanMicroseconds, capture.cycleMeanMicroseconds)) | \(m.droppedFrames), \(capture.droppedFrames) |\n"
    }
}
report += """

**Reading the drop columns.** The server here runs on a small shared machine, so it can have \
xruns now and then (the column "server xruns", per tool's run). A client \
that runs late in such a cycle reads the player's *next* period (the player, which waits for \
nobody, has already run) and then that period again: the ramp check counts one period \
"dropped" and one "repeated". Drops in a run without server xruns would be the tool's own.

\(setAsideReport(setAside))\(startUpReport(startUp, channels: options.channels.first ?? 2))Reproduce: `make bench` (or `swift build -c release && .build/release/jaq-bench --seconds 60 --channels 2,16,64`).
The frame counts include the frames before the first ramp sample reached each tool; `jaq record -d` \
is exact to the frame (\(rate) × seconds), `jack_capture -d` stops after about that many seconds.

Offline rendering (`jaq render`, AudioQueueOfflineRender) against sox: [benchmarks-render.md](benchmarks-render.md).

"""
if !playRows.isEmpty {
    report += """
    ## Playback: `jaq play` and `sndfile-jackplay`

    A \(options.playChannels)-channel 16-bit WAV of \(Int(playSeconds)) s played to the end, \(options.rounds) times by each in turn, \
    on a server set up as above (`jaq play --quiet FILE`, `sndfile-jackplay FILE`), and by the referee `floor-play` \
    (`Sources/Benchmarks/Floor/floor-play.c`: libsndfile's 16-bit frames converted to float into per-channel rings \
    0.1 s at a time, one copy per port and cycle; the least a realtime-safe player can do).

    | player | CPU s (all runs) | CPU s per channel-minute | peak RssAnon MiB | realtime callback µs/cycle (mean / max) | server xruns | exit |
    |---|---:|---:|---:|---:|---:|---:|

    """
    for row in playRows {
        let perChannelMinute = row.m.cpuSeconds / Double(options.playChannels) / (playSeconds * Double(options.rounds) / 60)
        report += "| \(row.label) | \(String(format: "%.2f", row.m.cpuSeconds)) | \(String(format: "%.4f", perChannelMinute)) | \(String(format: "%.1f", Double(row.m.anonymousRSSKiB) / 1024)) | \(String(format: "%.1f / %.0f", row.m.cycleMeanMicroseconds, row.m.cycleMaxMicroseconds)) | \(row.m.xruns) | \(row.m.exitStatus) |\n"
    }
    if playRows.count >= 2 {
        report += "\nCPU ratio jaq play / sndfile-jackplay: \(ratio(playRows[0].m.cpuSeconds, playRows[1].m.cpuSeconds))"
        if playRows.count >= 3 {
            report += "; floor-play / sndfile-jackplay: \(ratio(playRows[2].m.cpuSeconds, playRows[1].m.cpuSeconds))"
                + "; jaq play / floor-play: \(ratio(playRows[0].m.cpuSeconds, playRows[2].m.cpuSeconds))"
        }
        report += ".\n\n"
    }
}
if !xrunRows.isEmpty {
    report += """
    ## Xruns on a non-realtime server

    \(xrunRows.count) takes of 64 tracks (`jaq record -b float -d 5`) from a looping `jaq play` on a `--no-realtime` \
    server, one after the other, each followed by a take of the same ports by `floor-record` (the referee above): \
    how often the scheduler alone makes a recorder late here. "Late" counts the xruns jackd blamed on that client \
    (`client = NAME was not finished`).

    | take | server xruns (jaq record) | jaq record late | jaq play late | losses reported by jaq record | server xruns (floor-record) | floor-record late |
    |---:|---:|---:|---:|---|---:|---:|

    """
    for row in xrunRows {
        report += "| \(row.take) | \(row.serverXruns) | \(row.lateRecorder) | \(row.latePlayer) | \(row.lost ? "yes" : "no") | \(row.floorXruns) | \(row.lateFloor) |\n"
    }
    report += "\n"
}
let outputPath = options.output.hasPrefix("/") ? options.output : packageRoot.appendingPathComponent(options.output).path
// Notes written by hand (profiles: where the time goes) follow the generated tables and stay.
let notesHeading = "## Where the time goes"
if let existing = try? String(contentsOfFile: outputPath, encoding: .utf8), let notes = existing.range(of: notesHeading) {
    report += String(existing[notes.lowerBound...])
}
try report.write(toFile: outputPath, atomically: true, encoding: .utf8)
print("wrote \(outputPath)")
