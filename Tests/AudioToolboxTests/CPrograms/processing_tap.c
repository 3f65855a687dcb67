/*
 * A processing tap and the time/pitch unit through the C API, heard through JACK.
 *
 * An output queue plays one second of a known float signal through a pre-effects tap that
 * scales it by -0.5 (exact in float); an input queue records the output queue's ports. The
 * recording must hold exactly the tapped signal. Then the same second plays with the
 * time/pitch unit on at kAudioQueueParam_PlayRate 2 and a siphon tap counting frames: the
 * recording lasts half a second (within a period) and the siphon saw every frame played.
 *
 * Prints one line per check ("ok ..." or "FAIL ..."); exits with the number of failures.
 */
#include <AudioToolbox/AudioToolbox.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define RATE 48000
#define FRAMES 48000
#define CAPACITY (4 * RATE)

static int failures = 0;
static float source[FRAMES];
static float recorded[CAPACITY * 2];
static UInt32 recordedFrames = 0;
static UInt32 siphonFrames = 0;
static AudioQueueBufferRef inputBuffers[4];

static void check(int ok, const char *what) {
    printf("%s %s\n", ok ? "ok" : "FAIL", what);
    if (!ok) failures++;
}

static void outputCallback(void *user, AudioQueueRef queue, AudioQueueBufferRef buffer) {
    (void)user; (void)queue; (void)buffer;
}

static void inputCallback(void *user, AudioQueueRef queue, AudioQueueBufferRef buffer, const AudioTimeStamp *start,
                          UInt32 packets, const AudioStreamPacketDescription *descriptions) {
    (void)user; (void)start; (void)descriptions;
    UInt32 frames = packets;
    if (recordedFrames + frames > CAPACITY) frames = CAPACITY - recordedFrames;
    memcpy(recorded + 2 * recordedFrames, buffer->mAudioData, frames * 2 * sizeof(float));
    recordedFrames += frames;
    AudioQueueEnqueueBuffer(queue, buffer, 0, NULL);
}

/* Pre-effects: takes the source and scales it in place by -0.5. */
static void scaleTap(void *user, AudioQueueProcessingTapRef tap, UInt32 frames, AudioTimeStamp *time,
                     AudioQueueProcessingTapFlags *flags, UInt32 *outFrames, AudioBufferList *data) {
    (void)user;
    UInt32 got = 0;
    AudioQueueProcessingTapFlags sourceFlags = 0;
    if (AudioQueueProcessingTapGetSourceAudio(tap, frames, time, &sourceFlags, &got, data) != noErr) got = 0;
    for (UInt32 b = 0; b < data->mNumberBuffers; b++) {
        float *samples = data->mBuffers[b].mData;
        for (UInt32 i = 0; i < got; i++) samples[i] *= -0.5f;
    }
    *outFrames = got;
    *flags = sourceFlags;
}

/* Siphon: counts what it sees. */
static void countingTap(void *user, AudioQueueProcessingTapRef tap, UInt32 frames, AudioTimeStamp *time,
                        AudioQueueProcessingTapFlags *flags, UInt32 *outFrames, AudioBufferList *data) {
    (void)user; (void)tap; (void)time; (void)flags; (void)outFrames; (void)data;
    siphonFrames += frames;
}

static AudioStreamBasicDescription floatStereo(void) {
    AudioStreamBasicDescription format = {0};
    format.mSampleRate = RATE;
    format.mFormatID = kAudioFormatLinearPCM;
    format.mFormatFlags = kAudioFormatFlagsNativeFloatPacked;
    format.mBytesPerPacket = 8;
    format.mFramesPerPacket = 1;
    format.mBytesPerFrame = 8;
    format.mChannelsPerFrame = 2;
    format.mBitsPerChannel = 32;
    return format;
}

static UInt32 isRunning(AudioQueueRef queue) {
    UInt32 running = 0, size = sizeof(running);
    AudioQueueGetProperty(queue, kAudioQueueProperty_IsRunning, &running, &size);
    return running;
}

/* Plays the source once through `output` while `input` records its ports. */
static void playAndRecord(AudioQueueRef output, AudioQueueRef input, AudioQueueBufferRef buffer) {
    recordedFrames = 0;
    /* Stop returned the input buffers: they go back in for each take. */
    for (int i = 0; i < 4; i++) AudioQueueEnqueueBuffer(input, inputBuffers[i], 0, NULL);
    float *samples = buffer->mAudioData;
    for (int i = 0; i < FRAMES; i++) samples[2 * i] = samples[2 * i + 1] = source[i];
    buffer->mAudioDataByteSize = FRAMES * 8;
    check(AudioQueueEnqueueBuffer(output, buffer, 0, NULL) == noErr, "enqueue");
    check(AudioQueueStart(input, NULL) == noErr, "start the input queue");
    check(AudioQueueStart(output, NULL) == noErr, "start the output queue");
    check(AudioQueueStop(output, false) == noErr, "stop(false) the output queue");
    for (int waited = 0; waited < 100 && !isRunning(output); waited++) usleep(10000);
    for (int waited = 0; waited < 1000 && isRunning(output); waited++) usleep(10000);
    usleep(200000);
    check(AudioQueueStop(input, true) == noErr, "stop the input queue");
}

int main(void) {
    for (int i = 0; i < FRAMES; i++) source[i] = 0.6f * (float)sin(i * 0.0731) + 0.01f;
    AudioStreamBasicDescription format = floatStereo();
    AudioQueueRef output = NULL, input = NULL;
    if (AudioQueueNewOutput(&format, outputCallback, NULL, NULL, NULL, 0, &output) != noErr ||
        AudioQueueNewInput(&format, inputCallback, NULL, NULL, NULL, 0, &input) != noErr) {
        printf("FAIL no queues (is a JACK server running?)\n");
        return 1;
    }
    /* The input queue records what the output queue plays. */
    CFStringRef ports = NULL;
    UInt32 size = sizeof(ports);
    check(AudioQueueGetProperty(output, kAudioQueueProperty_JACKPortNames, &ports, &size) == noErr, "output port names");
    check(AudioQueueSetProperty(input, kAudioQueueProperty_CurrentDevice, &ports, sizeof(ports)) == noErr, "connect");
    CFRelease(ports);
    for (int i = 0; i < 4; i++) AudioQueueAllocateBuffer(input, 4096 * 8, &inputBuffers[i]);
    AudioQueueBufferRef buffer = NULL;
    check(AudioQueueAllocateBuffer(output, FRAMES * 8, &buffer) == noErr, "allocate");

    /* 1. A tap that changes the samples is heard. */
    UInt32 maxFrames = 0;
    AudioStreamBasicDescription tapFormat;
    AudioQueueProcessingTapRef tap = NULL;
    check(AudioQueueProcessingTapNew(output, scaleTap, NULL, kAudioQueueProcessingTap_PreEffects, &maxFrames,
                                     &tapFormat, &tap) == noErr, "AudioQueueProcessingTapNew");
    check(tapFormat.mFormatFlags == (kAudioFormatFlagsNativeFloatPacked | kAudioFormatFlagIsNonInterleaved) &&
          tapFormat.mChannelsPerFrame == 2 && tapFormat.mSampleRate == RATE, "the processing format");
    playAndRecord(output, input, buffer);
    UInt32 first = 0;
    while (first < recordedFrames && recorded[2 * first] == 0) first++;
    UInt32 matching = 0;
    for (UInt32 i = 0; i < FRAMES && first + i < recordedFrames; i++)
        if (recorded[2 * (first + i)] == -0.5f * source[i] && recorded[2 * (first + i) + 1] == -0.5f * source[i]) matching++;
    printf("tap: %u of %u frames heard as tapped\n", matching, FRAMES);
    check(matching == FRAMES, "every frame heard through JACK is the tap's");
    check(AudioQueueProcessingTapDispose(tap) == noErr, "AudioQueueProcessingTapDispose");

    /* 2. PlayRate 2 halves the duration; a siphon sees every frame. */
    UInt32 one = 1;
    check(AudioQueueSetProperty(output, kAudioQueueProperty_EnableTimePitch, &one, sizeof(one)) == noErr, "EnableTimePitch");
    UInt32 algorithm = kAudioQueueTimePitchAlgorithm_Spectral;
    check(AudioQueueSetProperty(output, kAudioQueueProperty_TimePitchAlgorithm, &algorithm, sizeof(algorithm)) == noErr,
          "TimePitchAlgorithm");
    check(AudioQueueSetParameter(output, kAudioQueueParam_PlayRate, 2.0f) == noErr, "PlayRate 2");
    check(AudioQueueProcessingTapNew(output, countingTap, NULL, kAudioQueueProcessingTap_PostEffects | kAudioQueueProcessingTap_Siphon,
                                     &maxFrames, &tapFormat, &tap) == noErr, "a siphon tap");
    playAndRecord(output, input, buffer);
    /* The frames that carry the signal (about 0.1 % of its frames fall within 1e-3 of 0): a loaded
       machine may make the queue underrun and play silence in between, which lengthens the span
       but not the audio. */
    UInt32 start = 0, end = recordedFrames, sounding = 0;
    while (start < recordedFrames && fabsf(recorded[2 * start]) < 1e-3f) start++;
    while (end > start && fabsf(recorded[2 * (end - 1)]) < 1e-3f) end--;
    for (UInt32 i = start; i < end; i++) sounding += fabsf(recorded[2 * i]) >= 1e-3f;
    printf("rate 2: %u frames heard over %u, the siphon saw %u\n", sounding, end - start, siphonFrames);
    check(abs((int)sounding - FRAMES / 2) <= 256, "half the duration, within a period");
    check(abs((int)siphonFrames - FRAMES / 2) <= 256, "the siphon saw what was played");

    AudioQueueDispose(output, true);
    AudioQueueDispose(input, true);
    printf("%d failures\n", failures);
    return failures;
}
