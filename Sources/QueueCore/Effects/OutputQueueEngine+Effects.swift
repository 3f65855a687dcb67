// An output queue's time/pitch unit and processing tap: the public controls, and the queue
// thread's steps between decoding and the ring (called from OutputQueueEngine).

extension OutputQueueEngine {
    // MARK: Time/pitch (kAudioQueueProperty_EnableTimePitch and friends)

    /// kAudioQueueProperty_EnableTimePitch: whether the time/pitch unit is in the chain.
    public var timePitchEnabled: Bool { effects.lock.withLock { effects.timePitchEnabled } }

    /// kAudioQueueProperty_TimePitchAlgorithm.
    public var timePitchAlgorithm: TimePitchAlgorithm { effects.lock.withLock { effects.algorithm } }

    /// Inserts or removes the time/pitch unit, or changes its algorithm. Only while stopped
    /// (`.invalidRunState` otherwise), as Apple's queue requires.
    public func setTimePitch(enabled: Bool, algorithm: TimePitchAlgorithm) throws {
        _ = try lock.withLock { try $0.life.handle(.reconfigure("time/pitch changes only while stopped")) }
        try effects.setTimePitch(enabled: enabled, algorithm: algorithm)
    }

    /// kAudioQueueProperty_TimePitchBypass: the time/pitch unit passes the audio through untouched.
    public var timePitchBypass: Bool {
        get { effects.bypass }
        set { effects.bypass = newValue }
    }

    /// kAudioQueueParam_PlayRate's range, as Apple documents it.
    public static let playRateRange: ClosedRange<Float> = 0.5...2

    /// kAudioQueueParam_Pitch's range in cents, as Apple documents it.
    public static let pitchRange: ClosedRange<Float> = -2400...2400

    /// kAudioQueueParam_PlayRate, within `playRateRange`. Takes effect on the next frames decoded.
    public var playRate: Float { effects.playRate }

    /// kAudioQueueParam_Pitch in cents, within `pitchRange`; the spectral algorithm only.
    public var pitch: Float { effects.pitch }

    /// Sets PlayRate. A value outside `playRateRange` (or NaN) is `.invalidParameter`
    /// (kAudio_ParamError) and the rate stays as it was: the same rule as for a buffer's event.
    public func setPlayRate(_ rate: Float) throws {
        effects.playRate = try Self.checked(rate, in: Self.playRateRange, "play rate")
    }

    /// Sets Pitch (cents). Outside `pitchRange` (or NaN): `.invalidParameter`, the pitch unchanged.
    public func setPitch(_ cents: Float) throws {
        effects.pitch = try Self.checked(cents, in: Self.pitchRange, "pitch (cents)")
    }

    /// `value` if `range` holds it; `.invalidParameter` (kAudio_ParamError) naming it otherwise.
    public static func checked(_ value: Float, in range: ClosedRange<Float>, _ name: String) throws -> Float {
        guard range.contains(value) else { throw QueueError.invalidParameter("\(name) \(value) is outside \(range)") }
        return value
    }

    /// Applies a buffer's PlayRate or Pitch event as its first frame is decoded; false for other parameters.
    func applyEffectsParameter(_ change: ParameterChange) -> Bool {
        switch change.parameter {
        case .playRate: effects.playRate = change.value
        case .pitch: effects.pitch = change.value
        case .volume, .pan, .volumeRampTime: return false
        }
        return true
    }

    // MARK: Processing taps

    /// Installs a processing tap (AudioQueueProcessingTapNew); only while stopped, one per queue.
    /// - Throws: `.invalidRunState` unless stopped, `.tooManyTaps` if the queue has one,
    ///   `.invalidParameter` unless exactly one of PreEffects and PostEffects is set.
    public func installTap(flags: ProcessingTap.Flags, callback: @escaping ProcessingTap.Callback) throws -> ProcessingTap {
        try ProcessingTap.validate(flags)
        try checkTapChange()
        let tap = ProcessingTap(flags: flags, channelCount: format.channelCount, maximumFrames: chunkFrames, callback: callback)
        try effects.install(tap)
        return tap
    }

    /// Removes a tap (AudioQueueProcessingTapDispose); only while stopped, never from its callback.
    public func removeTap(_ tap: ProcessingTap) throws {
        try checkTapChange(removing: tap)
        guard effects.remove(tap) else { throw QueueError.invalidParameter("not this queue's tap") }
    }

    // MARK: The queue thread's steps

    /// Device frames the ring holds at most while effects are on: a change of rate or pitch
    /// is heard this soon after it is made (the decode ring would otherwise delay it by its
    /// size). 8192 frames (170 ms at 48 kHz) keeps a loaded machine's queue thread ahead.
    var effectsFillLimit: Int {
        min(realtime.pointee.ring.capacity, max(8 * device.periodFrames, 8192))
    }

    /// Whether the chain may take another chunk: nothing pending, the ring below the fill limit.
    func effectsHaveRoom() -> Bool {
        guard effects.pending.count == 0 else { return false }
        guard realtime.pointee.ring.readableFrames() < effectsFillLimit else { return false }
        return realtime.pointee.ring.writableFrames() >= (resampler == nil ? 1 : resampleCapacity)
    }

    /// Moves pending frames into the ring (through the resampler) as far as the fill limit
    /// allows; true when nothing is left pending.
    func releaseEffects() -> Bool {
        let pending = effects.pending
        while pending.count > 0 {
            let readable = realtime.pointee.ring.readableFrames()
            guard readable < effectsFillLimit else { return false }
            var piece = min(chunkFrames, pending.count)
            if resampler == nil {
                piece = min(piece, realtime.pointee.ring.writableFrames(), effectsFillLimit - readable)
                if piece <= 0 { return false }
            } else if realtime.pointee.ring.writableFrames() < resampleCapacity {
                return false
            }
            writeToRing(pending.head(), frames: piece)
            effects.released(piece)
        }
        return true
    }

    /// Flush or the end of the stream: the stages' tails go into the ring; true when all are in.
    func drainEffects(endOfStream: Bool) -> Bool {
        if effects.hasInput { effects.drain(endOfStream: endOfStream) }
        return releaseEffects()
    }
}
