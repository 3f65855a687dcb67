import ArgumentParser
import FoundationEssentials
import Glibc
import JackControl

struct TimeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "time",
        _superCommandName: "jaq",
        abstract: "Print the JACK server's frame time now (for --at).",
        discussion: """
        Prints the current JACK frame time, which `jaq play --at` and `jaq record --at` take. \
        Frames are the server's; two jaq processes started for the same frame start on it.

        With --clock PORT, on a netjack2 slave: prints the master's frame now, read from the \
        clock `jaq clock` on the master sends to PORT, with its network latency taken out (said \
        on stderr): the frame `--at F --clock PORT` takes.

        Examples:
          jaq time
          AT=$(( $(jaq time) + 96000 ))        # two seconds from now, at 48 kHz
          jaq play --at $AT a.wav & jaq record --at $AT -d 10 system
          jaq time --clock system:capture_2     # on a slave: the master's frame
        """)

    @Flag(name: .long, help: "Also print the sample rate and period.")
    var verbose = false

    @OptionGroup var clockOptions: ClockOptions

    @OptionGroup var serverOptions: ServerOptions

    @OptionGroup var quietOption: QuietOption

    func run() throws {
        Log.command = "jaq time"
        Log.quiet = quietOption.quiet
        let (server, watchdog) = try ServerContext.forCommand(serverOptions, clientName: "jaq-time")
        defer { watchdog.disarm() }
        let session = server.session!
        if let port = clockOptions.clock {
            let master: MasterClock
            do { master = try MasterClock(port: port, server: server.name) } catch let error as CLIError {
                Log.error(error.description)
                throw ExitCode(error.exitCode)
            }
            let frame = master.masterNow
            print(verbose ? "\(frame) master frames at \(Int(session.sampleRate)) Hz, \(session.periodFrames) per period" : "\(frame)")
            Log.info("the master's frame, from the clock on \(master.reader.source) (its latency \(master.lock.latency) frames taken out)")
            return
        }
        let frame: UInt32
        do { frame = try session.frameTime } catch {
            Log.error("\(error)")
            throw ExitCode(1)
        }
        print(verbose ? "\(frame) frames at \(Int(session.sampleRate)) Hz, \(session.periodFrames) per period" : "\(frame)")
    }
}
