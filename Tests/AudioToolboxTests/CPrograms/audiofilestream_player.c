/*
 * AudioFileStream used the way AudioStreamer (and its descendants) use it: a file's bytes
 * arrive in 1500-byte pieces; the property listener creates the player's state on
 * kAudioFileStreamProperty_ReadyToProducePackets (data format, packet buffer size, magic
 * cookie); the packets callback copies each packet with its description; the
 * discontinuity flag is passed from ReadyToProducePackets until the first packets arrive.
 *
 *   audiofilestream_player FILE [TYPE-HINT]
 *
 * prints one line: what the stream said and an Adler-32 of the packets' bytes.
 */
#include <AudioToolbox/AudioToolbox.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    AudioStreamBasicDescription format;
    AudioFileTypeID fileType;
    int ready;
    int failed;
    int discontinuous;
    UInt32 packetBufferSize;
    unsigned char *cookie;
    UInt32 cookieSize;
    unsigned char *data;
    size_t dataSize, dataCapacity;
    size_t packets;
    size_t outside;
    size_t callbacksWithoutDescriptions;
} Player;

static void Append(Player *p, const void *bytes, size_t n) {
    if (p->dataSize + n > p->dataCapacity) {
        size_t capacity = p->dataCapacity ? p->dataCapacity * 2 : 65536;
        while (capacity < p->dataSize + n) capacity *= 2;
        unsigned char *grown = realloc(p->data, capacity);
        if (!grown) { p->failed = 1; return; }
        p->data = grown;
        p->dataCapacity = capacity;
    }
    memcpy(p->data + p->dataSize, bytes, n);
    p->dataSize += n;
}

static void PropertyListener(void *inClientData, AudioFileStreamID inAudioFileStream,
                             AudioFileStreamPropertyID inPropertyID, AudioFileStreamPropertyFlags *ioFlags) {
    Player *p = (Player *)inClientData;
    (void)ioFlags;
    if (inPropertyID == kAudioFileStreamProperty_FileFormat) {
        UInt32 size = sizeof(p->fileType);
        if (AudioFileStreamGetProperty(inAudioFileStream, inPropertyID, &size, &p->fileType) != noErr) p->failed = 1;
    }
    if (inPropertyID != kAudioFileStreamProperty_ReadyToProducePackets) return;
    p->discontinuous = 1;
    UInt32 size = sizeof(p->format);
    if (AudioFileStreamGetProperty(inAudioFileStream, kAudioFileStreamProperty_DataFormat, &size, &p->format) != noErr) {
        p->failed = 1;
        return;
    }
    /* The packet buffer: PacketSizeUpperBound, else MaximumPacketSize, as AudioStreamer sizes it. */
    size = sizeof(p->packetBufferSize);
    if (AudioFileStreamGetProperty(inAudioFileStream, kAudioFileStreamProperty_PacketSizeUpperBound, &size, &p->packetBufferSize) != noErr) {
        size = sizeof(p->packetBufferSize);
        if (AudioFileStreamGetProperty(inAudioFileStream, kAudioFileStreamProperty_MaximumPacketSize, &size, &p->packetBufferSize) != noErr)
            p->packetBufferSize = 2048;
    }
    UInt32 cookieSize = 0;
    Boolean writable = 0;
    if (AudioFileStreamGetPropertyInfo(inAudioFileStream, kAudioFileStreamProperty_MagicCookieData, &cookieSize, &writable) == noErr) {
        p->cookie = malloc(cookieSize);
        if (!p->cookie || AudioFileStreamGetProperty(inAudioFileStream, kAudioFileStreamProperty_MagicCookieData, &cookieSize, p->cookie) != noErr) {
            p->failed = 1;
            return;
        }
        p->cookieSize = cookieSize;
    }
    p->ready++;
}

static void Packets(void *inClientData, UInt32 inNumberBytes, UInt32 inNumberPackets, const void *inInputData,
                    AudioStreamPacketDescription *inPacketDescriptions) {
    Player *p = (Player *)inClientData;
    p->discontinuous = 0;
    if (!inPacketDescriptions) {
        p->callbacksWithoutDescriptions++;
        Append(p, inInputData, inNumberBytes);
        p->packets += inNumberPackets;
        return;
    }
    for (UInt32 i = 0; i < inNumberPackets; i++) {
        SInt64 start = inPacketDescriptions[i].mStartOffset;
        UInt32 size = inPacketDescriptions[i].mDataByteSize;
        if (start < 0 || (UInt64)start + size > inNumberBytes || size > p->packetBufferSize) {
            p->outside++;
            continue;
        }
        Append(p, (const unsigned char *)inInputData + start, size);
        p->packets++;
    }
}

static unsigned long Adler32(const unsigned char *bytes, size_t n) {
    unsigned long a = 1, b = 0;
    for (size_t i = 0; i < n; i++) {
        a = (a + bytes[i]) % 65521;
        b = (b + a) % 65521;
    }
    return b << 16 | a;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE [TYPE-HINT]\n", argv[0]);
        return 2;
    }
    AudioFileTypeID hint = 0;
    if (argc > 2 && strlen(argv[2]) == 4)
        hint = (AudioFileTypeID)argv[2][0] << 24 | (AudioFileTypeID)argv[2][1] << 16 | (AudioFileTypeID)argv[2][2] << 8 | (AudioFileTypeID)argv[2][3];
    FILE *file = fopen(argv[1], "rb");
    if (!file) {
        perror(argv[1]);
        return 1;
    }
    Player player;
    memset(&player, 0, sizeof(player));
    AudioFileStreamID stream = NULL;
    OSStatus status = AudioFileStreamOpen(&player, PropertyListener, Packets, hint, &stream);
    if (status != noErr) {
        fprintf(stderr, "AudioFileStreamOpen: %d\n", (int)status);
        return 1;
    }
    unsigned char chunk[1500];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), file)) > 0 && !player.failed) {
        status = AudioFileStreamParseBytes(stream, (UInt32)n, chunk, player.discontinuous ? kAudioFileStreamParseFlag_Discontinuity : 0);
        if (status != noErr) {
            fprintf(stderr, "AudioFileStreamParseBytes: %d\n", (int)status);
            break;
        }
    }
    fclose(file);
    SInt64 dataOffset = -1;
    UInt32 size = sizeof(dataOffset);
    AudioFileStreamGetProperty(stream, kAudioFileStreamProperty_DataOffset, &size, &dataOffset);
    AudioFileStreamClose(stream);
    UInt32 id = player.format.mFormatID;
    printf("status=%d ready=%d type=%c%c%c%c format=%c%c%c%c rate=%.0f channels=%u frames_per_packet=%u cookie=%u "
           "offset=%lld packets=%zu bytes=%zu adler32=%08lx outside=%zu pcm_callbacks=%zu failed=%d\n",
           (int)status, player.ready, (char)(player.fileType >> 24), (char)(player.fileType >> 16), (char)(player.fileType >> 8),
           (char)player.fileType, (char)(id >> 24), (char)(id >> 16), (char)(id >> 8), (char)id, player.format.mSampleRate,
           (unsigned)player.format.mChannelsPerFrame, (unsigned)player.format.mFramesPerPacket, (unsigned)player.cookieSize,
           (long long)dataOffset, player.packets, player.dataSize, Adler32(player.data, player.dataSize), player.outside,
           player.callbacksWithoutDescriptions, player.failed);
    free(player.cookie);
    free(player.data);
    return status == noErr && !player.failed ? 0 : 1;
}
