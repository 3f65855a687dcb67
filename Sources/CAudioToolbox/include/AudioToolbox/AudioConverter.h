/*
 * AudioConverter.h for jaq: Apple's Audio Converter Services on FFmpeg's codecs.
 *
 * What converts (AudioConverterNew):
 *   - compressed -> linear PCM: AAC-LC, HE-AAC, ALAC, MP3, FLAC, Opus, IMA4 decoded;
 *   - linear PCM -> compressed: AAC-LC, ALAC, FLAC, Opus, IMA4 encoded;
 *   - linear PCM -> linear PCM: any sample format/endianness/width jaq's queues take.
 * Source and destination may differ in sample rate (libsoxr), channel count (Apple's default
 * routing, or kAudioConverterChannelMap) and interleaving (kAudioFormatFlagIsNonInterleaved:
 * one AudioBuffer per channel), in every mode. All codecs are software (FFmpeg's libavcodec).
 */
#ifndef JAQ_AUDIOCONVERTER_H
#define JAQ_AUDIOCONVERTER_H

#include "../CoreAudioTypes/CoreAudioTypes.h"

JAQ_EXTERN_C_BEGIN
JAQ_ASSUME_NONNULL_BEGIN

typedef struct OpaqueAudioConverter *AudioConverterRef;
typedef UInt32 AudioConverterPropertyID;

CF_ENUM(AudioConverterPropertyID) {
    /** UInt32, r: the largest packet the converter produces (the encoder's bound; a frame for PCM). */
    kAudioConverterPropertyMaximumOutputPacketSize = 0x786F7073, /* 'xops' */
    /** UInt32, r: the largest packet the converter takes. */
    kAudioConverterPropertyMaximumInputPacketSize = 0x78697073,  /* 'xips' */
    /** AudioStreamBasicDescription, r: the converter's complete input format. */
    kAudioConverterCurrentInputStreamDescription = 0x61636964,   /* 'acid' */
    /** AudioStreamBasicDescription, r: the converter's complete output format. */
    kAudioConverterCurrentOutputStreamDescription = 0x61636F64,  /* 'acod' */
    /** bytes, r/w: the decoder's magic cookie (esds, ALAC cookie, ...), set before converting. */
    kAudioConverterDecompressionMagicCookie = 0x646D6763,        /* 'dmgc' */
    /** bytes, r: the encoder's magic cookie, to store with the packets (a file's kuki/esds). */
    kAudioConverterCompressionMagicCookie = 0x636D6763,          /* 'cmgc' */
    /** UInt32, r/w: the encoder's bit rate in bits per second (AAC, Opus); set before converting. */
    kAudioConverterEncodeBitRate = 0x62726174,                   /* 'brat' */
    /** AudioConverterPrimeInfo, r: the encoder's priming (leading frames) and trailing frames;
     *  for a sample-rate conversion, the input frames the resampler's filter reaches on either side. */
    kAudioConverterPrimeInfo = 0x7072696D,                       /* 'prim' */
    /** UInt32, r/w: kConverterPrimeMethod_Pre, _Normal (the default) or _None. */
    kAudioConverterPrimeMethod = 0x70726D6D,                     /* 'prmm' */
    /** SInt32[output channels], r/w: the input channel each output channel takes (-1: silence). */
    kAudioConverterChannelMap = 0x63686D70,                      /* 'chmp' */
    /** UInt32, r/w: kAudioConverterQuality_Max ... _Min, the resampler's quality (libsoxr recipe). */
    kAudioConverterSampleRateConverterQuality = 0x73726371,      /* 'srcq' */
    /** UInt32, r/w: kAudioConverterSampleRateConverterComplexity_Linear, _Normal or _Mastering. */
    kAudioConverterSampleRateConverterComplexity = 0x73726361,   /* 'srca' */
    /** UInt32, r (in: output bytes, out: input bytes needed): for linear PCM input. */
    kAudioConverterPropertyCalculateInputBufferSize = 0x63696273,  /* 'cibs' */
    /** UInt32, r (in: input bytes, out: output bytes they give): for linear PCM output. */
    kAudioConverterPropertyCalculateOutputBufferSize = 0x636F6273, /* 'cobs' */
    /** UInt32, r/w: an encoder's quality, kAudioConverterQuality_Max ... _Min; jaq keeps the value
     *  (read back as set) but FFmpeg's encoders take no quality setting: bit rate decides. */
    kAudioConverterCodecQuality = 0x63647175,                    /* 'cdqu' */
    /** Declared for ported code; jaq's converters answer kAudioConverterErr_PropertyNotSupported,
     *  as Apple's software codecs do for the first (they can always resume) and as a converter
     *  without channel layouts does for the others (callers fall back to the file's layout). */
    kAudioConverterPropertyCanResumeFromInterruption = 0x63726669, /* 'crfi' */
    kAudioConverterInputChannelLayout = 0x69636C20,              /* 'icl ' */
    kAudioConverterOutputChannelLayout = 0x6F636C20,             /* 'ocl ' */
    /** CFArrayRef: declared for ported code (ExtAudioFile's ConverterConfig names it); jaq's
     *  converters answer kAudioConverterErr_PropertyNotSupported. */
    kAudioConverterPropertySettings = 0x61637073                 /* 'acps' */
};

/** Values of kAudioConverterSampleRateConverterQuality (and kAudioConverterCodecQuality). */
CF_ENUM(UInt32) {
    kAudioConverterQuality_Max = 0x7F,
    kAudioConverterQuality_High = 0x60,
    kAudioConverterQuality_Medium = 0x40,
    kAudioConverterQuality_Low = 0x20,
    kAudioConverterQuality_Min = 0
};

/** Values of kAudioConverterSampleRateConverterComplexity. */
CF_ENUM(UInt32) {
    kAudioConverterSampleRateConverterComplexity_Linear = 0x6C696E65,    /* 'line' */
    kAudioConverterSampleRateConverterComplexity_Normal = 0x6E6F726D,    /* 'norm' */
    kAudioConverterSampleRateConverterComplexity_Mastering = 0x62617473  /* 'bats' */
};

/** Values of kAudioConverterPrimeMethod. */
CF_ENUM(UInt32) {
    kConverterPrimeMethod_Pre = 0,
    kConverterPrimeMethod_Normal = 1,
    kConverterPrimeMethod_None = 2
};

#ifndef JAQ_AUDIO_CODEC_CLASS_CONSTANTS
#define JAQ_AUDIO_CODEC_CLASS_CONSTANTS
/** AudioClassDescription fields naming codecs (AudioConverterNewSpecific, kAudioFormatProperty_Encoders). */
CF_ENUM(OSType) {
    kAudioDecoderComponentType = 0x61646563,               /* 'adec' */
    kAudioEncoderComponentType = 0x61656E63,               /* 'aenc' */
    kAppleSoftwareAudioCodecManufacturer = 0x6170706C,     /* 'appl' */
    kAppleHardwareAudioCodecManufacturer = 0x61706877      /* 'aphw' */
};
#endif

/** Result codes of the converter functions (Apple's values). */
CF_ENUM(OSStatus) {
    kAudioConverterErr_FormatNotSupported = 0x666D743F,          /* 'fmt?' */
    kAudioConverterErr_OperationNotSupported = 0x6F703F3F,       /* 'op??' */
    kAudioConverterErr_PropertyNotSupported = 0x70726F70,        /* 'prop' */
    kAudioConverterErr_InvalidInputSize = 0x696E737A,            /* 'insz' */
    kAudioConverterErr_InvalidOutputSize = 0x6F74737A,           /* 'otsz' */
    kAudioConverterErr_UnspecifiedError = 0x77686174,            /* 'what' */
    kAudioConverterErr_BadPropertySizeError = 0x2173697A,        /* '!siz' */
    kAudioConverterErr_RequiresPacketDescriptionsError = 0x21706B64, /* '!pkd' */
    kAudioConverterErr_InputSampleRateOutOfRange = 0x21697372,   /* '!isr' */
    kAudioConverterErr_OutputSampleRateOutOfRange = 0x216F7372,  /* '!osr' */
    /** Apple's codes for hardware codecs; jaq has none, so no call returns them. */
    kAudioConverterErr_HardwareInUse = 0x68776975,               /* 'hwiu' */
    kAudioConverterErr_NoHardwarePermission = 0x7065726D         /* 'perm' */
};

/** The frames an encoder adds before the signal (priming) and after it. */
typedef struct AudioConverterPrimeInfo {
    UInt32 leadingFrames;
    UInt32 trailingFrames;
} AudioConverterPrimeInfo;

/**
 * Supplies input to AudioConverterFillComplexBuffer: set *ioNumberDataPackets to the packets
 * given (0 at the end of the stream), point ioData's buffer at them, and for compressed input
 * point *outDataPacketDescription at their descriptions. The data stays the caller's until the
 * next call. A non-zero result ends the fill and is returned by it.
 */
typedef OSStatus (*AudioConverterComplexInputDataProc)(
    AudioConverterRef inAudioConverter, UInt32 *ioNumberDataPackets, AudioBufferList *ioData,
    AudioStreamPacketDescription *JAQ_NULLABLE *JAQ_NULLABLE outDataPacketDescription, void *JAQ_NULLABLE inUserData);

/** Creates a converter from inSourceFormat to inDestinationFormat ('fmt?' for what it can't convert). */
OSStatus AudioConverterNew(const AudioStreamBasicDescription *inSourceFormat,
                           const AudioStreamBasicDescription *inDestinationFormat,
                           AudioConverterRef JAQ_NULLABLE *JAQ_NONNULL outAudioConverter);

/**
 * AudioConverterNew choosing the codec: inClassDescriptions must name a software codec
 * (any manufacturer but kAppleHardwareAudioCodecManufacturer): jaq's codecs are all software, so
 * a list naming only hardware codecs returns kAudioConverterErr_FormatNotSupported ('fmt?').
 * Linear PCM to linear PCM needs no codec: the list is not consulted.
 */
OSStatus AudioConverterNewSpecific(const AudioStreamBasicDescription *inSourceFormat,
                                   const AudioStreamBasicDescription *inDestinationFormat,
                                   UInt32 inNumberClassDescriptions,
                                   const AudioClassDescription *inClassDescriptions,
                                   AudioConverterRef JAQ_NULLABLE *JAQ_NONNULL outAudioConverter);

/** Disposes of a converter. */
OSStatus AudioConverterDispose(AudioConverterRef inAudioConverter);

/** Forgets the stream so far (a seek): the codec starts over. */
OSStatus AudioConverterReset(AudioConverterRef inAudioConverter);

/** A property's size and whether it can be set. */
OSStatus AudioConverterGetPropertyInfo(AudioConverterRef inAudioConverter, AudioConverterPropertyID inPropertyID,
                                       UInt32 *JAQ_NULLABLE outSize, Boolean *JAQ_NULLABLE outWritable);

OSStatus AudioConverterGetProperty(AudioConverterRef inAudioConverter, AudioConverterPropertyID inPropertyID,
                                   UInt32 *ioPropertyDataSize, void *outPropertyData);

OSStatus AudioConverterSetProperty(AudioConverterRef inAudioConverter, AudioConverterPropertyID inPropertyID,
                                   UInt32 inPropertyDataSize, const void *inPropertyData);

/**
 * Converts linear PCM to linear PCM in one call (inInputDataSize bytes, whole frames, into a
 * buffer of *ioOutputDataSize bytes). Compressed formats: kAudioConverterErr_OperationNotSupported.
 */
OSStatus AudioConverterConvertBuffer(AudioConverterRef inAudioConverter, UInt32 inInputDataSize, const void *inInputData,
                                     UInt32 *ioOutputDataSize, void *outOutputData);

/**
 * Fills outOutputData with up to *ioOutputDataPacketSize packets, pulling input from
 * inInputDataProc; on return *ioOutputDataPacketSize holds the packets produced (0 at the end
 * of the stream). Compressed output needs outPacketDescription ('!pkd' without it).
 */
OSStatus AudioConverterFillComplexBuffer(AudioConverterRef inAudioConverter,
                                         AudioConverterComplexInputDataProc inInputDataProc,
                                         void *JAQ_NULLABLE inInputDataProcUserData, UInt32 *ioOutputDataPacketSize,
                                         AudioBufferList *outOutputData,
                                         AudioStreamPacketDescription *JAQ_NULLABLE outPacketDescription);

/**
 * Converts inNumberPCMFrames frames of linear PCM from inInputData to outOutputData (one buffer,
 * or one per channel when non-interleaved); each output buffer's mDataByteSize is set. Same
 * sample rate only: a converter that resamples returns kAudioConverterErr_InvalidInputSize,
 * one with a codec kAudioConverterErr_OperationNotSupported.
 */
OSStatus AudioConverterConvertComplexBuffer(AudioConverterRef inAudioConverter, UInt32 inNumberPCMFrames,
                                            const AudioBufferList *inInputData, AudioBufferList *outOutputData);

JAQ_ASSUME_NONNULL_END
JAQ_EXTERN_C_END

#endif
