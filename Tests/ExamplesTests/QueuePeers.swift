import AudioToolbox
import ExampleSupport
import Foundation
import JackDriver
import JackTestSupport
import QueueCore
import Synchronization
import Testing

// Audio queues of the test process that play into or record from the examples' ports: the
// "independent JACK client" on the other side of PlayFile, and "our own output queue" that
// plays into RecordFile and Recorder.

/// Runs `body`, which makes audio queues of this process on `server`, while no other test
/// opens JACK clients in this process (libjack is not made for clients of several servers
/// at once; see JackServer.withInProcessClients).
func withQueues<T>(on server: JackServer, _ body: () throws -> T) rethrows -> T {
    try JackServer.withInProcessClients(body)
}

/// Creates a queue on `server`'s JACK driver, on its own ports, connected to nothing.
private func makeQueue(on server: JackServer, name: String,
                       _ create: (UnsafeMutablePointer<AudioQueueRef?>, DeviceProvider) -> OSStatus) throws -> AudioQueueRef {
    var queue: AudioQueueRef?
    let status = create(&queue, JackDriver(serverName: server.name))
    try #require(status == noErr, "creating the test's queue: \(status)")
    let made = try #require(queue)
    var clientName: CFString? = CFString.make(name)
    var nothing: CFString? = CFString.make("")
    try #require(withUnsafePointer(to: &clientName) {
        AudioQueueSetProperty(made, kAudioQueueProperty_JACKClientName, $0, UInt32(MemoryLayout<CFString?>.size))
    } == noErr)
    try #require(withUnsafePointer(to: &nothing) {
        AudioQueueSetProperty(made, kAudioQueueProperty_CurrentDevice, $0, UInt32(MemoryLayout<CFString?>.size))
    } == noErr)
    return made
}

/// Plays interleaved 16-bit samples with an output queue, in the guide's style: the callback
/// refills and re-enqueues each buffer, and calls Stop(false) at the end.
final class QueuePlayer: @unchecked Sendable {
    let source: [Int16]
    let channels: Int
    let framesPerBuffer = 8192
    private(set) var queue: AudioQueueRef!
    private let position = Mutex(0)

    init(server: JackServer, source: [Int16], channels: Int, rate: Double, name: String) throws {
        self.source = source
        self.channels = channels
        var format = AudioStreamBasicDescription(
            mSampleRate: rate, mFormatID: kAudioFormatLinearPCM,
            mFormatFlags: kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsPacked,
            mBytesPerPacket: UInt32(2 * channels), mFramesPerPacket: 1, mBytesPerFrame: UInt32(2 * channels),
            mChannelsPerFrame: UInt32(channels), mBitsPerChannel: 16, mReserved: 0)
        let user = Unmanaged.passUnretained(self).toOpaque()
        queue = try makeQueue(on: server, name: name) {
            AudioQueueNewOutput(&format, { user, queue, buffer in
                Unmanaged<QueuePlayer>.fromOpaque(user!).takeUnretainedValue().refill(queue, buffer)
            }, user, nil, nil, 0, $0, device: $1)
        }
    }

    /// The queue's ports, comma-separated: what an example's --device takes.
    var ports: String { queueString(queue, kAudioQueueProperty_JACKPortNames) }

    /// Primes three buffers and starts.
    func start() throws {
        for _ in 0..<3 {
            var buffer: AudioQueueBufferRef?
            try #require(AudioQueueAllocateBuffer(queue, UInt32(framesPerBuffer * channels * 2), &buffer) == noErr)
            refill(queue, buffer!)
        }
        try #require(AudioQueueStart(queue, nil) == noErr)
    }

    /// Waits until the queue has played everything (IsRunning back to 0 after Stop(false)).
    func waitUntilPlayed(timeout: Double) -> Bool {
        waitUntil(2) { queueIsRunning(queue) } && waitUntil(timeout) { !queueIsRunning(queue) }
    }

    /// The JACK frame at which the first frame played.
    var startDeviceFrame: Int64 { ExampleSupport.startDeviceFrame(queue) }

    /// The JACK frame time now.
    var deviceFrameNow: Int64 {
        var now = AudioTimeStamp()
        AudioQueueDeviceGetCurrentTime(queue, &now)
        return Int64(now.mSampleTime)
    }

    private var disposed = false

    /// Disposes of the queue (once; later calls do nothing).
    func dispose() {
        if !disposed { AudioQueueDispose(queue, true) }
        disposed = true
    }

    private func refill(_ queue: AudioQueueRef, _ buffer: AudioQueueBufferRef) {
        let frames = source.count / channels
        let (start, count) = position.withLock { position -> (Int, Int) in
            let start = position
            position = min(frames, position + framesPerBuffer)
            return (start, position - start)
        }
        guard count > 0 else {
            AudioQueueStop(queue, false)
            return
        }
        source.withUnsafeBytes { bytes in
            buffer.pointee.mAudioData.copyMemory(from: bytes.baseAddress! + start * channels * 2, byteCount: count * channels * 2)
        }
        buffer.pointee.mAudioDataByteSize = UInt32(count * channels * 2)
        AudioQueueEnqueueBuffer(queue, buffer, 0, nil)
    }
}

/// Records float samples with an input queue: the independent recorder of PlayFile's ports.
final class QueueRecorder: @unchecked Sendable {
    let channels: Int
    private(set) var queue: AudioQueueRef!
    private let samples = Mutex<[Float]>([])

    init(server: JackServer, channels: Int, name: String) throws {
        self.channels = channels
        var format = AudioStreamBasicDescription(
            mSampleRate: 0, mFormatID: kAudioFormatLinearPCM,
            mFormatFlags: kAudioFormatFlagIsFloat | kAudioFormatFlagIsPacked,
            mBytesPerPacket: UInt32(4 * channels), mFramesPerPacket: 1, mBytesPerFrame: UInt32(4 * channels),
            mChannelsPerFrame: UInt32(channels), mBitsPerChannel: 32, mReserved: 0)
        let user = Unmanaged.passUnretained(self).toOpaque()
        queue = try makeQueue(on: server, name: name) {
            AudioQueueNewInput(&format, { user, queue, buffer, _, _, _ in
                let recorder = Unmanaged<QueueRecorder>.fromOpaque(user!).takeUnretainedValue()
                let count = Int(buffer.pointee.mAudioDataByteSize) / 4
                let data = buffer.pointee.mAudioData.assumingMemoryBound(to: Float.self)
                recorder.samples.withLock { $0.append(contentsOf: UnsafeBufferPointer(start: data, count: count)) }
                AudioQueueEnqueueBuffer(queue, buffer, 0, nil)
            }, user, nil, nil, 0, $0, device: $1)
        }
        for _ in 0..<4 {
            var buffer: AudioQueueBufferRef?
            try #require(AudioQueueAllocateBuffer(queue, UInt32(8192 * 4 * channels), &buffer) == noErr)
            try #require(AudioQueueEnqueueBuffer(queue, buffer!, 0, nil) == noErr)
        }
    }

    /// The queue's ports, comma-separated: what PlayFile's --device takes.
    var ports: String { queueString(queue, kAudioQueueProperty_JACKPortNames) }

    /// Starts and waits until the device has started recording.
    func start() throws {
        try #require(AudioQueueStart(queue, nil) == noErr)
        try #require(waitUntil(5) { queueIsRunning(queue) }, "the test's input queue did not start")
    }

    /// Stop(false): everything captured is delivered; returns the recording.
    func stop() throws -> [Float] {
        try #require(AudioQueueStop(queue, false) == noErr)
        try #require(waitUntil(10) { !queueIsRunning(queue) }, "the test's input queue did not stop")
        return samples.withLock { $0 }
    }

    /// The JACK frame at which the first recorded frame was captured.
    var startDeviceFrame: Int64 { ExampleSupport.startDeviceFrame(queue) }

    private var disposed = false

    /// Disposes of the queue (once; later calls do nothing).
    func dispose() {
        if !disposed { AudioQueueDispose(queue, true) }
        disposed = true
    }
}
