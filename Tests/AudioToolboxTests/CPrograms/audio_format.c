/*
 * What a ported program includes and calls around Audio Toolbox (issue #25, items 4 and 6):
 * <CoreAudio/CoreAudioTypes.h>, CFSTR, CFURLCreateWithFileSystemPath, FillOutASBDForLPCM,
 * AudioFormatGetProperty (FormatInfo, FormatName), a file's info dictionary read with
 * CFDictionary calls, kAudio_ result codes. Prints one line per check; exits non-zero on a
 * failure. Usage: audio_format DIRECTORY
 */
#include <CoreAudio/CoreAudioTypes.h>
#include <AudioToolbox/AudioToolbox.h>

static int failures = 0;

#define CHECK(cond, ...)                          \
    do {                                          \
        if (!(cond)) {                            \
            printf("FAILED: " __VA_ARGS__);       \
            printf("\n");                         \
            failures++;                           \
        }                                         \
    } while (0)

/* A CFString's text: CFStringGetCStringPtr where it has one, else a copy (as Apple's samples do). */
static const char *text(CFStringRef string, char *buffer, CFIndex size) {
    const char *direct = CFStringGetCStringPtr(string, kCFStringEncodingUTF8);
    if (direct) return direct;
    return CFStringGetCString(string, buffer, size, kCFStringEncodingUTF8) ? buffer : "(none)";
}

static void formatName(const AudioStreamBasicDescription *format) {
    CFStringRef name = NULL;
    UInt32 size = sizeof(name);
    OSStatus status = AudioFormatGetProperty(kAudioFormatProperty_FormatName, sizeof(*format), format, &size, &name);
    CHECK(status == noErr && name != NULL, "FormatName: %d", (int)status);
    if (name) {
        char buffer[256];
        printf("name: %s\n", text(name, buffer, sizeof(buffer)));
        CFRelease(name);
    }
}

static void formatInfo(void) {
    AudioStreamBasicDescription aac;
    memset(&aac, 0, sizeof(aac));
    aac.mFormatID = kAudioFormatMPEG4AAC;
    aac.mSampleRate = 44100;
    aac.mChannelsPerFrame = 2;
    UInt32 size = sizeof(aac);
    OSStatus status = AudioFormatGetProperty(kAudioFormatProperty_FormatInfo, 0, NULL, &size, &aac);
    CHECK(status == noErr, "FormatInfo AAC: %d", (int)status);
    printf("aac: %u frames per packet, %u bytes per packet\n", (unsigned)aac.mFramesPerPacket, (unsigned)aac.mBytesPerPacket);
    formatName(&aac);

    AudioStreamBasicDescription pcm;
    memset(&pcm, 0, sizeof(pcm));
    pcm.mFormatID = kAudioFormatLinearPCM;
    pcm.mFormatFlags = kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsPacked;
    pcm.mSampleRate = 48000;
    pcm.mChannelsPerFrame = 2;
    pcm.mBitsPerChannel = 24;
    size = sizeof(pcm);
    status = AudioFormatGetProperty(kAudioFormatProperty_FormatInfo, 0, NULL, &size, &pcm);
    CHECK(status == noErr, "FormatInfo LPCM: %d", (int)status);
    printf("lpcm: %u bytes per frame, %u bytes per packet, %u frames per packet\n", (unsigned)pcm.mBytesPerFrame,
           (unsigned)pcm.mBytesPerPacket, (unsigned)pcm.mFramesPerPacket);
    formatName(&pcm);

    AudioStreamBasicDescription unknown = pcm;
    unknown.mFormatID = 0x7A7A7A7A;
    size = sizeof(unknown);
    status = AudioFormatGetProperty(kAudioFormatProperty_FormatInfo, 0, NULL, &size, &unknown);
    CHECK(status == kAudioFormatUnsupportedDataFormatError, "FormatInfo 'zzzz': %d", (int)status);
}

/* Writes one second of silence at 44100 Hz through a URL made from a CFString path. */
static void infoDictionary(const char *directory) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/info.wav", directory);
    CFStringRef pathString = CFStringCreateWithCString(kCFAllocatorDefault, path, kCFStringEncodingUTF8);
    CFURLRef url = CFURLCreateWithFileSystemPath(kCFAllocatorDefault, pathString, kCFURLPOSIXPathStyle, false);
    CFRelease(pathString);
    CHECK(url != NULL, "CFURLCreateWithFileSystemPath");
    if (!url) return;

    AudioStreamBasicDescription format;
    FillOutASBDForLPCM(&format, 44100, 2, 16, 16, false, false, false);
    printf("FillOutASBDForLPCM: flags 0x%x, %u bytes per frame\n", (unsigned)format.mFormatFlags, (unsigned)format.mBytesPerFrame);
    AudioFileID file = NULL;
    OSStatus status = AudioFileCreateWithURL(url, kAudioFileWAVEType, &format, kAudioFileFlags_EraseFile, &file);
    CHECK(status == noErr, "AudioFileCreateWithURL: %d", (int)status);
    if (status != noErr) { CFRelease(url); return; }
    static SInt16 silence[44100 * 2];
    UInt32 packets = 44100;
    status = AudioFileWritePackets(file, false, sizeof(silence), NULL, 0, &packets, silence);
    CHECK(status == noErr && packets == 44100, "AudioFileWritePackets: %d", (int)status);
    AudioFileClose(file);

    status = AudioFileOpenURL(url, kAudioFileReadPermission, 0, &file);
    CFRelease(url);
    CHECK(status == noErr, "AudioFileOpenURL: %d", (int)status);
    if (status != noErr) return;
    CFDictionaryRef info = NULL;
    UInt32 size = sizeof(info);
    status = AudioFileGetProperty(file, kAudioFilePropertyInfoDictionary, &size, &info);
    CHECK(status == noErr && info != NULL, "InfoDictionary: %d", (int)status);
    if (info) {
        CHECK(CFGetTypeID(info) == CFDictionaryGetTypeID(), "the info is a CFDictionary");
        CFIndex count = CFDictionaryGetCount(info);
        const void *keys[16], *values[16];
        if (count <= 16) CFDictionaryGetKeysAndValues(info, keys, values);
        for (CFIndex i = 0; i < count && i < 16; i++) {
            char k[256], v[256];
            printf("info: %s = %s\n", text((CFStringRef)keys[i], k, sizeof(k)), text((CFStringRef)values[i], v, sizeof(v)));
        }
        CFStringRef duration = (CFStringRef)CFDictionaryGetValue(info, CFSTR(kAFInfoDictionary_ApproximateDurationInSeconds));
        char buffer[64];
        printf("duration: %s\n", duration ? text(duration, buffer, sizeof(buffer)) : "(absent)");
        CHECK(CFDictionaryGetValue(info, CFSTR(kAFInfoDictionary_Title)) == NULL, "no title in a file without one");
        CFRelease(info);
    }
    AudioFileClose(file);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: audio_format DIRECTORY\n");
        return 2;
    }
    CFStringRef title = CFSTR("title");
    CHECK(title == CFSTR("title"), "CFSTR gives one string per text");
    CFRelease(title); /* a no-op for constant strings, as on Apple platforms */
    CHECK(CFStringGetLength(CFSTR("title")) == 5, "CFSTR survives CFRelease");
    printf("codes: %d %d %d %d\n", (int)kAudio_NoError, (int)kAudio_UnimplementedError, (int)kAudio_ParamError,
           (int)kAudio_FileNotFoundError);
    formatInfo();
    infoDictionary(argv[1]);
    printf("%d failures\n", failures);
    return failures == 0 ? 0 : 1;
}
