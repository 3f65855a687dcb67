import Glibc

/// The command line of an example: positional arguments, then `--name value` options.
public struct Arguments {
    public var positional: [String] = []
    public var options: [String: String] = [:]

    /// Parses `CommandLine.arguments`; prints `usage` and exits with status 1 on anything
    /// else than `count` positional arguments and the options named in `optionNames`.
    public init(usage: String, count: Int, optionNames: Set<String>) {
        var rest = CommandLine.arguments.dropFirst()
        while let argument = rest.popFirst() {
            if argument.hasPrefix("--") {
                let name = String(argument.dropFirst(2))
                guard optionNames.contains(name), let value = rest.popFirst() else { Self.exit(usage) }
                options[name] = value
            } else {
                positional.append(argument)
            }
        }
        if positional.count != count { Self.exit(usage) }
    }

    private static func exit(_ usage: String) -> Never {
        printError("usage: \(programName) \(usage)")
        Glibc.exit(1)
    }
}
