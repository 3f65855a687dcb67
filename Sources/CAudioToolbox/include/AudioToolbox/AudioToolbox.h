/*
 * jaq's AudioToolbox: Apple's Audio Queue Services and the Audio File subset
 * the guides use, on Linux, on JACK and libsndfile.
 *
 *   #include <AudioToolbox/AudioToolbox.h>
 *   cc prog.c $(pkg-config --cflags --libs AudioToolbox)      (installed)
 *   cc prog.c -I<jaq>/Sources/CAudioToolbox/include -L<lib dir> -lAudioToolbox
 */
#ifndef JAQ_AUDIOTOOLBOX_H
#define JAQ_AUDIOTOOLBOX_H

#include "../CoreFoundation/CoreFoundation.h"
#include "../CoreAudioTypes/CoreAudioTypes.h"
#include "AudioFormat.h"
#include "AudioConverter.h"
#include "AudioFile.h"
#include "ExtendedAudioFile.h"
#include "AudioFileStream.h"
#include "AudioQueue.h"
#include "AudioQueueJACK.h"

#endif
