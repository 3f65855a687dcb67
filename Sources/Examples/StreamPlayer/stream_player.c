/*
 * A streaming player in the style of AudioStreamer (Matt Gallagher's, and the many players
 * descended from it): a file's bytes arrive in 1500-byte pieces (a network's packets) and go
 * to AudioFileStream; the property listener creates the output queue when the stream is
 * ReadyToProducePackets (data format, magic cookie); the packets callback copies packets
 * into the queue's buffers and enqueues each full one, waiting for a free buffer; the queue
 * starts once a few buffers are queued; at the end of the data it is flushed and stopped
 * asynchronously, and the player waits until it has played everything.
 *
 *   stream_player FILE          (ADTS AAC, MP3, or any stream AudioFileStream reads)
 *
 * The queue plays on the default device (JAQ_OUTPUT_DEVICE names JACK ports for it).
 */
#define _POSIX_C_SOURCE 200809L
#include <AudioToolbox/AudioToolbox.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define kNumAQBufs 16            /* buffers in the queue */
#define kAQDefaultBufSize 8192   /* bytes a buffer holds, unless a packet is larger */
#define kAQMaxPacketDescs 512    /* packets a buffer holds */
#define kBuffersBeforeStart 3

typedef struct {
    AudioQueueRef queue;
    AudioQueueBufferRef buffers[kNumAQBufs];
    bool inuse[kNumAQBufs];
    AudioStreamPacketDescription descs[kAQMaxPacketDescs];
    UInt32 bufferSize;
    unsigned fillBufferIndex;
    UInt32 bytesFilled;
    UInt32 packetsFilled;
    unsigned buffersUsed;
    bool started;
    bool failed;
    bool discontinuous;
    pthread_mutex_t mutex;
    pthread_cond_t cond;
} Streamer;

static void Fail(Streamer *s, const char *what, OSStatus status) {
    fprintf(stderr, "stream_player: %s failed: %d\n", what, (int)status);
    s->failed = true;
}

static void OutputCallback(void *inClientData, AudioQueueRef inAQ, AudioQueueBufferRef inBuffer) {
    Streamer *s = (Streamer *)inClientData;
    (void)inAQ;
    pthread_mutex_lock(&s->mutex);
    for (unsigned i = 0; i < kNumAQBufs; i++) {
        if (s->buffers[i] == inBuffer) {
            s->inuse[i] = false;
            s->buffersUsed--;
        }
    }
    pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->mutex);
}

/* Enqueues the buffer being filled, starts the queue when enough are queued, and waits
   until the next buffer is free. */
static void EnqueueBuffer(Streamer *s) {
    if (s->failed || !s->queue) return;
    AudioQueueBufferRef buffer = s->buffers[s->fillBufferIndex];
    buffer->mAudioDataByteSize = s->bytesFilled;
    pthread_mutex_lock(&s->mutex);
    s->inuse[s->fillBufferIndex] = true;
    s->buffersUsed++;
    pthread_mutex_unlock(&s->mutex);
    OSStatus err = AudioQueueEnqueueBuffer(s->queue, buffer, s->packetsFilled, s->packetsFilled ? s->descs : NULL);
    if (err) { Fail(s, "AudioQueueEnqueueBuffer", err); return; }
    if (!s->started && s->buffersUsed >= kBuffersBeforeStart) {
        err = AudioQueueStart(s->queue, NULL);
        if (err) { Fail(s, "AudioQueueStart", err); return; }
        s->started = true;
    }
    if (++s->fillBufferIndex >= kNumAQBufs) s->fillBufferIndex = 0;
    s->bytesFilled = 0;
    s->packetsFilled = 0;
    pthread_mutex_lock(&s->mutex);
    while (s->inuse[s->fillBufferIndex]) pthread_cond_wait(&s->cond, &s->mutex);
    pthread_mutex_unlock(&s->mutex);
}

static void PropertyListener(void *inClientData, AudioFileStreamID inAudioFileStream,
                             AudioFileStreamPropertyID inPropertyID, AudioFileStreamPropertyFlags *ioFlags) {
    Streamer *s = (Streamer *)inClientData;
    (void)ioFlags;
    if (inPropertyID != kAudioFileStreamProperty_ReadyToProducePackets) return;
    s->discontinuous = true;
    AudioStreamBasicDescription asbd;
    UInt32 size = sizeof(asbd);
    OSStatus err = AudioFileStreamGetProperty(inAudioFileStream, kAudioFileStreamProperty_DataFormat, &size, &asbd);
    if (err) { Fail(s, "get kAudioFileStreamProperty_DataFormat", err); return; }
    err = AudioQueueNewOutput(&asbd, OutputCallback, s, NULL, NULL, 0, &s->queue);
    if (err) { Fail(s, "AudioQueueNewOutput", err); return; }
    UInt32 upperBound = 0;
    size = sizeof(upperBound);
    if (AudioFileStreamGetProperty(inAudioFileStream, kAudioFileStreamProperty_PacketSizeUpperBound, &size, &upperBound) != noErr) {
        size = sizeof(upperBound);
        AudioFileStreamGetProperty(inAudioFileStream, kAudioFileStreamProperty_MaximumPacketSize, &size, &upperBound);
    }
    s->bufferSize = upperBound > kAQDefaultBufSize ? upperBound : kAQDefaultBufSize;
    for (unsigned i = 0; i < kNumAQBufs; i++) {
        err = AudioQueueAllocateBuffer(s->queue, s->bufferSize, &s->buffers[i]);
        if (err) { Fail(s, "AudioQueueAllocateBuffer", err); return; }
    }
    /* The magic cookie, if the stream has one, goes to the queue's decoder. */
    UInt32 cookieSize = 0;
    Boolean writable = 0;
    if (AudioFileStreamGetPropertyInfo(inAudioFileStream, kAudioFileStreamProperty_MagicCookieData, &cookieSize, &writable) == noErr) {
        void *cookie = calloc(1, cookieSize);
        if (cookie && AudioFileStreamGetProperty(inAudioFileStream, kAudioFileStreamProperty_MagicCookieData, &cookieSize, cookie) == noErr) {
            err = AudioQueueSetProperty(s->queue, kAudioQueueProperty_MagicCookie, cookie, cookieSize);
            if (err) Fail(s, "set kAudioQueueProperty_MagicCookie", err);
        }
        free(cookie);
    }
}

static void PacketsProc(void *inClientData, UInt32 inNumberBytes, UInt32 inNumberPackets, const void *inInputData,
                        AudioStreamPacketDescription *inPacketDescriptions) {
    Streamer *s = (Streamer *)inClientData;
    s->discontinuous = false;
    if (s->failed || !s->queue) return;
    if (!inPacketDescriptions) {
        /* Constant-size packets (PCM): copy the bytes as they come. */
        const unsigned char *bytes = inInputData;
        UInt32 frameBytes = inNumberPackets ? inNumberBytes / inNumberPackets : 1;
        while (inNumberBytes > 0 && !s->failed) {
            UInt32 room = (s->bufferSize - s->bytesFilled) / frameBytes * frameBytes;
            UInt32 n = inNumberBytes < room ? inNumberBytes : room;
            memcpy((unsigned char *)s->buffers[s->fillBufferIndex]->mAudioData + s->bytesFilled, bytes, n);
            s->bytesFilled += n;
            bytes += n;
            inNumberBytes -= n;
            if (s->bufferSize - s->bytesFilled < frameBytes) EnqueueBuffer(s);
        }
        return;
    }
    for (UInt32 i = 0; i < inNumberPackets && !s->failed; i++) {
        SInt64 offset = inPacketDescriptions[i].mStartOffset;
        UInt32 size = inPacketDescriptions[i].mDataByteSize;
        if (size > s->bufferSize) { Fail(s, "a packet larger than a buffer", (OSStatus)size); return; }
        if (s->bufferSize - s->bytesFilled < size || s->packetsFilled == kAQMaxPacketDescs) EnqueueBuffer(s);
        if (s->failed) return;
        memcpy((unsigned char *)s->buffers[s->fillBufferIndex]->mAudioData + s->bytesFilled,
               (const unsigned char *)inInputData + offset, size);
        s->descs[s->packetsFilled] = inPacketDescriptions[i];
        s->descs[s->packetsFilled].mStartOffset = s->bytesFilled;
        s->bytesFilled += size;
        s->packetsFilled++;
    }
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s FILE\n", argv[0]);
        return 2;
    }
    FILE *file = fopen(argv[1], "rb");
    if (!file) { perror(argv[1]); return 1; }
    static Streamer s;
    pthread_mutex_init(&s.mutex, NULL);
    pthread_cond_init(&s.cond, NULL);
    AudioFileStreamID stream = NULL;
    OSStatus err = AudioFileStreamOpen(&s, PropertyListener, PacketsProc, 0, &stream);
    if (err) { Fail(&s, "AudioFileStreamOpen", err); return 1; }
    unsigned char chunk[1500];
    size_t n;
    size_t total = 0;
    while (!s.failed && (n = fread(chunk, 1, sizeof(chunk), file)) > 0) {
        err = AudioFileStreamParseBytes(stream, (UInt32)n, chunk, s.discontinuous ? kAudioFileStreamParseFlag_Discontinuity : 0);
        if (err) { Fail(&s, "AudioFileStreamParseBytes", err); break; }
        total += n;
    }
    fclose(file);
    if (!s.queue) { fprintf(stderr, "stream_player: the stream never became ready\n"); return 1; }
    if (!s.failed && s.bytesFilled > 0) EnqueueBuffer(&s);
    if (!s.failed && !s.started) {
        err = AudioQueueStart(s.queue, NULL);
        if (err) Fail(&s, "AudioQueueStart", err);
        s.started = true;
    }
    if (!s.failed) {
        AudioQueueFlush(s.queue);
        err = AudioQueueStop(s.queue, false);
        if (err) Fail(&s, "AudioQueueStop", err);
    }
    /* Asynchronous start and stop: IsRunning goes to 1 when the device runs the queue, and
       back to 0 once the queue has played what it holds. */
    for (UInt32 expected = 1, waited = 0; !s.failed && waited < 3000; waited++) {
        UInt32 running = 0, size = sizeof(running);
        if (AudioQueueGetProperty(s.queue, kAudioQueueProperty_IsRunning, &running, &size) != noErr) break;
        if (running == expected) {
            if (expected == 0) break;
            expected = 0;
            waited = 0;
        }
        struct timespec tick = {0, 10 * 1000 * 1000};
        nanosleep(&tick, NULL);
    }
    AudioQueueDispose(s.queue, true);
    AudioFileStreamClose(stream);
    printf("streamed %zu bytes\n", total);
    return s.failed ? 1 : 0;
}
