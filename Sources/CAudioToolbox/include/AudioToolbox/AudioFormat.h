/*
 * Audio Format Services (Apple's AudioFormat.h): what a format is, by property. jaq answers the
 * properties below from its own codecs (FFmpeg's, the ones AudioConverter and the queues use);
 * the others return kAudioFormatUnsupportedPropertyError. Docs/porting.md, "AudioFormat".
 */
#ifndef JAQ_AUDIOFORMAT_H
#define JAQ_AUDIOFORMAT_H

#include "../CoreAudioTypes/CoreAudioTypes.h"

JAQ_EXTERN_C_BEGIN
JAQ_ASSUME_NONNULL_BEGIN

typedef UInt32 AudioFormatPropertyID;

/** A specifier of kAudioFormatProperty_FormatList (a description and its magic cookie). */
typedef struct AudioFormatInfo {
    AudioStreamBasicDescription mASBD;
    const void *JAQ_NULLABLE mMagicCookie;
    UInt32 mMagicCookieSize;
} AudioFormatInfo;

/** An item of kAudioFormatProperty_FormatList. */
typedef struct AudioFormatListItem {
    AudioStreamBasicDescription mASBD;
    AudioChannelLayoutTag mChannelLayoutTag;
} AudioFormatListItem;

/*
 * Apple's property IDs. Answered here (specifier → value):
 *   FormatInfo            magic cookie or NULL → AudioStreamBasicDescription, completed in place
 *   FormatName            AudioStreamBasicDescription → CFStringRef (the caller releases it)
 *   FormatIsVBR, FormatIsExternallyFramed   AudioStreamBasicDescription → UInt32
 *   EncodeFormatIDs, DecodeFormatIDs        NULL → UInt32 format IDs
 *   AvailableEncodeSampleRates, AvailableEncodeBitRates   UInt32 format ID → AudioValueRange[]
 *   ChannelLayoutForTag   AudioChannelLayoutTag → AudioChannelLayout (channel descriptions)
 *   ChannelLayoutForBitmap   UInt32 bitmap → AudioChannelLayout (channel descriptions)
 *   NumberOfChannelsForLayout   AudioChannelLayout → UInt32
 *   ChannelLayoutName     AudioChannelLayout → CFStringRef (the caller releases it)
 */
CF_ENUM(AudioFormatPropertyID) {
    kAudioFormatProperty_FormatInfo = 0x666D7469,                    /* 'fmti' */
    kAudioFormatProperty_FormatName = 0x666E616D,                    /* 'fnam' */
    kAudioFormatProperty_EncodeFormatIDs = 0x61636F66,               /* 'acof' */
    kAudioFormatProperty_DecodeFormatIDs = 0x61636966,               /* 'acif' */
    kAudioFormatProperty_FormatList = 0x666C7374,                    /* 'flst' */
    kAudioFormatProperty_ASBDFromESDS = 0x65737364,                  /* 'essd' */
    kAudioFormatProperty_ChannelLayoutFromESDS = 0x6573636C,         /* 'escl' */
    kAudioFormatProperty_OutputFormatList = 0x6F666C73,              /* 'ofls' */
    kAudioFormatProperty_FirstPlayableFormatFromList = 0x6670666C,   /* 'fpfl' */
    kAudioFormatProperty_FormatIsVBR = 0x66766272,                   /* 'fvbr' */
    kAudioFormatProperty_FormatIsExternallyFramed = 0x66657866,      /* 'fexf' */
    kAudioFormatProperty_FormatEmploysDependentPackets = 0x66646570, /* 'fdep' */
    kAudioFormatProperty_FormatIsEncrypted = 0x63727970,             /* 'cryp' */
    kAudioFormatProperty_Encoders = 0x6176656E,                      /* 'aven' */
    kAudioFormatProperty_Decoders = 0x61766465,                      /* 'avde' */
    kAudioFormatProperty_AvailableEncodeBitRates = 0x61656272,       /* 'aebr' */
    kAudioFormatProperty_AvailableEncodeSampleRates = 0x61657372,    /* 'aesr' */
    kAudioFormatProperty_AvailableEncodeChannelLayoutTags = 0x6165636C, /* 'aecl' */
    kAudioFormatProperty_AvailableEncodeNumberChannels = 0x61766E63, /* 'avnc' */
    kAudioFormatProperty_AvailableDecodeNumberChannels = 0x61646E63, /* 'adnc' */
    kAudioFormatProperty_ASBDFromMPEGPacket = 0x61646D70,            /* 'admp' */

    kAudioFormatProperty_BitmapForLayoutTag = 0x626D7467,            /* 'bmtg' */
    kAudioFormatProperty_MatrixMixMap = 0x6D6D6170,                  /* 'mmap' */
    kAudioFormatProperty_ChannelMap = 0x63686D70,                    /* 'chmp' */
    kAudioFormatProperty_NumberOfChannelsForLayout = 0x6E63686D,     /* 'nchm' */
    kAudioFormatProperty_AreChannelLayoutsEquivalent = 0x63686571,   /* 'cheq' */
    kAudioFormatProperty_ChannelLayoutHash = 0x63686861,             /* 'chha' */
    kAudioFormatProperty_ValidateChannelLayout = 0x7661636C,         /* 'vacl' */
    kAudioFormatProperty_ChannelLayoutForTag = 0x636D706C,           /* 'cmpl' */
    kAudioFormatProperty_TagForChannelLayout = 0x636D7074,           /* 'cmpt' */
    kAudioFormatProperty_ChannelLayoutName = 0x6C6F6E6D,             /* 'lonm' */
    kAudioFormatProperty_ChannelLayoutSimpleName = 0x6C736E6D,       /* 'lsnm' */
    kAudioFormatProperty_ChannelLayoutForBitmap = 0x636D7062,        /* 'cmpb' */
    kAudioFormatProperty_ChannelName = 0x636E616D,                   /* 'cnam' */
    kAudioFormatProperty_ChannelShortName = 0x63736E6D,              /* 'csnm' */
    kAudioFormatProperty_TagsForNumberOfChannels = 0x74616763,       /* 'tagc' */
    kAudioFormatProperty_PanningMatrix = 0x70616E6D,                 /* 'panm' */
    kAudioFormatProperty_BalanceFade = 0x62616C66,                   /* 'balf' */
    kAudioFormatProperty_ID3TagSize = 0x69643373,                    /* 'id3s' */
    kAudioFormatProperty_ID3TagToDictionary = 0x69643364             /* 'id3d' */
};

/**
 * The size of a property's value for `inSpecifier`.
 * @return noErr; kAudioFormatUnsupportedPropertyError ('prop') for a property jaq does not
 *         answer; kAudioFormatBadSpecifierSizeError ('!spc') for a specifier of the wrong size;
 *         kAudioFormatUnsupportedDataFormatError ('fmt?') for a format jaq has no codec for;
 *         kAudioFormatUnknownFormatError ('!fmt') for a channel layout it does not know;
 *         kAudio_ParamError when outPropertyDataSize is NULL.
 */
OSStatus AudioFormatGetPropertyInfo(AudioFormatPropertyID inPropertyID, UInt32 inSpecifierSize,
                                    const void *JAQ_NULLABLE inSpecifier, UInt32 *outPropertyDataSize);

/**
 * A property's value for `inSpecifier`: `*ioPropertyDataSize` is the buffer's size on input and
 * the bytes written on output. With outPropertyData NULL, only the size is reported. Arrays
 * are cut to whole items that fit; a fixed-size value in a buffer of another size is
 * kAudioFormatBadPropertySizeError ('!siz'). Other results as AudioFormatGetPropertyInfo.
 */
OSStatus AudioFormatGetProperty(AudioFormatPropertyID inPropertyID, UInt32 inSpecifierSize,
                                const void *JAQ_NULLABLE inSpecifier, UInt32 *JAQ_NULLABLE ioPropertyDataSize,
                                void *JAQ_NULLABLE outPropertyData);

/* Audio Format Services' result codes (AudioQueue and AudioConverter return 'fmt?' too). */
CF_ENUM(OSStatus) {
    kAudioFormatUnspecifiedError = 0x77686174,           /* 'what' */
    kAudioFormatUnsupportedPropertyError = 0x70726F70,   /* 'prop' */
    kAudioFormatBadPropertySizeError = 0x2173697A,       /* '!siz' */
    kAudioFormatBadSpecifierSizeError = 0x21737063,      /* '!spc' */
    kAudioFormatUnsupportedDataFormatError = 0x666D743F, /* 'fmt?' */
    kAudioFormatUnknownFormatError = 0x21666D74          /* '!fmt' */
};

JAQ_ASSUME_NONNULL_END
JAQ_EXTERN_C_END

JAQ_STATIC_ASSERT(sizeof(AudioFormatInfo) == 56, "AudioFormatInfo is 56 bytes");
JAQ_STATIC_ASSERT(sizeof(AudioFormatListItem) == 48, "AudioFormatListItem is 48 bytes");
#endif
