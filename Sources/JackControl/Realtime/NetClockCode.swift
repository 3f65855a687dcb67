// The netjack2 frame clock's encoding: the generator's and the reader's kernels run it on
// their process threads (and the CLI and the tests off them).

/// The frame clock a netjack2 master sends to its slaves as audio (`jaq clock`), and what a
/// slave reads back from it (`--clock PORT`). netjack2 carries no transport and no shared frame
/// counter; an audio channel it carries bit-exact (its default float encoding) can carry one.
///
/// The sample at master frame `f` (JACK's 32-bit frame time) is `n / 2^28` with the integer
/// `n = (f mod 2^23) × 2 + b`, `0 ≤ n < 2^24`: exact in a Float32, always in `[0, 1/16)` (below
/// −24 dBFS: a slow ramp, never a full-scale signal). The low bit `b` spells out, 16 frames at
/// a time, the rest of the frame: at frames with `f mod 16 = k`, `b` is bit `k` of `f >> 23` for
/// k < 9, and bit `k − 9` of the marker `0b1100101` for k ≥ 9 (so another signal is not taken
/// for a clock). One aligned 16-frame word gives the whole 32-bit frame; every sample can then be
/// checked against the frame its neighbours name.
public enum NetClockCode {
    /// Bits of the frame in the ramp: it wraps every 2^23 frames (174.8 s at 48 kHz).
    public static let rampBits = 23
    /// Frames in one word of the low-bit stream.
    public static let wordFrames = 16
    /// The marker in the word's frames 9…15.
    static let marker: UInt32 = 0b1100101
    /// 2^-28: the sample of code n is n × this.
    static let scale: Float = 1.0 / 268_435_456

    /// The code (0 ≤ n < 2^24) of master frame `frame`.
    #if JAQ_CHECK_NOLOCKS
    @_noLocks
    #endif
    @inline(__always)
    public static func code(_ frame: UInt32) -> UInt32 {
        let k = frame & 15
        let bit = k < 9 ? (frame >> (23 + k)) & 1 : (marker >> (k - 9)) & 1
        return ((frame & 0x7F_FFFF) << 1) | bit
    }

    /// The sample that carries master frame `frame`.
    #if JAQ_CHECK_NOLOCKS
    @_noLocks
    #endif
    @inline(__always)
    public static func sample(_ frame: UInt32) -> Float { Float(code(frame)) * scale }

    /// The code a sample carries, or nil when it is no clock sample (not n/2^28 with 0 ≤ n < 2^24).
    #if JAQ_CHECK_NOLOCKS
    @_noLocks
    #endif
    @inline(__always)
    public static func code(of sample: Float) -> UInt32? {
        let scaled = sample * 268_435_456  // exact: a power of two
        guard scaled >= 0, scaled < 16_777_216 else { return nil }  // NaN fails too
        let n = UInt32(scaled)
        return Float(n) == scaled ? n : nil
    }

    /// The master frame of `samples[0]` when the `count` samples are an unbroken clock (every
    /// one the code of the frame after the previous one's), else nil. Needs a whole 16-frame
    /// word: `count` ≥ 31.
    #if JAQ_CHECK_NOLOCKS
    @_noLocks
    #endif
    public static func firstFrame(_ samples: UnsafePointer<Float>, count: Int) -> UInt32? {
        guard count >= 2 * wordFrames - 1, let first = code(of: samples[0]) else { return nil }
        let low = first >> 1
        let start = Int((16 - (low & 15)) & 15)  // the first frame of a word
        var high: UInt32 = 0
        for k in 0..<wordFrames {
            guard let n = code(of: samples[start + k]) else { return nil }
            let bit = n & 1
            if k < 9 { high |= bit << UInt32(k) } else if bit != (marker >> UInt32(k - 9)) & 1 { return nil }
        }
        let wordLow = (low &+ UInt32(start)) & 0x7F_FFFF
        let frame = ((high << 23) | wordLow) &- UInt32(start)
        for i in 0..<count where samples[i] != sample(frame &+ UInt32(i)) { return nil }
        return frame
    }
}
