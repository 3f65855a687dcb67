import Testing
import Glibc
import Synchronization
@testable import QueueCore
import JackTestSupport

@Suite struct OutputQueueEngineTests {
    /// Plays `frames` frames of a stereo int16 signal through buffers of `bufferFrames`, re-enqueued by the callback.
    final class Player: @unchecked Sendable {
        let engine: OutputQueueEngine
        let buffers = TestBuffers()
        let total: Int
        let bufferFrames: Int
        let channels: Int
        let next = Mutex(0)
        let stopped = Mutex(false)

        init(driver: ManualDriver, frames: Int, bufferFrames: Int, channels: Int = 2, rate: Double = 48000) throws {
            total = frames
            self.bufferFrames = bufferFrames
            self.channels = channels
            let format = StreamFormat.linearPCM(sampleRate: rate, channels: channels, bits: 16)
            let box = Mutex<Player?>(nil)
            engine = try OutputQueueEngine(format: format, provider: driver, clientName: "player",
                                           executor: .queueThread) { buffer in
                box.withLock { $0 }?.refill(buffer)
            }
            box.withLock { $0 = self }
        }

        /// Fills a buffer with the next frames and enqueues it; stops (asynchronously) at the end.
        func refill(_ buffer: QueueBuffer) {
            let start = next.withLock { value -> Int in
                let start = value
                value = min(total, value + bufferFrames)
                return start
            }
            let count = min(bufferFrames, total - start)
            if count <= 0 {
                stopped.withLock { stopping in
                    if !stopping { stopping = true; _ = try? engine.stop(immediate: false) }
                }
                return
            }
            let samples = buffer.data.assumingMemoryBound(to: Int16.self)
            for f in 0..<count { for c in 0..<channels { samples[f * channels + c] = testSample(frame: start + f, channel: c) } }
            _ = try? engine.enqueue(buffer.handle, byteCount: count * channels * 2)
        }

        func prepare(bufferCount: Int) throws {
            for _ in 0..<bufferCount {
                let buffer = buffers.make(bytes: bufferFrames * channels * 2)
                try engine.addBuffer(buffer)
                refill(buffer)
            }
        }
    }

    /// A stereo 16-bit queue whose callback logs the buffers it gets back, with three 1000-frame
    /// buffers enqueued and all decoded into the ring (primed).
    func primedWithThreeBuffers(_ driver: ManualDriver) throws -> (OutputQueueEngine, BufferLog, TestBuffers) {
        let log = BufferLog()
        let engine = try OutputQueueEngine(format: .linearPCM(sampleRate: 48000, channels: 2, bits: 16), provider: driver,
                                           clientName: "held", executor: .queueThread) { log.append($0.handle) }
        let buffers = TestBuffers()
        for _ in 0..<3 {
            let buffer = buffers.make(bytes: 4000)
            try engine.addBuffer(buffer)
            try engine.enqueue(buffer.handle, byteCount: 4000)
        }
        #expect(try engine.prime(frames: 0) == 3000)
        return (engine, log, buffers)
    }

    /// Three 1000-frame buffers, all decoded into the ring before the start: none comes back
    /// until it has been played, and each comes back in the first cycle after the one that
    /// rendered its last frame (its port buffers have gone out then). Inline: no queue thread,
    /// so the counts are exact after each step, with no waiting, and the callbacks run here.
    @Test func aBufferComesBackOnceItHasBeenPlayedNotWhenDecoded() throws {
        let driver = ManualDriver(periodFrames: 256, queueWork: .inline)
        let (engine, log, buffers) = try primedWithThreeBuffers(driver)
        defer { engine.dispose(immediate: true) }
        // Decoded, not played: nothing comes back, whatever work the queue does.
        driver.runQueueWork()
        #expect(log.count == 0)
        try engine.start(atDeviceFrame: nil)
        // Buffer n ends at frame 1000 n: rendered in cycle (1000 n - 1) / 256, back in the next.
        for (cycles, expected) in [(4, 0), (1, 1), (3, 1), (1, 2), (3, 2), (1, 3)] {
            driver.run(cycles: cycles)
            #expect(log.count == expected, "after frame \(driver.frameTime)")
        }
        #expect(log.handles == buffers.storage.map { Int(bitPattern: $0) })
        #expect(log.threads.allSatisfy { pthread_equal($0, pthread_self()) != 0 }, "callbacks ran on the test's thread")
    }

    /// Reset and Stop(true) return what the queue holds, played or not, at once.
    @Test func resetReturnsBuffersDecodedButNotPlayed() throws {
        let driver = ManualDriver(periodFrames: 256)
        let (engine, log, buffers) = try primedWithThreeBuffers(driver)
        defer { engine.dispose(immediate: true) }
        try engine.reset()
        #expect(log.count == 3)
        #expect(log.handles == buffers.storage.map { Int(bitPattern: $0) })
        // Back with the application: each can be enqueued again.
        for data in buffers.storage { #expect(throws: Never.self) { try engine.enqueue(data, byteCount: 4000) } }
        try engine.stop(immediate: true)
        #expect(log.count == 6)
    }

    /// Inline: the stop is reported by the cycle's own queue work, with no waiting.
    @Test func playsEveryFrameBitExactInOrderThenStops() throws {
        let driver = ManualDriver(periodFrames: 256, queueWork: .inline)
        let player = try Player(driver: driver, frames: 48000, bufferFrames: 1000)
        try player.prepare(bufferCount: 3)
        driver.startRecordingPlayback()
        try player.engine.start(atDeviceFrame: nil)
        var cycles = 0
        while player.engine.state != .stopped && cycles < 1000 {
            driver.run(cycles: 1)
            cycles += 1
        }
        #expect(!player.engine.isRunningValue)
        // 48000 frames are 188 cycles of 256 (the last one partly): the queue work right after
        // the cycle that played the last frame sees the end (with threads, some cycles later).
        #expect(cycles == 188)
        let left = driver.recordedPlayback(port: 0).samples
        let right = driver.recordedPlayback(port: 1).samples
        let first = try #require(left.firstIndex { $0 != 0 })
        #expect(first == 0)
        let played = Array(left[first..<min(left.count, first + 48000)])
        #expect(played.count == 48000)
        let expected = (0..<48000).map { Float(testSample(frame: $0, channel: 0)) / 32768 }
        #expect(played == expected)
        #expect(Array(right[first..<first + 48000]) == (0..<48000).map { Float(testSample(frame: $0, channel: 1)) / 32768 })
        // Silence after the last frame.
        #expect(left[(first + 48000)...].allSatisfy { $0 == 0 })
        player.engine.dispose(immediate: true)
    }

    @Test(arguments: [16, 64, 256, 1000, 4096])
    func startsOnTheExactDeviceFrame(period: Int) throws {
        let driver = ManualDriver(periodFrames: period, startFrame: 1_000_003)
        let player = try Player(driver: driver, frames: 4800, bufferFrames: 4800)
        try player.prepare(bufferCount: 1)
        driver.startRecordingPlayback()
        let startFrame = driver.frameTime + Int64(3 * period + period / 3 + 1)
        try player.engine.start(atDeviceFrame: startFrame)
        driver.run(frames: 12 * period + 9600)
        let (recordStart, left) = driver.recordedPlayback(port: 0)
        let first = try #require(left.firstIndex { $0 != 0 })
        #expect(recordStart + Int64(first) == startFrame)
        #expect(left[first] == Float(testSample(frame: 0, channel: 0)) / 32768)
        player.engine.dispose(immediate: true)
    }

    @Test func stopImmediateReturnsQueuedBuffersAndRefusesEnqueueInTheirCallbacks() throws {
        let driver = ManualDriver()
        let log = BufferLog()
        let errors = Mutex<[QueueError]>([])
        let holder = Mutex<OutputQueueEngine?>(nil)
        let engine = try OutputQueueEngine(format: .linearPCM(sampleRate: 48000, channels: 2, bits: 16),
                                           provider: driver, clientName: "t", executor: .queueThread) { buffer in
            log.append(buffer.handle)
            do { try holder.withLock { $0 }?.enqueue(buffer.handle, byteCount: 4000) }
            catch let error as QueueError { errors.withLock { $0.append(error) } } catch {}
        }
        holder.withLock { $0 = engine }
        let buffers = TestBuffers()
        var handles: [Int] = []
        for _ in 0..<3 {
            let buffer = buffers.make(bytes: 4000)
            try engine.addBuffer(buffer)
            try engine.enqueue(buffer.handle, byteCount: 4000)
            handles.append(Int(bitPattern: buffer.handle))
        }
        // Never started: Stop(true) returns all three, once each, and re-enqueueing is refused.
        try engine.stop(immediate: true)
        #expect(Set(log.handles) == Set(handles))
        #expect(log.count == 3)
        #expect(errors.withLock { $0 } == [.enqueueDuringReset, .enqueueDuringReset, .enqueueDuringReset])
        // After the stop, enqueueing works again.
        try engine.enqueue(UnsafeMutableRawPointer(bitPattern: handles[0])!, byteCount: 4000)
        engine.dispose(immediate: true)
    }

    @Test func misuseReturnsErrors() throws {
        let driver = ManualDriver()
        let engine = try OutputQueueEngine(format: .linearPCM(sampleRate: 48000, channels: 2, bits: 16),
                                           provider: driver, clientName: "t", executor: .queueThread) { _ in }
        let other = try OutputQueueEngine(format: .linearPCM(sampleRate: 48000, channels: 2, bits: 16),
                                          provider: driver, clientName: "t", executor: .queueThread) { _ in }
        let buffers = TestBuffers()
        let mine = buffers.make(bytes: 400)
        let theirs = buffers.make(bytes: 400)
        try engine.addBuffer(mine)
        try other.addBuffer(theirs)
        #expect(throws: QueueError.invalidBuffer) { try engine.enqueue(theirs.handle, byteCount: 400) }
        #expect(throws: QueueError.bufferEmpty) { try engine.enqueue(mine.handle, byteCount: 0) }
        try engine.enqueue(mine.handle, byteCount: 400)
        #expect(throws: QueueError.bufferInQueue) { try engine.removeBuffer(mine.handle) }
        #expect(throws: QueueError.bufferEnqueuedTwice) { try engine.enqueue(mine.handle, byteCount: 400) }
        engine.dispose(immediate: true)
        other.dispose(immediate: true)
    }
}
