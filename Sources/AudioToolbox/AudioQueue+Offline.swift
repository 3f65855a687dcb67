import CAudioToolbox
import QueueCore

// Offline rendering: AudioQueueSetOfflineRenderFormat and AudioQueueOfflineRender.
// The queue's engine runs on a private ManualDriver clock that each render advances
// (QueueCore/OfflineRenderer.swift).

@_cdecl("AudioQueueSetOfflineRenderFormat")
public func audioQueueSetOfflineRenderFormat(_ inAQ: AudioQueueRef?, _ inFormat: UnsafePointer<AudioStreamBasicDescription>?,
                                             _ inLayout: UnsafePointer<AudioChannelLayout>?) -> OSStatus {
    withStatus {
        let object = try AudioQueueRegistry.object(inAQ)
        guard let output = object.output else { throw QueueError.invalidQueueType }
        guard let inFormat else {
            try output.setOfflineRenderFormat(nil)
            return
        }
        guard inFormat.pointee.mFormatID == kAudioFormatLinearPCM else {
            throw AudioToolboxError(kAudioFormatUnsupportedDataFormatError, "offline rendering produces linear PCM")
        }
        let format = try streamFormat(inFormat.pointee, allowsZeroRate: false)
        if let inLayout {
            // The layout names the channel count; a layout the format contradicts is refused.
            let count = channelCount(ofLayout: UnsafeRawPointer(inLayout), size: MemoryLayout<AudioChannelLayout>.size)
            if let count, count != 0, count != UInt32(format.channelCount) {
                throw AudioToolboxError(kAudio_ParamError,
                                        "the layout has \(count) channels, the format \(format.channelCount)")
            }
        }
        try output.setOfflineRenderFormat(format)
    }
}

@_cdecl("AudioQueueOfflineRender")
public func audioQueueOfflineRender(_ inAQ: AudioQueueRef?, _ inTimestamp: UnsafePointer<AudioTimeStamp>?,
                                    _ ioBuffer: AudioQueueBufferRef?, _ inNumberFrames: UInt32) -> OSStatus {
    withStatus {
        let object = try AudioQueueRegistry.object(inAQ)
        guard let output = object.output else { throw QueueError.invalidQueueType }
        guard output.isOffline else {
            throw QueueError.invalidOfflineMode("call AudioQueueSetOfflineRenderFormat first")
        }
        guard let inTimestamp else { throw AudioToolboxError(kAudio_ParamError, "NULL time stamp") }
        guard inTimestamp.pointee.mFlags.contains(.sampleTimeValid) else {
            throw AudioToolboxError(kAudio_ParamError, "the time stamp's mSampleTime is not valid")
        }
        guard let ioBuffer else { throw QueueError.invalidBuffer }
        let delivery = object.delivery
        let bytes = try output.renderOffline(sampleTime: inTimestamp.pointee.mSampleTime, frames: Int(inNumberFrames),
                                             into: UnsafeMutableRawPointer(ioBuffer),
                                             pump: { delivery?.performJobsIfOnRunLoopThread() })
        ioBuffer.pointer(to: \.mAudioDataByteSize)!.pointee = UInt32(bytes)
        ioBuffer.pointer(to: \.mPacketDescriptionCount)!.pointee = 0
    }
}
