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
        var nonInterleaved = good; nonInterleaved.isNonInterleaved = true
        #expect(throws: QueueError.self) { try nonInterleaved.validate(allowsZeroRate: false, bytesPerPacket: 4, framesPerPacket: 1) }
        var tooMany = good; tooMany.channelCount = 65; tooMany.bytesPerFrame = 130
        #expect(throws: QueueError.self) { try tooMany.validate(allowsZeroRate: false, bytesPerPacket: 130, framesPerPacket: 1) }
    }
}
