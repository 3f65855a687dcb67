import CAudioToolbox
import QueueCore

// Processing taps: AudioQueueProcessingTapNew / Dispose / GetSourceAudio / GetQueueTime.

/// The object behind an AudioQueueProcessingTapRef: the engine's tap, the client's callback,
/// and the AudioBufferList the callback is given.
final class AudioQueueTapObject: @unchecked Sendable {
    /// Weak: a disposed queue goes away with its tap (as Apple's does), whoever holds the ref.
    private(set) weak var engine: QueueEngine?
    private(set) var tap: ProcessingTap!
    /// The callback's AudioBufferList: one mono buffer per channel (queue thread only).
    private let bufferList: UnsafeMutableRawPointer
    private let channelCount: Int

    init(engine: QueueEngine) {
        self.engine = engine
        channelCount = engine.format.channelCount
        bufferList = .allocate(byteCount: Self.bufferListSize(channelCount), alignment: 8)
        bufferList.initializeMemory(as: UInt8.self, repeating: 0, count: Self.bufferListSize(channelCount))
    }

    deinit { bufferList.deallocate() }

    var ref: AudioQueueProcessingTapRef { OpaquePointer(Unmanaged.passUnretained(self).toOpaque()) }

    static func bufferListSize(_ channels: Int) -> Int {
        MemoryLayout<AudioBufferList>.offset(of: \.mBuffers)! + max(channels, 1) * MemoryLayout<AudioBuffer>.stride
    }

    /// Installs the engine's tap, calling `callback` with Apple's arguments.
    func install(flags: AudioQueueProcessingTapFlags, callback: @escaping AudioQueueProcessingTapCallback,
                 clientData: UnsafeMutableRawPointer?) throws {
        let list = bufferList
        let channels = channelCount
        let install: (ProcessingTap.Flags, @escaping ProcessingTap.Callback) throws -> ProcessingTap
        if let output = engine as? OutputQueueEngine {
            install = output.installTap
        } else if let input = engine as? InputQueueEngine {
            install = input.installTap
        } else {
            throw QueueError.invalidQueueType
        }
        tap = try install(ProcessingTap.Flags(rawValue: flags.rawValue)) { [weak self] call in
            guard let self else { return (0, []) }
            let buffers = audioBuffers(list, channels)
            for c in 0..<channels {
                buffers[c].mNumberChannels = 1
                if let source = call.siphonSource {
                    buffers[c].mData = UnsafeMutableRawPointer(source[c])
                    buffers[c].mDataByteSize = UInt32(call.frameCount * 4)
                } else {
                    buffers[c].mData = nil
                    buffers[c].mDataByteSize = 0
                }
            }
            list.storeBytes(of: UInt32(channels), as: UInt32.self)
            var time = AudioTimeStamp()
            time.mSampleTime = call.sampleTime
            time.mFlags = .sampleTimeValid
            var ioFlags = AudioQueueProcessingTapFlags(rawValue: call.flags.rawValue)
            var frames: UInt32 = 0
            callback(clientData, ref, UInt32(call.frameCount), &time, &ioFlags, &frames,
                     list.assumingMemoryBound(to: AudioBufferList.self))
            for c in 0..<channels {
                call.output[c] = buffers[c].mData.map { UnsafePointer($0.assumingMemoryBound(to: Float.self)) }
            }
            return (Int(frames), ProcessingTap.Flags(rawValue: ioFlags.rawValue))
        }
    }

    /// Removes the engine's tap (only while stopped).
    func remove(from engine: QueueEngine) throws {
        if let output = engine as? OutputQueueEngine { try output.removeTap(tap) }
        if let input = engine as? InputQueueEngine { try input.removeTap(tap) }
    }
}

/// The AudioBuffers of an AudioBufferList holding `count` of them.
private func audioBuffers(_ list: UnsafeMutableRawPointer, _ count: Int) -> UnsafeMutablePointer<AudioBuffer> {
    (list + MemoryLayout<AudioBufferList>.offset(of: \.mBuffers)!).bindMemory(to: AudioBuffer.self, capacity: max(count, 1))
}

/// The live taps: a call with anything else gets a result code, not a crash.
enum AudioQueueTapRegistry {
    private static let live = LiveObjects<AudioQueueTapObject>()

    static func add(_ tap: AudioQueueTapObject) { live.add(tap, as: tap.ref) }

    static func remove(_ tap: AudioQueueTapObject) { live.remove(tap.ref) }

    /// Forgets the taps of queues that are gone (they went with their queue, as on Apple's).
    static func purgeDisposed() {
        live.removeAll { tap in tap.engine.map { $0.isDisposed } ?? true }
    }

    /// The tap behind `ref`; -50 for NULL, a tap that is gone, or one whose queue is gone.
    static func object(_ ref: AudioQueueProcessingTapRef?) throws -> (tap: AudioQueueTapObject, engine: QueueEngine) {
        guard let ref else { throw AudioToolboxError(kAudio_ParamError, "NULL AudioQueueProcessingTapRef") }
        guard let tap = live.object(ref), let engine = tap.engine, !engine.isDisposed else {
            throw AudioToolboxError(kAudio_ParamError, "not a live processing tap")
        }
        return (tap, engine)
    }
}

@_cdecl("AudioQueueProcessingTapNew")
public func audioQueueProcessingTapNew(
    _ inAQ: AudioQueueRef?, _ inCallback: AudioQueueProcessingTapCallback?, _ inClientData: UnsafeMutableRawPointer?,
    _ inFlags: AudioQueueProcessingTapFlags, _ outMaxFrames: UnsafeMutablePointer<UInt32>?,
    _ outProcessingFormat: UnsafeMutablePointer<AudioStreamBasicDescription>?,
    _ outAQTap: UnsafeMutablePointer<AudioQueueProcessingTapRef?>?
) -> OSStatus {
    withStatus {
        let object = try AudioQueueRegistry.object(inAQ)
        guard let inCallback else { throw AudioToolboxError(kAudio_ParamError, "NULL tap callback") }
        guard let outMaxFrames, let outProcessingFormat, let outAQTap else {
            throw AudioToolboxError(kAudio_ParamError, "NULL out-parameter")
        }
        AudioQueueTapRegistry.purgeDisposed()
        let tapObject = AudioQueueTapObject(engine: object.engine)
        do {
            try tapObject.install(flags: inFlags, callback: inCallback, clientData: inClientData)
        } catch QueueError.invalidParameter(let why) {
            throw AudioToolboxError(kAudioQueueErr_InvalidTapType, why)
        }
        AudioQueueTapRegistry.add(tapObject)
        let channels = UInt32(object.engine.format.channelCount)
        outMaxFrames.pointee = UInt32(tapObject.tap.maximumFrames)
        outProcessingFormat.pointee = AudioStreamBasicDescription(
            mSampleRate: object.engine.format.sampleRate, mFormatID: kAudioFormatLinearPCM,
            mFormatFlags: kAudioFormatFlagsNativeFloatPacked | kAudioFormatFlagIsNonInterleaved,
            mBytesPerPacket: 4, mFramesPerPacket: 1, mBytesPerFrame: 4, mChannelsPerFrame: channels,
            mBitsPerChannel: 32, mReserved: 0)
        outAQTap.pointee = tapObject.ref
    }
}

@_cdecl("AudioQueueProcessingTapDispose")
public func audioQueueProcessingTapDispose(_ inAQTap: AudioQueueProcessingTapRef?) -> OSStatus {
    withStatus {
        let (tapObject, engine) = try AudioQueueTapRegistry.object(inAQTap)
        try tapObject.remove(from: engine)
        AudioQueueTapRegistry.remove(tapObject)
    }
}

@_cdecl("AudioQueueProcessingTapGetSourceAudio")
public func audioQueueProcessingTapGetSourceAudio(
    _ inAQTap: AudioQueueProcessingTapRef?, _ inNumberFrames: UInt32, _ ioTimeStamp: UnsafeMutablePointer<AudioTimeStamp>?,
    _ outFlags: UnsafeMutablePointer<AudioQueueProcessingTapFlags>?, _ outNumberFrames: UnsafeMutablePointer<UInt32>?,
    _ ioData: UnsafeMutablePointer<AudioBufferList>?
) -> OSStatus {
    withStatus {
        let tapObject = try AudioQueueTapRegistry.object(inAQTap).tap
        guard let outNumberFrames, let ioData else { throw AudioToolboxError(kAudio_ParamError, "NULL out-parameter") }
        let channels = tapObject.tap.channelCount
        guard Int(ioData.pointee.mNumberBuffers) >= channels else {
            throw AudioToolboxError(kAudio_ParamError, "ioData has \(ioData.pointee.mNumberBuffers) buffers for \(channels) channels")
        }
        let source = try tapObject.tap.sourceAudio(frames: Int(inNumberFrames))
        let buffers = audioBuffers(UnsafeMutableRawPointer(ioData), channels)
        var given = source.frameCount
        for c in 0..<channels where buffers[c].mData != nil {
            given = min(given, Int(buffers[c].mDataByteSize) / 4)
        }
        for c in 0..<channels {
            buffers[c].mNumberChannels = 1
            if let data = buffers[c].mData {
                data.assumingMemoryBound(to: Float.self).update(from: source.planes[c], count: given)
            } else {
                buffers[c].mData = UnsafeMutableRawPointer(mutating: source.planes[c])
            }
            buffers[c].mDataByteSize = UInt32(given * 4)
        }
        outNumberFrames.pointee = UInt32(given)
        outFlags?.pointee = AudioQueueProcessingTapFlags(rawValue: source.flags.rawValue)
        // An input queue's tap gets the source's time; an output queue's gives its own.
        if let ioTimeStamp, tapObject.tap.isInput || !ioTimeStamp.pointee.mFlags.contains(.sampleTimeValid) {
            ioTimeStamp.pointee.mSampleTime = source.sampleTime
            ioTimeStamp.pointee.mFlags.insert(.sampleTimeValid)
        }
    }
}

@_cdecl("AudioQueueProcessingTapGetQueueTime")
public func audioQueueProcessingTapGetQueueTime(
    _ inAQTap: AudioQueueProcessingTapRef?, _ outQueueSampleTime: UnsafeMutablePointer<Float64>?,
    _ outQueueFrameCount: UnsafeMutablePointer<UInt32>?
) -> OSStatus {
    withStatus {
        let tapObject = try AudioQueueTapRegistry.object(inAQTap).tap
        guard let outQueueSampleTime, let outQueueFrameCount else {
            throw AudioToolboxError(kAudio_ParamError, "NULL out-parameter")
        }
        let time = try tapObject.tap.queueTime()
        outQueueSampleTime.pointee = time.sampleTime
        outQueueFrameCount.pointee = UInt32(clamping: time.frameCount)
    }
}
