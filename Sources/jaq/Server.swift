import ArgumentParser
import FoundationEssentials
import Glibc
import AudioToolbox
import JackCommon
import JackControl

/// `--server NAME`: the server every command talks to.
struct ServerOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Use the JACK server NAME (default: $JACK_DEFAULT_SERVER or JACK's default). "
                                            + "When none runs, jaq starts the one configured in ~/.jackdrc, as every JACK program does.",
                                            valueName: "name"))
    var server: String?
}

/// `-q`: every command has it; status lines go, errors and the command's output stay.
struct QuietOption: ParsableArguments {
    @Flag(name: .shortAndLong, help: "No status lines (errors and the command's output are still printed).")
    var quiet = false
}

/// `--private-server`: the silent dummy server jaq starts only when asked (record, play, ports).
struct PrivateServerOptions: ParsableArguments {
    @Flag(name: .long, help: ArgumentHelp("When no JACK server runs, start a private one of jaq's own instead of the one in ~/.jackdrc: "
                                          + "the dummy backend (no sound card, silent system ports) from jackd.conf, stopped when jaq exits. "
                                          + "Also $JAQ_PRIVATE_SERVER=1."))
    var privateServer = false

    @Option(name: .long, help: ArgumentHelp("jackd arguments for --private-server (default: PREFIX/share/jaq/jackd.conf when installed, "
                                            + "Configs/jackd.conf in the source tree; also $JAQ_SERVER_CONFIG).", valueName: "file"))
    var serverConfig: String?

    /// Whether a private server was asked for, by the flag or by $JAQ_PRIVATE_SERVER.
    var wanted: Bool {
        if privateServer { return true }
        guard let value = Environment["JAQ_PRIVATE_SERVER"] else { return false }
        return !["", "0", "no", "false"].contains(value.lowercased())
    }
}

/// The JACK server a command talks to: an existing one, or a private one jaq
/// started (and stops when it exits).
final class ServerContext: @unchecked Sendable {
    let name: String?
    /// The command's control client (ports, time, transport), opened while finding the server:
    /// its opening is the check that a server runs, so no separate probe client is needed.
    private(set) var session: JackSession!
    private var process: ChildProcess?

    /// For the control commands (ports, time, transport): opens the command's client under a
    /// watchdog that guards the whole command (the caller disarms it when done); a server that
    /// cannot be found is logged in one line and becomes the exit code.
    static func forCommand(_ options: ServerOptions, privateServer: PrivateServerOptions? = nil,
                           clientName: String) throws -> (ServerContext, Watchdog) {
        let watchdog = Watchdog(seconds: Watchdog.startupSeconds,
                                message: "the JACK server did not answer within \(Int(Watchdog.startupSeconds)) s")
        do {
            return (try ServerContext(options, privateServer: privateServer, clientName: clientName), watchdog)
        } catch {
            watchdog.disarm()
            guard let error = error as? CLIError else { throw error }
            Log.error(error.description)
            throw ExitCode(error.exitCode)
        }
    }

    /// Finds the server and opens the command's control client `clientName`. When no server
    /// runs, starts a private one if `privateServer` asks for it, else the user's configured
    /// server (ConfiguredServer), as libjack does; a CLIError says why none could be had.
    init(_ options: ServerOptions, privateServer: PrivateServerOptions? = nil, announce: Bool = true, clientName: String,
         watchTransport: Bool = false) throws {
        let pipeWire = JackLibrary.isPipeWire
        if let server = options.server, pipeWire {
            guard let session = try Self.session(server, clientName: clientName, watchTransport: watchTransport) else {
                throw CLIError("PipeWire server \"\(server)\" is not running (with PipeWire's libjack, --server names "
                               + "a PipeWire socket in $XDG_RUNTIME_DIR, such as pipewire-0)")
            }
            // The queues' clients open the default server: make it this one (PipeWire's
            // libjack reads PIPEWIRE_REMOTE).
            setenv("PIPEWIRE_REMOTE", server, 1)
            name = server
            self.session = session
            return
        }
        if pipeWire {
            // PipeWire's libjack ignores JACK_DEFAULT_SERVER (as every JACK program under pw-jack
            // does): its server is $PIPEWIRE_REMOTE or pipewire-0. No jackd is started: PipeWire's
            // libjack could not talk to it.
            let remote = Environment["PIPEWIRE_REMOTE"] ?? "pipewire-0"
            guard let session = try Self.session(nil, clientName: clientName, watchTransport: watchTransport) else {
                throw CLIError("no PipeWire server is running (libjack is PipeWire's, as under pw-jack: \(JackLibrary.version)); "
                               + "start pipewire (socket \(remote) in $XDG_RUNTIME_DIR), or run jaq without pw-jack to use jackd")
            }
            name = remote
            self.session = session
            return
        }
        let wanted = options.server ?? Environment["JACK_DEFAULT_SERVER"]
        if let session = try Self.session(wanted, clientName: clientName, watchTransport: watchTransport) {
            self.name = wanted
            self.session = session
            if let server = options.server { Self.makeDefault(server) }
            return
        }
        guard let privateServer, privateServer.wanted else {
            let (name, session) = try Self.startConfigured(wanted, clientName: clientName, watchTransport: watchTransport,
                                                           announce: announce, offerPrivate: privateServer != nil)
            self.name = name
            self.session = session
            if let server = options.server { Self.makeDefault(server) }
            return
        }
        let arguments = try Self.privateServerArguments(privateServer.serverConfig)
        let privateName = options.server ?? "jaq-\(getpid())"
        let jackd = ["/usr/bin/jackd", "/usr/local/bin/jackd"].first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let jackd else { throw CLIError("no JACK server is running and jackd is not installed (apt-get install jackd2)") }
        let spawned = spawnProcess([jackd, "-n", privateName, "--no-realtime"] + arguments, output: "/dev/null",
                                   newSession: true, closeOthers: true, environment: ["JACK_NO_AUDIO_RESERVATION": "1"])
        guard spawned.status == 0 else {
            throw CLIError("could not start a private JACK server (\(jackd): \(String(cString: strerror(spawned.status))))")
        }
        let child = ChildProcess(pid: spawned.pid)
        process = child
        name = privateName
        setenv("JACK_DEFAULT_SERVER", privateName, 1)
        var waited = 0.0
        while !JackSession.isServerRunning(privateName) {
            guard child.isRunning, waited < 10 else {
                stop()
                throw CLIError("could not start a private JACK server (jackd \(arguments.joined(separator: " ")))")
            }
            usleep(20_000)
            waited += 0.02
        }
        do {
            session = try JackSession(serverName: privateName, clientName: clientName, watchTransport: watchTransport)
        } catch {
            stop()
            throw CLIError("the private JACK server \(privateName) does not answer")
        }
        if announce {
            Log.info("no JACK server was running: started private server \(privateName) (jackd \(arguments.joined(separator: " "))); it stops when jaq exits")
        }
        ServerContext.running = self
    }

    /// The queues' clients open the default server: make it `server` (jackd2's libjack reads
    /// JACK_DEFAULT_SERVER).
    private static func makeDefault(_ server: String) { setenv("JACK_DEFAULT_SERVER", server, 1) }

    /// Starts the user's configured server (ConfiguredServer) named `server` and opens the
    /// control client on it; waits up to 10 s (libjack waits 5), and stops the server it
    /// started if it does not answer. The failure says why in one line, and how to start one.
    private static func startConfigured(_ server: String?, clientName: String, watchTransport: Bool, announce: Bool,
                                        offerPrivate: Bool) throws -> (String?, JackSession) {
        let which = server.map { "JACK server \"\($0)\"" } ?? "JACK server"
        let how = "start one with qjackctl or `jackd -d alsa &`, or run jaq under pw-jack to use PipeWire"
            + (offerPrivate ? "; --private-server starts a silent one of jaq's own" : "")
        guard !ConfiguredServer.startingIsForbidden else {
            throw CLIError("no \(which) is running, and JACK_NO_START_SERVER is set, so none is started; \(how)")
        }
        let configured = ConfiguredServer.load()
        let origin = configured.source.map { "the one configured in \($0)" } ?? "JACK's default (there is no ~/.jackdrc)"
        let shown = configured.shown(serverName: server)
        let started: ConfiguredServer.Started
        do { started = try configured.start(serverName: server) } catch let error as CLIError {
            throw CLIError("no \(which) is running, and \(origin) could not be started (\(error.description)); \(how)")
        }
        let deadline = Date().addingTimeInterval(10)
        while true {
            if let session = try Self.session(server, clientName: clientName, watchTransport: watchTransport) {
                if announce {
                    Log.info("no \(which) was running: started \(origin), \(shown) (pid \(started.pid), "
                             + "its messages in \(started.log)); it stops when its last client leaves")
                }
                return (server, session)
            }
            var status: Int32 = 0
            let exited = waitpid(started.pid, &status, WNOHANG) == started.pid
            if exited || Date() > deadline {
                if !exited { stopStarted(started.pid) }
                let said = ConfiguredServer.lastWords(started.log)
                let exitStatus = (status & 0x7f) == 0 ? "exit status \((status >> 8) & 0xff)" : "signal \(status & 0x7f)"
                let words = said.map { ": \($0)" } ?? (exited ? ": \(exitStatus), no reason given" : "")
                try? FileManager.default.removeItem(atPath: started.log)
                let what = exited ? "did not start" : "did not answer within 10 s (stopped)"
                throw CLIError("no \(which) is running, and \(origin) \(what) (\(shown)\(words)); \(how)")
            }
            usleep(50_000)
        }
    }

    /// Stops a server jaq started that never answered: SIGTERM, then SIGKILL after 2 s.
    private static func stopStarted(_ pid: pid_t) {
        kill(pid, SIGTERM)
        var status: Int32 = 0
        for _ in 0..<100 {
            if waitpid(pid, &status, WNOHANG) == pid { return }
            usleep(20_000)
        }
        kill(pid, SIGKILL)
        waitpid(pid, &status, 0)
    }

    /// The control client on `server`, or nil if no server answers; a freewheeling jackd is an
    /// error of its own (it would run none of the command's clients).
    private static func session(_ server: String?, clientName: String, watchTransport: Bool) throws -> JackSession? {
        do {
            return try JackSession(serverName: server, clientName: clientName, watchTransport: watchTransport)
        } catch let error as JackFreewheelError {
            throw CLIError(error.description)
        } catch {
            return nil
        }
    }

    /// Why "system" may name no port, and what to do instead (appended to a message).
    static var noPhysicalPortsHint: String {
        JackLibrary.isPipeWire
            ? " (PipeWire shows hardware as JACK ports only while a session manager such as WirePlumber runs; name the ports instead: jaq ports)"
            : " (the server has no hardware ports; name the ports instead: jaq ports)"
    }

    /// Why a queue at `rate` could not be made, in the words of a command's one-line error: a
    /// server that began to freewheel after the command's control client joined refuses it
    /// (`JackFreewheelError`); a queue at another rate than the server's cannot be converted
    /// without libsoxr (`rateConversionUnavailable`); otherwise `status` said.
    func queueFailure(_ status: OSStatus, rate: Double) -> String {
        if status == kAudioQueueErr_InvalidDevice, session?.isServerFreewheeling == true {
            return JackFreewheelError().description
        }
        return rateConversionUnavailable(status, from: rate, to: session?.sampleRate) ?? describe(status, file: false)
    }

    /// Closes the control client (when the command no longer needs it).
    func closeSession() { session = nil }

    /// The private server to stop if the process ends abnormally.
    nonisolated(unsafe) static var running: ServerContext?

    /// Stops the private server, if jaq started one.
    /// - Parameter closingSession: close the command's control client first (the normal end:
    ///   jackd then removes its semaphores; one still open at SIGTERM leaves them in /dev/shm).
    ///   Not from the watchdog: a server that hangs would hang the close too.
    func stop(closingSession: Bool = false) {
        guard let process, process.isRunning else { return }
        if closingSession { session = nil }
        kill(process.pid, SIGTERM)
        var waited = 0.0
        while process.isRunning && waited < 5 {
            usleep(20_000)
            waited += 0.02
        }
        if process.isRunning { process.kill() }
        self.process = nil
    }

    deinit { stop() }

    /// jackd arguments from the config file: `--server-config`, $JAQ_SERVER_CONFIG, the installed
    /// share/jaq/jackd.conf or the source tree's Configs/jackd.conf, or the built-in dummy.
    static func privateServerArguments(_ explicit: String?) throws -> [String] {
        let candidates: [String]
        if let explicit {
            candidates = [explicit]
        } else if let environment = Environment["JAQ_SERVER_CONFIG"] {
            candidates = [environment]
        } else {
            // The executable's own path: argv[0] is just "jaq" when it was found on PATH.
            let path = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
            let executable = URL(fileURLWithPath: path).resolvingSymlinksInPath().deletingLastPathComponent()
            // An installed jaq (PREFIX/bin) reads PREFIX/share/jaq; one in .build/<config>
            // reads the source tree's Configs.
            candidates = [
                executable.appendingPathComponent("../share/jaq/jackd.conf").path,
                executable.appendingPathComponent("../../Configs/jackd.conf").path,
                executable.appendingPathComponent("../../../Configs/jackd.conf").path,
                FileManager.default.currentDirectoryPath + "/Configs/jackd.conf",
            ]
        }
        for path in candidates where FileManager.default.fileExists(atPath: path) {
            let text = try String(contentsOfFile: path, encoding: .utf8)
            let words = text.split(separator: "\n")
                .map { $0.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? "" }
                .flatMap { $0.split(whereSeparator: { $0 == " " || $0 == "\t" }) }
                .map(String.init)
            if !words.isEmpty { return words }
        }
        if explicit != nil { throw CLIError("\(explicit!): no jackd arguments in this file") }
        return ["-d", "dummy", "-r", "48000", "-p", "256", "-C", "8", "-P", "8"]
    }
}
