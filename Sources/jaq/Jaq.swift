import ArgumentParser

/// The `jaq` command: Apple's Audio Queue Services on JACK, for pro-audio users.
@main
struct Jaq: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jaq",
        abstract: "Record multitrack takes from JACK ports, play files in sync, inspect audio files.",
        subcommands: [RecordCommand.self, PlayCommand.self, PortsCommand.self, TimeCommand.self, TransportCommand.self,
                      InfoCommand.self, RenderCommand.self, ClockCommand.self]
    )
}
