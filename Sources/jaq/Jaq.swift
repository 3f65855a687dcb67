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
        main(nil)
    }
}
