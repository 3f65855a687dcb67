// What tests measure of a played or rendered signal: where it is audible, its frequency.

/// The span of frames louder than -40 dBFS (first, count); nil if none is.
public func audibleSpan(_ samples: [Float]) -> (first: Int, count: Int)? {
    guard let first = samples.firstIndex(where: { abs($0) > 0.01 }),
          let last = samples.lastIndex(where: { abs($0) > 0.01 }) else { return nil }
    return (first, last - first + 1)
}

/// Frequency from the rising zero crossings in `samples[range]`, interpolated between
/// samples; 0 with fewer than three crossings.
public func measuredFrequency(_ samples: [Float], in range: Range<Int>, sampleRate: Double = 48000) -> Double {
    var crossings: [Double] = []
    for i in range.dropFirst() where samples[i - 1] < 0 && samples[i] >= 0 {
        let a = Double(samples[i - 1]), b = Double(samples[i])
        crossings.append(Double(i - 1) + (-a) / (b - a))
    }
    guard crossings.count > 2 else { return 0 }
    return Double(crossings.count - 1) / (crossings.last! - crossings.first!) * sampleRate
}
