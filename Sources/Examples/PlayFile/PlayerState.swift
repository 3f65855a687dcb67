import AudioToolbox

// "Playing Audio" (Audio Queue Services Programming Guide), Listings 3-1 to 3-7, in Swift.
// The program itself (Listings 3-8 to 3-18) is in main.swift. The numbered comments are the
// guide's; lines marked "jaq:" are what this port adds or changes, and why.

// Listing 3-1  A custom structure for a playback audio queue

let kNumberBuffers = 3                                                  // 1
struct AQPlayerState {
    var mDataFormat = AudioStreamBasicDescription()                     // 2
    var mQueue: AudioQueueRef?                                          // 3
    var mBuffers = [AudioQueueBufferRef?](repeating: nil, count: kNumberBuffers) // 4
    var mAudioFile: AudioFileID?                                        // 5
    var bufferByteSize: UInt32 = 0                                      // 6
    var mCurrentPacket: Int64 = 0                                       // 7
    var mNumPacketsToRead: UInt32 = 0                                   // 8
    var mPacketDescs: UnsafeMutablePointer<AudioStreamPacketDescription>? // 9
    var mIsRunning = false                                              // 10
}

// Listing 3-2  The playback audio queue callback declaration, and
// Listing 3-6  A playback audio queue callback function (3-3 reads, 3-4 enqueues, 3-5 stops).
//
// jaq: a global function, so Swift passes it as the C function pointer AudioQueueOutputCallback.
// The queue calls it on the run loop given to AudioQueueNewOutput (Listing 3-11): the main thread.

func HandleOutputBuffer(
    _ aqData: UnsafeMutableRawPointer?,                                 // 1
    _ inAQ: AudioQueueRef,                                              // 2
    _ inBuffer: AudioQueueBufferRef                                     // 3
) {
    let pAqData = aqData!.assumingMemoryBound(to: AQPlayerState.self)   // 1
    if pAqData.pointee.mIsRunning == false { return }                   // 2
    // jaq: AudioFileReadPackets, which the guide calls, is deprecated; AudioFileReadPacketData
    // is the same call except that the byte count is also an input: the buffer's capacity.
    var numBytesReadFromFile = inBuffer.pointee.mAudioDataBytesCapacity // 3
    var numPackets = pAqData.pointee.mNumPacketsToRead                  // 4
    AudioFileReadPacketData(                                            // Listing 3-3
        pAqData.pointee.mAudioFile!,
        false,
        &numBytesReadFromFile,
        pAqData.pointee.mPacketDescs,
        pAqData.pointee.mCurrentPacket,
        &numPackets,
        inBuffer.pointee.mAudioData
    )
    if numPackets > 0 {                                                 // 5
        inBuffer.pointee.mAudioDataByteSize = numBytesReadFromFile      // 6
        AudioQueueEnqueueBuffer(                                        // Listing 3-4
            pAqData.pointee.mQueue!,
            inBuffer,
            pAqData.pointee.mPacketDescs != nil ? numPackets : 0,
            pAqData.pointee.mPacketDescs
        )
        pAqData.pointee.mCurrentPacket += Int64(numPackets)             // 7
    } else {
        AudioQueueStop(                                                 // Listing 3-5
            pAqData.pointee.mQueue!,
            false
        )
        pAqData.pointee.mIsRunning = false
    }
}

// Listing 3-7  Deriving a playback audio queue buffer size

func DeriveBufferSize(
    _ ASBDesc: AudioStreamBasicDescription,                             // 1
    _ maxPacketSize: UInt32,                                            // 2
    _ seconds: Float64,                                                 // 3
    _ outBufferSize: inout UInt32,                                      // 4
    _ outNumPacketsToRead: inout UInt32                                 // 5
) {
    let maxBufferSize: UInt32 = 0x50000                                 // 6
    let minBufferSize: UInt32 = 0x4000                                  // 7

    if ASBDesc.mFramesPerPacket != 0 {                                  // 8
        let numPacketsForTime = ASBDesc.mSampleRate / Float64(ASBDesc.mFramesPerPacket) * seconds
        outBufferSize = UInt32(numPacketsForTime * Float64(maxPacketSize))
    } else {                                                            // 9
        outBufferSize = maxBufferSize > maxPacketSize ? maxBufferSize : maxPacketSize
    }

    if outBufferSize > maxBufferSize && outBufferSize > maxPacketSize { // 10
        outBufferSize = maxBufferSize
    } else {                                                            // 11
        if outBufferSize < minBufferSize {
            outBufferSize = minBufferSize
        }
    }

    outNumPacketsToRead = outBufferSize / maxPacketSize                 // 12
}
