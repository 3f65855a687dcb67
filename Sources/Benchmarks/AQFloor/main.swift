import AudioToolbox
import Glibc

// aq-floor-record: the least CPU a recorder built on Audio Queue Services can spend here, as a
// referee beside floor-record (Sources/Benchmarks/Floor/floor-record.c), not a tool: no
// options, no checks beyond the essential, no error recovery (issue #29).
//
// It is written the way Apple's recording samples are (Audio Queue Services Programming Guide,
// "Recording Audio"): an input queue, three buffers enqueued, and a callback that writes each
// buffer to disk on the queue's own thread and enqueues it again. What jaq record adds around
// that model is left out: the command line, the control client (server, ports, source watch),
// libsndfile, the writer thread, the once-a-second headers and `syncfs`, the meters and clip
// counts. What is left is the Swift runtime, the queue (its JACK client, realtime capture,
// ring, queue thread and hand-over of each buffer) and the kernel's writes, so the difference
// between this and floor-record is what the Audio Queue model itself costs a take; jaq record's
// difference to this is its own.
//
// Like jaq record, the queue captures one plane per track (non-interleaved) in the file's
// sample format (float as is; 24-bit converted by the queue), in buffers of 16384 frames, with
// a capture ring of 0.5 s; like floor-record, each track goes to its own WAV file with one
// `write` per buffer and a 44-byte header written again at the end.
//
//   aq-floor-record SECONDS float|24 PREFIX PORT...   ->  PREFIX-1.wav ... PREFIX-N.wav

let bufferFrames = 16384
let bufferCount = 3

/// What the callback needs; its fields are the queue thread's alone once the queue runs.
struct Take {
    var files: [Int32]
    var bytesPerSample: Int
    var wanted: Int64
    var written: Int64 = 0
    var done: UnsafeMutablePointer<sem_t>
}

/// The input callback, on the queue thread: each plane to its track's file, then the buffer
/// back to the queue, until the take has its frames.
func inputCallback(_ user: UnsafeMutableRawPointer?, _ queue: AudioQueueRef, _ buffer: AudioQueueBufferRef,
                   _ time: UnsafePointer<AudioTimeStamp>, _ packets: UInt32,
                   _ descriptions: UnsafePointer<AudioStreamPacketDescription>?) {
    let take = user!.assumingMemoryBound(to: Take.self)
    let size = take.pointee.bytesPerSample
    let frames = Int(buffer.pointee.mAudioDataByteSize) / (take.pointee.files.count * size)
    let remaining = take.pointee.wanted - take.pointee.written
    guard remaining > 0 else { return }
    let count = Int(min(Int64(frames), remaining))
    for (channel, file) in take.pointee.files.enumerated() {
        let plane = UnsafeRawPointer(buffer.pointee.mAudioData) + channel * frames * size
        if write(file, plane, count * size) != count * size {
            perror("aq-floor-record: write")
            exit(1)
        }
    }
    take.pointee.written += Int64(count)
    if take.pointee.written == take.pointee.wanted {
        sem_post(take.pointee.done)
        return
    }
    AudioQueueEnqueueBuffer(queue, buffer, 0, nil)
}

func put16(_ bytes: inout [UInt8], _ at: Int, _ value: Int) {
    for i in 0..<2 { bytes[at + i] = UInt8(truncatingIfNeeded: value >> (8 * i)) }
}

func put32(_ bytes: inout [UInt8], _ at: Int, _ value: Int) {
    for i in 0..<4 { bytes[at + i] = UInt8(truncatingIfNeeded: value >> (8 * i)) }
}

/// A 44-byte WAV header for `bytes` bytes of mono audio (floor-record's).
func header(bits: Int, rate: Int, bytes: Int) -> [UInt8] {
    var h = [UInt8](repeating: 0, count: 44)
    h.replaceSubrange(0..<4, with: Array("RIFF".utf8)); put32(&h, 4, 36 + bytes)
    h.replaceSubrange(8..<16, with: Array("WAVEfmt ".utf8))
    put32(&h, 16, 16); put16(&h, 20, bits == 32 ? 3 : 1); put16(&h, 22, 1)
    put32(&h, 24, rate); put32(&h, 28, rate * bits / 8); put16(&h, 32, bits / 8); put16(&h, 34, bits)
    h.replaceSubrange(36..<40, with: Array("data".utf8)); put32(&h, 40, bytes)
    return h
}

func fail(_ message: String, status: Int32 = 1) -> Never {
    let line = message + "\n"
    _ = line.withCString { write(STDERR_FILENO, $0, strlen($0)) }
    exit(status)
}

let arguments = CommandLine.arguments
guard arguments.count >= 5, let seconds = Double(arguments[1]) else {
    fail("usage: aq-floor-record SECONDS float|24 PREFIX PORT...", status: 2)
}
let bits = arguments[2] == "24" ? 24 : 32
let prefix = arguments[3]
let ports = Array(arguments[4...])
let size = bits / 8

var flags: AudioFormatFlags = kAudioFormatFlagIsPacked | kAudioFormatFlagIsNonInterleaved
flags |= bits == 32 ? kAudioFormatFlagIsFloat : kAudioFormatFlagIsSignedInteger
// 48 kHz, the rate of the benchmarks' servers (at another, the queue would resample).
var format = AudioStreamBasicDescription(mSampleRate: 48000, mFormatID: kAudioFormatLinearPCM, mFormatFlags: flags,
                                         mBytesPerPacket: UInt32(size), mFramesPerPacket: 1, mBytesPerFrame: UInt32(size),
                                         mChannelsPerFrame: UInt32(ports.count), mBitsPerChannel: UInt32(bits), mReserved: 0)
let done = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)
sem_init(done, 0, 0)
let take = UnsafeMutablePointer<Take>.allocate(capacity: 1)
take.initialize(to: Take(files: [], bytesPerSample: size, wanted: Int64(seconds * format.mSampleRate), done: done))

var queue: AudioQueueRef?
var status = AudioQueueNewInput(&format, inputCallback, take, nil, nil, 0, &queue,
                                device: AudioQueueDevices.jack(clientName: "aq-floor-record", connectingTo: ports.joined(separator: ",")))
guard status == noErr, let queue else { fail("aq-floor-record: cannot create the queue (\(status))") }
var ringSeconds = 0.5
AudioQueueSetProperty(queue, kAudioQueueProperty_CaptureBufferSeconds, &ringSeconds, 8)

let empty = header(bits: bits, rate: Int(format.mSampleRate), bytes: 0)
for channel in 1...ports.count {
    let path = "\(prefix)-\(channel).wav"
    let file = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    guard file >= 0, write(file, empty, 44) == 44 else { fail("aq-floor-record: \(path)") }
    take.pointee.files.append(file)
}
for _ in 0..<bufferCount {
    var buffer: AudioQueueBufferRef?
    status = AudioQueueAllocateBuffer(queue, UInt32(bufferFrames * ports.count * size), &buffer)
    guard status == noErr, let buffer else { fail("aq-floor-record: cannot allocate a buffer (\(status))") }
    AudioQueueEnqueueBuffer(queue, buffer, 0, nil)
}
status = AudioQueueStart(queue, nil)
guard status == noErr else { fail("aq-floor-record: cannot start (\(status))") }
while sem_wait(done) != 0 {}
AudioQueueStop(queue, true)
AudioQueueDispose(queue, true)

let full = header(bits: bits, rate: Int(format.mSampleRate), bytes: Int(take.pointee.written) * size)
for file in take.pointee.files {
    guard pwrite(file, full, 44, 0) == 44 else { fail("aq-floor-record: header") }
    close(file)
}
