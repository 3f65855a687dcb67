import AudioToolbox
import Glibc

// Recorder: Example 6-10 of "iPhone Open Application Development" (recorder.c, section 6.5.7),
// ported to Swift line by line. It records 16-bit stereo big-endian AIFF at 44100 Hz from the
// microphone — here, the JACK server's capture ports — for the duration given on the command
// line. The C original is in ../recorder-c/recorder.c.
//
//   Recorder <filename> <duration> [--device <ports>]
//
// What differs from the book:
// - The book has two bugs. The callback declares `unsigned long frameSize` where the API passes
//   a UInt32 packet count, and hands `&frameSize` to AudioFileWritePackets, which takes a
//   `UInt32 *` (on a 64-bit machine it writes half of the variable). Swift checks the callback's
//   type against AudioQueueInputCallback, so the port declares `frameSize: UInt32`. And the
//   text before the listing (6.5.6) creates the file into `&aqc.mAudioFile`, a field the
//   structure does not have (it is `outputFile`); Example 6-10 itself, like this port, uses
//   `outputFile`. So ../recorder-c/recorder.c is Example 6-10 with one line changed: the
//   callback's `UInt32 frameSize`.
// - `--device` (or the JAQ_DEVICE environment variable) names the JACK ports to record from
//   (kAudioQueueProperty_CurrentDevice); without it the queue records from "system", the
//   server's capture ports, as the book's program records from the microphone.
// - As in the book, the duration is whole seconds (`tv.tv_sec = atof(argv[2])` truncates) and
//   the program checks no result code.
// - In Swift the structure lives on the heap: `&aqc` is valid only during one call, and the
//   queue keeps the pointer.

let AUDIO_BUFFERS = 3

struct AQCallbackStruct {
    var mDataFormat = AudioStreamBasicDescription()
    var queue: AudioQueueRef?
    var mBuffers = [AudioQueueBufferRef?](repeating: nil, count: AUDIO_BUFFERS)
    var outputFile: AudioFileID?
    var frameSize: UInt = 0                 // unsigned long
    var recPtr: Int64 = 0                   // long long
    var run: Int32 = 0                      // int
}

func AQInputCallback(
    _ aqr: UnsafeMutableRawPointer?,
    _ inQ: AudioQueueRef,
    _ inQB: AudioQueueBufferRef,
    _ timestamp: UnsafePointer<AudioTimeStamp>,
    _ frameSize: UInt32,                    // the book: unsigned long frameSize
    _ mDataFormat: UnsafePointer<AudioStreamPacketDescription>?
) {
    let aqc = aqr!.assumingMemoryBound(to: AQCallbackStruct.self)
    var frameSize = frameSize

    /* Write data to file */
    if AudioFileWritePackets(aqc.pointee.outputFile!, false, inQB.pointee.mAudioDataByteSize,
                             mDataFormat, aqc.pointee.recPtr, &frameSize, inQB.pointee.mAudioData) == noErr {
        aqc.pointee.recPtr += Int64(frameSize)
    }

    /* Don't re-queue the sound buffers if we're supposed to stop recording */
    if aqc.pointee.run == 0 {
        return
    }

    AudioQueueEnqueueBuffer(aqc.pointee.queue!, inQB, 0, nil)
}

// int main(int argc, char *argv[])

let argv = CommandLine.arguments
let aqc = UnsafeMutablePointer<AQCallbackStruct>.allocate(capacity: 1)
aqc.initialize(to: AQCallbackStruct())
var fileFormat: AudioFileTypeID
var filename: CFURL?
var tv = timeval()

if argv.count < 3 {
    _ = "Syntax: \(argv[0]) [filename] [duration]".withCString { write(STDERR_FILENO, $0, strlen($0)) }
    exit(EXIT_FAILURE)
}

aqc.pointee.mDataFormat.mFormatID = kAudioFormatLinearPCM
aqc.pointee.mDataFormat.mSampleRate = 44100.0
aqc.pointee.mDataFormat.mChannelsPerFrame = 2
aqc.pointee.mDataFormat.mBitsPerChannel = 16
aqc.pointee.mDataFormat.mBytesPerFrame =
    aqc.pointee.mDataFormat.mChannelsPerFrame * UInt32(MemoryLayout<CShort>.size)
aqc.pointee.mDataFormat.mBytesPerPacket = aqc.pointee.mDataFormat.mBytesPerFrame
aqc.pointee.mDataFormat.mFramesPerPacket = 1
aqc.pointee.mDataFormat.mFormatFlags =
    kLinearPCMFormatFlagIsBigEndian
    | kLinearPCMFormatFlagIsSignedInteger
    | kLinearPCMFormatFlagIsPacked
aqc.pointee.frameSize = 735

AudioQueueNewInput(&aqc.pointee.mDataFormat, AQInputCallback, aqc, nil,
                   CFRunLoopMode.commonModes.rawValue, 0, &aqc.pointee.queue)

// jaq: the ports to record from: --device <ports> after the two arguments, else $JAQ_DEVICE.
let device = argv.count >= 5 && argv[3] == "--device" ? argv[4] : getenv("JAQ_DEVICE").map { String(cString: $0) }
if let device {
    var target: CFString? = CFString.make(device)
    withUnsafePointer(to: &target) {
        _ = AudioQueueSetProperty(aqc.pointee.queue!, kAudioQueueProperty_CurrentDevice, $0,
                                  UInt32(MemoryLayout<CFString?>.size))
    }
}

/* Create output file */

fileFormat = kAudioFileAIFFType
filename = CFURLCreateFromFileSystemRepresentation(nil, argv[1], CFIndex(strlen(argv[1])), false)

AudioFileCreateWithURL(
    filename!,
    fileFormat,
    &aqc.pointee.mDataFormat,
    .eraseFile,
    &aqc.pointee.outputFile
)

/* Initialize the recording buffers */

for i in 0..<AUDIO_BUFFERS {
    AudioQueueAllocateBuffer(aqc.pointee.queue!, UInt32(aqc.pointee.frameSize), &aqc.pointee.mBuffers[i])
    AudioQueueEnqueueBuffer(aqc.pointee.queue!, aqc.pointee.mBuffers[i]!, 0, nil)
}

aqc.pointee.recPtr = 0
aqc.pointee.run = 1

AudioQueueStart(aqc.pointee.queue!, nil)

/* Hang around for a while while the recording takes place */

tv.tv_sec = Int(atof(argv[2]))
tv.tv_usec = 0
select(0, nil, nil, nil, &tv)

/* Shut down recording */

AudioQueueStop(aqc.pointee.queue!, true)
aqc.pointee.run = 0

AudioQueueDispose(aqc.pointee.queue!, true)
AudioFileClose(aqc.pointee.outputFile!)

exit(EXIT_SUCCESS)
