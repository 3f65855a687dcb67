import Testing
import Foundation
import Glibc
import Synchronization
import AudioToolbox
import QueueCore
import JackTestSupport

/// What a misbehaving caller gets: a result code, never a trap, a hang or freed memory.
/// Each test is one finding of the API walk (AudioQueueAPIWalkTests), kept as a regression test.
@Suite struct AudioQueueMisuseTests {
    /// A time stamp whose sample time is valid.
    func sampleTime(_ value: Double) -> AudioTimeStamp {
        var time = AudioTimeStamp()
        time.mSampleTime = value
        time.mFlags = .sampleTimeValid
        return time
    }

    /// A stereo int16 output queue with silent callbacks and `count` buffers of `frames` frames, filled.
    func outputQueue(frames: Int = 4800, count: Int = 1, rate: Double = 48000,
                     callback: AudioQueueOutputCallback = { _, _, _ in },
                     userData: UnsafeMutableRawPointer? = nil, device: DeviceProvider) throws -> (AudioQueueRef, [AudioQueueBufferRef]) {
        var format = lpcm(rate: rate)
        var queue: AudioQueueRef?
        #expect(AudioQueueNewOutput(&format, callback, userData, nil, nil, 0, &queue, device: device) == noErr)
        let q = try #require(queue)
        var buffers: [AudioQueueBufferRef] = []
        for _ in 0..<count {
            var buffer: AudioQueueBufferRef?
            #expect(AudioQueueAllocateBuffer(q, UInt32(frames * 4), &buffer) == noErr)
            let b = try #require(buffer)
            let samples = b.pointee.mAudioData.assumingMemoryBound(to: Int16.self)
            for i in 0..<(frames * 2) { samples[i] = signal(i / 2, i % 2) }
            b.pointee.mAudioDataByteSize = UInt32(frames * 4)
            buffers.append(b)
        }
        return (q, buffers)
    }

    static let farOffSampleTimes: [Double] = [1e300, -1e300, 1e19, -1e19, -0x1p63, 0x1p63, 0x1p53]

    @Test(arguments: farOffSampleTimes) func farOffSampleTimesAreParamErrors(value: Double) throws {
        let device = ManualDriver()
        let (q, buffers) = try outputQueue(device: device)
        var time = sampleTime(value)
        #expect(AudioQueueStart(q, &time) == kAudio_ParamError)
        #expect(AudioQueueDeviceGetNearestStartTime(q, &time, 0) == kAudio_ParamError)
        time = sampleTime(value)
        var out = AudioTimeStamp()
        #expect(AudioQueueDeviceTranslateTime(q, &time, &out) == kAudio_ParamError)
        #expect(AudioQueueEnqueueBufferWithParameters(q, buffers[0], 0, nil, 0, 0, 0, nil, &time, &out) == kAudio_ParamError)
        // Nothing was kept: the buffer is the application's, and the queue still works.
        #expect(AudioQueueEnqueueBuffer(q, buffers[0], 0, nil) == noErr)
        #expect(AudioQueueStart(q, nil) == noErr)
        #expect(AudioQueueDispose(q, true) == noErr)
    }

    @Test func hugeVolumeRampTimesAreRefusedAndLeaveTheRampAsItWas() throws {
        let device = ManualDriver()
        let (q, _) = try outputQueue(device: device)
        #expect(AudioQueueSetParameter(q, kAudioQueueParam_VolumeRampTime, 86_400) == noErr)
        for value in [Float(1e15), Float.greatestFiniteMagnitude] {
            #expect(AudioQueueSetParameter(q, kAudioQueueParam_VolumeRampTime, value) == kAudio_ParamError)
            var read: Float = 0
            #expect(AudioQueueGetParameter(q, kAudioQueueParam_VolumeRampTime, &read) == noErr)
            #expect(read == 86_400)
        }
        #expect(AudioQueueSetParameter(q, kAudioQueueParam_VolumeRampTime, .infinity) == kAudio_ParamError)
        #expect(AudioQueueSetParameter(q, kAudioQueueParam_VolumeRampTime, -1) == noErr)
        var read: Float = 1
        #expect(AudioQueueGetParameter(q, kAudioQueueParam_VolumeRampTime, &read) == noErr)
        #expect(read == 0)
        #expect(AudioQueueDispose(q, true) == noErr)
    }

    /// Seconds `body` takes.
    func seconds(_ body: () -> Void) -> Double {
        let start = Date()
        body()
        return Date().timeIntervalSince(start)
    }

    @Test func flushOnAStoppedOrPausedQueueHolding3SecondsReturnsAtOnce() throws {
        let driver = ManualDriver(periodFrames: 256)
        let (q, buffers) = try outputQueue(frames: 48000, count: 3, device: driver)
        for b in buffers { #expect(AudioQueueEnqueueBuffer(q, b, 0, nil) == noErr) }
        var status: OSStatus = -1
        #expect(seconds { status = AudioQueueFlush(q) } < 1, "stopped")
        #expect(status == noErr)
        #expect(AudioQueueStart(q, nil) == noErr)
        driver.run(cycles: 4)
        #expect(AudioQueuePause(q) == noErr)
        #expect(seconds { status = AudioQueueFlush(q) } < 1, "paused")
        #expect(status == noErr)
        // Flushed audio still plays, from where the pause left it to its last frame.
        driver.startRecordingPlayback()
        #expect(AudioQueueStart(q, nil) == noErr)
        driver.run(frames: 3 * 48000)
        #expect(AudioQueueDispose(q, true) == noErr)
        let played = driver.recordedPlayback(port: 0).samples
        let expected = (4 * 256..<3 * 48000).map { Float(signal($0 % 48000, 0)) / 32768 }
        #expect(firstMismatch(Array(played.prefix(expected.count)), expected) == nil)
    }

    @Test func flushOnARunningQueueWhoseCallbackReenqueuesReturnsAtOnce() throws {
        let driver = ManualDriver(periodFrames: 256)
        let (q, buffers) = try outputQueue(frames: 48000, count: 3, callback: { _, queue, buffer in
            AudioQueueEnqueueBuffer(queue, buffer, 0, nil)
        }, device: driver)
        for b in buffers { #expect(AudioQueueEnqueueBuffer(q, b, 0, nil) == noErr) }
        #expect(AudioQueueStart(q, nil) == noErr)
        // More than the decode ring holds is always enqueued; the driver keeps cycling, as a server would.
        let stop = Atomic(false)
        let cycling = Thread { while !stop.load(ordering: .relaxed) { driver.run(cycles: 1) } }
        cycling.start()
        var status: OSStatus = -1
        #expect(seconds { status = AudioQueueFlush(q) } < 1)
        #expect(status == noErr)
        stop.store(true, ordering: .relaxed)
        usleep(20_000)
        #expect(AudioQueueDispose(q, true) == noErr)
    }

    @Test func aResampledBufferFlushedIsPlayedToItsLastFrameWithoutAStop() throws {
        // A 44.1 kHz queue on a 48 kHz device: the resampler holds a buffer's last frames
        // until more input comes; Flush pushes them out.
        let driver = ManualDriver(periodFrames: 256)
        let (q, buffers) = try outputQueue(frames: 4410, count: 1, rate: 44100, device: driver)
        #expect(AudioQueueEnqueueBuffer(q, buffers[0], 0, nil) == noErr)
        #expect(AudioQueueFlush(q) == noErr)
        driver.startRecordingPlayback()
        #expect(AudioQueueStart(q, nil) == noErr)
        driver.run(frames: 48000)
        let played = driver.recordedPlayback(port: 0).samples
        let last = try #require(played.lastIndex { abs($0) > 1e-3 })
        let first = try #require(played.firstIndex { abs($0) > 1e-3 })
        // 4410 frames at 44.1 kHz are 4800 at 48 kHz.
        #expect(abs((last - first + 1) - 4800) < 10, "\(first)...\(last)")
        #expect(AudioQueueDispose(q, true) == noErr)
    }

    @Test func disposeNotImmediateOnAPlayingQueuePlaysOutThenDisposes() throws {
        let driver = ManualDriver(periodFrames: 256)
        let (q, buffers) = try outputQueue(frames: 4800, count: 3, device: driver)
        for b in buffers { #expect(AudioQueueEnqueueBuffer(q, b, 0, nil) == noErr) }
        driver.startRecordingPlayback()
        #expect(AudioQueueStart(q, nil) == noErr)
        driver.run(cycles: 4)
        #expect(AudioQueueDispose(q, false) == noErr)
        var running: UInt32 = 0
        var size = UInt32(4)
        // Cycles until the queue thread, which disposes of the queue once it has played out,
        // has done so: bounded by the clock, not by a cycle count a loaded machine outruns.
        let deadline = Date().addingTimeInterval(10)
        while AudioQueueGetProperty(q, kAudioQueueProperty_IsRunning, &running, &size) == noErr && Date() < deadline {
            driver.run(cycles: 1)
            usleep(1000)
        }
        #expect(AudioQueueGetProperty(q, kAudioQueueProperty_IsRunning, &running, &size) == kAudio_ParamError,
                "the queue is disposed of once played out")
        let played = driver.recordedPlayback(port: 0).samples
        let expected = (0..<14400).map { Float(signal($0 % 4800, 0)) / 32768 }
        #expect(firstMismatch(Array(played.prefix(14400)), expected) == nil, "every frame enqueued was played")
    }

    @Test func freeBufferDuringItsCallbackFromAnotherThreadIsBufferInQueue() throws {
        let driver = ManualDriver(periodFrames: 256)
        let gate = CallbackGate()
        var format = lpcm()
        var queue: AudioQueueRef?
        #expect(AudioQueueNewInput(&format, { user, _, buffer, _, _, _ in
            let gate = Unmanaged<CallbackGate>.fromOpaque(user!).takeUnretainedValue()
            gate.enter(buffer)
            // The buffer must still be there: read all of it.
            let bytes = UnsafeRawBufferPointer(start: buffer.pointee.mAudioData, count: Int(buffer.pointee.mAudioDataBytesCapacity))
            _ = bytes.reduce(0) { $0 &+ Int($1) }
        }, Unmanaged.passUnretained(gate).toOpaque(), nil, nil, 0, &queue, device: driver) == noErr)
        let q = try #require(queue)
        var buffer: AudioQueueBufferRef?
        #expect(AudioQueueAllocateBuffer(q, 1024, &buffer) == noErr)
        let b = try #require(buffer)
        #expect(AudioQueueEnqueueBuffer(q, b, 0, nil) == noErr)
        #expect(AudioQueueStart(q, nil) == noErr)
        driver.run(cycles: 2)
        #expect(gate.waitForEntry())
        #expect(AudioQueueFreeBuffer(q, b) == kAudioQueueErr_BufferInQueue)
        gate.release()
        #expect(waitUntil { gate.returned.load(ordering: .acquiring) })
        #expect(waitUntil { AudioQueueFreeBuffer(q, b) == noErr }, "once the callback returned, the buffer is free")
        #expect(AudioQueueDispose(q, true) == noErr)
    }

    /// Apple's codes tell the two mistakes apart: a buffer enqueued again before the queue has
    /// returned it is kAudioQueueErr_BufferEnqueuedTwice (-66666); freeing an enqueued buffer is
    /// kAudioQueueErr_BufferInQueue (-66679).
    @Test(arguments: [true, false]) func enqueueingABufferTwiceIsBufferEnqueuedTwice(withParameters: Bool) throws {
        let device = ManualDriver()
        let (q, buffers) = try outputQueue(device: device)
        let b = buffers[0]
        #expect(AudioQueueEnqueueBuffer(q, b, 0, nil) == noErr)
        let again = withParameters
            ? AudioQueueEnqueueBufferWithParameters(q, b, 0, nil, 0, 0, 0, nil, nil, nil)
            : AudioQueueEnqueueBuffer(q, b, 0, nil)
        #expect(again == kAudioQueueErr_BufferEnqueuedTwice)
        #expect(AudioQueueFreeBuffer(q, b) == kAudioQueueErr_BufferInQueue)
        #expect(AudioQueueDispose(q, true) == noErr)
    }

    @Test(arguments: [true, false]) func enqueueChecksTheBufferBeforeReadingIt(withParameters: Bool) throws {
        let device = ManualDriver()
        let (q, _) = try outputQueue(device: device)
        // Memory that may not be read: a read of mAudioDataByteSize would be a SIGSEGV.
        let page = mmap(nil, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        let pointer = try #require(page.flatMap { $0 == MAP_FAILED ? nil : $0 })
        defer { munmap(pointer, 4096) }
        let foreign = pointer.assumingMemoryBound(to: AudioQueueBuffer.self)
        let status = withParameters
            ? AudioQueueEnqueueBufferWithParameters(q, foreign, 0, nil, 0, 0, 0, nil, nil, nil)
            : AudioQueueEnqueueBuffer(q, foreign, 0, nil)
        #expect(status == kAudioQueueErr_InvalidBuffer)
        #expect(AudioQueueDispose(q, true) == noErr)
    }

    @Test(arguments: [(true, true), (true, false), (false, true), (false, false)])
    func inputBuffersComeBackOnceWhenTheFirstCallbackResetsDuringAStop(mainStops: Bool, callbackStops: Bool) throws {
        let device = ManualDriver(periodFrames: 256)
        let counter = CallbackCounter(stops: callbackStops)
        var format = lpcm()
        var queue: AudioQueueRef?
        #expect(AudioQueueNewInput(&format, { user, queue, buffer, _, _, _ in
            let counter = Unmanaged<CallbackCounter>.fromOpaque(user!).takeUnretainedValue()
            let first = counter.count(buffer)
            if first { _ = counter.stops ? AudioQueueStop(queue, true) : AudioQueueReset(queue) }
        }, Unmanaged.passUnretained(counter).toOpaque(), nil, nil, 0, &queue, device: device) == noErr)
        let q = try #require(queue)
        for _ in 0..<3 {
            var buffer: AudioQueueBufferRef?
            #expect(AudioQueueAllocateBuffer(q, 4096, &buffer) == noErr)
            #expect(AudioQueueEnqueueBuffer(q, try #require(buffer), 0, nil) == noErr)
        }
        #expect(AudioQueueStart(q, nil) == noErr)
        #expect((mainStops ? AudioQueueStop(q, true) : AudioQueueReset(q)) == noErr)
        usleep(20_000)
        let seen = counter.seen.withLock { $0 }
        #expect(seen.count == 3, "each of the 3 buffers comes back once: \(seen)")
        #expect(Set(seen).count == seen.count)
        #expect(AudioQueueDispose(q, true) == noErr)
    }

    /// AudioQueueRemovePropertyListener takes away the listener with that function and user data
    /// only: another user data's listener on the same property is still called; a listener that
    /// was never added is not an error (the call returns noErr and changes nothing).
    @Test func removePropertyListenerRemovesThatListenerOnly() throws {
        let driver = ManualDriver(periodFrames: 256)
        let (q, buffers) = try outputQueue(frames: 4800, count: 1, device: driver)
        let kept = ListenerLog(), removed = ListenerLog()
        let listener: AudioQueuePropertyListenerProc = { user, _, id in
            Unmanaged<ListenerLog>.fromOpaque(user!).takeUnretainedValue().calls.withLock { $0.append(fourCharacterCode(id)) }
        }
        let keptUser = Unmanaged.passUnretained(kept).toOpaque(), removedUser = Unmanaged.passUnretained(removed).toOpaque()
        #expect(AudioQueueAddPropertyListener(q, kAudioQueueProperty_IsRunning, listener, keptUser) == noErr)
        #expect(AudioQueueAddPropertyListener(q, kAudioQueueProperty_IsRunning, listener, removedUser) == noErr)
        #expect(AudioQueueRemovePropertyListener(q, kAudioQueueProperty_IsRunning, listener, removedUser) == noErr)
        #expect(AudioQueueRemovePropertyListener(q, kAudioQueueProperty_IsRunning, listener, removedUser) == noErr, "not there: nothing to do")
        #expect(AudioQueueRemovePropertyListener(q, kAudioQueueProperty_CurrentLevelMeter, listener, keptUser) == noErr)
        #expect(AudioQueueEnqueueBuffer(q, buffers[0], 0, nil) == noErr)
        #expect(AudioQueueStart(q, nil) == noErr)
        driver.run(cycles: 2)
        #expect(waitUntil { kept.calls.withLock { !$0.isEmpty } }, "the listener left is called")
        usleep(20_000)
        #expect(removed.calls.withLock { $0 }.isEmpty, "the one removed is not")
        #expect(AudioQueueDispose(q, true) == noErr)
    }

    /// kAudioQueueProperty_DecodeBufferSizeFrames on an output queue: read back as set, within
    /// 64...4194304 frames (kAudioQueueErr_InvalidPropertyValue outside, the value kept), and
    /// only while the queue is stopped and holds nothing (kAudioQueueErr_InvalidRunState).
    @Test func decodeBufferSizeFramesIsSetAndReadBackOnAnOutputQueue() throws {
        let driver = ManualDriver(periodFrames: 256)
        let (q, buffers) = try outputQueue(frames: 4800, count: 1, device: driver)
        var frames: UInt32 = 0
        var size = UInt32(4)
        #expect(AudioQueueGetPropertySize(q, kAudioQueueProperty_DecodeBufferSizeFrames, &size) == noErr && size == 4)
        #expect(AudioQueueGetProperty(q, kAudioQueueProperty_DecodeBufferSizeFrames, &frames, &size) == noErr)
        #expect(frames >= 64)
        var wanted: UInt32 = 8192
        #expect(AudioQueueSetProperty(q, kAudioQueueProperty_DecodeBufferSizeFrames, &wanted, 4) == noErr)
        #expect(AudioQueueGetProperty(q, kAudioQueueProperty_DecodeBufferSizeFrames, &frames, &size) == noErr && frames == 8192)
        for bad: UInt32 in [0, 63, 1 << 23] {
            var value = bad
            #expect(AudioQueueSetProperty(q, kAudioQueueProperty_DecodeBufferSizeFrames, &value, 4) == kAudioQueueErr_InvalidPropertyValue)
        }
        #expect(AudioQueueGetProperty(q, kAudioQueueProperty_DecodeBufferSizeFrames, &frames, &size) == noErr && frames == 8192)
        #expect(AudioQueueEnqueueBuffer(q, buffers[0], 0, nil) == noErr)
        #expect(AudioQueueStart(q, nil) == noErr)
        driver.run(cycles: 1)
        wanted = 4096
        #expect(AudioQueueSetProperty(q, kAudioQueueProperty_DecodeBufferSizeFrames, &wanted, 4) == kAudioQueueErr_InvalidRunState)
        #expect(AudioQueueDispose(q, true) == noErr)
    }

    @Test func aListenerThatDisposesOfTheQueueSilencesTheOthers() throws {
        let driver = ManualDriver(periodFrames: 256)
        let (q, buffers) = try outputQueue(frames: 4800, count: 1, device: driver)
        let heard = ListenerLog()
        let user = Unmanaged.passUnretained(heard).toOpaque()
        #expect(AudioQueueAddPropertyListener(q, kAudioQueueProperty_IsRunning, { user, queue, _ in
            Unmanaged<ListenerLog>.fromOpaque(user!).takeUnretainedValue().calls.withLock { $0.append("dispose") }
            AudioQueueDispose(queue, true)
        }, user) == noErr)
        #expect(AudioQueueAddPropertyListener(q, kAudioQueueProperty_IsRunning, { user, _, _ in
            Unmanaged<ListenerLog>.fromOpaque(user!).takeUnretainedValue().calls.withLock { $0.append("other") }
        }, user) == noErr)
        #expect(AudioQueueEnqueueBuffer(q, buffers[0], 0, nil) == noErr)
        #expect(AudioQueueStart(q, nil) == noErr)
        driver.run(cycles: 2)
        #expect(waitUntil { heard.calls.withLock { !$0.isEmpty } })
        driver.run(cycles: 2)
        usleep(50_000)
        #expect(heard.calls.withLock { $0 } == ["dispose"])
        #expect(AudioQueueStart(q, nil) == kAudio_ParamError, "disposed of")
    }
}

/// Lets a test hold a callback while it calls the API from another thread.
final class CallbackGate: @unchecked Sendable {
    private let entered = Semaphore()
    private let open = Atomic(false)
    let returned = Atomic(false)

    func enter(_ buffer: AudioQueueBufferRef) {
        entered.post()
        while !open.load(ordering: .acquiring) { usleep(1000) }
        returned.store(true, ordering: .releasing)
    }

    func waitForEntry() -> Bool { entered.wait(timeout: 5) }
    func release() { open.store(true, ordering: .releasing) }
}

/// Counts input callbacks per buffer; the first one resets or stops the queue.
final class CallbackCounter: @unchecked Sendable {
    let stops: Bool
    let seen = Locked<[UInt]>([])
    init(stops: Bool) { self.stops = stops }

    /// Records `buffer`; true for the first callback.
    func count(_ buffer: AudioQueueBufferRef) -> Bool {
        seen.withLock {
            $0.append(UInt(bitPattern: buffer))
            return $0.count == 1
        }
    }
}

final class ListenerLog: @unchecked Sendable {
    let calls = Locked<[String]>([])
}
