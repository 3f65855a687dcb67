/*
 * aqofflinerender.c — Apple's AQOfflineRenderTest (aqofflinerender.cpp, 2009) ported to C
 * for jaq, step for step: a playback queue whose callback runs on the rendering thread's
 * own run loop plays a file through ONE buffer of about a second; the queue is put in
 * offline mode with a canonical (32-bit float, interleaved) format; AudioQueueOfflineRender
 * pulls half a buffer at a time, and the callback ends the stream with AudioQueueFlush and
 * AudioQueueStop(false). It needs no audio device: with no JACK server running, the queue
 * is made all the same and renders offline, as on a Mac with no audio hardware.
 *
 *   cc aqofflinerender.c -lAudioToolbox -o aqofflinerender
 *   aqofflinerender IN OUT.caf
 *
 * What a porter changed:
 * - C for C++: CAStreamBasicDescription and CAXException are gone (plain structs, a
 *   CHECK macro that jumps to the clean-up); main() takes the two paths.
 * - AudioFileReadPacketData for the deprecated AudioFileReadPackets (cc -Werror refuses
 *   deprecated calls); it takes the buffer's capacity in ioNumBytes and reports the end of
 *   the file with kAudioFileEndOfFileError, which is the end of the data, not a failure.
 * The capture file is Apple's: a 16-bit integer CAF made by ExtAudioFileCreateWithURL, the
 * render format as its client format, written with ExtAudioFileWrite (which converts the
 * floats to 16-bit) and closed by ExtAudioFileDispose.
 */
#include <AudioToolbox/AudioToolbox.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    AudioFileID file;
    AudioStreamBasicDescription dataFormat;
    AudioQueueRef queue;
    AudioQueueBufferRef buffer;
    SInt64 currentPacket;
    UInt32 packetsToRead;
    AudioStreamPacketDescription *packetDescriptions;
    Boolean flushed;
    Boolean done;
} RenderState;

#define CHECK(call, what)                                                        \
    do {                                                                         \
        OSStatus checkStatus_ = (call);                                          \
        if (checkStatus_ != noErr) {                                             \
            fprintf(stderr, "Error: %s (%d)\n", (what), (int)checkStatus_);      \
            written = -1;                                                        \
            goto cleanUp;                                                        \
        }                                                                        \
    } while (0)

/* A buffer of about `seconds` of the file's audio, kept between 16 and 64 KiB, and the
 * packets that fit in it (as the sample's CalculateBytesForTime). */
static void BufferSizeForTime(const AudioStreamBasicDescription *format, UInt32 maxPacketSize, Float64 seconds,
                              UInt32 *outBufferSize, UInt32 *outPackets) {
    const UInt32 largest = 0x10000, smallest = 0x4000;
    if (format->mFramesPerPacket != 0) {
        *outBufferSize = (UInt32)(format->mSampleRate / format->mFramesPerPacket * seconds * maxPacketSize);
    } else {
        *outBufferSize = largest > maxPacketSize ? largest : maxPacketSize;
    }
    if (*outBufferSize > largest && *outBufferSize > maxPacketSize) {
        *outBufferSize = largest;
    } else if (*outBufferSize < smallest) {
        *outBufferSize = smallest;
    }
    *outPackets = *outBufferSize / maxPacketSize;
}

/* The queue's callback: refills the one buffer from the file; at the end, flushes and stops
 * the queue (so that everything enqueued comes out) and says so. */
static void BufferCallback(void *userData, AudioQueueRef queue, AudioQueueBufferRef buffer) {
    RenderState *state = (RenderState *)userData;
    if (state->done) return;
    UInt32 bytes = buffer->mAudioDataBytesCapacity;
    UInt32 packets = state->packetsToRead;
    OSStatus status = AudioFileReadPacketData(state->file, false, &bytes, state->packetDescriptions,
                                              state->currentPacket, &packets, buffer->mAudioData);
    if (status != noErr && status != kAudioFileEndOfFileError) {
        fprintf(stderr, "Error reading from file: %d\n", (int)status);
        exit(1);
    }
    if (packets > 0) {
        buffer->mAudioDataByteSize = bytes;
        status = AudioQueueEnqueueBuffer(queue, buffer, state->packetDescriptions ? packets : 0,
                                         state->packetDescriptions);
        if (status != noErr) {
            fprintf(stderr, "Error enqueuing buffer: %d\n", (int)status);
            exit(1);
        }
        state->currentPacket += packets;
        return;
    }
    if (!state->flushed) {
        status = AudioQueueFlush(state->queue);
        if (status != noErr) {
            fprintf(stderr, "AudioQueueFlush failed: %d\n", (int)status);
            exit(1);
        }
        state->flushed = true;
    }
    status = AudioQueueStop(state->queue, false);
    if (status != noErr) {
        fprintf(stderr, "AudioQueueStop(false) failed: %d\n", (int)status);
        exit(1);
    }
    state->done = true;
}

/* Renders the file at sourceURL offline into a CAF at destinationURL; returns the frames
 * written, or -1. */
static SInt64 DoAQOfflineRender(CFURLRef sourceURL, CFURLRef destinationURL) {
    RenderState state;
    memset(&state, 0, sizeof state);
    AudioChannelLayout *layout = NULL;
    ExtAudioFileRef captureFile = NULL;
    SInt64 written = -1;

    CHECK(AudioFileOpenURL(sourceURL, kAudioFileReadPermission, 0, &state.file), "AudioFileOpen failed");
    UInt32 size = sizeof state.dataFormat;
    CHECK(AudioFileGetProperty(state.file, kAudioFilePropertyDataFormat, &size, &state.dataFormat),
          "couldn't get file's data format");
    printf("File format: %u ch, %.0f Hz, '%c%c%c%c'\n", (unsigned)state.dataFormat.mChannelsPerFrame,
           state.dataFormat.mSampleRate, (char)(state.dataFormat.mFormatID >> 24), (char)(state.dataFormat.mFormatID >> 16),
           (char)(state.dataFormat.mFormatID >> 8), (char)state.dataFormat.mFormatID);

    /* The callback runs on this thread's run loop, which nobody runs while we render. */
    CHECK(AudioQueueNewOutput(&state.dataFormat, BufferCallback, &state, CFRunLoopGetCurrent(), kCFRunLoopCommonModes,
                              0, &state.queue), "AudioQueueNew failed");

    UInt32 bufferByteSize;
    {
        Boolean isVBR = state.dataFormat.mBytesPerPacket == 0 || state.dataFormat.mFramesPerPacket == 0;
        UInt32 maxPacketSize;
        size = sizeof maxPacketSize;
        CHECK(AudioFileGetProperty(state.file, kAudioFilePropertyPacketSizeUpperBound, &size, &maxPacketSize),
              "couldn't get file's max packet size");
        BufferSizeForTime(&state.dataFormat, maxPacketSize, 1.0, &bufferByteSize, &state.packetsToRead);
        if (isVBR) state.packetDescriptions = calloc(state.packetsToRead, sizeof(AudioStreamPacketDescription));
        printf("Buffer Byte Size: %u, Num Packets to Read: %u\n", (unsigned)bufferByteSize, (unsigned)state.packetsToRead);
    }

    /* The file's magic cookie, if it has one, goes to the queue. */
    size = sizeof(UInt32);
    if (AudioFileGetPropertyInfo(state.file, kAudioFilePropertyMagicCookieData, &size, NULL) == noErr && size > 0) {
        void *cookie = malloc(size);
        CHECK(cookie == NULL ? kAudio_MemFullError : noErr, "malloc");
        OSStatus status = AudioFileGetProperty(state.file, kAudioFilePropertyMagicCookieData, &size, cookie);
        if (status == noErr) status = AudioQueueSetProperty(state.queue, kAudioQueueProperty_MagicCookie, cookie, size);
        free(cookie);
        CHECK(status, "set cookie on queue");
    }

    /* And its channel layout, if it has one. */
    if (AudioFileGetPropertyInfo(state.file, kAudioFilePropertyChannelLayout, &size, NULL) == noErr && size > 0) {
        layout = malloc(size);
        CHECK(layout == NULL ? kAudio_MemFullError : noErr, "malloc");
        CHECK(AudioFileGetProperty(state.file, kAudioFilePropertyChannelLayout, &size, layout), "get audio file's channel layout");
        CHECK(AudioQueueSetProperty(state.queue, kAudioQueueProperty_ChannelLayout, layout, size), "set channel layout on queue");
    }

    CHECK(AudioQueueAllocateBuffer(state.queue, bufferByteSize, &state.buffer), "AudioQueueAllocateBuffer");

    /* The canonical capture format: 32-bit float, interleaved, the file's rate and channels. */
    AudioStreamBasicDescription captureFormat;
    memset(&captureFormat, 0, sizeof captureFormat);
    captureFormat.mSampleRate = state.dataFormat.mSampleRate;
    captureFormat.mFormatID = kAudioFormatLinearPCM;
    captureFormat.mFormatFlags = kAudioFormatFlagIsFloat | kAudioFormatFlagIsPacked;
    captureFormat.mChannelsPerFrame = state.dataFormat.mChannelsPerFrame;
    captureFormat.mBitsPerChannel = 32;
    captureFormat.mBytesPerFrame = captureFormat.mBytesPerPacket = 4 * captureFormat.mChannelsPerFrame;
    captureFormat.mFramesPerPacket = 1;
    CHECK(AudioQueueSetOfflineRenderFormat(state.queue, &captureFormat, layout), "set offline render format");

    /* The file: 16-bit integers (little-endian), the file's rate and channels. */
    AudioStreamBasicDescription dstFormat;
    memset(&dstFormat, 0, sizeof dstFormat);
    dstFormat.mSampleRate = state.dataFormat.mSampleRate;
    dstFormat.mChannelsPerFrame = state.dataFormat.mChannelsPerFrame;
    dstFormat.mFormatID = kAudioFormatLinearPCM;
    dstFormat.mFormatFlags = kLinearPCMFormatFlagIsPacked | kLinearPCMFormatFlagIsSignedInteger;
    dstFormat.mBitsPerChannel = 16;
    dstFormat.mBytesPerPacket = dstFormat.mBytesPerFrame = 2 * dstFormat.mChannelsPerFrame;
    dstFormat.mFramesPerPacket = 1;

    /* Create the capture file; its client format is the canonical format from the queue. */
    CHECK(ExtAudioFileCreateWithURL(destinationURL, kAudioFileCAFType, &dstFormat, layout, kAudioFileFlags_EraseFile,
                                    &captureFile), "ExtAudioFileCreateWithURL");
    CHECK(ExtAudioFileSetProperty(captureFile, kExtAudioFileProperty_ClientDataFormat, sizeof(AudioStreamBasicDescription),
                                  &captureFormat), "set ExtAudioFile client format");

    /* Pull half a buffer at a time: never faster than the one buffer is refilled. */
    const UInt32 captureBufferByteSize = bufferByteSize / 2;
    AudioQueueBufferRef captureBuffer;
    AudioBufferList captureABL;
    CHECK(AudioQueueAllocateBuffer(state.queue, captureBufferByteSize, &captureBuffer), "AudioQueueAllocateBuffer");
    captureABL.mNumberBuffers = 1;
    captureABL.mBuffers[0].mData = captureBuffer->mAudioData;
    captureABL.mBuffers[0].mNumberChannels = captureFormat.mChannelsPerFrame;

    /* Stop comes from the callback once the file is read. */
    CHECK(AudioQueueStart(state.queue, NULL), "AudioQueueStart failed");

    AudioTimeStamp ts;
    memset(&ts, 0, sizeof ts);
    ts.mFlags = kAudioTimeStampSampleTimeValid;
    ts.mSampleTime = 0;

    /* Once asking for 0 frames, then the first buffer is enqueued after the start. */
    CHECK(AudioQueueOfflineRender(state.queue, &ts, captureBuffer, 0), "AudioQueueOfflineRender");
    BufferCallback(&state, state.queue, state.buffer);

    written = 0;
    for (;;) {
        UInt32 requestFrames = captureBufferByteSize / captureFormat.mBytesPerFrame;
        CHECK(AudioQueueOfflineRender(state.queue, &ts, captureBuffer, requestFrames), "AudioQueueOfflineRender");
        captureABL.mBuffers[0].mData = captureBuffer->mAudioData;
        captureABL.mBuffers[0].mDataByteSize = captureBuffer->mAudioDataByteSize;
        UInt32 writeFrames = captureABL.mBuffers[0].mDataByteSize / captureFormat.mBytesPerFrame;
        printf("t = %.f: AudioQueueOfflineRender:  req %u fr/%u bytes, got %u fr/%u bytes\n", ts.mSampleTime,
               (unsigned)requestFrames, (unsigned)captureBufferByteSize, (unsigned)writeFrames,
               (unsigned)captureABL.mBuffers[0].mDataByteSize);
        CHECK(ExtAudioFileWrite(captureFile, writeFrames, &captureABL), "ExtAudioFileWrite");
        written += writeFrames;
        if (state.flushed) break;
        ts.mSampleTime += writeFrames;
    }

    CFRunLoopRunInMode(kCFRunLoopDefaultMode, 1, false);

cleanUp:
    if (state.queue != NULL && AudioQueueDispose(state.queue, true) != noErr) written = -1;
    if (state.file != NULL) AudioFileClose(state.file);
    if (captureFile != NULL && ExtAudioFileDispose(captureFile) != noErr) written = -1;
    free(state.packetDescriptions);
    free(layout);
    return written;
}

static CFURLRef URLForPath(const char *path) {
    return CFURLCreateFromFileSystemRepresentation(NULL, (const UInt8 *)path, (CFIndex)strlen(path), false);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: aqofflinerender IN OUT.caf\n");
        return 2;
    }
    CFURLRef source = URLForPath(argv[1]);
    CFURLRef destination = URLForPath(argv[2]);
    SInt64 frames = DoAQOfflineRender(source, destination);
    CFRelease(source);
    CFRelease(destination);
    if (frames < 0) return 1;
    printf("rendered %lld frames\n", (long long)frames);
    return 0;
}
