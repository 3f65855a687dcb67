import Synchronization

/// Per-channel level meters the realtime side fills: mean square and peak over
/// the last completed window (about 50 ms), as Float bit patterns; readers take
/// the square root (no math library calls on the realtime side).
/// Producer: the process thread. Consumers: any thread (GetProperty).
public struct MeterBank: ~Copyable {
    public let channelCount: Int
    let average: UnsafeMutablePointer<Atomic<UInt32>>
    let peak: UnsafeMutablePointer<Atomic<UInt32>>
    /// Realtime-owned accumulators.
    let sumSquares: UnsafeMutablePointer<Double>
    let runningPeak: UnsafeMutablePointer<Float>
    var accumulatedFrames = 0
    let windowFrames: Int
    /// Set by control threads; the realtime side meters only when enabled.
    public let enabled = Atomic<Bool>(false)

    public init(channelCount: Int, windowFrames: Int) {
        self.channelCount = channelCount
        self.windowFrames = max(windowFrames, 1)
        average = .allocate(capacity: channelCount)
        peak = .allocate(capacity: channelCount)
        sumSquares = .allocate(capacity: channelCount)
        runningPeak = .allocate(capacity: channelCount)
        for c in 0..<channelCount {
            (average + c).initialize(to: Atomic(0))
            (peak + c).initialize(to: Atomic(0))
        }
        sumSquares.initialize(repeating: 0, count: channelCount)
        runningPeak.initialize(repeating: 0, count: channelCount)
    }

    deinit {
        average.deinitialize(count: channelCount)
        peak.deinitialize(count: channelCount)
        average.deallocate()
        peak.deallocate()
        sumSquares.deallocate()
        runningPeak.deallocate()
    }

    /// The last window's (RMS, peak) of `channel`, linear 0...1 for full scale.
    public func level(_ channel: Int) -> (average: Float, peak: Float) {
        (Float(bitPattern: average[channel].load(ordering: .relaxed)).squareRoot(),
         Float(bitPattern: peak[channel].load(ordering: .relaxed)))
    }

    /// Clears the published levels (when metering is switched on, or the queue stops).
    public func clear() {
        for c in 0..<channelCount {
            average[c].store(0, ordering: .relaxed)
            peak[c].store(0, ordering: .relaxed)
        }
    }
}

extension MeterBank {
    /// Realtime: accumulates `count` frames of `channel` (called once per channel per cycle).
    #if JAQ_CHECK_NOLOCKS
    @_noLocks
    #endif
    @inline(__always)
    mutating func accumulate(_ channel: Int, _ samples: UnsafePointer<Float>, count: Int) {
        var sum: Float = 0
        var top = runningPeak[channel]
        for i in 0..<count {
            let x = samples[i]
            sum += x * x
            let magnitude = abs(x)
            if magnitude > top { top = magnitude }
        }
        sumSquares[channel] += Double(sum)
        runningPeak[channel] = top
    }

    /// Realtime: ends a cycle of `count` frames; publishes when a window is complete.
    #if JAQ_CHECK_NOLOCKS
    @_noLocks
    #endif
    @inline(__always)
    mutating func endCycle(frames count: Int) {
        accumulatedFrames += count
        guard accumulatedFrames >= windowFrames else { return }
        for c in 0..<channelCount {
            let meanSquare = Float(sumSquares[c] / Double(accumulatedFrames))
            average[c].store(meanSquare.bitPattern, ordering: .relaxed)
            peak[c].store(runningPeak[c].bitPattern, ordering: .relaxed)
            sumSquares[c] = 0
            runningPeak[c] = 0
        }
        accumulatedFrames = 0
    }
}
