/*
 * ExtendedAudioFile.h for jaq: Apple's Extended Audio File Services, on jaq's AudioFile and
 * AudioConverter. Names, property IDs, values and result codes are Apple's.
 *
 * An ExtAudioFileRef reads or writes a file in a client format of the caller's choice (linear
 * PCM, interleaved or not); reading and writing convert through an AudioConverter. Encoder
 * priming and remainder (an AAC file's edit list, iTunSMPB, CAF packet table) are trimmed on
 * reading and recorded on writing. Seek and Tell count frames of the file's sample rate less
 * its priming, as Apple's header says. A client format whose sample rate or channel count
 * differs from the file's works when the AudioConverter converts them; otherwise setting it
 * returns the converter's result ('fmt?').
 */
#ifndef JAQ_EXTENDEDAUDIOFILE_H
#define JAQ_EXTENDEDAUDIOFILE_H

#include "../CoreAudioTypes/CoreAudioTypes.h"
#include "AudioConverter.h"
#include "AudioFile.h"

JAQ_EXTERN_C_BEGIN
JAQ_ASSUME_NONNULL_BEGIN

/** An extended audio file object. */
typedef struct OpaqueExtAudioFile *ExtAudioFileRef;

/** ConverterConfig's value type (only NULL is taken here). */
typedef const struct __CFArray *CFArrayRef;
typedef CFTypeRef CFPropertyListRef;

typedef SInt32 ExtAudioFilePacketTableInfoOverride;
CF_ENUM(ExtAudioFilePacketTableInfoOverride) {
    kExtAudioFilePacketTableInfoOverride_UseFileValue = -1,
    kExtAudioFilePacketTableInfoOverride_UseFileValueIfValid = -2
};

typedef UInt32 ExtAudioFilePropertyID;
CF_ENUM(ExtAudioFilePropertyID) {
    /** AudioStreamBasicDescription, r: the file's data format. */
    kExtAudioFileProperty_FileDataFormat = 0x66666D74,      /* 'ffmt' */
    /** AudioChannelLayout, r/w: the file's channel layout (set before the client format). */
    kExtAudioFileProperty_FileChannelLayout = 0x66636C6F,   /* 'fclo' */
    /** AudioStreamBasicDescription, r/w: the linear PCM format of Read and Write's buffers. */
    kExtAudioFileProperty_ClientDataFormat = 0x63666D74,    /* 'cfmt' */
    /** AudioChannelLayout, r/w: the layout of the client's buffers (its channel count). */
    kExtAudioFileProperty_ClientChannelLayout = 0x63636C6F, /* 'cclo' */
    /** UInt32, r/w: the codec's manufacturer (every codec here is software). */
    kExtAudioFileProperty_CodecManufacturer = 0x636D616E,   /* 'cman' */
    /** AudioConverterRef, r: the converter between client and file, NULL before one is needed. */
    kExtAudioFileProperty_AudioConverter = 0x61636E76,      /* 'acnv' */
    /** AudioFileID, r: the underlying audio file. */
    kExtAudioFileProperty_AudioFile = 0x6166696C,           /* 'afil' */
    /** UInt32, r: the file format's largest packet in bytes. */
    kExtAudioFileProperty_FileMaxPacketSize = 0x666D7073,   /* 'fmps' */
    /** UInt32, r: the client format's largest packet in bytes. */
    kExtAudioFileProperty_ClientMaxPacketSize = 0x636D7073, /* 'cmps' */
    /** SInt64, r: frames in the file, priming and remainder excluded (while writing: the file
     *  frames written so far). Apple's is writable for PCM files (truncate/extend); jaq's is
     *  read-only (kExtAudioFileError_InvalidProperty). */
    kExtAudioFileProperty_FileLengthFrames = 0x2366726D,    /* '#frm' */
    /** CFArrayRef, w: set (to NULL, or size 0 and NULL) after changing the converter's
     *  properties, reading or writing; only NULL is taken here. */
    kExtAudioFileProperty_ConverterConfig = 0x61636366,     /* 'accf' */
    /** UInt32, r/w: the size of the buffer between converter and file. */
    kExtAudioFileProperty_IOBufferSizeBytes = 0x696F6273,   /* 'iobs' */
    /** void *, w: not supported here (kExtAudioFileError_InvalidProperty). */
    kExtAudioFileProperty_IOBuffer = 0x696F6266,            /* 'iobf' */
    /** AudioFilePacketTableInfo, r/w: the priming and remainder trimmed, overridable. */
    kExtAudioFileProperty_PacketTable = 0x78707469          /* 'xpti' */
};

CF_ENUM(OSStatus) {
    kExtAudioFileError_InvalidProperty = -66561,
    kExtAudioFileError_InvalidPropertySize = -66562,
    kExtAudioFileError_NonPCMClientFormat = -66563,
    kExtAudioFileError_InvalidChannelMap = -66564,          /* number of channels doesn't match format */
    kExtAudioFileError_InvalidOperationOrder = -66565,
    kExtAudioFileError_InvalidDataFormat = -66566,
    kExtAudioFileError_MaxPacketSizeUnknown = -66567,
    kExtAudioFileError_InvalidSeek = -66568,                /* writing, or offset out of bounds */
    kExtAudioFileError_AsyncWriteTooLarge = -66569,
    kExtAudioFileError_AsyncWriteBufferOverflow = -66570,   /* an async write could not be completed in time */
    kExtAudioFileError_CodecUnavailableInputConsumed = -66559,
    kExtAudioFileError_CodecUnavailableInputNotConsumed = -66560
};

/** Opens an existing audio file for reading. */
OSStatus ExtAudioFileOpenURL(CFURLRef inURL, ExtAudioFileRef JAQ_NULLABLE *JAQ_NONNULL outExtAudioFile) CF_REFINED_FOR_SWIFT;

/** Wraps an open AudioFileID (a new file when inForWriting); Dispose does not close it. */
OSStatus ExtAudioFileWrapAudioFileID(AudioFileID inFileID, Boolean inForWriting,
                                     ExtAudioFileRef JAQ_NULLABLE *JAQ_NONNULL outExtAudioFile);

/**
 * Creates a new audio file of inFileType holding inStreamDesc (a compressed description may
 * give only format ID, sample rate (0: the client format's) and channel count).
 */
OSStatus ExtAudioFileCreateWithURL(CFURLRef inURL, AudioFileTypeID inFileType, const AudioStreamBasicDescription *inStreamDesc,
                                   const AudioChannelLayout *JAQ_NULLABLE inChannelLayout, UInt32 inFlags,
                                   ExtAudioFileRef JAQ_NULLABLE *JAQ_NONNULL outExtAudioFile) CF_REFINED_FOR_SWIFT;

/** Flushes what is pending (encoder, asynchronous writes), closes the file and frees the object. */
OSStatus ExtAudioFileDispose(ExtAudioFileRef inExtAudioFile);

/** Reads up to *ioNumberFrames client frames; 0 frames read is the end of the file. */
OSStatus ExtAudioFileRead(ExtAudioFileRef inExtAudioFile, UInt32 *ioNumberFrames, AudioBufferList *ioData);

/** Writes inNumberFrames client frames. */
OSStatus ExtAudioFileWrite(ExtAudioFileRef inExtAudioFile, UInt32 inNumberFrames, const AudioBufferList *ioData);

/**
 * Writes inNumberFrames client frames later, on a writer thread. Call it with (0, NULL) first,
 * off the realtime thread: that makes the ring (4 s of client frames) and starts the thread.
 * After that it only copies into the ring (no allocation, no file I/O): safe on a realtime
 * thread. kExtAudioFileError_AsyncWriteBufferOverflow: the ring is full, none of these frames
 * was kept (_AsyncWriteTooLarge: more frames than the ring holds). An error of the writer
 * thread is returned by a later call; Dispose writes everything pending first.
 */
OSStatus ExtAudioFileWriteAsync(ExtAudioFileRef inExtAudioFile, UInt32 inNumberFrames, const AudioBufferList *JAQ_NULLABLE ioData);

/** Moves the read position to frame inFrameOffset (file frames after the priming), exactly. */
OSStatus ExtAudioFileSeek(ExtAudioFileRef inExtAudioFile, SInt64 inFrameOffset);

/** The read/write position, in the frames Seek takes. */
OSStatus ExtAudioFileTell(ExtAudioFileRef inExtAudioFile, SInt64 *outFrameOffset);

OSStatus ExtAudioFileGetPropertyInfo(ExtAudioFileRef inExtAudioFile, ExtAudioFilePropertyID inPropertyID,
                                     UInt32 *JAQ_NULLABLE outSize, Boolean *JAQ_NULLABLE outWritable);

OSStatus ExtAudioFileGetProperty(ExtAudioFileRef inExtAudioFile, ExtAudioFilePropertyID inPropertyID,
                                 UInt32 *ioPropertyDataSize, void *outPropertyData);

OSStatus ExtAudioFileSetProperty(ExtAudioFileRef inExtAudioFile, ExtAudioFilePropertyID inPropertyID,
                                 UInt32 inPropertyDataSize, const void *JAQ_NULLABLE inPropertyData);

JAQ_ASSUME_NONNULL_END
JAQ_EXTERN_C_END

#endif
