import Testing
import Synchronization
@testable import QueueCore

/// Direct capture (issue #29): on the plain path (Float32 non-interleaved at the device rate)
/// the realtime side writes into the head buffer itself. Each scenario is recorded twice on
/// inline ManualDrivers, plain and as interleaved Float32 (the ring path: same samples, one
/// more copy), and the two must deliver the same frames with the same time stamps.
@Suite struct DirectCaptureTests {
    static let channels = 2

    /// A recording queue whose callback keeps each buffer's frames (per channel) and stamp.
    final class Recorder: @unchecked Sendable {
        let engine: InputQueueEngine
        let buffers = TestBuffers()
        /// Per delivered buffer: queue time of its first frame, and its frames per channel.
        let delivered = Mutex<[(sampleTime: Double, planes: [[Float]])]>([])
        let reenqueue = Mutex(true)

        init(driver: ManualDriver, format: StreamFormat, bufferFrames: Int, bufferCount: Int) throws {
            let box = Mutex<Recorder?>(nil)
            engine = try InputQueueEngine(format: format, provider: driver, clientName: "direct", executor: .queueThread) {
                buffer, bytes, _, stamp in box.withLock { $0 }?.take(buffer, bytes: bytes, stamp: stamp, format: format)
            }
            box.withLock { $0 = self }
            for _ in 0..<bufferCount {
                let buffer = buffers.make(bytes: bufferFrames * format.bytesPerFrame)
                try engine.addBuffer(buffer)
                try engine.enqueue(buffer.handle)
            }
        }

        func take(_ buffer: QueueBuffer, bytes: Int, stamp: QueueTimeStamp, format: StreamFormat) {
            let channels = format.channelCount
            let frames = bytes / format.bytesPerFrame
            var planes = Array(repeating: [Float](), count: channels)
            for c in 0..<channels {
                for f in 0..<frames {
                    if format.isFloat {
                        let samples = buffer.data.assumingMemoryBound(to: Float.self)
                        planes[c].append(format.isNonInterleaved ? samples[c * frames + f] : samples[f * channels + c])
                    } else {
                        planes[c].append(Float(buffer.data.assumingMemoryBound(to: Int16.self)[f * channels + c]) / 32768)
                    }
                }
            }
            delivered.withLock { $0.append((stamp.sampleTime, planes)) }
            if reenqueue.withLock({ $0 }) { _ = try? engine.enqueue(buffer.handle) }
        }

        /// Every channel's frames, buffer after buffer.
        var planes: [[Float]] {
            delivered.withLock { list in (0..<DirectCaptureTests.channels).map { c in list.flatMap { $0.planes[c] } } }
        }
        var stamps: [Double] { delivered.withLock { $0.map(\.sampleTime) } }
        var sizes: [Int] { delivered.withLock { $0.map { $0.planes[0].count } } }
    }

    static func plain(rate: Double = 48000) -> StreamFormat {
        StreamFormat(sampleRate: rate, encoding: .linearPCM, isFloat: true, isSignedInteger: false,
                     isNonInterleaved: true, bytesPerFrame: 4 * channels, channelCount: channels, bitsPerChannel: 32)
    }
    static let interleavedFloat = StreamFormat.linearPCM(sampleRate: 48000, channels: channels, bits: 32, float: true)

    struct Take {
        let planes: [[Float]]
        let stamps: [Double]
        let sizes: [Int]
        let direct: Int
        let underrun: RecordUnderrunInfo
        let lost: Int
        let startFrame: Int64
    }

    /// Records `script` on a fresh inline driver (period 256: buffers of 1000 frames end mid-cycle).
    static func record(_ format: StreamFormat, bufferFrames: Int = 1000, bufferCount: Int = 3,
                       script: (ManualDriver, Recorder) throws -> Void) throws -> Take {
        let driver = ManualDriver(periodFrames: 256, startFrame: 10_000, queueWork: .inline)
        driver.setCaptureSignal { port, frame in Float(testSample(frame: Int(frame), channel: port)) / 32768 }
        let recorder = try Recorder(driver: driver, format: format, bufferFrames: bufferFrames, bufferCount: bufferCount)
        let startFrame = driver.frameTime
        try recorder.engine.start(atDeviceFrame: nil)
        try script(driver, recorder)
        let take = Take(planes: recorder.planes, stamps: recorder.stamps, sizes: recorder.sizes,
                        direct: recorder.engine.framesCapturedDirectly, underrun: recorder.engine.underrunInfo,
                        lost: recorder.engine.lostFrames, startFrame: startFrame)
        recorder.engine.dispose(immediate: true)
        return take
    }

    /// Both paths: `cycles` cycles, `control` on the engine, `then` more, an immediate stop.
    static func controlMidTake(cycles: Int, then more: Int, _ control: (InputQueueEngine) throws -> Void) throws -> Take {
        try expectSameAsRingPath { driver, recorder in
            driver.run(cycles: cycles)
            try control(recorder.engine)
            driver.run(cycles: more)
            try recorder.engine.stop(immediate: true)
        }
    }

    /// The plain take equals the ring path's, and was (mostly) captured directly.
    static func expectSameAsRingPath(bufferFrames: Int = 1000, bufferCount: Int = 3,
                                     _ script: (ManualDriver, Recorder) throws -> Void) throws -> Take {
        let direct = try record(plain(), bufferFrames: bufferFrames, bufferCount: bufferCount, script: script)
        let ring = try record(interleavedFloat, bufferFrames: bufferFrames, bufferCount: bufferCount, script: script)
        #expect(ring.direct == 0)
        #expect(direct.direct > 0, "the plain path captured directly")
        #expect(!direct.planes[0].isEmpty)
        for c in 0..<channels { #expect(firstDifference(direct.planes[c], ring.planes[c]) == nil, "channel \(c)") }
        #expect(direct.stamps == ring.stamps)
        #expect(direct.sizes == ring.sizes)
        #expect(direct.underrun == ring.underrun)
        #expect(direct.lost == ring.lost)
        return direct
    }

    static func firstDifference(_ a: [Float], _ b: [Float]) -> String? {
        if a == b { return nil }
        for i in 0..<min(a.count, b.count) where a[i] != b[i] { return "frame \(i): \(a[i]) != \(b[i])" }
        return "counts \(a.count) != \(b.count)"
    }

    /// The signal of `channel` from device frame `start`, `count` frames.
    static func signal(from start: Int64, count: Int, channel: Int) -> [Float] {
        (0..<count).map { Float(testSample(frame: Int(start) + $0, channel: channel)) / 32768 }
    }

    @Test func buffersEndingMidCycleThenStopMidBufferAreBitExact() throws {
        let take = try Self.expectSameAsRingPath { driver, recorder in
            driver.run(cycles: 20)  // 5120 frames: five 1000-frame buffers and 120 frames of the sixth
            try recorder.engine.stop(immediate: true)
        }
        // (Stop(true) then returns the other enqueued buffers empty.)
        #expect(take.sizes.filter { $0 > 0 } == [1000, 1000, 1000, 1000, 1000, 120])
        #expect(take.stamps.prefix(6) == [0, 1000, 2000, 3000, 4000, 5000])
        for c in 0..<Self.channels {
            #expect(Self.firstDifference(take.planes[c], Self.signal(from: take.startFrame, count: 5120, channel: c)) == nil)
        }
        #expect(take.direct >= 4000)
    }

    @Test func stopAfterDrainDeliversEverything() throws {
        let take = try Self.expectSameAsRingPath { driver, recorder in
            driver.run(cycles: 13)
            try recorder.engine.stop(immediate: false)
            driver.run(cycles: 3)
        }
        #expect(take.sizes.reduce(0, +) == 13 * 256)
    }

    @Test func pauseAndResume() throws {
        _ = try Self.expectSameAsRingPath { driver, recorder in
            driver.run(cycles: 9)
            try recorder.engine.pause()
            driver.run(cycles: 5)
            try recorder.engine.start(atDeviceFrame: nil)
            driver.run(cycles: 9)
            try recorder.engine.stop(immediate: true)
        }
    }

    @Test func flushDeliversThePartlyFilledBuffer() throws {
        let take = try Self.controlMidTake(cycles: 5, then: 7) { try $0.flush() }
        #expect(take.sizes.first == 1000 && take.sizes.dropFirst().first == 280, "flushed at 1280 frames: \(take.sizes)")
    }

    @Test func resetDeliversThePartlyFilledBufferAndCaptureGoesOn() throws {
        _ = try Self.controlMidTake(cycles: 6, then: 8) { try $0.reset() }
    }

    @Test func serverGoingAwayDeliversWhatWasCapturedIntoTheLentBuffer() throws {
        let take = try Self.expectSameAsRingPath { driver, _ in
            driver.run(cycles: 5)
            try #require(driver.devices.last).simulateShutdown()
            driver.runQueueWork()
        }
        #expect(take.sizes.reduce(0, +) == 5 * 256)
    }

    @Test func skippedCyclesWhileLentBecomeTheSameGap() throws {
        let take = try Self.expectSameAsRingPath { driver, recorder in
            driver.run(cycles: 6)
            driver.skip(cycles: 2)
            driver.run(cycles: 10)
            try recorder.engine.stop(immediate: true)
        }
        #expect(take.underrun.framesLost == 512)
        #expect(take.underrun.eventCount == 1)
    }

    @Test func ringOverflowWhileNoBufferIsEnqueued() throws {
        let take = try Self.expectSameAsRingPath(bufferCount: 2) { driver, recorder in
            try recorder.engine.stop(immediate: true)
            try recorder.engine.setRingSeconds(0.05)  // 4096 frames
            for buffer in recorder.buffers.storage { try recorder.engine.enqueue(buffer) }
            recorder.reenqueue.withLock { $0 = false }
            try recorder.engine.start(atDeviceFrame: nil)
            driver.run(cycles: 30)  // 2000 frames into buffers, 4096 into the ring, the rest lost
            recorder.reenqueue.withLock { $0 = true }
            for buffer in recorder.buffers.storage { try recorder.engine.enqueue(buffer) }
            driver.run(cycles: 40)
            try recorder.engine.stop(immediate: true)
        }
        #expect(take.lost > 0)
        #expect(take.underrun.eventCount >= 1)
    }

    @Test(arguments: [("int16", StreamFormat.linearPCM(sampleRate: 48000, channels: 2, bits: 16)),
                      ("interleaved float", DirectCaptureTests.interleavedFloat),
                      ("resampled", DirectCaptureTests.plain(rate: 44100))])
    func formatsThatAreNotPlainTakeTheRingPath(_ name: String, _ format: StreamFormat) throws {
        let take = try Self.record(format) { driver, recorder in
            driver.run(cycles: 20)
            try recorder.engine.stop(immediate: true)
        }
        #expect(take.direct == 0, "\(name)")
        #expect(take.sizes.count >= 4, "\(name)")
    }
}
