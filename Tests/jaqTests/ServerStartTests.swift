import Testing
import Foundation
import JackTestSupport
import SoundFile

/// What jaq does when no JACK server runs (Docs/cli.md, "The server"): what libjack does for every
/// JACK program, start the server configured in ~/.jackdrc (with -T, named by
/// $JACK_DEFAULT_SERVER), or exit 1 with one line and no file; the private dummy server only with
/// --private-server. Each test has a HOME of its own and a server name nobody else uses.
@Suite(.serialized) struct ServerStartTests {
    /// A HOME (with `jackdrc` as its ~/.jackdrc, if given) and a unique server name.
    struct Scene {
        let home: String
        let server: String

        init(_ name: String, jackdrc: String?) throws {
            home = scratchDirectory(name)
            server = "jaqtest-\(getpid())-rc-\(String(UInt32.random(in: 0...UInt32.max), radix: 16))"
            if let jackdrc { try jackdrc.write(toFile: "\(home)/.jackdrc", atomically: true, encoding: .utf8) }
            JackServerRegistry.reclaimDeadServers()
            JackServerRegistry.removeDeadTestSemaphores()
        }

        var environment: [String: String] {
            var environment = ProcessInfo.processInfo.environment
            environment["HOME"] = home
            environment["JACK_DEFAULT_SERVER"] = server
            environment["JACK_NO_AUDIO_RESERVATION"] = "1"
            for name in ["JACK_NO_START_SERVER", "JAQ_PRIVATE_SERVER", "JAQ_SERVER_CONFIG"] { environment.removeValue(forKey: name) }
            return environment
        }

        func jaq(_ arguments: [String], extra: [String: String] = [:], timeout: Double = 60) throws -> (status: Int32, output: String, error: String) {
            try runProcess([jaqBinary] + arguments, environment: environment.merging(extra) { $1 }, timeout: timeout, currentDirectory: home)
        }

        /// The jackd processes running under this scene's server name (found in /proc: a
        /// server jaq started has been reparented and is no child of the test).
        func servers() -> [pid_t] {
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
            return entries.compactMap { entry -> pid_t? in
                guard let pid = pid_t(entry),
                      let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline") else { return nil }
                let words = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
                return words.contains("-n\(server)") || zip(words, words.dropFirst()).contains { $0 == ("-n", server) } ? pid : nil
            }
        }

        /// Waits for this scene's servers to be gone (a -T server leaves once its last client
        /// has); kills, by pid, any still there after `seconds`, and says whether none was left.
        func serversGone(within seconds: Double = 10) -> Bool {
            if waitUntil(seconds, poll: 0.05, { servers().isEmpty }) { return true }
            for pid in servers() { kill(pid, SIGKILL) }
            return false
        }

        func finish() {
            _ = serversGone(within: 0)
            removeScratch(home)
        }
    }

    /// The pid in "… (pid N, …" of jaq's line about the server it started.
    func startedPid(_ text: String) -> pid_t? {
        guard let range = text.range(of: "(pid ") else { return nil }
        return pid_t(text[range.upperBound...].prefix { $0.isNumber })
    }

    @Test func theServerInJackdrcIsStartedAndTheTakeHasItsRate() throws {
        let scene = try Scene("jackdrc", jackdrc: "/usr/bin/jackd --no-realtime -d dummy -r 44100 -p 512 -C 2 -P 2\n")
        defer { scene.finish() }
        let result = try scene.jaq(["record", "-d", "0.5", "-o", "take.wav", "system:capture_1"])
        #expect(result.status == 0, "\(result.error)")
        #expect(result.error.contains("started the one configured in ~/.jackdrc"), "\(result.error)")
        #expect(result.error.contains("-n\(scene.server)") && result.error.contains("-T"), "\(result.error)")
        #expect(startedPid(result.error) != nil, "\(result.error)")
        let take = try SoundFile(path: "\(scene.home)/take.wav", mode: .read)
        #expect(take.info.sampleRate == 44100)
        #expect(take.info.channelCount == 1)
        #expect(take.info.frameCount == 22050)
        // -T: the server leaves with its last client, jaq.
        #expect(scene.serversGone(), "the server started from ~/.jackdrc outlived jaq")
    }

    @Test func theStartedServerServesEveryCommandAndLeavesWithTheLastOne() throws {
        let scene = try Scene("jackdrc-time", jackdrc: "jackd --no-realtime -d dummy -r 32000 -p 256\n")
        defer { scene.finish() }
        let ports = try scene.jaq(["ports", "--json"])
        #expect(ports.status == 0, "\(ports.error)")
        let object = try JSONSerialization.jsonObject(with: Data(ports.output.utf8)) as? [String: Any]
        #expect(object?["sampleRate"] as? Int == 32000, "\(ports.output)")
        #expect(scene.serversGone())
        let time = try scene.jaq(["time", "--verbose"])
        #expect(time.status == 0 && time.output.contains("32000"), "\(time.output) \(time.error)")
        #expect(scene.serversGone())
    }

    @Test func noServerAndNoneConfiguredIsOneLineAndNoFile() throws {
        try #require(!FileManager.default.fileExists(atPath: "/etc/jackdrc") && !FileManager.default.fileExists(atPath: "/etc/jackd.conf"),
                     "this machine configures a server for every user in /etc")
        // JACK's default, jackd -T -d alsa, cannot run without a sound card: a card there would
        // make this a test of the card, so the test says which it met.
        let scene = try Scene("no-jackdrc", jackdrc: nil)
        defer { scene.finish() }
        let result = try scene.jaq(["record", "-d", "1", "-o", "take.wav", "system:capture_1"])
        if result.status == 0 {
            Issue.record("JACK's default server (jackd -d alsa) started here: this machine has a sound card; \(result.error)")
            return
        }
        let lines = result.error.split(separator: "\n")
        #expect(lines.count == 1, "\(result.error)")
        #expect(result.error.contains("no JACK server") && result.error.contains("qjackctl") && result.error.contains("pw-jack")
                && result.error.contains("--private-server"), "\(result.error)")
        #expect(result.error.contains("there is no ~/.jackdrc"), "\(result.error)")
        #expect(!FileManager.default.fileExists(atPath: "\(scene.home)/take.wav"))
        #expect((try? FileManager.default.contentsOfDirectory(atPath: scene.home))?.isEmpty == true, "no file left")
        #expect(scene.serversGone(within: 0), "no server left running")
    }

    @Test func aServerThatFailsToStartIsNamedWithItsReason() throws {
        let scene = try Scene("bad-jackdrc", jackdrc: "/usr/bin/jackd --no-realtime -d no-such-backend\n")
        defer { scene.finish() }
        try writeRamp("\(scene.home)/x.wav", frames: 4800)
        for command in [["play", "x.wav"], ["ports"], ["time"], ["transport"]] {
            let result = try scene.jaq(command)
            #expect(result.status == 1, "\(command): \(result.error)")
            #expect(result.error.split(separator: "\n").count == 1, "\(command): \(result.error)")
            #expect(result.error.contains("the one configured in ~/.jackdrc did not start")
                    && result.error.contains("no-such-backend"), "\(command): \(result.error)")
            // --private-server is offered where a command has it.
            #expect(result.error.contains("--private-server") == (command[0] == "play" || command[0] == "ports"), "\(command): \(result.error)")
        }
        #expect(scene.serversGone(within: 0))
    }

    @Test func jackNoStartServerStartsNothing() throws {
        let scene = try Scene("no-start", jackdrc: "/usr/bin/jackd --no-realtime -d dummy -r 44100\n")
        defer { scene.finish() }
        let clock = ContinuousClock()
        let start = clock.now
        let result = try scene.jaq(["record", "-d", "1", "-o", "take.wav", "system:capture_1"], extra: ["JACK_NO_START_SERVER": "1"])
        #expect(clock.now - start < .seconds(5))
        #expect(result.status == 1, "\(result.error)")
        #expect(result.error.contains("JACK_NO_START_SERVER"), "\(result.error)")
        #expect(!FileManager.default.fileExists(atPath: "\(scene.home)/take.wav"))
        #expect(scene.serversGone(within: 0))
    }

    @Test func privateServerOnlyWhenAskedFor() throws {
        // A .jackdrc at 44.1 kHz beside: --private-server (or JAQ_PRIVATE_SERVER=1) takes jaq's own
        // 48 kHz dummy server instead, stopped when jaq exits.
        let scene = try Scene("private", jackdrc: "/usr/bin/jackd --no-realtime -d dummy -r 44100\n")
        defer { scene.finish() }
        for (arguments, extra) in [(["--private-server"], [:]), ([], ["JAQ_PRIVATE_SERVER": "1"])] {
            let result = try scene.jaq(["record", "-d", "0.25", "-o", "take.wav"] + arguments + ["system:capture_1"], extra: extra)
            #expect(result.status == 0, "\(result.error)")
            #expect(result.error.contains("started private server"), "\(result.error)")
            let take = try SoundFile(path: "\(scene.home)/take.wav", mode: .read)
            #expect(take.info.sampleRate == 48000)
            // Stopped cleanly: nothing of the private server's is left in /dev/shm.
            if let match = result.error.firstMatch(of: #/started private server (jaq-\d+)/#) {
                let name = String(match.1)
                let left = (try? FileManager.default.contentsOfDirectory(atPath: "/dev/shm"))?.filter { $0.contains("\(name)_") } ?? []
                #expect(left.isEmpty, "the private server \(name) left \(left)")
            }
            try? FileManager.default.removeItem(atPath: "\(scene.home)/take.wav")
            #expect(scene.serversGone(within: 5), "the private server outlived jaq")
        }
    }
}
