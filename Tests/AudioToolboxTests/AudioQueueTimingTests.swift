import Testing
import Foundation
import Synchronization
import AudioToolbox
import QueueCore
import JackTestSupport

/// Sample-accurate time on the ManualDriver: scheduled starts, timed buffers, timelines, device time.
@Suite struct AudioQueueTimingTests {
    /// A deterministic pseudo-random sequence (so failures reproduce).
    struct Random {
        var state: UInt64
        mutating func next(_ range: ClosedRange<Int>) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return range.lowerBound + Int((state >> 33) % UInt64(range.count))
        }
    }

    func startTime(_ frame: Int64) -> AudioTimeStamp {
        var time = AudioTimeStamp()
        time.mSampleTime = Double(frame)
        time.mFlags = .sampleTimeValid
        return time
    }

    /// A float mono queue with one buffer of `frames` frames of value `value`.
    func constantQueue(frames: Int, value: Float = 0.5, device: DeviceProvider) throws -> (AudioQueueRef, AudioQueueBufferRef) {
        var format = lpcm(channels: 2, bits: 32, float: true)
        var queue: AudioQueueRef?
        #expect(AudioQueueNewOutput(&format, { _, _, _ in }, nil, nil, nil, 0, &queue, device: device) == noErr)
        let q = try #require(queue)
        var buffer: AudioQueueBufferRef?
        #expect(AudioQueueAllocateBuffer(q, UInt32(frames * 8), &buffer) == noErr)
        let b = try #require(buffer)
        let samples = b.pointee.mAudioData.assumingMemoryBound(to: Float.self)
        for i in 0..<(frames * 2) { samples[i] = value }
        b.pointee.mAudioDataByteSize = UInt32(frames * 8)
        return (q, b)
    }

    @Test func aThousandRandomStartFramesPlayTheirFirstFrameExactlyThere() throws {
        let driver = ManualDriver(periodFrames: 256, startFrame: (1 << 32) - 300_000)  // crosses a 32-bit wrap
        var random = Random(state: 0x5EED)
        let (queue, buffer) = try constantQueue(frames: 64, device: driver)
        for trial in 0..<1000 {
            let period = [16, 32, 64, 100, 128, 256, 441, 512, 1000, 1024, 2048, 4096][random.next(0...11)]
            driver.periodFrames = period
            #expect(AudioQueueEnqueueBuffer(queue, buffer, 0, nil) == noErr)
            let start = driver.frameTime + Int64(random.next(0...(3 * period)))
            var time = startTime(start)
            driver.startRecordingPlayback()
            #expect(AudioQueueStart(queue, &time) == noErr)
            driver.run(frames: 4 * period + 64)
            let (recordStart, left) = driver.recordedPlayback(port: 0)
            let first = left.firstIndex { $0 != 0 }
            #expect(first.map { recordStart + Int64($0) } == start, "trial \(trial), period \(period)")
            #expect(AudioQueueStop(queue, true) == noErr)
            if first.map({ recordStart + Int64($0) }) != start { break }
        }
        #expect(AudioQueueDispose(queue, true) == noErr)
    }

    @Test func randomInputStartFramesRecordTheirFirstFrameExactlyThere() throws {
        let driver = ManualDriver(periodFrames: 256, startFrame: 77_777)
        driver.setCaptureSignal { port, frame in Float(signal(Int(frame), port)) / 32768 }
        var random = Random(state: 0xBEEF)
        var format = lpcm()
        let context = RecordingContext()
        var queue: AudioQueueRef?
        #expect(AudioQueueNewInput(&format, handleInputBuffer, Unmanaged.passUnretained(context).toOpaque(), nil, nil, 0, &queue, device: driver) == noErr)
        let q = try #require(queue)
        var buffer: AudioQueueBufferRef?
        #expect(AudioQueueAllocateBuffer(q, 4 * 64, &buffer) == noErr)
        context.reenqueue.withLock { $0 = false }
        for trial in 0..<1000 {
            let period = [16, 32, 64, 128, 256, 480, 1024, 2048, 4096][random.next(0...8)]
            driver.periodFrames = period
            context.samples.withLock { $0.removeAll() }
            #expect(AudioQueueEnqueueBuffer(q, buffer!, 0, nil) == noErr)
            let start = driver.frameTime + Int64(random.next(0...(3 * period)))
            var time = startTime(start)
            #expect(AudioQueueStart(q, &time) == noErr)
            driver.run(frames: 4 * period + 64)
            #expect(waitUntil { context.samples.withLock { $0.count } == 128 })
            let samples = context.samples.withLock { $0 }
            #expect(samples.first == signal(Int(start), 0), "trial \(trial), period \(period)")
            #expect(AudioQueueStop(q, true) == noErr)
            if samples.first != signal(Int(start), 0) { break }
        }
        #expect(AudioQueueDispose(q, true) == noErr)
    }

    @Test func trimsGapsParameterEventsAndAscendingTimesAreExact() throws {
        let driver = ManualDriver(periodFrames: 64)
        var format = lpcm(channels: 2, bits: 32, float: true)
        var queue: AudioQueueRef?
        #expect(AudioQueueNewOutput(&format, { _, _, _ in }, nil, nil, nil, 0, &queue, device: driver) == noErr)
        let q = try #require(queue)
        func buffer(_ frames: Int, ramp base: Float) throws -> AudioQueueBufferRef {
            var buffer: AudioQueueBufferRef?
            #expect(AudioQueueAllocateBuffer(q, UInt32(frames * 8), &buffer) == noErr)
            let b = try #require(buffer)
            let samples = b.pointee.mAudioData.assumingMemoryBound(to: Float.self)
            for f in 0..<frames { samples[2 * f] = base + Float(f) / 4096; samples[2 * f + 1] = base + Float(f) / 4096 }
            b.pointee.mAudioDataByteSize = UInt32(frames * 8)
            return b
        }
        let a = try buffer(1000, ramp: 0.1), b = try buffer(1000, ramp: 0.3), c = try buffer(500, ramp: 0.6)
        var actual = AudioTimeStamp()
        // A: frames 10..<990 at queue time 0 (trim 10 and 10).
        #expect(AudioQueueEnqueueBufferWithParameters(q, a, 0, nil, 10, 10, 0, nil, nil, &actual) == noErr)
        #expect(actual.mSampleTime == 0)
        // B: at queue time 2000 (a gap of silence 980..<2000), volume 0.5 from its first frame.
        var volume = AudioQueueParameterEvent(mID: kAudioQueueParam_Volume, mValue: 0.5)
        var at = AudioTimeStamp(); at.mSampleTime = 2000; at.mFlags = .sampleTimeValid
        #expect(AudioQueueEnqueueBufferWithParameters(q, b, 0, nil, 0, 0, 1, &volume, &at, &actual) == noErr)
        #expect(actual.mSampleTime == 2000)
        // A start time before the previous buffer's: refused, and the buffer is not kept.
        var earlier = AudioTimeStamp(); earlier.mSampleTime = 1500; earlier.mFlags = .sampleTimeValid
        #expect(AudioQueueEnqueueBufferWithParameters(q, c, 0, nil, 0, 0, 0, nil, &earlier, nil) == kAudio_ParamError)
        // C: right after B (NULL time), pan hard right.
        var pan = AudioQueueParameterEvent(mID: kAudioQueueParam_Pan, mValue: 1)
        #expect(AudioQueueEnqueueBufferWithParameters(q, c, 0, nil, 0, 0, 1, &pan, nil, &actual) == noErr)
        #expect(actual.mSampleTime == 3000)
        driver.startRecordingPlayback()
        #expect(AudioQueueStart(q, nil) == noErr)
        driver.run(frames: 4000)
        let left = driver.recordedPlayback(port: 0).samples
        let right = driver.recordedPlayback(port: 1).samples
        let expectedA = (10..<990).map { 0.1 + Float($0) / 4096 }
        #expect(firstMismatch(Array(left[0..<980]), expectedA) == nil)
        #expect(left[980..<2000].allSatisfy { $0 == 0 }, "the gap is silence")
        #expect(firstMismatch(Array(left[2000..<3000]), (0..<1000).map { (0.3 + Float($0) / 4096) * 0.5 }) == nil)
        #expect(left[3000..<3500].allSatisfy { $0 == 0 }, "pan +1 silences the left")
        #expect(firstMismatch(Array(right[3000..<3500]), (0..<500).map { (0.6 + Float($0) / 4096) * 0.5 }) == nil)
        var value: Float32 = 0
        #expect(AudioQueueGetParameter(q, kAudioQueueParam_Pan, &value) == noErr)
        #expect(value == 1, "the parameter reports the value a buffer event applied")
        #expect(AudioQueueDispose(q, true) == noErr)
    }

    @Test func queueTimeStartsAtZeroAndAdvancesByTheFramesPlayed() throws {
        let driver = ManualDriver(periodFrames: 128, startFrame: 5000)
        let (queue, buffer) = try constantQueue(frames: 48000, device: driver)
        var timeline: AudioQueueTimelineRef?
        #expect(AudioQueueCreateTimeline(queue, &timeline) == noErr)
        #expect(AudioQueueEnqueueBuffer(queue, buffer, 0, nil) == noErr)
        var start = startTime(driver.frameTime + 1000)
        #expect(AudioQueueStart(queue, &start) == noErr)
        driver.run(cycles: 1)
        var now = AudioTimeStamp()
        var discontinuity: DarwinBoolean = false
        #expect(AudioQueueGetCurrentTime(queue, timeline, &now, &discontinuity) == noErr)
        #expect(now.mSampleTime == -1000 + 128, "before its start frame the queue time is negative")
        driver.run(cycles: 20)
        #expect(AudioQueueGetCurrentTime(queue, timeline, &now, &discontinuity) == noErr)
        #expect(now.mSampleTime == Double(21 * 128 - 1000))
        #expect(!discontinuity.boolValue)
        driver.devices.last!.simulateXrun()
        #expect(AudioQueueGetCurrentTime(queue, timeline, &now, &discontinuity) == noErr)
        #expect(discontinuity.boolValue, "an xrun is a discontinuity")
        #expect(AudioQueueGetCurrentTime(queue, timeline, &now, &discontinuity) == noErr)
        #expect(!discontinuity.boolValue)
        #expect(AudioQueueDisposeTimeline(queue, timeline!) == noErr)
        #expect(AudioQueueDispose(queue, true) == noErr)
    }

    @Test func deviceTimeTranslatesBothWaysAndHostTimeIsValidWhenStopped() throws {
        let driver = ManualDriver(periodFrames: 256, startFrame: 123_456)
        let (queue, _) = try constantQueue(frames: 64, device: driver)
        var now = AudioTimeStamp()
        #expect(AudioQueueDeviceGetCurrentTime(queue, &now) == noErr)
        #expect(now.mFlags.contains(.hostTimeValid))
        #expect(now.mSampleTime == 123_456)
        var later = AudioTimeStamp()
        usleep(2000)
        #expect(AudioQueueDeviceGetCurrentTime(queue, &later) == noErr)
        #expect(later.mHostTime > now.mHostTime, "host time is monotonic")
        for frame in [Int64(0), 123_456, 1 << 33] {
            var sample = startTime(frame)
            var host = AudioTimeStamp()
            #expect(AudioQueueDeviceTranslateTime(queue, &sample, &host) == noErr)
            var back = AudioTimeStamp()
            back.mHostTime = host.mHostTime
            back.mFlags = .hostTimeValid
            var again = AudioTimeStamp()
            #expect(AudioQueueDeviceTranslateTime(queue, &back, &again) == noErr)
            #expect(abs(again.mSampleTime - Double(frame)) <= 1, "round trip within a frame")
        }
        #expect(AudioQueueDispose(queue, true) == noErr)
    }

    @Test func queuesStartedForTheNearestCommonFrameAreSampleAligned() throws {
        let driver = ManualDriver(periodFrames: 256)
        var queues: [AudioQueueRef] = []
        for _ in 0..<4 {
            let (queue, buffer) = try constantQueue(frames: 256, device: driver)
            #expect(AudioQueueEnqueueBuffer(queue, buffer, 0, nil) == noErr)
            var prepared: UInt32 = 0
            #expect(AudioQueuePrime(queue, 0, &prepared) == noErr)
            queues.append(queue)
        }
        var when = AudioTimeStamp()
        #expect(AudioQueueDeviceGetCurrentTime(queues[0], &when) == noErr)
        when.mSampleTime += 100
        when.mFlags = .sampleTimeValid
        #expect(AudioQueueDeviceGetNearestStartTime(queues[0], &when, 0) == noErr)
        #expect(when.mSampleTime >= Double(driver.frameTime + 100))
        driver.startRecordingPlayback()
        for queue in queues { #expect(AudioQueueStart(queue, &when) == noErr) }
        driver.run(cycles: 8)
        // Four queues of 0.5 summed on the system port: 2.0 exactly from the common frame.
        let (recordStart, left) = driver.recordedPlayback(port: 0)
        let first = try #require(left.firstIndex { $0 != 0 })
        #expect(recordStart + Int64(first) == Int64(when.mSampleTime))
        #expect(left[first..<(first + 256)].allSatisfy { $0 == 2 })
        for queue in queues { #expect(AudioQueueDispose(queue, true) == noErr) }
    }

    @Test func skippedCyclesKeepPlaybackOnTimeAndBecomeGapsInRecordings() throws {
        let driver = ManualDriver(periodFrames: 256)
        driver.setCaptureSignal { port, frame in Float(signal(Int(frame), port)) / 32768 }
        // Playback: a ramp; after two skipped cycles it goes on where the time says.
        // Recording, from the capture signal.
        let (out, inq, context, _) = try startRampAndRecording(driver)
        driver.run(cycles: 4)
        driver.skip(cycles: 2)
        driver.run(cycles: 4)
        let played = driver.recordedPlayback(port: 0).samples
        // Frame t of the output is ramp value t+1 wherever the output ran, except in the
        // two cycles after the skip: a jump in frame time is only a loss once the next
        // cycles confirm it (late readings of the server's clock look the same), so
        // they play on where the queue was.
        for t in [0, 1023, 8 * 256, 8 * 256 + 100, 10 * 256 - 1] {
            #expect(played[t] == Float(t + 1) / 65536, "output frame \(t) is on time")
        }
        #expect(played[6 * 256] == Float(4 * 256 + 1) / 65536 && played[8 * 256 - 1] == Float(6 * 256) / 65536)
        #expect(played[(4 * 256)..<(6 * 256)].allSatisfy { $0 == 0 }, "the skipped cycles are silent")
        #expect(waitUntil { context.samples.withLock { $0.count } >= 2 * 2048 })
        let starts = context.starts.withLock { $0 }
        // The recording jumps by exactly the 512 frames it never saw.
        let times = starts.map(\.sampleTime)
        #expect(times.contains(1536) && !times.contains(1024), "times: \(times)")
        var lost: UInt64 = 0
        var info = AudioQueueRecordUnderrunInfo()
        var size = UInt32(MemoryLayout<AudioQueueRecordUnderrunInfo>.size)
        #expect(AudioQueueGetProperty(inq, kAudioQueueProperty_RecordUnderrun, &info, &size) == noErr)
        lost = info.mFramesLost
        #expect(lost == 512)
        #expect(AudioQueueDispose(out, true) == noErr)
        #expect(AudioQueueDispose(inq, true) == noErr)
    }

    /// In freewheel the server runs every cycle of every client: a jump of its clock (jackd's
    /// on an xrun report during freewheel) loses nothing. Playback goes on with the next frame of
    /// the ramp, the recording has no gap and reports no underrun.
    @Test func aClockJumpDuringFreewheelIsNotALoss() throws {
        let driver = ManualDriver(periodFrames: 256)
        driver.isFreewheeling = true
        driver.setCaptureSignal { port, frame in Float(signal(Int(frame), port)) / 32768 }
        let (out, inq, context, _) = try startRampAndRecording(driver)
        driver.run(cycles: 4)
        driver.skip(cycles: 2)
        driver.run(cycles: 4)
        let played = driver.recordedPlayback(port: 0).samples
        // The skip's own frames are silent on the system port (no client ran in them); every
        // cycle the queue ran played the ramp's next frames.
        let audible = played.enumerated().filter { !(4 * 256..<6 * 256).contains($0.offset) }.map(\.element)
        #expect(audible.count == 8 * 256)
        #expect(audible.enumerated().allSatisfy { $0.element == Float($0.offset + 1) / 65536 }, "no frame of the ramp dropped")
        #expect(waitUntil { context.samples.withLock { $0.count } >= 2 * 2048 })
        let times = context.starts.withLock { $0 }.map(\.sampleTime)
        #expect(times.contains(1024) && times.contains(1536), "queue time runs on without a gap: \(times)")
        var info = AudioQueueRecordUnderrunInfo()
        var size = UInt32(MemoryLayout<AudioQueueRecordUnderrunInfo>.size)
        #expect(AudioQueueGetProperty(inq, kAudioQueueProperty_RecordUnderrun, &info, &size) == noErr)
        #expect(info.mFramesLost == 0)
        #expect(AudioQueueDispose(out, true) == noErr)
        #expect(AudioQueueDispose(inq, true) == noErr)
    }

    /// Starts, on the driver's next frame, an output queue playing a ramp (frame t is
    /// (t + 1) / 65536, 8192 frames) and an input queue recording the capture signal in
    /// 512-frame buffers; returns them, the recording's context and the start frame.
    private func startRampAndRecording(_ driver: ManualDriver) throws
        -> (output: AudioQueueRef, input: AudioQueueRef, context: RecordingContext, origin: Int) {
        var format = lpcm(channels: 2, bits: 32, float: true)
        var output: AudioQueueRef?
        #expect(AudioQueueNewOutput(&format, { _, _, _ in }, nil, nil, nil, 0, &output, device: driver) == noErr)
        let out = try #require(output)
        var buffer: AudioQueueBufferRef?
        #expect(AudioQueueAllocateBuffer(out, 8 * 8192, &buffer) == noErr)
        let samples = buffer!.pointee.mAudioData.assumingMemoryBound(to: Float.self)
        for f in 0..<8192 { samples[2 * f] = Float(f + 1) / 65536; samples[2 * f + 1] = Float(f + 1) / 65536 }
        buffer!.pointee.mAudioDataByteSize = 8 * 8192
        #expect(AudioQueueEnqueueBuffer(out, buffer!, 0, nil) == noErr)
        let context = RecordingContext()
        var input: AudioQueueRef?
        var inputFormat = lpcm()
        #expect(AudioQueueNewInput(&inputFormat, handleInputBuffer, Unmanaged.passUnretained(context).toOpaque(), nil, nil, 0, &input, device: driver) == noErr)
        let inq = try #require(input)
        for _ in 0..<4 {
            var b: AudioQueueBufferRef?
            #expect(AudioQueueAllocateBuffer(inq, 4 * 512, &b) == noErr)
            #expect(AudioQueueEnqueueBuffer(inq, b!, 0, nil) == noErr)
        }
        let origin = Int(driver.frameTime)
        var start = startTime(driver.frameTime)
        driver.startRecordingPlayback()
        #expect(AudioQueueStart(out, &start) == noErr)
        #expect(AudioQueueStart(inq, &start) == noErr)
        return (out, inq, context, origin)
    }

    /// A client running late reads the server's next frame (JACK2's jack_last_frame_time),
    /// then the same frame again: nothing was lost, and nothing may be dropped or inserted.
    @Test(arguments: [1, 2, 3]) func lateReadingsOfTheClockLoseNothing(lateCycles: Int) throws {
        let driver = ManualDriver(periodFrames: 256)
        driver.setCaptureSignal { port, frame in Float(signal(Int(frame), port)) / 32768 }
        let (out, inq, context, origin) = try startRampAndRecording(driver)
        driver.run(cycles: 4)
        driver.readLate(cycles: lateCycles)
        driver.run(cycles: 12)
        let played = driver.recordedPlayback(port: 0).samples
        #expect(played.count == 16 * 256)
        // Output queues tell up to 2 late readings in a row from a skip, input queues 3.
        if lateCycles <= 2 {
            #expect(played.indices.allSatisfy { played[$0] == Float($0 + 1) / 65536 }, "every frame played, on time")
        }
        #expect(waitUntil { context.samples.withLock { $0.count } >= 2 * 3584 })
        let recorded = context.samples.withLock { $0 }
        let expected = (0..<(2 * 3584)).map { signal(origin + $0 / 2, $0 % 2) }
        #expect(Array(recorded.prefix(2 * 3584)) == expected, "every frame recorded, in order")
        #expect(context.starts.withLock { $0 }.map(\.sampleTime).prefix(7) == [0, 512, 1024, 1536, 2048, 2560, 3072])
        var info = AudioQueueRecordUnderrunInfo()
        var size = UInt32(MemoryLayout<AudioQueueRecordUnderrunInfo>.size)
        #expect(AudioQueueGetProperty(inq, kAudioQueueProperty_RecordUnderrun, &info, &size) == noErr)
        #expect(info.mFramesLost == 0 && info.mEventCount == 0)
        #expect(AudioQueueDispose(out, true) == noErr)
        #expect(AudioQueueDispose(inq, true) == noErr)
    }

    /// The start device frame of a queue's last run, read as a queue stops or long after.
    func startDeviceFrame(_ queue: AudioQueueRef) -> Double {
        var frame: Float64 = -1
        var size = UInt32(MemoryLayout<Float64>.size)
        #expect(AudioQueueGetProperty(queue, kAudioQueueProperty_StartDeviceFrame, &frame, &size) == noErr)
        return frame
    }

    @Test func startDeviceFrameStillNamesTheStartAfterTheQueueStopped() throws {
        let driver = ManualDriver(periodFrames: 256, startFrame: 10_000)
        driver.setCaptureSignal { port, frame in Float(signal(Int(frame), port)) / 32768 }
        // Playback: 1000 frames from frame 10_600, played out by Stop(false) in mid-period.
        let (output, buffer) = try constantQueue(frames: 1000, device: driver)
        #expect(startDeviceFrame(output) == 0, "0 before the first start")
        #expect(AudioQueueEnqueueBuffer(output, buffer, 0, nil) == noErr)
        var start = startTime(10_600)
        #expect(AudioQueueStart(output, &start) == noErr)
        #expect(AudioQueueStop(output, false) == noErr)
        driver.run(cycles: 8)
        #expect(startDeviceFrame(output) == 10_600)
        driver.run(cycles: 40)
        #expect(startDeviceFrame(output) == 10_600, "a stopped queue's time 0 stays where its run began")

        // Recording: started inside a period, stopped; the frame stays, then a new run has its own.
        var format = lpcm()
        var input: AudioQueueRef?
        #expect(AudioQueueNewInput(&format, { _, _, _, _, _, _ in }, nil, nil, nil, 0, &input, device: driver) == noErr)
        let q = try #require(input)
        var recordStart = startTime(driver.frameTime + 100)
        #expect(AudioQueueStart(q, &recordStart) == noErr)
        driver.run(cycles: 10)
        #expect(AudioQueueStop(q, true) == noErr)
        driver.run(cycles: 40)
        #expect(startDeviceFrame(q) == recordStart.mSampleTime)
        var restart = startTime(driver.frameTime + 300)
        #expect(AudioQueueStart(q, &restart) == noErr)
        driver.run(cycles: 4)
        #expect(startDeviceFrame(q) == restart.mSampleTime)
        #expect(AudioQueueDispose(q, true) == noErr)
        #expect(AudioQueueDispose(output, true) == noErr)
    }

    @Test func nearestStartTimeNeedsARunningOrPrimedQueue() throws {
        let device = ManualDriver()
        let (queue, _) = try constantQueue(frames: 64, device: device)
        var when = AudioTimeStamp()
        when.mFlags = .sampleTimeValid
        #expect(AudioQueueDeviceGetNearestStartTime(queue, &when, 0) == kAudioQueueErr_InvalidRunState)
        #expect(AudioQueueDispose(queue, true) == noErr)
    }
}
