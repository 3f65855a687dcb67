import Testing
import Foundation
import JackTestSupport

/// jaq under PipeWire's libjack (what `pw-jack` loads) against a private PipeWire, beside the
/// same checks on jackd. The end-to-end takes (bit-exact, per track, two processes on one
/// frame, transport) run on both servers in RecordCommandTests, RecordFormatTests and PeerTests.
@Suite(.serialized) struct PipeWireTests {
    /// A plain JACK client that prints jack_frame_time once it runs cycles (as a C programmer
    /// would read it), so `jaq time` has a referee that is not jaq.
    static let frameTimeProbe = """
        #include <jack/jack.h>
        #include <stdio.h>
        #include <unistd.h>
        static int process(jack_nframes_t n, void *a) { (void)n; (void)a; return 0; }
        int main(void) {
            jack_status_t status;
            jack_client_t *c = jack_client_open("frame-probe", JackNoStartServer, &status);
            if (!c) return 1;
            jack_set_process_callback(c, process, NULL);
            jack_activate(c);
            for (int i = 0; i < 2000 && jack_last_frame_time(c) == 0; i++) usleep(1000);
            printf("%u %u\\n", jack_frame_time(c), jack_get_buffer_size(c));
            jack_client_close(c);
            return 0;
        }
        """

    func buildProbe(in dir: String) throws -> String {
        try Self.frameTimeProbe.write(toFile: "\(dir)/probe.c", atomically: true, encoding: .utf8)
        let build = try runProcess(["cc", "-Wall", "-o", "\(dir)/probe", "\(dir)/probe.c", "-ljack"])
        try #require(build.status == 0, "cc: \(build.error)")
        return "\(dir)/probe"
    }

    /// `jaq time` lies between two readings of a C client's jack_frame_time taken before and
    /// after it (within two periods). PipeWire's jack_frame_time on a client that runs no cycles
    /// is CLOCK_MONOTONIC × rate (minutes or hours of frames away), which jaq once printed.
    @Test(arguments: JackServer.Backend.allCases)
    func jaqTimeAgreesWithACClientsFrameTime(backend: JackServer.Backend) throws {
        let server = try JackServer(backend: backend)
        defer { server.stop() }
        let dir = scratchDirectory("pwtime")
        defer { removeScratch(dir) }
        let probe = try buildProbe(in: dir)
        for _ in 0..<3 {
            let before = try server.run([probe]).split(separator: " ").compactMap { Int64($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            let jaqNow = try frameNow(server)
            let after = try server.run([probe]).split(separator: " ").compactMap { Int64($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            try #require(before.count == 2 && after.count == 2)
            let period = before[1]
            #expect(after[0] - before[0] < 10 * 48000, "the probes ran within seconds of each other: \(before[0]) \(after[0])")
            #expect(jaqNow >= before[0] - 2 * period && jaqNow <= after[0] + 2 * period,
                    "jaq time \(jaqNow) between the C client's \(before[0]) and \(after[0]) (\(backend))")
        }
    }

    /// With PipeWire's libjack and no PipeWire running, jaq says so in one line and starts no
    /// jackd (PipeWire's libjack could not reach it).
    @Test func noPipeWireServerGetsOneLineAndNoPrivateJackd() throws {
        try #require(JackServer.isPipeWireInstalled, "apt-get install pipewire pipewire-jack pipewire-bin")
        let empty = scratchDirectory("pwnone")
        defer { removeScratch(empty) }
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_RUNTIME_DIR"] = empty
        environment["LD_LIBRARY_PATH"] = JackServer.pipeWireJackLibraryDirectory
        environment.removeValue(forKey: "JACK_DEFAULT_SERVER")
        environment.removeValue(forKey: "PIPEWIRE_REMOTE")
        try writeRamp("\(empty)/short.wav", frames: 4800)
        for command in [["time"], ["play", "short.wav"], ["record", "-d", "1", "x"], ["ports"]] {
            let result = try runProcess([jaqBinary] + command, environment: environment, timeout: 30, currentDirectory: empty)
            #expect(result.status == 1, "jaq \(command[0])")
            let lines = result.error.split(separator: "\n")
            #expect(lines.count == 1 && result.error.contains("no PipeWire server is running") && result.error.contains("pw-jack"),
                    "jaq \(command[0]): \(result.error)")
            #expect(!result.error.contains("started private server"), "no jackd under PipeWire's libjack")
        }
    }

    /// `--server` names a PipeWire socket under PipeWire's libjack: the right one works, another
    /// gets one line that says what the name means there.
    @Test func serverOptionNamesThePipeWireSocket() throws {
        let server = try JackServer(backend: .pipeWire)
        defer { server.stop() }
        let good = try jaq(["time", "--server", "pipewire-0"], server: server)
        #expect(good.status == 0 && Int64(good.output.trimmingCharacters(in: .whitespacesAndNewlines)) != nil, "\(good.error)")
        let bad = try jaq(["time", "--server", "no-such-socket"], server: server)
        #expect(bad.status == 1)
        #expect(bad.error.contains("PipeWire server \"no-such-socket\" is not running") && bad.error.contains("XDG_RUNTIME_DIR"), "\(bad.error)")
    }

    /// Without a session manager PipeWire has no hardware ports: `jaq record` (default "system")
    /// says so and what to do; `jaq play` says its ports stay unconnected, and plays.
    @Test func noPhysicalPortsUnderPipeWireAreExplained() throws {
        let server = try JackServer(backend: .pipeWire)
        defer { server.stop() }
        let dir = scratchDirectory("pwsystem")
        defer { removeScratch(dir) }
        let record = try jaq(["record", "-d", "1"], server: server, directory: dir)
        #expect(record.status == 1)
        #expect(record.error.contains("no physical (system) ports") && record.error.contains("session manager"), "\(record.error)")
        try writeRamp("\(dir)/short.wav", frames: 4800)
        let play = try jaq(["play", "short.wav"], server: server, directory: dir)
        #expect(play.status == 0, "\(play.error)")
        #expect(play.error.contains("stay unconnected") && play.error.contains("every frame of every file played"), "\(play.error)")
    }
}
