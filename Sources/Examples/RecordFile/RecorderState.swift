import AudioToolbox

// "Recording Audio" (Audio Queue Services Programming Guide), Listings 2-1 to 2-7, in Swift.
// The program itself (Listings 2-8 to 2-15) is in main.swift. The numbered comments are the
// guide's; lines marked "jaq:" are what this port adds or changes, and why.

// Listing 2-1  A custom structure for a recording audio queue

let kNumberBuffers = 3                                                  // 1
struct AQRecorderState {
    var mDataFormat = AudioStreamBasicDescription()                     // 2
    var mQueue: AudioQueueRef?                                          // 3
    var mBuffers = [AudioQueueBufferRef?](repeating: nil, count: kNumberBuffers) // 4
    var mAudioFile: AudioFileID?                                        // 5
    var bufferByteSize: UInt32 = 0                                      // 6
    var mCurrentPacket: Int64 = 0                                       // 7
    var mIsRunning = false                                              // 8
}

// Listing 2-2  The recording audio queue callback declaration, and
// Listing 2-5  A recording audio queue callback function (2-3 writes, 2-4 enqueues).
//
// jaq: a global function, so Swift passes it as the C function pointer AudioQueueInputCallback.
// The queue calls it on its own thread (Listing 2-9 passes no run loop).

func HandleInputBuffer(
    _ aqData: UnsafeMutableRawPointer?,                                 // 1
    _ inAQ: AudioQueueRef,                                              // 2
    _ inBuffer: AudioQueueBufferRef,                                    // 3
    _ inStartTime: UnsafePointer<AudioTimeStamp>,                       // 4
    _ inNumPackets: UInt32,                                             // 5
    _ inPacketDesc: UnsafePointer<AudioStreamPacketDescription>?        // 6
) {
    let pAqData = aqData!.assumingMemoryBound(to: AQRecorderState.self) // 1
    var inNumPackets = inNumPackets

    if inNumPackets == 0 && pAqData.pointee.mDataFormat.mBytesPerPacket != 0 { // 2
        inNumPackets = inBuffer.pointee.mAudioDataByteSize / pAqData.pointee.mDataFormat.mBytesPerPacket
    }

    if AudioFileWritePackets(                                           // 3 (Listing 2-3)
        pAqData.pointee.mAudioFile!,
        false,
        inBuffer.pointee.mAudioDataByteSize,
        inPacketDesc,
        pAqData.pointee.mCurrentPacket,
        &inNumPackets,
        inBuffer.pointee.mAudioData
    ) == noErr {
        pAqData.pointee.mCurrentPacket += Int64(inNumPackets)           // 4
    }
    if pAqData.pointee.mIsRunning == false {                            // 5
        return
    }

    AudioQueueEnqueueBuffer(                                            // 6 (Listing 2-4)
        pAqData.pointee.mQueue!,
        inBuffer,
        0,
        nil
    )
}

// Listing 2-6  Deriving a recording audio queue buffer size

func DeriveBufferSize(
    _ audioQueue: AudioQueueRef,                                        // 1
    _ ASBDescription: AudioStreamBasicDescription,                      // 2
    _ seconds: Float64,                                                 // 3
    _ outBufferSize: inout UInt32                                       // 4
) {
    let maxBufferSize = 0x50000                                         // 5

    var maxPacketSize = Int32(ASBDescription.mBytesPerPacket)           // 6
    if maxPacketSize == 0 {                                             // 7
        var maxVBRPacketSize = UInt32(MemoryLayout.size(ofValue: maxPacketSize))
        AudioQueueGetProperty(
            audioQueue,
            kAudioQueueProperty_MaximumOutputPacketSize,
            // in Mac OS X v10.5, instead use
            //   kAudioConverterPropertyMaximumOutputPacketSize
            &maxPacketSize,
            &maxVBRPacketSize
        )
    }

    let numBytesForTime =
        ASBDescription.mSampleRate * Float64(maxPacketSize) * seconds   // 8
    outBufferSize =
        UInt32(numBytesForTime < Float64(maxBufferSize) ?
            numBytesForTime : Float64(maxBufferSize))                   // 9
}

// Listing 2-7  Setting a magic cookie for an audio file

@discardableResult
func SetMagicCookieForFile(
    _ inQueue: AudioQueueRef,                                           // 1
    _ inFile: AudioFileID                                               // 2
) -> OSStatus {
    var result = noErr                                                  // 3
    var cookieSize: UInt32 = 0                                          // 4

    if AudioQueueGetPropertySize(                                       // 5
        inQueue,
        kAudioQueueProperty_MagicCookie,
        &cookieSize
    ) == noErr {
        let magicCookie = UnsafeMutableRawPointer.allocate(             // 6
            byteCount: Int(cookieSize), alignment: 1)
        if AudioQueueGetProperty(                                       // 7
            inQueue,
            kAudioQueueProperty_MagicCookie,
            magicCookie,
            &cookieSize
        ) == noErr {
            result = AudioFileSetProperty(                              // 8
                inFile,
                kAudioFilePropertyMagicCookieData,
                cookieSize,
                magicCookie
            )
        }
        magicCookie.deallocate()                                        // 9
    }
    return result                                                       // 10
}
