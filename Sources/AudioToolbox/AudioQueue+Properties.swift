import CAudioToolbox
import Glibc
import QueueCore

// Properties, property listeners and parameters.

/// Reads and writes a property value of a fixed-size type in a caller's buffer.
struct PropertyIO {
    let data: UnsafeMutableRawPointer?
    let size: UnsafeMutablePointer<UInt32>
    /// The result code for a buffer of the wrong size (the queue's, or a converter's '!siz').
    var sizeError = kAudioQueueErr_InvalidPropertySize

    /// Stores `value`; '!siz'-like kAudioQueueErr_InvalidPropertySize if the buffer is too small.
    func put<T: BitwiseCopyable>(_ value: T) throws {
        let needed = UInt32(MemoryLayout<T>.size)
        guard size.pointee >= needed else {
            throw AudioToolboxError(sizeError, "the value is \(needed) bytes")
        }
        guard let data else { throw AudioToolboxError(kAudio_ParamError, "NULL outData") }
        data.storeBytes(of: value, as: T.self)
        size.pointee = needed
    }

    /// Stores a variable-size value; kAudioQueueErr_InvalidPropertySize if the buffer is
    /// smaller than the value (nothing is truncated silently).
    func put(bytes: [UInt8]) throws {
        guard let data else {
            if bytes.isEmpty { size.pointee = 0; return }
            throw AudioToolboxError(kAudio_ParamError, "NULL outData")
        }
        guard Int(size.pointee) >= bytes.count else {
            throw AudioToolboxError(sizeError, "the value is \(bytes.count) bytes, not \(size.pointee)")
        }
        bytes.withUnsafeBytes { data.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        size.pointee = UInt32(bytes.count)
    }
}

/// A value given to SetProperty, of a fixed-size type.
func value<T: BitwiseCopyable>(_ data: UnsafeRawPointer?, _ size: UInt32, as: T.Type,
                               sizeError: OSStatus = kAudioQueueErr_InvalidPropertySize) throws -> T {
    guard size == UInt32(MemoryLayout<T>.size) else {
        throw AudioToolboxError(sizeError, "the value is \(MemoryLayout<T>.size) bytes, not \(size)")
    }
    guard let data else { throw AudioToolboxError(kAudio_ParamError, "NULL inData") }
    return data.loadUnaligned(as: T.self)
}

/// A CFString the caller owns (+1), made from a Swift string.
private func retainedCFString(_ text: String) -> OpaquePointer? {
    guard let string = CFStringCreateWithCString(nil, text, CFStringEncoding(kCFStringEncodingUTF8)) else { return nil }
    return OpaquePointer(Unmanaged.passRetained(string).toOpaque())
}

/// The text of a caller's CFStringRef.
private func string(fromCFString pointer: OpaquePointer?) throws -> String {
    guard let pointer else { throw AudioToolboxError(kAudioQueueErr_InvalidPropertyValue, "NULL CFString") }
    let string = Unmanaged<CFString>.fromOpaque(UnsafeRawPointer(pointer)).takeUnretainedValue()
    var buffer = [CChar](repeating: 0, count: 4096)
    guard CFStringGetCString(string, &buffer, buffer.count, CFStringEncoding(kCFStringEncodingUTF8)) else {
        throw AudioToolboxError(kAudioQueueErr_InvalidPropertyValue, "the string is too long")
    }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// The default channel layout for `channels` channels (mono, stereo, discrete).
func defaultChannelLayout(channels: UInt32) -> [UInt8] {
    var layout = AudioChannelLayout()
    switch channels {
    case 1: layout.mChannelLayoutTag = kAudioChannelLayoutTag_Mono
    case 2: layout.mChannelLayoutTag = kAudioChannelLayoutTag_Stereo
    default: layout.mChannelLayoutTag = kAudioChannelLayoutTag_DiscreteInOrder | channels
    }
    return withUnsafeBytes(of: layout) { Array($0.prefix(12)) }
}

/// Channels a layout describes; nil if it can't say.
func channelCount(ofLayout bytes: UnsafeRawPointer, size: Int) -> UInt32? {
    guard size >= 12 else { return nil }
    let tag = bytes.loadUnaligned(as: AudioChannelLayoutTag.self)
    let bitmap = bytes.loadUnaligned(fromByteOffset: 4, as: UInt32.self)
    let descriptions = bytes.loadUnaligned(fromByteOffset: 8, as: UInt32.self)
    switch tag {
    case kAudioChannelLayoutTag_UseChannelDescriptions:
        guard size >= 12 + Int(descriptions) * MemoryLayout<AudioChannelDescription>.size else { return nil }
        return descriptions
    case kAudioChannelLayoutTag_UseChannelBitmap: return UInt32(bitmap.nonzeroBitCount)
    default: return tag & 0xFFFF
    }
}

extension AudioQueueObject {
    /// The size of property `id`'s value; throws kAudioQueueErr_InvalidProperty for unknown ones.
    func propertySize(_ id: AudioQueuePropertyID) throws -> UInt32 {
        let channels = UInt32(engine.format.channelCount)
        switch id {
        case kAudioQueueProperty_IsRunning, kAudioQueueDeviceProperty_NumberChannels,
             kAudioQueueProperty_MaximumOutputPacketSize, kAudioQueueProperty_EnableLevelMetering,
             kAudioQueueProperty_ConverterError, kAudioQueueProperty_HardwareCodecPolicy,
             kAudioQueueProperty_JACKPeriodFrames, kAudioQueueProperty_DiscontinuityCount:
            return 4
        case kAudioQueueProperty_DecodeBufferSizeFrames, kAudioQueueProperty_EnableTimePitch,
             kAudioQueueProperty_TimePitchAlgorithm, kAudioQueueProperty_TimePitchBypass:
            guard output != nil else { throw QueueError.invalidQueueType }
            return 4
        case kAudioQueueDeviceProperty_SampleRate, kAudioQueueProperty_StartDeviceFrame: return 8
        case kAudioQueueProperty_LostFrames: return 8
        case kAudioQueueProperty_CaptureBufferSeconds:
            guard input != nil else { throw QueueError.invalidQueueType }
            return 8
        case kAudioQueueProperty_EncoderBitRate:
            guard input != nil else { throw QueueError.invalidQueueType }
            return 4
        case kAudioQueueProperty_CurrentDevice, kAudioQueueProperty_JACKClientName, kAudioQueueProperty_JACKPortNames,
             kAudioQueueProperty_JACKConnectedPorts:
            return UInt32(MemoryLayout<OpaquePointer?>.size)
        // The recording guide: "On Mac OS X v10.5, use the kAudioConverterCurrentInputStreamDescription
        // property instead" of StreamDescription to get a queue's full format: both answer it.
        case kAudioQueueProperty_StreamDescription, kAudioConverterCurrentInputStreamDescription:
            return UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        case kAudioQueueProperty_MagicCookie: return UInt32(magicCookie.count)
        case kAudioQueueProperty_ChannelLayout:
            return UInt32(state.withLock { $0.channelLayout }?.count ?? defaultChannelLayout(channels: channels).count)
        case kAudioQueueProperty_CurrentLevelMeter, kAudioQueueProperty_CurrentLevelMeterDB:
            return channels * UInt32(MemoryLayout<AudioQueueLevelMeterState>.size)
        case kAudioQueueProperty_JACKPortLatency:
            try requireDevice()
            return UInt32(engine.device.portNames.count * MemoryLayout<AudioValueRange>.size)
        case kAudioQueueProperty_RecordUnderrun:
            guard input != nil else { throw QueueError.invalidQueueType }
            return UInt32(MemoryLayout<AudioQueueRecordUnderrunInfo>.size)
        case kAudioQueueProperty_ChannelAssignments: return channelAssignmentsSize
        default:
            throw AudioToolboxError(kAudioQueueErr_InvalidProperty, "property \(fourCharacterCode(id)) is not supported")
        }
    }

    func getProperty(_ id: AudioQueuePropertyID, _ io: PropertyIOArguments) throws {
        let out = PropertyIO(data: io.data, size: io.size)
        _ = try propertySize(id)
        if Self.readingNeedsDevice(id) { try requireDevice() }
        switch id {
        case kAudioQueueProperty_IsRunning: try out.put(UInt32(engine.isRunningValue ? 1 : 0))
        case kAudioQueueDeviceProperty_SampleRate: try out.put(Float64(engine.device.sampleRate))
        case kAudioQueueDeviceProperty_NumberChannels: try out.put(UInt32(engine.connectedDevicePorts.count))
        case kAudioQueueProperty_CurrentDevice, kAudioQueueProperty_JACKClientName, kAudioQueueProperty_JACKPortNames,
             kAudioQueueProperty_JACKConnectedPorts:
            try out.put(retainedCFString(text(id)))
        case kAudioQueueProperty_MagicCookie: try out.put(bytes: magicCookie)
        case kAudioQueueProperty_MaximumOutputPacketSize: try out.put(UInt32(clamping: maximumPacketSize))
        case kAudioQueueProperty_StreamDescription, kAudioConverterCurrentInputStreamDescription: try out.put(format)
        case kAudioQueueProperty_ChannelLayout:
            try out.put(bytes: state.withLock { $0.channelLayout } ?? defaultChannelLayout(channels: format.mChannelsPerFrame))
        case kAudioQueueProperty_EnableLevelMetering: try out.put(UInt32(meteringEnabled ? 1 : 0))
        case kAudioQueueProperty_CurrentLevelMeter, kAudioQueueProperty_CurrentLevelMeterDB:
            guard meteringEnabled else {
                throw AudioToolboxError(kAudioQueueErr_InvalidPropertyValue, "enable kAudioQueueProperty_EnableLevelMetering first")
            }
            let levels = engineLevels()
            let capacity = Int(io.size.pointee) / MemoryLayout<AudioQueueLevelMeterState>.size
            guard capacity >= 1, let data = io.data else {
                throw AudioToolboxError(kAudioQueueErr_InvalidPropertySize, "room for at least one channel")
            }
            let states = data.bindMemory(to: AudioQueueLevelMeterState.self, capacity: capacity)
            let decibels = id == kAudioQueueProperty_CurrentLevelMeterDB
            for (c, level) in levels.prefix(capacity).enumerated() {
                states[c] = decibels
                    ? AudioQueueLevelMeterState(mAveragePower: Self.decibels(level.average), mPeakPower: Self.decibels(level.peak))
                    : AudioQueueLevelMeterState(mAveragePower: level.average, mPeakPower: level.peak)
            }
            io.size.pointee = UInt32(min(capacity, levels.count) * MemoryLayout<AudioQueueLevelMeterState>.size)
        case kAudioQueueProperty_DecodeBufferSizeFrames: try out.put(UInt32(clamping: output!.decodeBufferFrames))
        case kAudioQueueProperty_ConverterError:
            // 'fmt?' (kAudioConverterErr_FormatNotSupported) while the server runs at a rate the converter
            // can't serve; else the codec's last error (0 if none).
            try out.put(UInt32(bitPattern: engine.converterFailed ? kAudioFormatUnsupportedDataFormatError
                                                                  : state.withLock { $0.converterError }))
        case kAudioQueueProperty_ChannelAssignments: try putChannelAssignments(io.data, io.size)
        case kAudioQueueProperty_EnableTimePitch: try out.put(UInt32(output!.timePitchEnabled ? 1 : 0))
        case kAudioQueueProperty_TimePitchAlgorithm: try out.put(timePitchAlgorithmCode(output!.timePitchAlgorithm))
        case kAudioQueueProperty_TimePitchBypass: try out.put(UInt32(output!.timePitchBypass ? 1 : 0))
        case kAudioQueueProperty_HardwareCodecPolicy: try out.put(state.withLock { $0.codecPolicy })
        case kAudioQueueProperty_JACKPortLatency:
            let ranges = (0..<engine.device.portNames.count).map { i -> AudioValueRange in
                let range = engine.device.portLatency(i)
                return AudioValueRange(mMinimum: Double(range.lowerBound), mMaximum: Double(range.upperBound))
            }
            try out.put(bytes: ranges.withUnsafeBytes { Array($0) })
        case kAudioQueueProperty_JACKPeriodFrames: try out.put(UInt32(engine.device.periodFrames))
        case kAudioQueueProperty_StartDeviceFrame: try out.put(Float64(engine.queueTimeOriginFrame ?? 0))
        case kAudioQueueProperty_DiscontinuityCount: try out.put(UInt32(clamping: engine.discontinuityCount))
        case kAudioQueueProperty_LostFrames:
            try out.put(UInt64(engine.lostFrames))
        case kAudioQueueProperty_CaptureBufferSeconds: try out.put(Float64(input!.ringSeconds))
        case kAudioQueueProperty_EncoderBitRate: try out.put(UInt32(clamping: encoder?.bitRate ?? 0))
        case kAudioQueueProperty_RecordUnderrun:
            let info = input!.underrunInfo
            try out.put(AudioQueueRecordUnderrunInfo(
                mStatus: info.eventCount > 0 ? kAudioQueueErr_RecordUnderrun : noErr,
                mEventCount: UInt32(clamping: info.eventCount), mFramesLost: UInt64(max(0, info.framesLost)),
                mLastLossSampleTime: info.lastLossSampleTime))
        default:
            throw AudioToolboxError(kAudioQueueErr_InvalidProperty, "property \(fourCharacterCode(id))")
        }
    }

    func setProperty(_ id: AudioQueuePropertyID, _ data: UnsafeRawPointer?, _ size: UInt32) throws {
        if Self.writingNeedsDevice(id) { try requireDevice() }
        switch id {
        case kAudioQueueProperty_CurrentDevice, kAudioQueueProperty_JACKClientName:
            try setText(id, string(fromCFString: value(data, size, as: OpaquePointer?.self)))
        case kAudioQueueProperty_MagicCookie:
            guard size == 0 || data != nil else { throw AudioToolboxError(kAudio_ParamError, "NULL inData") }
            let bytes = size == 0 ? [] : Array(UnsafeRawBufferPointer(start: data, count: Int(size)))
            try setMagicCookie(bytes)
        case kAudioQueueProperty_ChannelLayout:
            guard let data, size >= 12 else {
                throw AudioToolboxError(kAudioQueueErr_InvalidPropertySize, "an AudioChannelLayout is at least 12 bytes")
            }
            guard let count = channelCount(ofLayout: data, size: Int(size)), count == format.mChannelsPerFrame else {
                throw AudioToolboxError(kAudioQueueErr_InvalidPropertyValue,
                                        "the layout's channels must match the format's \(format.mChannelsPerFrame)")
            }
            state.withLock { $0.channelLayout = Array(UnsafeRawBufferPointer(start: data, count: Int(size))) }
            applyChannelLayoutToPorts()
        case kAudioQueueProperty_EnableLevelMetering:
            let enabled = try value(data, size, as: UInt32.self) != 0
            engine.meteringEnabled = enabled
        case kAudioQueueProperty_DecodeBufferSizeFrames:
            guard let output else { throw QueueError.invalidQueueType }
            try output.setDecodeBufferFrames(Int(try value(data, size, as: UInt32.self)))
        case kAudioQueueProperty_EnableTimePitch:
            guard let output else { throw QueueError.invalidQueueType }
            let enabled = try value(data, size, as: UInt32.self) != 0
            try output.setTimePitch(enabled: enabled, algorithm: output.timePitchAlgorithm)
        case kAudioQueueProperty_TimePitchAlgorithm:
            guard let output else { throw QueueError.invalidQueueType }
            let algorithm = try timePitchAlgorithm(try value(data, size, as: UInt32.self))
            try output.setTimePitch(enabled: output.timePitchEnabled, algorithm: algorithm)
        case kAudioQueueProperty_TimePitchBypass:
            guard let output else { throw QueueError.invalidQueueType }
            output.timePitchBypass = try value(data, size, as: UInt32.self) != 0
        case kAudioQueueProperty_HardwareCodecPolicy:
            let policy = try value(data, size, as: UInt32.self)
            guard policy <= kAudioQueueHardwareCodecPolicy_PreferHardware else {
                throw AudioToolboxError(kAudioQueueErr_InvalidPropertyValue, "codec policy \(policy)")
            }
            guard engine.state == .stopped else { throw QueueError.invalidRunState("set the codec policy while stopped") }
            state.withLock { $0.codecPolicy = policy }
        case kAudioQueueProperty_CaptureBufferSeconds:
            guard let input else { throw QueueError.invalidQueueType }
            try input.setRingSeconds(try value(data, size, as: Float64.self))
        case kAudioQueueProperty_EncoderBitRate:
            guard input != nil else { throw QueueError.invalidQueueType }
            try setEncoderBitRate(Int(try value(data, size, as: UInt32.self)))
        case kAudioQueueProperty_ChannelAssignments:
            try setChannelAssignments(data, size)
        default:
            _ = try propertySize(id)
            throw AudioToolboxError(kAudioQueueErr_InvalidProperty, "property \(fourCharacterCode(id)) is read-only")
        }
    }

    var meteringEnabled: Bool { engine.meteringEnabled }

    func engineLevels() -> [(average: Float, peak: Float)] { engine.levels() }

    static func decibels(_ linear: Float) -> Float {
        linear <= 0.000_001 ? -120 : max(-120, 20 * log10f(linear))
    }
}

/// The out-parameters of GetProperty.
struct PropertyIOArguments {
    let data: UnsafeMutableRawPointer?
    let size: UnsafeMutablePointer<UInt32>
}

@_cdecl("AudioQueueGetProperty")
public func audioQueueGetProperty(_ inAQ: AudioQueueRef?, _ inID: AudioQueuePropertyID, _ outData: UnsafeMutableRawPointer?,
                           _ ioDataSize: UnsafeMutablePointer<UInt32>?) -> OSStatus {
    withStatus {
        let object = try AudioQueueRegistry.object(inAQ)
        guard let ioDataSize else { throw AudioToolboxError(kAudio_ParamError, "NULL ioDataSize") }
        try object.getProperty(inID, PropertyIOArguments(data: outData, size: ioDataSize))
    }
}

@_cdecl("AudioQueueSetProperty")
public func audioQueueSetProperty(_ inAQ: AudioQueueRef?, _ inID: AudioQueuePropertyID, _ inData: UnsafeRawPointer?,
                           _ inDataSize: UInt32) -> OSStatus {
    withStatus { try AudioQueueRegistry.object(inAQ).setProperty(inID, inData, inDataSize) }
}

@_cdecl("AudioQueueGetPropertySize")
public func audioQueueGetPropertySize(_ inAQ: AudioQueueRef?, _ inID: AudioQueuePropertyID,
                               _ outDataSize: UnsafeMutablePointer<UInt32>?) -> OSStatus {
    withStatus {
        let object = try AudioQueueRegistry.object(inAQ)
        guard let outDataSize else { throw AudioToolboxError(kAudio_ParamError, "NULL outDataSize") }
        outDataSize.pointee = try object.propertySize(inID)
    }
}

/// The queue and listener of `AudioQueueAdd/RemovePropertyListener`, checked as Apple does:
/// an unknown queue, a NULL listener or a property the queue does not have is an error.
private func listenerTarget(
    _ inAQ: AudioQueueRef?, _ inID: AudioQueuePropertyID, _ inProc: AudioQueuePropertyListenerProc?
) throws -> (AudioQueueObject, AudioQueuePropertyListenerProc) {
    let object = try AudioQueueRegistry.object(inAQ)
    guard let inProc else { throw AudioToolboxError(kAudio_ParamError, "NULL listener") }
    _ = try object.propertySize(inID)
    return (object, inProc)
}

@_cdecl("AudioQueueAddPropertyListener")
public func audioQueueAddPropertyListener(_ inAQ: AudioQueueRef?, _ inID: AudioQueuePropertyID,
                                   _ inProc: AudioQueuePropertyListenerProc?, _ inUserData: UnsafeMutableRawPointer?) -> OSStatus {
    withStatus {
        let (object, inProc) = try listenerTarget(inAQ, inID, inProc)
        object.state.withLock {
            $0.listeners[inID, default: []].append(AudioQueueObject.Listener(proc: inProc, userData: inUserData))
        }
    }
}

@_cdecl("AudioQueueRemovePropertyListener")
public func audioQueueRemovePropertyListener(_ inAQ: AudioQueueRef?, _ inID: AudioQueuePropertyID,
                                      _ inProc: AudioQueuePropertyListenerProc?, _ inUserData: UnsafeMutableRawPointer?) -> OSStatus {
    withStatus {
        let (object, inProc) = try listenerTarget(inAQ, inID, inProc)
        let procAddress = unsafeBitCast(inProc, to: UnsafeRawPointer.self)
        object.state.withLock { state in
            guard var list = state.listeners[inID],
                  let index = list.firstIndex(where: {
                      unsafeBitCast($0.proc, to: UnsafeRawPointer.self) == procAddress && $0.userData == inUserData
                  }) else { return }
            list.remove(at: index)
            state.listeners[inID] = list
        }
    }
}

// MARK: Parameters

@_cdecl("AudioQueueGetParameter")
public func audioQueueGetParameter(_ inAQ: AudioQueueRef?, _ inParamID: AudioQueueParameterID,
                            _ outValue: UnsafeMutablePointer<AudioQueueParameterValue>?) -> OSStatus {
    withStatus {
        let object = try AudioQueueRegistry.object(inAQ)
        guard let outValue else { throw AudioToolboxError(kAudio_ParamError, "NULL outValue") }
        guard let output = object.output else { throw QueueError.invalidQueueType }
        switch inParamID {
        case kAudioQueueParam_Volume: outValue.pointee = output.volume
        case kAudioQueueParam_VolumeRampTime: outValue.pointee = output.volumeRampTime
        case kAudioQueueParam_Pan: outValue.pointee = output.pan
        case kAudioQueueParam_PlayRate: outValue.pointee = output.playRate
        case kAudioQueueParam_Pitch: outValue.pointee = output.pitch
        default: throw AudioToolboxError(kAudioQueueErr_InvalidParameter, "parameter \(inParamID) is not supported")
        }
    }
}

@_cdecl("AudioQueueSetParameter")
public func audioQueueSetParameter(_ inAQ: AudioQueueRef?, _ inParamID: AudioQueueParameterID,
                            _ inValue: AudioQueueParameterValue) -> OSStatus {
    withStatus {
        let object = try AudioQueueRegistry.object(inAQ)
        guard let output = object.output else { throw QueueError.invalidQueueType }
        guard inValue.isFinite else { throw AudioToolboxError(kAudio_ParamError, "parameter value \(inValue)") }
        switch inParamID {
        case kAudioQueueParam_Volume: output.volume = inValue
        case kAudioQueueParam_VolumeRampTime:
            // The engine counts the ramp in frames: a day is far longer than any fade.
            guard inValue <= OutputQueueEngine.maximumVolumeRampTime else { throw AudioToolboxError(kAudio_ParamError, "volume ramp time \(inValue) s") }
            output.volumeRampTime = inValue
        case kAudioQueueParam_Pan: output.pan = inValue
        // Apple's ranges (0.5...2, ±2400 cents), as for a buffer's events: outside them
        // kAudio_ParamError and the value stays. Heard once the time/pitch unit is on.
        case kAudioQueueParam_PlayRate: try output.setPlayRate(inValue)
        case kAudioQueueParam_Pitch: try output.setPitch(inValue)
        default: throw AudioToolboxError(kAudioQueueErr_InvalidParameter, "parameter \(inParamID) is not supported")
        }
    }
}

/// kAudioQueueTimePitchAlgorithm_* for an algorithm.
func timePitchAlgorithmCode(_ algorithm: TimePitchAlgorithm) -> UInt32 {
    switch algorithm {
    case .spectral: kAudioQueueTimePitchAlgorithm_Spectral
    case .timeDomain: kAudioQueueTimePitchAlgorithm_TimeDomain
    case .varispeed: kAudioQueueTimePitchAlgorithm_Varispeed
    }
}

/// The algorithm a kAudioQueueTimePitchAlgorithm_* value names; InvalidPropertyValue otherwise.
func timePitchAlgorithm(_ code: UInt32) throws -> TimePitchAlgorithm {
    switch code {
    case kAudioQueueTimePitchAlgorithm_Spectral: return .spectral
    case kAudioQueueTimePitchAlgorithm_TimeDomain: return .timeDomain
    case kAudioQueueTimePitchAlgorithm_Varispeed: return .varispeed
    default:
        throw AudioToolboxError(kAudioQueueErr_InvalidPropertyValue, "time/pitch algorithm \(fourCharacterCode(code))")
    }
}
