import ArgumentParser
import FoundationEssentials
import Glibc
import JackControl

/// `jaq clock`: on a netjack2 master, send the master's frame clock to slaves as audio, so
/// jaq on a slave (`--clock PORT`) can name the master's frames.
struct ClockCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clock",
        _superCommandName: "jaq",
        abstract: "Send this server's frame clock to netjack2 slaves (what --clock reads there).",
        discussion: """
        Runs a JACK client, jaq-clock, whose port jaq-clock:clock plays the server's frame \
        clock as a signal, until Ctrl-C or SIGTERM. Connect it (--to) to a netjack2 slave's \
        to_slave_N port; on the slave, jaq time --clock, jaq record --at F --clock PORT and \
        jaq play --at F --clock PORT read it from the matching system:capture_N and start on \
        the master's frame F. The signal is a slow ramp below -24 dBFS (not for speakers); \
        netjack2 must carry it bit-exact (its default float encoding; not Opus).

        Examples:
          jaq clock --to slave1:to_slave_2
          jaq clock --to 'slave[12]:to_slave_8$'
        """)

    @Option(name: .long, help: ArgumentHelp("An input port (name or regular expression) the clock goes to; repeat for several.", valueName: "port"))
    var to: [String] = []

    @OptionGroup var serverOptions: ServerOptions

    @OptionGroup var quietOption: QuietOption

    func run() throws {
        try runReportingFailure("jaq clock", quiet: quietOption.quiet) { try send() }
    }

    func send() throws {
        guard !to.isEmpty else {
            throw CLIError("name the slave ports the clock goes to: --to PORT (e.g. --to slave1:to_slave_2)", exitCode: CLIError.usage)
        }
        let startup = Watchdog(seconds: Watchdog.startupSeconds,
                               message: "the JACK server did not answer within \(Int(Watchdog.startupSeconds)) s")
        let server = try ServerContext(serverOptions, clientName: "jaq-clock-ctl")
        // The control client is closed before the generator's opens: on a netjack2 master, with
        // it still open, jackd ran the generator's client no cycle at all (NetJackTests). (On a
        // server jaq started from ~/.jackdrc with -T, the server then leaves with it, and the
        // generator's client, opened as any JACK client is, starts it again.)
        server.closeSession()
        let generator: NetClockGenerator
        do { generator = try NetClockGenerator(serverName: server.name) } catch { throw CLIError("\(error)") }
        defer { generator.close() }
        var connected: [String] = []
        for target in to {
            do { connected += try generator.connect(to: target) } catch {
                throw CLIError("--to \(target): \(error.reason)")
            }
        }
        startup.disarm()
        let interruption = Interruption()
        Log.info("sending the frame clock from \(generator.portName) to \(connected.joined(separator: ", ")); Ctrl-C stops")
        while true {
            if interruption.signal != nil { break }
            if generator.isShutDown { throw CLIError("the JACK server went away") }
            usleep(50_000)
        }
        Log.info("stopped after \(generator.cycles) cycles")
    }
}

/// `--clock PORT` on a netjack2 slave: the master's frames, read from the clock `jaq clock`
/// sends (NetClockReader), resolved to this server's frames.
struct ClockOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("On a netjack2 slave: --at names a frame of the master, read from the clock `jaq clock` sends to this port (e.g. system:capture_2).", valueName: "port"))
    var clock: String?
}

/// A slave's view of the master's clock, once locked.
struct MasterClock {
    let reader: NetClockReader
    let lock: NetClockReader.Lock
    let port: String

    /// Seconds a recording queue runs before a clocked start, so a jump of the clock before
    /// the start can still move it earlier.
    static let startMarginSeconds = 0.5
    /// Seconds jaq waits for a clock it can read.
    static let lockSeconds = 5.0
    /// How far from the master's frame now a start can be: 2^30 frames (6.2 h at 48 kHz); the
    /// clock's 32-bit frames repeat every 2^32.
    static let reach: Int64 = 1 << 30

    /// Opens the reader on `port` and waits for the lock.
    /// - Throws: `CLIError` in one line: no such port, no clock on it, a server that runs no cycles.
    init(port: String, server: String?) throws {
        self.port = port
        do { reader = try NetClockReader(serverName: server, port: port, clientName: "jaq-clock-in") } catch {
            throw CLIError("--clock \(port): \("\(error)")")
        }
        guard let lock = reader.waitForLock(timeout: Self.lockSeconds) else {
            let seconds = Int(Self.lockSeconds)
            let reason: String
            if reader.periodFrames < 2 * NetClockCode.wordFrames - 1 {
                reason = "periods of \(reader.periodFrames) frames are too short to read the clock (32 frames or more)"
            } else if reader.readableCycles > 0 {
                reason = "the clock on it does not hold still for 4 cycles within \(seconds) s (the network loses its packets?)"
            } else if reader.signalCycles > 0 {
                reason = "a signal, but no clock jaq can read, within \(seconds) s (netjack2 must carry it bit-exact: float encoding, not Opus)"
            } else if reader.unreadableCycles > 0 {
                reason = "no clock signal on it within \(seconds) s (is `jaq clock --to` running on the master, into the port that reaches this one?)"
            } else {
                reason = "the JACK server ran no cycles within \(seconds) s"
            }
            reader.close()
            throw CLIError("--clock \(reader.source): \(reason)")
        }
        self.lock = lock
    }

    /// The master's frame that happens now (32-bit, as the master's `jaq time` prints it).
    var masterNow: UInt32 { lock.masterFrame(atLocal: reader.frameNow) }

    /// The device frame of this server at which the master's frame `master` happens.
    /// - Throws: `CLIError` for a frame too far from the master's now to name one frame.
    func localFrame(forMaster master: Int64) throws -> Int64 {
        let now = masterNow
        let master32 = UInt32(truncatingIfNeeded: master)
        let ahead = Int64(Int32(bitPattern: master32 &- now))
        guard master >= 0, abs(ahead) < Self.reach else {
            throw CLIError("--at \(master): too far from the master's frame now (\(now)) to resolve through the clock "
                           + "(it must be within 2^30 frames of it: 6.2 h at 48 kHz)", exitCode: CLIError.usage)
        }
        return reader.deviceFrame(lock.localFrame(forMaster: master32))
    }

    /// One line on what was resolved.
    func describe(master: Int64, local: Int64) -> String {
        "master frame \(master) is JACK frame \(local) here (clock on \(reader.source), its latency \(lock.latency) frames taken out)"
    }
}
