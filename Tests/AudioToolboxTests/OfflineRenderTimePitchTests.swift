import Testing
import Foundation
import AudioToolbox
import JackTestSupport
import QueueCore

/// AudioQueueOfflineRender with the time/pitch unit on: one second of a 1 kHz sine bounced
/// offline meets TimePitchTests' checks (frequency and duration), set with SetParameter or
/// with the buffer's parameter events.
@Suite struct OfflineRenderTimePitchTests {
    struct Case: Sendable, CustomStringConvertible {
        /// The unit: kAudioQueueTimePitchAlgorithm_*, PlayRate, Pitch (cents).
        let unit: (algorithm: UInt32, rate: Float, cents: Float)
        /// Through AudioQueueEnqueueBufferWithParameters instead of SetParameter.
        let asEvents: Bool
        /// What must come out: frames (±48), frequency (± tolerance).
        let expected: (frames: Int, hertz: Double, tolerance: Double)
        var description: String {
            let name = [kAudioQueueTimePitchAlgorithm_Spectral: "spectral", kAudioQueueTimePitchAlgorithm_TimeDomain: "time domain",
                        kAudioQueueTimePitchAlgorithm_Varispeed: "varispeed"][unit.algorithm] ?? "?"
            return "\(name) rate \(unit.rate) pitch \(unit.cents)\(asEvents ? " (events)" : "")"
        }
    }

    /// One second of 1 kHz, float32 stereo at 48 kHz, rendered offline through the unit; the left channel.
    static func bounce(_ testCase: Case) throws -> [Float] {
        let device = ManualDriver(periodFrames: 256)
        var format = lpcm(bits: 32, float: true)
        var made: AudioQueueRef?
        #expect(AudioQueueNewOutput(&format, { _, _, _ in }, nil, nil, nil, 0, &made, device: device) == noErr)
        let queue = try #require(made)
        defer { AudioQueueDispose(queue, true) }
        var one: UInt32 = 1
        var algorithm = testCase.unit.algorithm
        #expect(AudioQueueSetProperty(queue, kAudioQueueProperty_EnableTimePitch, &one, 4) == noErr)
        #expect(AudioQueueSetProperty(queue, kAudioQueueProperty_TimePitchAlgorithm, &algorithm, 4) == noErr)
        var events = [AudioQueueParameterEvent(mID: kAudioQueueParam_PlayRate, mValue: testCase.unit.rate),
                      AudioQueueParameterEvent(mID: kAudioQueueParam_Pitch, mValue: testCase.unit.cents)]
        if !testCase.asEvents {
            for event in events { #expect(AudioQueueSetParameter(queue, event.mID, event.mValue) == noErr) }
        }
        var made2: AudioQueueBufferRef?
        #expect(AudioQueueAllocateBuffer(queue, 48000 * 8, &made2) == noErr)
        let buffer = try #require(made2)
        let samples = buffer.pointee.mAudioData.assumingMemoryBound(to: Float.self)
        for f in 0..<48000 {
            let value = Float(0.5 * sin(2 * Double.pi * 1000 * Double(f) / 48000))
            samples[2 * f] = value
            samples[2 * f + 1] = value
        }
        buffer.pointee.mAudioDataByteSize = 48000 * 8
        let count = UInt32(testCase.asEvents ? events.count : 0)
        #expect(AudioQueueEnqueueBufferWithParameters(queue, buffer, 0, nil, 0, 0, count, &events, nil, nil) == noErr)
        #expect(AudioQueueSetOfflineRenderFormat(queue, &format, nil) == noErr)
        #expect(AudioQueueStart(queue, nil) == noErr)
        // The end of the stream: the unit's last frames (its latency) follow, as on JACK.
        #expect(AudioQueueStop(queue, false) == noErr)
        let rendered = try renderOffline(queue, channels: 2, frames: 72000, request: 4096)
        var rate: Float = 0
        #expect(AudioQueueGetParameter(queue, kAudioQueueParam_PlayRate, &rate) == noErr && rate == testCase.unit.rate)
        return deinterleave(rendered, channels: 2, channel: 0)
    }

    /// TimePitchTests' cases: PlayRate 2 keeps 1 kHz (±1 Hz; the time-domain engine ±10 Hz)
    /// for half the duration (±1 period, 48 frames); Pitch +1200 doubles the frequency at
    /// the same duration; Varispeed at rate 2 doubles both (Pitch ignored).
    @Test(arguments: [
        Case(unit: (kAudioQueueTimePitchAlgorithm_Spectral, 2, 0), asEvents: false,
             expected: (24000, 1000, 1)),
        Case(unit: (kAudioQueueTimePitchAlgorithm_Spectral, 2, 0), asEvents: true,
             expected: (24000, 1000, 1)),
        Case(unit: (kAudioQueueTimePitchAlgorithm_TimeDomain, 2, 0), asEvents: false,
             expected: (24000, 1000, 10)),
        Case(unit: (kAudioQueueTimePitchAlgorithm_Spectral, 1, 1200), asEvents: true,
             expected: (48000, 2000, 2)),
        Case(unit: (kAudioQueueTimePitchAlgorithm_Varispeed, 2, 1200), asEvents: false,
             expected: (24000, 2000, 1)),
    ])
    func aBouncedSineHasTheExpectedFrequencyAndDuration(_ testCase: Case) throws {
        let left = try Self.bounce(testCase)
        let span = try #require(audibleSpan(left))
        let hertz = measuredFrequency(left, in: span.first + 2400..<span.first + span.count - 2400)
        print("measured: offline render of 1 s of 1 kHz, \(testCase): \(span.count) frames, \(hertz) Hz")
        #expect(abs(span.count - testCase.expected.frames) <= 48, "rendered \(span.count) frames")
        #expect(abs(hertz - testCase.expected.hertz) <= testCase.expected.tolerance, "measured \(hertz) Hz")
    }
}
