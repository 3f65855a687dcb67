import AudioToolbox
import ExampleSupport
import Glibc

// PlayFile: the playing-audio guide's player (Listings 3-8 to 3-18; 3-1 to 3-7 are in
// PlayerState.swift). Plays an audio file to the JACK server's playback ports, or to
// the ports --device names (kAudioQueueProperty_CurrentDevice: a port, comma-separated
// ports, a regular expression, or "system").
//
//   PlayFile <audio file> [--device <ports>]

let arguments = Arguments(usage: "<audio file> [--device <JACK ports>]", count: 1, optionNames: ["device"])
let filePath = arguments.positional[0]

// Listing 3-8  Obtaining a CFURL object for an audio file

let audioFileURL = CFURLCreateFromFileSystemRepresentation(            // 1
    nil,                                                                // 2
    filePath,                                                           // 3
    CFIndex(strlen(filePath)),                                          // 4
    false                                                               // 5
)!

// Listing 3-9  Opening an audio file for playback
//
// jaq: the state lives on the heap, not on the stack as `AQPlayerState aqData;` does in C:
// Swift's `&aqData` is valid only during one call, and the queue keeps the pointer.

let aqData = UnsafeMutablePointer<AQPlayerState>.allocate(capacity: 1) // 1
aqData.initialize(to: AQPlayerState())

let result = AudioFileOpenURL(                                          // 2
    audioFileURL,                                                       // 3
    .readPermission,                                                    // 4 (fsRdPerm)
    0,                                                                  // 5
    &aqData.pointee.mAudioFile                                          // 6
)
// 7: CFRelease(audioFileURL) — Swift releases the URL itself (CFRelease is unavailable in Swift).
checkError(result, "cannot open \(filePath)")

// Listing 3-10  Obtaining a file's audio data format

var dataFormatSize = UInt32(MemoryLayout<AudioStreamBasicDescription>.size) // 1
checkError(
    AudioFileGetProperty(                                               // 2
        aqData.pointee.mAudioFile!,                                     // 3
        kAudioFilePropertyDataFormat,                                   // 4
        &dataFormatSize,                                                // 5
        &aqData.pointee.mDataFormat                                     // 6
    ), "cannot read the data format of \(filePath)")

// Listing 3-11  Creating a playback audio queue

checkError(
    AudioQueueNewOutput(                                                // 1
        &aqData.pointee.mDataFormat,                                    // 2
        HandleOutputBuffer,                                             // 3
        aqData,                                                         // 4
        CFRunLoopGetCurrent(),                                          // 5
        CFRunLoopMode.commonModes.rawValue,                             // 6
        0,                                                              // 7
        &aqData.pointee.mQueue                                          // 8
    ), "cannot create a playback queue for \(filePath)")
// jaq: from here on, a failure closes the queue's JACK client before the program exits.
queueToDisposeOnFailure = aqData.pointee.mQueue

// jaq: where the queue plays (the default is "system", the server's playback ports).
if let device = arguments.options["device"] { setCurrentDevice(aqData.pointee.mQueue!, device) }

// Listing 3-12  Setting playback audio queue buffer size and number of packets to read

var maxPacketSize: UInt32 = 0
var propertySize = UInt32(MemoryLayout.size(ofValue: maxPacketSize))
AudioFileGetProperty(                                                   // 1
    aqData.pointee.mAudioFile!,                                         // 2
    kAudioFilePropertyPacketSizeUpperBound,                             // 3
    &propertySize,                                                      // 4
    &maxPacketSize                                                      // 5
)

DeriveBufferSize(                                                       // 6
    aqData.pointee.mDataFormat,                                         // 7
    maxPacketSize,                                                      // 8
    0.5,                                                                // 9
    &aqData.pointee.bufferByteSize,                                     // 10
    &aqData.pointee.mNumPacketsToRead                                   // 11
)

// Listing 3-13  Allocating memory for a packet descriptions array

let isFormatVBR =                                                       // 1
    aqData.pointee.mDataFormat.mBytesPerPacket == 0 || aqData.pointee.mDataFormat.mFramesPerPacket == 0

if isFormatVBR {                                                        // 2
    aqData.pointee.mPacketDescs = .allocate(capacity: Int(aqData.pointee.mNumPacketsToRead))
} else {                                                                // 3
    aqData.pointee.mPacketDescs = nil
}

// Listing 3-14  Setting a magic cookie for a playback audio queue

var cookieSize = UInt32(MemoryLayout<UInt32>.size)                      // 1
let couldNotGetProperty =                                               // 2
    AudioFileGetPropertyInfo(                                           // 3
        aqData.pointee.mAudioFile!,                                     // 4
        kAudioFilePropertyMagicCookieData,                              // 5
        &cookieSize,                                                    // 6
        nil                                                             // 7
    ) != noErr

if !couldNotGetProperty && cookieSize != 0 {                            // 8
    let magicCookie = UnsafeMutableRawPointer.allocate(byteCount: Int(cookieSize), alignment: 1)

    AudioFileGetProperty(                                               // 9
        aqData.pointee.mAudioFile!,                                     // 10
        kAudioFilePropertyMagicCookieData,                              // 11
        &cookieSize,                                                    // 12
        magicCookie                                                     // 13
    )

    AudioQueueSetProperty(                                              // 14
        aqData.pointee.mQueue!,                                         // 15
        kAudioQueueProperty_MagicCookie,                                // 16
        magicCookie,                                                    // 17
        cookieSize                                                      // 18
    )

    magicCookie.deallocate()                                            // 19
}

// Listing 3-15  Allocating and priming audio queue buffers for playback
//
// jaq: the guide sets mIsRunning only in Listing 3-17, after this; but HandleOutputBuffer
// returns at once while it is false (Listing 3-6, step 2), so the priming calls would
// enqueue nothing, and the queue would start with no audio and never call back.
// It is set here, before priming.

aqData.pointee.mCurrentPacket = 0                                       // 1
aqData.pointee.mIsRunning = true

for i in 0..<kNumberBuffers {                                           // 2
    checkError(
        AudioQueueAllocateBuffer(                                       // 3
            aqData.pointee.mQueue!,                                     // 4
            aqData.pointee.bufferByteSize,                              // 5
            &aqData.pointee.mBuffers[i]                                 // 6
        ), "cannot allocate a \(aqData.pointee.bufferByteSize)-byte buffer")

    HandleOutputBuffer(                                                 // 7
        aqData,                                                         // 8
        aqData.pointee.mQueue!,                                         // 9
        aqData.pointee.mBuffers[i]!                                     // 10
    )
}

// jaq: a file without audio leaves nothing enqueued, and the queue would never call back to stop.
if aqData.pointee.mCurrentPacket == 0 { fail("\(filePath) holds no audio") }

// Listing 3-16  Setting an audio queue's playback gain

let gain: Float32 = 1.0                                                 // 1
    // Optionally, allow user to override gain setting here
AudioQueueSetParameter(                                                 // 2
    aqData.pointee.mQueue!,                                             // 3
    kAudioQueueParam_Volume,                                            // 4
    gain                                                                // 5
)

// Listing 3-17  Starting and running an audio queue

aqData.pointee.mIsRunning = true                                        // 1

checkError(
    AudioQueueStart(                                                    // 2
        aqData.pointee.mQueue!,                                         // 3
        nil                                                             // 4
    ), "cannot start playing")
print("\(programName): playing \(filePath) on \(queueString(aqData.pointee.mQueue!, kAudioQueueProperty_JACKPortNames))"
      + " -> \(queueString(aqData.pointee.mQueue!, kAudioQueueProperty_JACKConnectedPorts))")

repeat {                                                                // 5
    CFRunLoopRunInMode(                                                 // 6
        CFRunLoopMode.defaultMode,                                      // 7
        0.25,                                                           // 8
        false                                                           // 9
    )
} while aqData.pointee.mIsRunning && !deviceIsGone(aqData.pointee.mQueue!)

CFRunLoopRunInMode(                                                     // 10
    CFRunLoopMode.defaultMode,
    1,
    false
)
// jaq: as on Apple platforms, a buffer comes back to the callback once the queue has played it,
// so when the callback finds the end of the file only the other two buffers (at most a second)
// are left to play, and this second covers them (Docs/queues.md, "When a buffer comes back").

// jaq: where the file started on the server's timeline (JACK frame time), for lining it up,
// and whether JACK lost cycles meanwhile.
let serverWentAway = deviceIsGone(aqData.pointee.mQueue!)
let framesPlayed = aqData.pointee.mCurrentPacket * Int64(max(aqData.pointee.mDataFormat.mFramesPerPacket, 1))
print("\(programName): played \(framesPlayed) frames from device frame \(startDeviceFrame(aqData.pointee.mQueue!))"
      + discontinuityNote(aqData.pointee.mQueue!))

// Listing 3-18  Cleaning up after playing an audio file

AudioQueueDispose(                                                      // 1
    aqData.pointee.mQueue!,                                             // 2
    true                                                                // 3
)
queueToDisposeOnFailure = nil

AudioFileClose(aqData.pointee.mAudioFile!)                              // 4

aqData.pointee.mPacketDescs?.deallocate()                               // 5

if serverWentAway { fail("the JACK server went away while playing \(filePath)") }
