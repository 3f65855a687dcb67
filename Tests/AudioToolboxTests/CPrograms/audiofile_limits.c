/*
 * audiofile_limits.c: runs Audio File Services calls under limits a test process cannot put
 * on itself without affecting its other tests. Built and run by AudioFileLimitsTests.
 *
 *   audiofile_limits diskfull PATH BYTES   writes 16-bit stereo WAVE packets (sample value =
 *                                          2 * packet + channel) under RLIMIT_FSIZE = BYTES
 *                                          until a write fails
 *   audiofile_limits open PATH PERM        AudioFileOpenURL with permission PERM (1, 2, 3)
 *   audiofile_limits create PATH           AudioFileCreateWithURL, WAVE, with EraseFile
 *
 * open and create run as user 'nobody' when started by root, so that POSIX permissions
 * apply. Each prints one line of key=value results.
 */
#include <AudioToolbox/AudioToolbox.h>

#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static CFURLRef URL(const char *path) {
    return CFURLCreateFromFileSystemRepresentation(NULL, (const UInt8 *)path, (CFIndex)strlen(path), false);
}

static AudioStreamBasicDescription Stereo16(void) {
    AudioStreamBasicDescription format;
    memset(&format, 0, sizeof format);
    format.mSampleRate = 48000;
    format.mFormatID = kAudioFormatLinearPCM;
    format.mFormatFlags = kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsPacked;
    format.mBitsPerChannel = 16;
    format.mChannelsPerFrame = 2;
    format.mBytesPerFrame = format.mBytesPerPacket = 4;
    format.mFramesPerPacket = 1;
    return format;
}

static int DropPrivileges(void) {
    if (getuid() != 0) return 1;
    return setgroups(0, NULL) == 0 && setgid(65534) == 0 && setuid(65534) == 0;
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "diskfull") == 0) {
        signal(SIGXFSZ, SIG_IGN); /* a write past the limit then fails with EFBIG */
        struct rlimit limit = {(rlim_t)atoll(argv[3]), (rlim_t)atoll(argv[3])};
        if (setrlimit(RLIMIT_FSIZE, &limit) != 0) return 2;
        AudioStreamBasicDescription format = Stereo16();
        AudioFileID file = NULL;
        OSStatus status = AudioFileCreateWithURL(URL(argv[2]), kAudioFileWAVEType, &format, kAudioFileFlags_EraseFile, &file);
        if (status != noErr) {
            printf("create=%d\n", (int)status);
            return 1;
        }
        static SInt16 samples[2 * 1000];
        SInt64 packet = 0;
        while (status == noErr && packet < 10000000) {
            for (int i = 0; i < 1000; i++) {
                samples[2 * i] = (SInt16)(UInt16)(2 * (packet + i));
                samples[2 * i + 1] = (SInt16)(UInt16)(2 * (packet + i) + 1);
            }
            UInt32 packets = 1000;
            status = AudioFileWritePackets(file, false, sizeof samples, NULL, packet, &packets, samples);
            packet += packets;
        }
        OSStatus closed = AudioFileClose(file);
        printf("write=%d packets=%lld close=%d\n", (int)status, (long long)packet, (int)closed);
        return 0;
    }
    if (argc == 4 && strcmp(argv[1], "open") == 0) {
        if (!DropPrivileges()) return 2;
        AudioFileID file = NULL;
        OSStatus status = AudioFileOpenURL(URL(argv[2]), (AudioFilePermissions)atoi(argv[3]), 0, &file);
        printf("open=%d\n", (int)status);
        if (file) AudioFileClose(file);
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "create") == 0) {
        if (!DropPrivileges()) return 2;
        AudioStreamBasicDescription format = Stereo16();
        AudioFileID file = NULL;
        OSStatus status = AudioFileCreateWithURL(URL(argv[2]), kAudioFileWAVEType, &format, kAudioFileFlags_EraseFile, &file);
        printf("create=%d\n", (int)status);
        if (file) AudioFileClose(file);
        return 0;
    }
    fprintf(stderr, "usage: audiofile_limits diskfull PATH BYTES | open PATH PERM | create PATH\n");
    return 2;
}
