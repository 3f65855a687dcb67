import Foundation

// What the machine did while a tool ran, and start-up costs measured to the microsecond.

/// Seconds of CPU time the hypervisor gave other guests ("steal", /proc/stat) so far, over all CPUs.
func stealSeconds() -> Double {
    guard let stat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
          let line = stat.split(separator: "\n").first(where: { $0.hasPrefix("cpu ") }) else { return 0 }
    // cpu user nice system idle iowait irq softirq steal ...
    let fields = line.split(separator: " ").dropFirst().compactMap { Double($0) }
    guard fields.count >= 8 else { return 0 }
    return fields[7] / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// A round of the tools in turn whose floor-record takes are not contiguous source frames:
/// floor-record cannot lose a cycle of its own (it copies one period per cycle and never
/// blocks), so its gaps are cycles the server or the machine skipped, and the round measured
/// the machine rather than the tools. It is set aside and run again.
struct SetAsideRound {
    var channels: Int
    var attempt: Int
    var floorDropped: Int
    var floorRepeated: Int
    var serverXruns: Int
    var steal: Double
}

/// Starts `arguments` with stdin from /dev/null and stdout and stderr to `log` (nil: /dev/null),
/// in `directory`'s files by absolute paths only; its pid, or nil.
func spawn(_ arguments: [String], environment: [String: String], log: String? = nil) -> pid_t? {
    var pid: pid_t = 0
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, log ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    let argv = arguments.map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { (argv + envp).forEach { free($0) } }
    return posix_spawnp(&pid, arguments[0], &actions, nil, argv, envp) == 0 ? pid : nil
}

/// Waits for `pid` (calling `poll` every 0.1 s until it exits): its exit status (128 + signal if
/// killed) and rusage, whose CPU times are in microseconds (/usr/bin/time rounds to 10 ms).
func waitForExit(_ pid: pid_t, poll: () -> Void = {}) -> (status: Int32, usage: rusage) {
    var status: Int32 = 0
    var usage = rusage()
    while true {
        let done = wait4(pid, &status, WNOHANG, &usage)
        if done == pid { break }
        if done < 0 && errno != EINTR { return (-1, usage) }
        poll()
        usleep(100_000)
    }
    return ((status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f), usage)
}

extension rusage {
    /// User + system CPU seconds.
    var cpuSeconds: Double {
        Double(ru_utime.tv_sec + ru_stime.tv_sec) + Double(ru_utime.tv_usec + ru_stime.tv_usec) / 1e6
    }
}

/// Runs `arguments` to its end: CPU seconds (user + system) and exit status.
func runForCPU(_ arguments: [String], environment: [String: String]) -> (cpu: Double, status: Int32) {
    guard let pid = spawn(arguments, environment: environment) else { return (0, -1) }
    let ended = waitForExit(pid)
    return (ended.usage.cpuSeconds, ended.status)
}

/// Start-up: `jaq --version`, and a 0.2 s take of two ports by jaq record and by floor-record,
/// `runs` times each in turn; the medians in milliseconds of CPU.
struct StartUpCost {
    var version = 0.0, jaqTake = 0.0, floorTake = 0.0, runs = 0, failures = 0

    static func measure(jaq: String, floorRecord: String, ports: [String], environment: [String: String],
                        directory: String, runs: Int) -> StartUpCost {
        var version: [Double] = [], jaqTake: [Double] = [], floorTake: [Double] = []
        var failures = 0
        for run in 1...runs {
            let v = runForCPU([jaq, "--version"], environment: environment)
            let j = runForCPU([jaq, "record", "--quiet", "-b", "float", "-d", "0.2", "-o", "\(directory)/su\(run)-{n}.wav"] + ports,
                              environment: environment)
            let f = runForCPU([floorRecord, "0.2", "float", "\(directory)/sufloor\(run)"] + ports, environment: environment)
            failures += [v, j, f].filter { $0.status != 0 }.count
            version.append(v.cpu * 1000)
            jaqTake.append(j.cpu * 1000)
            floorTake.append(f.cpu * 1000)
            for file in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] where file.hasPrefix("su") {
                try? FileManager.default.removeItem(atPath: "\(directory)/\(file)")
            }
        }
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        return StartUpCost(version: median(version), jaqTake: median(jaqTake), floorTake: median(floorTake),
                           runs: runs, failures: failures)
    }
}

/// The rounds set aside, for the report (empty if none was).
func setAsideReport(_ setAside: [SetAsideRound]) -> String {
    guard !setAside.isEmpty else { return "No round was set aside: floor-record's takes were contiguous in every round.\n\n" }
    var text = "**Rounds set aside** (floor-record's takes not contiguous: the machine skipped cycles; each was run again):\n\n"
        + "| channels | attempt | floor-record dropped | floor-record repeated | server xruns (all tools) | steal s |\n"
        + "|---:|---:|---:|---:|---:|---:|\n"
    for round in setAside {
        text += "| \(round.channels) | \(round.attempt) | \(round.floorDropped) | \(round.floorRepeated) | \(round.serverXruns) | \(String(format: "%.2f", round.steal)) |\n"
    }
    return text + "\n"
}

/// The start-up costs, for the report.
func startUpReport(_ startUp: StartUpCost?, channels: Int) -> String {
    guard let startUp else { return "" }
    return """
        **Start-up** (CPU of a whole process, from `wait4`'s rusage; median of \(startUp.runs) runs in turn, on the \
        \(channels)-channel server, 2 ports): `jaq --version` \(String(format: "%.1f", startUp.version)) ms; \
        a 0.2 s take (`jaq record -b float -d 0.2`) \(String(format: "%.1f", startUp.jaqTake)) ms against floor-record's \
        \(String(format: "%.1f", startUp.floorTake)) ms: \(String(format: "%.1f", startUp.jaqTake - startUp.floorTake)) ms above the floor\
        \(startUp.failures > 0 ? " (\(startUp.failures) runs failed)" : "").


        """
}
