import ArgumentParser
import FoundationEssentials
import Glibc
import JackControl

struct TransportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "transport",
        _superCommandName: "jaq",
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
