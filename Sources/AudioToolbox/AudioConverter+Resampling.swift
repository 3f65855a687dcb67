import CAudioToolbox
import CSoxrLoad
import QueueCore

// Sample-rate conversion in a converter: libsoxr (QueueCore's Resampler), with Apple's
// quality, complexity and prime method properties.

/// Why this installation cannot convert sample rates, or nil when it can: libsoxr, which the
/// library opens when it first resamples (not at start: issue #29), is missing. A converter or
/// queue between two rates then answers kAudioConverterErr_FormatNotSupported ('fmt?'), as
/// Apple's do for a conversion they cannot make; this says why, for messages (a jaq extension).
public var sampleRateConversionUnavailable: String? { jaq_soxr_error().map { String(cString: $0) } }

/// The resampler of a converter whose input and output rates differ.
final class RateStage {
    let inputRate: Double
    let outputRate: Double
    let channels: Int
    private(set) var quality = kAudioConverterQuality_High
    private(set) var complexity = kAudioConverterSampleRateConverterComplexity_Normal
    private(set) var primeMethod = kConverterPrimeMethod_Normal
    private var resampler: Resampler?
    /// Output frames still to drop (kConverterPrimeMethod_Pre's leading frames).
    private var skip = 0
    private var outputFrames = 0
    /// Output frames the end drops (kConverterPrimeMethod_None's latency).
    private var tailDrop = 0
    private var measuredReach: Int?
    private let table: UnsafeMutablePointer<UnsafeMutablePointer<Float>>

    init(inputRate: Double, outputRate: Double, channels: Int) throws {
        self.inputRate = inputRate
        self.outputRate = outputRate
        self.channels = channels
        table = .allocate(capacity: max(channels, 1))
        // Refuse rates libsoxr refuses now, not at the first conversion.
        do { _ = try makeResampler() } catch {
            throw AudioToolboxError(kAudioConverterErr_FormatNotSupported, "\(error)")
        }
    }

    deinit { table.deallocate() }

    /// libsoxr's recipe for the quality and complexity: Linear is soxr's quick cubic; Normal maps
    /// Max/High/Medium/Low/Min to very high (28-bit), high (20-bit), medium, low, quick;
    /// Mastering is one step above Normal (Max: 32-bit).
    var recipe: UInt {
        if complexity == kAudioConverterSampleRateConverterComplexity_Linear { return 0 }
        let steps: [UInt] = complexity == kAudioConverterSampleRateConverterComplexity_Mastering ? [3, 4, 4, 5, 6, 7] : [0, 1, 2, 4, 4, 6]
        switch quality {
        case kAudioConverterQuality_Max...: return steps[5]
        case kAudioConverterQuality_High...: return steps[3]
        case kAudioConverterQuality_Medium...: return steps[2]
        case kAudioConverterQuality_Low...: return steps[1]
        default: return steps[0]
        }
    }

    private func makeResampler() throws -> Resampler {
        try Resampler(inputRate: inputRate, outputRate: outputRate, channelCount: channels, recipe: recipe)
    }

    /// The input frames the filter reaches before and after a frame (AudioConverterPrimeInfo):
    /// the half-width of the resampler's impulse response above -100 dB, in input frames.
    var primeInfo: AudioConverterPrimeInfo {
        if measuredReach == nil { measuredReach = measureReach() }
        let frames = UInt32(measuredReach ?? 0)
        return AudioConverterPrimeInfo(leadingFrames: frames, trailingFrames: frames)
    }

    private func measureReach() -> Int {
        guard let probe = try? Resampler(inputRate: inputRate, outputRate: outputRate, channelCount: 1, recipe: recipe) else { return 0 }
        let frames = 32768, impulse = frames / 2
        let capacity = Int(Double(frames) * outputRate / inputRate) + 8192
        let signal = UnsafeMutablePointer<Float>.allocate(capacity: frames)
        let response = UnsafeMutablePointer<Float>.allocate(capacity: capacity)
        defer { signal.deallocate(); response.deallocate() }
        signal.initialize(repeating: 0, count: frames)
        signal[impulse] = 1
        var input = UnsafePointer(signal)
        var output = response
        var produced = probe.process(input: &input, inputFrames: frames, output: &output, outputCapacity: capacity).produced
        while produced < capacity {
            output = response + produced
            let tail = probe.process(input: nil, inputFrames: 0, output: &output, outputCapacity: capacity - produced).produced
            if tail == 0 { break }
            produced += tail
        }
        let peak = Double(impulse) * outputRate / inputRate
        var reach = 0.0
        for i in 0..<produced where abs(response[i]) > 1e-5 { reach = max(reach, abs(Double(i) - peak)) }
        return Int((reach * inputRate / outputRate).rounded(.up))
    }

    /// Sets a UInt32 property (quality, complexity, prime method), before converting.
    func set(_ id: AudioConverterPropertyID, _ value: UInt32, started: Bool) throws {
        guard !started else {
            throw AudioToolboxError(kAudioConverterErr_OperationNotSupported, "set the sample-rate converter's properties before converting (or after AudioConverterReset)")
        }
        switch id {
        case kAudioConverterSampleRateConverterQuality:
            guard value <= kAudioConverterQuality_Max else { throw AudioToolboxError(kAudio_ParamError, "quality \(value) (0...127)") }
            quality = value
        case kAudioConverterSampleRateConverterComplexity:
            let known = [kAudioConverterSampleRateConverterComplexity_Linear, kAudioConverterSampleRateConverterComplexity_Normal,
                         kAudioConverterSampleRateConverterComplexity_Mastering]
            guard known.contains(value) else { throw AudioToolboxError(kAudio_ParamError, "complexity \(fourCharacterCode(value))") }
            complexity = value
        default:
            guard value <= kConverterPrimeMethod_None else { throw AudioToolboxError(kAudio_ParamError, "prime method \(value)") }
            primeMethod = value
        }
        measuredReach = nil
        reset()
    }

    /// Forgets the stream: the next frame is a stream's first.
    func reset() {
        resampler = nil
        outputFrames = 0
        skip = 0
        tailDrop = 0
    }

    /// The resampler, created at the stream's first frames as the prime method wants them.
    private func started(into out: GrowablePlanes, at end: Int) throws -> Resampler {
        if let resampler { return resampler }
        let made = try makeResampler()
        resampler = made
        guard primeMethod != kConverterPrimeMethod_Normal else { return made }
        let reach = Int((Double(primeInfo.leadingFrames) * outputRate / inputRate).rounded())
        if primeMethod == kConverterPrimeMethod_Pre {
            skip = reach
        } else if primeMethod == kConverterPrimeMethod_None {
            // Latency mode: the filter's reach is heard as silence at the start, and the tail
            // it would add at the end is not produced.
            out.reserve(end + reach)
            for c in 0..<channels { (out.planes[c] + end).update(repeating: 0, count: reach) }
            outputFrames += reach
            tailDrop = reach
        }
        return made
    }

    /// Resamples `frames` frames of `planes` into `out` from frame `end` on (growing it);
    /// returns the frames added.
    func process(_ planes: UnsafePointer<UnsafeMutablePointer<Float>>, frames: Int, into out: GrowablePlanes, at end: Int) throws -> Int {
        let before = outputFrames
        let resampler: Resampler
        do { resampler = try started(into: out, at: end) } catch {
            throw AudioToolboxError(kAudioConverterErr_UnspecifiedError, "\(error)")
        }
        // started() may have added kConverterPrimeMethod_None's latency.
        let latency = outputFrames - before
        return latency + run(resampler, planes, frames: frames, into: out, at: end + latency)
    }

    /// At the end of the input: the filter's tail, so that the output has the input's length
    /// in output frames; returns the frames added.
    func flush(into out: GrowablePlanes, at end: Int) -> Int {
        guard let resampler else { return 0 }
        var added = 0
        while true {
            out.reserve(end + added + 4096)
            for c in 0..<channels { table[c] = out.planes[c] + end + added }
            let (_, produced) = resampler.process(input: nil, inputFrames: 0, output: UnsafePointer(table), outputCapacity: 4096)
            if produced == 0 { break }
            added += dropSkipped(out, at: end + added, produced)
        }
        let kept = max(0, added - tailDrop)
        outputFrames += kept
        self.resampler = nil
        return kept
    }

    /// Runs the resampler over all of `frames`, appending to `out` at `end`; returns the frames added.
    private func run(_ resampler: Resampler, _ planes: UnsafePointer<UnsafeMutablePointer<Float>>, frames: Int,
                     into out: GrowablePlanes, at end: Int) -> Int {
        var consumed = 0
        var added = 0
        let input = UnsafeMutablePointer<UnsafePointer<Float>>.allocate(capacity: max(channels, 1))
        defer { input.deallocate() }
        while consumed < frames {
            let capacity = Int((Double(frames - consumed) * outputRate / inputRate).rounded(.up)) + 4096
            out.reserve(end + added + capacity)
            for c in 0..<channels {
                input[c] = UnsafePointer(planes[c] + consumed)
                table[c] = out.planes[c] + end + added
            }
            let (used, produced) = resampler.process(input: UnsafePointer(input), inputFrames: frames - consumed,
                                                     output: UnsafePointer(table), outputCapacity: capacity)
            if used == 0 && produced == 0 { break }
            consumed += used
            added += dropSkipped(out, at: end + added, produced)
        }
        outputFrames += added
        return added
    }

    /// Drops what is left of `skip` from the `produced` frames at `start`; returns the frames kept.
    private func dropSkipped(_ out: GrowablePlanes, at start: Int, _ produced: Int) -> Int {
        let dropped = min(skip, produced)
        guard dropped > 0 else { return produced }
        skip -= dropped
        for c in 0..<channels { (out.planes[c] + start).update(from: out.planes[c] + start + dropped, count: produced - dropped) }
        return produced - dropped
    }
}
