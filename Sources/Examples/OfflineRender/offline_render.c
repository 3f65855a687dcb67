/*
 * offline_render.c — bounce an audio file through an audio queue in offline mode, in the
 * way of Apple's AQOfflineRenderTest: the queue plays the file through its callback, and
 * AudioQueueOfflineRender pulls its output into a second file, as fast as the machine goes.
 *
 *   cc offline_render.c -lAudioToolbox -o offline_render
 *   offline_render IN OUT.caf [VOLUME]
 *
 * The output is 16-bit linear PCM at the input's rate, in the input's channel count. With
 * no volume (1.0), a 16-bit input comes out bit for bit. No JACK server is needed: with
 * none running the queue has no device and renders offline all the same; with one, the
 * queue is a JACK client, but offline it is neither connected nor heard.
 */
#include <AudioToolbox/AudioToolbox.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    AudioFileID file;
    AudioStreamBasicDescription format;
    SInt64 packet;
    UInt32 packetsPerBuffer;
    Boolean done;
} Source;

static int Check(OSStatus status, const char *what) {
    if (status == noErr) return 1;
    fprintf(stderr, "offline_render: %s failed (%d)\n", what, (int)status);
    return 0;
}

static void Refill(void *userData, AudioQueueRef queue, AudioQueueBufferRef buffer) {
    Source *source = (Source *)userData;
    if (source->done) return;
    UInt32 packets = source->packetsPerBuffer;
    UInt32 bytes = packets * source->format.mBytesPerPacket;
    OSStatus status = AudioFileReadPacketData(source->file, false, &bytes, NULL, source->packet, &packets,
                                              buffer->mAudioData);
    if ((status != noErr && status != kAudioFileEndOfFileError) || packets == 0) {
        /* The end: everything enqueued plays, then the queue stops by itself. */
        source->done = true;
        AudioQueueStop(queue, false);
        return;
    }
    buffer->mAudioDataByteSize = bytes;
    source->packet += packets;
    AudioQueueEnqueueBuffer(queue, buffer, 0, NULL);
}

static CFURLRef URLForPath(const char *path) {
    return CFURLCreateFromFileSystemRepresentation(NULL, (const UInt8 *)path, (CFIndex)strlen(path), false);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: offline_render IN OUT.caf [VOLUME]\n");
        return 2;
    }
    Source source;
    memset(&source, 0, sizeof source);
    CFURLRef inURL = URLForPath(argv[1]);
    if (!Check(AudioFileOpenURL(inURL, kAudioFileReadPermission, 0, &source.file), "AudioFileOpenURL")) return 1;
    UInt32 size = sizeof source.format;
    if (!Check(AudioFileGetProperty(source.file, kAudioFilePropertyDataFormat, &size, &source.format), "DataFormat")) return 1;
    source.packetsPerBuffer = 4096;

    AudioQueueRef queue;
    if (!Check(AudioQueueNewOutput(&source.format, Refill, &source, NULL, NULL, 0, &queue), "AudioQueueNewOutput")) return 1;
    if (argc > 3 && !Check(AudioQueueSetParameter(queue, kAudioQueueParam_Volume, (Float32)atof(argv[3])), "Volume")) return 1;
    for (int i = 0; i < 3; i++) {
        AudioQueueBufferRef buffer;
        if (!Check(AudioQueueAllocateBuffer(queue, source.packetsPerBuffer * source.format.mBytesPerPacket, &buffer),
                   "AudioQueueAllocateBuffer")) return 1;
        Refill(&source, queue, buffer);
    }

    /* The render format: 16-bit interleaved PCM, the layout naming the channel count. */
    UInt32 channels = source.format.mChannelsPerFrame;
    AudioStreamBasicDescription renderFormat;
    memset(&renderFormat, 0, sizeof renderFormat);
    renderFormat.mSampleRate = source.format.mSampleRate;
    renderFormat.mFormatID = kAudioFormatLinearPCM;
    renderFormat.mFormatFlags = kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsPacked;
    renderFormat.mBitsPerChannel = 16;
    renderFormat.mChannelsPerFrame = channels;
    renderFormat.mBytesPerFrame = renderFormat.mBytesPerPacket = 2 * channels;
    renderFormat.mFramesPerPacket = 1;
    AudioChannelLayout layout;
    memset(&layout, 0, sizeof layout);
    layout.mChannelLayoutTag = channels == 1 ? kAudioChannelLayoutTag_Mono
                             : channels == 2 ? kAudioChannelLayoutTag_Stereo
                             : kAudioChannelLayoutTag_DiscreteInOrder | channels;
    if (!Check(AudioQueueSetOfflineRenderFormat(queue, &renderFormat, &layout), "AudioQueueSetOfflineRenderFormat")) return 1;

    AudioFileID out;
    CFURLRef outURL = URLForPath(argv[2]);
    if (!Check(AudioFileCreateWithURL(outURL, kAudioFileCAFType, &renderFormat, kAudioFileFlags_EraseFile, &out),
               "AudioFileCreateWithURL")) return 1;

    const UInt32 framesPerRender = 4096;
    AudioQueueBufferRef capture;
    if (!Check(AudioQueueAllocateBuffer(queue, framesPerRender * renderFormat.mBytesPerFrame, &capture),
               "AudioQueueAllocateBuffer")) return 1;
    if (!Check(AudioQueueStart(queue, NULL), "AudioQueueStart")) return 1;

    AudioTimeStamp time;
    memset(&time, 0, sizeof time);
    time.mFlags = kAudioTimeStampSampleTimeValid;
    time.mSampleTime = 0;
    /* As Apple's sample does: ask for 0 frames once, to prime. */
    if (!Check(AudioQueueOfflineRender(queue, &time, capture, 0), "AudioQueueOfflineRender (priming)")) return 1;

    /* As Apple's sample does: render until the queue, stopped at the end of the file, has played
     * out everything enqueued (a render then returns fewer frames than asked, then none). */
    SInt64 total = 0;
    for (;;) {
        if (!Check(AudioQueueOfflineRender(queue, &time, capture, framesPerRender), "AudioQueueOfflineRender")) return 1;
        UInt32 packets = capture->mAudioDataByteSize / renderFormat.mBytesPerPacket;
        if (packets == 0) break;
        if (!Check(AudioFileWritePackets(out, false, capture->mAudioDataByteSize, NULL, total, &packets, capture->mAudioData),
                   "AudioFileWritePackets")) return 1;
        total += packets;
        time.mSampleTime += packets;
    }
    printf("rendered %lld frames\n", (long long)total);
    AudioFileClose(out);
    AudioQueueDispose(queue, true);
    AudioFileClose(source.file);
    CFRelease(inURL);
    CFRelease(outURL);
    return 0;
}
