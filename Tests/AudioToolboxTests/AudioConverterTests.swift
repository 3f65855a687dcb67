import Foundation
import Glibc
import Testing
import AudioToolbox
@testable import AudioCodec

/// Audio Converter Services: encode and decode through FillComplexBuffer, PCM through
/// ConvertBuffer, the properties and the result codes.
@Suite struct AudioConverterTests {
    /// Feeds an input proc from an array of bytes: PCM frames or packets with descriptions.
    final class Source {
        let data: [UInt8]
        let bytesPerFrame: Int
        var position = 0
        /// Packets (offset, size) for compressed input; empty for PCM.
        var packets: [(Int, Int)] = []
        var nextPacket = 0
        var descriptions = UnsafeMutablePointer<AudioStreamPacketDescription>.allocate(capacity: 1)
        var copy = [UInt8]()

        init(data: [UInt8], bytesPerFrame: Int) {
            self.data = data
            self.bytesPerFrame = bytesPerFrame
        }

        deinit { descriptions.deallocate() }
    }

    static let inputProc: AudioConverterComplexInputDataProc = { _, ioPackets, ioData, outDescriptions, user in
        let source = Unmanaged<Source>.fromOpaque(user!).takeUnretainedValue()
        if source.packets.isEmpty {
            let frames = min(Int(ioPackets.pointee), (source.data.count - source.position) / source.bytesPerFrame)
            source.copy = Array(source.data[source.position..<(source.position + frames * source.bytesPerFrame)])
            source.position += frames * source.bytesPerFrame
            ioPackets.pointee = UInt32(frames)
            ioData.pointee.mBuffers.mDataByteSize = UInt32(source.copy.count)
        } else {
            guard source.nextPacket < source.packets.count else {
                ioPackets.pointee = 0
                return noErr
            }
            let (offset, size) = source.packets[source.nextPacket]
            source.nextPacket += 1
            source.copy = Array(source.data[offset..<(offset + size)])
            source.descriptions.pointee = AudioStreamPacketDescription(mStartOffset: 0, mVariableFramesInPacket: 0, mDataByteSize: UInt32(size))
            outDescriptions?.pointee = source.descriptions
            ioPackets.pointee = 1
            ioData.pointee.mBuffers.mDataByteSize = UInt32(size)
        }
        ioData.pointee.mBuffers.mData = source.copy.withUnsafeMutableBytes { $0.baseAddress }
        return noErr
    }

    /// Encodes all of `pcm` (interleaved bytes of `from`): the packets, concatenated, their (offset, size), the converter's cookie and priming.
    static func encode(_ pcm: [UInt8], from: AudioStreamBasicDescription, to: AudioStreamBasicDescription, bitRate: UInt32? = nil) throws
        -> (data: [UInt8], packets: [(Int, Int)], cookie: [UInt8], priming: Int, format: AudioStreamBasicDescription) {
        var source = from, destination = to
        var converter: AudioConverterRef?
        #expect(AudioConverterNew(&source, &destination, &converter) == noErr)
        let c = try #require(converter)
        defer { AudioConverterDispose(c) }
        if var bitRate {
            #expect(AudioConverterSetProperty(c, kAudioConverterEncodeBitRate, 4, &bitRate) == noErr)
        }
        var maxPacket: UInt32 = 0
        var size = UInt32(4)
        #expect(AudioConverterGetProperty(c, kAudioConverterPropertyMaximumOutputPacketSize, &size, &maxPacket) == noErr)
        var complete = AudioStreamBasicDescription()
        size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        #expect(AudioConverterGetProperty(c, kAudioConverterCurrentOutputStreamDescription, &size, &complete) == noErr)
        let input = Source(data: pcm, bytesPerFrame: Int(from.mBytesPerFrame))
        var data: [UInt8] = []
        var packets: [(Int, Int)] = []
        let perCall = 8
        var buffer = [UInt8](repeating: 0, count: Int(maxPacket) * perCall)
        var descriptions = [AudioStreamPacketDescription](repeating: AudioStreamPacketDescription(), count: perCall)
        while true {
            var count = UInt32(perCall)
            var list = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: from.mChannelsPerFrame,
                                                                                   mDataByteSize: UInt32(buffer.count), mData: nil))
            let status = buffer.withUnsafeMutableBytes { bytes in
                list.mBuffers.mData = bytes.baseAddress
                return AudioConverterFillComplexBuffer(c, inputProc, Unmanaged.passUnretained(input).toOpaque(), &count, &list, &descriptions)
            }
            #expect(status == noErr)
            if count == 0 || status != noErr { break }
            for d in descriptions.prefix(Int(count)) {
                packets.append((data.count, Int(d.mDataByteSize)))
                data += buffer[Int(d.mStartOffset)..<(Int(d.mStartOffset) + Int(d.mDataByteSize))]
            }
        }
        var cookieSize: UInt32 = 0
        var writable: Bool = true
        #expect(AudioConverterGetPropertyInfo(c, kAudioConverterCompressionMagicCookie, &cookieSize, &writable) == noErr)
        #expect(!writable)
        var cookie = [UInt8](repeating: 0, count: Int(cookieSize))
        #expect(AudioConverterGetProperty(c, kAudioConverterCompressionMagicCookie, &cookieSize, &cookie) == noErr)
        var prime = AudioConverterPrimeInfo()
        size = UInt32(MemoryLayout<AudioConverterPrimeInfo>.size)
        #expect(AudioConverterGetProperty(c, kAudioConverterPrimeInfo, &size, &prime) == noErr)
        return (data, packets, cookie, Int(prime.leadingFrames), complete)
    }

    /// Decodes packets into interleaved PCM of `to`.
    static func decode(_ data: [UInt8], packets: [(Int, Int)], cookie: [UInt8], from: AudioStreamBasicDescription,
                       to: AudioStreamBasicDescription) throws -> [UInt8] {
        var source = from, destination = to
        var converter: AudioConverterRef?
        #expect(AudioConverterNew(&source, &destination, &converter) == noErr)
        let c = try #require(converter)
        defer { AudioConverterDispose(c) }
        #expect(AudioConverterSetProperty(c, kAudioConverterDecompressionMagicCookie, UInt32(cookie.count), cookie) == noErr)
        let input = Source(data: data, bytesPerFrame: 1)
        input.packets = packets
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 3000 * Int(to.mBytesPerFrame))
        while true {
            var frames: UInt32 = 3000
            var list = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: to.mChannelsPerFrame,
                                                                                   mDataByteSize: UInt32(buffer.count), mData: nil))
            let status = buffer.withUnsafeMutableBytes { bytes in
                list.mBuffers.mData = bytes.baseAddress
                return AudioConverterFillComplexBuffer(c, inputProc, Unmanaged.passUnretained(input).toOpaque(), &frames, &list, nil)
            }
            #expect(status == noErr)
            if frames == 0 || status != noErr { break }
            out += buffer.prefix(Int(list.mBuffers.mDataByteSize))
        }
        return out
    }

    static func pcm(bits: UInt32, channels: UInt32 = 2, float: Bool = false) -> AudioStreamBasicDescription {
        let bytes = bits / 8 * channels
        return AudioStreamBasicDescription(mSampleRate: 48000, mFormatID: kAudioFormatLinearPCM,
                                           mFormatFlags: (float ? kAudioFormatFlagIsFloat : kAudioFormatFlagIsSignedInteger) | kAudioFormatFlagIsPacked,
                                           mBytesPerPacket: bytes, mFramesPerPacket: 1, mBytesPerFrame: bytes, mChannelsPerFrame: channels,
                                           mBitsPerChannel: bits, mReserved: 0)
    }

    static func compressed(_ id: AudioFormatID, flags: UInt32 = 0) -> AudioStreamBasicDescription {
        AudioStreamBasicDescription(mSampleRate: 48000, mFormatID: id, mFormatFlags: flags, mBytesPerPacket: 0, mFramesPerPacket: 0,
                                    mBytesPerFrame: 0, mChannelsPerFrame: 2, mBitsPerChannel: 0, mReserved: 0)
    }

    /// 48000 frames of 16- or 24-bit stereo noise-like integers, as little-endian bytes.
    static func integerSignal(bits: Int, frames: Int = 48000 + 77) -> [UInt8] {
        var rng = SystemRandomNumberGenerator()
        var out: [UInt8] = []
        var phase = 0.0
        for f in 0..<frames {
            phase += 2 * Double.pi * 440 / 48000
            for c in 0..<2 {
                let value = Int(sin(phase + Double(c)) * Double(1 << (bits - 2))) + Int.random(in: -500...500, using: &rng)
                for b in 0..<(bits / 8) { out.append(UInt8(truncatingIfNeeded: value >> (8 * b))) }
            }
            _ = f
        }
        return out
    }

    @Test(arguments: [(kAudioFormatAppleLossless, 16), (kAudioFormatAppleLossless, 24), (kAudioFormatFLAC, 16), (kAudioFormatFLAC, 24)])
    func losslessRoundTripsAreBitExact(id: AudioFormatID, bits: Int) throws {
        let pcm = Self.pcm(bits: UInt32(bits))
        let signal = Self.integerSignal(bits: bits)
        let flags = CompressedFormat.losslessFlags(bits: bits)
        let encoded = try Self.encode(signal, from: pcm, to: Self.compressed(id, flags: flags))
        #expect(encoded.format.mFramesPerPacket == 4096)
        #expect(encoded.priming == 0)
        #expect(!encoded.cookie.isEmpty)
        let decoded = try Self.decode(encoded.data, packets: encoded.packets, cookie: encoded.cookie, from: encoded.format, to: pcm)
        #expect(decoded.count == signal.count)
        #expect(decoded == signal)
    }

    /// A packet the codec refuses decodes as a packet of silence, and the FillComplexBuffer
    /// call that met it returns the codec's result, so a caller (jaq info) can say so.
    @Test func aPacketTheCodecRefusesIsSilenceAndFillComplexBufferSaysSo() throws {
        let pcm = Self.pcm(bits: 16)
        let signal = Self.integerSignal(bits: 16)
        let encoded = try Self.encode(signal, from: pcm, to: Self.compressed(kAudioFormatFLAC, flags: CompressedFormat.losslessFlags(bits: 16)))
        var data = encoded.data
        let (offset, size) = encoded.packets[3]
        for i in offset..<(offset + size) { data[i] = 0 }
        var source = encoded.format, destination = pcm
        var converter: AudioConverterRef?
        #expect(AudioConverterNew(&source, &destination, &converter) == noErr)
        let c = try #require(converter)
        defer { AudioConverterDispose(c) }
        #expect(AudioConverterSetProperty(c, kAudioConverterDecompressionMagicCookie, UInt32(encoded.cookie.count), encoded.cookie) == noErr)
        let input = Source(data: data, bytesPerFrame: 1)
        input.packets = encoded.packets
        var out: [UInt8] = []
        var failures: [OSStatus] = []
        var buffer = [UInt8](repeating: 0, count: 3000 * 4)
        while true {
            var frames: UInt32 = 3000
            var list = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: 2, mDataByteSize: UInt32(buffer.count), mData: nil))
            let status = buffer.withUnsafeMutableBytes { bytes in
                list.mBuffers.mData = bytes.baseAddress
                return AudioConverterFillComplexBuffer(c, Self.inputProc, Unmanaged.passUnretained(input).toOpaque(), &frames, &list, nil)
            }
            if status != noErr { failures.append(status) }
            out += buffer.prefix(Int(frames) * 4)
            if frames == 0 && status == noErr { break }
        }
        #expect(failures.count == 1, "one call says a packet did not decode: \(failures.map { fourCharacterCode($0) })")
        #expect(out.count == signal.count, "every packet's frames are delivered")
        let bad = (3 * 4096 * 4)..<(4 * 4096 * 4)
        #expect(out[bad].allSatisfy { $0 == 0 }, "the refused packet is silence")
        #expect(out[..<bad.lowerBound] == signal[..<bad.lowerBound] && out[bad.upperBound...] == signal[bad.upperBound...])
    }

    @Test func aacAt128kIsWithinThirtyDecibelsAfterThePriming() throws {
        let float = Self.pcm(bits: 32, float: true)
        let frames = 96000
        var samples: [Float] = []
        for f in 0..<frames {
            let t = Double(f) / 48000
            samples.append(Float(0.2 * sin(2 * Double.pi * 440 * t) + 0.1 * sin(2 * Double.pi * 2500 * t)))
            samples.append(Float(0.2 * sin(2 * Double.pi * 660 * t)))
        }
        let bytes = samples.withUnsafeBytes { Array($0) }
        let encoded = try Self.encode(bytes, from: float, to: Self.compressed(kAudioFormatMPEG4AAC), bitRate: 128_000)
        #expect(encoded.format.mFramesPerPacket == 1024)
        #expect(encoded.cookie.first == 0x03)
        #expect(encoded.priming == 1024)
        let bits = encoded.data.count * 8
        // FFmpeg's AAC encoder is ABR: steady tones need fewer bits than asked, never many more.
        #expect(bits / 2 <= 140_800, "\(bits / 2) bit/s")
        let decoded = try Self.decode(encoded.data, packets: encoded.packets, cookie: encoded.cookie, from: encoded.format, to: float)
        let out = decoded.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        #expect(out.count / 2 >= frames + encoded.priming)
        for c in 0..<2 {
            var signal = 0.0, noise = 0.0
            for f in 0..<frames {
                let a = Double(samples[f * 2 + c]), b = Double(out[(f + encoded.priming) * 2 + c])
                signal += a * a
                noise += (a - b) * (a - b)
            }
            #expect(10 * log10(signal / noise) >= 30)
        }
    }

    /// AudioConverterReset forgets what the converter holds: an AAC decoder stopped part way
    /// through a stream (its overlap, packets it has read ahead) and reset decodes the stream
    /// from its first packet exactly as a new converter does, and again after the end of stream.
    @Test func resetDecodesTheStreamAgainAsANewConverterDoes() throws {
        let float = Self.pcm(bits: 32, float: true)
        let samples: [Float] = (0..<(48000 * 2)).map { (n: Int) -> Float in
            let t = Double(n / 2) / 48000
            return Float(0.3 * sin(2 * Double.pi * 440 * t))
        }
        let encoded = try Self.encode(samples.withUnsafeBytes { Array($0) }, from: float, to: Self.compressed(kAudioFormatMPEG4AAC),
                                      bitRate: 128_000)
        let fresh = try Self.decode(encoded.data, packets: encoded.packets, cookie: encoded.cookie, from: encoded.format, to: float)
        #expect(fresh.count > 48000 * 8)
        var source = encoded.format, destination = float
        var converter: AudioConverterRef?
        #expect(AudioConverterNew(&source, &destination, &converter) == noErr)
        let c = try #require(converter)
        defer { AudioConverterDispose(c) }
        #expect(AudioConverterSetProperty(c, kAudioConverterDecompressionMagicCookie, UInt32(encoded.cookie.count), encoded.cookie) == noErr)
        /// Decodes from the stream's start: `calls` FillComplexBuffer calls of 3000 frames (nil: to the end).
        func decode(calls: Int?) -> [UInt8] {
            let input = Source(data: encoded.data, bytesPerFrame: 1)
            input.packets = encoded.packets
            var out: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 3000 * Int(float.mBytesPerFrame))
            var made = 0
            while calls.map({ made < $0 }) ?? true {
                var frames: UInt32 = 3000
                var list = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: 2, mDataByteSize: UInt32(buffer.count), mData: nil))
                let status = buffer.withUnsafeMutableBytes { bytes in
                    list.mBuffers.mData = bytes.baseAddress
                    return AudioConverterFillComplexBuffer(c, Self.inputProc, Unmanaged.passUnretained(input).toOpaque(), &frames, &list, nil)
                }
                made += 1
                if frames == 0 || status != noErr { break }
                out += buffer.prefix(Int(list.mBuffers.mDataByteSize))
            }
            return out
        }
        let part = decode(calls: 3)
        #expect(part.count == 3 * 3000 * 8 && part[...] == fresh.prefix(part.count), "the first 9000 frames")
        #expect(AudioConverterReset(c) == noErr)
        /// Where `decoded` first differs from the fresh decode (nil: the same).
        func difference(_ decoded: [UInt8]) -> String? {
            guard decoded != fresh else { return nil }
            let first = (0..<min(decoded.count, fresh.count)).first { decoded[$0] != fresh[$0] } ?? min(decoded.count, fresh.count)
            return "\(decoded.count / 8) frames against \(fresh.count / 8), first different at frame \(first / 8)"
        }
        let afterPart = difference(decode(calls: nil))
        #expect(afterPart == nil, "after a reset part way through: \(afterPart ?? "")")
        #expect(AudioConverterReset(c) == noErr)
        let afterEnd = difference(decode(calls: nil))
        #expect(afterEnd == nil, "after a reset at the end of the stream: \(afterEnd ?? "")")
    }

    @Test func convertBufferConvertsLinearPCM() throws {
        var int16 = Self.pcm(bits: 16), float = Self.pcm(bits: 32, float: true)
        var toFloat: AudioConverterRef?, toInt: AudioConverterRef?
        #expect(AudioConverterNew(&int16, &float, &toFloat) == noErr)
        #expect(AudioConverterNew(&float, &int16, &toInt) == noErr)
        let a = try #require(toFloat), b = try #require(toInt)
        let source: [Int16] = (0..<2000).map { Int16(truncatingIfNeeded: $0 &* 977) }
        var floats = [Float](repeating: 0, count: 2000)
        var size = UInt32(8000)
        #expect(AudioConverterConvertBuffer(a, 4000, source, &size, &floats) == noErr)
        #expect(size == 8000)
        #expect(floats[1] == Float(source[1]) / 32768)
        var back = [Int16](repeating: 0, count: 2000)
        var backSize = UInt32(4000)
        #expect(AudioConverterConvertBuffer(b, 8000, floats, &backSize, &back) == noErr)
        #expect(back == source)
        var small = UInt32(10)
        #expect(AudioConverterConvertBuffer(a, 4000, source, &small, &floats) == kAudioConverterErr_InvalidOutputSize)
        #expect(AudioConverterConvertBuffer(a, 3, source, &size, &floats) == kAudioConverterErr_InvalidInputSize)
        #expect(AudioConverterDispose(a) == noErr)
        #expect(AudioConverterDispose(b) == noErr)
        #expect(AudioConverterDispose(a) == kAudio_ParamError, "a disposed converter is not a converter")
    }

    @Test func whatCannotBeConvertedGetsTheReferenceCodes() throws {
        var pcm = Self.pcm(bits: 16)
        var mp3 = Self.compressed(kAudioFormatMPEGLayer3)
        var aac = Self.compressed(kAudioFormatMPEG4AAC)
        var converter: AudioConverterRef?
        #expect(AudioConverterNew(&pcm, &mp3, &converter) == kAudioConverterErr_FormatNotSupported, "no MP3 encoder")
        #expect(converter == nil)
        var other = Self.pcm(bits: 16)
        other.mSampleRate = 44100
        other.mSampleRate = 0.5
        #expect(AudioConverterNew(&pcm, &other, &converter) == kAudioConverterErr_OutputSampleRateOutOfRange)
        #expect(AudioConverterNew(&other, &pcm, &converter) == kAudioConverterErr_InputSampleRateOutOfRange)
        other.mSampleRate = 44100
        other.mChannelsPerFrame = 65
        #expect(AudioConverterNew(&pcm, &other, &converter) == kAudioConverterErr_FormatNotSupported, "65 channels")
        #expect(converter == nil)
        #expect(AudioConverterNew(&aac, &mp3, &converter) == kAudioConverterErr_FormatNotSupported)
        #expect(AudioConverterNew(&pcm, &aac, &converter) == noErr)
        let c = try #require(converter)
        // VBR output needs descriptions; ConvertBuffer does not encode.
        var count: UInt32 = 1
        var buffer = [UInt8](repeating: 0, count: 4096)
        var list = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: 2, mDataByteSize: 4096, mData: nil))
        let status = buffer.withUnsafeMutableBytes { bytes in
            list.mBuffers.mData = bytes.baseAddress
            return AudioConverterFillComplexBuffer(c, Self.inputProc, nil, &count, &list, nil)
        }
        #expect(status == kAudioConverterErr_RequiresPacketDescriptionsError)
        var size = UInt32(4096)
        #expect(AudioConverterConvertBuffer(c, 4, buffer, &size, &buffer) == kAudioConverterErr_OperationNotSupported)
        var tiny: UInt16 = 0
        var tinySize = UInt32(2)
        #expect(AudioConverterGetProperty(c, kAudioConverterEncodeBitRate, &tinySize, &tiny) == kAudioConverterErr_BadPropertySizeError)
        #expect(AudioConverterGetProperty(c, 0x7A7A_7A7A, &tinySize, &tiny) == kAudioConverterErr_PropertyNotSupported)
        #expect(AudioConverterDispose(c) == noErr)
    }
}
