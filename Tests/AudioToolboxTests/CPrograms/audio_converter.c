/*
 * AudioConverter from C as a ported program calls it: AudioConverterNewSpecific with software
 * and hardware class descriptions, AudioConverterConvertComplexBuffer into non-interleaved
 * buffers with kAudioConverterChannelMap, and a 44.1 -> 48 kHz FillComplexBuffer.
 * Prints one line per check and "N failures".
 */
#include <AudioToolbox/AudioToolbox.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

static void check(int ok, const char *what) {
    printf("%s: %s\n", ok ? "ok" : "FAILED", what);
    if (!ok) failures++;
}

static AudioStreamBasicDescription pcm(Float64 rate, UInt32 channels, int isFloat, int nonInterleaved) {
    AudioStreamBasicDescription f;
    memset(&f, 0, sizeof f);
    UInt32 bytes = isFloat ? 4 : 2;
    f.mSampleRate = rate;
    f.mFormatID = kAudioFormatLinearPCM;
    f.mFormatFlags = (isFloat ? kAudioFormatFlagIsFloat : kAudioFormatFlagIsSignedInteger) | kAudioFormatFlagIsPacked
                     | (nonInterleaved ? kAudioFormatFlagIsNonInterleaved : 0);
    f.mBytesPerFrame = bytes * (nonInterleaved ? 1 : channels);
    f.mBytesPerPacket = f.mBytesPerFrame;
    f.mFramesPerPacket = 1;
    f.mChannelsPerFrame = channels;
    f.mBitsPerChannel = bytes * 8;
    return f;
}

typedef struct {
    float *samples;
    UInt32 frames;
    UInt32 position;
} Feed;

static OSStatus feed(AudioConverterRef converter, UInt32 *ioNumberDataPackets, AudioBufferList *ioData,
                     AudioStreamPacketDescription **outDataPacketDescription, void *inUserData) {
    (void)converter;
    (void)outDataPacketDescription;
    Feed *source = inUserData;
    UInt32 frames = source->frames - source->position;
    if (frames > *ioNumberDataPackets) frames = *ioNumberDataPackets;
    if (frames > 1001) frames = 1001;
    ioData->mBuffers[0].mData = source->samples + source->position;
    ioData->mBuffers[0].mDataByteSize = frames * sizeof(float);
    source->position += frames;
    *ioNumberDataPackets = frames;
    return noErr;
}

int main(void) {
    /* NewSpecific: the software AAC encoder, not a hardware one. */
    AudioStreamBasicDescription in16 = pcm(44100, 2, 0, 0);
    AudioStreamBasicDescription aac;
    memset(&aac, 0, sizeof aac);
    aac.mSampleRate = 44100;
    aac.mFormatID = kAudioFormatMPEG4AAC;
    aac.mChannelsPerFrame = 2;
    AudioClassDescription classes[2] = {
        { kAudioEncoderComponentType, kAudioFormatMPEG4AAC, kAppleHardwareAudioCodecManufacturer },
        { kAudioEncoderComponentType, kAudioFormatMPEG4AAC, kAppleSoftwareAudioCodecManufacturer },
    };
    AudioConverterRef encoder = NULL;
    check(AudioConverterNewSpecific(&in16, &aac, 1, classes, &encoder) == kAudioConverterErr_FormatNotSupported && encoder == NULL,
          "NewSpecific with a hardware codec only is 'fmt?'");
    check(AudioConverterNewSpecific(&in16, &aac, 2, classes, &encoder) == noErr && encoder != NULL,
          "NewSpecific with the software codec");
    UInt32 bitRate = 0, size = sizeof bitRate;
    check(AudioConverterGetProperty(encoder, kAudioConverterEncodeBitRate, &size, &bitRate) == noErr && bitRate > 0,
          "the encoder has a bit rate");
    UInt32 canResume = 7;
    size = sizeof canResume;
    check(AudioConverterGetProperty(encoder, kAudioConverterPropertyCanResumeFromInterruption, &size, &canResume)
              == kAudioConverterErr_PropertyNotSupported && canResume == 7,
          "CanResumeFromInterruption is not supported (a software codec)");
    UInt32 layoutSize = 0;
    check(AudioConverterGetPropertyInfo(encoder, kAudioConverterOutputChannelLayout, &layoutSize, NULL) == kAudioConverterErr_PropertyNotSupported,
          "no OutputChannelLayout");
    UInt32 codecQuality = kAudioConverterQuality_Max;
    check(AudioConverterSetProperty(encoder, kAudioConverterCodecQuality, sizeof codecQuality, &codecQuality) == noErr,
          "kAudioConverterCodecQuality is accepted");
    codecQuality = 0;
    size = sizeof codecQuality;
    check(AudioConverterGetProperty(encoder, kAudioConverterCodecQuality, &size, &codecQuality) == noErr
              && codecQuality == kAudioConverterQuality_Max, "and read back");
    codecQuality = 128;
    check(AudioConverterSetProperty(encoder, kAudioConverterCodecQuality, sizeof codecQuality, &codecQuality) == kAudio_ParamError,
          "a quality above Max is kAudio_ParamError");
    AudioConverterDispose(encoder);

    /* ConvertComplexBuffer: 16-bit interleaved stereo to non-interleaved float, channels swapped. */
    AudioStreamBasicDescription planar = pcm(44100, 2, 1, 1);
    AudioConverterRef converter = NULL;
    check(AudioConverterNew(&in16, &planar, &converter) == noErr, "AudioConverterNew 16-bit -> non-interleaved float");
    SInt32 map[2] = { 1, 0 };
    check(AudioConverterSetProperty(converter, kAudioConverterChannelMap, sizeof map, map) == noErr, "kAudioConverterChannelMap {1, 0}");
    enum { frames = 256 };
    SInt16 interleaved[frames * 2];
    for (int i = 0; i < frames * 2; i++) interleaved[i] = (SInt16)(i * 100 - 20000);
    float left[frames], right[frames];
    AudioBufferList input = { 1, { { 2, sizeof interleaved, interleaved } } };
    AudioBufferList *output = malloc(offsetof(AudioBufferList, mBuffers) + 2 * sizeof(AudioBuffer));
    output->mNumberBuffers = 2;
    output->mBuffers[0] = (AudioBuffer){ 1, sizeof left, left };
    output->mBuffers[1] = (AudioBuffer){ 1, sizeof right, right };
    check(AudioConverterConvertComplexBuffer(converter, frames, &input, output) == noErr, "ConvertComplexBuffer");
    int exact = output->mBuffers[0].mDataByteSize == sizeof left && output->mBuffers[1].mDataByteSize == sizeof right;
    for (int f = 0; f < frames; f++) {
        exact = exact && left[f] == interleaved[f * 2 + 1] / 32768.0f && right[f] == interleaved[f * 2] / 32768.0f;
    }
    check(exact, "the channels are swapped, every sample exact");
    output->mBuffers[0].mDataByteSize = 16;
    check(AudioConverterConvertComplexBuffer(converter, frames, &input, output) == kAudioConverterErr_InvalidOutputSize,
          "a buffer too small is 'otsz'");
    free(output);
    AudioConverterDispose(converter);

    /* A rate conversion through FillComplexBuffer: 44100 frames become 48000. */
    AudioStreamBasicDescription mono44 = pcm(44100, 1, 1, 0), mono48 = pcm(48000, 1, 1, 0);
    check(AudioConverterNew(&mono44, &mono48, &converter) == noErr, "AudioConverterNew 44.1 -> 48 kHz");
    UInt32 quality = kAudioConverterQuality_Max;
    check(AudioConverterSetProperty(converter, kAudioConverterSampleRateConverterQuality, sizeof quality, &quality) == noErr,
          "kAudioConverterSampleRateConverterQuality Max");
    Feed source = { calloc(44100, sizeof(float)), 44100, 0 };
    float out[4096];
    UInt32 total = 0;
    for (;;) {
        AudioBufferList list = { 1, { { 1, sizeof out, out } } };
        UInt32 packets = 4096;
        if (AudioConverterFillComplexBuffer(converter, feed, &source, &packets, &list, NULL) != noErr || packets == 0) break;
        total += packets;
    }
    printf("44100 frames at 44.1 kHz gave %u at 48 kHz\n", (unsigned)total);
    check(total == 48000, "the output has the input's duration");
    free(source.samples);
    AudioConverterDispose(converter);

    /* NULL arguments and disposed converters are kAudio_ParamError, never a crash. */
    check(AudioConverterNewSpecific(NULL, &in16, 2, classes, &converter) == kAudio_ParamError, "NewSpecific(NULL format)");
    check(AudioConverterNewSpecific(&in16, &aac, 2, NULL, &converter) == kAudio_ParamError, "NewSpecific(NULL classes)");
    check(AudioConverterNewSpecific(&in16, &aac, 0, classes, &converter) == kAudio_ParamError, "NewSpecific(0 classes)");
    check(AudioConverterNewSpecific(&in16, &aac, 2, classes, NULL) == kAudio_ParamError, "NewSpecific(NULL out)");
    AudioBufferList empty = { 1, { { 2, 0, NULL } } };
    check(AudioConverterConvertComplexBuffer(NULL, 0, &empty, &empty) == kAudio_ParamError, "ConvertComplexBuffer(NULL converter)");
    check(AudioConverterNew(&in16, &in16, &converter) == noErr, "AudioConverterNew 16-bit -> 16-bit");
    check(AudioConverterConvertComplexBuffer(converter, 0, NULL, &empty) == kAudio_ParamError, "ConvertComplexBuffer(NULL input)");
    check(AudioConverterConvertComplexBuffer(converter, 0, &empty, NULL) == kAudio_ParamError, "ConvertComplexBuffer(NULL output)");
    check(AudioConverterConvertComplexBuffer(converter, 1, &empty, &empty) == kAudio_ParamError, "ConvertComplexBuffer(a buffer without data)");
    check(AudioConverterSetProperty(converter, kAudioConverterChannelMap, 2 * sizeof(SInt32), NULL) == kAudio_ParamError,
          "ChannelMap(NULL)");
    size = 4;
    check(AudioConverterGetProperty(converter, kAudioConverterPropertyCalculateOutputBufferSize, &size, NULL) == kAudio_ParamError,
          "CalculateOutputBufferSize(NULL)");
    AudioConverterDispose(converter);
    check(AudioConverterConvertComplexBuffer(converter, 0, &empty, &empty) == kAudio_ParamError, "ConvertComplexBuffer(disposed)");

    printf("%d failures\n", failures);
    return failures == 0 ? 0 : 1;
}
