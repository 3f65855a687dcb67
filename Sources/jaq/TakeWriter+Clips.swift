import AudioToolbox
import Glibc

/// The writer's clip count: samples at full scale in what a take's files are given, one tight
/// loop per sample type.
extension TakeWriter {
    /// The smallest float magnitude counted as clipped: 16-bit full scale (32767/32768), so
    /// that a float take and a 16-bit take of the same signal count the same clips.
    static let fullScale: Float = 32767 / 32768

    /// Counts samples at full scale (clipped), with one tight loop per sample type: the samples
    /// of a take's file, just before they are written (`writeFile`), so that the write's copy
    /// finds them in the cache this pass brought them into (issue #29: at 64 tracks the count,
    /// made as buffers arrived, read every sample from memory a second time).
    func countClips(_ raw: UnsafeRawBufferPointer) {
        let clipped = switch format.samples {
        case .float32: Self.countClippedFloats(raw)
        case .int16: Self.countClipped16(raw, bigEndian: format.bigEndian)
        case .int24: Self.countClipped24(raw, high: format.bigEndian ? 0 : 2)
        case .int32: Self.countClipped32(raw, bigEndian: format.bigEndian)
        }
        if clipped > 0 { state.withLock { $0.losses.clippedSamples += clipped } }
    }

    /// Native floats at full scale or beyond, eight at a time on the bit patterns: |x| ≥ full
    /// scale and not NaN (for floats without their sign, the bit patterns order as the values do).
    static func countClippedFloats(_ raw: UnsafeRawBufferPointer) -> Int64 {
        let words = raw.count / 4
        let threshold = SIMD8<UInt32>(repeating: fullScale.bitPattern)
        let infinity = SIMD8<UInt32>(repeating: Float.infinity.bitPattern)
        let magnitude = SIMD8<UInt32>(repeating: 0x7FFF_FFFF)
        var counts = SIMD8<UInt32>()
        var i = 0
        if let base = raw.baseAddress {
            while i &+ 8 <= words {
                let bits = base.loadUnaligned(fromByteOffset: i &* 4, as: SIMD8<UInt32>.self) & magnitude
                counts &+= SIMD8<UInt32>().replacing(with: 1, where: (bits .>= threshold) .& (bits .<= infinity))
                i &+= 8
            }
        }
        var count = Int(counts.wrappedSum())
        while i < words {
            count &+= raw.loadUnaligned(fromByteOffset: i &* 4, as: Float.self).magnitude >= fullScale ? 1 : 0
            i &+= 1
        }
        return Int64(count)
    }

    /// 32-bit integers within 65536 of either end (16-bit full scale, as for the other widths).
    static func countClipped32(_ raw: UnsafeRawBufferPointer, bigEndian: Bool) -> Int64 {
        var clipped: Int64 = 0
        for value in raw.bindMemory(to: Int32.self) {
            let v = bigEndian ? Int32(bigEndian: value) : value
            if v > Int32.max - 65536 || v < Int32.min + 65536 { clipped += 1 }
        }
        return clipped
    }

    /// 16-bit samples at full scale, sixteen at a time; in the file's byte order, compared
    /// with the two values' patterns in that order.
    static func countClipped16(_ raw: UnsafeRawBufferPointer, bigEndian: Bool) -> Int64 {
        guard let base = raw.baseAddress else { return 0 }
        let samples = raw.count / 2
        let high = SIMD16<Int16>(repeating: bigEndian ? Int16.max.byteSwapped : .max)
        let low = SIMD16<Int16>(repeating: bigEndian ? Int16.min.byteSwapped : .min)
        var counts = SIMD16<Int16>()
        var count = 0
        func empty() {
            for k in 0..<16 { count &+= Int(counts[k]) }
            counts = SIMD16()
        }
        var i = 0
        while i &+ 16 <= samples {
            let v = base.loadUnaligned(fromByteOffset: i &* 2, as: SIMD16<Int16>.self)
            counts &+= SIMD16<Int16>().replacing(with: 1, where: (v .== high) .| (v .== low))
            i &+= 16
            // (Lanes of 16 bits: emptied every 16384 vectors, before one can pass 32767.)
            if i & 0x3FFF0 == 0 { empty() }
        }
        empty()
        while i < samples {
            let v = base.loadUnaligned(fromByteOffset: i &* 2, as: Int16.self)
            count &+= v == high[0] || v == low[0] ? 1 : 0
            i &+= 1
        }
        return Int64(count)
    }

    /// Packed 24-bit samples at full scale (the top two bytes 7F FF or 80 00, `high` the top
    /// byte's offset: 2 little-endian, 0 big-endian). Sixteen samples (48 bytes) at a time are
    /// passed over when no top byte among them is 7F or 80, which for any signal short of full
    /// scale is all of them; the others are looked at one by one.
    static func countClipped24(_ raw: UnsafeRawBufferPointer, high: Int) -> Int64 {
        guard let base = raw.baseAddress else { return 0 }
        @inline(__always) func clipped(_ p: UnsafeRawPointer) -> Int {
            let top = p.load(fromByteOffset: high, as: UInt8.self), middle = p.load(fromByteOffset: 1, as: UInt8.self)
            return (top == 0x7F && middle == 0xFF) || (top == 0x80 && middle == 0x00) ? 1 : 0
        }
        // (x + 1) & 0xFE is 0x80 for x = 7F and 80 only; 1 is or-ed into the lanes of each
        // 16-byte third that hold no top byte, so that they never are.
        var others = (SIMD16<UInt8>(), SIMD16<UInt8>(), SIMD16<UInt8>())
        for lane in 0..<16 {
            others.0[lane] = lane % 3 == high ? 0 : 1
            others.1[lane] = (16 + lane) % 3 == high ? 0 : 1
            others.2[lane] = (32 + lane) % 3 == high ? 0 : 1
        }
        let one = SIMD16<UInt8>(repeating: 1), even = SIMD16<UInt8>(repeating: 0xFE), nearFull = SIMD16<UInt8>(repeating: 0x80)
        // The high bit of each zero byte of a 64-bit word (none set when it has none). The
        // mask's `any()` and `pointwiseMin` were calls, lane by lane (unspecialized library
        // code): twice the rest of this loop.
        @inline(__always) func zeroBytes(_ v: UInt64) -> UInt64 {
            (v &- 0x0101_0101_0101_0101) & ~v & 0x8080_8080_8080_8080
        }
        let samples = raw.count / 3
        var count = 0
        var i = 0
        // The zero bytes of a 16-byte third's two halves: a byte that is 0x80 after the
        // transform above is a zero byte once ^ 0x80.
        @inline(__always) func nearFullBytes(_ p: UnsafeRawPointer, _ offset: Int, _ others: SIMD16<UInt8>) -> UInt64 {
            let bytes = ((p.loadUnaligned(fromByteOffset: offset, as: SIMD16<UInt8>.self) &+ one) & even | others) ^ nearFull
            let halves = unsafeBitCast(bytes, to: SIMD2<UInt64>.self)
            return zeroBytes(halves[0]) | zeroBytes(halves[1])
        }
        while i &+ 16 <= samples {
            let p = base + i &* 3
            if nearFullBytes(p, 0, others.0) | nearFullBytes(p, 16, others.1) | nearFullBytes(p, 32, others.2) != 0 {
                for k in 0..<16 { count &+= clipped(p + k &* 3) }
            }
            i &+= 16
        }
        while i < samples {
            count &+= clipped(base + i &* 3)
            i &+= 1
        }
        return Int64(count)
    }
}
