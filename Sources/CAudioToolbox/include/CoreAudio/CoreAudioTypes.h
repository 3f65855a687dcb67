/*
 * <CoreAudio/CoreAudioTypes.h>: the spelling ported code uses (on macOS the types live in the
 * CoreAudio framework too). The declarations are jaq's <CoreAudioTypes/CoreAudioTypes.h>.
 */
#ifndef JAQ_COREAUDIO_COREAUDIOTYPES_H
#define JAQ_COREAUDIO_COREAUDIOTYPES_H
#include "../CoreAudioTypes/CoreAudioTypes.h"
#endif
