import Foundation
import Glibc
import Testing
@testable import AudioCodec
@testable import FileFuzz

/// Encodes planar float signals to packets and decodes them back through FFmpeg.
@Suite struct PacketCodecTests {
    /// A stereo test signal: two sines and a chirp at -6 dBFS, integers of `bits` bits as floats.
    static func signal(frames: Int, channels: Int, rate: Double, bits: Int? = nil) -> [[Float]] {
        (0..<channels).map { c in
            (0..<frames).map { i in
                let t = Double(i) / rate
                let tone: Double = 0.25 * sin(2 * Double.pi * (440 + 110 * Double(c)) * t)
                let chirp: Double = 0.2 * sin(2 * Double.pi * (200 + 3000 * t) * t)
                var x = tone + chirp
                if let bits {
                    let full = Double(1 << (bits - 1))
                    x = (x * full).rounded() / full
                }
                return Float(x)
            }
        }
    }

    /// The known signal of the AAC test: per channel three steady tones (A4, its fifth, 2.5 kHz) at -9 dBFS in all.
    static func tones(frames: Int, channels: Int, rate: Double) -> [[Float]] {
        (0..<channels).map { c in
            let f = [440.0 + 110 * Double(c), 660.0 + 165 * Double(c), 2500.0]
            return (0..<frames).map { i in
                let t = Double(i) / rate
                let a: Double = 0.15 * sin(2 * Double.pi * f[0] * t)
                let b: Double = 0.1 * sin(2 * Double.pi * f[1] * t)
                let d: Double = 0.1 * sin(2 * Double.pi * f[2] * t)
                return Float(a + b + d)
            }
        }
    }

    /// Encodes `signal` in blocks of odd sizes, then decodes every packet: (decoded planes, packets, encoder).
    static func roundTrip(_ signal: [[Float]], format: CodecFormat, bitRate: Int? = nil) throws -> ([[Float]], [EncodedPacket], PacketEncoder) {
        let encoder = try PacketEncoder(format: format, bitRate: bitRate)
        let frames = signal[0].count
        var packets: [EncodedPacket] = []
        var position = 0
        let blocks = [333, 1000, 4097, 17]
        var b = 0
        while position < frames {
            let count = min(blocks[b % blocks.count], frames - position)
            b += 1
            let pointers = signal.map { $0.withUnsafeBufferPointer { $0.baseAddress! + position } }
            try pointers.withUnsafeBufferPointer { try encoder.encode($0.baseAddress!, frames: count) }
            position += count
            while let packet = encoder.nextPacket() { packets.append(packet) }
        }
        try encoder.finish()
        while let packet = encoder.nextPacket() { packets.append(packet) }
        var decodeFormat = format
        decodeFormat.framesPerPacket = encoder.framesPerPacket
        let decoder = try PacketDecoder(format: decodeFormat, cookie: encoder.cookie)
        var out = [[Float]](repeating: [], count: format.channelCount)
        for packet in packets {
            let n = try packet.bytes.withUnsafeBytes { try decoder.decode($0) }
            for c in 0..<format.channelCount { out[c].append(contentsOf: UnsafeBufferPointer(start: decoder.planes[c], count: n)) }
        }
        return (out, packets, encoder)
    }

    static func snr(_ reference: [Float], _ test: ArraySlice<Float>) -> Double {
        var signal = 0.0, noise = 0.0
        for (a, b) in zip(reference, test) {
            signal += Double(a) * Double(a)
            noise += Double(a - b) * Double(a - b)
        }
        return 10 * log10(signal / max(noise, 1e-30))
    }

    @Test(arguments: [16, 24])
    func alacIsBitExact(bits: Int) throws {
        let rate = 48000.0
        let source = Self.signal(frames: 48000 + 123, channels: 2, rate: rate, bits: bits)
        let format = CodecFormat(formatID: CompressedFormat.appleLossless, formatFlags: CompressedFormat.losslessFlags(bits: bits),
                                 sampleRate: rate, channelCount: 2, framesPerPacket: 4096)
        let (decoded, packets, encoder) = try Self.roundTrip(source, format: format)
        #expect(encoder.framesPerPacket == 4096)
        #expect(encoder.cookie.count == 24)
        #expect(packets.count == (48000 + 123 + 4095) / 4096)
        #expect(decoded[0].count == 48000 + 123)
        #expect(decoded == source)
    }

    @Test(arguments: [16, 24])
    func flacIsBitExact(bits: Int) throws {
        let rate = 44100.0
        let source = Self.signal(frames: 44100 + 7, channels: 2, rate: rate, bits: bits)
        let format = CodecFormat(formatID: CompressedFormat.flac, formatFlags: CompressedFormat.losslessFlags(bits: bits),
                                 sampleRate: rate, channelCount: 2)
        let (decoded, _, encoder) = try Self.roundTrip(source, format: format)
        #expect(encoder.cookie.count == 42)
        #expect(decoded[0].count == 44100 + 7)
        #expect(decoded == source)
    }

    @Test func aacAt128kIsWithinThirtyDecibels() throws {
        let rate = 48000.0
        let frames = 48000 * 2
        let source = Self.tones(frames: frames, channels: 2, rate: rate)
        let format = CodecFormat(formatID: CompressedFormat.mpeg4AAC, sampleRate: rate, channelCount: 2, framesPerPacket: 1024)
        let (decoded, packets, encoder) = try Self.roundTrip(source, format: format, bitRate: 128_000)
        #expect(encoder.framesPerPacket == 1024)
        #expect(encoder.primingFrames == 1024)
        #expect(packets.allSatisfy { $0.bytes.count <= encoder.maximumPacketSize })
        // The cookie is an ES_Descriptor whose AudioSpecificConfig says AAC-LC, 48 kHz, stereo.
        let asc = try MagicCookie.audioSpecificConfig(fromESDS: encoder.cookie)
        #expect(encoder.cookie.first == 0x03)
        #expect(asc.prefix(2) == [0x11, 0x90])
        // Priming removed, the length is exact and the signal within 30 dB.
        let p = encoder.primingFrames
        #expect(decoded[0].count >= frames + p)
        for c in 0..<2 {
            let snr = Self.snr(source[c], decoded[c][p..<(p + frames)])
            #expect(snr >= 30, "channel \(c): \(snr) dB")
        }
    }

    @Test func opusAndIMA4RoundTrip() throws {
        let rate = 48000.0
        let source = Self.signal(frames: 9600, channels: 2, rate: rate, bits: 16)
        let ima = CodecFormat(formatID: CompressedFormat.appleIMA4, sampleRate: rate, channelCount: 2, framesPerPacket: 64, bytesPerPacket: 68)
        let (imaOut, imaPackets, imaEncoder) = try Self.roundTrip(source, format: ima)
        #expect(imaEncoder.framesPerPacket == 64)
        #expect(imaPackets.allSatisfy { $0.bytes.count == 68 })
        #expect(Self.snr(source[0], imaOut[0][0..<9600]) > 20)
        let opus = CodecFormat(formatID: CompressedFormat.opus, sampleRate: rate, channelCount: 2, framesPerPacket: 960)
        let (opusOut, _, opusEncoder) = try Self.roundTrip(source, format: opus, bitRate: 128_000)
        #expect(opusEncoder.framesPerPacket == 960)
        #expect(opusOut[0].count >= 9600)
        // FFmpeg's Opus decoder drops the pre-skip itself (OpusHead): no priming comes out.
        #expect(Self.snr(source[0], opusOut[0][0..<8000]) > 15)
    }

    @Test func unknownAndDecodeOnlyFormatsAreRefused() {
        #expect(throws: CodecError.self) { try PacketDecoder(format: CodecFormat(formatID: 0x7878_7878, sampleRate: 48000, channelCount: 2), cookie: []) }
        #expect {
            try PacketEncoder(format: CodecFormat(formatID: CompressedFormat.mpegLayer3, sampleRate: 48000, channelCount: 2))
        } throws: { error in
            if case .codecNotFound = error as? CodecError { return true }
            return false
        }
        // ALAC without its cookie cannot decode.
        #expect(throws: CodecError.self) {
            try PacketDecoder(format: CodecFormat(formatID: CompressedFormat.appleLossless, sampleRate: 48000, channelCount: 2), cookie: [])
        }
    }

    /// Fixed-seed fuzzing: mangled AAC, ALAC, FLAC, MP3-sized packets and cookies never crash the
    /// decoder; a refused packet throws .corruptPacket and the next good one decodes again.
    @Test func mangledPacketsAreRefusedNotFatal() throws {
        // make fuzz-packets runs it long: JAQ_PACKET_FUZZ_ROUNDS rounds a codec from JAQ_PACKET_FUZZ_SEED.
        let environment = ProcessInfo.processInfo.environment
        let rounds = environment["JAQ_PACKET_FUZZ_ROUNDS"].flatMap { Int($0) } ?? 400
        var rng = SplitMix64(seed: environment["JAQ_PACKET_FUZZ_SEED"].flatMap { UInt64($0) } ?? 13)
        let rate = 48000.0
        let source = Self.signal(frames: 48000, channels: 2, rate: rate, bits: 16)
        for id in [CompressedFormat.mpeg4AAC, CompressedFormat.appleLossless, CompressedFormat.flac, CompressedFormat.opus] {
            let format = CodecFormat(formatID: id, formatFlags: id == CompressedFormat.mpeg4AAC || id == CompressedFormat.opus ? 0 : 1,
                                     sampleRate: rate, channelCount: 2)
            let (_, packets, encoder) = try Self.roundTrip(source, format: format)
            var decodeFormat = format
            decodeFormat.framesPerPacket = encoder.framesPerPacket
            let decoder = try PacketDecoder(format: decodeFormat, cookie: encoder.cookie)
            for round in 0..<rounds {
                var bytes = packets[round % packets.count].bytes
                if bytes.isEmpty { continue }
                switch rng.next() % 4 {
                case 0: for _ in 0..<(1 + Int(rng.next() % 8)) { bytes[Int(rng.next() % UInt64(bytes.count))] ^= UInt8(truncatingIfNeeded: rng.next()) }
                case 1: bytes = Array(bytes.prefix(Int(rng.next() % UInt64(bytes.count))))
                case 2: bytes = (0..<Int(rng.next() % 2000)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                default: break
                }
                do {
                    let n = try bytes.withUnsafeBytes { try decoder.decode($0) }
                    #expect(n <= 8 * encoder.framesPerPacket)
                } catch let error as CodecError {
                    guard case .corruptPacket = error else { Issue.record("\(error)"); continue }
                }
            }
            // Still decoding: a good packet after the garbage gives a whole packet.
            decoder.reset()
            let good = try packets[3].bytes.withUnsafeBytes { try decoder.decode($0) }
            #expect(good == encoder.framesPerPacket)
            // Mangled cookies: refused or accepted, never fatal.
            for _ in 0..<50 {
                var cookie = encoder.cookie
                if !cookie.isEmpty { cookie[Int(rng.next() % UInt64(cookie.count))] ^= 0xFF }
                cookie = Array(cookie.prefix(Int(rng.next() % UInt64(cookie.count + 1))))
                _ = try? PacketDecoder(format: decodeFormat, cookie: cookie)
            }
        }
    }
}
