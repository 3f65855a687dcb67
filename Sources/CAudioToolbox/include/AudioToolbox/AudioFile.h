/*
 * Audio File Services for jaq, implemented on libsndfile.
 *
 * Names, types, constants and result codes are Apple's (AudioFile.h).
 * Compressed file types (FLAC, Ogg Vorbis/Opus, MP3) are presented as their
 * decoded linear PCM and are written from linear PCM (libsndfile encodes).
 */
#ifndef JAQ_AUDIOFILE_H
#define JAQ_AUDIOFILE_H

#include "../CoreAudioTypes/CoreAudioTypes.h"

JAQ_EXTERN_C_BEGIN
JAQ_ASSUME_NONNULL_BEGIN

typedef UInt32 AudioFileTypeID;
typedef UInt32 AudioFilePropertyID;
typedef struct OpaqueAudioFileID *AudioFileID;

CF_ENUM(AudioFileTypeID) {
    kAudioFileAIFFType = 0x41494646,        /* 'AIFF' */
    kAudioFileAIFCType = 0x41494643,        /* 'AIFC' */
    kAudioFileWAVEType = 0x57415645,        /* 'WAVE' */
    kAudioFileRF64Type = 0x52463634,        /* 'RF64' */
    kAudioFileBW64Type = 0x42573634,        /* 'BW64' */
    kAudioFileWave64Type = 0x57363466,      /* 'W64f' */
    kAudioFileSoundDesigner2Type = 0x53643266, /* 'Sd2f' */
    kAudioFileNextType = 0x4E655854,        /* 'NeXT' */
    kAudioFileMP3Type = 0x4D504733,         /* 'MPG3' */
    kAudioFileMP2Type = 0x4D504732,         /* 'MPG2' */
    kAudioFileMP1Type = 0x4D504731,         /* 'MPG1' */
    kAudioFileAC3Type = 0x61632D33,         /* 'ac-3' */
    kAudioFileAAC_ADTSType = 0x61647473,    /* 'adts' */
    kAudioFileMPEG4Type = 0x6D703466,       /* 'mp4f' */
    kAudioFileM4AType = 0x6D346166,         /* 'm4af' */
    kAudioFileM4BType = 0x6D346266,         /* 'm4bf' */
    kAudioFileCAFType = 0x63616666,         /* 'caff' */
    kAudioFile3GPType = 0x33677070,         /* '3gpp' */
    kAudioFile3GP2Type = 0x33677032,        /* '3gp2' */
    kAudioFileAMRType = 0x616D7266,         /* 'amrf' */
    kAudioFileFLACType = 0x666C6163,        /* 'flac' */
    kAudioFileLATMInLOASType = 0x6C6F6173   /* 'loas' */
};

/*
 * Ogg files have no Apple type ID; jaq adds these (read and write through
 * libsndfile). Other types from Apple's list that libsndfile cannot write
 * return kAudioFileUnsupportedFileTypeError.
 */
CF_ENUM(AudioFileTypeID) {
    kAudioFileOggVorbisType = 0x4F676756,   /* 'OggV' (jaq) */
    kAudioFileOggOpusType = 0x4F67674F      /* 'OggO' (jaq) */
};

CF_ENUM(OSStatus) {
    kAudioFileUnspecifiedError = 0x7768743F,            /* 'wht?' */
    kAudioFileUnsupportedFileTypeError = 0x7479703F,    /* 'typ?' */
    kAudioFileUnsupportedDataFormatError = 0x666D743F,  /* 'fmt?' */
    kAudioFileUnsupportedPropertyError = 0x7074793F,    /* 'pty?' */
    kAudioFileBadPropertySizeError = 0x2173697A,        /* '!siz' */
    kAudioFilePermissionsError = 0x70726D3F,            /* 'prm?' */
    kAudioFileNotOptimizedError = 0x6F70746D,           /* 'optm' */
    kAudioFileInvalidChunkError = 0x63686B3F,           /* 'chk?' */
    kAudioFileDoesNotAllow64BitDataSizeError = 0x6F66663F, /* 'off?' */
    kAudioFileInvalidPacketOffsetError = 0x70636B3F,    /* 'pck?' */
    kAudioFileInvalidPacketDependencyError = 0x6465703F, /* 'dep?' */
    kAudioFileInvalidFileError = 0x6474613F,            /* 'dta?' */
    kAudioFileOperationNotSupportedError = 0x6F703F3F,  /* 'op??' */
    kAudioFileNotOpenError = -38,
    kAudioFileEndOfFileError = -39,
    kAudioFilePositionError = -40,
    kAudioFileFileNotFoundError = -43
};

JAQ_TYPED_OPTIONS_BEGIN(UInt32, AudioFileFlags)
    kAudioFileFlags_EraseFile = 1,
    kAudioFileFlags_DontPageAlignAudioData = 2
JAQ_TYPED_OPTIONS_END(AudioFileFlags)

JAQ_TYPED_ENUM_BEGIN(SInt8, AudioFilePermissions)
    kAudioFileReadPermission = 0x01,
    kAudioFileWritePermission = 0x02,
    kAudioFileReadWritePermission = 0x03
JAQ_TYPED_ENUM_END(AudioFilePermissions)

CF_ENUM(AudioFilePropertyID) {
    kAudioFilePropertyFileFormat = 0x66666D74,            /* 'ffmt' */
    kAudioFilePropertyDataFormat = 0x64666D74,            /* 'dfmt' */
    kAudioFilePropertyIsOptimized = 0x6F70746D,           /* 'optm' */
    kAudioFilePropertyMagicCookieData = 0x6D676963,       /* 'mgic' */
    kAudioFilePropertyAudioDataByteCount = 0x62636E74,    /* 'bcnt' */
    kAudioFilePropertyAudioDataPacketCount = 0x70636E74,  /* 'pcnt' */
    kAudioFilePropertyMaximumPacketSize = 0x70737A65,     /* 'psze' */
    kAudioFilePropertyDataOffset = 0x646F6666,            /* 'doff' */
    kAudioFilePropertyChannelLayout = 0x636D6170,         /* 'cmap' */
    kAudioFilePropertyDeferSizeUpdates = 0x64737A75,      /* 'dszu' */
    kAudioFilePropertyDataFormatName = 0x666E6D65,        /* 'fnme' */
    kAudioFilePropertyMarkerList = 0x6D6B6C73,            /* 'mkls' */
    kAudioFilePropertyRegionList = 0x72676C73,            /* 'rgls' */
    kAudioFilePropertyPacketToFrame = 0x706B6672,         /* 'pkfr' */
    kAudioFilePropertyFrameToPacket = 0x6672706B,         /* 'frpk' */
    kAudioFilePropertyPacketToByte = 0x706B6279,          /* 'pkby' */
    kAudioFilePropertyByteToPacket = 0x6279706B,          /* 'bypk' */
    kAudioFilePropertyChunkIDs = 0x63686964,              /* 'chid' */
    kAudioFilePropertyInfoDictionary = 0x696E666F,        /* 'info' */
    kAudioFilePropertyPacketTableInfo = 0x706E6669,       /* 'pnfo' */
    kAudioFilePropertyFormatList = 0x666C7374,            /* 'flst' */
    kAudioFilePropertyPacketSizeUpperBound = 0x706B7562,  /* 'pkub' */
    kAudioFilePropertyReserveDuration = 0x72737276,       /* 'rsrv' */
    kAudioFilePropertyEstimatedDuration = 0x65647572,     /* 'edur' */
    kAudioFilePropertyBitRate = 0x62726174,               /* 'brat' */
    kAudioFilePropertyID3Tag = 0x69643374,                /* 'id3t' */
    kAudioFilePropertySourceBitDepth = 0x73627464,        /* 'sbtd' */
    kAudioFilePropertyAlbumArtwork = 0x61617274,          /* 'aart' */
    kAudioFilePropertyAudioTrackCount = 0x61746374,       /* 'atct' */
    kAudioFilePropertyUseAudioTrack = 0x7561746B          /* 'uatk' */
};

CF_ENUM(AudioFilePropertyID) {
    /** jaq's own (not Apple's): UInt32, write-only, MPEG-4 files (.m4a, .mp4) being created,
        before the first packet. Non-zero writes the file crash-safe: fragmented MPEG-4, a
        fragment about every second, so that a writer killed mid-file leaves a file that opens
        up to its last second (its priming not trimmed); AudioFileClose then rewrites it,
        packets copied, into a regular MPEG-4 file with its exact length. jaq record sets it. */
    kAudioFilePropertyJaqCrashSafeWrites = 0x6A716373,    /* 'jqcs' */
    /** jaq's own (not Apple's): read-only, files libsndfile reads whose container Apple has no
        type ID for (kAudioFilePropertyFileFormat is 0: VOC, IRCAM, NIST...): the container's
        name as libsndfile gives it, NUL-terminated UTF-8 ("VOC (Creative Labs)"). */
    kAudioFilePropertyJaqContainerName = 0x6A71636E       /* 'jqcn' */
};

/** Value of kAudioFilePropertyPacketToFrame / FrameToPacket. */
typedef struct AudioFramePacketTranslation {
    SInt64 mFrame;
    SInt64 mPacket;
    UInt32 mFrameOffsetInPacket;
} AudioFramePacketTranslation;

/** Value of kAudioFilePropertyPacketToByte / ByteToPacket. */
JAQ_TYPED_OPTIONS_BEGIN(UInt32, AudioBytePacketTranslationFlags)
    kBytePacketTranslationFlag_IsEstimate = 1
JAQ_TYPED_OPTIONS_END(AudioBytePacketTranslationFlags)

typedef struct AudioBytePacketTranslation {
    SInt64 mByte;
    SInt64 mPacket;
    UInt32 mByteOffsetInPacket;
    AudioBytePacketTranslationFlags mFlags;
} AudioBytePacketTranslation;

/**
 * Value of kAudioFilePropertyPacketTableInfo: the frames of a compressed file's
 * packets that are audio. The decoder's first mPrimingFrames frames (encoder
 * delay) and the last packet's final mRemainderFrames frames are not;
 * mNumberValidFrames are what remains.
 */
typedef struct AudioFilePacketTableInfo {
    SInt64 mNumberValidFrames;
    SInt32 mPrimingFrames;
    SInt32 mRemainderFrames;
} AudioFilePacketTableInfo;
JAQ_STATIC_ASSERT(sizeof(AudioFilePacketTableInfo) == 16, "AudioFilePacketTableInfo is 16 bytes, as Apple's");

/* ---- Functions ---------------------------------------------------------- */

/**
 * Creates a new audio file (or, with kAudioFileFlags_EraseFile, replaces an
 * existing one) of type `inFileType` holding data in `inFormat`.
 * Returns kAudioFileUnsupportedFileTypeError for a type libsndfile cannot
 * write and kAudioFileUnsupportedDataFormatError for a format the container
 * cannot hold.
 */
OSStatus AudioFileCreateWithURL(CFURLRef inFileRef, AudioFileTypeID inFileType,
                                const AudioStreamBasicDescription *inFormat, AudioFileFlags inFlags,
                                AudioFileID JAQ_NULLABLE *JAQ_NONNULL outAudioFile) CF_REFINED_FOR_SWIFT;

/** Opens an existing audio file; `inFileTypeHint` may be 0. */
OSStatus AudioFileOpenURL(CFURLRef inFileRef, AudioFilePermissions inPermissions, AudioFileTypeID inFileTypeHint,
                          AudioFileID JAQ_NULLABLE *JAQ_NONNULL outAudioFile) CF_REFINED_FOR_SWIFT;

/** Closes the file, bringing its header up to date. */
OSStatus AudioFileClose(AudioFileID inAudioFile);

/** Moves the audio data to its optimal place; a successful no-op here. */
OSStatus AudioFileOptimize(AudioFileID inAudioFile);

/** Reads bytes of audio data (in the file's data format) from `inStartingByte`. */
OSStatus AudioFileReadBytes(AudioFileID inAudioFile, Boolean inUseCache, SInt64 inStartingByte,
                            UInt32 *ioNumBytes, void *outBuffer);

/** Writes bytes of audio data (in the file's data format) at `inStartingByte`. */
OSStatus AudioFileWriteBytes(AudioFileID inAudioFile, Boolean inUseCache, SInt64 inStartingByte,
                             UInt32 *ioNumBytes, const void *inBuffer);

/**
 * Reads packets. `ioNumBytes` is the buffer's size on input and the bytes
 * read on output; a read that reaches the end returns the shorter counts with
 * kAudioFileEndOfFileError.
 */
OSStatus AudioFileReadPacketData(AudioFileID inAudioFile, Boolean inUseCache, UInt32 *ioNumBytes,
                                 AudioStreamPacketDescription *JAQ_NULLABLE outPacketDescriptions,
                                 SInt64 inStartingPacket, UInt32 *ioNumPackets, void *JAQ_NULLABLE outBuffer);

/** Deprecated form of AudioFileReadPacketData: reaching the end is noErr. */
OSStatus AudioFileReadPackets(AudioFileID inAudioFile, Boolean inUseCache, UInt32 *outNumBytes,
                              AudioStreamPacketDescription *JAQ_NULLABLE outPacketDescriptions,
                              SInt64 inStartingPacket, UInt32 *ioNumPackets, void *JAQ_NULLABLE outBuffer)
    __attribute__((deprecated("use AudioFileReadPacketData")));

/** Writes packets in the file's data format at `inStartingPacket`. */
OSStatus AudioFileWritePackets(AudioFileID inAudioFile, Boolean inUseCache, UInt32 inNumBytes,
                               const AudioStreamPacketDescription *JAQ_NULLABLE inPacketDescriptions,
                               SInt64 inStartingPacket, UInt32 *ioNumPackets, const void *inBuffer);

/** Size of a property's value, and whether it can be set. */
OSStatus AudioFileGetPropertyInfo(AudioFileID inAudioFile, AudioFilePropertyID inPropertyID,
                                  UInt32 *JAQ_NULLABLE outDataSize, UInt32 *JAQ_NULLABLE isWritable);

/** Reads a property; `ioDataSize` is the buffer size on input, the value's size on output. */
OSStatus AudioFileGetProperty(AudioFileID inAudioFile, AudioFilePropertyID inPropertyID, UInt32 *ioDataSize,
                              void *outPropertyData);

/** Sets a property (MagicCookieData, ChannelLayout, DataFormat before writing, ...). */
OSStatus AudioFileSetProperty(AudioFileID inAudioFile, AudioFilePropertyID inPropertyID, UInt32 inDataSize,
                              const void *inPropertyData);

/*
 * Keys of kAudioFilePropertyInfoDictionary (a CFDictionaryRef the caller releases, CFString keys
 * and values): make CFStrings of them, CFSTR(kAFInfoDictionary_Title). jaq fills in the
 * approximate duration, and the text tags a file carries (title, artist, ... ) where it has them.
 */
#define kAFInfoDictionary_Artist "artist"
#define kAFInfoDictionary_Album "album"
#define kAFInfoDictionary_Tempo "tempo"
#define kAFInfoDictionary_KeySignature "key signature"
#define kAFInfoDictionary_TimeSignature "time signature"
#define kAFInfoDictionary_TrackNumber "track number"
#define kAFInfoDictionary_Year "year"
#define kAFInfoDictionary_Composer "composer"
#define kAFInfoDictionary_Lyricist "lyricist"
#define kAFInfoDictionary_Genre "genre"
#define kAFInfoDictionary_Title "title"
#define kAFInfoDictionary_RecordedDate "recorded date"
#define kAFInfoDictionary_Comments "comments"
#define kAFInfoDictionary_Copyright "copyright"
#define kAFInfoDictionary_SourceEncoder "source encoder"
#define kAFInfoDictionary_EncodingApplication "encoding application"
#define kAFInfoDictionary_NominalBitRate "nominal bit rate"
#define kAFInfoDictionary_ChannelLayout "channel layout"
#define kAFInfoDictionary_ApproximateDurationInSeconds "approximate duration in seconds"
#define kAFInfoDictionary_SourceBitDepth "source bit depth"
#define kAFInfoDictionary_ISRC "ISRC"
#define kAFInfoDictionary_SubTitle "subtitle"

JAQ_ASSUME_NONNULL_END
JAQ_EXTERN_C_END

JAQ_STATIC_ASSERT(sizeof(AudioFramePacketTranslation) == 24, "AudioFramePacketTranslation is 24 bytes");
JAQ_STATIC_ASSERT(sizeof(AudioBytePacketTranslation) == 24, "AudioBytePacketTranslation is 24 bytes");

#endif
