import AudioToolbox
import Glibc

// aq-floor-play: the least CPU a file player built on Audio Queue Services can spend here, as a
// referee beside floor-play (Sources/Benchmarks/Floor/floor-play.c), not a tool: no options, no
// checks beyond the essential, no error recovery (issue #29).
//
// It plays the way the Audio Queue Services Programming Guide's "Playing Audio" does (the
// PlayFile example): the file opened with Audio File Services, an output queue in the file's
// format, three buffers, and a callback that reads the next packets into each buffer and
// enqueues it again, stopping the queue at the end of the file. What jaq play adds around that
// model is left out: the command line, the control client, the decode ring's size, the main
// loop's status. Buffers hold 16384 frames (the guide's DeriveBufferSize would cap them at
// 320 KiB, a tenth of that at 64 channels); the queue plays to the server's playback ports.
// So the difference between this and floor-play is what the model costs a playback, and
// jaq play's difference to this is its own.
//
//   aq-floor-play FILE

let bufferFrames = 16384
let bufferCount = 3

struct Player {
    var file: AudioFileID
    var packet: Int64 = 0
    var packetsPerBuffer: UInt32
    var stopped: UnsafeMutablePointer<sem_t>
}

/// The output callback, on the queue thread: the next packets into the buffer, or the queue
/// stopped (after what is enqueued has played) at the end of the file.
func outputCallback(_ user: UnsafeMutableRawPointer?, _ queue: AudioQueueRef, _ buffer: AudioQueueBufferRef) {
    let player = user!.assumingMemoryBound(to: Player.self)
    var bytes = buffer.pointee.mAudioDataBytesCapacity
    var packets = player.pointee.packetsPerBuffer
    AudioFileReadPacketData(player.pointee.file, false, &bytes, nil, player.pointee.packet, &packets, buffer.pointee.mAudioData)
    guard packets > 0 else {
        AudioQueueStop(queue, false)
        return
    }
    buffer.pointee.mAudioDataByteSize = bytes
    AudioQueueEnqueueBuffer(queue, buffer, 0, nil)
    player.pointee.packet += Int64(packets)
}

/// Posts the semaphore when the queue has stopped running (its last buffer played).
func runningChanged(_ user: UnsafeMutableRawPointer?, _ queue: AudioQueueRef, _ property: AudioQueuePropertyID) {
    var running: UInt32 = 1
    var size = UInt32(4)
    AudioQueueGetProperty(queue, kAudioQueueProperty_IsRunning, &running, &size)
    if running == 0 { sem_post(user!.assumingMemoryBound(to: Player.self).pointee.stopped) }
}

func fail(_ message: String, status: Int32 = 1) -> Never {
    let line = message + "\n"
    _ = line.withCString { write(STDERR_FILENO, $0, strlen($0)) }
    exit(status)
}

let arguments = CommandLine.arguments
guard arguments.count == 2 else { fail("usage: aq-floor-play FILE", status: 2) }
let path = arguments[1]
let url = CFURLCreateFromFileSystemRepresentation(nil, path, CFIndex(strlen(path)), false)!
var file: AudioFileID?
var status = AudioFileOpenURL(url, .readPermission, 0, &file)
guard status == noErr, let file else { fail("aq-floor-play: \(path): cannot open (\(status))") }
var format = AudioStreamBasicDescription()
var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
AudioFileGetProperty(file, kAudioFilePropertyDataFormat, &size, &format)

let stopped = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)
sem_init(stopped, 0, 0)
let player = UnsafeMutablePointer<Player>.allocate(capacity: 1)
player.initialize(to: Player(file: file, packetsPerBuffer: UInt32(bufferFrames) / max(1, format.mFramesPerPacket), stopped: stopped))

var queue: AudioQueueRef?
status = AudioQueueNewOutput(&format, outputCallback, player, nil, nil, 0, &queue)
guard status == noErr, let queue else { fail("aq-floor-play: cannot create the queue (\(status))") }
AudioQueueAddPropertyListener(queue, kAudioQueueProperty_IsRunning, runningChanged, player)
for _ in 0..<bufferCount {
    var buffer: AudioQueueBufferRef?
    status = AudioQueueAllocateBuffer(queue, UInt32(bufferFrames) * format.mBytesPerFrame, &buffer)
    guard status == noErr, let buffer else { fail("aq-floor-play: cannot allocate a buffer (\(status))") }
    outputCallback(player, queue, buffer)
}
status = AudioQueueStart(queue, nil)
guard status == noErr else { fail("aq-floor-play: cannot start (\(status))") }
while sem_wait(stopped) != 0 {}
AudioQueueDispose(queue, true)
AudioFileClose(file)
