/*
 * jaq's additions to Audio Queue Services: what a queue is on JACK.
 * These property IDs are jaq's own (lower-case 'jq..' four-char codes).
 */
#ifndef JAQ_AUDIOQUEUEJACK_H
#define JAQ_AUDIOQUEUEJACK_H

#include "AudioQueue.h"

JAQ_EXTERN_C_BEGIN
JAQ_ASSUME_NONNULL_BEGIN

CF_ENUM(AudioQueuePropertyID) {
    /** CFStringRef, read/write while stopped: the queue's JACK client name
        (default: the program's name + "-out" / "-in"; the server may append "-01"). */
    kAudioQueueProperty_JACKClientName = 0x6A71636E,      /* 'jqcn' */
    /** CFStringRef, read-only: the queue's own ports, comma-separated ("client:out_1,client:out_2"). */
    kAudioQueueProperty_JACKPortNames = 0x6A71706E,       /* 'jqpn' */
    /** CFStringRef, read-only: the device ports the queue is connected to, comma-separated. */
    kAudioQueueProperty_JACKConnectedPorts = 0x6A716370,  /* 'jqcp' */
    /** AudioValueRange[], read-only: each port's latency range in frames (capture latency
        of a recording queue's input ports, playback latency of a playback queue's output ports). */
    kAudioQueueProperty_JACKPortLatency = 0x6A716C74,     /* 'jqlt' */
    /** UInt32, read-only: frames per JACK cycle. */
    kAudioQueueProperty_JACKPeriodFrames = 0x6A717073,    /* 'jqps' */
    /** AudioQueueRecordUnderrunInfo, read-only, recording queues: data lost because no
        buffer was enqueued while the capture ring was full. Listeners are called on each loss. */
    kAudioQueueProperty_RecordUnderrun = 0x6A717275,      /* 'jqru' */
    /** Float64, read/write while stopped, recording queues: seconds the capture ring holds
        before data is lost (default 5). */
    kAudioQueueProperty_CaptureBufferSeconds = 0x6A717273, /* 'jqrs' */
    /** UInt32, read-only: timeline discontinuities so far (xruns, lost data, rate changes). */
    kAudioQueueProperty_DiscontinuityCount = 0x6A716463,  /* 'jqdc' */
    /** Float64, read-only: the device frame (JACK frame time, 64-bit) at which queue time 0
        falls: where a running queue really started, moved later by the time it spent paused.
        0 before the first start. */
    kAudioQueueProperty_StartDeviceFrame = 0x6A717366,    /* 'jqsf' */
    /** UInt64, read-only: device frames lost: played as silence because a playback queue's
        ring ran dry while running, or dropped because a recording queue's ring was full. */
    kAudioQueueProperty_LostFrames = 0x6A716C66,          /* 'jqlf' */
    /** UInt32, read/write while stopped, recording queues of AAC-LC or Opus: the encoder's
        bit rate in bits per second for the whole stream (default 64000 a channel for AAC,
        48000 a channel for Opus; AAC 8000-320000 a channel, Opus 6000-256000 a channel,
        else kAudioQueueErr_InvalidPropertyValue). The magic cookie and
        MaximumOutputPacketSize follow it. Reads 0 for formats without a bit rate. */
    kAudioQueueProperty_EncoderBitRate = 0x6A716272       /* 'jqbr' */
};

/** Value of kAudioQueueProperty_RecordUnderrun. */
typedef struct AudioQueueRecordUnderrunInfo {
    /** kAudioQueueErr_RecordUnderrun once data has been lost, else noErr. */
    OSStatus mStatus;
    /** Times data was lost. */
    UInt32 mEventCount;
    /** Frames lost in all, at the queue's sample rate. */
    UInt64 mFramesLost;
    /** Queue time of the first frame lost most recently. */
    Float64 mLastLossSampleTime;
} AudioQueueRecordUnderrunInfo;

JAQ_ASSUME_NONNULL_END
JAQ_EXTERN_C_END

JAQ_STATIC_ASSERT(sizeof(AudioQueueRecordUnderrunInfo) == 24, "AudioQueueRecordUnderrunInfo is 24 bytes");

#endif
