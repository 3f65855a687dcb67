import AudioToolbox
import Foundation
import Testing

/// ExtAudioFile calls as the tests make them: whole signals written and read back in chunks.
enum EAF {
    static func pcm(_ rate: Double, channels: Int, float: Bool = false, bits: Int = 16, nonInterleaved: Bool = false) -> AudioStreamBasicDescription {
        let bytes = UInt32(bits / 8)
        var flags: AudioFormatFlags = kAudioFormatFlagIsPacked | (float ? kAudioFormatFlagIsFloat : kAudioFormatFlagIsSignedInteger)
        if nonInterleaved { flags |= kAudioFormatFlagIsNonInterleaved }
        let frameBytes = nonInterleaved ? bytes : bytes * UInt32(channels)
        return AudioStreamBasicDescription(mSampleRate: rate, mFormatID: kAudioFormatLinearPCM, mFormatFlags: flags,
                                           mBytesPerPacket: frameBytes, mFramesPerPacket: 1, mBytesPerFrame: frameBytes,
                                           mChannelsPerFrame: UInt32(channels), mBitsPerChannel: UInt32(bits), mReserved: 0)
    }

    static func compressed(_ id: AudioFormatID, _ rate: Double, channels: Int, flags: AudioFormatFlags = 0) -> AudioStreamBasicDescription {
        AudioStreamBasicDescription(mSampleRate: rate, mFormatID: id, mFormatFlags: flags, mBytesPerPacket: 0, mFramesPerPacket: 0,
                                    mBytesPerFrame: 0, mChannelsPerFrame: UInt32(channels), mBitsPerChannel: 0, mReserved: 0)
    }

    static func create(_ url: URL, _ type: AudioFileTypeID, _ format: AudioStreamBasicDescription) -> (OSStatus, ExtAudioFileRef?) {
        var format = format
        var file: ExtAudioFileRef?
        let status = ExtAudioFileCreateWithURL(url, type, &format, nil, AudioFileFlags.eraseFile.rawValue, &file)
        return (status, file)
    }

    static func open(_ url: URL) -> (OSStatus, ExtAudioFileRef?) {
        var file: ExtAudioFileRef?
        let status = ExtAudioFileOpenURL(url, &file)
        return (status, file)
    }

    @discardableResult
    static func setClient(_ file: ExtAudioFileRef?, _ format: AudioStreamBasicDescription) -> OSStatus {
        var format = format
        return ExtAudioFileSetProperty(file!, kExtAudioFileProperty_ClientDataFormat, UInt32(MemoryLayout<AudioStreamBasicDescription>.size), &format)
    }

    static func property<T: BitwiseCopyable>(_ file: ExtAudioFileRef?, _ id: ExtAudioFilePropertyID, _: T.Type) -> (OSStatus, T?) {
        var size = UInt32(MemoryLayout<T>.size)
        let value = UnsafeMutableRawPointer.allocate(byteCount: MemoryLayout<T>.size, alignment: 16)
        defer { value.deallocate() }
        let status = ExtAudioFileGetProperty(file!, id, &size, value)
        return (status, status == noErr ? value.load(as: T.self) : nil)
    }

    /// An AudioBufferList of `buffers`, each `bytes` long, with `channelsPerBuffer` channels.
    static func withBufferList<R>(_ buffers: [UnsafeMutableRawPointer], bytes: Int, channelsPerBuffer: Int,
                                  _ body: (UnsafeMutablePointer<AudioBufferList>) throws -> R) rethrows -> R {
        let offset = MemoryLayout<AudioBufferList>.offset(of: \.mBuffers)!
        let size = max(offset + buffers.count * MemoryLayout<AudioBuffer>.stride, MemoryLayout<AudioBufferList>.size)
        let raw = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
        defer { raw.deallocate() }
        let list = raw.bindMemory(to: AudioBufferList.self, capacity: 1)
        list.pointee.mNumberBuffers = UInt32(buffers.count)
        let all = (raw + offset).bindMemory(to: AudioBuffer.self, capacity: buffers.count)
        for (i, buffer) in buffers.enumerated() {
            all[i] = AudioBuffer(mNumberChannels: UInt32(channelsPerBuffer), mDataByteSize: UInt32(bytes), mData: buffer)
        }
        return try body(list)
    }

    /// Writes `planes` (one byte array per buffer of the client format) in chunks of `chunk` frames.
    static func write(_ file: ExtAudioFileRef?, planes: [[UInt8]], client: AudioStreamBasicDescription, chunk: Int = 1000,
                      async: Bool = false) -> OSStatus {
        let frameBytes = Int(client.mBytesPerFrame)
        let frames = planes[0].count / frameBytes
        var done = 0
        while done < frames {
            let n = min(chunk, frames - done)
            let pointers = planes.map { plane -> UnsafeMutableRawPointer in
                let p = UnsafeMutableRawPointer.allocate(byteCount: n * frameBytes, alignment: 16)
                plane.withUnsafeBytes { p.copyMemory(from: $0.baseAddress! + done * frameBytes, byteCount: n * frameBytes) }
                return p
            }
            defer { pointers.forEach { $0.deallocate() } }
            let channelsPerBuffer = planes.count == 1 ? Int(client.mChannelsPerFrame) : 1
            let status = withBufferList(pointers, bytes: n * frameBytes, channelsPerBuffer: channelsPerBuffer) {
                async ? ExtAudioFileWriteAsync(file!, UInt32(n), $0) : ExtAudioFileWrite(file!, UInt32(n), $0)
            }
            if status != noErr { return status }
            done += n
        }
        return noErr
    }

    /// Reads up to `limit` frames (or to the end) in chunks of `chunk` frames: one byte array per buffer.
    static func read(_ file: ExtAudioFileRef?, client: AudioStreamBasicDescription, chunk: Int = 4096, limit: Int = .max) -> (OSStatus, [[UInt8]]) {
        let frameBytes = Int(client.mBytesPerFrame)
        let bufferCount = client.mFormatFlags & kAudioFormatFlagIsNonInterleaved != 0 ? Int(client.mChannelsPerFrame) : 1
        var planes = [[UInt8]](repeating: [], count: bufferCount)
        let pointers = (0..<bufferCount).map { _ in UnsafeMutableRawPointer.allocate(byteCount: chunk * frameBytes, alignment: 16) }
        defer { pointers.forEach { $0.deallocate() } }
        var total = 0
        while total < limit {
            var frames = UInt32(min(chunk, limit - total))
            let status = withBufferList(pointers, bytes: Int(frames) * frameBytes, channelsPerBuffer: bufferCount == 1 ? Int(client.mChannelsPerFrame) : 1) {
                ExtAudioFileRead(file!, &frames, $0)
            }
            if status != noErr { return (status, planes) }
            if frames == 0 { break }
            for (i, p) in pointers.enumerated() { planes[i] += Array(UnsafeRawBufferPointer(start: p, count: Int(frames) * frameBytes)) }
            total += Int(frames)
        }
        return (noErr, planes)
    }

    /// A deterministic signal: a sine per channel and a little noise, amplitude `peak`.
    static func floats(frames: Int, channels: Int, peak: Float = 0.5, rate: Double = 44100) -> [Float] {
        var noise: UInt32 = 0x2468_ACE1
        var out = [Float](repeating: 0, count: frames * channels)
        for frame in 0..<frames {
            for channel in 0..<channels {
                noise = noise &* 1_664_525 &+ 1_013_904_223
                let tone = sin(2 * Double.pi * (440 * Double(channel + 1)) * Double(frame) / rate)
                out[frame * channels + channel] = peak * Float(tone) + Float(Int32(bitPattern: noise) >> 8) / Float(1 << 23) * 0.02
            }
        }
        return out
    }

    static func int16Bytes(_ samples: [Float]) -> [UInt8] {
        var bytes = [UInt8]()
        bytes.reserveCapacity(samples.count * 2)
        for s in samples {
            let v = Int16(max(-32768, min(32767, (s * 32768).rounded())))
            withUnsafeBytes(of: v.littleEndian) { bytes += $0 }
        }
        return bytes
    }

    static func floatBytes(_ samples: [Float]) -> [UInt8] { samples.withUnsafeBytes { Array($0) } }

    static func floatsOf(_ bytes: [UInt8]) -> [Float] {
        bytes.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    /// One channel of interleaved samples as bytes per channel (for non-interleaved clients).
    static func split(_ interleaved: [UInt8], channels: Int, sampleBytes: Int) -> [[UInt8]] {
        let frames = interleaved.count / (channels * sampleBytes)
        return (0..<channels).map { c in
            var plane = [UInt8]()
            plane.reserveCapacity(frames * sampleBytes)
            for f in 0..<frames {
                let start = (f * channels + c) * sampleBytes
                plane += interleaved[start..<start + sampleBytes]
            }
            return plane
        }
    }

    /// The lag (in frames, within ±`range`) at which `b` best matches `a`, and the SNR there, on channel 0.
    static func alignment(_ a: [Float], _ b: [Float], channels: Int, range: Int = 1500) -> (lag: Int, snr: Double) {
        let frames = min(a.count, b.count) / channels
        var best = (lag: 0, score: -Double.infinity)
        for lag in -range...range {
            var sum = 0.0
            var f = max(0, -lag) + 2048
            while f < min(frames - max(0, lag) - 2048, 24576) {
                sum += Double(a[f * channels]) * Double(b[(f + lag) * channels])
                f += 3
            }
            if sum > best.score { best = (lag, sum) }
        }
        var signal = 0.0, error = 0.0
        for f in 0..<frames where f + best.lag >= 0 && f + best.lag < frames {
            for c in 0..<channels {
                let x = Double(a[f * channels + c]), y = Double(b[(f + best.lag) * channels + c])
                signal += x * x
                error += (x - y) * (x - y)
            }
        }
        return (best.lag, 10 * log10(signal / max(error, 1e-30)))
    }
}
