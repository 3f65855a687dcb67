import CAudioToolbox

// The client's AudioBufferList in ExtAudioFileRead and ExtAudioFileWrite: one buffer of
// interleaved frames, or one buffer per channel for a non-interleaved client format. The
// converter sees interleaved frames; these copy between the two layouts.

enum ClientBuffers {
    /// The buffers of `list` (mNumberBuffers of them, laid out as C lays out mBuffers[]).
    static func buffers(_ list: UnsafePointer<AudioBufferList>) -> UnsafeMutableBufferPointer<AudioBuffer> {
        let offset = MemoryLayout<AudioBufferList>.offset(of: \.mBuffers)!
        let first = UnsafeMutableRawPointer(mutating: list).advanced(by: offset).assumingMemoryBound(to: AudioBuffer.self)
        return UnsafeMutableBufferPointer(start: first, count: Int(list.pointee.mNumberBuffers))
    }

    /// The frames `list` has room for (or holds), checking its shape against `format`:
    /// kAudio_ParamError for the wrong number of buffers or a buffer without data.
    static func frameCapacity(of list: UnsafePointer<AudioBufferList>, format: AudioStreamBasicDescription) throws -> Int {
        let expected = format.isNonInterleaved ? Int(format.mChannelsPerFrame) : 1
        let all = buffers(list)
        guard all.count == expected else {
            throw AudioToolboxError(kAudio_ParamError, "\(all.count) buffers for a client format of \(expected)")
        }
        var frames = Int.max
        for buffer in all {
            guard buffer.mData != nil || buffer.mDataByteSize == 0 else { throw AudioToolboxError(kAudio_ParamError, "a buffer's mData is NULL") }
            frames = min(frames, Int(buffer.mDataByteSize) / Int(format.mBytesPerFrame))
        }
        return frames
    }

    /// Whether `list` has the client format's buffers, each with data for `frames` frames
    /// (ExtAudioFileWriteAsync's check: no error thrown, nothing allocated).
    static func holds(_ list: UnsafePointer<AudioBufferList>, frames: Int, format: AudioStreamBasicDescription) -> Bool {
        let all = buffers(list)
        guard all.count == (format.isNonInterleaved ? Int(format.mChannelsPerFrame) : 1) else { return false }
        for buffer in all where buffer.mData == nil || Int(buffer.mDataByteSize) / Int(format.mBytesPerFrame) < frames { return false }
        return true
    }

    static func setByteSizes(of list: UnsafeMutablePointer<AudioBufferList>, frames: Int, format: AudioStreamBasicDescription) {
        for i in buffers(list).indices { buffers(list)[i].mDataByteSize = UInt32(frames * Int(format.mBytesPerFrame)) }
    }

    /// Splits `frames` interleaved frames at `source` into the client's channel buffers,
    /// from frame `offset` on.
    static func deinterleave(_ source: UnsafeRawPointer, frames: Int, into list: UnsafeMutablePointer<AudioBufferList>,
                             at offset: Int, format: AudioStreamBasicDescription) {
        let sampleBytes = Int(format.mBytesPerFrame)
        let channels = Int(format.mChannelsPerFrame)
        for (channel, buffer) in buffers(list).enumerated() {
            guard let data = buffer.mData else { continue }
            copySamples(from: source + channel * sampleBytes, stride: channels * sampleBytes,
                        to: data + offset * sampleBytes, stride: sampleBytes, count: frames, sampleBytes: sampleBytes)
        }
    }

    /// Joins `frames` frames of the client's channel buffers, from frame `offset` on, into
    /// interleaved frames at `destination`.
    static func interleave(_ list: UnsafePointer<AudioBufferList>, at offset: Int, frames: Int,
                           into destination: UnsafeMutableRawPointer, format: AudioStreamBasicDescription) {
        let sampleBytes = Int(format.mBytesPerFrame)
        let channels = Int(format.mChannelsPerFrame)
        for (channel, buffer) in buffers(list).enumerated() {
            guard let data = buffer.mData else { continue }
            copySamples(from: UnsafeRawPointer(data) + offset * sampleBytes, stride: sampleBytes,
                        to: destination + channel * sampleBytes, stride: channels * sampleBytes, count: frames, sampleBytes: sampleBytes)
        }
    }

    private static func copySamples(from source: UnsafeRawPointer, stride sourceStride: Int, to destination: UnsafeMutableRawPointer,
                                    stride destinationStride: Int, count: Int, sampleBytes: Int) {
        switch sampleBytes {
        case 2:
            for i in 0..<count { (destination + i * destinationStride).storeBytes(of: (source + i * sourceStride).loadUnaligned(as: UInt16.self), as: UInt16.self) }
        case 4:
            for i in 0..<count { (destination + i * destinationStride).storeBytes(of: (source + i * sourceStride).loadUnaligned(as: UInt32.self), as: UInt32.self) }
        default:
            for i in 0..<count { (destination + i * destinationStride).copyMemory(from: source + i * sourceStride, byteCount: sampleBytes) }
        }
    }
}
