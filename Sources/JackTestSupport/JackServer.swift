import Foundation
import Glibc

/// A private JACK server for tests: `jackd -n <unique> --no-realtime -d dummy`, or a private
/// PipeWire daemon whose JACK clients use PipeWire's libjack (`backend: .pipeWire`, see
/// PipeWireServer.swift); started on creation, stopped (by its pid) on `stop()` or deinit.
/// Never relies on a server that is already running.
public final class JackServer: @unchecked Sendable {
    /// Which server runs, and so which libjack the programs started with `environment` load.
    public enum Backend: String, Sendable, CaseIterable, CustomStringConvertible {
        /// jackd2 with the dummy backend; programs use jackd2's libjack.
        case jackd
        /// PipeWire with its dummy driver; programs use PipeWire's libjack, as under `pw-jack`.
        case pipeWire
        public var description: String { rawValue }
    }

    public let backend: Backend
    /// The server's name: jackd's `-n`; for PipeWire its socket name (pipewire-0) in `runtimeDirectory`.
    public let name: String
    /// PipeWire's private XDG_RUNTIME_DIR (where its socket is); nil for jackd.
    public let runtimeDirectory: String?
    public let sampleRate: Int
    public let periodFrames: Int
    public let process: Process
    private let log: FileHandle?
    private var holdsLock = false
    /// Stops the server if this test process dies without stopping it (a crash, SIGKILL).
    private var watchdog: Process?

    /// Held by each live server (and by `withExclusiveAccess`): tests that use libjack in
    /// this process run one at a time.
    static let exclusive = ExclusiveAccess()

    /// A binary semaphore (released by whichever thread stops the server).
    final class ExclusiveAccess: @unchecked Sendable {
        private let semaphore = DispatchSemaphore(value: 1)
        func lock() { semaphore.wait() }
        func unlock() { semaphore.signal() }
    }

    /// Runs `body` while no test server of this process is alive (for tests that talk to
    /// libjack without one, e.g. "no server running").
    public static func withExclusiveAccess<T>(_ body: () throws -> T) rethrows -> T {
        exclusive.lock()
        defer { exclusive.unlock() }
        return try body()
    }
    public let logPath: String

    /// Starts a dummy-backend server and waits until clients can connect.
    /// - Parameters:
    ///   - capture, playback: physical (system) ports of the dummy backend.
    ///   - realtime: run the server and its clients' process threads with realtime
    ///     scheduling (`jackd -R`, needs the privilege); tests use `--no-realtime`.
    ///   - backend: jackd (default) or PipeWire (which has no physical ports: `capture` and
    ///     `playback` are ignored, and `realtime` too).
    ///   - namespace: run jackd inside this network namespace (`ip netns exec`; NetJackPair.swift).
    ///   - driver: jackd's driver arguments instead of the dummy backend's (`["-d", "net", …]`).
    ///   - exclusive: hold the one-server-per-process lock. A test whose JACK clients all run in
    ///     child processes (jaq, the peers) may run several servers at once (a netjack2 pair).
    public init(sampleRate: Int = 48000, periodFrames: Int = 256, capture: Int = 2, playback: Int = 2,
                realtime: Bool = false, backend: Backend = .jackd, namespace: String? = nil, driver: [String]? = nil,
                exclusive: Bool = true, function: String = #function) throws {
        // One server at a time per test process: libjack keeps process-wide state tied to the
        // server it talks to, so clients of two servers in one process interfere.
        if exclusive {
            JackServer.exclusive.lock()
            holdsLock = true
        }
        self.sampleRate = sampleRate
        self.periodFrames = periodFrames
        self.backend = backend
        // The pid and a counter, and a random part: a pid comes back in a later run, and a
        // killed run's client semaphores with it (see JackServerRegistry).
        let unique = "jaqtest-\(getpid())-\(JackServer.counter.next())-\(String(UInt16.random(in: .min ... .max), radix: 16))"
        if backend == .jackd {
            JackServerRegistry.reclaimDeadServers()
            JackServerRegistry.removeDeadTestSemaphores()
        }
        let launch: ServerLaunch
        do {
            launch = backend == .jackd
                ? try Self.jackdLaunch(name: unique, sampleRate: sampleRate, periodFrames: periodFrames,
                                       capture: capture, playback: playback, realtime: realtime,
                                       namespace: namespace, driver: driver)
                : try Self.pipeWireLaunch(unique: unique, sampleRate: sampleRate, periodFrames: periodFrames)
        } catch {
            if exclusive { JackServer.exclusive.unlock() }
            throw error
        }
        name = launch.name
        runtimeDirectory = launch.runtimeDirectory
        logPath = NSTemporaryDirectory() + "/\(unique).log"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        log = FileHandle(forWritingAtPath: logPath)
        process = Process()
        process.executableURL = URL(fileURLWithPath: launch.executable)
        process.arguments = launch.arguments
        process.environment = launch.environment
        process.standardOutput = log
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch {
            releaseLock()
            throw error
        }
        startWatchdog()
        var waited = 0.0
        while waited < 10 {
            if !process.isRunning {
                stop()
                let servers = (try? FileManager.default.contentsOfDirectory(atPath: "/dev/shm"))?.filter { $0.hasPrefix("jack-") }.count ?? 0
                throw JackServerError("\(launch.executable) exited: \(logText)"
                                      + (backend == .jackd && servers > 0 ? " (JACK allows 8 servers at once; \(servers) jack-* entries in /dev/shm)" : ""))
            }
            if isReady(waited: waited, portsExpected: capture + playback > 0) { return }
            usleep(50_000)
            waited += 0.05
        }
        stop()
        throw JackServerError("\(launch.executable) \(unique) did not come up: \(logText)")
    }

    /// How to start one server.
    struct ServerLaunch {
        var name: String
        var executable: String
        var arguments: [String]
        var environment: [String: String]
        var runtimeDirectory: String?
    }

    private static func jackdLaunch(name: String, sampleRate: Int, periodFrames: Int, capture: Int, playback: Int,
                                    realtime: Bool, namespace: String?, driver: [String]?) throws -> ServerLaunch {
        let jackd = ["/usr/bin/jackd", "/usr/local/bin/jackd"].first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let jackd else { throw JackServerError("jackd is not installed (apt-get install jackd2)") }
        var environment = ProcessInfo.processInfo.environment
        environment["JACK_NO_AUDIO_RESERVATION"] = "1"
        environment.removeValue(forKey: "JACK_DEFAULT_SERVER")
        let arguments = ["-n", name, realtime ? "--realtime" : "--no-realtime"]
            + (driver ?? ["-d", "dummy", "-r", "\(sampleRate)", "-p", "\(periodFrames)", "-C", "\(capture)", "-P", "\(playback)"])
        if let namespace {
            // `ip netns exec` enters the namespace and execs jackd: the pid stays jackd's.
            return ServerLaunch(name: name, executable: try NetJackPair.ipCommand(),
                                arguments: ["netns", "exec", namespace, jackd] + arguments, environment: environment)
        }
        return ServerLaunch(name: name, executable: jackd, arguments: arguments, environment: environment)
    }

    /// Ready when clients can connect: jackd when jack_lsp lists the system ports (or after a
    /// second when it has none), PipeWire when its dummy driver is there.
    private func isReady(waited: Double, portsExpected: Bool) -> Bool {
        switch backend {
        case .jackd:
            return (try? run(["jack_lsp"]))?.contains("system:") == true || (!portsExpected && waited > 1)
        case .pipeWire:
            return pipeWireIsReady()
        }
    }

    /// The server's log so far.
    public var logText: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// The xruns the server has logged: cycles it could not run in time (a loaded machine).
    public var xrunCount: Int {
        switch backend {
        case .jackd: return logText.split(separator: "\n").filter { $0.contains("JackEngine::XRun") }.count
        case .pipeWire: return pipeWireXrunCount
        }
    }

    /// Environment for a child process to use this server (with PipeWire's libjack for PipeWire).
    public var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["JACK_NO_AUDIO_RESERVATION"] = "1"
        switch backend {
        case .jackd: environment["JACK_DEFAULT_SERVER"] = name
        case .pipeWire: addPipeWireClientEnvironment(&environment)
        }
        return environment
    }

    /// Runs a program against this server and returns its standard output (throws on failure).
    @discardableResult
    public func run(_ arguments: [String], timeout: Double = 30) throws -> String {
        let result = try runProcess(arguments, environment: environment, timeout: timeout)
        guard result.status == 0 else {
            throw JackServerError("\(arguments.joined(separator: " ")) exited \(result.status): \(result.error)")
        }
        return result.output
    }

    /// Starts a program against this server in the background.
    public func spawn(_ arguments: [String], output: String? = nil) throws -> Process {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        child.arguments = arguments
        child.environment = environment
        child.standardInput = FileHandle.nullDevice
        if let output {
            _ = FileManager.default.createFile(atPath: output, contents: nil)
            let handle = FileHandle(forWritingAtPath: output)
            child.standardOutput = handle
            child.standardError = handle
        } else {
            child.standardOutput = FileHandle.nullDevice
            child.standardError = FileHandle.nullDevice
        }
        try child.run()
        return child
    }

    /// A shell that waits for this process to end and then stops the server, by its pid.
    private func startWatchdog() {
        let dog = Process()
        dog.executableURL = URL(fileURLWithPath: "/bin/sh")
        let server = process.processIdentifier
        dog.arguments = ["-c", "while kill -0 \(getpid()) 2>/dev/null && kill -0 \(server) 2>/dev/null; do sleep 1; done; "
                         + "kill \(server) 2>/dev/null; sleep 3; kill -9 \(server) 2>/dev/null; exit 0"]
        dog.standardInput = FileHandle.nullDevice
        dog.standardOutput = FileHandle.nullDevice
        dog.standardError = FileHandle.nullDevice
        if (try? dog.run()) != nil { watchdog = dog }
    }

    private func releaseLock() {
        if holdsLock {
            holdsLock = false
            JackServer.exclusive.unlock()
        }
    }

    /// Stops the server (SIGTERM, then SIGKILL after `timeout` seconds) and waits for it. A
    /// jackd that is killed keeps its slot in JACK's server registry (8 slots per machine), so
    /// give a slow one (a netjack2 master) the time it needs.
    public func stop(timeout: Double = 5) {
        defer { releaseLock() }
        if let dog = watchdog, dog.isRunning {
            kill(dog.processIdentifier, SIGKILL)
            dog.waitUntilExit()
        }
        watchdog = nil
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        var waited = 0.0
        while process.isRunning && waited < timeout {
            usleep(20_000)
            waited += 0.02
        }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        try? log?.close()
    }

    /// Stops the server and removes its log (kept when `JAQ_KEEP` is set, for debugging).
    deinit {
        stop()
        if let runtimeDirectory { try? FileManager.default.removeItem(atPath: runtimeDirectory) }
        if ProcessInfo.processInfo.environment["JAQ_KEEP"] == nil { try? FileManager.default.removeItem(atPath: logPath) }
    }

    private static let inProcessClients = NSRecursiveLock()

    /// Runs `body`, which opens JACK clients in the test process itself, while no other test
    /// does. libjack keeps process-wide client state, and clients of two servers open at once
    /// in one process interfere: seen in full parallel `swift test` runs as a server's own
    /// ports missing from its port list, recordings with cycles of silence, and a crash inside
    /// libjack. Clients in child processes (the examples, jaq, the peers) need no turn.
    public static func withInProcessClients<T>(_ body: () throws -> T) rethrows -> T {
        inProcessClients.lock()
        defer { inProcessClients.unlock() }
        return try body()
    }

    private static let counter = Counter()
    final class Counter: @unchecked Sendable {
        private var value = 0
        private let lock = NSLock()
        func next() -> Int { lock.lock(); defer { lock.unlock() }; value += 1; return value }
    }
}

public struct JackServerError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Runs a command (via /usr/bin/env) and collects its output, with a timeout. A command killed
/// by a signal returns the signal's number as its status (`runProcessEnding` tells the two apart).
public func runProcess(_ arguments: [String], environment: [String: String]? = nil, timeout: Double = 60,
                       currentDirectory: String? = nil) throws -> (status: Int32, output: String, error: String) {
    let ending = try runProcessEnding(arguments, environment: environment, timeout: timeout, currentDirectory: currentDirectory)
    return (ending.status, ending.output, ending.error)
}

/// How a command run by `runProcessEnding` ended.
public struct ProcessEnding: Sendable {
    /// The exit status, or the signal's number when `signal` is set.
    public var status: Int32
    public var output: String
    public var error: String
    /// The signal that killed the command (SIGSEGV, SIGABRT …), or nil when it exited.
    public var signal: Int32?
}

/// `runProcess`, saying whether the command exited or was killed by a signal.
public func runProcessEnding(_ arguments: [String], environment: [String: String]? = nil, timeout: Double = 60,
                             currentDirectory: String? = nil) throws -> ProcessEnding {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = arguments
    if let environment { process.environment = environment }
    if let currentDirectory { process.currentDirectoryURL = URL(fileURLWithPath: currentDirectory) }
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = FileHandle.nullDevice
    try process.run()
    let outData = DataCollector(out.fileHandleForReading)
    let errData = DataCollector(err.fileHandleForReading)
    var waited = 0.0
    while process.isRunning && waited < timeout {
        usleep(5_000)
        waited += 0.005
    }
    if process.isRunning {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        throw JackServerError("\(arguments.joined(separator: " ")) timed out after \(timeout) s")
    }
    process.waitUntilExit()
    return ProcessEnding(status: process.terminationStatus, output: outData.text(), error: errData.text(),
                         signal: process.terminationReason == .uncaughtSignal ? process.terminationStatus : nil)
}

/// Reads a pipe to the end on a background thread (so a chatty child never blocks).
final class DataCollector: @unchecked Sendable {
    private var data = Data()
    private let lock = NSLock()
    private let done = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle) {
        Thread.detachNewThread { [self] in
            let all = handle.readDataToEndOfFile()
            lock.lock()
            data = all
            lock.unlock()
            done.signal()
        }
    }

    func text() -> String {
        _ = done.wait(timeout: .now() + 5)
        lock.lock()
        defer { lock.unlock() }
        return String(decoding: data, as: UTF8.self)
    }
}
