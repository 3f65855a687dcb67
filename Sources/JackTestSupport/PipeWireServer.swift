import Foundation
import Glibc

/// A private PipeWire for tests (`JackServer(backend: .pipeWire)`): the `pipewire` daemon with
/// Configs/pipewire-headless.conf (its dummy driver, no session manager, no D-Bus) at the test's
/// rate and period, in a private XDG_RUNTIME_DIR, so it never meets a desktop's PipeWire.
/// Programs started with the server's `environment` load PipeWire's libjack, as `pw-jack` does.
extension JackServer {
    /// Where Debian's pipewire-jack installs PipeWire's libjack (what `pw-jack` puts first on
    /// LD_LIBRARY_PATH).
    public static let pipeWireJackLibraryDirectory: String = {
        let candidates = ["/usr/lib/x86_64-linux-gnu/pipewire-0.3/jack", "/usr/lib/aarch64-linux-gnu/pipewire-0.3/jack",
                          "/usr/lib64/pipewire-0.3/jack", "/usr/lib/pipewire-0.3/jack"]
        return candidates.first { FileManager.default.fileExists(atPath: $0 + "/libjack.so.0") } ?? candidates[0]
    }()

    /// Whether PipeWire and its libjack are installed (apt-get install pipewire pipewire-jack pipewire-bin).
    public static var isPipeWireInstalled: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/bin/pipewire")
            && FileManager.default.fileExists(atPath: pipeWireJackLibraryDirectory + "/libjack.so.0")
    }

    /// The headless configuration with the rate and quantum set (Configs/pipewire-headless.conf).
    static func pipeWireConfiguration(sampleRate: Int, periodFrames: Int) throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let path = root.appendingPathComponent("Configs/pipewire-headless.conf").path
        guard var text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw JackServerError("\(path): cannot read the PipeWire configuration")
        }
        let settings = ["default.clock.rate": "\(sampleRate)", "default.clock.allowed-rates": "[ \(sampleRate) ]",
                        "default.clock.quantum": "\(periodFrames)", "default.clock.min-quantum": "\(periodFrames)",
                        "default.clock.max-quantum": "\(periodFrames)",
                        // Info level: PipeWire logs "client too slow!" and "XRun!" there (xrunCount).
                        "log.level": "3"]
        text = text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            let key = line.split(separator: "=").first?.trimmingCharacters(in: .whitespaces) ?? ""
            guard let value = settings[key] else { return String(line) }
            return "    \(key) = \(value)"
        }.joined(separator: "\n")
        return text
    }

    static func pipeWireLaunch(unique: String, sampleRate: Int, periodFrames: Int) throws -> ServerLaunch {
        guard isPipeWireInstalled else {
            throw JackServerError("PipeWire is not installed (apt-get install pipewire pipewire-jack pipewire-bin)")
        }
        let runtime = NSTemporaryDirectory() + "/\(unique)-run"
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let config = runtime + "/pipewire.conf"
        try pipeWireConfiguration(sampleRate: sampleRate, periodFrames: periodFrames)
            .write(toFile: config, atomically: true, encoding: .utf8)
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_RUNTIME_DIR"] = runtime
        for key in ["PIPEWIRE_REMOTE", "PIPEWIRE_CONFIG_DIR", "PIPEWIRE_CONFIG_NAME", "DBUS_SESSION_BUS_ADDRESS"] {
            environment.removeValue(forKey: key)
        }
        return ServerLaunch(name: "pipewire-0", executable: "/usr/bin/pipewire", arguments: ["-c", config],
                            environment: environment, runtimeDirectory: runtime)
    }

    /// What a JACK program needs to reach this PipeWire: its runtime directory, and PipeWire's
    /// libjack first on the library path (`pw-jack`'s LD_LIBRARY_PATH).
    func addPipeWireClientEnvironment(_ environment: inout [String: String]) {
        environment["XDG_RUNTIME_DIR"] = runtimeDirectory
        let path = environment["LD_LIBRARY_PATH"].map { ":" + $0 } ?? ""
        environment["LD_LIBRARY_PATH"] = Self.pipeWireJackLibraryDirectory + path
        for key in ["JACK_DEFAULT_SERVER", "PIPEWIRE_REMOTE"] { environment.removeValue(forKey: key) }
    }

    /// Cycles PipeWire logged as late ("client too slow!", "XRun!"): a loaded machine.
    var pipeWireXrunCount: Int {
        logText.split(separator: "\n").filter { $0.contains("client too slow!") || $0.contains("XRun!") }.count
    }

    /// Ready when the daemon lists its dummy driver (its socket answers and the graph has a clock).
    func pipeWireIsReady() -> Bool {
        guard let result = try? runProcess(["pw-cli", "ls", "Node"], environment: environment, timeout: 5),
              result.status == 0 else { return false }
        return result.output.contains("Dummy-Driver")
    }
}
