import Foundation
import JackTestSupport
import Testing

/// Device time through the C API on both libjacks: CPrograms/device_time.c runs in a child
/// process against a private jackd (jackd2's libjack) and a private PipeWire (PipeWire's
/// libjack, loaded as `pw-jack` loads it), with a plain JACK client of its own as the referee.
/// PipeWire 0.3.65's jack_time_to_frames and jack_frames_to_time are wrong for times before the
/// current cycle (unsigned arithmetic): jaq must not depend on them.
@Suite(.serialized) struct DeviceTimeTests {
    @Test(arguments: JackServer.Backend.allCases)
    func deviceTimeTranslationAndScheduledStartsAgreeWithTheServersClock(backend: JackServer.Backend) throws {
        let scratch = try Scratch()
        let helper = scratch.url("device_time")
        let build = try CProgram.compile("Tests/AudioToolboxTests/CPrograms/device_time.c", into: helper,
                                         flags: ["-Wall", "-Werror"], linking: ["-ljack", "-lm"])
        try #require(build.status == 0, "cc failed:\n\(build.diagnostics)")
        let server = try JackServer(backend: backend)
        defer { server.stop() }
        let result = try runProcess([helper.path], environment: server.environment, timeout: 60)
        #expect(result.output.contains("using PipeWire") == (backend == .pipeWire), "the helper ran on the intended libjack:\n\(result.output)")
        #expect(result.status == 0, "device_time on \(backend):\n\(result.output)\(result.error)")
        #expect(result.output.contains("the frame the queue started on") && result.output.contains("0 failures"), "\(result.output)")
    }
}
