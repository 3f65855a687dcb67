/*
 * ext_audio_file_convert.c — Apple's ExtAudioFileConvert sample (ConvertFile / UseExtAF,
 * iPhoneExtAudioFileConvertTest), ported to C for jaq as a porter would: ConvertFile() makes
 * the sample's calls in the sample's order, with CAStreamBasicDescription as
 * AudioStreamBasicDescription and XThrowIfError as a macro that reports and returns; main()
 * and the paths are new.
 *
 *   cc ext_audio_file_convert.c -lAudioToolbox -o ExtAudioFileConvert
 *   ExtAudioFileConvert IN OUT FILETYPE FORMAT [SAMPLERATE [BITRATE]]
 *     FILETYPE: caff, m4af, WAVE, AIFF    FORMAT: lpcm (16-bit), alac, aac
 *
 * Reads IN in its own linear PCM format and writes OUT through ExtAudioFile's converter:
 * the conversion is done on and by the write call, as in the sample.
 */
#include <AudioToolbox/AudioToolbox.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XThrowIfError(error, operation)                                                  \
    do {                                                                                 \
        OSStatus __err = (error);                                                        \
        if (__err) {                                                                     \
            fprintf(stderr, "ExtAudioFileConvert: %s failed (%d)\n", operation, (int)__err); \
            return 1;                                                                    \
        }                                                                                \
    } while (0)

enum { kSrcBufSize = 32768 };

static int ConvertFile(CFURLRef inputFileURL, AudioStreamBasicDescription *inputFormat, CFURLRef outputFileURL,
                       AudioFileTypeID outputFileType, AudioStreamBasicDescription *outputFormat, UInt32 outputBitRate)
{
    ExtAudioFileRef infile, outfile;

    // The source, read through ExtAudioFile.
    OSStatus err = ExtAudioFileOpenURL(inputFileURL, &infile);
    XThrowIfError(err, "ExtAudioFileOpen");

    // A bit rate may decide the encoder's sample rate: leave the rate to the encoder.
    if (outputBitRate)
        outputFormat->mSampleRate = 0.;

    // The destination; an existing file is replaced.
    err = ExtAudioFileCreateWithURL(outputFileURL, outputFileType, outputFormat, NULL, kAudioFileFlags_EraseFile, &outfile);
    XThrowIfError(err, "ExtAudioFileCreateNew");

    // One linear PCM client format for both files: the source's if it is PCM.
    AudioStreamBasicDescription clientFormat = (inputFormat->mFormatID == kAudioFormatLinearPCM ? *inputFormat : *outputFormat);
    UInt32 size = sizeof(clientFormat);
    err = ExtAudioFileSetProperty(infile, kExtAudioFileProperty_ClientDataFormat, size, &clientFormat);
    XThrowIfError(err, "ExtAudioFileSetProperty inFile, kExtAudioFileProperty_ClientDataFormat");

    size = sizeof(clientFormat);
    err = ExtAudioFileSetProperty(outfile, kExtAudioFileProperty_ClientDataFormat, size, &clientFormat);
    XThrowIfError(err, "ExtAudioFileSetProperty outFile, kExtAudioFileProperty_ClientDataFormat");

    if (outputBitRate > 0) {
        printf("Dest bit rate: %d\n", (int)outputBitRate);
        AudioConverterRef outConverter;
        size = sizeof(outConverter);
        err = ExtAudioFileGetProperty(outfile, kExtAudioFileProperty_AudioConverter, &size, &outConverter);
        XThrowIfError(err, "ExtAudioFileGetProperty outFile, kExtAudioFileProperty_AudioConverter");

        err = AudioConverterSetProperty(outConverter, kAudioConverterEncodeBitRate, sizeof(outputBitRate), &outputBitRate);
        XThrowIfError(err, "AudioConverterSetProperty, kAudioConverterEncodeBitRate");

        // The converter changed under ExtAudioFile: tell it to resynchronise.
        CFArrayRef config = NULL;
        err = ExtAudioFileSetProperty(outfile, kExtAudioFileProperty_ConverterConfig, sizeof(config), &config);
        XThrowIfError(err, "ExtAudioFileSetProperty outFile, kExtAudioFileProperty_ConverterConfig");
    }

    char srcBuffer[kSrcBufSize];

    // Read client frames, write client frames: ExtAudioFileWrite converts.
    while (1) {
        AudioBufferList fillBufList;
        fillBufList.mNumberBuffers = 1;
        fillBufList.mBuffers[0].mNumberChannels = inputFormat->mChannelsPerFrame;
        fillBufList.mBuffers[0].mDataByteSize = kSrcBufSize;
        fillBufList.mBuffers[0].mData = srcBuffer;

        // As many client frames as the buffer holds.
        UInt32 numFrames = (kSrcBufSize / clientFormat.mBytesPerFrame);

        err = ExtAudioFileRead(infile, &numFrames, &fillBufList);
        XThrowIfError(err, "ExtAudioFileRead");
        if (!numFrames) {
            // The end of the source.
            break;
        }

        err = ExtAudioFileWrite(outfile, numFrames, &fillBufList);
        XThrowIfError(err, "ExtAudioFileWrite");
    }

    err = ExtAudioFileDispose(outfile);
    XThrowIfError(err, "ExtAudioFileDispose outFile");
    ExtAudioFileDispose(infile);

    return 0;
}

/* ---- main (new for the port) -------------------------------------------------------------- */

static CFURLRef URLForPath(const char *path) {
    return CFURLCreateFromFileSystemRepresentation(NULL, (const UInt8 *)path, (CFIndex)strlen(path), false);
}

static UInt32 CodeFromText(const char *text) {
    char code[4] = {' ', ' ', ' ', ' '};
    for (int i = 0; i < 4 && text[i]; i++) code[i] = text[i];
    return (UInt32)(unsigned char)code[0] << 24 | (UInt32)(unsigned char)code[1] << 16 |
           (UInt32)(unsigned char)code[2] << 8 | (UInt32)(unsigned char)code[3];
}

int main(int argc, char *argv[]) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s IN OUT FILETYPE FORMAT [SAMPLERATE [BITRATE]]\n", argv[0]);
        return 2;
    }
    CFURLRef inputURL = URLForPath(argv[1]), outputURL = URLForPath(argv[2]);
    AudioFileTypeID outputFileType = CodeFromText(argv[3]);

    // The input file's format, as the sample's main reads it.
    AudioFileID probe;
    AudioStreamBasicDescription inputFormat;
    UInt32 size = sizeof(inputFormat);
    XThrowIfError(AudioFileOpenURL(inputURL, kAudioFileReadPermission, 0, &probe), "AudioFileOpenURL");
    XThrowIfError(AudioFileGetProperty(probe, kAudioFilePropertyDataFormat, &size, &inputFormat), "kAudioFilePropertyDataFormat");
    AudioFileClose(probe);

    AudioStreamBasicDescription outputFormat;
    memset(&outputFormat, 0, sizeof(outputFormat));
    outputFormat.mSampleRate = argc > 5 ? atof(argv[5]) : inputFormat.mSampleRate;
    outputFormat.mChannelsPerFrame = inputFormat.mChannelsPerFrame;
    if (strcmp(argv[4], "lpcm") == 0) {
        outputFormat.mFormatID = kAudioFormatLinearPCM;
        outputFormat.mFormatFlags = kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsPacked;
        if (outputFileType == kAudioFileAIFFType) outputFormat.mFormatFlags |= kAudioFormatFlagIsBigEndian;
        outputFormat.mBitsPerChannel = 16;
        outputFormat.mBytesPerFrame = outputFormat.mBytesPerPacket = 2 * outputFormat.mChannelsPerFrame;
        outputFormat.mFramesPerPacket = 1;
    } else if (strcmp(argv[4], "alac") == 0) {
        outputFormat.mFormatID = kAudioFormatAppleLossless;
        outputFormat.mFormatFlags = kAppleLosslessFormatFlag_16BitSourceData;
    } else if (strcmp(argv[4], "aac") == 0) {
        outputFormat.mFormatID = kAudioFormatMPEG4AAC;
    } else {
        fprintf(stderr, "%s: unknown format %s\n", argv[0], argv[4]);
        return 2;
    }
    UInt32 outputBitRate = argc > 6 ? (UInt32)atoi(argv[6]) : 0;

    int result = ConvertFile(inputURL, &inputFormat, outputURL, outputFileType, &outputFormat, outputBitRate);
    CFRelease(inputURL);
    CFRelease(outputURL);
    if (result == 0) printf("converted %s to %s\n", argv[1], argv[2]);
    return result;
}
