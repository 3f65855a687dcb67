import CAudioToolbox
import QueueCore

// Sample-rate conversion in a converter: libsoxr (QueueCore's Resampler), with Apple's
// quality, complexity and prime method properties.

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
    private var inputFrames = 0
    private var outputFrames = 0
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
    /// libsoxr's delay, in input frames, measured on a fresh resampler.
    var primeInfo: AudioConverterPrimeInfo {
        guard let probe = try? makeResampler() else { return AudioConverterPrimeInfo() }
        let frames = 8192
        let zeros = UnsafeMutablePointer<Float>.allocate(capacity: frames)
        zeros.initialize(repeating: 0, count: frames)
        let sink = UnsafeMutablePointer<Float>.allocate(capacity: frames * 4)
        defer { zeros.deallocate(); sink.deallocate() }
        let inputs = [UnsafePointer<Float>](repeating: UnsafePointer(zeros), count: channels)
        let outputs = [UnsafeMutablePointer<Float>](repeating: sink, count: channels)
        // Planes may share memory here: the signal is zeros and the output is thrown away.
        _ = inputs.withUnsafeBufferPointer { i in
            outputs.withUnsafeBufferPointer { o in
                probe.process(input: i.baseAddress!, inputFrames: frames, output: o.baseAddress!, outputCapacity: frames * 4)
            }
        }
        let frames32 = UInt32((probe.delay * inputRate / outputRate).rounded(.up))
        return AudioConverterPrimeInfo(leadingFrames: frames32, trailingFrames: frames32)
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
        reset()
    }

    /// Forgets the stream: the next frame is a stream's first.
    func reset() {
        resampler = nil
        inputFrames = 0
        outputFrames = 0
        skip = 0
    }

    /// The resampler, created at the stream's first frames as the prime method wants them.
    private func started(into out: GrowablePlanes, at end: Int) throws -> Resampler {
        if let resampler { return resampler }
        let made = try makeResampler()
        resampler = made
        if primeMethod == kConverterPrimeMethod_Pre {
            skip = Int((Double(primeInfo.leadingFrames) * outputRate / inputRate).rounded())
        } else if primeMethod == kConverterPrimeMethod_None {
            // Latency mode: the filter's delay is heard at the start, the leading frames being silence.
            let latency = Int(primeInfo.trailingFrames)
            let zeros = GrowablePlanes(channelCount: channels)
            zeros.reserve(latency)
            for c in 0..<channels { zeros.planes[c].initialize(repeating: 0, count: latency) }
            _ = run(made, UnsafePointer(zeros.planes), frames: latency, into: out, at: end)
            inputFrames -= latency
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
        let leading = primeMethod == kConverterPrimeMethod_Pre ? Int(primeInfo.leadingFrames) : 0
        let expected = Int((Double(inputFrames) * outputRate / inputRate).rounded()) - Int((Double(leading) * outputRate / inputRate).rounded())
        var added = 0
        while true {
            out.reserve(end + added + 4096)
            for c in 0..<channels { table[c] = out.planes[c] + end + added }
            let (_, produced) = resampler.process(input: nil, inputFrames: 0, output: UnsafePointer(table), outputCapacity: 4096)
            if produced == 0 { break }
            added += dropSkipped(out, at: end + added, produced)
        }
        outputFrames += added
        // Never more than the input's length (kConverterPrimeMethod_None's latency is not added at the end).
        let over = max(0, outputFrames - max(expected, 0))
        let kept = max(0, added - over)
        outputFrames -= added - kept
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
        inputFrames += frames
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
