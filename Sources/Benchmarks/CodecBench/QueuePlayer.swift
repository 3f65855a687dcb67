import AudioToolbox
import QueueCore

// The output queue of the benchmark, outside main.swift: its callback runs on the queue
// thread, and main.swift's top-level code is main-actor isolated.

/// The packets the callback reads, and where it is.
final class Feeder: @unchecked Sendable {
    let packets: [[UInt8]]
    let perBuffer = 48
    var next = 0
    var done = false
    init(packets: [[UInt8]]) { self.packets = packets }
}

/// HandleOutputBuffer: the next packets with their descriptions.
func feedBuffer(_ user: UnsafeMutableRawPointer?, _ queue: AudioQueueRef, _ buffer: AudioQueueBufferRef) {
    let feeder = Unmanaged<Feeder>.fromOpaque(user!).takeUnretainedValue()
    let start = feeder.next
    guard start < feeder.packets.count else {
        if !feeder.done {
            feeder.done = true
            AudioQueueStop(queue, false)
        }
        return
    }
    var offset = 0
    var count = 0
    for packet in feeder.packets[start..<min(feeder.packets.count, start + feeder.perBuffer)] {
        packet.withUnsafeBytes { (buffer.pointee.mAudioData + offset).copyMemory(from: $0.baseAddress!, byteCount: packet.count) }
        buffer.pointee.mPacketDescriptions![count] = AudioStreamPacketDescription(
            mStartOffset: Int64(offset), mVariableFramesInPacket: 0, mDataByteSize: UInt32(packet.count))
        offset += packet.count
        count += 1
    }
    feeder.next = start + count
    buffer.pointee.mAudioDataByteSize = UInt32(offset)
    buffer.pointee.mPacketDescriptionCount = UInt32(count)
    AudioQueueEnqueueBuffer(queue, buffer, UInt32(count), buffer.pointee.mPacketDescriptions)
}

/// Plays AAC packets through an output queue on `driver` until it stops; returns the cycles run.
func playThroughQueue(_ packets: [[UInt8]], cookie: [UInt8], rate: Int, driver: ManualDriver) throws -> Int {
    let feeder = Feeder(packets: packets)
    let user = Unmanaged.passRetained(feeder).toOpaque()
    defer { Unmanaged<Feeder>.fromOpaque(user).release() }
    var asbd = AudioStreamBasicDescription(mSampleRate: Double(rate), mFormatID: kAudioFormatMPEG4AAC, mFormatFlags: 0, mBytesPerPacket: 0,
                                           mFramesPerPacket: 1024, mBytesPerFrame: 0, mChannelsPerFrame: 2, mBitsPerChannel: 0, mReserved: 0)
    var queue: AudioQueueRef?
    guard AudioQueueNewOutput(&asbd, feedBuffer, user, nil, nil, 0, &queue, device: driver) == noErr, let queue else { fatalError("AudioQueueNewOutput") }
    var cookie = cookie
    AudioQueueSetProperty(queue, kAudioQueueProperty_MagicCookie, &cookie, UInt32(cookie.count))
    for _ in 0..<3 {
        var buffer: AudioQueueBufferRef?
        AudioQueueAllocateBufferWithPacketDescriptions(queue, UInt32(feeder.perBuffer * 1536), UInt32(feeder.perBuffer), &buffer)
        feedBuffer(user, queue, buffer!)
    }
    AudioQueueStart(queue, nil)
    var cycles = 0
    while cycles < packets.count * 8 {
        var running: UInt32 = 1
        var size = UInt32(4)
        AudioQueueGetProperty(queue, kAudioQueueProperty_IsRunning, &running, &size)
        if running == 0 && feeder.done { break }
        driver.run(cycles: 1)
        cycles += 1
    }
    AudioQueueDispose(queue, true)
    return cycles
}
