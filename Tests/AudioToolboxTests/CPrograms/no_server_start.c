/*
 * A playback queue with no JACK server running, through the C API as a program sees it
 * (JACK_DEFAULT_SERVER names a server nobody runs, JACK_NO_START_SERVER is set):
 * AudioQueueNewOutput succeeds; what needs the audio device returns
 * kAudioQueueErr_InvalidDevice; the device time has only mHostTime; AudioQueueNewInput fails
 * as before. Then the same queue renders offline (a 0-frame priming render and one of 512
 * frames of what was enqueued).
 *
 * Prints one line per call ("name status"); exits with the number of unexpected results.
 */
#include <AudioToolbox/AudioToolbox.h>
#include <stdio.h>
#include <string.h>

static int failures = 0;

static void expect(const char *what, OSStatus got, OSStatus wanted) {
    printf("%s %d\n", what, (int)got);
    if (got != wanted) {
        printf("FAIL %s: expected %d\n", what, (int)wanted);
        failures++;
    }
}

static void Ignore(void *userData, AudioQueueRef queue, AudioQueueBufferRef buffer) {
    (void)userData;
    (void)queue;
    (void)buffer;
}

static void IgnoreInput(void *userData, AudioQueueRef queue, AudioQueueBufferRef buffer, const AudioTimeStamp *time,
                        UInt32 packets, const AudioStreamPacketDescription *descriptions) {
    (void)userData;
    (void)queue;
    (void)buffer;
    (void)time;
    (void)packets;
    (void)descriptions;
}

int main(void) {
    AudioStreamBasicDescription format;
    memset(&format, 0, sizeof format);
    format.mSampleRate = 48000;
    format.mFormatID = kAudioFormatLinearPCM;
    format.mFormatFlags = kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsPacked;
    format.mBitsPerChannel = 16;
    format.mChannelsPerFrame = 2;
    format.mBytesPerFrame = format.mBytesPerPacket = 4;
    format.mFramesPerPacket = 1;

    AudioQueueRef queue = NULL;
    expect("AudioQueueNewOutput", AudioQueueNewOutput(&format, Ignore, NULL, NULL, NULL, 0, &queue), noErr);
    if (queue == NULL) return 1;
    AudioQueueBufferRef buffer, capture;
    expect("AudioQueueAllocateBuffer", AudioQueueAllocateBuffer(queue, 4096, &buffer), noErr);
    expect("AudioQueueAllocateBuffer", AudioQueueAllocateBuffer(queue, 4096, &capture), noErr);
    SInt16 *samples = (SInt16 *)buffer->mAudioData;
    for (int i = 0; i < 2048; i++) samples[i] = (SInt16)(i * 13 - 9000);
    buffer->mAudioDataByteSize = 4096;
    expect("AudioQueueEnqueueBuffer", AudioQueueEnqueueBuffer(queue, buffer, 0, NULL), noErr);

    expect("AudioQueueStart", AudioQueueStart(queue, NULL), kAudioQueueErr_InvalidDevice);
    expect("AudioQueuePrime", AudioQueuePrime(queue, 0, NULL), kAudioQueueErr_InvalidDevice);
    Float64 rate = 0;
    UInt32 size = sizeof rate;
    expect("DeviceSampleRate", AudioQueueGetProperty(queue, kAudioQueueDeviceProperty_SampleRate, &rate, &size),
           kAudioQueueErr_InvalidDevice);
    AudioTimeStamp now;
    memset(&now, 0, sizeof now);
    expect("AudioQueueDeviceGetCurrentTime", AudioQueueDeviceGetCurrentTime(queue, &now), noErr);
    expect("DeviceGetCurrentTime flags", (OSStatus)now.mFlags, (OSStatus)kAudioTimeStampHostTimeValid);
    AudioQueueRef input = NULL;
    expect("AudioQueueNewInput", AudioQueueNewInput(&format, IgnoreInput, NULL, NULL, NULL, 0, &input),
           kAudioQueueErr_InvalidDevice);

    expect("AudioQueueSetOfflineRenderFormat", AudioQueueSetOfflineRenderFormat(queue, &format, NULL), noErr);
    expect("AudioQueueStart offline", AudioQueueStart(queue, NULL), noErr);
    AudioTimeStamp time;
    memset(&time, 0, sizeof time);
    time.mFlags = kAudioTimeStampSampleTimeValid;
    expect("AudioQueueOfflineRender 0", AudioQueueOfflineRender(queue, &time, capture, 0), noErr);
    expect("AudioQueueOfflineRender 512", AudioQueueOfflineRender(queue, &time, capture, 512), noErr);
    expect("rendered bytes", (OSStatus)capture->mAudioDataByteSize, 2048);
    expect("rendered samples", memcmp(capture->mAudioData, samples, 2048) == 0 ? noErr : -1, noErr);
    expect("AudioQueueDispose", AudioQueueDispose(queue, true), noErr);
    return failures;
}
