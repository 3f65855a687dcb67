import CAudioToolbox
import QueueCore

// Buffers: allocate, free, enqueue (with parameters), and the run controls.

@_cdecl("AudioQueueAllocateBuffer")
public func audioQueueAllocateBuffer(_ inAQ: AudioQueueRef?, _ inBufferByteSize: UInt32,
                              _ outBuffer: UnsafeMutablePointer<AudioQueueBufferRef?>?) -> OSStatus {
    audioQueueAllocateBufferWithPacketDescriptions(inAQ, inBufferByteSize, 0, outBuffer)
}

@_cdecl("AudioQueueAllocateBufferWithPacketDescriptions")
public func audioQueueAllocateBufferWithPacketDescriptions(
    _ inAQ: AudioQueueRef?, _ inBufferByteSize: UInt32, _ inNumberPacketDescriptions: UInt32,
    _ outBuffer: UnsafeMutablePointer<AudioQueueBufferRef?>?
) -> OSStatus {
    withStatus {
        guard let outBuffer else { throw AudioToolboxError(kAudio_ParamError, "NULL outBuffer") }
        outBuffer.pointee = nil
        let object = try AudioQueueRegistry.object(inAQ)
        outBuffer.pointee = try object.allocateBuffer(bytes: inBufferByteSize, packetDescriptions: inNumberPacketDescriptions)
    }
}

@_cdecl("AudioQueueFreeBuffer")
public func audioQueueFreeBuffer(_ inAQ: AudioQueueRef?, _ inBuffer: AudioQueueBufferRef?) -> OSStatus {
    withStatus {
        guard let inBuffer else { throw AudioToolboxError(kAudio_ParamError, "NULL buffer") }
        try AudioQueueRegistry.object(inAQ).freeBuffer(inBuffer)
    }
}

@_cdecl("AudioQueueEnqueueBuffer")
public func audioQueueEnqueueBuffer(_ inAQ: AudioQueueRef?, _ inBuffer: AudioQueueBufferRef?, _ inNumPacketDescs: UInt32,
                             _ inPacketDescs: UnsafePointer<AudioStreamPacketDescription>?) -> OSStatus {
    withStatus {
        let object = try AudioQueueRegistry.object(inAQ)
        guard let inBuffer else { throw QueueError.invalidBuffer }
        let handle = UnsafeMutableRawPointer(inBuffer)
        if let output = object.output {
            // Read only once the engine knows the buffer (it may have been freed).
            try output.enqueue(handle, byteCount: Int(inBuffer.pointee.mAudioDataByteSize)) {
                try packetDescriptions(inNumPacketDescs, inPacketDescs, buffer: inBuffer)
            }
        } else if let input = object.input {
            try input.enqueue(handle)
        }
    }
}

@_cdecl("AudioQueueEnqueueBufferWithParameters")
public func audioQueueEnqueueBufferWithParameters(
    _ inAQ: AudioQueueRef?, _ inBuffer: AudioQueueBufferRef?, _ inNumPacketDescs: UInt32,
    _ inPacketDescs: UnsafePointer<AudioStreamPacketDescription>?, _ inTrimFramesAtStart: UInt32,
    _ inTrimFramesAtEnd: UInt32, _ inNumParamValues: UInt32, _ inParamValues: UnsafePointer<AudioQueueParameterEvent>?,
    _ inStartTime: UnsafePointer<AudioTimeStamp>?, _ outActualStartTime: UnsafeMutablePointer<AudioTimeStamp>?
) -> OSStatus {
    withStatus {
        let object = try AudioQueueRegistry.object(inAQ)
        guard let output = object.output else { throw QueueError.invalidQueueType }
        guard let inBuffer else { throw QueueError.invalidBuffer }
        var changes: [ParameterChange] = []
        if inNumParamValues > 0 {
            guard let inParamValues else { throw AudioToolboxError(kAudio_ParamError, "NULL parameter events") }
            for event in UnsafeBufferPointer(start: inParamValues, count: Int(inNumParamValues)) {
                guard event.mValue.isFinite else {
                    throw AudioToolboxError(kAudio_ParamError, "parameter \(event.mID) value \(event.mValue)")
                }
                changes.append(try scheduledChange(event))
            }
            // A ramp time applies to the volume change of the same buffer: it goes first.
            changes.sort { $0.parameter == .volumeRampTime && $1.parameter != .volumeRampTime }
        }
        var start: Int64?
        if let inStartTime {
            let time = inStartTime.pointee
            guard time.mFlags.contains(.sampleTimeValid) else {
                throw AudioToolboxError(kAudio_ParamError, "buffer start times are queue sample times (mSampleTime)")
            }
            guard time.mSampleTime >= 0 else { throw AudioToolboxError(kAudio_ParamError, "start time \(time.mSampleTime)") }
            start = try wholeFrames(time.mSampleTime, "start time", rounding: .toNearestOrAwayFromZero)
        }
        let actual = try output.enqueue(
            UnsafeMutableRawPointer(inBuffer), byteCount: Int(inBuffer.pointee.mAudioDataByteSize),
            trimStart: Int(inTrimFramesAtStart), trimEnd: Int(inTrimFramesAtEnd), parameters: changes, startTime: start
        ) {
            try packetDescriptions(inNumPacketDescs, inPacketDescs, buffer: inBuffer)
        }
        if let outActualStartTime {
            var time = AudioTimeStamp()
            time.mSampleTime = Double(actual)
            time.mFlags = .sampleTimeValid
            if let host = output.hostTime(forQueueTime: Double(actual)) {
                time.mHostTime = host
                time.mFlags.insert(.hostTimeValid)
            }
            outActualStartTime.pointee = time
        }
    }
}

/// The engine's change for a parameter event of EnqueueBufferWithParameters; out-of-range
/// values are kAudio_ParamError, parameters a queue does not have kAudioQueueErr_InvalidParameter.
private func scheduledChange(_ event: AudioQueueParameterEvent) throws -> ParameterChange {
    func checked(_ range: ClosedRange<Float>, _ name: String) throws -> Float {
        try OutputQueueEngine.checked(event.mValue, in: range, name)
    }
    switch event.mID {
    case kAudioQueueParam_Volume: return ParameterChange(.volume, event.mValue)
    case kAudioQueueParam_Pan: return ParameterChange(.pan, event.mValue)
    case kAudioQueueParam_VolumeRampTime:
        return ParameterChange(.volumeRampTime, try checked(0...OutputQueueEngine.maximumVolumeRampTime, "volume ramp time"))
    case kAudioQueueParam_PlayRate: return ParameterChange(.playRate, try checked(OutputQueueEngine.playRateRange, "play rate"))
    case kAudioQueueParam_Pitch: return ParameterChange(.pitch, try checked(OutputQueueEngine.pitchRange, "pitch (cents)"))
    default: throw AudioToolboxError(kAudioQueueErr_InvalidParameter, "parameter \(event.mID) can't be scheduled")
    }
}

// MARK: Run controls

/// The largest sample time a time stamp may name: 2^48 frames, 185 years at 48 kHz. Beyond it,
/// frame arithmetic (differences, host-time conversion in nanoseconds) could overflow 64 bits.
let maximumSampleTime = Double(Int64(1) << 48)

/// A time stamp's `mSampleTime` as whole frames; kAudio_ParamError for NaN, ±inf and
/// anything beyond ±2^48 (no device or queue time gets there).
func wholeFrames(_ sampleTime: Double, _ what: String, rounding rule: FloatingPointRoundingRule) throws -> Int64 {
    guard sampleTime.isFinite, abs(sampleTime) <= maximumSampleTime else {
        throw AudioToolboxError(kAudio_ParamError, "\(what) \(sampleTime) is not a frame time")
    }
    return Int64(sampleTime.rounded(rule))
}

/// The device frame an AudioTimeStamp names: mSampleTime (device time), or mHostTime when only it is valid.
func deviceFrame(_ time: AudioTimeStamp, engine: QueueEngine) throws -> Int64? {
    if time.mFlags.contains(.sampleTimeValid) {
        let frame = try wholeFrames(time.mSampleTime, "start time", rounding: .down)
        // A frame more than 2^31 away from now is a 32-bit JACK frame time (from another
        // process, or jack_frame_time): take the value congruent to it nearest now.
        let now = engine.device.currentFrame()
        if abs(frame - now) >= 1 << 31 {
            return now + Int64(Int32(bitPattern: UInt32(truncatingIfNeeded: frame) &- UInt32(truncatingIfNeeded: now)))
        }
        return frame
    }
    if time.mFlags.contains(.hostTimeValid) {
        return engine.device.frame(forHostTime: time.mHostTime)
    }
    return nil
}

@_cdecl("AudioQueueStart")
public func audioQueueStart(_ inAQ: AudioQueueRef?, _ inStartTime: UnsafePointer<AudioTimeStamp>?) -> OSStatus {
    withStatus {
        let object = try AudioQueueRegistry.object(inAQ)
        try object.checkCodecAccess()
        try object.requireDevice()
        let frame = try inStartTime.flatMap { try deviceFrame($0.pointee, engine: object.engine) }
        try object.engine.start(atDeviceFrame: frame)
    }
}

@_cdecl("AudioQueuePrime")
public func audioQueuePrime(_ inAQ: AudioQueueRef?, _ inNumberOfFramesToPrepare: UInt32,
                     _ outNumberOfFramesPrepared: UnsafeMutablePointer<UInt32>?) -> OSStatus {
    withStatus {
        let object = try AudioQueueRegistry.object(inAQ)
        guard let output = object.output else { throw QueueError.invalidQueueType }
        try object.checkCodecAccess()
        try object.requireDevice()
        let prepared = try output.prime(frames: Int(inNumberOfFramesToPrepare))
        outNumberOfFramesPrepared?.pointee = UInt32(clamping: prepared)
    }
}

@_cdecl("AudioQueueStop")
public func audioQueueStop(_ inAQ: AudioQueueRef?, _ inImmediate: UInt8) -> OSStatus {
    withStatus { try AudioQueueRegistry.object(inAQ).engine.stop(immediate: inImmediate != 0) }
}

@_cdecl("AudioQueuePause")
public func audioQueuePause(_ inAQ: AudioQueueRef?) -> OSStatus {
    withStatus { try AudioQueueRegistry.object(inAQ).engine.pause() }
}

@_cdecl("AudioQueueFlush")
public func audioQueueFlush(_ inAQ: AudioQueueRef?) -> OSStatus {
    withStatus { try AudioQueueRegistry.object(inAQ).engine.flush() }
}

@_cdecl("AudioQueueReset")
public func audioQueueReset(_ inAQ: AudioQueueRef?) -> OSStatus {
    withStatus { try AudioQueueRegistry.object(inAQ).engine.reset() }
}
