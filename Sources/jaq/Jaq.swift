import ArgumentParser
import JackCommon

/// The `jaq` command: Apple's Audio Queue Services on JACK, for pro-audio users.
@main
struct Jaq: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jaq",
        abstract: "Record multitrack takes from JACK ports, play files in sync, inspect audio files.",
        discussion: """
            Every command talks to --server NAME, else $JACK_DEFAULT_SERVER, else JACK's default \
            server. With none running, jaq starts the one configured in ~/.jackdrc, as every JACK \
            program does; --private-server (record, play, ports) starts a silent dummy server of \
            jaq's own instead.

            Times (--duration, --in, --pre-roll, --buffer, --margin, --offset): seconds, m:ss, \
            h:mm:ss, or Nf for frames. --rate is a sample rate; --speed a playing speed.

            Exit status: 0 done as asked; 1 the work failed (one line says which file or port, \
            and why; a take recorded so far stays playable); 64 a usage error; 128+N ended by \
            signal N.

            See `jaq COMMAND --help`, and Docs/cli.md in the source.
            """,
        version: jaqVersion,
        subcommands: [RecordCommand.self, PlayCommand.self, PortsCommand.self, TimeCommand.self, TransportCommand.self,
                      InfoCommand.self, RenderCommand.self, ConvertCommand.self, ClockCommand.self]
    )

    /// jaq's stderr is its user's: one line per failure, so what libjack's libraries print while
    /// a client opens is kept quiet (`JackMessages.quietOpens`; JAQ_JACK_VERBOSE shows it).
    static func main() {
        JackMessages.quietOpens()
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard let command = directCommand(arguments) else { return main(nil) }
        // Any error of the parse is jaq's to say: parsed again from the root, it reads word for
        // word as it always has (the library's "See 'jaq record --help'" line names the root).
        // The library answers some help spellings itself (`-help`, `-qh`) with a command of
        // its own: those go to jaq's parse too, to print jaq's help for the command.
        guard var parsed = try? command.parseAsRoot(Array(arguments.dropFirst())), type(of: parsed) == command else {
            return main(nil)
        }
        do {
            try parsed.run()
        } catch {
            exit(withError: error)
        }
    }

    /// The subcommand that parses its own arguments, as its own root, or nil for jaq's parse.
    ///
    /// Parsed from the root, every command first builds jaq's whole command tree and runs the
    /// library's two trial parses for `--generate-completion-script`: about 1.5 ms of each take's
    /// start-up (issue #29). A subcommand parsed alone says "jaq record" in its usage and errors
    /// as it does under jaq (its configuration names jaq as its `_superCommandName`, which also
    /// skips those trial parses). Whatever the library answers itself (help, version,
    /// completion scripts, its dumps) and every parse error stay with jaq's parse, so they read
    /// as they always have.
    static func directCommand(_ arguments: [String]) -> ParsableCommand.Type? {
        guard let name = arguments.first,
              let command = configuration.subcommands.first(where: { $0.configuration.commandName == name }) else { return nil }
        let answeredByTheLibrary = arguments.dropFirst().contains { argument in
            argument == "-h" || argument == "--version" || argument.hasPrefix("--help")
                || argument.hasPrefix("--generate-completion-script") || argument.hasPrefix("--experimental")
        }
        return answeredByTheLibrary ? nil : command
    }
}
