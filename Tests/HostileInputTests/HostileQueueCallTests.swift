import Foundation
import JackTestSupport
import Testing

/// Hostile values given to a live output queue on a private JACK server, in a child process:
/// result codes, never a trap, never a silently truncated property.
@Suite struct HostileQueueCallTests {
    @Test func outOfRangeTimesParametersAndPropertySizes() throws {
        let server = try JackServer()
        defer { server.stop() }
        let output = try FileFuzzProcess.run(["queue"], timeout: 60, environment: server.environment)
        let results = try FileFuzzProcess.results(output, for: "queue")
        #expect(results["new"] == "0")
        for time in ["nan", "1e300", "-1e300", "1e19", "-2^63"] {
            #expect(results["translate-\(time)"] == "-50", "DeviceTranslateTime at \(time): kAudio_ParamError")
            #expect(results["nearest-\(time)"] == "-50", "DeviceGetNearestStartTime at \(time)")
            #expect(results["enqueue-at-\(time)"] == "-50", "EnqueueBufferWithParameters at \(time)")
        }
        #expect(results["enqueue-volume-nan"] == "-50")
        #expect(results["enqueue-pan-inf"] == "-50")
        #expect(results["enqueue-volume-0.5"] == "0")
        #expect(results["ramp-1e15"] == "-50")
        #expect(results["ramp-max"] == "-50")
        #expect(results["ramp-2"] == "0")
        #expect(results["set-cookie"] == "0")
        // kAudioQueueErr_InvalidPropertySize (-66683), not 8 of the 16 bytes.
        #expect(results["cookie-short"] == "-66683")
        #expect(results["cookie"] == "0")
        #expect(results["cookie-equal"] == "yes")
        #expect(results["latency-size"] == "0")
        #expect(results["latency-short"] == "-66683")
    }
}
