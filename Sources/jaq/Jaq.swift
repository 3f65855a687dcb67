import ArgumentParser

/// The `jaq` command: Apple's Audio Queue Services on JACK, for pro-audio users.
@main
struct Jaq: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jaq",
        abstract: "Record, play and inspect audio with Apple's Audio Queue Services on JACK.",
        subcommands: [InfoCommand.self]
    )
}
