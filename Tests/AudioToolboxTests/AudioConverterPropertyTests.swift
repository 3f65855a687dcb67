import Foundation
import Glibc
import Testing
import AudioToolbox
import JackTestSupport

/// The converter properties of issue #25 (sample-rate converter quality, complexity, prime
/// method and info, buffer-size calculations, stream descriptions, bit rate), with their result
/// codes; ConvertComplexBuffer, NewSpecific, and codecs with a rate conversion.
@Suite struct AudioConverterPropertyTests {
    typealias R = AudioConverterResamplingTests

    static func get<T: BitwiseCopyable>(_ c: AudioConverterRef, _ id: AudioConverterPropertyID, _ initial: T) -> (OSStatus, T) {
        var value = initial
        var size = UInt32(MemoryLayout<T>.size)
        let status = AudioConverterGetProperty(c, id, &size, &value)
        return (status, value)
    }

    static func set(_ c: AudioConverterRef, _ id: AudioConverterPropertyID, _ value: UInt32, size: UInt32 = 4) -> OSStatus {
        var value = value
        return AudioConverterSetProperty(c, id, size, &value)
    }

    /// One FillComplexBuffer of `frames` frames from `feeder`.
    static func fillOnce(_ c: AudioConverterRef, _ feeder: R.Feeder, frames: Int, bytesPerFrame: Int) -> OSStatus {
        var buffer = [UInt8](repeating: 0, count: frames * bytesPerFrame)
        var count = UInt32(frames)
        return buffer.withUnsafeMutableBytes { bytes in
            var list = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: 2, mDataByteSize: UInt32(bytes.count), mData: bytes.baseAddress))
            return AudioConverterFillComplexBuffer(c, R.feed, Unmanaged.passUnretained(feeder).toOpaque(), &count, &list, nil)
        }
    }

    @Test func sampleRateConverterQualityAndComplexity() throws {
        let from = R.float(rate: 44100, channels: 2), to = R.float(rate: 48000, channels: 2)
        let c = try R.new(from, to)
        defer { AudioConverterDispose(c) }
        for id in [kAudioConverterSampleRateConverterQuality, kAudioConverterSampleRateConverterComplexity, kAudioConverterPrimeMethod] {
            var size: UInt32 = 0
            var writable = false
            #expect(AudioConverterGetPropertyInfo(c, id, &size, &writable) == noErr)
            #expect(size == 4 && writable)
            #expect(Self.set(c, id, 0, size: 2) == kAudioConverterErr_BadPropertySizeError)
        }
        #expect(Self.get(c, kAudioConverterSampleRateConverterQuality, UInt32(9)) == (noErr, kAudioConverterQuality_High))
        #expect(Self.get(c, kAudioConverterSampleRateConverterComplexity, UInt32(9)) == (noErr, kAudioConverterSampleRateConverterComplexity_Normal))
        #expect(Self.get(c, kAudioConverterPrimeMethod, UInt32(9)) == (noErr, kConverterPrimeMethod_Normal))
        #expect(Self.set(c, kAudioConverterSampleRateConverterQuality, kAudioConverterQuality_Max) == noErr)
        #expect(Self.get(c, kAudioConverterSampleRateConverterQuality, UInt32(9)) == (noErr, kAudioConverterQuality_Max))
        #expect(Self.set(c, kAudioConverterSampleRateConverterQuality, 200) == kAudio_ParamError)
        #expect(Self.set(c, kAudioConverterSampleRateConverterComplexity, kAudioConverterSampleRateConverterComplexity_Mastering) == noErr)
        #expect(Self.get(c, kAudioConverterSampleRateConverterComplexity, UInt32(9)) == (noErr, kAudioConverterSampleRateConverterComplexity_Mastering))
        #expect(Self.set(c, kAudioConverterSampleRateConverterComplexity, 0x7878_7878) == kAudio_ParamError)
        #expect(Self.set(c, kAudioConverterPrimeMethod, 3) == kAudio_ParamError)
        var tiny: UInt16 = 0
        var tinySize: UInt32 = 2
        #expect(AudioConverterGetProperty(c, kAudioConverterSampleRateConverterQuality, &tinySize, &tiny) == kAudioConverterErr_BadPropertySizeError)
        // Once converting, the resampler is fixed until AudioConverterReset.
        let feeder = R.Feeder(buffers: [R.bytes(R.tones(rate: 44100, frames: 4410))], bytesPerFrame: 8)
        #expect(Self.fillOnce(c, feeder, frames: 100, bytesPerFrame: 8) == noErr)
        #expect(Self.set(c, kAudioConverterSampleRateConverterQuality, kAudioConverterQuality_Low) == kAudioConverterErr_OperationNotSupported)
        #expect(Self.set(c, kAudioConverterPrimeMethod, kConverterPrimeMethod_None) == kAudioConverterErr_OperationNotSupported)
        #expect(AudioConverterReset(c) == noErr)
        #expect(Self.set(c, kAudioConverterSampleRateConverterQuality, kAudioConverterQuality_Low) == noErr)

        // Without a rate conversion there is no sample-rate converter.
        let plain = try R.new(from, R.float(rate: 44100, channels: 2))
        defer { AudioConverterDispose(plain) }
        #expect(Self.get(plain, kAudioConverterSampleRateConverterQuality, UInt32(0)).0 == kAudioConverterErr_PropertyNotSupported)
        #expect(Self.set(plain, kAudioConverterSampleRateConverterComplexity, kAudioConverterSampleRateConverterComplexity_Normal)
                == kAudioConverterErr_PropertyNotSupported)
        #expect(Self.get(plain, kAudioConverterPrimeMethod, UInt32(9)) == (noErr, kConverterPrimeMethod_Normal))
        #expect(Self.set(plain, kAudioConverterPrimeMethod, kConverterPrimeMethod_None) == kAudioConverterErr_PropertyNotSupported)
        #expect(Self.get(plain, kAudioConverterPrimeInfo, AudioConverterPrimeInfo(leadingFrames: 9, trailingFrames: 9)).1.leadingFrames == 0)
    }

    /// The quality chooses the filter: Min (soxr's quick cubic) is far from sox's `rate -v`,
    /// Max and Mastering are close to it.
    @Test func qualityChangesTheFilter() throws {
        let signal = R.tones(rate: 44100, frames: 44100)
        let expected = try R.soxRate(signal, from: 44100, to: 48000)
        func convert(quality: UInt32, complexity: UInt32) throws -> [Float] {
            let to = R.float(rate: 48000, channels: 2)
            let c = try R.new(R.float(rate: 44100, channels: 2), to)
            defer { AudioConverterDispose(c) }
            #expect(Self.set(c, kAudioConverterSampleRateConverterQuality, quality) == noErr)
            #expect(Self.set(c, kAudioConverterSampleRateConverterComplexity, complexity) == noErr)
            return R.floats(R.drain(c, R.Feeder(buffers: [R.bytes(signal)], bytesPerFrame: 8), to: to)[0])
        }
        let low = R.snr(expected, try convert(quality: kAudioConverterQuality_Min, complexity: kAudioConverterSampleRateConverterComplexity_Normal))
        let linear = R.snr(expected, try convert(quality: kAudioConverterQuality_Max, complexity: kAudioConverterSampleRateConverterComplexity_Linear))
        let max = R.snr(expected, try convert(quality: kAudioConverterQuality_Max, complexity: kAudioConverterSampleRateConverterComplexity_Normal))
        let mastering = R.snr(expected, try convert(quality: kAudioConverterQuality_Max, complexity: kAudioConverterSampleRateConverterComplexity_Mastering))
        #expect(low < 60 && linear < 60, "Min \(low) dB, Linear \(linear) dB")
        #expect(max >= 100 && mastering >= 100, "Max \(max) dB, Mastering \(mastering) dB")
    }

    /// PrimeInfo is the resampler's reach in input frames; kConverterPrimeMethod_None puts that
    /// latency at the start of the output, kConverterPrimeMethod_Pre drops the leading frames.
    @Test func primeInfoAndPrimeMethods() throws {
        let from = R.float(rate: 48000, channels: 2), to = R.float(rate: 96000, channels: 2)
        let frames = 9600
        var signal = [Float](repeating: 0, count: frames * 2)
        signal[2000 * 2] = 1
        signal[2000 * 2 + 1] = -1
        func convert(_ method: UInt32, _ input: [Float]) throws -> (AudioConverterPrimeInfo, [Float]) {
            let c = try R.new(from, to)
            defer { AudioConverterDispose(c) }
            #expect(Self.set(c, kAudioConverterPrimeMethod, method) == noErr)
            let info = Self.get(c, kAudioConverterPrimeInfo, AudioConverterPrimeInfo())
            #expect(info.0 == noErr)
            return (info.1, R.floats(R.drain(c, R.Feeder(buffers: [R.bytes(input)], bytesPerFrame: 8), to: to)[0]))
        }
        func peak(_ s: [Float]) -> Int { (0..<(s.count / 2)).max { s[$0 * 2] < s[$1 * 2] }! }
        let (info, normal) = try convert(kConverterPrimeMethod_Normal, signal)
        #expect(info.leadingFrames > 0 && info.leadingFrames == info.trailingFrames && info.leadingFrames < 4096, "\(info)")
        #expect(normal.count == frames * 2 * 2)
        #expect(peak(normal) == 4000)
        let (_, none) = try convert(kConverterPrimeMethod_None, signal)
        #expect(none.count == normal.count)
        #expect(peak(none) == 4000 + 2 * Int(info.trailingFrames))
        let lead = Int(info.leadingFrames)
        let (_, pre) = try convert(kConverterPrimeMethod_Pre, [Float](repeating: 0, count: lead * 2) + signal)
        #expect(pre.count == normal.count)
        #expect(R.snr(normal, pre) >= 100)
    }

    @Test func bufferSizesAndStreamDescriptions() throws {
        let from = R.float(rate: 44100, channels: 2), to = R.int16(rate: 48000, channels: 1)
        let c = try R.new(from, to)
        defer { AudioConverterDispose(c) }
        #expect(Self.get(c, kAudioConverterPropertyCalculateInputBufferSize, UInt32(48000 * 2)) == (noErr, UInt32(44100 * 8)))
        #expect(Self.get(c, kAudioConverterPropertyCalculateOutputBufferSize, UInt32(44100 * 8)) == (noErr, UInt32(48000 * 2)))
        var tiny: UInt16 = 8
        var size: UInt32 = 2
        #expect(AudioConverterGetProperty(c, kAudioConverterPropertyCalculateInputBufferSize, &size, &tiny) == kAudioConverterErr_BadPropertySizeError)
        let input = Self.get(c, kAudioConverterCurrentInputStreamDescription, AudioStreamBasicDescription())
        let output = Self.get(c, kAudioConverterCurrentOutputStreamDescription, AudioStreamBasicDescription())
        #expect(input.0 == noErr && input.1.matches(from))
        #expect(output.0 == noErr && output.1.matches(to))

        // A decoder's input is packets: no input size to calculate.
        var aac = AudioConverterTests.compressed(kAudioFormatMPEG4AAC)
        var pcm = R.float(rate: 44100, channels: 2)
        var decoder: AudioConverterRef?
        #expect(AudioConverterNew(&aac, &pcm, &decoder) == noErr)
        let d = try #require(decoder)
        defer { AudioConverterDispose(d) }
        #expect(Self.get(d, kAudioConverterPropertyCalculateInputBufferSize, UInt32(4096)).0 == kAudioConverterErr_PropertyNotSupported)
        let decoderInput = Self.get(d, kAudioConverterCurrentInputStreamDescription, AudioStreamBasicDescription()).1
        #expect(decoderInput.mFramesPerPacket == 1024 && decoderInput.mSampleRate == 48000)
    }

    @Test func encodeBitRateAtAnotherRate() throws {
        var pcm = R.float(rate: 44100, channels: 2)
        var aac = AudioConverterTests.compressed(kAudioFormatMPEG4AAC)
        var converter: AudioConverterRef?
        #expect(AudioConverterNew(&pcm, &aac, &converter) == noErr)
        let c = try #require(converter)
        defer { AudioConverterDispose(c) }
        #expect(Self.set(c, kAudioConverterEncodeBitRate, 96000) == noErr)
        #expect(Self.get(c, kAudioConverterEncodeBitRate, UInt32(0)) == (noErr, 96000))
        #expect(Self.set(c, kAudioConverterEncodeBitRate, 96000, size: 8) == kAudioConverterErr_BadPropertySizeError)
        let plain = try R.new(pcm, R.float(rate: 48000, channels: 2))
        defer { AudioConverterDispose(plain) }
        #expect(Self.set(plain, kAudioConverterEncodeBitRate, 96000) == kAudioConverterErr_PropertyNotSupported)
    }

    /// AAC decoded straight to 44.1 kHz is the 48 kHz decode resampled by sox, at lag 0.
    @Test func aacDecodesAtAnotherRate() throws {
        let float48 = AudioConverterTests.pcm(bits: 32, float: true)
        let signal = R.tones(rate: 48000, frames: 48000)
        let encoded = try AudioConverterTests.encode(R.bytes(signal), from: float48, to: AudioConverterTests.compressed(kAudioFormatMPEG4AAC),
                                                     bitRate: 128_000)
        let at48 = R.floats(try AudioConverterTests.decode(encoded.data, packets: encoded.packets, cookie: encoded.cookie,
                                                           from: encoded.format, to: float48))
        let at44 = R.floats(try AudioConverterTests.decode(encoded.data, packets: encoded.packets, cookie: encoded.cookie,
                                                           from: encoded.format, to: R.float(rate: 44100, channels: 2)))
        let expected = try R.soxRate(at48, from: 48000, to: 44100)
        let ideal = Double(at48.count / 2) * 44100 / 48000
        #expect(abs(Double(at44.count / 2) - ideal) <= 2, "\(at44.count / 2) frames for \(ideal)")
        #expect(R.snr(expected, at44) >= 50, "\(R.snr(expected, at44)) dB")
    }

    /// 44.1 kHz PCM encoded to 48 kHz AAC decodes (after the priming) to sox's resampling of it.
    @Test func pcmEncodesAtAnotherRate() throws {
        let float44 = R.float(rate: 44100, channels: 2)
        let float48 = AudioConverterTests.pcm(bits: 32, float: true)
        let signal = R.tones(rate: 44100, frames: 44100)
        let encoded = try AudioConverterTests.encode(R.bytes(signal), from: float44, to: AudioConverterTests.compressed(kAudioFormatMPEG4AAC),
                                                     bitRate: 192_000)
        #expect(encoded.format.mSampleRate == 48000)
        let decoded = R.floats(try AudioConverterTests.decode(encoded.data, packets: encoded.packets, cookie: encoded.cookie,
                                                              from: encoded.format, to: float48))
        let expected = try R.soxRate(signal, from: 44100, to: 48000)
        let trimmed = Array(decoded.dropFirst(encoded.priming * 2))
        #expect(trimmed.count >= expected.count)
        #expect(R.snr(expected, trimmed) >= 20, "\(R.snr(expected, trimmed)) dB")
    }

    /// Mono 44.1 kHz 16-bit PCM encoded to stereo 48 kHz ALAC: both channels carry the mono
    /// signal resampled, exactly alike (the rate and channel stages run before the encoder).
    @Test func monoEncodesToStereoAtAnotherRate() throws {
        let frames = 44100
        let mono: [Int16] = (0..<frames).map { Int16(8000 * sin(2 * Double.pi * 440 * Double($0) / 44100)) }
        let stereo48 = AudioConverterTests.pcm(bits: 16)
        let alac = AudioConverterTests.compressed(kAudioFormatAppleLossless, flags: 1 /* 16-bit source */)
        let encoded = try AudioConverterTests.encode(mono.withUnsafeBytes { Array($0) }, from: R.int16(rate: 44100, channels: 1), to: alac)
        #expect(encoded.format.mSampleRate == 48000 && encoded.format.mChannelsPerFrame == 2)
        let decoded = try AudioConverterTests.decode(encoded.data, packets: encoded.packets, cookie: encoded.cookie, from: encoded.format, to: stereo48)
        let samples = decoded.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        #expect(samples.count == 48000 * 2)
        #expect((0..<(samples.count / 2)).allSatisfy { samples[$0 * 2] == samples[$0 * 2 + 1] })
        let expected = try R.soxRate(mono.map { Float($0) / 32768 }, from: 44100, to: 48000, channels: 1)
        let left = (0..<(samples.count / 2)).map { Float(samples[$0 * 2]) / 32768 }
        #expect(R.snr(expected, left) >= 50, "\(R.snr(expected, left)) dB")
    }

    @Test func convertComplexBufferConvertsPCMAtOneRate() throws {
        let frames = 480
        let samples: [Int16] = (0..<frames * 2).map { Int16(truncatingIfNeeded: $0 * 123) }
        let c = try R.new(R.int16(rate: 48000, channels: 2), R.float(rate: 48000, channels: 2, nonInterleaved: true))
        defer { AudioConverterDispose(c) }
        var input = samples
        let planes = (0..<2).map { _ in UnsafeMutablePointer<Float>.allocate(capacity: frames) }
        defer { planes.forEach { $0.deallocate() } }
        let out = BufferList(capacity: 2)
        defer { out.deallocate() }
        func arm(_ bytes: Int) { for b in 0..<2 { out[b] = AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(bytes), mData: planes[b]) } }
        let status: (UInt32, Int) -> OSStatus = { count, bytes in
            arm(bytes)
            return input.withUnsafeMutableBytes { raw in
                var list = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: 2, mDataByteSize: UInt32(raw.count), mData: raw.baseAddress))
                return AudioConverterConvertComplexBuffer(c, count, &list, out.unsafeMutablePointer)
            }
        }
        #expect(status(UInt32(frames), frames * 4) == noErr)
        #expect(out[0].mDataByteSize == UInt32(frames * 4) && out[1].mDataByteSize == UInt32(frames * 4))
        for ch in 0..<2 {
            #expect((0..<frames).allSatisfy { planes[ch][$0] == Float(samples[$0 * 2 + ch]) / 32768 })
        }
        #expect(status(UInt32(frames), frames * 4 - 4) == kAudioConverterErr_InvalidOutputSize)
        #expect(status(UInt32(frames + 1), frames * 8) == kAudioConverterErr_InvalidInputSize)
        out.unsafeMutablePointer.pointee.mNumberBuffers = 1
        input.withUnsafeMutableBytes { raw in
            var list = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: 2, mDataByteSize: UInt32(raw.count), mData: raw.baseAddress))
            #expect(AudioConverterConvertComplexBuffer(c, 10, &list, out.unsafeMutablePointer) == kAudio_ParamError, "one buffer for two planes")
        }

        // A rate conversion or a codec has no fixed output size.
        let resampling = try R.new(R.int16(rate: 48000, channels: 2), R.int16(rate: 44100, channels: 2))
        defer { AudioConverterDispose(resampling) }
        var buffer = [Int16](repeating: 0, count: 64)
        buffer.withUnsafeMutableBytes { raw in
            var a = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: 2, mDataByteSize: 64, mData: raw.baseAddress))
            var b = a
            #expect(AudioConverterConvertComplexBuffer(resampling, 8, &a, &b) == kAudioConverterErr_InvalidInputSize)
            var size: UInt32 = 64
            #expect(AudioConverterConvertBuffer(resampling, 32, raw.baseAddress!, &size, raw.baseAddress!) == kAudioConverterErr_InvalidInputSize)
        }
    }

    @Test func newSpecificTakesSoftwareCodecsOnly() throws {
        var pcm = AudioConverterTests.pcm(bits: 16)
        var aac = AudioConverterTests.compressed(kAudioFormatMPEG4AAC)
        var converter: AudioConverterRef?
        var hardware = [AudioClassDescription(mType: kAudioEncoderComponentType, mSubType: kAudioFormatMPEG4AAC,
                                              mManufacturer: kAppleHardwareAudioCodecManufacturer)]
        #expect(AudioConverterNewSpecific(&pcm, &aac, 1, &hardware, &converter) == kAudioConverterErr_FormatNotSupported)
        #expect(converter == nil)
        #expect(AudioConverterNewSpecific(&pcm, &aac, 0, &hardware, &converter) == kAudio_ParamError)
        var both = hardware + [AudioClassDescription(mType: kAudioEncoderComponentType, mSubType: kAudioFormatMPEG4AAC,
                                                     mManufacturer: kAppleSoftwareAudioCodecManufacturer)]
        #expect(AudioConverterNewSpecific(&pcm, &aac, 2, &both, &converter) == noErr)
        let c = try #require(converter)
        #expect(Self.get(c, kAudioConverterCurrentOutputStreamDescription, AudioStreamBasicDescription()).1.mFramesPerPacket == 1024)
        #expect(AudioConverterDispose(c) == noErr)
    }
}

/// Tests/AudioToolboxTests/CPrograms/audio_converter.c: NewSpecific, ConvertComplexBuffer with a
/// channel map and a rate conversion from C, built with -Wall -Wextra -Werror.
@Suite struct AudioConverterCProgramTests {
    @Test func aCProgramConvertsRatesAndChannels() throws {
        let scratch = try Scratch()
        let program = scratch.url("audio_converter")
        let build = try CProgram.compile("Tests/AudioToolboxTests/CPrograms/audio_converter.c", into: program,
                                         flags: ["-Wall", "-Wextra", "-Werror", "-std=c11"])
        try #require(build.status == 0, "cc failed:\n\(build.diagnostics)")
        let result = try run(program.path, [])
        let output = String(decoding: result.stdout, as: UTF8.self)
        #expect(result.status == 0, "audio_converter:\n\(output)\(result.stderr)")
        #expect(output.contains("44100 frames at 44.1 kHz gave 48000 at 48 kHz"), "\(output)")
        #expect(output.contains("0 failures"), "\(output)")
    }
}
