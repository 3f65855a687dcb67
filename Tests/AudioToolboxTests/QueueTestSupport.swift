import Testing
import Foundation
import Synchronization
import AudioToolbox
import QueueCore

/// An ASBD for interleaved packed linear PCM.
func lpcm(rate: Double = 48000, channels: UInt32 = 2, bits: UInt32 = 16, float: Bool = false,
          bigEndian: Bool = false) -> AudioStreamBasicDescription {
    let bytes = (bits + 7) / 8 * channels
    var flags: AudioFormatFlags = kAudioFormatFlagIsPacked
    flags |= float ? kAudioFormatFlagIsFloat : kAudioFormatFlagIsSignedInteger
    if bigEndian { flags |= kAudioFormatFlagIsBigEndian }
    return AudioStreamBasicDescription(mSampleRate: rate, mFormatID: kAudioFormatLinearPCM, mFormatFlags: flags,
                                       mBytesPerPacket: bytes, mFramesPerPacket: 1, mBytesPerFrame: bytes,
                                       mChannelsPerFrame: channels, mBitsPerChannel: bits, mReserved: 0)
}

/// A playback queue in `format` on `device` whose callback does nothing (the test enqueues by hand).
func silentOutputQueue(_ format: AudioStreamBasicDescription, device: DeviceProvider) throws -> AudioQueueRef {
    var format = format
    var queue: AudioQueueRef?
    #expect(AudioQueueNewOutput(&format, { _, _, _ in }, nil, nil, nil, 0, &queue, device: device) == noErr)
    return try #require(queue)
}

/// Frame `frame` of channel `channel` of the test signal: distinct and never 0.
func signal(_ frame: Int, _ channel: Int) -> Int16 {
    let value = ((frame &* 7919 &+ channel &* 104_729) % 60_000) - 30_000
    return Int16(value == 0 ? 1 : value)
}

/// A playback context in the guides' style: a C callback reads the next frames
/// of a source into the buffer and re-enqueues it; at the end it calls Stop(false).
final class PlaybackContext: @unchecked Sendable {
    let source: [Int16]          // interleaved
    let channels: Int
    let framesPerBuffer: Int
    var queue: AudioQueueRef?
    let position = Mutex(0)
    let callbacks = Mutex(0)
    let runningChanges = Mutex<[UInt32]>([])
    let enqueueErrors = Mutex<[OSStatus]>([])
    let isRunningFlag = Mutex(true)
    var reenqueue = true

    init(frames: Int, channels: Int, framesPerBuffer: Int) {
        self.channels = channels
        self.framesPerBuffer = framesPerBuffer
        source = (0..<frames).flatMap { f in (0..<channels).map { c in signal(f, c) } }
    }

    var frameCount: Int { source.count / channels }

    /// Expected float output of channel `c`.
    func expected(channel c: Int) -> [Float] {
        (0..<frameCount).map { Float(source[$0 * channels + c]) / 32768 }
    }

    func fill(_ buffer: AudioQueueBufferRef) -> Bool {
        let (start, count) = position.withLock { position -> (Int, Int) in
            let start = position
            let count = min(framesPerBuffer, frameCount - start)
            position += max(count, 0)
            return (start, count)
        }
        guard count > 0 else { return false }
        source.withUnsafeBytes { bytes in
            buffer.pointee.mAudioData.copyMemory(from: bytes.baseAddress! + start * channels * 2, byteCount: count * channels * 2)
        }
        buffer.pointee.mAudioDataByteSize = UInt32(count * channels * 2)
        return true
    }
}

/// The guides' HandleOutputBuffer (Listing 3-6), for PlaybackContext.
func handleOutputBuffer(_ userData: UnsafeMutableRawPointer?, _ queue: AudioQueueRef, _ buffer: AudioQueueBufferRef) {
    let context = Unmanaged<PlaybackContext>.fromOpaque(userData!).takeUnretainedValue()
    context.callbacks.withLock { $0 += 1 }
    guard context.isRunningFlag.withLock({ $0 }), context.reenqueue else { return }
    if context.fill(buffer) {
        let status = AudioQueueEnqueueBuffer(queue, buffer, 0, nil)
        if status != noErr { context.enqueueErrors.withLock { $0.append(status) } }
    } else {
        AudioQueueStop(queue, false)
        context.isRunningFlag.withLock { $0 = false }
    }
}

/// Records IsRunning changes into the PlaybackContext.
func isRunningListener(_ userData: UnsafeMutableRawPointer?, _ queue: AudioQueueRef, _ id: AudioQueuePropertyID) {
    let context = Unmanaged<PlaybackContext>.fromOpaque(userData!).takeUnretainedValue()
    var running: UInt32 = 0
    var size = UInt32(MemoryLayout<UInt32>.size)
    AudioQueueGetProperty(queue, kAudioQueueProperty_IsRunning, &running, &size)
    context.runningChanges.withLock { $0.append(running) }
}

/// A recording context: the input callback appends the buffer's samples and start times, then re-enqueues.
final class RecordingContext: @unchecked Sendable {
    let samples = Mutex<[Int16]>([])
    let bytes = Mutex<[UInt8]>([])
    let starts = Mutex<[(sampleTime: Double, packets: UInt32, bytes: UInt32)]>([])
    let enqueueErrors = Mutex<[OSStatus]>([])
    let reenqueue = Mutex(true)
    let stall = Mutex(false)
}

func handleInputBuffer(_ userData: UnsafeMutableRawPointer?, _ queue: AudioQueueRef, _ buffer: AudioQueueBufferRef,
                       _ startTime: UnsafePointer<AudioTimeStamp>, _ packets: UInt32,
                       _ descriptions: UnsafePointer<AudioStreamPacketDescription>?) {
    let context = Unmanaged<RecordingContext>.fromOpaque(userData!).takeUnretainedValue()
    while context.stall.withLock({ $0 }) { usleep(1000) }
    let count = Int(buffer.pointee.mAudioDataByteSize) / 2
    let data = buffer.pointee.mAudioData.assumingMemoryBound(to: Int16.self)
    context.samples.withLock { $0.append(contentsOf: UnsafeBufferPointer(start: data, count: count)) }
    context.bytes.withLock {
        $0.append(contentsOf: UnsafeRawBufferPointer(start: buffer.pointee.mAudioData, count: Int(buffer.pointee.mAudioDataByteSize)))
    }
    context.starts.withLock { $0.append((startTime.pointee.mSampleTime, packets, buffer.pointee.mAudioDataByteSize)) }
    guard context.reenqueue.withLock({ $0 }) else { return }
    let status = AudioQueueEnqueueBuffer(queue, buffer, 0, nil)
    if status != noErr { context.enqueueErrors.withLock { $0.append(status) } }
}

/// Where two sample sequences first differ (nil if equal), for readable failures.
func firstMismatch<T: Equatable>(_ actual: [T], _ expected: [T]) -> String? {
    if actual == expected { return nil }
    let common = min(actual.count, expected.count)
    for i in 0..<common where actual[i] != expected[i] {
        return "index \(i): \(actual[i]) != \(expected[i]) (counts \(actual.count), \(expected.count))"
    }
    return "counts differ: \(actual.count) != \(expected.count)"
}
