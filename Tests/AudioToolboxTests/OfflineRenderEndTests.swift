import Testing
import Foundation
import Synchronization
import AudioToolbox
import QueueCore
import JackTestSupport

/// AudioQueueOfflineRender as Apple's header and AQOfflineRenderTest have it: a render returns
/// the frames the queue played, fewer than asked once what was enqueued has played out, then
/// 0 frames; a queue waiting for its callback to refill it is waited for, never padded with
/// silence in the middle of the output.
@Suite struct OfflineRenderEndTests {
    /// Where the program's callbacks run, and how they behave.
    enum Delivery: String, CustomStringConvertible, CaseIterable, Sendable {
        /// The queue's own thread (a NULL run loop).
        case queueThread
        /// The rendering thread's run loop, which nobody runs while it renders (AQOfflineRenderTest).
        case renderThreadRunLoop
        /// The queue's thread, each refill 20 ms late: the render must wait for it.
        case lateCallback
        var description: String { rawValue }
    }

    /// A file-like source of 16-bit stereo frames played through one buffer or a few, ended as
    /// AQOfflineRenderTest ends it: AudioQueueFlush, then AudioQueueStop(false).
    final class Source: @unchecked Sendable {
        let frames: Int
        let framesPerBuffer: Int
        let lateBy: useconds_t
        let next = Mutex(0)
        let done = Mutex(false)
        init(frames: Int, framesPerBuffer: Int, lateBy: useconds_t) {
            self.frames = frames
            self.framesPerBuffer = framesPerBuffer
            self.lateBy = lateBy
        }

        func refill(_ queue: AudioQueueRef, _ buffer: AudioQueueBufferRef) {
            if done.withLock({ $0 }) { return }
            if lateBy > 0 { usleep(lateBy) }
            let start = next.withLock { n -> Int in defer { n = min(frames, n + framesPerBuffer) }; return n }
            let count = min(framesPerBuffer, frames - start)
            guard count > 0 else {
                done.withLock { $0 = true }
                AudioQueueFlush(queue)
                AudioQueueStop(queue, false)
                return
            }
            let samples = buffer.pointee.mAudioData.assumingMemoryBound(to: Int16.self)
            for f in 0..<count { for c in 0..<2 { samples[2 * f + c] = signal(start + f, c) } }
            buffer.pointee.mAudioDataByteSize = UInt32(count * 4)
            AudioQueueEnqueueBuffer(queue, buffer, 0, nil)
        }

        /// What a float render of channel `c` must be.
        func expected(channel c: Int) -> [Float] { (0..<frames).map { Float(signal($0, c)) / 32768 } }
    }

    static let callback: AudioQueueOutputCallback = { user, queue, buffer in
        Unmanaged<Source>.fromOpaque(user!).takeUnretainedValue().refill(queue, buffer)
    }

    /// Makes a 48 kHz stereo 16-bit queue on an offline device playing `source` through `bufferCount` buffers.
    static func makeQueue(_ source: Source, delivery: Delivery, bufferCount: Int) throws -> AudioQueueRef {
        var format = lpcm(channels: 2)
        var made: AudioQueueRef?
        let user = Unmanaged.passUnretained(source).toOpaque()
        let device = AudioQueueDevices.offline(sampleRate: 48000, periodFrames: 256)
        let status = delivery == .renderThreadRunLoop
            ? AudioQueueNewOutput(&format, callback, user, CFRunLoopGetCurrent(), CFRunLoopMode.commonModes.rawValue, 0, &made, device: device)
            : AudioQueueNewOutput(&format, callback, user, nil, nil, 0, &made, device: device)
        #expect(status == noErr)
        let queue = try #require(made)
        var renderFormat = lpcm(channels: 2, bits: 32, float: true)
        #expect(AudioQueueSetOfflineRenderFormat(queue, &renderFormat, nil) == noErr)
        for _ in 0..<bufferCount {
            var buffer: AudioQueueBufferRef?
            #expect(AudioQueueAllocateBuffer(queue, UInt32(source.framesPerBuffer * 4), &buffer) == noErr)
            source.refill(queue, try #require(buffer))
        }
        return queue
    }

    /// Pulled until a render returns fewer frames than asked, the output is the source, frame for
    /// frame, and nothing more; the next render returns 0 frames. With one buffer and renders of half
    /// a buffer (AQOfflineRenderTest's 2:1), every other render finds the ring empty while the
    /// callback refills it; with the callback on the rendering thread's own run loop, the render
    /// runs it; with a late callback, it waits for it.
    @Test(arguments: Delivery.allCases, [1, 3])
    func aRenderPulledUntilItEndsIsTheSourceExactly(delivery: Delivery, bufferCount: Int) throws {
        let source = Source(frames: 100_000, framesPerBuffer: 8192, lateBy: delivery == .lateCallback ? 20_000 : 0)
        let queue = try Self.makeQueue(source, delivery: delivery, bufferCount: bufferCount)
        defer { AudioQueueDispose(queue, true) }
        #expect(AudioQueueStart(queue, nil) == noErr)
        // At most a second more than the source: a render that pads with silence stops there.
        let rendered = try renderOffline(queue, channels: 2, frames: source.frames + 48000, request: 4096)
        #expect(rendered.count / 2 == source.frames, "rendered \(rendered.count / 2) frames of \(source.frames)")
        for c in 0..<2 {
            #expect(firstMismatch(deinterleave(rendered, channels: 2, channel: c), source.expected(channel: c)) == nil,
                    "channel \(c)")
        }
        #expect(waitUntil { !isRunning(queue) }, "the queue stopped after its last frame")
    }

    /// Requests that do not divide the source and a time stamp that follows what each render
    /// returned: the total is the source's length, to the frame.
    @Test func oddRequestsEndOnTheLastFrame() throws {
        let source = Source(frames: 48_001, framesPerBuffer: 4000, lateBy: 0)
        let queue = try Self.makeQueue(source, delivery: .queueThread, bufferCount: 2)
        defer { AudioQueueDispose(queue, true) }
        #expect(AudioQueueStart(queue, nil) == noErr)
        let rendered = try renderOffline(queue, channels: 2, frames: 200_000, request: 777)
        #expect(rendered.count / 2 == 48_001)
        #expect(firstMismatch(deinterleave(rendered, channels: 2, channel: 1), source.expected(channel: 1)) == nil)
    }

    /// A queue that was never started, or was stopped, renders nothing.
    @Test func aStoppedQueueRendersNoFrames() throws {
        let source = Source(frames: 20_000, framesPerBuffer: 4096, lateBy: 0)
        let queue = try Self.makeQueue(source, delivery: .queueThread, bufferCount: 3)
        defer { AudioQueueDispose(queue, true) }
        var capture: AudioQueueBufferRef?
        #expect(AudioQueueAllocateBuffer(queue, 4096 * 8, &capture) == noErr)
        var time = AudioTimeStamp()
        time.mFlags = .sampleTimeValid
        #expect(AudioQueueOfflineRender(queue, &time, capture!, 0) == noErr)
        #expect(AudioQueueOfflineRender(queue, &time, capture!, 4096) == noErr)
        #expect(capture!.pointee.mAudioDataByteSize == 0, "not started: nothing played")
        #expect(AudioQueueStart(queue, nil) == noErr)
        #expect(AudioQueueOfflineRender(queue, &time, capture!, 4096) == noErr)
        #expect(capture!.pointee.mAudioDataByteSize == 4096 * 8)
        time.mSampleTime += 4096
        #expect(AudioQueueStop(queue, true) == noErr)
        #expect(AudioQueueOfflineRender(queue, &time, capture!, 4096) == noErr)
        #expect(capture!.pointee.mAudioDataByteSize == 0, "stopped: nothing plays")
    }

    /// With the time/pitch unit at PlayRate 2 (a callback that refills late, so the unit's input
    /// runs dry between buffers), the render ends: half the source and the unit's tail, and no
    /// stretch of silence inside the sine.
    @Test func aTimePitchRenderEndsAndHasNoInsertedSilence() throws {
        let frames = 240_000
        var format = lpcm(channels: 1, bits: 32, float: true)
        var made: AudioQueueRef?
        let context = SineSource(frames: frames, framesPerBuffer: 4800)
        let user = Unmanaged.passUnretained(context).toOpaque()
        #expect(AudioQueueNewOutput(&format, SineSource.callback, user, nil, nil, 0, &made,
                                    device: AudioQueueDevices.offline(sampleRate: 48000)) == noErr)
        let queue = try #require(made)
        defer { AudioQueueDispose(queue, true) }
        var one: UInt32 = 1
        #expect(AudioQueueSetProperty(queue, kAudioQueueProperty_EnableTimePitch, &one, 4) == noErr)
        #expect(AudioQueueSetParameter(queue, kAudioQueueParam_PlayRate, 2) == noErr)
        var renderFormat = lpcm(channels: 1, bits: 32, float: true)
        #expect(AudioQueueSetOfflineRenderFormat(queue, &renderFormat, nil) == noErr)
        for _ in 0..<2 {
            var buffer: AudioQueueBufferRef?
            #expect(AudioQueueAllocateBuffer(queue, 4800 * 4, &buffer) == noErr)
            context.refill(queue, buffer!)
        }
        #expect(AudioQueueStart(queue, nil) == noErr)
        let rendered = try renderOffline(queue, channels: 1, frames: frames, request: 4096)
        print("measured: offline render at PlayRate 2 of \(frames) frames: \(rendered.count) frames")
        #expect(rendered.count >= frames / 2 && rendered.count <= frames / 2 + 24000,
                "rendered \(rendered.count) frames for \(frames / 2) at rate 2")
        let span = try #require(audibleSpan(rendered))
        var longestZeroRun = 0
        var run = 0
        for x in rendered[span.first + 2400..<span.first + span.count - 2400] {
            run = x == 0 ? run + 1 : 0
            longestZeroRun = max(longestZeroRun, run)
        }
        #expect(longestZeroRun < 8, "a run of \(longestZeroRun) zero samples inside the sine")
    }
}

/// A 1 kHz sine, mono float, refilled 5 ms late, ended by Stop(false).
final class SineSource: @unchecked Sendable {
    let frames: Int
    let framesPerBuffer: Int
    let next = Mutex(0)
    init(frames: Int, framesPerBuffer: Int) {
        self.frames = frames
        self.framesPerBuffer = framesPerBuffer
    }

    static let callback: AudioQueueOutputCallback = { user, queue, buffer in
        Unmanaged<SineSource>.fromOpaque(user!).takeUnretainedValue().refill(queue, buffer)
    }

    func refill(_ queue: AudioQueueRef, _ buffer: AudioQueueBufferRef) {
        usleep(5000)
        let start = next.withLock { n -> Int in defer { n = min(frames, n + framesPerBuffer) }; return n }
        let count = min(framesPerBuffer, frames - start)
        guard count > 0 else {
            if start == frames { next.withLock { $0 = frames + 1 }; AudioQueueStop(queue, false) }
            return
        }
        let samples = buffer.pointee.mAudioData.assumingMemoryBound(to: Float.self)
        for f in 0..<count { samples[f] = Float(0.5 * sin(2 * Double.pi * 1000 * Double(start + f) / 48000)) }
        buffer.pointee.mAudioDataByteSize = UInt32(count * 4)
        AudioQueueEnqueueBuffer(queue, buffer, 0, nil)
    }
}
