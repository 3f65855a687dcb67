import AudioCodec
import CAudioToolbox
import QueueCore

// Compressed formats in queues: AAC, HE-AAC, ALAC, MP3, FLAC, Opus and IMA4 decode in output
// queues; AAC-LC, ALAC, FLAC, Opus and IMA4 encode in input queues (AudioCodec, on FFmpeg).

/// An ASBD's compressed format, or nil for linear PCM, µ-law and A-law.
func codecFormat(_ asbd: AudioStreamBasicDescription) -> CodecFormat? {
    guard CompressedFormat.isCompressed(asbd.mFormatID) else { return nil }
    return CodecFormat(formatID: asbd.mFormatID, formatFlags: asbd.mFormatFlags, sampleRate: asbd.mSampleRate,
                       channelCount: Int(asbd.mChannelsPerFrame), framesPerPacket: Int(asbd.mFramesPerPacket),
                       bytesPerPacket: Int(asbd.mBytesPerPacket))
}

/// The engine's format for a compressed stream: planar Float32 at the stream's rate.
func decodedFormat(_ codec: CodecFormat, allowsZeroRate: Bool) throws -> StreamFormat {
    let rate = codec.sampleRate
    guard rate.isFinite, rate >= 0, rate == 0 ? allowsZeroRate : (rate >= 1000 && rate <= 768_000) else {
        throw QueueError.unsupportedFormat("sample rate \(rate)")
    }
    guard codec.channelCount >= 1, codec.channelCount <= StreamFormat.maximumChannels else {
        throw QueueError.unsupportedFormat("\(codec.channelCount) channels (1...\(StreamFormat.maximumChannels))")
    }
    guard codec.bytesPerPacket >= 0, codec.bytesPerPacket <= 1 << 24, codec.framesPerPacket <= 1 << 20 else {
        throw QueueError.unsupportedFormat("\(codec.bytesPerPacket) bytes in \(codec.framesPerPacket) frames per packet")
    }
    return StreamFormat.linearPCM(sampleRate: rate, channels: codec.channelCount, bits: 32, float: true)
}

/// A codec error as the queue API reports it: CodecNotFound for a format with no codec in this
/// direction, 'fmt?' for parameters the codec refuses.
func queueStatus(_ error: CodecError) -> AudioToolboxError {
    switch error {
    case .codecNotFound(let why): AudioToolboxError(kAudioQueueErr_CodecNotFound, why)
    case .invalidCookie(let why): AudioToolboxError(kAudioQueueErr_InvalidPropertyValue, why)
    default: AudioToolboxError(kAudioFormatUnsupportedDataFormatError, error.description)
    }
}

/// What an output queue needs to decode `codec`; throws CodecNotFound/'fmt?' now rather than at play.
func compressedStream(_ codec: CodecFormat) throws -> CompressedStream {
    do {
        _ = try PacketDecoder(format: codec, cookie: [])
    } catch {
        // ALAC cannot open without its cookie: that comes later through kAudioQueueProperty_MagicCookie.
        if case .invalidCookie = error {} else { throw queueStatus(error) }
    }
    let frames = codec.framesPerPacket > 0 ? codec.framesPerPacket
        : CompressedFormat.defaultFramesPerPacket(codec.formatID, sampleRate: codec.sampleRate)
    let bytes = codec.bytesPerPacket > 0 ? codec.bytesPerPacket
        : CompressedFormat.constantBytesPerPacket(codec.formatID, channels: codec.channelCount)
    return CompressedStream(framesPerPacket: frames, bytesPerPacket: bytes) { cookie in
        try PacketDecoder(format: codec, cookie: cookie)
    }
}

/// An input queue's encoder for `codec` at `sampleRate` (the server's when the ASBD says 0).
func queueEncoder(_ codec: CodecFormat, bitRate: Int? = nil) throws -> QueueEncoder {
    do {
        return try QueueEncoder(format: codec, bitRate: bitRate)
    } catch {
        throw queueStatus(error)
    }
}

/// The packet descriptions of an enqueued compressed buffer: the call's, else the buffer's own.
func packetDescriptions(_ count: UInt32, _ descriptions: UnsafePointer<AudioStreamPacketDescription>?,
                        buffer: AudioQueueBufferRef) throws -> [PacketDescription] {
    var source: UnsafeBufferPointer<AudioStreamPacketDescription>
    if count > 0 {
        guard let descriptions else { throw AudioToolboxError(kAudio_ParamError, "\(count) packet descriptions at NULL") }
        // A packet is at least one byte: more descriptions than the buffer has bytes cannot
        // describe it, and reading them all could run past the end of the caller's array.
        guard count <= buffer.pointee.mAudioDataByteSize else {
            throw AudioToolboxError(kAudio_ParamError, "\(count) packet descriptions for \(buffer.pointee.mAudioDataByteSize) bytes")
        }
        source = UnsafeBufferPointer(start: descriptions, count: Int(count))
    } else if buffer.pointee.mPacketDescriptionCount > 0, let own = buffer.pointee.mPacketDescriptions {
        source = UnsafeBufferPointer(start: own, count: Int(min(buffer.pointee.mPacketDescriptionCount,
                                                                buffer.pointee.mPacketDescriptionCapacity)))
    } else {
        return []
    }
    return source.map { d in
        PacketDescription(offset: Int(clamping: d.mStartOffset), variableFrames: Int(d.mVariableFramesInPacket),
                          size: Int(d.mDataByteSize))
    }
}

/// Apple's descriptions for the packets an input queue filled a buffer with.
func appleDescriptions(_ packets: [PacketDescription]) -> [AudioStreamPacketDescription] {
    packets.map {
        AudioStreamPacketDescription(mStartOffset: Int64($0.offset), mVariableFramesInPacket: UInt32($0.variableFrames),
                                     mDataByteSize: UInt32($0.size))
    }
}

/// The complete ASBD of a compressed queue: frames and bytes per packet filled in.
func completeCompressedFormat(_ asbd: AudioStreamBasicDescription, rate: Double, encoder: QueueEncoder?) -> AudioStreamBasicDescription {
    var format = asbd
    format.mSampleRate = rate
    if format.mFramesPerPacket == 0 {
        format.mFramesPerPacket = UInt32(encoder?.framesPerPacket
            ?? CompressedFormat.defaultFramesPerPacket(asbd.mFormatID, sampleRate: rate))
    }
    if format.mBytesPerPacket == 0 {
        format.mBytesPerPacket = UInt32(CompressedFormat.constantBytesPerPacket(asbd.mFormatID, channels: Int(asbd.mChannelsPerFrame)))
    }
    format.mBytesPerFrame = 0
    if (asbd.mFormatID == kAudioFormatAppleLossless || asbd.mFormatID == kAudioFormatFLAC) && format.mFormatFlags == 0 {
        format.mFormatFlags = CompressedFormat.losslessFlags(bits: encoder?.encoder?.sourceBits ?? 16)
    }
    return format
}
