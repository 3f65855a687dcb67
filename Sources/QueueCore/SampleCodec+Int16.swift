// Packed 16-bit encoding without a call per sample: the converter's and ExtAudioFile's
// float → 16-bit path (jaq convert to 16-bit files, AQOfflineRenderTest's capture file).

extension SampleCodec {
    /// Packed 16-bit samples [first, end) of one plane, `stride` bytes apart: clipped, then
    /// rounded to nearest even by adding 1.5 × 2^23 in Float, whose bit pattern then holds the
    /// integer in its low 16 bits. The same integers as `rounded(.toNearestOrEven)` and then
    /// clipping (the bounds are integers; 1.5 × 2^23 is even), without its call to rintf per
    /// sample (baseline x86-64 has no rounding instruction); NaN is 0. Eight at a time in SIMD.
    @inline(__always)
    static func encodeInt16Plane(_ input: UnsafePointer<Float>, from first: Int, to end: Int,
                                 into out: UnsafeMutableRawPointer, stride: Int, bigEndian: Bool) {
        var i = first
        while i &+ 8 <= end {
            let scaled = UnsafeRawPointer(input + i).loadUnaligned(as: SIMD8<Float>.self) * 32768
            var clipped = scaled
            clipped.replace(with: 32767, where: scaled .> 32767)
            clipped.replace(with: -32768, where: scaled .< -32768)
            clipped.replace(with: 0, where: scaled .!= scaled)
            let samples = SIMD8<UInt16>(truncatingIfNeeded: unsafeBitCast(clipped + 12_582_912, to: SIMD8<UInt32>.self))
            for k in 0..<8 {
                (out + (i &+ k) &* stride).storeBytes(of: bigEndian ? samples[k].byteSwapped : samples[k], as: UInt16.self)
            }
            i &+= 8
        }
        while i < end {
            let scaled = input[i] * 32768
            let clipped: Float = scaled > 32767 ? 32767 : scaled >= -32768 ? scaled : scaled < -32768 ? -32768 : 0
            let sample = UInt16(truncatingIfNeeded: (clipped + 12_582_912).bitPattern)
            (out + i &* stride).storeBytes(of: bigEndian ? sample.byteSwapped : sample, as: UInt16.self)
            i &+= 1
        }
    }
}
