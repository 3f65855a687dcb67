/*
 * AudioConverter.h for jaq: the names Apple code includes this header for.
 *
 * Programs written for Apple platforms include <AudioToolbox/AudioConverter.h>
 * (recorder.c in the recording guide does) and the guides name two of its
 * properties in comments. jaq's audio queues convert formats themselves (and
 * resample with libsoxr), so the Audio Converter API proper (AudioConverterNew,
 * AudioConverterFillComplexBuffer, ...) is not implemented: this header declares
 * its opaque type and property IDs so that such programs compile.
 */
#ifndef JAQ_AUDIOCONVERTER_H
#define JAQ_AUDIOCONVERTER_H

#include "../CoreAudioTypes/CoreAudioTypes.h"

JAQ_EXTERN_C_BEGIN

typedef struct OpaqueAudioConverter *AudioConverterRef;
typedef UInt32 AudioConverterPropertyID;

CF_ENUM(AudioConverterPropertyID) {
    /** Apple: the largest packet the converter produces (a queue's MaximumOutputPacketSize here). */
    kAudioConverterPropertyMaximumOutputPacketSize = 0x786F7073, /* 'xops' */
    /** Apple: the converter's complete input format (a queue's StreamDescription here). */
    kAudioConverterCurrentInputStreamDescription = 0x61636964,   /* 'acid' */
    /** Apple: the converter's complete output format. */
    kAudioConverterCurrentOutputStreamDescription = 0x61636F64   /* 'acod' */
};

JAQ_EXTERN_C_END

#endif
