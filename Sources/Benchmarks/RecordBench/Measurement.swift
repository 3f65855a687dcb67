import Foundation
import JackTestSupport

// What one run of a tool measured, and how: /usr/bin/time, the cycle probe, /proc, the server's log.

struct Measurement {
    var anonymousRSSKiB = 0
    var cpuSeconds = 0.0
    var wallSeconds = 0.0
    var peakRSSKiB = 0
    var cycleCount = 0
    var cycleMeanMicroseconds = 0.0
    var cycleMaxMicroseconds = 0.0
    var frames = 0
    var droppedFrames = 0
    var repeatedFrames = 0
    var exitStatus: Int32 = 0
    var xruns = 0
    var note = ""
}

extension Measurement {
    /// Adds one round's run to the totals (CPU, frames, losses, xruns, callback time) and maxima
    /// (memory, longest callback).
    mutating func add(_ round: Measurement) {
        let cycles = cycleCount + round.cycleCount
        if cycles > 0 {
            cycleMeanMicroseconds = (cycleMeanMicroseconds * Double(cycleCount) + round.cycleMeanMicroseconds * Double(round.cycleCount)) / Double(cycles)
        }
        cycleCount = cycles
        cycleMaxMicroseconds = max(cycleMaxMicroseconds, round.cycleMaxMicroseconds)
        anonymousRSSKiB = max(anonymousRSSKiB, round.anonymousRSSKiB)
        peakRSSKiB = max(peakRSSKiB, round.peakRSSKiB)
        cpuSeconds += round.cpuSeconds
        wallSeconds += round.wallSeconds
        frames += round.frames
        droppedFrames += round.droppedFrames
        repeatedFrames += round.repeatedFrames
        xruns += round.xruns
        if exitStatus == 0 { exitStatus = round.exitStatus }
        if note.isEmpty { note = round.note }
    }
}

func readTime(_ path: String, into m: inout Measurement) {
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return }
    let fields = text.split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { Double($0) }
    guard fields.count >= 4 else { return }
    m.wallSeconds = fields[fields.count - 4]
    m.cpuSeconds = fields[fields.count - 3] + fields[fields.count - 2]
    m.peakRSSKiB = Int(fields[fields.count - 1])
}

func readCycles(_ path: String, into m: inout Measurement) {
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return }
    // The client that spent the most time in its callback is the one recording.
    let lines = text.split(separator: "\n").map { $0.split(separator: " ").compactMap { Double($0) } }.filter { $0.count == 4 }
    guard let busiest = lines.max(by: { $0[2] < $1[2] }), busiest[1] > 0 else { return }
    m.cycleCount = Int(busiest[1])
    m.cycleMeanMicroseconds = busiest[2] / busiest[1] / 1000
    m.cycleMaxMicroseconds = busiest[3] / 1000
}

/// RssAnon (KiB) of the program /usr/bin/time runs (its child; env execs into the tool).
func anonymousRSS(ofChildOf pid: Int32) -> Int {
    guard let children = try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8),
          let child = children.split(separator: " ").first,
          let status = try? String(contentsOfFile: "/proc/\(child)/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix("RssAnon:") {
        return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
    }
    return 0
}

func xrunCount(_ server: JackServer) -> Int {
    server.logText.split(separator: "\n").filter { $0.localizedCaseInsensitiveContains("xrun") }.count
}

/// Runs a tool under /usr/bin/time (and the cycle probe, if `environment` preloads it) until it
/// exits: CPU, wall time, peak RSS and RssAnon, callback time, exit status.
func runTimed(_ name: String, _ arguments: [String], environment: [String: String]) throws -> Measurement {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/time")
    process.arguments = ["-f", "%e %U %S %M", "-o", "\(work)/\(name).time", "/usr/bin/env", "JAQ_CYCLE_LOG=\(work)/\(name).cycles"] + arguments
    process.environment = environment
    process.currentDirectoryURL = URL(fileURLWithPath: work)
    let log = "\(work)/\(name).log"
    _ = FileManager.default.createFile(atPath: log, contents: nil)
    process.standardOutput = FileHandle(forWritingAtPath: log)
    process.standardError = FileHandle(forWritingAtPath: log)
    process.standardInput = FileHandle.nullDevice
    try process.run()
    var m = Measurement()
    // Peak anonymous memory (RssAnon): what the program allocates, without JACK's shared
    // memory (about 105 MB mapped into every client, counted in the RSS /usr/bin/time reports).
    while process.isRunning {
        m.anonymousRSSKiB = max(m.anonymousRSSKiB, anonymousRSS(ofChildOf: process.processIdentifier))
        usleep(100_000)
    }
    m.exitStatus = process.terminationStatus
    readTime("\(work)/\(name).time", into: &m)
    readCycles("\(work)/\(name).cycles", into: &m)
    return m
}

/// Xruns the server blamed on a client whose name starts with `client` ("client = NAME was not finished").
func lateClientCount(_ server: JackServer, client: String) -> Int {
    server.logText.split(separator: "\n").filter { $0.contains("client = \(client)") && $0.contains("not finished") }.count
}
