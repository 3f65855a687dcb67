import CSoxr

/// Sample-rate conversion with libsoxr (high quality: 20-bit precision,
/// linear phase), planar Float32 in and out. Used on queue threads when a
/// queue's sample rate differs from the JACK server's; never in realtime.
public final class Resampler: @unchecked Sendable {
    public let inputRate: Double
    public let outputRate: Double
    public let channelCount: Int
    private let soxr: soxr_t

    /// Creates a converter; throws `.unsupportedFormat` if libsoxr refuses the rates.
    /// `recipe` and `flags` are soxr_quality_spec's (SOXR_HQ, linear phase unless told).
    public init(inputRate: Double, outputRate: Double, channelCount: Int, recipe: UInt = 4 /* SOXR_HQ */, flags: UInt = 0) throws {
        self.inputRate = inputRate
        self.outputRate = outputRate
        self.channelCount = channelCount
        var io = soxr_io_spec(SOXR_FLOAT32_S, SOXR_FLOAT32_S)
        var quality = soxr_quality_spec(recipe, flags)
        var error: soxr_error_t? = nil
        guard let created = soxr_create(inputRate, outputRate, UInt32(channelCount), &error, &io, &quality, nil),
              error == nil
        else {
            let reason = error.map { String(cString: $0) } ?? "soxr_create failed"
            throw QueueError.unsupportedFormat("resampling \(inputRate) Hz to \(outputRate) Hz: \(reason)")
        }
        soxr = created
    }

    deinit { soxr_delete(soxr) }

    /// Converts up to `inputFrames` frames; returns (frames consumed, frames produced).
    /// Pass `input == nil` to flush the converter's tail at the end of the stream.
    public func process(
        input: UnsafePointer<UnsafePointer<Float>>?, inputFrames: Int,
        output: UnsafePointer<UnsafeMutablePointer<Float>>, outputCapacity: Int
    ) -> (consumed: Int, produced: Int) {
        var consumed = 0
        var produced = 0
        let result = soxr_process(
            soxr, input.map { UnsafeRawPointer($0) }, input == nil ? 0 : inputFrames, &consumed,
            UnsafeMutableRawPointer(mutating: output), outputCapacity, &produced)
        if result != nil { return (0, 0) }
        return (consumed, produced)
    }

    /// The converter's delay in output frames.
    public var delay: Double { soxr_delay(soxr) }

    /// Forgets all state, ready for a new signal (Reset, Stop).
    public func reset() { soxr_clear(soxr) }
}
