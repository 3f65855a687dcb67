import Foundation
import Testing
import Synchronization
@testable import QueueCore
import JackTestSupport

/// Plays float32 stereo signals through an output queue on the ManualDriver (cycles wait for
/// the queue thread, so nothing is lost to timing) and measures what the "device" got.
final class EffectsRig {
    /// Drivers outlive their devices (a device holds its driver unowned).
    private static let drivers = Mutex<[ManualDriver]>([])
    let driver: ManualDriver
    let engine: OutputQueueEngine
    let buffers = TestBuffers()

    init(queueWork: QueueWork = .threads) throws {
        driver = ManualDriver(periodFrames: 256, queueWork: queueWork)
        Self.drivers.withLock { [driver] in $0.append(driver) }
        engine = try OutputQueueEngine(format: .linearPCM(sampleRate: 48000, channels: 2, bits: 32, float: true),
                                       provider: driver, clientName: "effects", executor: .queueThread) { _ in }
    }

    /// Enqueues `frames` of `signal` (the same on both channels) as one buffer, with `parameters`.
    func enqueue(_ frames: Int, parameters: [ParameterChange] = [], _ signal: (Int) -> Float) throws {
        let buffer = buffers.make(bytes: frames * 8)
        try engine.addBuffer(buffer)
        let samples = buffer.data.assumingMemoryBound(to: Float.self)
        for f in 0..<frames {
            samples[2 * f] = signal(f)
            samples[2 * f + 1] = signal(f)
        }
        try engine.enqueue(buffer.handle, byteCount: frames * 8, parameters: parameters)
    }

    /// Starts, stops once all is played, runs until stopped; returns the left channel played.
    func playAll(maximumCycles: Int = 2000) throws -> [Float] {
        driver.startRecordingPlayback()
        try engine.start(atDeviceFrame: nil)
        try engine.stop(immediate: false)
        var cycles = 0
        while engine.state != .stopped && cycles < maximumCycles {
            driver.run(cycles: 1)
            cycles += 1
        }
        driver.run(cycles: 2)
        return driver.recordedPlayback(port: 0).samples
    }
}

/// A sine of `frequency` Hz at 48 kHz, amplitude 0.5.
func sine(_ frequency: Double) -> (Int) -> Float {
    { Float(0.5 * sin(2 * Double.pi * frequency * Double($0) / 48000)) }
}

@Suite(.serialized) struct TimePitchTests {
    /// One second of a 1 kHz sine through the unit, and what must come out.
    struct SineCase: Sendable, CustomStringConvertible {
        let algorithm: TimePitchAlgorithm
        let rate: Float
        let cents: Float
        let frames: Int
        let hertz: Double
        let hertzTolerance: Double
        var description: String { "\(algorithm) rate \(rate) pitch \(cents)" }
    }

    /// - PlayRate 2, pitch kept: 1 kHz (±1 Hz; the time-domain engine, "modest quality,
    ///   suitable for voice", within ±10 Hz) for half the duration (±1 period, 48 frames).
    /// - Pitch +1200 cents: 2 kHz for the same duration.
    /// - Varispeed is resampling: at rate 2 the pitch follows (2 kHz; Pitch is ignored).
    @Test(arguments: [
        SineCase(algorithm: .spectral, rate: 2, cents: 0, frames: 24000, hertz: 1000, hertzTolerance: 1),
        SineCase(algorithm: .timeDomain, rate: 2, cents: 0, frames: 24000, hertz: 1000, hertzTolerance: 10),
        SineCase(algorithm: .spectral, rate: 1, cents: 1200, frames: 48000, hertz: 2000, hertzTolerance: 2),
        SineCase(algorithm: .varispeed, rate: 2, cents: 1200, frames: 24000, hertz: 2000, hertzTolerance: 1),
    ])
    func aSineComesOutAtTheExpectedFrequencyAndDuration(_ sineCase: SineCase) throws {
        let rig = try EffectsRig()
        defer { rig.engine.dispose(immediate: true) }
        try rig.engine.setTimePitch(enabled: true, algorithm: sineCase.algorithm)
        try rig.engine.setPlayRate(sineCase.rate)
        try rig.engine.setPitch(sineCase.cents)
        try rig.enqueue(48000, sine(1000))
        let played = try rig.playAll()
        let span = try #require(audibleSpan(played))
        #expect(abs(span.count - sineCase.frames) <= 48, "played \(span.count) frames")
        let frequency = measuredFrequency(played, in: span.first + 2400..<span.first + span.count - 2400)
        print("measured: 1 s of 1 kHz, \(sineCase): \(span.count) frames, \(frequency) Hz")
        #expect(abs(frequency - sineCase.hertz) <= sineCase.hertzTolerance, "measured \(frequency) Hz")
    }

    /// Bypassed, the unit passes every sample through untouched, whatever the rate and pitch.
    @Test func bypassIsBitExactWithPlainPlayback() throws {
        let signal: (Int) -> Float = { Float(sin(Double($0) * 0.0123) * 0.7) + Float($0 % 7) * 1e-4 + 0.01 }
        let plain = try EffectsRig()
        try plain.enqueue(30000, signal)
        let reference = try plain.playAll()
        plain.engine.dispose(immediate: true)

        let rig = try EffectsRig()
        defer { rig.engine.dispose(immediate: true) }
        try rig.engine.setTimePitch(enabled: true, algorithm: .spectral)
        try rig.engine.setPlayRate(2)
        try rig.engine.setPitch(700)
        rig.engine.timePitchBypass = true
        try rig.enqueue(30000, signal)
        let bypassed = try rig.playAll()
        let start = try #require(reference.firstIndex { $0 != 0 })
        let bypassStart = try #require(bypassed.firstIndex { $0 != 0 })
        #expect(bypassStart == start)
        let differing = zip(reference, bypassed).filter { $0 != $1 }.count
        #expect(differing == 0, "\(differing) samples differ")
        // And both are the signal, sample for sample.
        let expected = (0..<30000).map(signal)
        #expect(zip(reference[start...], expected).filter { $0 != $1 }.count == 0)
    }

    /// A PlayRate event on a buffer takes effect at that buffer's first frame: 0.5 s at rate 1,
    /// then 0.5 s at rate 2, is 0.75 s long, to within the converter's window: libsoxr's
    /// filter (~128 frames), Rubber Band's (2048 frames) spread the change over their length.
    @Test(arguments: [(TimePitchAlgorithm.varispeed, 256), (.spectral, 2048)])
    func aPlayRateEventTakesEffectAtItsBuffersStart(algorithm: TimePitchAlgorithm, tolerance: Int) throws {
        let rig = try EffectsRig()
        defer { rig.engine.dispose(immediate: true) }
        try rig.engine.setTimePitch(enabled: true, algorithm: algorithm)
        try rig.enqueue(24000, sine(1000))
        try rig.enqueue(24000, parameters: [ParameterChange(.playRate, 2)]) { sine(1000)($0 + 24000) }
        let played = try rig.playAll()
        let span = try #require(audibleSpan(played))
        #expect(abs(span.count - 36000) <= tolerance, "played \(span.count) frames")
        #expect(rig.engine.playRate == 2)
        let first = measuredFrequency(played, in: span.first + 2400..<span.first + 21600)
        let second = measuredFrequency(played, in: span.first + 26400..<span.first + 33600)
        let expectedSecond = algorithm == .varispeed ? 2000.0 : 1000
        #expect(abs(first - 1000) <= 1 && abs(second - expectedSecond) <= 1, "measured \(first) Hz, \(second) Hz")
    }

    /// PlayRate set while playing is heard within the fill limit: 2 s of sine at rate 1 switched
    /// to rate 2 after 0.5 s played. The source taken at rate 1 is the 0.5 s played plus what was
    /// decoded ahead (at most 8192 + a chunk + the stretcher's window), the rest plays at rate 2.
    @Test func aPlayRateSetWhilePlayingIsHeardWithinTheFillLimit() throws {
        let rig = try EffectsRig()
        defer { rig.engine.dispose(immediate: true) }
        try rig.engine.setTimePitch(enabled: true, algorithm: .spectral)
        try rig.enqueue(96000, sine(1000))
        rig.driver.startRecordingPlayback()
        try rig.engine.start(atDeviceFrame: nil)
        rig.driver.run(frames: 24000)
        try rig.engine.setPlayRate(2)
        try rig.engine.stop(immediate: false)
        var cycles = 0
        while rig.engine.state != .stopped && cycles < 2000 {
            rig.driver.run(cycles: 1)
            cycles += 1
        }
        let played = rig.driver.recordedPlayback(port: 0).samples
        let span = try #require(audibleSpan(played))
        let ahead = 8192 + 1024 + 2048
        #expect(span.count >= 60000 - 48 && span.count <= 48000 + (24256 + ahead) / 2, "played \(span.count) frames")
    }

    /// At PlayRate 2 the queue's time counts source frames: twice the device frames played.
    /// (The queue's work runs inline, so the value is exact.)
    @Test func queueTimeCountsSourceFramesConsumed() throws {
        let rig = try EffectsRig(queueWork: .inline)
        defer { rig.engine.dispose(immediate: true) }
        try rig.engine.setTimePitch(enabled: true, algorithm: .spectral)
        try rig.engine.setPlayRate(2)
        try rig.enqueue(96000, sine(440))
        try rig.engine.start(atDeviceFrame: nil)
        rig.driver.run(cycles: 40) // 10240 device frames
        let time = rig.engine.currentQueueTime().sampleTime
        // Inline, no queue thread races the cycles: exactly twice, every run (with a thread, ±512).
        #expect(time == 20480, "queue time \(time)")
    }

    @Test func timePitchChangesOnlyWhileStopped() throws {
        let rig = try EffectsRig()
        defer { rig.engine.dispose(immediate: true) }
        try rig.enqueue(48000, sine(440))
        try rig.engine.start(atDeviceFrame: nil)
        #expect(throws: QueueError.self) { try rig.engine.setTimePitch(enabled: true, algorithm: .spectral) }
        // Rate and pitch change while running, within Apple's ranges; outside them
        // invalidParameter (kAudio_ParamError) and the value stays.
        try rig.engine.setPlayRate(2)
        #expect(throws: QueueError.self) { try rig.engine.setPlayRate(5) }
        #expect(throws: QueueError.self) { try rig.engine.setPlayRate(.nan) }
        #expect(rig.engine.playRate == 2)
        try rig.engine.setPitch(-2400)
        #expect(throws: QueueError.self) { try rig.engine.setPitch(-9000) }
        #expect(rig.engine.pitch == -2400)
    }
}
