import Testing
import Foundation
import Synchronization
import AudioToolbox
import QueueCore
import JackTestSupport

/// Recording queues through the public API on a ManualDriver.
@Suite struct AudioQueueInputTests {
    /// The capture signal: frame `f` of port `p` is `signal(f, p) / 32768` (exact as int16).
    static func captureSignal(startFrame: Int64 = 0) -> @Sendable (Int, Int64) -> Float {
        { port, frame in Float(signal(Int(frame - startFrame), port)) / 32768 }
    }

    struct Setup {
        let queue: AudioQueueRef
        let context: RecordingContext
        let buffers: [AudioQueueBufferRef]
    }

    func makeQueue(format: AudioStreamBasicDescription = lpcm(), bufferBytes: UInt32 = 4096, bufferCount: Int = 3,
                   device: DeviceProvider) throws -> Setup {
        var format = format
        let context = RecordingContext()
        var queue: AudioQueueRef?
        #expect(AudioQueueNewInput(&format, handleInputBuffer, Unmanaged.passUnretained(context).toOpaque(), nil, nil, 0, &queue, device: device) == noErr)
        let q = try #require(queue)
        var buffers: [AudioQueueBufferRef] = []
        for _ in 0..<bufferCount {
            var buffer: AudioQueueBufferRef?
            #expect(AudioQueueAllocateBuffer(q, bufferBytes, &buffer) == noErr)
            buffers.append(try #require(buffer))
            #expect(AudioQueueEnqueueBuffer(q, buffers.last!, 0, nil) == noErr)
        }
        return Setup(queue: q, context: context, buffers: buffers)
    }

    @Test func recordsBitExactWithConsecutiveStartTimes() throws {
        let driver = ManualDriver(periodFrames: 256)
        driver.setCaptureSignal(Self.captureSignal())
        let setup = try makeQueue(device: driver)
        let start = driver.frameTime + 1000
        var time = AudioTimeStamp()
        time.mSampleTime = Double(start)
        time.mFlags = .sampleTimeValid
        #expect(AudioQueueStart(setup.queue, &time) == noErr)
        driver.run(frames: 48000 + 2000)
        #expect(waitUntil { setup.context.samples.withLock { $0.count } >= 2 * 48000 })
        #expect(AudioQueueStop(setup.queue, true) == noErr)
        let samples = setup.context.samples.withLock { $0 }
        // The first recorded frame is exactly device frame `start`.
        let expected = (0..<samples.count / 2).flatMap { f in [signal(f + 1000, 0), signal(f + 1000, 1)] }
        #expect(firstMismatch(samples, expected) == nil)
        // mSampleTime advances by exactly the frames delivered.
        let starts = setup.context.starts.withLock { $0 }
        var next = 0.0
        for entry in starts {
            #expect(entry.sampleTime == next)
            #expect(entry.packets == entry.bytes / 4)
            next += Double(entry.packets)
        }
        #expect(AudioQueueDispose(setup.queue, true) == noErr)
    }

    @Test func streamDescriptionFillsInTheDeviceRate() throws {
        let device = ManualDriver(sampleRate: 44100)
        let setup = try makeQueue(format: lpcm(rate: 0, channels: 2, bits: 16, bigEndian: true), device: device)
        var format = AudioStreamBasicDescription()
        var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        #expect(AudioQueueGetProperty(setup.queue, kAudioQueueProperty_StreamDescription, &format, &size) == noErr)
        #expect(format.mSampleRate == 44100)
        #expect(format.mFormatID == kAudioFormatLinearPCM)
        #expect(format.mBytesPerFrame == 4 && format.mChannelsPerFrame == 2 && format.mBitsPerChannel == 16)
        #expect(format.mFormatFlags & kAudioFormatFlagIsBigEndian != 0)
        var packet: UInt32 = 0
        var packetSize = UInt32(4)
        #expect(AudioQueueGetProperty(setup.queue, kAudioQueueProperty_MaximumOutputPacketSize, &packet, &packetSize) == noErr)
        #expect(packet == 4)
        #expect(AudioQueueDispose(setup.queue, true) == noErr)
    }

    @Test func pauseExcludesPausedTimeAndLosesNothing() throws {
        let driver = ManualDriver(periodFrames: 128)
        driver.setCaptureSignal(Self.captureSignal())
        let setup = try makeQueue(bufferBytes: 4000, device: driver)
        #expect(AudioQueueStart(setup.queue, nil) == noErr)
        let started = driver.frameTime
        driver.run(cycles: 40)
        #expect(AudioQueuePause(setup.queue) == noErr)
        driver.run(cycles: 30)
        let resumed = driver.frameTime
        #expect(AudioQueueStart(setup.queue, nil) == noErr)
        driver.run(cycles: 40)
        #expect(AudioQueueStop(setup.queue, false) == noErr)
        #expect(waitUntil { setup.context.samples.withLock { $0.count } >= 80 * 128 * 2 })
        #expect(waitUntil {
            var running: UInt32 = 1
            var size = UInt32(4)
            AudioQueueGetProperty(setup.queue, kAudioQueueProperty_IsRunning, &running, &size)
            return running == 0
        })
        let samples = setup.context.samples.withLock { $0 }
        #expect(samples.count == 80 * 128 * 2, "Stop(false) delivers everything captured")
        let first = (0..<(40 * 128)).map { Int(started) + $0 }
        let second = (0..<(40 * 128)).map { Int(resumed) + $0 }
        let expected = (first + second).flatMap { [signal($0, 0), signal($0, 1)] }
        #expect(firstMismatch(samples, expected) == nil)
        var next = 0.0
        for entry in setup.context.starts.withLock({ $0 }) {
            #expect(entry.sampleTime == next)
            next += Double(entry.packets)
        }
        #expect(next == Double(80 * 128))
        #expect(AudioQueueDispose(setup.queue, true) == noErr)
    }

    @Test func lostDataJumpsTheTimeByExactlyTheFramesLostAndIsReported() throws {
        let driver = ManualDriver(periodFrames: 256)
        driver.allowsWaiting = false  // as on a realtime server: frames are dropped when the ring is full
        driver.setCaptureSignal(Self.captureSignal())
        let setup = try makeQueue(bufferBytes: 4096, device: driver)
        var seconds: Float64 = 0.1  // 4800 frames: rounded up to 8192
        #expect(AudioQueueSetProperty(setup.queue, kAudioQueueProperty_CaptureBufferSeconds, &seconds, 8) == noErr)
        var timeline: AudioQueueTimelineRef?
        #expect(AudioQueueCreateTimeline(setup.queue, &timeline) == noErr)
        let counter = UnderrunCounter()
        let box = Unmanaged.passRetained(counter).toOpaque()
        defer { Unmanaged<UnderrunCounter>.fromOpaque(box).release() }
        #expect(AudioQueueAddPropertyListener(setup.queue, kAudioQueueProperty_RecordUnderrun, { user, _, _ in
            Unmanaged<UnderrunCounter>.fromOpaque(user!).takeUnretainedValue().count.withLock { $0 += 1 }
        }, box) == noErr)
        #expect(AudioQueueStart(setup.queue, nil) == noErr)
        let started = driver.frameTime
        driver.run(cycles: 8)
        #expect(waitUntil { setup.context.samples.withLock { $0.count } == 8 * 256 * 2 })
        // The application stalls: the ring (8192 frames) fills, then frames are lost.
        setup.context.stall.withLock { $0 = true }
        driver.run(cycles: 60)
        setup.context.stall.withLock { $0 = false }
        // Once the application has caught up to the loss (it is reported then), more
        // cycles bring the frames after it.
        #expect(waitUntil { counter.count.withLock { $0 } >= 1 })
        driver.run(cycles: 20)
        #expect(AudioQueueStop(setup.queue, false) == noErr)
        // Stop(false) delivers what was captured, then the queue stops.
        #expect(waitUntil {
            var running: UInt32 = 1
            var size = UInt32(4)
            return AudioQueueGetProperty(setup.queue, kAudioQueueProperty_IsRunning, &running, &size) == noErr && running == 0
        })
        var info = AudioQueueRecordUnderrunInfo()
        var size = UInt32(MemoryLayout<AudioQueueRecordUnderrunInfo>.size)
        #expect(AudioQueueGetProperty(setup.queue, kAudioQueueProperty_RecordUnderrun, &info, &size) == noErr)
        #expect(info.mStatus == kAudioQueueErr_RecordUnderrun)
        #expect(info.mFramesLost > 0)
        // mSampleTime jumps by exactly the frames lost; every delivered frame is the right one.
        let starts = setup.context.starts.withLock { $0 }
        let samples = setup.context.samples.withLock { $0 }
        var offset = 0
        var jumps: UInt64 = 0
        var expectedTime = 0.0
        for entry in starts {
            if entry.sampleTime != expectedTime {
                #expect(entry.sampleTime > expectedTime)
                jumps += UInt64(entry.sampleTime - expectedTime)
            }
            let frames = Int(entry.packets)
            let got = Array(samples[offset..<(offset + frames * 2)])
            let want = (0..<frames).flatMap { f -> [Int16] in
                let frame = Int(started) + Int(entry.sampleTime) + f
                return [signal(frame, 0), signal(frame, 1)]
            }
            #expect(firstMismatch(got, want) == nil, "buffer at \(entry.sampleTime)")
            offset += frames * 2
            expectedTime = entry.sampleTime + Double(frames)
        }
        #expect(jumps == info.mFramesLost)
        var discontinuity: DarwinBoolean = false
        var now = AudioTimeStamp()
        #expect(AudioQueueGetCurrentTime(setup.queue, timeline, &now, &discontinuity) == noErr)
        #expect(discontinuity.boolValue)
        #expect(AudioQueueGetCurrentTime(setup.queue, timeline, &now, &discontinuity) == noErr)
        #expect(!discontinuity.boolValue, "reported once")
        #expect(AudioQueueDispose(setup.queue, true) == noErr)
    }

    final class UnderrunCounter: Sendable {
        let count = Mutex(0)
    }

    @Test func stopImmediateDeliversThePartlyFilledBuffer() throws {
        let driver = ManualDriver(periodFrames: 100)
        driver.setCaptureSignal(Self.captureSignal())
        let setup = try makeQueue(bufferBytes: 4000, device: driver)  // 1000 frames each
        #expect(AudioQueueStart(setup.queue, nil) == noErr)
        let started = driver.frameTime
        driver.run(cycles: 25)  // 2500 frames: two full buffers and half of the third
        #expect(waitUntil { setup.context.starts.withLock { $0.count } == 2 })
        #expect(AudioQueueStop(setup.queue, true) == noErr)
        let starts = setup.context.starts.withLock { $0 }
        #expect(starts.count >= 3)
        #expect(starts.map(\.packets).reduce(0, +) == 2500)
        let samples = setup.context.samples.withLock { $0 }
        #expect(firstMismatch(samples, (0..<2500).flatMap { [signal(Int(started) + $0, 0), signal(Int(started) + $0, 1)] }) == nil)
        // Re-enqueueing from those callbacks was refused (Stop resets); nothing is queued now.
        #expect(setup.context.enqueueErrors.withLock { $0 }.allSatisfy { $0 == kAudioQueueErr_EnqueueDuringReset })
        for buffer in setup.buffers { #expect(AudioQueueFreeBuffer(setup.queue, buffer) == noErr) }
        #expect(AudioQueueDispose(setup.queue, true) == noErr)
    }

    @Test func outputOnlyCallsAreRefusedWithInvalidQueueType() throws {
        let device = ManualDriver()
        let setup = try makeQueue(device: device)
        var frames: UInt32 = 0
        #expect(AudioQueuePrime(setup.queue, 0, &frames) == kAudioQueueErr_InvalidQueueType)
        #expect(AudioQueueSetParameter(setup.queue, kAudioQueueParam_Volume, 0.5) == kAudioQueueErr_InvalidQueueType)
        var size: UInt32 = 0
        #expect(AudioQueueGetPropertySize(setup.queue, kAudioQueueProperty_DecodeBufferSizeFrames, &size) == kAudioQueueErr_InvalidQueueType)
        #expect(AudioQueueEnqueueBufferWithParameters(setup.queue, setup.buffers[0], 0, nil, 0, 0, 0, nil, nil, nil)
                == kAudioQueueErr_InvalidQueueType)
        #expect(AudioQueueDispose(setup.queue, true) == noErr)
    }

    @Test func serverGoingAwayDeliversWhatWasCapturedAndInvalidates() throws {
        let driver = ManualDriver(periodFrames: 100)
        driver.setCaptureSignal(Self.captureSignal())
        let setup = try makeQueue(bufferBytes: 4000, device: driver)
        #expect(AudioQueueStart(setup.queue, nil) == noErr)
        driver.run(cycles: 15)
        driver.devices.last!.simulateShutdown()
        #expect(waitUntil { setup.context.starts.withLock { $0.map(\.packets).reduce(0, +) } == 1500 })
        #expect(waitUntil {
            var running: UInt32 = 1
            var size = UInt32(4)
            AudioQueueGetProperty(setup.queue, kAudioQueueProperty_IsRunning, &running, &size)
            return running == 0
        })
        #expect(AudioQueueStart(setup.queue, nil) == kAudioQueueErr_QueueInvalidated)
        #expect(AudioQueueDispose(setup.queue, true) == noErr)
    }

    @Test(arguments: [("ulaw", kAudioFormatULaw), ("alaw", kAudioFormatALaw)])
    func g711RecordingMatchesTheEncodedSignal(name: String, id: AudioFormatID) throws {
        let driver = ManualDriver(sampleRate: 8000, periodFrames: 160)
        // Every G.711 code's decoded value, in turn: recording encodes it back to the code.
        let code: @Sendable (Int64) -> UInt8 = { frame in
            let c = UInt8(truncatingIfNeeded: frame &* 37)
            return id == kAudioFormatULaw && c == 0x7F ? 0xFF : c  // µ-law has two zeros
        }
        driver.setCaptureSignal { _, frame in
            Float(id == kAudioFormatULaw ? ulawDecode(code(frame)) : alawDecode(code(frame))) / 32768
        }
        let format = AudioStreamBasicDescription(mSampleRate: 8000, mFormatID: id, mFormatFlags: 0, mBytesPerPacket: 1,
                                                 mFramesPerPacket: 1, mBytesPerFrame: 1, mChannelsPerFrame: 1,
                                                 mBitsPerChannel: 8, mReserved: 0)
        let setup = try makeQueue(format: format, bufferBytes: 800, device: driver)
        #expect(AudioQueueStart(setup.queue, nil) == noErr)
        let started = driver.frameTime
        driver.run(cycles: 30)
        #expect(AudioQueueStop(setup.queue, false) == noErr)
        #expect(waitUntil { setup.context.bytes.withLock { $0.count } == 30 * 160 })
        let bytes = setup.context.bytes.withLock { $0 }
        #expect(firstMismatch(bytes, (0..<bytes.count).map { code(started + Int64($0)) }) == nil, "\(name)")
        #expect(AudioQueueDispose(setup.queue, true) == noErr)
    }
}

/// Reference G.711 decoders (ITU-T tables) for the tests.
func ulawDecode(_ code: UInt8) -> Int16 {
    let u = ~code
    let t = ((Int(u & 0x0F) << 3) + 0x84) << Int((u & 0x70) >> 4)
    return Int16(u & 0x80 != 0 ? 0x84 - t : t - 0x84)
}

func alawDecode(_ code: UInt8) -> Int16 {
    let a = code ^ 0x55
    var t = Int(a & 0x0F) << 4
    let segment = Int((a & 0x70) >> 4)
    switch segment {
    case 0: t += 8
    case 1: t += 0x108
    default: t = (t + 0x108) << (segment - 1)
    }
    return Int16(a & 0x80 != 0 ? t : -t)
}
