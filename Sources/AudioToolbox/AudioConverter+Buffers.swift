import CAudioToolbox
import QueueCore

// The linear PCM sides of a converter as AudioBufferLists carry them: one interleaved
// AudioBuffer, or (kAudioFormatFlagIsNonInterleaved) one AudioBuffer per channel.

/// The AudioBuffers of an AudioBufferList that holds `count` of them.
func converterBuffers(_ list: UnsafeMutablePointer<AudioBufferList>, _ count: Int) -> UnsafeMutablePointer<AudioBuffer> {
    (UnsafeMutableRawPointer(list) + MemoryLayout<AudioBufferList>.offset(of: \.mBuffers)!)
        .bindMemory(to: AudioBuffer.self, capacity: max(count, 1))
}

/// Bytes of an AudioBufferList with room for `count` buffers.
func converterBufferListSize(_ count: Int) -> Int {
    MemoryLayout<AudioBufferList>.offset(of: \.mBuffers)! + max(count, 1) * MemoryLayout<AudioBuffer>.stride
}

/// A linear PCM format's AudioBufferLists.
struct PCMBuffers {
    /// Converts one buffer: every channel interleaved, or one channel.
    let codec: SampleCodec
    let channels: Int
    let nonInterleaved: Bool
    /// Bytes of a frame in one buffer (the ASBD's mBytesPerFrame, one channel's when non-interleaved).
    let bytesPerFrame: Int

    var bufferCount: Int { nonInterleaved ? channels : 1 }

    init(_ asbd: AudioStreamBasicDescription) throws {
        var format: StreamFormat
        do {
            format = try streamFormat(asbd, allowsZeroRate: false)
        } catch {
            throw AudioToolboxError(kAudioConverterErr_FormatNotSupported, "\(error)")
        }
        channels = format.channelCount
        nonInterleaved = format.isNonInterleaved
        bytesPerFrame = Int(asbd.mBytesPerFrame)
        if nonInterleaved {
            format.bytesPerFrame = format.bytesPerSample
            format.channelCount = 1
            format.isNonInterleaved = false
        }
        codec = SampleCodec(format: format)
    }

    /// The frames every buffer of `list` holds (its smallest), after checking that the list
    /// has this format's buffers with data; kAudio_ParamError otherwise.
    func frames(in list: UnsafeMutablePointer<AudioBufferList>, what: String) throws -> Int {
        guard Int(list.pointee.mNumberBuffers) == bufferCount else {
            throw AudioToolboxError(kAudio_ParamError, "\(what) has \(list.pointee.mNumberBuffers) buffers, the format \(bufferCount)")
        }
        let buffers = converterBuffers(list, bufferCount)
        var frames = Int.max
        for b in 0..<bufferCount {
            guard buffers[b].mData != nil else { throw AudioToolboxError(kAudio_ParamError, "\(what): buffer \(b) has no data") }
            frames = min(frames, Int(buffers[b].mDataByteSize) / bytesPerFrame)
        }
        return frames
    }

    /// Decodes `frames` frames of `list` into `planes` (one per channel, already offset).
    func decode(_ list: UnsafeMutablePointer<AudioBufferList>, frames: Int, into planes: UnsafePointer<UnsafeMutablePointer<Float>>) {
        let buffers = converterBuffers(list, bufferCount)
        guard nonInterleaved else {
            if let data = buffers[0].mData { codec.decode(UnsafeRawPointer(data), frames: frames, into: planes) }
            return
        }
        for c in 0..<channels {
            if let data = buffers[c].mData { codec.decode(UnsafeRawPointer(data), frames: frames, into: planes + c) }
        }
    }

    /// Encodes `frames` frames of `planes` into `list` from frame `offset` on.
    func encode(_ planes: UnsafePointer<UnsafePointer<Float>>, frames: Int, into list: UnsafeMutablePointer<AudioBufferList>, at offset: Int) {
        let buffers = converterBuffers(list, bufferCount)
        guard nonInterleaved else {
            if let data = buffers[0].mData { codec.encode(planes, frames: frames, into: data + offset * bytesPerFrame) }
            return
        }
        for c in 0..<channels {
            if let data = buffers[c].mData { codec.encode(planes + c, frames: frames, into: data + offset * bytesPerFrame) }
        }
    }

    /// Sets every buffer's mDataByteSize to `frames` frames.
    func setSize(_ list: UnsafeMutablePointer<AudioBufferList>, frames: Int) {
        let buffers = converterBuffers(list, bufferCount)
        for b in 0..<bufferCount { buffers[b].mDataByteSize = UInt32(frames * bytesPerFrame) }
    }
}
