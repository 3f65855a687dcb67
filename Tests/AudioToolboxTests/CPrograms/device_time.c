/*
 * Device time through the Audio Queue API, checked against the libjack this process loaded:
 * jackd2's, or PipeWire's when LD_LIBRARY_PATH puts it first (as pw-jack does).
 *
 * A plain JACK client of our own (activated, so PipeWire reports its clock) is the referee:
 * AudioQueueDeviceGetCurrentTime must fall between two of its jack_frame_time readings,
 * AudioQueueDeviceTranslateTime must map frames before and after now to host times one second
 * apart per 48000 frames (and back), AudioQueueDeviceGetNearestStartTime must give a frame
 * at or after the one asked for, and AudioQueueStart with a sample time must start the queue
 * on exactly that frame (kAudioQueueProperty_StartDeviceFrame).
 *
 * Tolerances: 300 us per second and 8 frames per half second around the server's own pace
 * (rounding to whole microseconds), and a frame read is within two periods.
 *
 * Prints one line per check ("ok ..." or "FAIL ..."); exits with the number of failures.
 */
#include <AudioToolbox/AudioToolbox.h>
#include <jack/jack.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int failures = 0;

static void check(int ok, const char *what, double got, double low, double high) {
    printf("%s %s: %.0f (expected %.0f...%.0f)\n", ok ? "ok" : "FAIL", what, got, low, high);
    if (!ok) failures++;
}

static void expect_range(const char *what, double got, double low, double high) {
    check(got >= low && got <= high, what, got, low, high);
}

static uint64_t monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int noop_process(jack_nframes_t frames, void *argument) {
    (void)frames;
    (void)argument;
    return 0;
}

static void output_callback(void *user, AudioQueueRef queue, AudioQueueBufferRef buffer) {
    (void)user;
    memset(buffer->mAudioData, 0, buffer->mAudioDataBytesCapacity);
    buffer->mAudioDataByteSize = buffer->mAudioDataBytesCapacity;
    AudioQueueEnqueueBuffer(queue, buffer, 0, NULL);
}

int main(void) {
    jack_status_t status;
    jack_client_t *referee = jack_client_open("dt-referee", JackNoStartServer, &status);
    if (referee == NULL) {
        printf("FAIL no JACK server (status 0x%x)\n", (unsigned)status);
        return 100;
    }
    jack_set_process_callback(referee, noop_process, NULL);
    jack_activate(referee);
    for (int i = 0; i < 2000 && jack_last_frame_time(referee) == 0; i++) usleep(1000);
    double rate = jack_get_sample_rate(referee);
    double period = jack_get_buffer_size(referee);
    printf("libjack %s, %.0f Hz, %.0f frames per period\n", jack_get_version_string(), rate, period);

    AudioStreamBasicDescription format = {
        .mSampleRate = rate, .mFormatID = kAudioFormatLinearPCM,
        .mFormatFlags = kAudioFormatFlagIsFloat | kAudioFormatFlagIsPacked,
        .mBytesPerPacket = 4, .mFramesPerPacket = 1, .mBytesPerFrame = 4, .mChannelsPerFrame = 1, .mBitsPerChannel = 32};
    AudioQueueRef queue = NULL;
    OSStatus result = AudioQueueNewOutput(&format, output_callback, NULL, NULL, NULL, 0, &queue);
    if (result != noErr) {
        printf("FAIL AudioQueueNewOutput: %d\n", (int)result);
        return 100;
    }

    /* Device time now, between two readings of the referee's frame time. */
    AudioTimeStamp now;
    double before = jack_frame_time(referee);
    result = AudioQueueDeviceGetCurrentTime(queue, &now);
    double after = jack_frame_time(referee);
    check(result == noErr && (now.mFlags & kAudioTimeStampSampleTimeValid), "DeviceGetCurrentTime succeeds", result, 0, 0);
    expect_range("DeviceGetCurrentTime vs jack_frame_time", now.mSampleTime, before - 2 * period, after + 2 * period);

    /* Frames to host time, one second before and after now, and back, at the server's own pace:
       jackd2's conversions are its jack_frames_to_time / jack_time_to_frames (correct there);
       PipeWire's are wrong before the current cycle, so there the pace is period_usecs. Under
       load jackd2's dummy clock really runs slower than the host's, and its conversions say so. */
    int pipewire = strstr(jack_get_version_string(), "PipeWire") != NULL;
    jack_nframes_t cycle_frames;
    jack_time_t cycle_usecs, next_usecs;
    float period_usecs;
    jack_get_cycle_times(referee, &cycle_frames, &cycle_usecs, &next_usecs, &period_usecs);
    double usecs_per_second = pipewire ? rate / period * period_usecs
        : (double)jack_frames_to_time(referee, cycle_frames + (jack_nframes_t)rate) - (double)jack_frames_to_time(referee, cycle_frames);
    double frames_per_half_second = pipewire ? rate / 2
        : (double)jack_time_to_frames(referee, cycle_usecs + 500000) - (double)cycle_frames;
    printf("the server's second: %.0f us; its half second: %.0f frames\n", usecs_per_second, frames_per_half_second);
    AudioTimeStamp in = {.mFlags = kAudioTimeStampSampleTimeValid}, past, future, back;
    in.mSampleTime = now.mSampleTime;
    AudioQueueDeviceTranslateTime(queue, &in, &back);
    uint64_t host_now = back.mHostTime;
    expect_range("host time of the current frame vs CLOCK_MONOTONIC (ms)", (double)host_now / 1e6,
                 (double)monotonic_ns() / 1e6 - 1000 * 2 * period / rate - 50, (double)monotonic_ns() / 1e6 + 1000 * 2 * period / rate);
    in.mSampleTime = now.mSampleTime - rate;
    result = AudioQueueDeviceTranslateTime(queue, &in, &past);
    expect_range("host time 1 s before now (us after the current frame's)", ((double)past.mHostTime - (double)host_now) / 1000,
                 -usecs_per_second - 300, -usecs_per_second + 300);
    in.mSampleTime = now.mSampleTime + rate;
    result = AudioQueueDeviceTranslateTime(queue, &in, &future);
    expect_range("host time 1 s after now (us after the current frame's)", ((double)future.mHostTime - (double)host_now) / 1000,
                 usecs_per_second - 300, usecs_per_second + 300);
    AudioTimeStamp host_in = {.mFlags = kAudioTimeStampHostTimeValid};
    host_in.mHostTime = host_now - 500000000ull;
    AudioQueueDeviceTranslateTime(queue, &host_in, &back);
    expect_range("frame 0.5 s before now", back.mSampleTime, now.mSampleTime - frames_per_half_second - 8, now.mSampleTime - frames_per_half_second + 8);
    host_in.mHostTime = host_now + 500000000ull;
    AudioQueueDeviceTranslateTime(queue, &host_in, &back);
    expect_range("frame 0.5 s after now", back.mSampleTime, now.mSampleTime + frames_per_half_second - 8, now.mSampleTime + frames_per_half_second + 8);

    /* Nearest start time and a start on a frame 0.5 s ahead. */
    AudioQueueBufferRef buffers[3];
    for (int i = 0; i < 3; i++) {
        AudioQueueAllocateBuffer(queue, 4 * 4800, &buffers[i]);
        output_callback(NULL, queue, buffers[i]);
    }
    AudioQueuePrime(queue, 0, NULL);
    AudioQueueDeviceGetCurrentTime(queue, &now);
    AudioTimeStamp nearest = {.mFlags = kAudioTimeStampSampleTimeValid};
    nearest.mSampleTime = now.mSampleTime;
    result = AudioQueueDeviceGetNearestStartTime(queue, &nearest, 0);
    check(result == noErr, "DeviceGetNearestStartTime succeeds", result, 0, 0);
    expect_range("nearest start frame for now", nearest.mSampleTime, now.mSampleTime, now.mSampleTime + 4 * period + rate / 10);
    AudioTimeStamp start = {.mFlags = kAudioTimeStampSampleTimeValid};
    start.mSampleTime = floor(now.mSampleTime + rate / 2);
    result = AudioQueueStart(queue, &start);
    check(result == noErr, "AudioQueueStart with a sample time", result, 0, 0);
    Float64 started = 0;
    UInt32 size = sizeof(started);
    for (int i = 0; i < 3000 && started == 0; i++) {
        usleep(1000);
        AudioQueueGetProperty(queue, kAudioQueueProperty_StartDeviceFrame, &started, &size);
    }
    expect_range("the frame the queue started on", started, start.mSampleTime, start.mSampleTime);
    AudioQueueDispose(queue, true);
    jack_client_close(referee);
    printf("%d failures\n", failures);
    return failures;
}
