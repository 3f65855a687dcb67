import Testing
import Foundation
import Synchronization
import AudioToolbox
import QueueCore
import JackTestSupport

/// Playback queues through the public API on a ManualDriver: deterministic, no server.
@Suite struct AudioQueueOutputTests {
    struct Setup {
        let driver: ManualDriver
        let context: PlaybackContext
        let queue: AudioQueueRef
        let buffers: [AudioQueueBufferRef]
    }

    /// Creates a queue for `context` in the guides' way: allocate, prime by calling the callback, listen to IsRunning.
    func makeQueue(_ driver: ManualDriver, _ context: PlaybackContext, format: AudioStreamBasicDescription? = nil,
                   bufferCount: Int = 3) throws -> Setup {
        var format = format ?? lpcm(channels: UInt32(context.channels))
        var queue: AudioQueueRef?
        let user = Unmanaged.passUnretained(context).toOpaque()
        #expect(AudioQueueNewOutput(&format, handleOutputBuffer, user, nil, nil, 0, &queue, device: driver) == noErr)
        let q = try #require(queue)
        context.queue = q
        #expect(AudioQueueAddPropertyListener(q, kAudioQueueProperty_IsRunning, isRunningListener, user) == noErr)
        var buffers: [AudioQueueBufferRef] = []
        for _ in 0..<bufferCount {
            var buffer: AudioQueueBufferRef?
            #expect(AudioQueueAllocateBuffer(q, UInt32(context.framesPerBuffer * context.channels * 2), &buffer) == noErr)
            let b = try #require(buffer)
            buffers.append(b)
            handleOutputBuffer(user, q, b)
        }
        return Setup(driver: driver, context: context, queue: q, buffers: buffers)
    }

    /// Runs cycles until the queue stopped by itself (or `limit` cycles).
    func runUntilStopped(_ setup: Setup, limit: Int = 5000) {
        var cycles = 0
        while cycles < limit {
            var running: UInt32 = 1
            var size = UInt32(4)
            AudioQueueGetProperty(setup.queue, kAudioQueueProperty_IsRunning, &running, &size)
            if running == 0 && !setup.context.isRunningFlag.withLock({ $0 }) && setup.context.runningChanges.withLock({ $0.count >= 2 }) { break }
            setup.driver.run(cycles: 1)
            cycles += 1
        }
    }

    @Test func everyFrameEnqueuedBeforeStopFalseIsPlayedInOrderThenIsRunningGoesTo0() throws {
        let driver = ManualDriver(periodFrames: 256)
        let context = PlaybackContext(frames: 48000 * 3 + 123, channels: 2, framesPerBuffer: 4410)
        let setup = try makeQueue(driver, context)
        driver.startRecordingPlayback()
        #expect(AudioQueueStart(setup.queue, nil) == noErr)
        runUntilStopped(setup)
        #expect(waitUntil { context.runningChanges.withLock { $0 } == [1, 0] })
        for channel in 0..<2 {
            let played = driver.recordedPlayback(port: channel).samples
            let first = try #require(played.firstIndex { $0 != 0 })
            #expect(first == 0, "the first cycle after Start plays the first frame")
            let expected = context.expected(channel: channel)
            #expect(firstMismatch(Array(played[first..<min(played.count, first + expected.count)]), expected) == nil, "channel \(channel)")
            #expect(played[(first + expected.count)...].allSatisfy { $0 == 0 }, "nothing after the last frame")
        }
        #expect(context.enqueueErrors.withLock { $0 }.isEmpty)
        #expect(AudioQueueDispose(setup.queue, true) == noErr)
    }

    @Test func cyclesThatMayWaitWaitForASlowCallbackAfterAFastStretch() throws {
        // As in JACK's freewheel, ManualDriver cycles may wait for the queue thread. For two
        // seconds the callback keeps up (the queue's wake-ups pile up unused), then it takes
        // 30 ms a buffer: each dry cycle must wait for it, however many wake-ups are pending.
        let driver = ManualDriver(periodFrames: 256)
        let context = PlaybackContext(frames: 48000 * 3, channels: 2, framesPerBuffer: 512)
        var format = lpcm()
        var queue: AudioQueueRef?
        let user = Unmanaged.passUnretained(context).toOpaque()
        #expect(AudioQueueNewOutput(&format, { user, queue, buffer in
            let context = Unmanaged<PlaybackContext>.fromOpaque(user!).takeUnretainedValue()
            if context.position.withLock({ $0 }) > 2 * 48000 { usleep(30_000) }
            handleOutputBuffer(user, queue, buffer)
        }, user, nil, nil, 0, &queue, device: driver) == noErr)
        let q = try #require(queue)
        context.queue = q
        #expect(AudioQueueAddPropertyListener(q, kAudioQueueProperty_IsRunning, isRunningListener, user) == noErr)
        for _ in 0..<3 {
            var buffer: AudioQueueBufferRef?
            #expect(AudioQueueAllocateBuffer(q, UInt32(512 * 4), &buffer) == noErr)
            handleOutputBuffer(user, q, try #require(buffer))
        }
        driver.startRecordingPlayback()
        #expect(AudioQueueStart(q, nil) == noErr)
        runUntilStopped(Setup(driver: driver, context: context, queue: q, buffers: []))
        var lost: UInt64 = 1
        var size = UInt32(MemoryLayout<UInt64>.size)
        #expect(AudioQueueGetProperty(q, kAudioQueueProperty_LostFrames, &lost, &size) == noErr)
        #expect(lost == 0, "cycles played silence instead of waiting")
        let played = driver.recordedPlayback(port: 0).samples
        let expected = context.expected(channel: 0)
        #expect(firstMismatch(Array(played.prefix(expected.count)), expected) == nil)
        #expect(AudioQueueDispose(q, true) == noErr)
    }

    @Test func stopImmediateStopsNowAndReturnsQueuedBuffers() throws {
        let driver = ManualDriver(periodFrames: 256)
        let context = PlaybackContext(frames: 48000 * 10, channels: 2, framesPerBuffer: 48000)
        let setup = try makeQueue(driver, context)
        #expect(AudioQueueStart(setup.queue, nil) == noErr)
        driver.run(cycles: 4)
        #expect(waitUntil { context.runningChanges.withLock { $0 } == [1] }, "the queue is running")
        context.isRunningFlag.withLock { $0 = false }  // the callback no longer refills
        let before = context.callbacks.withLock { $0 }
        driver.startRecordingPlayback()
        #expect(AudioQueueStop(setup.queue, true) == noErr)
        // Every buffer still queued came back through the callback, once.
        #expect(context.callbacks.withLock { $0 } >= before)
        #expect(waitUntil { context.runningChanges.withLock { $0 } == [1, 0] })
        driver.run(cycles: 10)
        #expect(driver.recordedPlayback(port: 0).samples.allSatisfy { $0 == 0 }, "nothing plays after Stop(true)")
        // All buffers are the application's again: each can be freed.
        for buffer in setup.buffers { #expect(AudioQueueFreeBuffer(setup.queue, buffer) == noErr) }
        #expect(AudioQueueDispose(setup.queue, true) == noErr)
    }

    @Test func pauseKeepsThePositionAndStartResumesWithNothingLost() throws {
        let driver = ManualDriver(periodFrames: 128)
        let context = PlaybackContext(frames: 24000, channels: 1, framesPerBuffer: 2000)
        let setup = try makeQueue(driver, context)
        driver.startRecordingPlayback()
        #expect(AudioQueueStart(setup.queue, nil) == noErr)
        driver.run(cycles: 37)
        #expect(AudioQueuePause(setup.queue) == noErr)
        var paused = AudioTimeStamp()
        #expect(AudioQueueGetCurrentTime(setup.queue, nil, &paused, nil) == noErr)
        driver.run(cycles: 50)
        var stillPaused = AudioTimeStamp()
        #expect(AudioQueueGetCurrentTime(setup.queue, nil, &stillPaused, nil) == noErr)
        #expect(paused.mSampleTime == stillPaused.mSampleTime, "queue time does not advance while paused")
        #expect(paused.mSampleTime == Double(37 * 128))
        #expect(AudioQueueStart(setup.queue, nil) == noErr)
        runUntilStopped(setup)
        let played = driver.recordedPlayback(port: 0).samples
        // The pause is silence in the middle; without it the output is the source exactly.
        let silentRun = played[(37 * 128)..<(87 * 128)]
        #expect(silentRun.allSatisfy { $0 == 0 })
        let audible = Array(played[0..<(37 * 128)]) + Array(played[(87 * 128)...].prefix(context.frameCount - 37 * 128))
        #expect(firstMismatch(audible, context.expected(channel: 0)) == nil)
        #expect(AudioQueueDispose(setup.queue, true) == noErr)
    }

    @Test func pauseWhilePlayingOutAfterStopFalsePausesAndStartFinishesThePlayOut() throws {
        let driver = ManualDriver(periodFrames: 128)
        let context = PlaybackContext(frames: 6000, channels: 1, framesPerBuffer: 2000)
        let setup = try makeQueue(driver, context)  // all 6000 frames are enqueued: the callback stops
        driver.startRecordingPlayback()
        #expect(AudioQueueStart(setup.queue, nil) == noErr)
        driver.run(cycles: 10)
        // The listener reads IsRunning when it is called, as on Apple platforms: let it see
        // the queue running before the play-out, which the manual clock runs in no time.
        #expect(waitUntil { context.runningChanges.withLock { $0 } == [1] }, "the queue is running")
        #expect(AudioQueueStop(setup.queue, false) == noErr)  // again: it is playing out already
        #expect(AudioQueuePause(setup.queue) == noErr)
        var paused = AudioTimeStamp()
        #expect(AudioQueueGetCurrentTime(setup.queue, nil, &paused, nil) == noErr)
        driver.run(cycles: 20)
        var stillPaused = AudioTimeStamp()
        #expect(AudioQueueGetCurrentTime(setup.queue, nil, &stillPaused, nil) == noErr)
        #expect(paused.mSampleTime == Double(10 * 128) && stillPaused.mSampleTime == paused.mSampleTime,
                "a queue playing out pauses")
        #expect(AudioQueueStart(setup.queue, nil) == noErr)
        runUntilStopped(setup)
        #expect(waitUntil { context.runningChanges.withLock { $0 } == [1, 0] },
                "IsRunning listener saw \(context.runningChanges.withLock { $0 })")
        let played = driver.recordedPlayback(port: 0).samples
        #expect(played[(10 * 128)..<(30 * 128)].allSatisfy { $0 == 0 })
        let audible = Array(played[0..<(10 * 128)]) + Array(played[(30 * 128)...].prefix(6000 - 10 * 128))
        #expect(firstMismatch(audible, context.expected(channel: 0)) == nil)
        #expect(AudioQueueDispose(setup.queue, true) == noErr)
    }

    @Test func resetReturnsEveryQueuedBufferOnceAndRefusesEnqueueMeanwhile() throws {
        let driver = ManualDriver(periodFrames: 256)
        let context = PlaybackContext(frames: 480000, channels: 2, framesPerBuffer: 48000)
        let setup = try makeQueue(driver, context, bufferCount: 4)
        #expect(AudioQueuePrime(setup.queue, 1024, nil) == noErr)
        let before = context.callbacks.withLock { $0 }
        #expect(AudioQueueReset(setup.queue) == noErr)
        // The callback re-enqueued each returned buffer; each attempt was refused.
        let returned = context.callbacks.withLock { $0 } - before
        #expect(returned >= 1)
        #expect(context.enqueueErrors.withLock { $0 } == Array(repeating: kAudioQueueErr_EnqueueDuringReset, count: returned))
        #expect(returned + before - 4 <= 4)
        // Nothing is queued now: every buffer can be freed.
        for buffer in setup.buffers { #expect(AudioQueueFreeBuffer(setup.queue, buffer) == noErr) }
        #expect(AudioQueueDispose(setup.queue, true) == noErr)
    }

    @Test func afterDisposeNoCallbackOrListenerRuns() throws {
        let driver = ManualDriver(periodFrames: 256)
        let context = PlaybackContext(frames: 480000, channels: 2, framesPerBuffer: 2048)
        let setup = try makeQueue(driver, context)
        #expect(AudioQueueStart(setup.queue, nil) == noErr)
        driver.run(cycles: 20)
        #expect(AudioQueueDispose(setup.queue, true) == noErr)
        let callbacks = context.callbacks.withLock { $0 }
        let listeners = context.runningChanges.withLock { $0.count }
        driver.run(cycles: 50)
        usleep(50_000)
        #expect(context.callbacks.withLock { $0 } == callbacks)
        #expect(context.runningChanges.withLock { $0.count } == listeners)
        // The reference is dead: calls get a result code.
        #expect(AudioQueueStart(setup.queue, nil) == kAudio_ParamError)
        #expect(AudioQueueDispose(setup.queue, true) == kAudio_ParamError)
    }

    @Test func primeDecodesBeforeStartSoTheFirstCycleIsNotSilent() throws {
        let driver = ManualDriver(periodFrames: 256)
        driver.allowsWaiting = false  // as on a realtime server: a cycle never waits
        let context = PlaybackContext(frames: 9600, channels: 2, framesPerBuffer: 4800)
        let setup = try makeQueue(driver, context, bufferCount: 2)
        var prepared: UInt32 = 0
        #expect(AudioQueuePrime(setup.queue, 4096, &prepared) == noErr)
        #expect(prepared >= 4096)
        driver.startRecordingPlayback()
        #expect(AudioQueueStart(setup.queue, nil) == noErr)
        driver.run(cycles: 1)
        let first = driver.recordedPlayback(port: 0).samples
        #expect(firstMismatch(first, Array(context.expected(channel: 0).prefix(256))) == nil)
        #expect(AudioQueueDispose(setup.queue, true) == noErr)
    }

    @Test func misuseReturnsResultCodes() throws {
        let driver = ManualDriver()
        var format = lpcm()
        var a: AudioQueueRef?
        var b: AudioQueueRef?
        #expect(AudioQueueNewOutput(&format, handleOutputBuffer, nil, nil, nil, 0, &a, device: driver) == noErr)
        #expect(AudioQueueNewOutput(&format, handleOutputBuffer, nil, nil, nil, 0, &b, device: driver) == noErr)
        let qa = try #require(a), qb = try #require(b)
        var bufferA: AudioQueueBufferRef?
        var bufferB: AudioQueueBufferRef?
        #expect(AudioQueueAllocateBuffer(qa, 4096, &bufferA) == noErr)
        #expect(AudioQueueAllocateBuffer(qb, 4096, &bufferB) == noErr)
        let ba = try #require(bufferA), bb = try #require(bufferB)
        #expect(ba.pointee.mAudioDataBytesCapacity == 4096)
        #expect(ba.pointee.mAudioDataByteSize == 0)
        // Another queue's buffer; an empty buffer; freeing an enqueued buffer.
        bb.pointee.mAudioDataByteSize = 4096
        #expect(AudioQueueEnqueueBuffer(qa, bb, 0, nil) == kAudioQueueErr_InvalidBuffer)
        #expect(AudioQueueEnqueueBuffer(qa, ba, 0, nil) == kAudioQueueErr_BufferEmpty)
        ba.pointee.mAudioDataByteSize = 4096
        #expect(AudioQueueEnqueueBuffer(qa, ba, 0, nil) == noErr)
        #expect(AudioQueueFreeBuffer(qa, ba) == kAudioQueueErr_BufferInQueue)
        // Properties and parameters.
        var value: UInt32 = 0
        var size = UInt32(4)
        #expect(AudioQueueGetProperty(qa, 0x7A7A7A7A, &value, &size) == kAudioQueueErr_InvalidProperty)
        var small = UInt32(2)
        #expect(AudioQueueGetProperty(qa, kAudioQueueProperty_IsRunning, &value, &small) == kAudioQueueErr_InvalidPropertySize)
        var rate: Float64 = 0
        var rateSize = UInt32(4)
        #expect(AudioQueueGetProperty(qa, kAudioQueueDeviceProperty_SampleRate, &rate, &rateSize) == kAudioQueueErr_InvalidPropertySize)
        #expect(AudioQueueSetProperty(qa, kAudioQueueProperty_EnableLevelMetering, &value, 2) == kAudioQueueErr_InvalidPropertySize)
        #expect(AudioQueueSetProperty(qa, kAudioQueueProperty_IsRunning, &value, 4) == kAudioQueueErr_InvalidProperty)
        #expect(AudioQueueSetParameter(qa, 99, 1) == kAudioQueueErr_InvalidParameter)
        var parameter: Float32 = 0
        #expect(AudioQueueGetParameter(qa, 99, &parameter) == kAudioQueueErr_InvalidParameter)
        // Calls only recording queues take.
        var seconds: Float64 = 1
        #expect(AudioQueueSetProperty(qa, kAudioQueueProperty_CaptureBufferSeconds, &seconds, 8) == kAudioQueueErr_InvalidQueueType)
        // A reference that is not a live queue (C callers' NULLs are tested by the C example).
        #expect(AudioQueueStart(OpaquePointer(bitPattern: 0x1000)!, nil) == kAudio_ParamError)
        #expect(AudioQueueDispose(qa, true) == noErr)
        #expect(AudioQueueDispose(qb, true) == noErr)
    }

    @Test func badFormatsAreRefusedWithFmt() {
        let device = ManualDriver()
        var queue: AudioQueueRef?
        var zeroChannels = lpcm(); zeroChannels.mChannelsPerFrame = 0
        let zeroRate = lpcm(rate: 0)
        var bitsDoNotFit = lpcm(); bitsDoNotFit.mBitsPerChannel = 24
        // Non-interleaved is taken (a jaq extension), but its per-channel sizes must agree.
        var nonInterleaved = lpcm(); nonInterleaved.mFormatFlags |= kAudioFormatFlagIsNonInterleaved; nonInterleaved.mBytesPerFrame = 2
        var unknown = lpcm(); unknown.mFormatID = 0x7A7A_7A7A  // 'zzzz': no such format (AAC and the others: codecs.md)
        let tooMany = lpcm(channels: 65)
        for var format in [zeroChannels, zeroRate, bitsDoNotFit, nonInterleaved, unknown, tooMany] {
            #expect(AudioQueueNewOutput(&format, handleOutputBuffer, nil, nil, nil, 0, &queue, device: device) == kAudioFormatUnsupportedDataFormatError)
            #expect(queue == nil)
        }
    }

    /// Every LPCM layout, µ-law and A-law decode to JACK floats exactly as specified.
    @Test(arguments: [
        ("s8", 8, false, false), ("s16le", 16, false, false), ("s16be", 16, false, true), ("s24le", 24, false, false),
        ("s24be", 24, false, true), ("s32le", 32, false, false), ("s32be", 32, false, true),
        ("f32le", 32, true, false), ("f32be", 32, true, true), ("f64le", 64, true, false), ("f64be", 64, true, true),
    ])
    func formatsPlayExactly(name: String, bits: Int, float: Bool, bigEndian: Bool) throws {
        let driver = ManualDriver(periodFrames: 256)
        var format = lpcm(channels: 3, bits: UInt32(bits), float: float, bigEndian: bigEndian)
        var queue: AudioQueueRef?
        #expect(AudioQueueNewOutput(&format, { _, _, _ in }, nil, nil, nil, 0, &queue, device: driver) == noErr)
        let q = try #require(queue)
        let frames = 1000
        let bytesPerSample = bits / 8
        var buffer: AudioQueueBufferRef?
        #expect(AudioQueueAllocateBuffer(q, UInt32(frames * 3 * bytesPerSample), &buffer) == noErr)
        let b = try #require(buffer)
        var expected: [[Float]] = [[], [], []]
        let raw = b.pointee.mAudioData
        for f in 0..<frames {
            for c in 0..<3 {
                let p = raw + (f * 3 + c) * bytesPerSample
                let x = Double(signal(f, c)) / 32768 * 0.999
                if float {
                    if bits == 32 {
                        let v = Float(x)
                        p.storeBytes(of: bigEndian ? v.bitPattern.byteSwapped : v.bitPattern, as: UInt32.self)
                        expected[c].append(v)
                    } else {
                        p.storeBytes(of: bigEndian ? x.bitPattern.byteSwapped : x.bitPattern, as: UInt64.self)
                        expected[c].append(Float(x))
                    }
                } else {
                    let full = Double(1 << (bits - 1))
                    let v = Int64((x * full).rounded())
                    for i in 0..<bytesPerSample {
                        let byte = UInt8(truncatingIfNeeded: v >> (8 * i))
                        p.storeBytes(of: byte, toByteOffset: bigEndian ? bytesPerSample - 1 - i : i, as: UInt8.self)
                    }
                    expected[c].append(bits <= 24 ? Float(v) / Float(full) : Float(Double(v) / full))
                }
            }
        }
        b.pointee.mAudioDataByteSize = UInt32(frames * 3 * bytesPerSample)
        #expect(AudioQueueEnqueueBuffer(q, b, 0, nil) == noErr)
        // Route the three channels to three distinct system ports of a 4-port driver... the
        // driver has 2: channel 3 wraps onto port 1, so check channels 1 and 2 there.
        driver.startRecordingPlayback()
        #expect(AudioQueueStart(q, nil) == noErr)
        driver.run(cycles: 5)
        let left = Array(driver.recordedPlayback(port: 0).samples.prefix(frames))
        let right = Array(driver.recordedPlayback(port: 1).samples.prefix(frames))
        #expect(firstMismatch(right, expected[1]) == nil, "\(name)")
        let mixed = zip(expected[0], expected[2]).map { $0 + $1 }
        #expect(firstMismatch(left, mixed) == nil, "\(name): channel 1 and the wrapped channel 3")
        #expect(AudioQueueDispose(q, true) == noErr)
    }

    @Test func volumePanAndRampAreExact() throws {
        let driver = ManualDriver(periodFrames: 100)
        var format = lpcm(channels: 2, float: true)
        format.mBitsPerChannel = 32; format.mBytesPerFrame = 8; format.mBytesPerPacket = 8
        var queue: AudioQueueRef?
        #expect(AudioQueueNewOutput(&format, { _, _, _ in }, nil, nil, nil, 0, &queue, device: driver) == noErr)
        let q = try #require(queue)
        var buffer: AudioQueueBufferRef?
        #expect(AudioQueueAllocateBuffer(q, 8 * 1000, &buffer) == noErr)
        let b = try #require(buffer)
        let samples = b.pointee.mAudioData.assumingMemoryBound(to: Float.self)
        for i in 0..<2000 { samples[i] = 0.5 }
        b.pointee.mAudioDataByteSize = 8000
        #expect(AudioQueueSetParameter(q, kAudioQueueParam_Volume, 0.5) == noErr)
        #expect(AudioQueueSetParameter(q, kAudioQueueParam_Pan, -0.5) == noErr)
        var volume: Float32 = 0
        #expect(AudioQueueGetParameter(q, kAudioQueueParam_Volume, &volume) == noErr)
        #expect(volume == 0.5)
        #expect(AudioQueueEnqueueBuffer(q, b, 0, nil) == noErr)
        driver.startRecordingPlayback()
        #expect(AudioQueueStart(q, nil) == noErr)
        driver.run(cycles: 2)
        // Balance law: pan -0.5 keeps the left at unity, the right at 1 - 0.5.
        #expect(driver.recordedPlayback(port: 0).samples.prefix(200).allSatisfy { $0 == 0.25 })
        #expect(driver.recordedPlayback(port: 1).samples.prefix(200).allSatisfy { $0 == 0.125 })
        // A ramp of 100 frames from 0.5 to 1 (pan back to centre).
        #expect(AudioQueueSetParameter(q, kAudioQueueParam_Pan, 0) == noErr)
        #expect(AudioQueueSetParameter(q, kAudioQueueParam_VolumeRampTime, Float(100) / 48000) == noErr)
        #expect(AudioQueueSetParameter(q, kAudioQueueParam_Volume, 1) == noErr)
        driver.run(cycles: 2)
        let ramp = Array(driver.recordedPlayback(port: 0).samples[200..<400])
        for i in 0..<100 {
            #expect(abs(ramp[i] - 0.5 * (0.5 + 0.5 * Float(i + 1) / 100)) < 1e-6, "ramp frame \(i)")
        }
        #expect(ramp[100...].allSatisfy { $0 == 0.5 })
        #expect(AudioQueueDispose(q, true) == noErr)
    }

    @Test func monoQueuePansAcrossItsTwoPorts() throws {
        let driver = ManualDriver(periodFrames: 100)
        var format = lpcm(channels: 1, bits: 16)
        var queue: AudioQueueRef?
        #expect(AudioQueueNewOutput(&format, { _, _, _ in }, nil, nil, nil, 0, &queue, device: driver) == noErr)
        let q = try #require(queue)
        var names: CFString?
        var size = UInt32(MemoryLayout<CFString?>.size)
        #expect(AudioQueueGetProperty(q, kAudioQueueProperty_JACKPortNames, &names, &size) == noErr)
        let portNames = String(try #require(names))
        var channels: UInt32 = 0
        var channelsSize = UInt32(4)
        #expect(AudioQueueGetProperty(q, kAudioQueueDeviceProperty_NumberChannels, &channels, &channelsSize) == noErr)
        #expect(channels == 2)
        _ = portNames
        var buffer: AudioQueueBufferRef?
        #expect(AudioQueueAllocateBuffer(q, 2000, &buffer) == noErr)
        let b = try #require(buffer)
        let samples = b.pointee.mAudioData.assumingMemoryBound(to: Int16.self)
        for i in 0..<1000 { samples[i] = 16384 }
        b.pointee.mAudioDataByteSize = 2000
        #expect(AudioQueueSetParameter(q, kAudioQueueParam_Pan, 1) == noErr)
        #expect(AudioQueueEnqueueBuffer(q, b, 0, nil) == noErr)
        driver.startRecordingPlayback()
        #expect(AudioQueueStart(q, nil) == noErr)
        driver.run(cycles: 3)
        #expect(driver.recordedPlayback(port: 0).samples.prefix(300).allSatisfy { $0 == 0 })
        #expect(driver.recordedPlayback(port: 1).samples.prefix(300).allSatisfy { $0 == 0.5 })
        #expect(AudioQueueDispose(q, true) == noErr)
    }

    @Test func levelMetersMeasureWhatIsPlayed() throws {
        let driver = ManualDriver(periodFrames: 480)
        var format = lpcm(channels: 2, bits: 16)
        var queue: AudioQueueRef?
        #expect(AudioQueueNewOutput(&format, { _, _, _ in }, nil, nil, nil, 0, &queue, device: driver) == noErr)
        let q = try #require(queue)
        var meters = [AudioQueueLevelMeterState](repeating: .init(), count: 2)
        var size = UInt32(16)
        #expect(AudioQueueGetProperty(q, kAudioQueueProperty_CurrentLevelMeter, &meters, &size) == kAudioQueueErr_InvalidPropertyValue)
        var on: UInt32 = 1
        #expect(AudioQueueSetProperty(q, kAudioQueueProperty_EnableLevelMetering, &on, 4) == noErr)
        var buffer: AudioQueueBufferRef?
        #expect(AudioQueueAllocateBuffer(q, 48000 * 4, &buffer) == noErr)
        let b = try #require(buffer)
        let samples = b.pointee.mAudioData.assumingMemoryBound(to: Int16.self)
        for f in 0..<48000 {
            samples[f * 2] = Int16((sin(2 * Double.pi * 1000 * Double(f) / 48000) * 32767).rounded())
            samples[f * 2 + 1] = Int16((sin(2 * Double.pi * 1000 * Double(f) / 48000) * 3277).rounded())
        }
        b.pointee.mAudioDataByteSize = 48000 * 4
        #expect(AudioQueueEnqueueBuffer(q, b, 0, nil) == noErr)
        #expect(AudioQueueStart(q, nil) == noErr)
        driver.run(cycles: 20)
        size = 16
        #expect(AudioQueueGetProperty(q, kAudioQueueProperty_CurrentLevelMeter, &meters, &size) == noErr)
        #expect(size == 16)
        #expect(abs(meters[0].mPeakPower - 1) < 0.001)
        #expect(abs(meters[0].mAveragePower - 0.7071) < 0.002)
        #expect(abs(meters[1].mPeakPower - 0.1) < 0.001)
        #expect(AudioQueueGetProperty(q, kAudioQueueProperty_CurrentLevelMeterDB, &meters, &size) == noErr)
        #expect(abs(meters[0].mAveragePower - (-3.01)) < 0.05)
        #expect(abs(meters[1].mPeakPower - (-20)) < 0.05)
        #expect(AudioQueueDispose(q, true) == noErr)
    }

    @Test func serverGoingAwayStopsTheQueueAndLaterCallsAreInvalidated() throws {
        let driver = ManualDriver(periodFrames: 256)
        let context = PlaybackContext(frames: 480000, channels: 2, framesPerBuffer: 4800)
        let setup = try makeQueue(driver, context)
        #expect(AudioQueueStart(setup.queue, nil) == noErr)
        driver.run(cycles: 5)
        #expect(waitUntil { context.runningChanges.withLock { $0 } == [1] })
        var name: CFString?
        var size = UInt32(8)
        #expect(AudioQueueGetProperty(setup.queue, kAudioQueueProperty_JACKClientName, &name, &size) == noErr)
        let device = try #require(driver.devices.first { $0.clientName == String(name!) })
        device.simulateShutdown()
        #expect(waitUntil { context.runningChanges.withLock { $0 } == [1, 0] })
        #expect(AudioQueueStart(setup.queue, nil) == kAudioQueueErr_QueueInvalidated)
        #expect(AudioQueueEnqueueBuffer(setup.queue, setup.buffers[0], 0, nil) != noErr)
        #expect(AudioQueueDispose(setup.queue, true) == noErr)
    }

    @Test func currentDeviceTakesPortNamesRegexesAndSystem() throws {
        let driver = ManualDriver(periodFrames: 256, physicalPortCount: 4)
        var format = lpcm(channels: 2)
        var queue: AudioQueueRef?
        #expect(AudioQueueNewOutput(&format, { _, _, _ in }, nil, nil, nil, 0, &queue, device: driver) == noErr)
        let q = try #require(queue)
        func connected() -> String {
            var ports: CFString?
            var size = UInt32(8)
            AudioQueueGetProperty(q, kAudioQueueProperty_JACKConnectedPorts, &ports, &size)
            return ports.map { String($0) } ?? ""
        }
        #expect(connected() == "system:playback_1,system:playback_2")
        var target: CFString? = CFString.make("playback_[34]$")
        #expect(AudioQueueSetProperty(q, kAudioQueueProperty_CurrentDevice, &target, 8) == noErr)
        #expect(connected() == "system:playback_3,system:playback_4")
        var current: CFString?
        var size = UInt32(8)
        #expect(AudioQueueGetProperty(q, kAudioQueueProperty_CurrentDevice, &current, &size) == noErr)
        #expect(current.map { String($0) } == "playback_[34]$")
        var missing: CFString? = CFString.make("nothing:here")
        #expect(AudioQueueSetProperty(q, kAudioQueueProperty_CurrentDevice, &missing, 8) == kAudioQueueErr_InvalidDevice)
        var rate: Float64 = 0
        var rateSize = UInt32(8)
        #expect(AudioQueueGetProperty(q, kAudioQueueDeviceProperty_SampleRate, &rate, &rateSize) == noErr)
        #expect(rate == 48000)
        #expect(AudioQueueDispose(q, true) == noErr)
    }
}
