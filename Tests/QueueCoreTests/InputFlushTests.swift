import Testing
@testable import QueueCore

/// AudioQueueFlush on a recording queue that resamples (a format rate other than the device's).
@Suite struct InputFlushTests {
    /// Flushed while it runs, the queue delivers its partly filled buffer and records on with its
    /// resampler's stream whole: the frames are those of the same take without the flushes. (The
    /// flush ended the resampler's input and drained its tail: the filter started again cold, a
    /// click and a slip of the queue's time at each flush, and libsoxr 0.1.3 crashes when input
    /// comes after the end of its input before the tail is drained.)
    @Test func flushingARunningResampledQueueLeavesItsFramesAsTheyWere() throws {
        let format = DirectCaptureTests.plain(rate: 44100)
        let whole = try DirectCaptureTests.record(format) { driver, recorder in
            driver.run(cycles: 40)
            try recorder.engine.stop(immediate: true)
        }
        let flushed = try DirectCaptureTests.record(format) { driver, recorder in
            for _ in 0..<4 {
                driver.run(cycles: 10)
                try recorder.engine.flush()
            }
            try recorder.engine.stop(immediate: true)
        }
        #expect(flushed.sizes.filter { $0 > 0 }.count > whole.sizes.filter { $0 > 0 }.count,
                "each flush delivered a partly filled buffer: \(flushed.sizes) against \(whole.sizes)")
        #expect(!whole.planes[0].isEmpty)
        for c in 0..<DirectCaptureTests.channels {
            #expect(DirectCaptureTests.firstDifference(flushed.planes[c], whole.planes[c]) == nil, "channel \(c)")
        }
        #expect(flushed.underrun == whole.underrun && flushed.lost == whole.lost)
    }
}
