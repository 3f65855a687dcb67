import AudioToolbox
import ExampleSupport
import Glibc

// RecordFile: the recording-audio guide's recorder (Listings 2-8 to 2-15; 2-1 to 2-7 are in
// RecorderState.swift). Records 16-bit stereo big-endian AIFF from the JACK server's capture
// ports, or from the ports --device names, for a number of seconds or until SIGINT/SIGTERM.
//
//   RecordFile <file.aif> <seconds> [--device <ports>] [--rate <Hz>]
//
// --rate is Listing 2-8's sample rate (44100 by default); 0 takes the server's rate, which
// Listing 2-10 then reads back from the queue.

let arguments = Arguments(usage: "<file.aif> <seconds> [--device <JACK ports>] [--rate <Hz, 0 for the server's>]",
                          count: 2, optionNames: ["device", "rate"])
let filePath = arguments.positional[0]
guard let seconds = Double(arguments.positional[1]), seconds > 0 else {
    fail("the duration must be a positive number of seconds, not \(arguments.positional[1])")
}
guard let sampleRate = Double(arguments.options["rate"] ?? "44100"), sampleRate >= 0 else {
    fail("the rate must be a number of Hz (0 for the server's), not \(arguments.options["rate"]!)")
}

// jaq: SIGINT and SIGTERM stop the recording. They are blocked here, before any thread
// exists, so every thread (the queue's, JACK's) inherits the mask and the main thread
// takes them with sigtimedwait below: no signal handler runs at all.
var stopSignals = sigset_t()
sigemptyset(&stopSignals)
sigaddset(&stopSignals, SIGINT)
sigaddset(&stopSignals, SIGTERM)
pthread_sigmask(SIG_BLOCK, &stopSignals, nil)

// Listing 2-8  Specifying an audio queue's audio data format
//
// jaq: the state lives on the heap, not on the stack as `AQRecorderState aqData;` does in C:
// Swift's `&aqData` is valid only during one call, and the queue keeps the pointer.

let aqData = UnsafeMutablePointer<AQRecorderState>.allocate(capacity: 1) // 1
aqData.initialize(to: AQRecorderState())

aqData.pointee.mDataFormat.mFormatID = kAudioFormatLinearPCM            // 2
aqData.pointee.mDataFormat.mSampleRate = sampleRate                     // 3 (44100.0 unless --rate)
aqData.pointee.mDataFormat.mChannelsPerFrame = 2                        // 4
aqData.pointee.mDataFormat.mBitsPerChannel = 16                         // 5
aqData.pointee.mDataFormat.mBytesPerFrame =                             // 6
    aqData.pointee.mDataFormat.mChannelsPerFrame * UInt32(MemoryLayout<Int16>.size)
aqData.pointee.mDataFormat.mBytesPerPacket = aqData.pointee.mDataFormat.mBytesPerFrame
aqData.pointee.mDataFormat.mFramesPerPacket = 1                         // 7

let fileType = kAudioFileAIFFType                                       // 8
aqData.pointee.mDataFormat.mFormatFlags =                               // 9
    kLinearPCMFormatFlagIsBigEndian
    | kLinearPCMFormatFlagIsSignedInteger
    | kLinearPCMFormatFlagIsPacked

// Listing 2-9  Creating a recording audio queue

checkError(
    AudioQueueNewInput(                                                 // 1
        &aqData.pointee.mDataFormat,                                    // 2
        HandleInputBuffer,                                              // 3
        aqData,                                                         // 4
        nil,                                                            // 5
        CFRunLoopMode.commonModes.rawValue,                             // 6
        0,                                                              // 7
        &aqData.pointee.mQueue                                          // 8
    ), "cannot create a recording queue")
// jaq: from here on, a failure closes the queue's JACK client before the program exits.
queueToDisposeOnFailure = aqData.pointee.mQueue

// jaq: where the queue records from (the default is "system", the server's capture ports).
if let device = arguments.options["device"] { setCurrentDevice(aqData.pointee.mQueue!, device) }

// Listing 2-10  Getting the audio format from an audio queue

var dataFormatSize = UInt32(MemoryLayout<AudioStreamBasicDescription>.size) // 1

AudioQueueGetProperty(                                                  // 2
    aqData.pointee.mQueue!,                                             // 3
    kAudioQueueProperty_StreamDescription,                              // 4
    // in Mac OS X, instead use
    //    kAudioConverterCurrentInputStreamDescription
    &aqData.pointee.mDataFormat,                                        // 5
    &dataFormatSize                                                     // 6
)

// Listing 2-11  Creating an audio file for recording

let audioFileURL = CFURLCreateFromFileSystemRepresentation(            // 1
    nil,                                                                // 2
    filePath,                                                           // 3
    CFIndex(strlen(filePath)),                                          // 4
    false                                                               // 5
)!

checkError(
    AudioFileCreateWithURL(                                             // 6
        audioFileURL,                                                   // 7
        fileType,                                                       // 8
        &aqData.pointee.mDataFormat,                                    // 9
        .eraseFile,                                                     // 10
        &aqData.pointee.mAudioFile                                      // 11
    ), "cannot create \(filePath)")

// The guide: call SetMagicCookieForFile (Listing 2-7) before recording and again after.
// Linear PCM has no cookie; the calls are kept for formats that do.
SetMagicCookieForFile(aqData.pointee.mQueue!, aqData.pointee.mAudioFile!)

// Listing 2-12  Setting an audio queue buffer size

DeriveBufferSize(                                                       // 1
    aqData.pointee.mQueue!,                                             // 2
    aqData.pointee.mDataFormat,                                         // 3
    0.5,                                                                // 4
    &aqData.pointee.bufferByteSize                                      // 5
)

// Listing 2-13  Preparing a set of audio queue buffers

for i in 0..<kNumberBuffers {                                           // 1
    checkError(
        AudioQueueAllocateBuffer(                                       // 2
            aqData.pointee.mQueue!,                                     // 3
            aqData.pointee.bufferByteSize,                              // 4
            &aqData.pointee.mBuffers[i]                                 // 5
        ), "cannot allocate a \(aqData.pointee.bufferByteSize)-byte buffer")

    AudioQueueEnqueueBuffer(                                            // 6
        aqData.pointee.mQueue!,                                         // 7
        aqData.pointee.mBuffers[i]!,                                    // 8
        0,                                                              // 9
        nil                                                             // 10
    )
}

// Listing 2-14  Recording audio

aqData.pointee.mCurrentPacket = 0                                       // 1
aqData.pointee.mIsRunning = true                                        // 2

checkError(
    AudioQueueStart(                                                    // 3
        aqData.pointee.mQueue!,                                         // 4
        nil                                                             // 5
    ), "cannot start recording")

// Wait, on user interface thread, until user stops the recording
//
// jaq: the "user interface" says when the device has really started (IsRunning is 1), then
// waits for the duration, SIGINT/SIGTERM, or the JACK server going away.
let queue = aqData.pointee.mQueue!
while !queueIsRunning(queue) && !deviceIsGone(queue) { usleep(1000) }
let sources = queueString(queue, kAudioQueueProperty_JACKConnectedPorts)
print("\(programName): recording \(filePath) (\(aqData.pointee.mDataFormat.mChannelsPerFrame) channels, "
      + "16-bit big-endian AIFF, \(Int(aqData.pointee.mDataFormat.mSampleRate)) Hz) from "
      + (sources.isEmpty ? "nothing yet (its ports: \(queueString(queue, kAudioQueueProperty_JACKPortNames)))" : sources)
      + " for \(seconds) s; Ctrl-C stops")
fflush(nil)

var remaining = seconds
while remaining > 0 && !deviceIsGone(queue) {
    let slice = min(remaining, 0.25)
    var timeout = timespec(tv_sec: Int(slice), tv_nsec: Int((slice - slice.rounded(.down)) * 1e9))
    var before = timespec()
    clock_gettime(CLOCK_MONOTONIC, &before)
    if sigtimedwait(&stopSignals, nil, &timeout) > 0 { break }
    var after = timespec()
    clock_gettime(CLOCK_MONOTONIC, &after)
    remaining -= Double(after.tv_sec - before.tv_sec) + Double(after.tv_nsec - before.tv_nsec) / 1e9
}
let serverWentAway = deviceIsGone(queue)

AudioQueueStop(                                                         // 6
    aqData.pointee.mQueue!,                                             // 7
    true                                                                // 8
)

aqData.pointee.mIsRunning = false                                       // 9

SetMagicCookieForFile(aqData.pointee.mQueue!, aqData.pointee.mAudioFile!)

// jaq: what was recorded, where it starts on the server's timeline (JACK frame time), and
// whether JACK lost cycles meanwhile.
let framesRecorded = aqData.pointee.mCurrentPacket
print("\(programName): recorded \(framesRecorded) frames "
      + "(\((Double(framesRecorded) / aqData.pointee.mDataFormat.mSampleRate * 1000).rounded() / 1000) s) "
      + "from device frame \(startDeviceFrame(queue))" + discontinuityNote(queue))

// Listing 2-15  Cleaning up after recording

AudioQueueDispose(                                                      // 1
    aqData.pointee.mQueue!,                                             // 2
    true                                                                // 3
)
queueToDisposeOnFailure = nil

checkError(AudioFileClose(aqData.pointee.mAudioFile!), "cannot finish \(filePath)") // 4

if serverWentAway { fail("the JACK server went away; \(filePath) holds what was recorded until then") }
