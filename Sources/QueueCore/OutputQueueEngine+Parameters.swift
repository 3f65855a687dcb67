import Synchronization

// An output queue's volume, pan and volume ramp, and the realtime events a buffer's parameter changes become.

extension OutputQueueEngine {
    // MARK: Parameters

    /// Volume 0...1 (applied next cycle, ramped by the ramp time).
    public var volume: Float {
        get { Float(bitPattern: realtime.pointee.requestedVolume.load(ordering: .relaxed)) }
        set { realtime.pointee.requestedVolume.store(min(max(newValue, 0), 1).bitPattern, ordering: .relaxed) }
    }

    /// Pan -1...1 (balance for stereo, position for mono).
    public var pan: Float {
        get { Float(bitPattern: realtime.pointee.requestedPan.load(ordering: .relaxed)) }
        set { realtime.pointee.requestedPan.store(min(max(newValue, -1), 1).bitPattern, ordering: .relaxed) }
    }

    /// The longest volume ramp, in seconds; longer (or infinite) ramp times are clamped to it.
    public static let maximumVolumeRampTime: Float = 86_400

    /// Seconds over which later volume changes ramp (0...`maximumVolumeRampTime`; NaN counts as 0).
    public var volumeRampTime: Float {
        get { Float(Double(realtime.pointee.volumeRampFrames.load(ordering: .relaxed)) / device.sampleRate) }
        set {
            let seconds = newValue.isNaN ? 0 : min(max(newValue, 0), Self.maximumVolumeRampTime)
            let frames = Int((Double(seconds) * device.sampleRate).rounded())
            realtime.pointee.volumeRampFrames.store(frames, ordering: .relaxed)
        }
    }
}

extension OutputQueueEngine {
    /// The realtime event that applies `change` at ring position `position`; nil for the
    /// parameters the queue thread applies itself (PlayRate and Pitch, in the time/pitch stage).
    func realtimeEvent(for change: ParameterChange, at position: Int) -> ParameterEvent? {
        switch change.parameter {
        case .volume: return ParameterEvent(kind: .volume, value: change.value, position: position)
        case .pan: return ParameterEvent(kind: .pan, value: change.value, position: position)
        case .volumeRampTime:
            let seconds = change.value.isNaN ? 0 : min(max(change.value, 0), Self.maximumVolumeRampTime)
            let frames = (Double(seconds) * device.sampleRate).rounded()
            return ParameterEvent(kind: .volumeRampFrames, value: Float(frames), position: position)
        case .playRate, .pitch: return nil
        }
    }
}
