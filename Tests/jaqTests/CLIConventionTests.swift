import Testing
import Foundation
import JackTestSupport

/// What every command shares (Docs/cli.md, "Common to every command"): one version, one exit
/// status for usage errors whichever layer finds them, one time syntax, --speed, -q everywhere,
/// help examples that survive an 80-column terminal. No server is needed: usage errors are
/// found before one is looked for (JACK_NO_START_SERVER makes a server lookup fail with 1).
@Suite struct CLIConventionTests {
    func run(_ arguments: [String], columns: Int? = nil, directory: String? = nil) throws -> (status: Int32, output: String, error: String) {
        var environment = ProcessInfo.processInfo.environment
        environment["JACK_DEFAULT_SERVER"] = "jaq-test-none-\(getpid())"
        environment["JACK_NO_START_SERVER"] = "1"
        environment.removeValue(forKey: "JAQ_PRIVATE_SERVER")
        if let columns { environment["COLUMNS"] = "\(columns)" }
        return try runProcess([jaqBinary] + arguments, environment: environment, timeout: 30, currentDirectory: directory)
    }

    @Test func versionIsTheOneTheMakefileAndPackagesUse() throws {
        let version = try run(["--version"])
        #expect(version.status == 0)
        let make = try runProcess(["make", "-s", "-C", ReleaseProducts.packageRoot.path, "--no-print-directory", "version"])
        let expected = make.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(!expected.isEmpty && version.output.trimmingCharacters(in: .whitespacesAndNewlines) == expected,
                "jaq --version \(version.output), make version \(expected)")
    }

    @Test(arguments: [
        ["record", "--no-such-option"],                       // argument-parser's own
        ["record", "-d", "90s", "system"],                    // the time syntax, with its hint
        ["record", "-d", "ten", "system"],
        ["record", "--in", "5s", "system"],
        ["record", "--pre-roll", "x", "system"],
        ["record", "--at", "1", "--in", "2", "system"],
        ["record", "--bitrate", "128", "system"],             // a CLIError of the command
        ["record", "-o", "take.wav", "a", "b"],
        ["record", "-f", "m4a", "--bitrate", "2", "system"],  // a bit rate AAC cannot take
        ["play", "--speed", "3", "x.wav"],
        ["play", "--rate", "3", "x.wav"],                     // the old spelling, checked alike
        ["play", "--speed", "1.5", "--rate", "1.5", "x.wav"],
        ["play", "--margin", "1s", "x.wav"],
        ["render", "-o", "m.wav", "--play-rate", "3", "x.wav"],
        ["render", "-o", "m.wav", "--offset", "2s", "x.wav"],
        ["ports", "["],
        ["transport", "locate"],
        ["transport", "jump"],
        ["clock"],
        ["convert", "-d", "LEI17", "x.wav", "y.wav"],
        ["convert", "x.wav", "y.unknown"],
    ])
    func everyUsageErrorExits64(_ arguments: [String]) throws {
        let dir = scratchDirectory("usage")
        defer { removeScratch(dir) }
        let result = try run(arguments, directory: dir)
        #expect(result.status == 64, "\(arguments): \(result.status) \(result.error)")
        #expect(!result.error.isEmpty, "\(arguments): says why")
    }

    @Test func aTrailingSIsRefusedWithAHint() throws {
        let result = try run(["record", "-d", "480000s", "system"])
        #expect(result.status == 64)
        #expect(result.error.contains("write 480000 for seconds or 480000f for frames"), "\(result.error)")
        let pre = try run(["record", "--pre-roll", "2s", "system"])
        #expect(pre.error.contains("write 2 for seconds or 2f for frames"), "\(pre.error)")
    }

    @Test func everyCommandTakesQuiet() throws {
        for command in ["record", "play", "ports", "time", "transport", "info", "render", "convert", "clock"] {
            let help = try run([command, "--help"])
            #expect(help.output.contains("-q, --quiet"), "jaq \(command) --help: \(help.output)")
        }
    }

    @Test func speedIsSpelledAlikeAndRateIsASampleRate() throws {
        let play = try run(["play", "--help"]).output
        let render = try run(["render", "--help"]).output
        #expect(play.contains("--speed") && render.contains("--speed"))
        #expect(!play.contains("--rate") && !render.contains("--play-rate"), "old spellings are hidden")
        #expect(render.contains("--rate <hz>"))
    }

    @Test func serverConfigOnlyWhereAServerCanBeStarted() throws {
        for command in ["record", "play", "ports"] {
            #expect(try run([command, "--help"]).output.contains("--private-server"), "\(command)")
        }
        for command in ["time", "transport", "clock"] {
            let help = try run([command, "--help"]).output
            #expect(!help.contains("--server-config") && !help.contains("--private-server"), "\(command): \(help)")
        }
    }

    /// Every example in every command's help, as printed on a wide terminal, is still one line at 80.
    @Test func helpExamplesSurviveAn80ColumnTerminal() throws {
        for command in ["record", "play", "ports", "time", "transport", "info", "render", "convert", "clock"] {
            let wide = try run([command, "--help"], columns: 200).output
            let narrow = try run([command, "--help"], columns: 80).output
            // The lines after "Examples:" (the prose above them may wrap).
            let wideLines = wide.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            let examples = wideLines.drop { !$0.hasPrefix("Example") }.dropFirst().prefix { !$0.isEmpty && !$0.hasSuffix(":") }
            #expect(!examples.isEmpty || ["time"].contains(command), "\(command) has examples")
            let lines = Set(narrow.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) })
            for example in examples { #expect(lines.contains(example), "jaq \(command) --help at 80 columns breaks: \(example)") }
            // (argument-parser never wraps its USAGE line.)
            #expect(narrow.split(separator: "\n").allSatisfy { $0.count <= 80 || $0.hasPrefix("USAGE:") }, "\(command)")
        }
    }

    /// A command's own arguments are parsed by the command alone (issue #29: jaq's whole tree and
    /// the completion-script trial parses cost each take's start-up), and nothing a user reads
    /// changes with it: errors name "jaq COMMAND", the library's flags answer after any command,
    /// a command given nothing prints the short error, not the whole help.
    @Test func aCommandParsedAloneReadsAsUnderJaq() throws {
        let jaqVersion = try run(["--version"]).output
        for command in ["record", "play", "ports", "time", "transport", "info", "render", "convert", "clock"] {
            let unknown = try run([command, "--no-such-option"])
            #expect(unknown.status == 64)
            #expect(unknown.error.contains("Usage: jaq \(command)") && unknown.error.contains("See 'jaq \(command) --help'"),
                    "jaq \(command) --no-such-option: \(unknown.error)")
            let version = try run([command, "--version"])
            #expect(version.status == 0 && version.output == jaqVersion, "jaq \(command) --version")
            let completion = try run([command, "--generate-completion-script", "bash"])
            #expect(completion.status == 0 && completion.output.hasPrefix("#!/bin/bash"), "jaq \(command) --generate-completion-script")
        }
        // The library's other help spellings print jaq's help for the command, as --help does.
        let help = try run(["record", "--help"]).output
        for spelling in [["-help"], ["-qh"], ["-hq"], ["-d", "1", "-qh", "system"]] {
            let other = try run(["record"] + spelling)
            #expect(other.status == 0 && other.output == help, "jaq record \(spelling.joined(separator: " ")): \(other.output)")
        }
        for command in ["play", "info"] {
            let nothing = try run([command])
            #expect(nothing.status == 64 && nothing.error.contains("Missing expected argument") && !nothing.output.contains("OVERVIEW:"),
                    "jaq \(command): \(nothing.output)\(nothing.error)")
        }
    }
}
