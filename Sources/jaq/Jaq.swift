import ArgumentParser

@main
struct Jaq: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jaq",
        abstract: "Record multitrack takes from JACK ports and play files in sync, on Apple's Audio Queue Services.",
        subcommands: [RecordCommand.self, PlayCommand.self, PortsCommand.self, TimeCommand.self, TransportCommand.self])
}
