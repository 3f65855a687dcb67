import Foundation
import Glibc
import Testing
import AudioToolbox
import JackTestSupport

/// Converters that change sample rate (libsoxr), channel count and interleaving: sox's
/// `rate -v` is the referee of the rate conversions.
@Suite struct AudioConverterResamplingTests {
    /// Feeds an input proc linear PCM: one buffer (interleaved) or one per channel, in chunks of
    /// at most `chunks[i % count]` frames (all that is asked when empty).
    final class Feeder {
        let buffers: [[UInt8]]
        let bytesPerFrame: Int
        var chunks: [Int] = []
        var calls = 0
        var position = 0
        var copies: [[UInt8]] = []

        init(buffers: [[UInt8]], bytesPerFrame: Int) {
            self.buffers = buffers
            self.bytesPerFrame = bytesPerFrame
        }

        var frames: Int { buffers[0].count / bytesPerFrame }
    }

    static let feed: AudioConverterComplexInputDataProc = { _, ioPackets, ioData, _, user in
        let feeder = Unmanaged<Feeder>.fromOpaque(user!).takeUnretainedValue()
        var frames = min(Int(ioPackets.pointee), feeder.frames - feeder.position)
        if !feeder.chunks.isEmpty { frames = min(frames, feeder.chunks[feeder.calls % feeder.chunks.count]) }
        feeder.calls += 1
        let range = (feeder.position * feeder.bytesPerFrame)..<((feeder.position + frames) * feeder.bytesPerFrame)
        feeder.copies = feeder.buffers.map { Array($0[range]) }
        feeder.position += frames
        ioPackets.pointee = UInt32(frames)
        let list = BufferList(ioData)
        guard list.count == feeder.buffers.count else { return kAudio_ParamError }
        for b in 0..<list.count {
            list[b].mDataByteSize = UInt32(feeder.copies[b].count)
            list[b].mData = feeder.copies[b].withUnsafeMutableBytes { $0.baseAddress }
        }
        return noErr
    }

    static func float(rate: Double, channels: UInt32, nonInterleaved: Bool = false) -> AudioStreamBasicDescription {
        let bytes = 4 * (nonInterleaved ? 1 : channels)
        return AudioStreamBasicDescription(mSampleRate: rate, mFormatID: kAudioFormatLinearPCM,
                                           mFormatFlags: kAudioFormatFlagIsFloat | kAudioFormatFlagIsPacked | (nonInterleaved ? kAudioFormatFlagIsNonInterleaved : 0),
                                           mBytesPerPacket: bytes, mFramesPerPacket: 1, mBytesPerFrame: bytes, mChannelsPerFrame: channels,
                                           mBitsPerChannel: 32, mReserved: 0)
    }

    static func int16(rate: Double, channels: UInt32) -> AudioStreamBasicDescription {
        AudioStreamBasicDescription(mSampleRate: rate, mFormatID: kAudioFormatLinearPCM,
                                    mFormatFlags: kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsPacked,
                                    mBytesPerPacket: 2 * channels, mFramesPerPacket: 1, mBytesPerFrame: 2 * channels,
                                    mChannelsPerFrame: channels, mBitsPerChannel: 16, mReserved: 0)
    }

    static func new(_ from: AudioStreamBasicDescription, _ to: AudioStreamBasicDescription) throws -> AudioConverterRef {
        var source = from, destination = to
        var converter: AudioConverterRef?
        let status = AudioConverterNew(&source, &destination, &converter)
        #expect(status == noErr)
        return try #require(converter)
    }

    /// Runs FillComplexBuffer until it gives no frames, `perCall` frames at a time: the output
    /// buffers (one per channel when non-interleaved), each the whole stream.
    static func drain(_ c: AudioConverterRef, _ feeder: Feeder, to: AudioStreamBasicDescription, perCall: Int = 1000) -> [[UInt8]] {
        let nonInterleaved = to.mFormatFlags & kAudioFormatFlagIsNonInterleaved != 0
        let count = nonInterleaved ? Int(to.mChannelsPerFrame) : 1
        let bytes = perCall * Int(to.mBytesPerFrame)
        var out = [[UInt8]](repeating: [], count: count)
        let list = BufferList(capacity: count)
        defer { list.deallocate() }
        let storage = (0..<count).map { _ in UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 16) }
        defer { storage.forEach { $0.deallocate() } }
        while true {
            for b in 0..<count {
                list[b] = AudioBuffer(mNumberChannels: nonInterleaved ? 1 : to.mChannelsPerFrame, mDataByteSize: UInt32(bytes), mData: storage[b])
            }
            var frames = UInt32(perCall)
            let status = AudioConverterFillComplexBuffer(c, feed, Unmanaged.passUnretained(feeder).toOpaque(), &frames, list.unsafeMutablePointer, nil)
            #expect(status == noErr)
            if frames == 0 || status != noErr { break }
            for b in 0..<count {
                #expect(Int(list[b].mDataByteSize) == Int(frames) * Int(to.mBytesPerFrame))
                out[b] += UnsafeRawBufferPointer(start: storage[b], count: Int(list[b].mDataByteSize))
            }
        }
        return out
    }

    static func floats(_ bytes: [UInt8]) -> [Float] { bytes.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) } }
    static func bytes(_ floats: [Float]) -> [UInt8] { floats.withUnsafeBytes { Array($0) } }

    /// Stereo tones below 16 kHz, faded in and out, interleaved.
    static func tones(rate: Double, frames: Int) -> [Float] {
        var out: [Float] = []
        out.reserveCapacity(frames * 2)
        for n in 0..<frames {
            let t = Double(n) / rate
            let fade = min(1, Double(min(n, frames - 1 - n)) / 1000)
            out.append(Float(fade * (0.3 * sin(2 * .pi * 440 * t) + 0.2 * sin(2 * .pi * 5000 * t) + 0.1 * sin(2 * .pi * 14000 * t))))
            out.append(Float(fade * (0.3 * sin(2 * .pi * 1000 * t) + 0.2 * sin(2 * .pi * 9000 * t))))
        }
        return out
    }

    /// sox's `rate -v` of interleaved stereo floats.
    static func soxRate(_ samples: [Float], from: Double, to: Double, channels: Int = 2) throws -> [Float] {
        let sox = try #require(tool("sox"), "sox is not installed")
        let scratch = try Scratch()
        try Data(bytes(samples)).write(to: scratch.url("in.raw"))
        let raw = ["-t", "raw", "-e", "floating-point", "-b", "32", "-c", "\(channels)"]
        let result = try runReferee(sox, raw + ["-r", "\(Int(from))", scratch.path("in.raw")] + raw + [scratch.path("out.raw"), "rate", "-v", "\(Int(to))"])
        try #require(result.status == 0, "sox: \(result.stderr)")
        return floats(Array(try Data(contentsOf: scratch.url("out.raw"))))
    }

    /// Signal-to-difference ratio in dB of `b` against `a`, over their common frames.
    static func snr(_ a: [Float], _ b: [Float]) -> Double {
        var signal = 0.0, noise = 0.0
        for i in 0..<min(a.count, b.count) {
            signal += Double(a[i]) * Double(a[i])
            noise += (Double(a[i]) - Double(b[i])) * (Double(a[i]) - Double(b[i]))
        }
        return 10 * log10(signal / max(noise, 1e-30))
    }

    @Test(arguments: [(44100.0, 48000.0), (48000.0, 44100.0)])
    func rateConversionMatchesSoxAtLagZero(from: Double, to: Double) throws {
        let frames = Int(from) * 2 + 123
        let signal = Self.tones(rate: from, frames: frames)
        let expected = try Self.soxRate(signal, from: from, to: to)
        let c = try Self.new(Self.float(rate: from, channels: 2), Self.float(rate: to, channels: 2))
        defer { AudioConverterDispose(c) }
        let whole = Feeder(buffers: [Self.bytes(signal)], bytesPerFrame: 8)
        let out = Self.floats(Self.drain(c, whole, to: Self.float(rate: to, channels: 2))[0])
        let ideal = Double(frames) * to / from
        // The proc is asked for blocks, not for the few frames the resampler holds back each time.
        #expect(whole.calls <= 2 * Int(ideal) / 1000 + 10, "\(whole.calls) input proc calls for \(frames) frames")
        #expect(abs(Double(out.count / 2) - ideal) <= 2, "\(out.count / 2) frames for \(ideal)")
        #expect(abs(Double(expected.count / 2) - ideal) <= 2)
        let ratio = Self.snr(expected, out)
        #expect(ratio >= 50, "\(ratio) dB against sox rate -v")

        // The same input in odd-sized chunks, pulled 333 frames at a time, gives the same output.
        let chunked = Feeder(buffers: [Self.bytes(signal)], bytesPerFrame: 8)
        chunked.chunks = [1, 7, 333, 1001, 64]
        let c2 = try Self.new(Self.float(rate: from, channels: 2), Self.float(rate: to, channels: 2))
        defer { AudioConverterDispose(c2) }
        let again = Self.floats(Self.drain(c2, chunked, to: Self.float(rate: to, channels: 2), perCall: 333)[0])
        #expect(again.count == out.count)
        #expect(again == out, "chunked differs from whole: \(Self.snr(out, again)) dB")
    }

    /// Without a channel map, mono goes to both channels of stereo, further input channels are
    /// dropped and further output channels are zero (AudioConverter.h); a map routes any way.
    @Test func channelCountsAndMapsRouteExactly() throws {
        let frames = 1000
        let mono: [Int16] = (0..<frames).map { Int16(truncatingIfNeeded: $0 * 37) }
        let stereo: [Int16] = (0..<frames * 2).map { Int16(truncatingIfNeeded: $0 * 91 - 5000) }
        func convert(_ samples: [Int16], _ from: UInt32, _ to: UInt32, map: [Int32]? = nil) throws -> [Int16] {
            let c = try Self.new(Self.int16(rate: 48000, channels: from), Self.int16(rate: 48000, channels: to))
            defer { AudioConverterDispose(c) }
            if var map {
                #expect(AudioConverterSetProperty(c, kAudioConverterChannelMap, UInt32(map.count * 4), &map) == noErr)
            }
            let feeder = Feeder(buffers: [samples.withUnsafeBytes { Array($0) }], bytesPerFrame: Int(from) * 2)
            let out = Self.drain(c, feeder, to: Self.int16(rate: 48000, channels: to))[0]
            return out.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        }
        func each(_ make: (Int) -> [Int16]) -> [Int16] { (0..<frames).flatMap(make) }
        let l: (Int) -> Int16 = { stereo[$0 * 2] }
        let r: (Int) -> Int16 = { stereo[$0 * 2 + 1] }
        let m: (Int) -> Int16 = { mono[$0] }
        #expect(try convert(mono, 1, 2) == each { [m($0), m($0)] })
        #expect(try convert(stereo, 2, 1) == each { [l($0)] })
        #expect(try convert(stereo, 2, 3) == each { [l($0), r($0), 0] })
        #expect(try convert(mono, 1, 2, map: [0, -1]) == each { [m($0), 0] })
        #expect(try convert(stereo, 2, 2, map: [1, 0]) == each { [r($0), l($0)] })
        #expect(try convert(stereo, 2, 1, map: [1]) == each { [r($0)] })
        #expect(try convert(stereo, 2, 3, map: [1, -1, 1]) == each { [r($0), 0, r($0)] })

        let c = try Self.new(Self.int16(rate: 48000, channels: 1), Self.int16(rate: 48000, channels: 2))
        defer { AudioConverterDispose(c) }
        var map: [Int32] = [7, 7]
        var size: UInt32 = 0
        var writable: DarwinBoolean = false
        #expect(AudioConverterGetPropertyInfo(c, kAudioConverterChannelMap, &size, &writable) == noErr)
        #expect(size == 8 && writable)
        #expect(AudioConverterGetProperty(c, kAudioConverterChannelMap, &size, &map) == noErr)
        #expect(map == [0, 0])
        map = [1, 0]
        #expect(AudioConverterSetProperty(c, kAudioConverterChannelMap, 8, &map) == kAudio_ParamError, "input channel 1 of 1")
        #expect(AudioConverterSetProperty(c, kAudioConverterChannelMap, 4, &map) == kAudioConverterErr_BadPropertySizeError)
        map = [-1, 0]
        #expect(AudioConverterSetProperty(c, kAudioConverterChannelMap, 8, &map) == noErr)
        map = []
        size = 8
        map = [9, 9]
        #expect(AudioConverterGetProperty(c, kAudioConverterChannelMap, &size, &map) == noErr)
        #expect(map == [-1, 0])
    }

    /// Non-interleaved buffers (one AudioBuffer per channel) on either side give exactly the
    /// samples interleaved ones give, with and without a rate conversion.
    @Test(arguments: [48000.0, 44100.0])
    func nonInterleavedBuffersMatchInterleavedOnes(outputRate: Double) throws {
        let frames = 4801
        let signal = Self.tones(rate: 48000, frames: frames)
        let planes = (0..<2).map { c in Self.bytes((0..<frames).map { signal[$0 * 2 + c] }) }
        let interleavedIn = Self.float(rate: 48000, channels: 2), planarIn = Self.float(rate: 48000, channels: 2, nonInterleaved: true)
        let interleavedOut = Self.float(rate: outputRate, channels: 2), planarOut = Self.float(rate: outputRate, channels: 2, nonInterleaved: true)

        let reference = try Self.new(interleavedIn, interleavedOut)
        defer { AudioConverterDispose(reference) }
        let expected = Self.floats(Self.drain(reference, Feeder(buffers: [Self.bytes(signal)], bytesPerFrame: 8), to: interleavedOut)[0])
        let expectedPlanes = (0..<2).map { c in (0..<(expected.count / 2)).map { expected[$0 * 2 + c] } }

        let planarToPlanar = try Self.new(planarIn, planarOut)
        defer { AudioConverterDispose(planarToPlanar) }
        let feeder = Feeder(buffers: planes, bytesPerFrame: 4)
        feeder.chunks = [999, 17]
        let both = Self.drain(planarToPlanar, feeder, to: planarOut, perCall: 777).map(Self.floats)
        #expect(both == expectedPlanes)

        let planarToInterleaved = try Self.new(planarIn, interleavedOut)
        defer { AudioConverterDispose(planarToInterleaved) }
        #expect(Self.floats(Self.drain(planarToInterleaved, Feeder(buffers: planes, bytesPerFrame: 4), to: interleavedOut)[0]) == expected)

        let interleavedToPlanar = try Self.new(interleavedIn, planarOut)
        defer { AudioConverterDispose(interleavedToPlanar) }
        let split = Self.drain(interleavedToPlanar, Feeder(buffers: [Self.bytes(signal)], bytesPerFrame: 8), to: planarOut).map(Self.floats)
        #expect(split == expectedPlanes)
    }

    /// AudioConverterReset forgets the resampler's state and the end of the stream: the stream
    /// converted again after a reset part way through is a new converter's output.
    @Test func resetWithRateConversionGivesANewConvertersOutput() throws {
        let signal = Self.tones(rate: 44100, frames: 30000)
        let from = Self.float(rate: 44100, channels: 2), to = Self.float(rate: 48000, channels: 2)
        let fresh = try Self.new(from, to)
        defer { AudioConverterDispose(fresh) }
        let expected = Self.drain(fresh, Feeder(buffers: [Self.bytes(signal)], bytesPerFrame: 8), to: to)
        let c = try Self.new(from, to)
        defer { AudioConverterDispose(c) }
        // Part way: one FillComplexBuffer of 5000 frames.
        let part = Feeder(buffers: [Self.bytes(signal)], bytesPerFrame: 8)
        var frames: UInt32 = 5000
        var buffer = [Float](repeating: 0, count: 10000)
        let status = buffer.withUnsafeMutableBytes { bytes in
            var list = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: 2, mDataByteSize: 40000, mData: bytes.baseAddress))
            return AudioConverterFillComplexBuffer(c, Self.feed, Unmanaged.passUnretained(part).toOpaque(), &frames, &list, nil)
        }
        #expect(status == noErr && frames == 5000)
        #expect(AudioConverterReset(c) == noErr)
        #expect(Self.drain(c, Feeder(buffers: [Self.bytes(signal)], bytesPerFrame: 8), to: to) == expected)
        // And after the end of the stream.
        #expect(AudioConverterReset(c) == noErr)
        #expect(Self.drain(c, Feeder(buffers: [Self.bytes(signal)], bytesPerFrame: 8), to: to) == expected)
    }

    /// A call asking for more output than a UInt32 count of input packets can name (768 kHz to
    /// 1 kHz, 5.6 M frames asked): the input proc is asked for as many as can be named, and the
    /// converter answers what its input gives (found by review: the request trapped).
    @Test func aHugeRequestThroughAHighRatioDoesNotTrap() throws {
        var from = Self.float(rate: 768_000, channels: 1)
        var to = Self.float(rate: 1000, channels: 1)
        var converter: AudioConverterRef?
        try #require(AudioConverterNew(&from, &to, &converter) == noErr)
        let c = try #require(converter)
        defer { AudioConverterDispose(c) }
        let feeder = Feeder(buffers: [Self.bytes([Float](repeating: 0.25, count: 768_000))], bytesPerFrame: 4)
        var frames: UInt32 = 5_600_000
        var buffer = [Float](repeating: 0, count: Int(frames))
        let status = buffer.withUnsafeMutableBytes { bytes in
            var list = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(bytes.count), mData: bytes.baseAddress))
            return AudioConverterFillComplexBuffer(c, Self.feed, Unmanaged.passUnretained(feeder).toOpaque(), &frames, &list, nil)
        }
        #expect(status == noErr)
        #expect(abs(Int(frames) - 1000) <= 2, "a second of input is a second of output: \(frames) frames")
    }
}

/// An AudioBufferList's buffers by index (the tests' stand-in for Apple's UnsafeMutableAudioBufferListPointer).
struct BufferList {
    let unsafeMutablePointer: UnsafeMutablePointer<AudioBufferList>

    init(_ list: UnsafeMutablePointer<AudioBufferList>) { unsafeMutablePointer = list }

    /// A list of `capacity` buffers, mNumberBuffers set; deallocate() it.
    init(capacity: Int) {
        let bytes = MemoryLayout<AudioBufferList>.offset(of: \.mBuffers)! + max(capacity, 1) * MemoryLayout<AudioBuffer>.stride
        unsafeMutablePointer = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 16).bindMemory(to: AudioBufferList.self, capacity: 1)
        unsafeMutablePointer.pointee.mNumberBuffers = UInt32(capacity)
    }

    func deallocate() { UnsafeMutableRawPointer(unsafeMutablePointer).deallocate() }

    var count: Int { Int(unsafeMutablePointer.pointee.mNumberBuffers) }

    private var buffers: UnsafeMutablePointer<AudioBuffer> {
        (UnsafeMutableRawPointer(unsafeMutablePointer) + MemoryLayout<AudioBufferList>.offset(of: \.mBuffers)!)
            .assumingMemoryBound(to: AudioBuffer.self)
    }

    subscript(index: Int) -> AudioBuffer {
        get { buffers[index] }
        nonmutating set { buffers[index] = newValue }
    }
}
