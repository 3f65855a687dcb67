import ArgumentParser
import FoundationEssentials
import Glibc
import JackControl

struct PortsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ports",
        _superCommandName: "jaq",
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
        defer { server.stop(closingSession: true) }
        let session = server.session!
        var ports = session.ports()
        if let regex { ports = ports.filter { (try? regex.firstMatch(in: $0.name)) != nil } }
        ports = ports.filter { !$0.name.hasPrefix("jaq-ports:") }
        let frame = try? session.frameTime
        if json {
            let report = PortsReport(server: server.name ?? "default", sampleRate: session.sampleRate,
                                     periodFrames: session.periodFrames, frameTime: frame, ports: ports.map(PortsReport.Port.init))
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            let data = try encoder.encode(report)
            print(String(decoding: data, as: UTF8.self))
            return
        }
        print("server \(server.name ?? "default"): \(Int(session.sampleRate)) Hz, \(session.periodFrames) frames per period, frame \(frame.map { "\($0)" } ?? "unknown (the server runs no cycles)")")
        let width = max(20, ports.map(\.name.count).max() ?? 20)
        for port in ports {
            let kind = (port.isInput ? "in " : "out") + (port.isPhysical ? " physical" : "         ")
            let latency = "capture \(range(port.captureLatency)) playback \(range(port.playbackLatency))"
            let connections = port.connections.isEmpty ? "" : "  -> " + port.connections.joined(separator: ", ")
            print(port.name.padded(toWidth: width) + "  " + kind + "  " + latency + connections)
        }
    }

    private func range(_ r: ClosedRange<Int>) -> String {
        r.lowerBound == r.upperBound ? "\(r.lowerBound)" : "\(r.lowerBound)-\(r.upperBound)"
    }
}
