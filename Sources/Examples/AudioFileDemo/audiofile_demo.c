/*
 * audiofile_demo.c: Audio File Services from C, the way Apple's guides use them.
 *
 * Creates an AIFF file in the guides' recording format (44.1 kHz, big-endian
 * 16-bit signed, stereo), writes packets of a known signal, closes it, opens it
 * again, reads the packets back and compares them, and prints the data format.
 *
 *   cc audiofile_demo.c -I<jaq>/Sources/CAudioToolbox/include \
 *      -L<jaq>/.build/debug -lAudioToolbox -Wl,-rpath,<jaq>/.build/debug -o audiofile_demo
 *   ./audiofile_demo [file.aiff]        (default: audiofile_demo.aiff)
 *
 * Exits 0 only when every byte read back matches what was written.
 */
#include <AudioToolbox/AudioToolbox.h>

#include <stdio.h>
#include <string.h>

enum { kPacketCount = 44100, kPacketsPerWrite = 4410, kPacketsPerRead = 1000, kBytesPerPacket = 4 };

/* Renders a four-char code as 'abcd'. */
static const char *FourCC(UInt32 code, char text[7]) {
    text[0] = '\'';
    for (int i = 0; i < 4; i++) text[1 + i] = (char)((code >> (24 - 8 * i)) & 0xFF);
    text[5] = '\'';
    text[6] = '\0';
    return text;
}

static int Check(OSStatus status, const char *operation) {
    if (status == noErr) return 1;
    char text[7];
    fprintf(stderr, "audiofile_demo: %s failed: %s (%d)\n", operation, FourCC((UInt32)status, text), (int)status);
    return 0;
}

/* A known signal: a ramp on the left channel, its inverse on the right, big-endian. */
static void MakeSignal(UInt8 *bytes) {
    for (UInt32 packet = 0; packet < kPacketCount; packet++) {
        SInt16 left = (SInt16)(UInt16)(packet * 149u);
        SInt16 right = (SInt16)~left;
        UInt8 *frame = bytes + packet * kBytesPerPacket;
        frame[0] = (UInt8)((UInt16)left >> 8);
        frame[1] = (UInt8)left;
        frame[2] = (UInt8)((UInt16)right >> 8);
        frame[3] = (UInt8)right;
    }
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "audiofile_demo.aiff";
    static UInt8 written[kPacketCount * kBytesPerPacket];
    static UInt8 readBack[kPacketCount * kBytesPerPacket];
    MakeSignal(written);

    AudioStreamBasicDescription format;
    memset(&format, 0, sizeof format);
    format.mSampleRate = 44100.0;
    format.mFormatID = kAudioFormatLinearPCM;
    format.mFormatFlags = kLinearPCMFormatFlagIsBigEndian | kLinearPCMFormatFlagIsSignedInteger | kLinearPCMFormatFlagIsPacked;
    format.mBitsPerChannel = 16;
    format.mChannelsPerFrame = 2;
    format.mBytesPerFrame = kBytesPerPacket;
    format.mFramesPerPacket = 1;
    format.mBytesPerPacket = kBytesPerPacket;

    CFURLRef url = CFURLCreateFromFileSystemRepresentation(NULL, (const UInt8 *)path, (CFIndex)strlen(path), false);
    if (url == NULL) {
        fprintf(stderr, "audiofile_demo: cannot make a URL of %s\n", path);
        return 1;
    }

    /* Write: as a recording callback would, one buffer of packets at a time. */
    AudioFileID file = NULL;
    if (!Check(AudioFileCreateWithURL(url, kAudioFileAIFFType, &format, kAudioFileFlags_EraseFile, &file), "AudioFileCreateWithURL"))
        return 1;
    for (SInt64 packet = 0; packet < kPacketCount; packet += kPacketsPerWrite) {
        UInt32 packets = kPacketsPerWrite;
        if (!Check(AudioFileWritePackets(file, false, packets * kBytesPerPacket, NULL, packet, &packets,
                                         written + packet * kBytesPerPacket), "AudioFileWritePackets"))
            return 1;
    }
    if (!Check(AudioFileClose(file), "AudioFileClose")) return 1;

    /* Read: open the file again and ask for its format, as the playback guide does. */
    if (!Check(AudioFileOpenURL(url, kAudioFileReadPermission, 0, &file), "AudioFileOpenURL")) return 1;
    CFRelease(url);
    AudioStreamBasicDescription dataFormat;
    UInt32 size = sizeof dataFormat;
    if (!Check(AudioFileGetProperty(file, kAudioFilePropertyDataFormat, &size, &dataFormat), "AudioFileGetProperty(DataFormat)"))
        return 1;
    UInt64 packetCount = 0;
    size = sizeof packetCount;
    if (!Check(AudioFileGetProperty(file, kAudioFilePropertyAudioDataPacketCount, &size, &packetCount), "AudioFileGetProperty(PacketCount)"))
        return 1;

    SInt64 packet = 0;
    OSStatus status = noErr;
    while (status == noErr) {
        /* ioNumBytes is the room left in the buffer; the last read reaches the end of the file. */
        size_t room = sizeof readBack - (size_t)packet * kBytesPerPacket;
        UInt32 bytes = room < kPacketsPerRead * kBytesPerPacket ? (UInt32)room : kPacketsPerRead * kBytesPerPacket;
        UInt32 packets = kPacketsPerRead;
        status = AudioFileReadPacketData(file, false, &bytes, NULL, packet, &packets, readBack + packet * kBytesPerPacket);
        packet += packets;
        if (status != noErr && status != kAudioFileEndOfFileError) {
            Check(status, "AudioFileReadPacketData");
            return 1;
        }
    }
    AudioFileClose(file);

    char formatID[7];
    printf("file: %s\n", path);
    printf("data format: %.0f Hz, %s, flags 0x%x, %u bits, %u channels, %u bytes per packet\n", dataFormat.mSampleRate,
           FourCC(dataFormat.mFormatID, formatID), (unsigned)dataFormat.mFormatFlags, (unsigned)dataFormat.mBitsPerChannel,
           (unsigned)dataFormat.mChannelsPerFrame, (unsigned)dataFormat.mBytesPerPacket);
    int formatMatches = dataFormat.mSampleRate == format.mSampleRate && dataFormat.mFormatID == format.mFormatID &&
                        dataFormat.mFormatFlags == format.mFormatFlags && dataFormat.mBitsPerChannel == format.mBitsPerChannel &&
                        dataFormat.mChannelsPerFrame == format.mChannelsPerFrame;
    int bytesMatch = packet == kPacketCount && memcmp(written, readBack, sizeof written) == 0;
    printf("packets: %d written, %llu in the file, %lld read back\n", kPacketCount, packetCount, (long long)packet);
    printf("%s\n", formatMatches && bytesMatch ? "all packets match" : "MISMATCH");
    return formatMatches && bytesMatch && packetCount == kPacketCount ? 0 : 1;
}
