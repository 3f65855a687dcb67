/*
 * Audio Queue Services for jaq: recording and playback audio queues on the
 * JACK audio server. Names, types, constants and result codes are Apple's
 * (AudioQueue.h); where Linux differs, the docs in Docs/ say how.
 */
#ifndef JAQ_AUDIOQUEUE_H
#define JAQ_AUDIOQUEUE_H

#include "../CoreAudioTypes/CoreAudioTypes.h"
#include "AudioFormat.h"

JAQ_EXTERN_C_BEGIN
JAQ_ASSUME_NONNULL_BEGIN

/* ---- Types -------------------------------------------------------------- */
typedef UInt32 AudioQueuePropertyID;
typedef UInt32 AudioQueueParameterID;
typedef Float32 AudioQueueParameterValue;
typedef struct OpaqueAudioQueue *AudioQueueRef;
typedef struct OpaqueAudioQueueTimeline *AudioQueueTimelineRef;

/* ---- Result codes ------------------------------------------------------- */
CF_ENUM(OSStatus) {
    kAudioQueueErr_InvalidBuffer = -66687,
    kAudioQueueErr_BufferEmpty = -66686,
    kAudioQueueErr_DisposalPending = -66685,
    kAudioQueueErr_InvalidProperty = -66684,
    kAudioQueueErr_InvalidPropertySize = -66683,
    kAudioQueueErr_InvalidParameter = -66682,
    kAudioQueueErr_CannotStart = -66681,
    kAudioQueueErr_InvalidDevice = -66680,
    kAudioQueueErr_BufferInQueue = -66679,
    kAudioQueueErr_InvalidRunState = -66678,
    kAudioQueueErr_InvalidQueueType = -66677,
    kAudioQueueErr_Permissions = -66676,
    kAudioQueueErr_InvalidPropertyValue = -66675,
    kAudioQueueErr_PrimeTimedOut = -66674,
    kAudioQueueErr_CodecNotFound = -66673,
    kAudioQueueErr_InvalidCodecAccess = -66672,
    kAudioQueueErr_QueueInvalidated = -66671,
    kAudioQueueErr_TooManyTaps = -66670,
    kAudioQueueErr_InvalidTapContext = -66669,
    kAudioQueueErr_RecordUnderrun = -66668,
    kAudioQueueErr_InvalidTapType = -66667,
    kAudioQueueErr_BufferEnqueuedTwice = -66666,
    kAudioQueueErr_CannotStartYet = -66665,
    kAudioQueueErr_EnqueueDuringReset = -66632,
    kAudioQueueErr_InvalidOfflineMode = -66626
};

/* kAudioFormatUnsupportedDataFormatError, for formats a queue cannot take: AudioFormat.h. */

/* ---- Properties --------------------------------------------------------- */
CF_ENUM(AudioQueuePropertyID) {
    kAudioQueueProperty_IsRunning = 0x6171726E,               /* 'aqrn' UInt32, read-only */
    kAudioQueueDeviceProperty_SampleRate = 0x61717372,        /* 'aqsr' Float64, read-only */
    kAudioQueueDeviceProperty_NumberChannels = 0x61716463,    /* 'aqdc' UInt32, read-only */
    kAudioQueueProperty_CurrentDevice = 0x61716364,           /* 'aqcd' CFStringRef */
    kAudioQueueProperty_MagicCookie = 0x61716D63,             /* 'aqmc' void* */
    kAudioQueueProperty_MaximumOutputPacketSize = 0x786F7073, /* 'xops' UInt32, read-only */
    kAudioQueueProperty_StreamDescription = 0x61716674,       /* 'aqft' ASBD, read-only */
    kAudioQueueProperty_ChannelLayout = 0x6171636C,           /* 'aqcl' AudioChannelLayout */
    kAudioQueueProperty_EnableLevelMetering = 0x61716D65,     /* 'aqme' UInt32 */
    kAudioQueueProperty_CurrentLevelMeter = 0x61716D76,       /* 'aqmv' AudioQueueLevelMeterState[] */
    kAudioQueueProperty_CurrentLevelMeterDB = 0x61716D64,     /* 'aqmd' AudioQueueLevelMeterState[] */
    kAudioQueueProperty_DecodeBufferSizeFrames = 0x64636266,  /* 'dcbf' UInt32 */
    kAudioQueueProperty_ConverterError = 0x71637665,          /* 'qcve' UInt32, read-only */
    kAudioQueueProperty_EnableTimePitch = 0x715F7470,         /* 'q_tp' UInt32 0/1, set while stopped (Rubber Band / libsoxr) */
    kAudioQueueProperty_TimePitchAlgorithm = 0x71747061,      /* 'qtpa' UInt32, set while stopped */
    kAudioQueueProperty_TimePitchBypass = 0x71747062,         /* 'qtpb' UInt32, 1 = bypassed (bit-exact pass-through) */
    kAudioQueueProperty_ChannelAssignments = 0x61716361,      /* 'aqca' */
    kAudioQueueProperty_HardwareCodecPolicy = 0x61716370      /* 'aqcp' UInt32 */
};

CF_ENUM(UInt32) {
    kAudioQueueTimePitchAlgorithm_Spectral = 0x73706563,   /* 'spec' */
    kAudioQueueTimePitchAlgorithm_TimeDomain = 0x7469646F, /* 'tido' */
    kAudioQueueTimePitchAlgorithm_Varispeed = 0x76737064   /* 'vspd' */
};

CF_ENUM(UInt32) {
    kAudioQueueHardwareCodecPolicy_Default = 0,
    kAudioQueueHardwareCodecPolicy_UseSoftwareOnly = 1,
    kAudioQueueHardwareCodecPolicy_UseHardwareOnly = 2,
    kAudioQueueHardwareCodecPolicy_PreferSoftware = 3,
    kAudioQueueHardwareCodecPolicy_PreferHardware = 4
};

/* ---- Parameters --------------------------------------------------------- */
CF_ENUM(AudioQueueParameterID) {
    kAudioQueueParam_Volume = 1,
    kAudioQueueParam_PlayRate = 2,
    kAudioQueueParam_Pitch = 3,
    kAudioQueueParam_VolumeRampTime = 4,
    kAudioQueueParam_Pan = 13
};

/* ---- Structures --------------------------------------------------------- */
typedef struct AudioQueueBuffer {
    const UInt32 mAudioDataBytesCapacity;
    void *const mAudioData;
    UInt32 mAudioDataByteSize;
    void *JAQ_NULLABLE mUserData;
    const UInt32 mPacketDescriptionCapacity;
    AudioStreamPacketDescription *const JAQ_NULLABLE mPacketDescriptions;
    UInt32 mPacketDescriptionCount;
} AudioQueueBuffer;

typedef AudioQueueBuffer *AudioQueueBufferRef;

typedef struct AudioQueueParameterEvent {
    AudioQueueParameterID mID;
    AudioQueueParameterValue mValue;
} AudioQueueParameterEvent;

typedef struct AudioQueueLevelMeterState {
    Float32 mAveragePower;
    Float32 mPeakPower;
} AudioQueueLevelMeterState;

/** A processing tap of a queue (AudioQueueProcessingTapNew). */
typedef struct OpaqueAudioQueueProcessingTap *AudioQueueProcessingTapRef;

/**
 * Processing tap flags. AudioQueueProcessingTapNew takes exactly one of PreEffects (before
 * the time/pitch unit) and PostEffects (after it), optionally with Siphon (the callback sees
 * the audio and may not change it). StartOfStream and EndOfStream come from GetSourceAudio.
 */
JAQ_TYPED_OPTIONS_BEGIN(UInt32, AudioQueueProcessingTapFlags)
    kAudioQueueProcessingTap_PreEffects = (1U << 0),
    kAudioQueueProcessingTap_PostEffects = (1U << 1),
    kAudioQueueProcessingTap_Siphon = (1U << 2),
    kAudioQueueProcessingTap_StartOfStream = (1U << 8),
    kAudioQueueProcessingTap_EndOfStream = (1U << 9)
JAQ_TYPED_OPTIONS_END(AudioQueueProcessingTapFlags)

typedef struct AudioQueueChannelAssignment {
    CFStringRef mDeviceUID;
    UInt32 mChannelNumber;
} AudioQueueChannelAssignment;

/* ---- Callbacks ---------------------------------------------------------- */

/** Called when a playback queue has taken a buffer's data; refill and re-enqueue it. */
typedef void (*AudioQueueOutputCallback)(void *JAQ_NULLABLE inUserData, AudioQueueRef inAQ,
                                         AudioQueueBufferRef inBuffer);

/** Called when a recording queue has filled a buffer; write it out and re-enqueue it. */
typedef void (*AudioQueueInputCallback)(void *JAQ_NULLABLE inUserData, AudioQueueRef inAQ,
                                        AudioQueueBufferRef inBuffer, const AudioTimeStamp *inStartTime,
                                        UInt32 inNumberPacketDescriptions,
                                        const AudioStreamPacketDescription *JAQ_NULLABLE inPacketDescs);

/** Called when a property a listener was added for changes value. */
typedef void (*AudioQueuePropertyListenerProc)(void *JAQ_NULLABLE inUserData, AudioQueueRef inAQ,
                                               AudioQueuePropertyID inID);


/**
 * Called on the queue's thread (never on the JACK thread) with the next inNumberFrames frames
 * to process, in the processing format AudioQueueProcessingTapNew gave (non-interleaved
 * Float32 at the queue's rate). A siphon finds the audio in ioData and must not change it;
 * any other tap calls AudioQueueProcessingTapGetSourceAudio for its input and returns its
 * output in ioData (pointers of its own, or the source's: in-place processing) with
 * *outNumberFrames; fewer frames than asked are filled up with silence.
 */
typedef void (*AudioQueueProcessingTapCallback)(void *JAQ_NULLABLE inClientData, AudioQueueProcessingTapRef inAQTap,
                                                UInt32 inNumberFrames, AudioTimeStamp *ioTimeStamp,
                                                AudioQueueProcessingTapFlags *ioFlags, UInt32 *outNumberFrames,
                                                AudioBufferList *ioData);

/* ---- Functions ---------------------------------------------------------- */

/**
 * Creates a playback queue: a JACK client with one output port per channel (a
 * mono queue gets a left/right pair for pan), connected to "system" (the
 * physical playback ports) when they exist. Callbacks run on the queue's own
 * thread (inCallbackRunLoop NULL) or on the given CFRunLoop in the given mode
 * (NULL = kCFRunLoopCommonModes). With no JACK server running the queue is made
 * all the same, with no device: it renders offline (AudioQueueSetOfflineRenderFormat),
 * and the first call that needs the device (AudioQueueStart or AudioQueuePrime not
 * offline, setting CurrentDevice, reading DeviceSampleRate...) connects it to the server,
 * or returns kAudioQueueErr_InvalidDevice while there is still none.
 */
OSStatus AudioQueueNewOutput(const AudioStreamBasicDescription *inFormat, AudioQueueOutputCallback inCallbackProc,
                             void *JAQ_NULLABLE inUserData, CFRunLoopRef JAQ_NULLABLE inCallbackRunLoop,
                             CFStringRef JAQ_NULLABLE inCallbackRunLoopMode, UInt32 inFlags,
                             AudioQueueRef JAQ_NULLABLE *JAQ_NONNULL outAQ);

/**
 * Creates a recording queue: a JACK client with one input port per channel,
 * connected from "system" (the physical capture ports) when they exist. A
 * sample rate of 0 means the server's rate (see kAudioQueueProperty_StreamDescription).
 * No JACK server: kAudioQueueErr_InvalidDevice.
 */
OSStatus AudioQueueNewInput(const AudioStreamBasicDescription *inFormat, AudioQueueInputCallback inCallbackProc,
                            void *JAQ_NULLABLE inUserData, CFRunLoopRef JAQ_NULLABLE inCallbackRunLoop,
                            CFStringRef JAQ_NULLABLE inCallbackRunLoopMode, UInt32 inFlags,
                            AudioQueueRef JAQ_NULLABLE *JAQ_NONNULL outAQ);

/** Disposes of a queue (immediately, or once what is enqueued has played). No callback runs after it returns. */
OSStatus AudioQueueDispose(AudioQueueRef inAQ, Boolean inImmediate);

/** Allocates a buffer of `inBufferByteSize` bytes owned by the queue. */
OSStatus AudioQueueAllocateBuffer(AudioQueueRef inAQ, UInt32 inBufferByteSize,
                                  AudioQueueBufferRef JAQ_NULLABLE *JAQ_NONNULL outBuffer);

/** Allocates a buffer with room for `inNumberPacketDescriptions` packet descriptions. */
OSStatus AudioQueueAllocateBufferWithPacketDescriptions(AudioQueueRef inAQ, UInt32 inBufferByteSize,
                                                        UInt32 inNumberPacketDescriptions,
                                                        AudioQueueBufferRef JAQ_NULLABLE *JAQ_NONNULL outBuffer);

/** Frees a buffer that is not enqueued (kAudioQueueErr_BufferInQueue otherwise). */
OSStatus AudioQueueFreeBuffer(AudioQueueRef inAQ, AudioQueueBufferRef inBuffer);

/** Enqueues a buffer: filled with audio (playback) or to be filled (recording). */
OSStatus AudioQueueEnqueueBuffer(AudioQueueRef inAQ, AudioQueueBufferRef inBuffer, UInt32 inNumPacketDescs,
                                 const AudioStreamPacketDescription *JAQ_NULLABLE inPacketDescs);

/**
 * Playback only: enqueues a buffer with frames to trim, parameter events taking
 * effect on its first frame (Volume, Pan, VolumeRampTime; PlayRate and Pitch in their ranges), and a start time in queue time (NULL: right after
 * the previous buffer; times must ascend). outActualStartTime gets the queue
 * time it will start at.
 */
OSStatus AudioQueueEnqueueBufferWithParameters(AudioQueueRef inAQ, AudioQueueBufferRef inBuffer,
                                               UInt32 inNumPacketDescs,
                                               const AudioStreamPacketDescription *JAQ_NULLABLE inPacketDescs,
                                               UInt32 inTrimFramesAtStart, UInt32 inTrimFramesAtEnd,
                                               UInt32 inNumParamValues,
                                               const AudioQueueParameterEvent *JAQ_NULLABLE inParamValues,
                                               const AudioTimeStamp *JAQ_NULLABLE inStartTime,
                                               AudioTimeStamp *JAQ_NULLABLE outActualStartTime);

/**
 * Starts (or resumes) the queue: NULL = as soon as possible; else at mSampleTime
 * in device time (JACK frame time, 64-bit), or at mHostTime (CLOCK_MONOTONIC ns)
 * when only that flag is set. The first frame is exactly that frame. A playback queue
 * made while no JACK server ran connects to the server here (unless it renders offline):
 * kAudioQueueErr_InvalidDevice while there is none.
 */
OSStatus AudioQueueStart(AudioQueueRef inAQ, const AudioTimeStamp *JAQ_NULLABLE inStartTime);

/** Playback only: decodes enqueued buffers (0 = all) before Start. */
OSStatus AudioQueuePrime(AudioQueueRef inAQ, UInt32 inNumberOfFramesToPrepare,
                         UInt32 *JAQ_NULLABLE outNumberOfFramesPrepared);

/** Stops now (true) or once everything enqueued has played / been delivered (false). */
OSStatus AudioQueueStop(AudioQueueRef inAQ, Boolean inImmediate);

/** Pauses; Start resumes with nothing lost. */
OSStatus AudioQueuePause(AudioQueueRef inAQ);

/**
 * Playback: what is enqueued plays to its last frame (the converter drained) before anything
 * enqueued later; returns at once. Recording: everything captured so far is delivered, the
 * buffer being filled with what it holds; returns once those callbacks ran. A callback that
 * holds the queue thread for 10 s makes it kAudioQueueErr_InvalidRunState (so Reset and Stop).
 */
OSStatus AudioQueueFlush(AudioQueueRef inAQ);

/** Drops what is queued, returning every queued buffer through the callback once. */
OSStatus AudioQueueReset(AudioQueueRef inAQ);

/**
 * Playback only: switches the queue to offline rendering in `inFormat` (interleaved
 * linear PCM, integer or float, any rate; the channel count is the layout's), or back
 * to the JACK device with NULL. The queue must be stopped (kAudioQueueErr_InvalidRunState).
 * Offline, the queue's ports are disconnected and silent; AudioQueueOfflineRender runs it.
 */
OSStatus AudioQueueSetOfflineRenderFormat(AudioQueueRef inAQ, const AudioStreamBasicDescription *JAQ_NULLABLE inFormat,
                                          const AudioChannelLayout *JAQ_NULLABLE inLayout);

/**
 * Playback only, offline mode only (else kAudioQueueErr_InvalidOfflineMode): renders the
 * next `inNumberFrames` frames into `ioBuffer` (a buffer of this queue, not enqueued) and
 * sets its mAudioDataByteSize. `inTimestamp->mSampleTime` is the render's time: the first
 * call (by convention asking for 0 frames, after AudioQueueStart) sets its origin; each
 * call continues where the last ended (a later time skips frames, an earlier one is -50).
 * Bit-exact with what the queue plays on JACK, at any speed the machine allows.
 */
OSStatus AudioQueueOfflineRender(AudioQueueRef inAQ, const AudioTimeStamp *inTimestamp, AudioQueueBufferRef ioBuffer,
                                 UInt32 inNumberFrames);

/** Gets a parameter (Volume, VolumeRampTime, Pan, PlayRate, Pitch). */
OSStatus AudioQueueGetParameter(AudioQueueRef inAQ, AudioQueueParameterID inParamID,
                                AudioQueueParameterValue *outValue);

/** Sets a parameter; it takes effect on the next JACK cycle. */
OSStatus AudioQueueSetParameter(AudioQueueRef inAQ, AudioQueueParameterID inParamID,
                                AudioQueueParameterValue inValue);

/** Gets a property; `ioDataSize` is the buffer's size on input and the value's on output. */
OSStatus AudioQueueGetProperty(AudioQueueRef inAQ, AudioQueuePropertyID inID, void *outData, UInt32 *ioDataSize);

/** Sets a property. */
OSStatus AudioQueueSetProperty(AudioQueueRef inAQ, AudioQueuePropertyID inID, const void *inData,
                               UInt32 inDataSize);

/** The size of a property's value. */
OSStatus AudioQueueGetPropertySize(AudioQueueRef inAQ, AudioQueuePropertyID inID, UInt32 *outDataSize);

/** Calls `inProc` when the property changes (IsRunning: when the device really starts and stops). */
OSStatus AudioQueueAddPropertyListener(AudioQueueRef inAQ, AudioQueuePropertyID inID,
                                       AudioQueuePropertyListenerProc inProc, void *JAQ_NULLABLE inUserData);

/** Removes a listener added with the same procedure and user data. */
OSStatus AudioQueueRemovePropertyListener(AudioQueueRef inAQ, AudioQueuePropertyID inID,
                                          AudioQueuePropertyListenerProc inProc, void *JAQ_NULLABLE inUserData);

/** Creates a timeline object that reports discontinuities (xruns, lost recording data, rate changes). */
OSStatus AudioQueueCreateTimeline(AudioQueueRef inAQ, AudioQueueTimelineRef JAQ_NULLABLE *JAQ_NONNULL outTimeline);

/** Disposes of a timeline. */
OSStatus AudioQueueDisposeTimeline(AudioQueueRef inAQ, AudioQueueTimelineRef inTimeline);

/**
 * The queue time now: mSampleTime in frames at the queue's rate since it started
 * (paused time excluded), mHostTime; *outTimelineDiscontinuity true once after
 * each discontinuity (needs a timeline).
 */
OSStatus AudioQueueGetCurrentTime(AudioQueueRef inAQ, AudioQueueTimelineRef JAQ_NULLABLE inTimeline,
                                  AudioTimeStamp *JAQ_NULLABLE outTimeStamp,
                                  Boolean *JAQ_NULLABLE outTimelineDiscontinuity);

/** Device time now: JACK frame time (64-bit) and host time; host time is valid even when not running. */
OSStatus AudioQueueDeviceGetCurrentTime(AudioQueueRef inAQ, AudioTimeStamp *outTimeStamp);

/** Translates a device time between sample time and host time (jack_frames_to_time / jack_time_to_frames). */
OSStatus AudioQueueDeviceTranslateTime(AudioQueueRef inAQ, const AudioTimeStamp *inTime, AudioTimeStamp *outTime);

/** The earliest device frame at or after the request at which a running or primed queue can start. */
OSStatus AudioQueueDeviceGetNearestStartTime(AudioQueueRef inAQ, AudioTimeStamp *ioRequestedStartTime,
                                             UInt32 inFlags);

/* ---- Processing taps ---------------------------------------------------- */

/**
 * Creates the queue's processing tap (one per queue: kAudioQueueErr_TooManyTaps; only while
 * stopped: kAudioQueueErr_InvalidRunState; output queues). inFlags: exactly one of PreEffects
 * and PostEffects, optionally Siphon. outMaxFrames: the most frames one callback asks for;
 * outProcessingFormat: non-interleaved native Float32 at the queue's rate and channel count.
 */
OSStatus AudioQueueProcessingTapNew(AudioQueueRef inAQ, AudioQueueProcessingTapCallback inCallback,
                                    void *JAQ_NULLABLE inClientData, AudioQueueProcessingTapFlags inFlags,
                                    UInt32 *outMaxFrames, AudioStreamBasicDescription *outProcessingFormat,
                                    AudioQueueProcessingTapRef JAQ_NULLABLE *JAQ_NONNULL outAQTap);

/** Removes and frees a tap (only while the queue is stopped; not from the tap's callback). */
OSStatus AudioQueueProcessingTapDispose(AudioQueueProcessingTapRef inAQTap);

/**
 * From the tap's callback only (kAudioQueueErr_InvalidTapContext otherwise): up to
 * inNumberFrames source frames. ioData's buffers with NULL mData get pointers valid until the
 * callback returns; others are filled (as far as mDataByteSize allows). *outFlags gets
 * StartOfStream / EndOfStream; *outNumberFrames the frames given.
 */
OSStatus AudioQueueProcessingTapGetSourceAudio(AudioQueueProcessingTapRef inAQTap, UInt32 inNumberFrames,
                                               AudioTimeStamp *ioTimeStamp, AudioQueueProcessingTapFlags *outFlags,
                                               UInt32 *outNumberFrames, AudioBufferList *ioData);

/**
 * From the tap's callback only: the queue time (source frames) of the audio being processed
 * and the queue frames it covers (they differ from the callback's frames at a PlayRate other than 1).
 */
OSStatus AudioQueueProcessingTapGetQueueTime(AudioQueueProcessingTapRef inAQTap, Float64 *outQueueSampleTime,
                                             UInt32 *outQueueFrameCount);

JAQ_ASSUME_NONNULL_END
JAQ_EXTERN_C_END

JAQ_STATIC_ASSERT(sizeof(AudioQueueBuffer) == 56, "AudioQueueBuffer is 56 bytes");
JAQ_STATIC_ASSERT(sizeof(AudioQueueParameterEvent) == 8, "AudioQueueParameterEvent is 8 bytes");
JAQ_STATIC_ASSERT(sizeof(AudioQueueLevelMeterState) == 8, "AudioQueueLevelMeterState is 8 bytes");
JAQ_STATIC_ASSERT(__builtin_offsetof(AudioQueueBuffer, mAudioDataByteSize) == 16, "AudioQueueBuffer layout");
JAQ_STATIC_ASSERT(__builtin_offsetof(AudioQueueBuffer, mUserData) == 24, "AudioQueueBuffer layout");
JAQ_STATIC_ASSERT(__builtin_offsetof(AudioQueueBuffer, mPacketDescriptions) == 40, "AudioQueueBuffer layout");

#endif
