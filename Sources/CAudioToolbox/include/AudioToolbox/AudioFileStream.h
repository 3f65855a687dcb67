/*
 * Audio File Stream Services for jaq: a file's bytes, as they arrive (from a network, in
 * chunks split anywhere), parsed into its properties and its audio packets.
 *
 * Names, types, constants and result codes are Apple's (AudioFileStream.h). The property
 * listener and the packets callback run inside AudioFileStreamParseBytes, on the caller's
 * thread, as Apple's do. Streams read: ADTS AAC, MP3 (ID3v2 tags skipped), CAF, MPEG-4
 * (.m4a/.mp4, the movie header before the media data), WAVE and AIFF/AIFC. Docs/audiofilestream.md.
 */
#ifndef JAQ_AUDIOFILESTREAM_H
#define JAQ_AUDIOFILESTREAM_H

#include "../CoreAudioTypes/CoreAudioTypes.h"
#include "AudioFile.h"
#include "AudioFormat.h"

JAQ_EXTERN_C_BEGIN
JAQ_ASSUME_NONNULL_BEGIN

/* ---- Flags -------------------------------------------------------------- */

/** Passed to the property listener (kAudioFileStreamPropertyFlag_CacheProperty may be set by it). */
JAQ_TYPED_OPTIONS_BEGIN(UInt32, AudioFileStreamPropertyFlags)
    kAudioFileStreamPropertyFlag_PropertyIsCached CF_SWIFT_NAME(propertyIsCached) = 1,
    kAudioFileStreamPropertyFlag_CacheProperty CF_SWIFT_NAME(cacheProperty) = 2
JAQ_TYPED_OPTIONS_END(AudioFileStreamPropertyFlags)

/** AudioFileStreamParseBytes: the bytes do not follow the previous ones (after a seek);
    a partial packet held from before is dropped. */
JAQ_TYPED_OPTIONS_BEGIN(UInt32, AudioFileStreamParseFlags)
    kAudioFileStreamParseFlag_Discontinuity CF_SWIFT_NAME(discontinuity) = 1
JAQ_TYPED_OPTIONS_END(AudioFileStreamParseFlags)

/** AudioFileStreamSeek: the byte offset returned is an estimate. */
JAQ_TYPED_OPTIONS_BEGIN(UInt32, AudioFileStreamSeekFlags)
    kAudioFileStreamSeekFlag_OffsetIsEstimated CF_SWIFT_NAME(offsetIsEstimated) = 1
JAQ_TYPED_OPTIONS_END(AudioFileStreamSeekFlags)

/* ---- Types -------------------------------------------------------------- */

typedef UInt32 AudioFileStreamPropertyID;
typedef struct OpaqueAudioFileStreamID *AudioFileStreamID;

typedef void (*AudioFileStream_PropertyListenerProc)(void *JAQ_NULLABLE inClientData,
                                                     AudioFileStreamID inAudioFileStream,
                                                     AudioFileStreamPropertyID inPropertyID,
                                                     AudioFileStreamPropertyFlags *ioFlags);

typedef void (*AudioFileStream_PacketsProc)(void *JAQ_NULLABLE inClientData, UInt32 inNumberBytes,
                                            UInt32 inNumberPackets, const void *inInputData,
                                            AudioStreamPacketDescription *JAQ_NULLABLE inPacketDescriptions);

/* ---- Result codes (Apple's values) ---------------------------------------- */

CF_ENUM(OSStatus) {
    kAudioFileStreamError_UnsupportedFileType = 0x7479703F,      /* 'typ?' */
    kAudioFileStreamError_UnsupportedDataFormat = 0x666D743F,    /* 'fmt?' */
    kAudioFileStreamError_UnsupportedProperty = 0x7074793F,      /* 'pty?' */
    kAudioFileStreamError_BadPropertySize = 0x2173697A,          /* '!siz' */
    kAudioFileStreamError_NotOptimized = 0x6F70746D,             /* 'optm' */
    kAudioFileStreamError_InvalidPacketOffset = 0x70636B3F,      /* 'pck?' */
    kAudioFileStreamError_InvalidFile = 0x6474613F,              /* 'dta?' */
    kAudioFileStreamError_ValueUnknown = 0x756E6B3F,             /* 'unk?' */
    kAudioFileStreamError_DataUnavailable = 0x6D6F7265,          /* 'more' */
    kAudioFileStreamError_IllegalOperation = 0x6E6F7065,         /* 'nope' */
    kAudioFileStreamError_UnspecifiedError = 0x7768743F,         /* 'wht?' */
    kAudioFileStreamError_DiscontinuityCantRecover = 0x64736321  /* 'dsc!' */
};

/* ---- Properties (Apple's values) ------------------------------------------ */

CF_ENUM(AudioFileStreamPropertyID) {
    kAudioFileStreamProperty_ReadyToProducePackets = 0x72656479,   /* 'redy' UInt32 */
    kAudioFileStreamProperty_FileFormat = 0x66666D74,              /* 'ffmt' AudioFileTypeID */
    kAudioFileStreamProperty_DataFormat = 0x64666D74,              /* 'dfmt' AudioStreamBasicDescription */
    kAudioFileStreamProperty_FormatList = 0x666C7374,              /* 'flst' AudioFormatListItem[] */
    kAudioFileStreamProperty_MagicCookieData = 0x6D676963,         /* 'mgic' bytes */
    kAudioFileStreamProperty_AudioDataByteCount = 0x62636E74,      /* 'bcnt' UInt64 */
    kAudioFileStreamProperty_AudioDataPacketCount = 0x70636E74,    /* 'pcnt' UInt64 */
    kAudioFileStreamProperty_MaximumPacketSize = 0x7073697A,       /* 'psze' UInt32 */
    kAudioFileStreamProperty_DataOffset = 0x646F6666,              /* 'doff' SInt64 */
    kAudioFileStreamProperty_ChannelLayout = 0x636D6170,           /* 'cmap' AudioChannelLayout */
    kAudioFileStreamProperty_PacketToFrame = 0x706B6672,           /* 'pkfr' AudioFramePacketTranslation */
    kAudioFileStreamProperty_FrameToPacket = 0x6672706B,           /* 'frpk' AudioFramePacketTranslation */
    kAudioFileStreamProperty_RestrictsRandomAccess = 0x72726170,   /* 'rrap' UInt32 (not answered) */
    kAudioFileStreamProperty_PacketToRollDistance = 0x706B726C,    /* 'pkrl' (not answered) */
    kAudioFileStreamProperty_PreviousIndependentPacket = 0x70696E64, /* 'pind' (not answered) */
    kAudioFileStreamProperty_NextIndependentPacket = 0x6E696E64,   /* 'nind' (not answered) */
    kAudioFileStreamProperty_PacketToDependencyInfo = 0x706B6470,  /* 'pkdp' (not answered) */
    kAudioFileStreamProperty_PacketToByte = 0x706B6279,            /* 'pkby' AudioBytePacketTranslation */
    kAudioFileStreamProperty_ByteToPacket = 0x6279706B,            /* 'bypk' AudioBytePacketTranslation */
    kAudioFileStreamProperty_PacketTableInfo = 0x706E666F,         /* 'pnfo' AudioFilePacketTableInfo */
    kAudioFileStreamProperty_PacketSizeUpperBound = 0x706B7562,    /* 'pkub' UInt32 */
    kAudioFileStreamProperty_AverageBytesPerPacket = 0x61627070,   /* 'abpp' Float64 */
    kAudioFileStreamProperty_BitRate = 0x62726174,                 /* 'brat' UInt32, bits per second */
    kAudioFileStreamProperty_InfoDictionary = 0x696E666F           /* 'info' (not answered) */
};

/* AudioFormatListItem (kAudioFileStreamProperty_FormatList) is AudioFormat.h's, as on Apple platforms. */

/* ---- Functions ------------------------------------------------------------ */

/**
 * Opens a parser. `inFileTypeHint` (kAudioFileAAC_ADTSType, kAudioFileMP3Type, ...) may be 0:
 * the type is recognised from the first bytes.
 */
OSStatus AudioFileStreamOpen(void *JAQ_NULLABLE inClientData,
                             AudioFileStream_PropertyListenerProc inPropertyListenerProc,
                             AudioFileStream_PacketsProc inPacketsProc, AudioFileTypeID inFileTypeHint,
                             AudioFileStreamID JAQ_NULLABLE *JAQ_NONNULL outAudioFileStream);

/** Parses the next bytes of the stream; the callbacks are called from inside. */
OSStatus AudioFileStreamParseBytes(AudioFileStreamID inAudioFileStream, UInt32 inDataByteSize,
                                   const void *JAQ_NULLABLE inData, AudioFileStreamParseFlags inFlags);

/**
 * The byte offset (from the start of the audio data) to fetch for packet `inPacketOffset`;
 * the next ParseBytes (with kAudioFileStreamParseFlag_Discontinuity) gives the bytes from there.
 */
OSStatus AudioFileStreamSeek(AudioFileStreamID inAudioFileStream, SInt64 inPacketOffset,
                             SInt64 *outDataByteOffset, AudioFileStreamSeekFlags *ioFlags);

OSStatus AudioFileStreamGetPropertyInfo(AudioFileStreamID inAudioFileStream, AudioFileStreamPropertyID inPropertyID,
                                        UInt32 *JAQ_NULLABLE outPropertyDataSize, Boolean *JAQ_NULLABLE outWritable);

OSStatus AudioFileStreamGetProperty(AudioFileStreamID inAudioFileStream, AudioFileStreamPropertyID inPropertyID,
                                    UInt32 *ioPropertyDataSize, void *outPropertyData);

OSStatus AudioFileStreamSetProperty(AudioFileStreamID inAudioFileStream, AudioFileStreamPropertyID inPropertyID,
                                    UInt32 inPropertyDataSize, const void *inPropertyData);

OSStatus AudioFileStreamClose(AudioFileStreamID inAudioFileStream);

JAQ_ASSUME_NONNULL_END
JAQ_EXTERN_C_END

#endif
