import Foundation
import JackTestSupport

// What one run of a tool measured, and how: wait4's rusage, the cycle probe, /proc, the server's log.

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
    /// CPU seconds the hypervisor gave other guests while the tool ran (/proc/stat "steal").
    var stealSeconds = 0.0
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
        stealSeconds += round.stealSeconds
        if exitStatus == 0 { exitStatus = round.exitStatus }
        if note.isEmpty { note = round.note }
    }
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

/// RssAnon and VmHWM (peak RSS) of a running process, in KiB. (wait4's ru_maxrss is no use
/// here: a child spawned with posix_spawn shares this process's memory until it execs, and its
/// peak starts at this process's.)
func memory(of pid: pid_t) -> (anonymous: Int, peak: Int) {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return (0, 0) }
    var anonymous = 0, peak = 0
    for line in status.split(separator: "\n") {
        let value = Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
        if line.hasPrefix("RssAnon:") { anonymous = value }
        if line.hasPrefix("VmHWM:") { peak = value }
    }
    return (anonymous, peak)
}

func xrunCount(_ server: JackServer) -> Int {
    server.logText.split(separator: "\n").filter { $0.localizedCaseInsensitiveContains("xrun") }.count
}

/// Runs a tool (under the cycle probe, if `environment` preloads it) until it exits: CPU from
/// wait4's rusage (in microseconds), peak RSS and RssAnon from /proc, wall time, callback time, exit status.
func runTimed(_ name: String, _ arguments: [String], environment: [String: String]) throws -> Measurement {
    var environment = environment
    environment["JAQ_CYCLE_LOG"] = "\(work)/\(name).cycles"
    // The tools write their files relative to the work directory.
    let stealBefore = stealSeconds()
    let started = Date()
    let previous = FileManager.default.currentDirectoryPath
    _ = FileManager.default.changeCurrentDirectoryPath(work)
    let pid = spawn(arguments, environment: environment, log: "\(work)/\(name).log")
    _ = FileManager.default.changeCurrentDirectoryPath(previous)
    guard let pid else { throw BenchError("cannot start \(arguments[0])") }
    var m = Measurement()
    // Peak anonymous memory (RssAnon): what the program allocates, without JACK's shared
    // memory (about 105 MB mapped into every client, counted in the peak RSS, VmHWM).
    let ended = waitForExit(pid) {
        let now = memory(of: pid)
        m.anonymousRSSKiB = max(m.anonymousRSSKiB, now.anonymous)
        m.peakRSSKiB = max(m.peakRSSKiB, now.peak)
    }
    m.exitStatus = ended.status
    m.cpuSeconds = ended.usage.cpuSeconds
    m.wallSeconds = Date().timeIntervalSince(started)
    m.stealSeconds = stealSeconds() - stealBefore
    readCycles("\(work)/\(name).cycles", into: &m)
    return m
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Xruns the server blamed on a client whose name starts with `client` ("client = NAME was not finished").
func lateClientCount(_ server: JackServer, client: String) -> Int {
    server.logText.split(separator: "\n").filter { $0.contains("client = \(client)") && $0.contains("not finished") }.count
}
