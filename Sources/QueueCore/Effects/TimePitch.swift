import CRubberBand
import CRubberBandLoad
import CSoxr
import Glibc

/// The time/pitch algorithms of kAudioQueueProperty_TimePitchAlgorithm.
public enum TimePitchAlgorithm: Sendable, Equatable {
    /// kAudioQueueTimePitchAlgorithm_Spectral: Rubber Band's finer (R3) engine; PlayRate and Pitch.
    case spectral
    /// kAudioQueueTimePitchAlgorithm_TimeDomain: Rubber Band's faster (R2) engine; PlayRate only (Apple applies Pitch with the spectral algorithm only).
    case timeDomain
    /// kAudioQueueTimePitchAlgorithm_Varispeed: libsoxr resampling; the pitch follows the rate.
    case varispeed
}

/// The time/pitch unit of an output queue (kAudioQueueProperty_EnableTimePitch): changes the
/// play rate (0.5...2) and the pitch (±2400 cents) of the queue's audio, at the queue's rate,
/// on the queue thread. `n` frames in at rate `r` give `n / r` frames out; the stretcher's
/// own delay is taken out so the first frame out is the first frame in.
final class TimePitchStage: ConversionStage {
    let algorithm: TimePitchAlgorithm
    let channelCount: Int
    private let sampleRate: Double
    private var rubberBand: RubberBandState?
    private var varispeed: soxr_t?
    /// Rate and pitch the next frames are processed with.
    private var rate = 1.0
    private var cents = 0.0
    /// Rubber Band: the start pad has been fed and `dropFrames` output frames remain to drop.
    private var started = false
    private var dropFrames = 0
    /// Output frames the input so far calls for, and those produced (since the last drain).
    private var expectedFrames = 0.0
    private var producedFrames = 0
    private let silence: PlanarFIFO
    private static let maximumProcessFrames = 1024

    init(sampleRate: Double, channelCount: Int, algorithm: TimePitchAlgorithm) throws {
        self.sampleRate = sampleRate
        self.channelCount = channelCount
        self.algorithm = algorithm
        silence = PlanarFIFO(channelCount: channelCount, capacity: Self.maximumProcessFrames)
        silence.appendSilence(Self.maximumProcessFrames)
        switch algorithm {
        case .spectral, .timeDomain:
            var options = Int32(RubberBandOptionProcessRealTime.rawValue | RubberBandOptionChannelsTogether.rawValue
                                | RubberBandOptionPitchHighConsistency.rawValue | RubberBandOptionThreadingNever.rawValue)
            if algorithm == .spectral {
                options |= Int32(RubberBandOptionEngineFiner.rawValue)
            } else {
                options |= Int32(RubberBandOptionEngineFaster.rawValue)
            }
            guard let state = rubberband_new(UInt32(sampleRate.rounded()), UInt32(channelCount), options, 1, 1) else {
                // Not installed: the algorithm is a value this machine cannot take.
                if let missing = jaq_rubberband_error() { throw QueueError.invalidPropertyValue(String(cString: missing)) }
                throw QueueError.unsupportedFormat("Rubber Band refused \(sampleRate) Hz, \(channelCount) channels")
            }
            rubberband_set_max_process_size(state, UInt32(Self.maximumProcessFrames))
            rubberBand = state
        case .varispeed:
            var io = soxr_io_spec(SOXR_FLOAT32_S, SOXR_FLOAT32_S)
            var quality = soxr_quality_spec(4 /* SOXR_HQ */, 32 /* SOXR_VR */)
            var error: soxr_error_t? = nil
            // Variable rate: the I/O ratio (input frames per output frame) goes up to 2.
            guard let created = soxr_create(2, 1, UInt32(channelCount), &error, &io, &quality, nil), error == nil else {
                throw QueueError.unsupportedFormat("varispeed: " + (error.map { String(cString: $0) } ?? "soxr_create failed"))
            }
            varispeed = created
        }
    }

    deinit {
        if let rubberBand { rubberband_delete(rubberBand) }
        if let varispeed { soxr_delete(varispeed) }
    }

    /// Sets the rate (0.5...2) and pitch (cents, ±2400) for the frames processed next.
    func set(rate: Double, cents: Double) {
        self.rate = min(max(rate, 0.5), 2)
        self.cents = algorithm == .spectral ? min(max(cents, -2400), 2400) : 0
        if let rubberBand {
            rubberband_set_time_ratio(rubberBand, 1 / self.rate)
            rubberband_set_pitch_scale(rubberBand, pow(2, self.cents / 1200))
        }
        if let varispeed, started { soxr_set_io_ratio(varispeed, self.rate, 0) }
    }

    func process(_ input: UnsafePointer<UnsafePointer<Float>>, frames: Int, into output: PlanarFIFO) {
        guard frames > 0 else { return }
        startIfNeeded(output)
        expectedFrames += Double(frames) / rate
        if let rubberBand {
            var offset = 0
            while offset < frames {
                let piece = min(Self.maximumProcessFrames, frames - offset)
                rubberband_process(rubberBand, optionalPlanes(output.offsetView(input, by: offset)), UInt32(piece), 0)
                offset += piece
                retrieve(output)
            }
        } else if let varispeed {
            var offset = 0
            while offset < frames {
                let room = Int(Double(frames - offset) / rate) + 256
                var consumed = 0
                var produced = 0
                let failure = soxr_process(varispeed, UnsafeRawPointer(output.offsetView(input, by: offset)), frames - offset,
                                           &consumed, UnsafeMutableRawPointer(mutating: output.tail(reserving: room)), room, &produced)
                output.commit(produced)
                producedFrames += produced
                offset += consumed
                if failure != nil || (consumed == 0 && produced == 0) { break }
            }
        }
    }

    /// Rubber Band: feeds its preferred start pad of silence, and notes how many frames to drop.
    private func startIfNeeded(_ output: PlanarFIFO) {
        guard !started else { return }
        started = true
        if let rubberBand {
            rubberband_set_time_ratio(rubberBand, 1 / rate)
            rubberband_set_pitch_scale(rubberBand, pow(2, cents / 1200))
            var pad = Int(rubberband_get_preferred_start_pad(rubberBand))
            let zeroPlanes = UnsafeRawPointer(silence.head()).assumingMemoryBound(to: UnsafePointer<Float>.self)
            while pad > 0 {
                let piece = min(pad, Self.maximumProcessFrames)
                rubberband_process(rubberBand, optionalPlanes(zeroPlanes), UInt32(piece), 0)
                pad -= piece
            }
            dropFrames = Int(rubberband_get_start_delay(rubberBand))
        }
        if let varispeed { soxr_set_io_ratio(varispeed, rate, 0) }
    }

    /// Moves what Rubber Band has ready into `output`, dropping its start delay.
    private func retrieve(_ output: PlanarFIFO) {
        guard let rubberBand else { return }
        while true {
            let available = Int(rubberband_available(rubberBand))
            if available <= 0 { return }
            let got = Int(rubberband_retrieve(rubberBand, optionalPlanes(output.tail(reserving: available)), UInt32(available)))
            if got == 0 { return }
            output.commit(got)
            let dropped = min(dropFrames, got)
            if dropped > 0 {
                // The stretcher's delay sits at the start of what it gives: take it out of the tail just written.
                let kept = got - dropped
                let tail = output.tail(reserving: 0)
                for c in 0..<channelCount {
                    let base = tail[c] - got
                    base.update(from: base + dropped, count: kept)
                }
                output.dropLast(dropped)
                dropFrames -= dropped
            }
            producedFrames += got - dropped
        }
    }

    /// Output frames the input so far calls for that have not come out yet (in the stretcher's window).
    var owedFrames: Int { max(0, Int(expectedFrames.rounded()) - producedFrames) }

    func drain(into output: PlanarFIFO) {
        guard started else { return }
        if let rubberBand {
            // Silence pushes the last frames through the stretcher's window (a final block
            // would end the stream on the spectral engine before its window has been emptied).
            let zeros = UnsafeRawPointer(silence.head()).assumingMemoryBound(to: UnsafePointer<Float>.self)
            let target = Int(expectedFrames.rounded())
            var blocks = 0
            while producedFrames < target && blocks < 64 {
                rubberband_process(rubberBand, optionalPlanes(zeros), UInt32(Self.maximumProcessFrames), 0)
                retrieve(output)
                blocks += 1
            }
        } else if let varispeed {
            while true {
                let room = 4096
                var produced = 0
                let failure = soxr_process(varispeed, nil, 0, nil, UnsafeMutableRawPointer(mutating: output.tail(reserving: room)),
                                           room, &produced)
                output.commit(produced)
                producedFrames += produced
                if failure != nil || produced == 0 { break }
            }
        }
        // The stream's length is its source length over the rate, to the frame: the stretcher's
        // window tail beyond it is dropped, a shortfall is silence.
        let target = Int(expectedFrames.rounded())
        if producedFrames > target {
            output.dropLast(min(producedFrames - target, output.count))
        } else if producedFrames < target {
            output.appendSilence(target - producedFrames)
        }
        reset()
    }

    func reset() {
        if let rubberBand { rubberband_reset(rubberBand) }
        if let varispeed { soxr_clear(varispeed) }
        started = false
        dropFrames = 0
        expectedFrames = 0
        producedFrames = 0
    }
}

/// Channel pointers as the C API of Rubber Band spells them (`const float *const *`).
private func optionalPlanes(_ planes: UnsafePointer<UnsafePointer<Float>>) -> UnsafePointer<UnsafePointer<Float>?> {
    UnsafeRawPointer(planes).assumingMemoryBound(to: UnsafePointer<Float>?.self)
}

private func optionalPlanes(_ planes: UnsafePointer<UnsafeMutablePointer<Float>>) -> UnsafePointer<UnsafeMutablePointer<Float>?> {
    UnsafeRawPointer(planes).assumingMemoryBound(to: UnsafeMutablePointer<Float>?.self)
}
