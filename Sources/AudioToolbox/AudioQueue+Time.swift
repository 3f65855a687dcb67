import CAudioToolbox
import QueueCore

// Timelines, queue time and device time.

@_cdecl("AudioQueueCreateTimeline")
public func audioQueueCreateTimeline(_ inAQ: AudioQueueRef?, _ outTimeline: UnsafeMutablePointer<AudioQueueTimelineRef?>?) -> OSStatus {
    withStatus {
        let object = try AudioQueueRegistry.object(inAQ)
        guard let outTimeline else { throw AudioToolboxError(kAudio_ParamError, "NULL outTimeline") }
        let timeline = AudioQueueObject.Timeline(seen: object.engine.discontinuityCount)
        let key = Unmanaged.passUnretained(timeline).toOpaque()
        object.state.withLock { $0.timelines[key] = timeline }
        outTimeline.pointee = OpaquePointer(key)
    }
}

@_cdecl("AudioQueueDisposeTimeline")
public func audioQueueDisposeTimeline(_ inAQ: AudioQueueRef?, _ inTimeline: AudioQueueTimelineRef?) -> OSStatus {
    withStatus {
        let object = try AudioQueueRegistry.object(inAQ)
        guard let inTimeline else { throw AudioToolboxError(kAudio_ParamError, "NULL timeline") }
        let removed = object.state.withLock { $0.timelines.removeValue(forKey: UnsafeMutableRawPointer(inTimeline)) }
        guard removed != nil else { throw AudioToolboxError(kAudio_ParamError, "not a timeline of this queue") }
    }
}

@_cdecl("AudioQueueGetCurrentTime")
public func audioQueueGetCurrentTime(_ inAQ: AudioQueueRef?, _ inTimeline: AudioQueueTimelineRef?,
                              _ outTimeStamp: UnsafeMutablePointer<AudioTimeStamp>?,
                              _ outTimelineDiscontinuity: UnsafeMutablePointer<UInt8>?) -> OSStatus {
    withStatus {
        let object = try AudioQueueRegistry.object(inAQ)
        if let inTimeline {
            let count = object.engine.discontinuityCount
            let discontinuity: Bool = try object.state.withLock {
                guard let timeline = $0.timelines[UnsafeMutableRawPointer(inTimeline)] else {
                    throw AudioToolboxError(kAudio_ParamError, "not a timeline of this queue")
                }
                defer { timeline.seen = count }
                return count != timeline.seen
            }
            outTimelineDiscontinuity?.pointee = discontinuity ? 1 : 0
        } else {
            outTimelineDiscontinuity?.pointee = 0
        }
        if let outTimeStamp {
            let now = object.engine.currentQueueTime()
            var time = AudioTimeStamp()
            time.mSampleTime = now.sampleTime
            time.mHostTime = now.hostTime
            time.mRateScalar = 1
            time.mFlags = [.sampleTimeValid, .hostTimeValid, .rateScalarValid]
            outTimeStamp.pointee = time
        }
    }
}

@_cdecl("AudioQueueDeviceGetCurrentTime")
public func audioQueueDeviceGetCurrentTime(_ inAQ: AudioQueueRef?, _ outTimeStamp: UnsafeMutablePointer<AudioTimeStamp>?) -> OSStatus {
    withStatus {
        let object = try AudioQueueRegistry.object(inAQ)
        guard let outTimeStamp else { throw AudioToolboxError(kAudio_ParamError, "NULL outTimeStamp") }
        // With no server still, the device is not running: only mHostTime is valid (the reference).
        try? object.requireDevice()
        let now = object.engine.deviceTime()
        var time = AudioTimeStamp()
        time.mHostTime = now.hostTime
        time.mFlags = .hostTimeValid
        if now.valid {
            time.mSampleTime = Double(now.frame)
            time.mRateScalar = 1
            time.mFlags.insert([.sampleTimeValid, .rateScalarValid])
        }
        outTimeStamp.pointee = time
    }
}

@_cdecl("AudioQueueDeviceTranslateTime")
public func audioQueueDeviceTranslateTime(_ inAQ: AudioQueueRef?, _ inTime: UnsafePointer<AudioTimeStamp>?,
                                   _ outTime: UnsafeMutablePointer<AudioTimeStamp>?) -> OSStatus {
    withStatus {
        let object = try AudioQueueRegistry.object(inAQ)
        guard let inTime, let outTime else { throw AudioToolboxError(kAudio_ParamError, "NULL time stamp") }
        try object.requireRunningDevice()
        let source = inTime.pointee
        var time = AudioTimeStamp()
        if source.mFlags.contains(.sampleTimeValid) {
            let frame = try wholeFrames(source.mSampleTime, "sample time", rounding: .down)
            time.mSampleTime = source.mSampleTime
            time.mHostTime = object.engine.device.hostTime(forFrame: frame)
        } else if source.mFlags.contains(.hostTimeValid) {
            time.mHostTime = source.mHostTime
            time.mSampleTime = Double(object.engine.device.frame(forHostTime: source.mHostTime))
        } else {
            throw AudioToolboxError(kAudio_ParamError, "the time stamp has neither a sample nor a host time")
        }
        time.mRateScalar = 1
        time.mFlags = [.sampleTimeValid, .hostTimeValid, .rateScalarValid]
        outTime.pointee = time
    }
}

@_cdecl("AudioQueueDeviceGetNearestStartTime")
public func audioQueueDeviceGetNearestStartTime(_ inAQ: AudioQueueRef?, _ ioRequestedStartTime: UnsafeMutablePointer<AudioTimeStamp>?,
                                         _ inFlags: UInt32) -> OSStatus {
    withStatus {
        let object = try AudioQueueRegistry.object(inAQ)
        guard let ioRequestedStartTime else { throw AudioToolboxError(kAudio_ParamError, "NULL time stamp") }
        try object.requireDevice()
        let requested = try deviceFrame(ioRequestedStartTime.pointee, engine: object.engine) ?? object.engine.device.currentFrame()
        let frame = try object.engine.nearestStartFrame(atOrAfter: requested)
        var time = AudioTimeStamp()
        time.mSampleTime = Double(frame)
        time.mHostTime = object.engine.device.hostTime(forFrame: frame)
        time.mRateScalar = 1
        time.mFlags = [.sampleTimeValid, .hostTimeValid, .rateScalarValid]
        ioRequestedStartTime.pointee = time
    }
}
