import FoundationEssentials
import Glibc
import JackControl

/// The JACK server the user configured, started as libjack starts it for any JACK client that
/// finds no server running: the command line in `~/.jackdrc` (else `/etc/jackdrc`, else
/// `/etc/jackd.conf`; qjackctl writes the first), else JACK's default `jackd -T -d alsa`, with
/// `-T` (the server stops when its last client leaves) and `-nNAME` (when a server name was
/// asked for) put after the command, as libjack puts them. `JACK_NO_START_SERVER` in the
/// environment means no server is started, as it does for libjack.
///
/// Where jaq differs from libjack, it is for the terminal: the server runs in a session of its
/// own (so the Ctrl-C that ends a take does not also stop the server the take is still being
/// written from), its messages go to a log file rather than through jaq's meters, and a server
/// that does not start is reported in one line with the reason it gave.
struct ConfiguredServer {
    /// The jackd command line: the program, then its arguments (before `-T` and `-n` are added).
    let commandLine: [String]
    /// Where it came from, as the user knows it (`~/.jackdrc`), or nil for JACK's default.
    let source: String?

    /// The configuration libjack would read, or JACK's default.
    static func load() -> ConfiguredServer {
        var candidates: [(path: String, shown: String)] = []
        if let home = Environment["HOME"] {
            candidates.append(("\(home)/.jackdrc", "~/.jackdrc"))
        }
        candidates += [("/etc/jackdrc", "/etc/jackdrc"), ("/etc/jackd.conf", "/etc/jackd.conf")]
        for candidate in candidates {
            guard let text = try? String(contentsOfFile: candidate.path, encoding: .utf8) else { continue }
            // libjack reads the file word by word (fscanf "%s"): lines and comments mean nothing to it.
            let words = text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }).map(String.init)
            if !words.isEmpty { return ConfiguredServer(commandLine: words, source: candidate.shown) }
        }
        return ConfiguredServer(commandLine: ["/usr/bin/jackd", "-d", "alsa"], source: nil)
    }

    /// Whether the environment forbids starting a server (`JACK_NO_START_SERVER`, as for libjack).
    static var startingIsForbidden: Bool { Environment["JACK_NO_START_SERVER"] != nil }

    /// The arguments jaq runs: libjack's `-T` and `-nNAME` right after the program.
    func arguments(serverName: String?) -> [String] {
        [commandLine[0], "-T"] + (serverName.map { ["-n\($0)"] } ?? []) + commandLine.dropFirst()
    }

    /// How the command line is shown in messages: the program's name, not its path.
    func shown(serverName: String?) -> String {
        let words = arguments(serverName: serverName)
        return ([URL(fileURLWithPath: words[0]).lastPathComponent] + words.dropFirst()).joined(separator: " ")
    }

    /// A started server: its process and where its messages go.
    struct Started {
        let pid: pid_t
        let log: String
    }

    /// Starts the server in a session of its own, its output to a new log file. Throws a
    /// CLIError if the program cannot be run at all.
    func start(serverName: String?) throws -> Started {
        let log = FileManager.default.temporaryDirectory.path() + "jaq-jackd-\(getpid()).log"
        let words = arguments(serverName: serverName)
        // A session of its own: the Ctrl-C that ends a take must not stop the server it records from.
        let spawned = spawnProcess(words, output: log, newSession: true, closeOthers: true)
        guard spawned.status == 0 else {
            try? FileManager.default.removeItem(atPath: log)
            throw CLIError("\(words[0]): \(String(cString: strerror(spawned.status)))")
        }
        return Started(pid: spawned.pid, log: log)
    }

    /// The line of the server's output that says why it did not start: the first naming a
    /// cause (a missing device, an unknown driver, a busy card...), else the last that is not
    /// jackd's banner or its generic farewell.
    static func lastWords(_ log: String) -> String? {
        guard let text = try? String(contentsOfFile: log, encoding: .utf8) else { return nil }
        let lines = text.split(whereSeparator: \.isNewline).map { String($0).trimmingWhitespace() }.filter { !$0.isEmpty }
        let generic = ["Failed to start server", "Failed to open server", "JackServer::Open failed", "Cannot initialize driver",
                       "JackTemporaryException", "jackdmp", "Copyright", "comes with ABSOLUTELY", "This is free software",
                       "under certain conditions", "JACK server starting", "self-connect-mode", "Cleaning up",
                       "jack main caught signal", "creating alsa driver", "snd_config_get_card", "audio_reservation"]
        let telling = lines.filter { line in !generic.contains { line.contains($0) } }
        let causes = ["No such", "Unknown driver", "nknown", "annot open", "Permission denied", "busy", "not found", "Invalid"]
        for cause in causes { if let line = telling.first(where: { $0.contains(cause) }) { return line } }
        return telling.last
    }
}
