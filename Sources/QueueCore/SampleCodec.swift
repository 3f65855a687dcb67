/// Converts between a queue's client bytes and planar Float32, the sample format of JACK ports.
///
/// Client bytes are interleaved frames, or (`isNonInterleaved`, a jaq extension) one plane
/// per channel: channel c's samples are contiguous, `planeStride` bytes after channel c-1's.
///
/// Integers map exactly: an n-bit value x becomes x / 2^(n-1) (int16 x → x/32768),
/// and back with rounding and clipping, so integer audio that passes through
/// JACK unchanged comes back bit-exact. Runs on queue threads, never in realtime.
public struct SampleCodec: Sendable {
    public let format: StreamFormat
    private let kind: Kind

    private enum Kind: Sendable {
        case float32(bigEndian: Bool)
        case float64(bigEndian: Bool)
        /// Integer in `bytes` bytes; `shift` drops the unused low bits of an aligned-high sample.
        case integer(bytes: Int, bigEndian: Bool, signed: Bool, shift: Int, bits: Int)
        case muLaw
        case aLaw
    }

    public init(format: StreamFormat) {
        self.format = format
        switch format.encoding {
        case .muLaw: kind = .muLaw
        case .aLaw: kind = .aLaw
        case .linearPCM:
            let bytes = format.bytesPerSample
            if format.isFloat {
                kind = bytes == 8 ? .float64(bigEndian: format.isBigEndian) : .float32(bigEndian: format.isBigEndian)
            } else {
                let unused = bytes * 8 - format.bitsPerChannel
                // Packed or aligned-high samples keep their bits at the top; aligned-low at the bottom.
                let shift = (format.isPacked || format.isAlignedHigh) ? unused : 0
                kind = .integer(bytes: bytes, bigEndian: format.isBigEndian, signed: format.isSignedInteger || bytes > 1,
                                shift: shift, bits: format.bitsPerChannel)
            }
        }
    }

    /// Bytes from one frame's sample of a channel to the next frame's, and from channel c's
    /// first sample to channel c+1's.
    @inline(__always)
    private func steps(planeStride: Int) -> (frame: Int, channel: Int) {
        format.isNonInterleaved ? (format.bytesPerSample, planeStride) : (format.bytesPerFrame, format.bytesPerSample)
    }

    /// Decodes `frames` frames of client bytes into planar floats.
    /// - Parameters:
    ///   - source: client data (interleaved, or channel 0's plane when non-interleaved).
    ///   - planes: one destination pointer per channel (already offset).
    ///   - planeStride: bytes between the client's channel planes (non-interleaved only).
    public func decode(_ source: UnsafeRawPointer, frames: Int, into planes: UnsafePointer<UnsafeMutablePointer<Float>>,
                       planeStride: Int = 0) {
        let (stride, channelStep) = steps(planeStride: planeStride)
        guard !format.isNonInterleaved, format.channelCount > 1 else {
            decodeBlock(source, frames: frames, into: planes, at: 0, stride: stride, channelStep: channelStep)
            return
        }
        // Interleaved: in blocks of frames, channel by channel within a block, so the block's
        // input stays in cache across the channels (a pass per channel over the whole buffer
        // would read it from memory once per channel: 64 times for 64 channels).
        let block = 256
        var first = 0
        while first < frames {
            let count = min(block, frames - first)
            decodeBlock(source + first * stride, frames: count, into: planes, at: first, stride: stride, channelStep: channelStep)
            first += count
        }
    }

    /// Decodes `frames` frames into the planes from frame `offset` on.
    private func decodeBlock(_ source: UnsafeRawPointer, frames: Int, into planes: UnsafePointer<UnsafeMutablePointer<Float>>,
                             at offset: Int, stride: Int, channelStep: Int) {
        let channels = format.channelCount
        switch kind {
        case .float32(let bigEndian):
            Self.decodeFloats(source, frames: frames, channels: channels, into: planes, offset: offset, stride: stride, channelStep: channelStep,
                              bigEndian: bigEndian) { (bits: UInt32) in Float(bitPattern: bits) }
        case .float64(let bigEndian):
            Self.decodeFloats(source, frames: frames, channels: channels, into: planes, offset: offset, stride: stride, channelStep: channelStep,
                              bigEndian: bigEndian) { (bits: UInt64) in Float(Double(bitPattern: bits)) }
        case .integer(let bytes, let bigEndian, let signed, let shift, let bits):
            let scale = 1 / Float(sign: .plus, exponent: bits - 1, significand: 1)
            let scaleD = 1 / Double(sign: .plus, exponent: bits - 1, significand: 1)
            for c in 0..<channels {
                let out = planes[c] + offset
                var p = source + c * channelStep
                switch (bytes, bigEndian) {
                case (2, false) where shift == 0:
                    for i in 0..<frames {
                        out[i] = Float(Int16(bitPattern: p.loadUnaligned(as: UInt16.self))) * scale
                        p += stride
                    }
                case (2, true) where shift == 0:
                    for i in 0..<frames {
                        out[i] = Float(Int16(bitPattern: p.loadUnaligned(as: UInt16.self).byteSwapped)) * scale
                        p += stride
                    }
                default:
                    for i in 0..<frames {
                        let value = Self.loadInteger(p, bytes: bytes, bigEndian: bigEndian, signed: signed) >> shift
                        out[i] = bits <= 24 ? Float(value) * scale : Float(Double(value) * scaleD)
                        p += stride
                    }
                }
            }
        case .muLaw:
            for c in 0..<channels {
                let out = planes[c] + offset
                let p = source.assumingMemoryBound(to: UInt8.self) + c * channelStep
                for i in 0..<frames { out[i] = Float(G711.muLawToLinear[Int(p[i * stride])]) / 32768 }
            }
        case .aLaw:
            for c in 0..<channels {
                let out = planes[c] + offset
                let p = source.assumingMemoryBound(to: UInt8.self) + c * channelStep
                for i in 0..<frames { out[i] = Float(G711.aLawToLinear[Int(p[i * stride])]) / 32768 }
            }
        }
    }

    /// Whether client bytes are native Float32 planes, as the engine's: encoding is a copy.
    public var copiesNativeFloatPlanes: Bool {
        if format.isNonInterleaved, case .float32(bigEndian: false) = kind { return true }
        return false
    }

    /// Encodes `frames` frames of planar floats into client bytes (rounding, clipping).
    /// - Parameters:
    ///   - destination: where the first frame goes (channel 0's plane when non-interleaved).
    ///   - planeStride: bytes between the client's channel planes (non-interleaved only).
    public func encode(_ planes: UnsafePointer<UnsafePointer<Float>>, frames: Int, into destination: UnsafeMutableRawPointer,
                       planeStride: Int = 0) {
        let channels = format.channelCount
        let (stride, channelStep) = steps(planeStride: planeStride)
        if format.isNonInterleaved, case .float32(bigEndian: false) = kind {
            // Native float planes to native float planes: one copy per channel, nothing to convert.
            for c in 0..<channels {
                (destination + c &* channelStep).copyMemory(from: planes[c], byteCount: frames &* 4)
            }
            return
        }
        // Interleaved output: in blocks of frames, channel by channel within a block: each
        // channel's input is read in order and the block's output stays in cache, whatever the
        // channel count (a pass per channel over the whole buffer would sweep it once per
        // channel; frame by frame would read every plane at once, and ring planes a power of two
        // apart collide in cache). Planes out: one pass per channel, each plane read and written
        // start to end, which the prefetcher streams (issue #29: in blocks of 64 frames, a
        // 64-track 24-bit take's encode waited on memory at every block's first load, and cost
        // more than floor-record's conversion of the same samples).
        let block = format.isNonInterleaved ? max(frames, 1) : 64
        var first = 0
        while first < frames {
            let end = min(frames, first + block)
            switch kind {
            case .float32(let bigEndian):
                // Whole 4-byte samples at 4-byte offsets: typed stores (buffers are aligned).
                let out = destination.assumingMemoryBound(to: UInt32.self)
                var c = 0
                if !bigEndian && stride == channels &* 4 && !format.isNonInterleaved {
                    // Four channels at a time, transposed in registers (packed frames).
                    while c &+ 4 <= channels {
                        Transpose32.interleave4(UnsafeRawPointer(planes[c]), UnsafeRawPointer(planes[c &+ 1]),
                                                UnsafeRawPointer(planes[c &+ 2]), UnsafeRawPointer(planes[c &+ 3]),
                                                into: UnsafeMutableRawPointer(out + c), rowBytes: stride, first: first, end: end)
                        c &+= 4
                    }
                }
                while c < channels {
                    let input = UnsafeRawPointer(planes[c]).assumingMemoryBound(to: UInt32.self)
                    // In 4-byte units: the frame step and the channel's first sample.
                    let step = stride / 4, base = out + c &* channelStep / 4
                    if bigEndian {
                        for i in first..<end { base[i &* step] = input[i].byteSwapped }
                    } else {
                        for i in first..<end { base[i &* step] = input[i] }
                    }
                    c &+= 1
                }
            case .float64(let bigEndian):
                for c in 0..<channels {
                    let input = planes[c]
                    for i in first..<end {
                        let bits = Double(input[i]).bitPattern
                        destination.storeBytes(of: bigEndian ? bits.byteSwapped : bits, toByteOffset: i * stride + c * channelStep, as: UInt64.self)
                    }
                }
            case .integer(let bytes, let bigEndian, true, 0, let bits) where (bytes == 2 || bytes == 3) && bits == bytes &* 8:
                // Packed signed 16- and 24-bit, rounded and clipped without a rounding
                // instruction (`int24`, `encodeInt16Plane`).
                for c in 0..<channels {
                    let input = planes[c]
                    let out = destination + c &* channelStep
                    if bytes == 2 {
                        Self.encodeInt16Plane(input, from: first, to: end, into: out, stride: stride, bigEndian: bigEndian)
                        continue
                    }
                    var from = first
                    if !bigEndian && stride == 3 {
                        // A plane of little-endian 24-bit samples: four at a time, packed into
                        // three 32-bit stores.
                        from = Self.encodeInt24Plane(input, from: first, to: end, into: out)
                    }
                    // Interleaved or big-endian: a sample at a time, byte by byte.
                    for i in from..<end {
                        let value = Self.int24(input[i])
                        let low = UInt8(truncatingIfNeeded: value), middle = UInt8(truncatingIfNeeded: value >> 8)
                        let high = UInt8(truncatingIfNeeded: value >> 16)
                        let p = out + i &* stride
                        p.storeBytes(of: bigEndian ? high : low, as: UInt8.self)
                        p.storeBytes(of: middle, toByteOffset: 1, as: UInt8.self)
                        p.storeBytes(of: bigEndian ? low : high, toByteOffset: 2, as: UInt8.self)
                    }
                }
            case .integer(let bytes, let bigEndian, let signed, let shift, let bits):
                let full = Double(sign: .plus, exponent: bits - 1, significand: 1)
                let maxValue = full - 1
                for c in 0..<channels {
                    let input = planes[c]
                    for i in first..<end {
                        let scaled = (Double(input[i]) * full).rounded(.toNearestOrEven)
                        let clipped = scaled.isNaN ? 0 : min(max(scaled, -full), maxValue)
                        Self.storeInteger(Int64(clipped) << shift, at: destination + i * stride + c * channelStep, bytes: bytes,
                                          bigEndian: bigEndian, signed: signed)
                    }
                }
            case .muLaw, .aLaw:
                break
            }
            first = end
        }
        switch kind {
        case .float32, .float64, .integer:
            break
        case .muLaw:
            for c in 0..<channels {
                let input = planes[c]
                let p = destination.assumingMemoryBound(to: UInt8.self) + c * channelStep
                for i in 0..<frames { p[i * stride] = G711.linearToMuLaw(Self.int16(input[i])) }
            }
        case .aLaw:
            for c in 0..<channels {
                let input = planes[c]
                let p = destination.assumingMemoryBound(to: UInt8.self) + c * channelStep
                for i in 0..<frames { p[i * stride] = G711.linearToALaw(Self.int16(input[i])) }
            }
        }
    }

    /// Little-endian packed 24-bit samples [first, end) of one contiguous plane, four at a
    /// time packed into three 32-bit stores (the same integers as the scalar loop); returns
    /// where the scalar loop takes over.
    @inline(__always)
    private static func encodeInt24Plane(_ input: UnsafePointer<Float>, from first: Int, to end: Int,
                                         into out: UnsafeMutableRawPointer) -> Int {
        var i = first
        while i &+ 4 <= end {
            let v0 = int24(input[i]), v1 = int24(input[i &+ 1]), v2 = int24(input[i &+ 2]), v3 = int24(input[i &+ 3])
            let p = out + i &* 3
            p.storeBytes(of: (v0 & 0xFF_FFFF) | (v1 << 24), as: UInt32.self)
            p.storeBytes(of: ((v1 >> 8) & 0xFFFF) | (v2 << 16), toByteOffset: 4, as: UInt32.self)
            p.storeBytes(of: ((v2 >> 16) & 0xFF) | (v3 << 8), toByteOffset: 8, as: UInt32.self)
            i &+= 4
        }
        return i
    }

    /// A float sample as a signed 24-bit integer in the low three bytes: x × 2^23 clipped to
    /// [−2^23, 2^23 − 1], rounded to nearest even, NaN as 0. Clipped first, then rounded (the
    /// same integers as rounding first: the bounds are integers); rounded by adding 1.5 × 2^52
    /// in Double, whose bit pattern then holds the integer in its low bits (baseline x86-64 has
    /// no rounding instruction: `rounded(.toNearestOrEven)` is a call to rintf per sample).
    @inline(__always)
    private static func int24(_ x: Float) -> UInt32 {
        let scaled = Double(x) * 8_388_608
        let clipped = scaled > 8_388_607 ? 8_388_607 : scaled >= -8_388_608 ? scaled : scaled < -8_388_608 ? -8_388_608 : 0
        return UInt32(truncatingIfNeeded: (clipped + 6_755_399_441_055_744).bitPattern)
    }

    private static func int16(_ sample: Float) -> Int16 {
        let scaled = (Double(sample) * 32768).rounded(.toNearestOrEven)
        return scaled.isNaN ? 0 : Int16(min(max(scaled, -32768), 32767))
    }

    /// Decodes float samples of `Bits` (32- or 64-bit IEEE) into Float planes. Inlined with
    /// `toFloat` into each case of `decode`, so the loop is specialized per width (no dispatch).
    @inline(__always)
    private static func decodeFloats<Bits: FixedWidthInteger & UnsignedInteger>(
        _ source: UnsafeRawPointer, frames: Int, channels: Int, into planes: UnsafePointer<UnsafeMutablePointer<Float>>,
        offset: Int, stride: Int, channelStep: Int, bigEndian: Bool, _ toFloat: (Bits) -> Float
    ) {
        for c in 0..<channels {
            let out = planes[c] + offset
            var p = source + c * channelStep
            for i in 0..<frames {
                let bits = p.loadUnaligned(as: Bits.self)
                out[i] = toFloat(bigEndian ? bits.byteSwapped : bits)
                p += stride
            }
        }
    }

    @inline(__always)
    private static func loadInteger(_ p: UnsafeRawPointer, bytes: Int, bigEndian: Bool, signed: Bool) -> Int64 {
        var raw: UInt64 = 0
        for b in 0..<bytes {
            let byte = UInt64(p.load(fromByteOffset: bigEndian ? b : bytes - 1 - b, as: UInt8.self))
            raw = (raw << 8) | byte
        }
        let width = UInt64(bytes * 8)
        if signed {
            let signBit: UInt64 = 1 << (width - 1)
            return Int64(bitPattern: (raw ^ signBit) &- signBit)
        }
        return Int64(raw) - Int64(1 << (width - 1))  // offset binary (unsigned 8-bit PCM)
    }

    @inline(__always)
    private static func storeInteger(_ value: Int64, at p: UnsafeMutableRawPointer, bytes: Int, bigEndian: Bool, signed: Bool) {
        var raw = UInt64(bitPattern: signed ? value : value + Int64(1 << (bytes * 8 - 1)))
        for b in 0..<bytes {
            p.storeBytes(of: UInt8(truncatingIfNeeded: raw), toByteOffset: bigEndian ? bytes - 1 - b : b, as: UInt8.self)
            raw >>= 8
        }
    }
}

/// ITU-T G.711 µ-law and A-law.
enum G711 {
    static let muLawToLinear: [Int16] = (0..<256).map { code in
        let u = ~UInt8(code)
        let sign = u & 0x80
        let exponent = Int((u >> 4) & 0x07)
        let mantissa = Int(u & 0x0F)
        let magnitude = ((mantissa << 3) + 0x84) << exponent - 0x84
        return Int16(sign != 0 ? -magnitude : magnitude)
    }

    static let aLawToLinear: [Int16] = (0..<256).map { code in
        let a = UInt8(code) ^ 0x55
        let sign = a & 0x80
        let exponent = Int((a >> 4) & 0x07)
        let mantissa = Int(a & 0x0F)
        let magnitude = exponent == 0 ? (mantissa << 4) + 8 : ((mantissa << 4) + 0x108) << (exponent - 1)
        return Int16(sign != 0 ? magnitude : -magnitude)
    }

    static func linearToMuLaw(_ sample: Int16) -> UInt8 {
        let bias = 0x84
        var value = Int(sample)
        let sign: UInt8 = value < 0 ? 0x80 : 0
        if value < 0 { value = -value }
        value = min(value, 32635) + bias
        var exponent = 7
        var mask = 0x4000
        while exponent > 0 && value & mask == 0 {
            exponent -= 1
            mask >>= 1
        }
        let mantissa = (value >> (exponent + 3)) & 0x0F
        return ~(sign | UInt8(exponent << 4) | UInt8(mantissa))
    }

    static func linearToALaw(_ sample: Int16) -> UInt8 {
        var value = Int(sample)
        let sign: UInt8 = value >= 0 ? 0x80 : 0
        if value < 0 { value = -value - 1 }
        value = min(value, 32767)
        let code: UInt8
        if value < 256 {
            code = UInt8(value >> 4)
        } else {
            var exponent = 7
            var mask = 0x4000
            while exponent > 1 && value & mask == 0 {
                exponent -= 1
                mask >>= 1
            }
            code = UInt8(exponent << 4) | UInt8((value >> (exponent + 3)) & 0x0F)
        }
        return (sign | code) ^ 0x55
    }
}
