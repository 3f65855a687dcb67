import ArgumentParser
import Foundation
import JackDriver

struct PortsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ports",
        abstract: "List JACK ports with their latency and connections.",
        discussion: """
        Lists every audio port (or those matching PATTERN, a regular expression), with its \
        direction, whether it is physical, its capture and playback latency in frames, and \
        what it is connected to.

        Examples:
          jaq ports
          jaq ports system:capture
          jaq ports --json 'jaq-.*'
        """)

    @Argument(help: "Only ports matching this regular expression.")
    var pattern: String?

    @Flag(name: .long, help: "One JSON object for scripts.")
    var json = false

    @OptionGroup var serverOptions: ServerOptions

    @OptionGroup var quietOption: QuietOption

    @OptionGroup var privateServerOptions: PrivateServerOptions

    func run() throws {
        Log.command = "jaq ports"
        Log.quiet = quietOption.quiet
        // A usage error is found before a server is looked for (or started).
        var regex: Regex<AnyRegexOutput>?
        if let pattern {
            guard let compiled = try? Regex(pattern) else {
                Log.error("\(pattern): not a regular expression")
                throw ExitCode(CLIError.usage)
            }
            regex = compiled
        }
        let (server, watchdog) = try ServerContext.forCommand(serverOptions, privateServer: privateServerOptions, clientName: "jaq-ports")
        defer { watchdog.disarm() }
        defer { server.stop() }
        let session = server.session!
        var ports = session.ports()
        if let regex { ports = ports.filter { (try? regex.firstMatch(in: $0.name)) != nil } }
        ports = ports.filter { !$0.name.hasPrefix("jaq-ports:") }
        let frame = try? session.frameTime
        if json {
            let entries = ports.map { port -> [String: Any] in
                ["name": port.name, "direction": port.isInput ? "input" : "output", "physical": port.isPhysical,
                 "captureLatency": [port.captureLatency.lowerBound, port.captureLatency.upperBound],
                 "playbackLatency": [port.playbackLatency.lowerBound, port.playbackLatency.upperBound],
                 "connections": port.connections]
            }
            let object: [String: Any] = ["server": server.name ?? "default", "sampleRate": session.sampleRate,
                                         "periodFrames": session.periodFrames, "frameTime": frame.map { $0 as Any } ?? NSNull(),
                                         "ports": entries]
            let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
            print(String(decoding: data, as: UTF8.self))
            return
        }
        print("server \(server.name ?? "default"): \(Int(session.sampleRate)) Hz, \(session.periodFrames) frames per period, frame \(frame.map { "\($0)" } ?? "unknown (the server runs no cycles)")")
        let width = max(20, ports.map(\.name.count).max() ?? 20)
        for port in ports {
            let kind = (port.isInput ? "in " : "out") + (port.isPhysical ? " physical" : "         ")
            let latency = "capture \(range(port.captureLatency)) playback \(range(port.playbackLatency))"
            let connections = port.connections.isEmpty ? "" : "  -> " + port.connections.joined(separator: ", ")
            print(port.name.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + kind + "  " + latency + connections)
        }
    }

    private func range(_ r: ClosedRange<Int>) -> String {
        r.lowerBound == r.upperBound ? "\(r.lowerBound)" : "\(r.lowerBound)-\(r.upperBound)"
    }
}

struct TimeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "time",
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

struct TransportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "transport",
        abstract: "Start, stop or locate JACK transport (what `--transport` waits for).",
        discussion: """
        Examples:
          jaq transport start
          jaq transport stop
          jaq transport locate 0
          jaq transport            # prints rolling/stopped and the transport frame
        """)

    @Argument(help: "start, stop, locate FRAME, or nothing to print the state.")
    var action: [String] = []

    @OptionGroup var serverOptions: ServerOptions

    @OptionGroup var quietOption: QuietOption

    func run() throws {
        Log.command = "jaq transport"
        Log.quiet = quietOption.quiet
        // A usage error is found before a server is looked for (or started).
        var locateFrame: UInt32?
        switch action.first {
        case nil, "start", "stop":
            if action.count > 1 {
                Log.error("\(action.joined(separator: " ")): one action at a time (start, stop or locate FRAME)")
                throw ExitCode(CLIError.usage)
            }
        case "locate":
            guard action.count == 2, let frame = UInt32(action[1]) else {
                Log.error("locate needs a frame (0...\(UInt32.max))")
                throw ExitCode(CLIError.usage)
            }
            locateFrame = frame
        default:
            Log.error("\(action[0]): use start, stop or locate FRAME")
            throw ExitCode(CLIError.usage)
        }
        let (server, watchdog) = try ServerContext.forCommand(serverOptions, clientName: "jaq-transport")
        defer { watchdog.disarm() }
        let session = server.session!
        switch action.first {
        case "start": session.startTransport()
        case "stop": session.stopTransport()
        case "locate": session.locateTransport(locateFrame!)
        default:
            let state = session.transport()
            print("\(state.rolling ? "rolling" : "stopped") at frame \(state.frame)")
        }
    }
}
