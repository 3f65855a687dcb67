import Testing
@testable import QueueCore

@Suite struct SampleCodecTests {
    func roundTrip(_ format: StreamFormat, bytes: [UInt8]) -> [UInt8] {
        let codec = SampleCodec(format: format)
        let frames = bytes.count / format.bytesPerFrame
        let planes = (0..<format.channelCount).map { _ in UnsafeMutablePointer<Float>.allocate(capacity: frames) }
        defer { planes.forEach { $0.deallocate() } }
        var out = [UInt8](repeating: 0, count: bytes.count)
        bytes.withUnsafeBytes { source in
            planes.withUnsafeBufferPointer { table in
                codec.decode(source.baseAddress!, frames: frames, into: table.baseAddress!)
            }
        }
        let readable = planes.map { UnsafePointer($0) }
        readable.withUnsafeBufferPointer { table in
            out.withUnsafeMutableBytes { codec.encode(table.baseAddress!, frames: frames, into: $0.baseAddress!) }
        }
        return out
    }

    @Test(arguments: [
        (bits: 8, bytes: 1, bigEndian: false, signed: true), (bits: 8, bytes: 1, bigEndian: false, signed: false),
        (bits: 16, bytes: 2, bigEndian: false, signed: true), (bits: 16, bytes: 2, bigEndian: true, signed: true),
        (bits: 24, bytes: 3, bigEndian: false, signed: true), (bits: 24, bytes: 3, bigEndian: true, signed: true),
    ])
    func integerFormatsRoundTripExactly(bits: Int, bytes: Int, bigEndian: Bool, signed: Bool) {
        // Every byte pattern of the sample width (or a dense sample of them) survives float and back.
        let format = StreamFormat(sampleRate: 48000, encoding: .linearPCM, isBigEndian: bigEndian,
                                  isSignedInteger: signed, bytesPerFrame: 2 * bytes, channelCount: 2, bitsPerChannel: bits)
        var data: [UInt8] = []
        var x: UInt32 = 0x1234_5678
        for _ in 0..<4096 {
            x = x &* 1_664_525 &+ 1_013_904_223
            for b in 0..<(2 * bytes) { data.append(UInt8(truncatingIfNeeded: x >> (8 * (b % 4)))) }
        }
        // Include the extremes.
        data.replaceSubrange(0..<bytes, with: [UInt8](repeating: 0xFF, count: bytes))
        data.replaceSubrange(bytes..<(2 * bytes), with: [UInt8](repeating: 0x00, count: bytes))
        #expect(roundTrip(format, bytes: data) == data)
    }

    @Test func int16MapsToExactFloat() {
        let format = StreamFormat.linearPCM(sampleRate: 48000, channels: 1, bits: 16)
        let codec = SampleCodec(format: format)
        let samples: [Int16] = [-32768, -1, 0, 1, 16384, 32767]
        let plane = UnsafeMutablePointer<Float>.allocate(capacity: samples.count)
        defer { plane.deallocate() }
        var table = [plane]
        samples.withUnsafeBytes { codec.decode($0.baseAddress!, frames: samples.count, into: &table) }
        #expect((0..<samples.count).map { plane[$0] } == samples.map { Float($0) / 32768 })
    }

    @Test func floatFormatsRoundTripExactly() {
        for bigEndian in [false, true] {
            let format = StreamFormat(sampleRate: 48000, encoding: .linearPCM, isFloat: true, isBigEndian: bigEndian,
                                      isSignedInteger: false, bytesPerFrame: 8, channelCount: 2, bitsPerChannel: 32)
            let values: [Float] = [0, -1, 1, 0.5, -0.25, 1e-7, 0.999_999_9, -0.333]
            var bytes: [UInt8] = []
            for v in values { withUnsafeBytes(of: bigEndian ? v.bitPattern.byteSwapped : v.bitPattern) { bytes += $0 } }
            #expect(roundTrip(format, bytes: bytes) == bytes)
        }
    }

    /// Float32 is interleaved four channels at a time: every channel count around a multiple
    /// of four and every frame count around the 4-frame and 64-frame blocks keeps each sample
    /// in its place.
    @Test(arguments: [1, 2, 3, 4, 5, 7, 8, 13, 64])
    func float32InterleavesEveryChannelCountExactly(channels: Int) {
        let format = StreamFormat(sampleRate: 48000, encoding: .linearPCM, isFloat: true, isBigEndian: false,
                                  isSignedInteger: false, bytesPerFrame: 4 * channels, channelCount: channels, bitsPerChannel: 32)
        let codec = SampleCodec(format: format)
        for frames in [0, 1, 3, 4, 5, 63, 64, 65, 130, 257] {
            let planes = (0..<channels).map { c in
                let plane = UnsafeMutablePointer<Float>.allocate(capacity: max(frames, 1))
                for i in 0..<frames { plane[i] = Float(c * 100_000 + i + 1) }
                return UnsafePointer(plane)
            }
            defer { planes.forEach { UnsafeMutablePointer(mutating: $0).deallocate() } }
            var out = [Float](repeating: -1, count: frames * channels + 1)
            planes.withUnsafeBufferPointer { table in
                out.withUnsafeMutableBytes { codec.encode(table.baseAddress!, frames: frames, into: $0.baseAddress!) }
            }
            let expected = (0..<(frames * channels)).map { Float(($0 % channels) * 100_000 + $0 / channels + 1) } + [-1]
            #expect(out == expected, "\(channels) channels, \(frames) frames")
        }
    }

    @Test func transposeDeinterleavesFourChannelsExactly() {
        for (channels, offset) in [(4, 0), (6, 1), (9, 5)] {
            for (first, end) in [(0, 0), (0, 3), (0, 4), (1, 9), (3, 64), (0, 67)] {
                let rows = (0..<(end * channels)).map { UInt32($0 + 1) }
                let planes = (0..<4).map { _ in UnsafeMutablePointer<UInt32>.allocate(capacity: end + 1) }
                defer { planes.forEach { $0.deallocate() } }
                for plane in planes { plane.initialize(repeating: 0, count: end + 1) }
                rows.withUnsafeBytes { source in
                    Transpose32.deinterleave4(source.baseAddress! + 4 * offset, rowBytes: 4 * channels,
                                              into: UnsafeMutableRawPointer(planes[0]), UnsafeMutableRawPointer(planes[1]),
                                              UnsafeMutableRawPointer(planes[2]), UnsafeMutableRawPointer(planes[3]),
                                              first: first, end: end)
                }
                for k in 0..<4 {
                    let expected = (0...end).map { t in first <= t && t < end ? UInt32(t * channels + offset + k + 1) : 0 }
                    #expect(Array(UnsafeBufferPointer(start: planes[k], count: end + 1)) == expected, "\(channels) channels from \(offset), frames \(first)..<\(end), plane \(k)")
                }
            }
        }
    }

    @Test func g711CodesRoundTrip() {
        for encoding in [StreamFormat.Encoding.muLaw, .aLaw] {
            let format = StreamFormat(sampleRate: 8000, encoding: encoding, isSignedInteger: false,
                                      bytesPerFrame: 1, channelCount: 1, bitsPerChannel: 8)
            // µ-law 0x7F is "negative zero", which encodes back as 0xFF.
            let codes = (0...255).map { UInt8($0) }.filter { !(encoding == .muLaw && $0 == 0x7F) }
            #expect(roundTrip(format, bytes: codes) == codes, "\(encoding)")
        }
    }

    @Test func g711DecodesToTheStandardValues() {
        #expect(G711.muLawToLinear[0xFF] == 0)
        #expect(G711.muLawToLinear[0x00] == -32124)
        #expect(G711.muLawToLinear[0x80] == 32124)
        #expect(G711.aLawToLinear[0xD5] == 8)
        #expect(G711.aLawToLinear[0x55] == -8)
        #expect(G711.aLawToLinear[0xAA] == 32256)
    }

    @Test func validationRefusesBadFormats() {
        let good = StreamFormat.linearPCM(sampleRate: 44100, channels: 2, bits: 16)
        #expect(throws: Never.self) { try good.validate(allowsZeroRate: false, bytesPerPacket: 4, framesPerPacket: 1) }
        var zeroChannels = good; zeroChannels.channelCount = 0
        #expect(throws: QueueError.self) { try zeroChannels.validate(allowsZeroRate: false, bytesPerPacket: 4, framesPerPacket: 1) }
        var zeroRate = good; zeroRate.sampleRate = 0
        #expect(throws: QueueError.self) { try zeroRate.validate(allowsZeroRate: false, bytesPerPacket: 4, framesPerPacket: 1) }
        #expect(throws: Never.self) { try zeroRate.validate(allowsZeroRate: true, bytesPerPacket: 4, framesPerPacket: 1) }
        var tooManyBits = good; tooManyBits.bitsPerChannel = 24
        #expect(throws: QueueError.self) { try tooManyBits.validate(allowsZeroRate: false, bytesPerPacket: 4, framesPerPacket: 1) }
        var nonInterleaved = good; nonInterleaved.isNonInterleaved = true  // a jaq extension
        #expect(throws: Never.self) { try nonInterleaved.validate(allowsZeroRate: false, bytesPerPacket: 4, framesPerPacket: 1) }
        var tooMany = good; tooMany.channelCount = 65; tooMany.bytesPerFrame = 130
        #expect(throws: QueueError.self) { try tooMany.validate(allowsZeroRate: false, bytesPerPacket: 130, framesPerPacket: 1) }
    }

    /// Non-interleaved client data: plane c at c × planeStride, each format bit-exact both ways,
    /// and the same samples as the interleaved codec gives.
    @Test(arguments: [(bits: 8, bytes: 1, float: false), (bits: 16, bytes: 2, float: false), (bits: 24, bytes: 3, float: false),
                      (bits: 32, bytes: 4, float: false), (bits: 32, bytes: 4, float: true)])
    func nonInterleavedPlanesMatchTheInterleavedCodec(bits: Int, bytes: Int, float: Bool) {
        let channels = 3, frames = 300, planeStride = 310 * bytes
        var interleaved = StreamFormat(sampleRate: 48000, encoding: .linearPCM, isFloat: float, isSignedInteger: !float,
                                       bytesPerFrame: channels * bytes, channelCount: channels, bitsPerChannel: bits)
        let interleavedCodec = SampleCodec(format: interleaved)
        interleaved.isNonInterleaved = true
        let planarCodec = SampleCodec(format: interleaved)
        var source = [UInt8](repeating: 0, count: frames * channels * bytes)
        var x: UInt32 = 0x2468_ACE1
        for i in source.indices {
            x = x &* 1_664_525 &+ 1_013_904_223
            source[i] = UInt8(truncatingIfNeeded: x >> 13)
        }
        if float {  // finite values only: NaN payloads need not survive
            for i in stride(from: 0, to: source.count, by: 4) { source[i + 3] = source[i + 3] & 0x3F }
        }
        let planes = (0..<channels).map { _ in UnsafeMutablePointer<Float>.allocate(capacity: frames) }
        defer { planes.forEach { $0.deallocate() } }
        source.withUnsafeBytes { s in planes.withUnsafeBufferPointer { interleavedCodec.decode(s.baseAddress!, frames: frames, into: $0.baseAddress!) } }
        let expected = planes.map { Array(UnsafeBufferPointer(start: $0, count: frames)) }
        // The same samples as planes: channel c's plane at c × planeStride.
        var planar = [UInt8](repeating: 0xEE, count: channels * planeStride)
        for c in 0..<channels {
            for f in 0..<frames {
                for b in 0..<bytes { planar[c * planeStride + f * bytes + b] = source[(f * channels + c) * bytes + b] }
            }
        }
        for plane in planes { plane.initialize(repeating: .nan, count: frames) }
        planar.withUnsafeBytes { s in
            planes.withUnsafeBufferPointer { planarCodec.decode(s.baseAddress!, frames: frames, into: $0.baseAddress!, planeStride: planeStride) }
        }
        for c in 0..<channels { #expect(Array(UnsafeBufferPointer(start: planes[c], count: frames)) == expected[c], "channel \(c)") }
        var encoded = [UInt8](repeating: 0xEE, count: channels * planeStride)
        let readable = planes.map { UnsafePointer($0) }
        readable.withUnsafeBufferPointer { table in
            encoded.withUnsafeMutableBytes { planarCodec.encode(table.baseAddress!, frames: frames, into: $0.baseAddress!, planeStride: planeStride) }
        }
        // What the interleaved codec encodes (the source itself where the format is exact: not
        // 32-bit integers through float), as planes; the bytes between planes untouched.
        var reencoded = [UInt8](repeating: 0, count: source.count)
        readable.withUnsafeBufferPointer { table in
            reencoded.withUnsafeMutableBytes { interleavedCodec.encode(table.baseAddress!, frames: frames, into: $0.baseAddress!) }
        }
        var expectedPlanes = [UInt8](repeating: 0xEE, count: channels * planeStride)
        for c in 0..<channels {
            for f in 0..<frames {
                for b in 0..<bytes { expectedPlanes[c * planeStride + f * bytes + b] = reencoded[(f * channels + c) * bytes + b] }
            }
        }
        #expect(encoded == expectedPlanes ? true : false, "planar encoding equals the interleaved codec's")
        if bits < 32 || float { #expect(encoded == planar ? true : false, "the source comes back bit-exact") }
    }

    /// The 16- and 24-bit encoders round and clip as x × 2^(n-1) in Double would, for values
    /// between the integers, halfway between them, beyond full scale, infinities and NaN, in
    /// both byte orders (through their SIMD loops and the scalar ends).
    @Test(arguments: [(16, false), (16, true), (24, false), (24, true)])
    func integerEncodingRoundsAndClipsAsSpecified(bits: Int, bigEndian: Bool) {
        let bytes = bits / 8
        let format = StreamFormat(sampleRate: 48000, encoding: .linearPCM, isBigEndian: bigEndian,
                                  bytesPerFrame: bytes, channelCount: 1, bitsPerChannel: bits)
        var values: [Float] = [0, 1, -1, 2, -2, .infinity, -.infinity, .nan, 0.5, -0.5, 1e-9, -1e-9]
        // Halfway between two 16-bit integers (ties go to the even one), and next to the bounds.
        values += [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 32766.5, 32767.5, -32767.5, -32768.5, 32767.49, -32768.49, 3.5, -3.5, 4.5].map { Float($0) / 32768 }
        // (5027 values: blocks of 64, the last of 35: the 8-wide SIMD loop and a scalar end of 3.)
        var x: UInt32 = 99
        for _ in 0..<5000 {
            x = x &* 1_664_525 &+ 1_013_904_223
            values.append((Float(x % 2_000_001) / 1_000_000 - 1) * 1.1)
        }
        let full = Double(sign: .plus, exponent: bits - 1, significand: 1)
        var expected: [UInt8] = []
        for value in values {
            let scaled = (Double(value) * full).rounded(.toNearestOrEven)
            let integer = Int64(scaled.isNaN ? 0 : min(max(scaled, -full), full - 1))
            let little = (0..<bytes).map { UInt8(truncatingIfNeeded: integer >> (8 * $0)) }
            expected += bigEndian ? little.reversed() : little
        }
        var out = [UInt8](repeating: 0, count: values.count * bytes)
        values.withUnsafeBufferPointer { input in
            var table = [input.baseAddress!]
            out.withUnsafeMutableBytes { SampleCodec(format: format).encode(&table, frames: values.count, into: $0.baseAddress!) }
        }
        #expect(out == expected ? true : false)
    }
}
