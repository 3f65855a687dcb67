/*
 * hostile_calls.c: the calls of the fuzz report (Tests/HostileInputTests/Fixtures), made
 * through the C API as a C program would make them. Built and run by HostileCAPITests; each
 * crashed the process before jaq checked its input. Prints one line of key=value results.
 * It calls the deprecated AudioFileReadPackets on purpose: the report's crash was in it.
 *
 *   hostile_calls file PATH   open, GetPropertyInfo/GetProperty of the size properties,
 *                             ReadPackets(610, 494 packets, 3952 bytes), then open read-write
 *                             and WritePackets(at 0, 3 packets)
 *   hostile_calls mp3 PATH    an MP3 written with NaN and infinite float samples
 *   hostile_calls asbd        AudioQueueNewOutput/NewInput with mBytesPerFrame 0x40000000 and
 *                             UINT32_MAX (not packed)
 */
#include <AudioToolbox/AudioToolbox.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static CFURLRef URL(const char *path) {
    return CFURLCreateFromFileSystemRepresentation(NULL, (const UInt8 *)path, (CFIndex)strlen(path), false);
}

static void Property(AudioFileID file, const char *name, AudioFilePropertyID id) {
    UInt32 size = 0;
    OSStatus status = AudioFileGetPropertyInfo(file, id, &size, NULL);
    printf(" %s_info=%d", name, (int)status);
    if (status != noErr || size == 0 || size > 4096) return;
    unsigned char value[4096];
    status = AudioFileGetProperty(file, id, &size, value);
    printf(" %s=%d", name, (int)status);
    if (status == noErr && size == 8 && (id == kAudioFilePropertyAudioDataByteCount || id == kAudioFilePropertyAudioDataPacketCount)) {
        SInt64 count;
        memcpy(&count, value, 8);
        printf(" %s_value=%lld", name, (long long)count);
    }
}

static void OutputCallback(void *user, AudioQueueRef queue, AudioQueueBufferRef buffer) {
    (void)user; (void)queue; (void)buffer;
}

static void InputCallback(void *user, AudioQueueRef queue, AudioQueueBufferRef buffer, const AudioTimeStamp *time,
                          UInt32 count, const AudioStreamPacketDescription *descriptions) {
    (void)user; (void)queue; (void)buffer; (void)time; (void)count; (void)descriptions;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "file") == 0) {
        AudioFileID file = NULL;
        OSStatus status = AudioFileOpenURL(URL(argv[2]), kAudioFileReadPermission, 0, &file);
        printf("open=%d", (int)status);
        if (status == noErr) {
            Property(file, "pcnt", kAudioFilePropertyAudioDataPacketCount);
            Property(file, "bcnt", kAudioFilePropertyAudioDataByteCount);
            Property(file, "brat", kAudioFilePropertyBitRate);
            Property(file, "cmap", kAudioFilePropertyChannelLayout);
            static unsigned char buffer[3952];
            UInt32 bytes = sizeof buffer, packets = 494;
            printf(" read610=%d", (int)AudioFileReadPackets(file, false, &bytes, NULL, 610, &packets, buffer));
            printf(" close=%d", (int)AudioFileClose(file));
        }
        file = NULL;
        status = AudioFileOpenURL(URL(argv[2]), kAudioFileReadWritePermission, 0, &file);
        printf(" open_rw=%d", (int)status);
        if (status == noErr) {
            static unsigned char packets[3 * 64];
            UInt32 count = 3;
            printf(" write=%d", (int)AudioFileWritePackets(file, false, sizeof packets, NULL, 0, &count, packets));
            printf(" close_rw=%d", (int)AudioFileClose(file));
        }
        printf("\n");
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "mp3") == 0) {
        AudioStreamBasicDescription format = {44100, kAudioFormatLinearPCM, kAudioFormatFlagIsFloat | kAudioFormatFlagIsPacked,
                                              8, 1, 8, 2, 32, 0};
        AudioFileID file = NULL;
        OSStatus status = AudioFileCreateWithURL(URL(argv[2]), kAudioFileMP3Type, &format, kAudioFileFlags_EraseFile, &file);
        printf("create=%d", (int)status);
        if (status != noErr) { printf("\n"); return 0; }
        static float samples[2 * 4410];
        for (int i = 0; i < 2 * 4410; i++) samples[i] = i % 3 == 0 ? NAN : i % 3 == 1 ? INFINITY : -INFINITY;
        for (int chunk = 0; chunk < 10; chunk++) {
            UInt32 packets = 4410;
            status = AudioFileWritePackets(file, false, sizeof samples, NULL, (SInt64)chunk * 4410, &packets, samples);
            if (status != noErr) break;
        }
        printf(" write=%d close=%d\n", (int)status, (int)AudioFileClose(file));
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "asbd") == 0) {
        const UInt32 sizes[] = {0x40000000u, UINT32_MAX};
        for (int i = 0; i < 2; i++) {
            AudioStreamBasicDescription format = {48000, kAudioFormatLinearPCM, kAudioFormatFlagIsSignedInteger,
                                                  sizes[i], 1, sizes[i], 2, 16, 0};
            AudioQueueRef queue = NULL;
            OSStatus output = AudioQueueNewOutput(&format, OutputCallback, NULL, NULL, NULL, 0, &queue);
            OSStatus input = AudioQueueNewInput(&format, InputCallback, NULL, NULL, NULL, 0, &queue);
            printf("%soutput_%u=%d input_%u=%d", i ? " " : "", (unsigned)sizes[i], (int)output, (unsigned)sizes[i], (int)input);
        }
        printf("\n");
        return 0;
    }
    fprintf(stderr, "usage: hostile_calls file PATH | mp3 PATH | asbd\n");
    return 2;
}
