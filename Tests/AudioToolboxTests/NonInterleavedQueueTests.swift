import Testing
import Foundation
import Synchronization
import AudioToolbox
import QueueCore
import JackTestSupport

/// kAudioFormatFlagIsNonInterleaved queues (a jaq extension): a buffer holds one plane per
/// channel, plane c at c × mAudioDataByteSize / channels; mBytesPerFrame counts one channel.
@Suite struct NonInterleavedQueueTests {
    static func planar(channels: UInt32, bits: UInt32, float: Bool) -> AudioStreamBasicDescription {
        var format = lpcm(channels: channels, bits: bits, float: float)
        format.mFormatFlags |= kAudioFormatFlagIsNonInterleaved
        format.mBytesPerFrame = (bits + 7) / 8
        format.mBytesPerPacket = format.mBytesPerFrame
        return format
    }

    /// What the input callback saw: each channel's samples (as the integer the signal holds),
    /// and each buffer's byte size.
    final class Planes: @unchecked Sendable {
        let channels: Int
        let sampleBytes: Int
        let float: Bool
        let tracks: Mutex<[[Int32]]>
        let sizes = Mutex<[UInt32]>([])
        let packets = Mutex<[UInt32]>([])
        init(channels: Int, sampleBytes: Int, float: Bool) {
            self.channels = channels
            self.sampleBytes = sampleBytes
            self.float = float
            tracks = Mutex(Array(repeating: [], count: channels))
        }
    }

    static let inputCallback: AudioQueueInputCallback = { user, queue, buffer, _, packets, _ in
        let context = Unmanaged<Planes>.fromOpaque(user!).takeUnretainedValue()
        let size = Int(buffer.pointee.mAudioDataByteSize)
        let frames = size / (context.channels * context.sampleBytes)
        context.sizes.withLock { $0.append(UInt32(size)) }
        context.packets.withLock { $0.append(packets) }
        context.tracks.withLock { tracks in
            for c in 0..<context.channels {
                let plane = buffer.pointee.mAudioData + c * frames * context.sampleBytes
                for i in 0..<frames {
                    let p = plane + i * context.sampleBytes
                    switch (context.float, context.sampleBytes) {
                    case (true, _): tracks[c].append(Int32((p.loadUnaligned(as: Float.self) * 32768).rounded()))
                    case (false, 2): tracks[c].append(Int32(p.loadUnaligned(as: Int16.self)))
                    default:  // 24-bit little-endian: the signal sits in the top 16 bits
                        let value = Int32(p.load(as: UInt8.self)) | Int32(p.load(fromByteOffset: 1, as: UInt8.self)) << 8
                            | Int32(Int8(bitPattern: p.load(fromByteOffset: 2, as: UInt8.self))) << 16
                        tracks[c].append(value >> 8)
                    }
                }
            }
        }
        AudioQueueEnqueueBuffer(queue, buffer, 0, nil)
    }

    @Test(arguments: [(bits: UInt32(32), float: true), (bits: 16, float: false), (bits: 24, float: false)])
    func inputBuffersHoldOnePlanePerChannelBitExact(bits: UInt32, float: Bool) throws {
        let driver = ManualDriver(periodFrames: 256, physicalPortCount: 3)
        driver.setCaptureSignal(AudioQueueInputTests.captureSignal())
        var format = Self.planar(channels: 3, bits: bits, float: float)
        let sampleBytes = Int(bits / 8)
        let context = Planes(channels: 3, sampleBytes: sampleBytes, float: float)
        var queue: AudioQueueRef?
        #expect(AudioQueueNewInput(&format, Self.inputCallback, Unmanaged.passUnretained(context).toOpaque(),
                                   nil, nil, 0, &queue, device: driver) == noErr)
        let q = try #require(queue)
        var reported = AudioStreamBasicDescription()
        var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        #expect(AudioQueueGetProperty(q, kAudioQueueProperty_StreamDescription, &reported, &size) == noErr)
        #expect(reported.mFormatFlags & kAudioFormatFlagIsNonInterleaved != 0 && reported.mBytesPerFrame == bits / 8)
        // 1000 frames and a few bytes more: planes are whole-frame capacity long while filling.
        let capacity = UInt32(1000 * 3 * sampleBytes + 5)
        for _ in 0..<3 {
            var buffer: AudioQueueBufferRef?
            #expect(AudioQueueAllocateBuffer(q, capacity, &buffer) == noErr)
            #expect(AudioQueueEnqueueBuffer(q, try #require(buffer), 0, nil) == noErr)
        }
        var time = AudioTimeStamp()
        time.mSampleTime = Double(driver.frameTime + 1000)
        time.mFlags = .sampleTimeValid
        #expect(AudioQueueStart(q, &time) == noErr)
        driver.run(frames: 10_500 + 1000)
        #expect(waitUntil { context.tracks.withLock { $0[0].count } >= 10_000 })
        // An immediate stop hands back the part-filled buffer: its planes are moved together.
        #expect(AudioQueueStop(q, true) == noErr)
        let tracks = context.tracks.withLock { $0 }
        let sizes = context.sizes.withLock { $0 }
        #expect(sizes.contains { $0 > 0 && $0 < UInt32(1000 * 3 * sampleBytes) }, "a part-filled buffer was delivered")
        #expect(zip(sizes, context.packets.withLock { $0 }).allSatisfy { $0.0 == $0.1 * UInt32(3 * sampleBytes) })
        for c in 0..<3 {
            #expect(tracks[c].count == tracks[0].count)
            let expected = (0..<tracks[c].count).map { Int32(signal($0 + 1000, c)) }
            #expect(firstMismatch(tracks[c], expected) == nil, "channel \(c)")
        }
        #expect(tracks[0].count >= 10_500)
        #expect(AudioQueueDispose(q, true) == noErr)
    }

    /// The guides' output callback, filling planes: channel c's frames at c × frames × 2 bytes.
    static func fillPlanes(_ context: PlaybackContext, _ queue: AudioQueueRef, _ buffer: AudioQueueBufferRef) {
        guard context.isRunningFlag.withLock({ $0 }) else { return }
        let (start, count) = context.position.withLock { position -> (Int, Int) in
            let start = position
            let count = min(context.framesPerBuffer, context.frameCount - start)
            position += max(count, 0)
            return (start, count)
        }
        guard count > 0 else {
            AudioQueueStop(queue, false)
            context.isRunningFlag.withLock { $0 = false }
            return
        }
        let samples = buffer.pointee.mAudioData.assumingMemoryBound(to: Int16.self)
        for c in 0..<2 {
            for i in 0..<count { samples[c * count + i] = context.source[(start + i) * 2 + c] }
        }
        buffer.pointee.mAudioDataByteSize = UInt32(count * 2 * 2)
        AudioQueueEnqueueBuffer(queue, buffer, 0, nil)
    }

    @Test func outputBuffersArePlayedFromTheirPlanesBitExact() throws {
        let driver = ManualDriver(periodFrames: 256)
        var format = Self.planar(channels: 2, bits: 16, float: false)
        let context = PlaybackContext(frames: 48000 + 77, channels: 2, framesPerBuffer: 1500)
        let user = Unmanaged.passUnretained(context).toOpaque()
        var queue: AudioQueueRef?
        #expect(AudioQueueNewOutput(&format, { user, queue, buffer in
            Self.fillPlanes(Unmanaged<PlaybackContext>.fromOpaque(user!).takeUnretainedValue(), queue, buffer)
        }, user, nil, nil, 0, &queue, device: driver) == noErr)
        let q = try #require(queue)
        context.queue = q
        #expect(AudioQueueAddPropertyListener(q, kAudioQueueProperty_IsRunning, isRunningListener, user) == noErr)
        var buffers: [AudioQueueBufferRef] = []
        for _ in 0..<3 {
            var buffer: AudioQueueBufferRef?
            #expect(AudioQueueAllocateBuffer(q, UInt32(1500 * 4), &buffer) == noErr)
            buffers.append(try #require(buffer))
        }
        for buffer in buffers { Self.fillPlanes(context, q, buffer) }
        driver.startRecordingPlayback()
        #expect(AudioQueueStart(q, nil) == noErr)
        var cycles = 0
        while cycles < 5000 {
            var running: UInt32 = 1
            var size = UInt32(4)
            AudioQueueGetProperty(q, kAudioQueueProperty_IsRunning, &running, &size)
            if running == 0 && !context.isRunningFlag.withLock({ $0 }) && context.runningChanges.withLock({ $0.count >= 2 }) { break }
            driver.run(cycles: 1)
            cycles += 1
        }
        for channel in 0..<2 {
            let played = driver.recordedPlayback(port: channel).samples
            let first = try #require(played.firstIndex { $0 != 0 })
            let expected = context.expected(channel: channel)
            #expect(firstMismatch(Array(played[first..<min(played.count, first + expected.count)]), expected) == nil,
                    "channel \(channel)")
        }
        #expect(AudioQueueDispose(q, true) == noErr)
    }
}
