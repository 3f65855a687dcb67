#ifndef JAQ_CFRUNLOOP_H
#define JAQ_CFRUNLOOP_H
#include "CFBase.h"

JAQ_EXTERN_C_BEGIN
JAQ_ASSUME_NONNULL_BEGIN

typedef struct __CFRunLoop *CFRunLoopRef;
typedef CFStringRef CFRunLoopMode CF_EXTENSIBLE_STRING_ENUM;

/** The run loop modes; kCFRunLoopCommonModes includes the default mode. */
extern const CFRunLoopMode kCFRunLoopDefaultMode JAQ_CF_FORWARD(kCFRunLoopDefaultMode);
extern const CFRunLoopMode kCFRunLoopCommonModes JAQ_CF_FORWARD(kCFRunLoopCommonModes);

JAQ_TYPED_ENUM_BEGIN(SInt32, CFRunLoopRunResult)
    kCFRunLoopRunFinished = 1,
    kCFRunLoopRunStopped = 2,
    kCFRunLoopRunTimedOut = 3,
    kCFRunLoopRunHandledSource = 4
JAQ_TYPED_ENUM_END(CFRunLoopRunResult)

/** The calling thread's run loop (audio queue callbacks can be delivered on it). */
CFRunLoopRef CFRunLoopGetCurrent(void) JAQ_CF_FORWARD(CFRunLoopGetCurrent) CF_RETURNS_NOT_RETAINED;
/** The main thread's run loop. */
CFRunLoopRef CFRunLoopGetMain(void) JAQ_CF_FORWARD(CFRunLoopGetMain) CF_RETURNS_NOT_RETAINED;
/** Runs the current thread's run loop in `mode` for up to `seconds`. */
CFRunLoopRunResult CFRunLoopRunInMode(CFRunLoopMode mode, CFTimeInterval seconds, Boolean returnAfterSourceHandled)
    JAQ_CF_FORWARD(CFRunLoopRunInMode);
/** Runs the current thread's run loop until CFRunLoopStop. */
void CFRunLoopRun(void) JAQ_CF_FORWARD(CFRunLoopRun);
/** Makes a running CFRunLoopRun/CFRunLoopRunInMode return. */
void CFRunLoopStop(CFRunLoopRef rl) JAQ_CF_FORWARD(CFRunLoopStop);
/** Wakes a sleeping run loop. */
void CFRunLoopWakeUp(CFRunLoopRef rl) JAQ_CF_FORWARD(CFRunLoopWakeUp);

/* Run loop sources (version 0): how audio queues deliver callbacks to a run loop. */
typedef struct __CFRunLoopSource *CFRunLoopSourceRef;

typedef struct {
    CFIndex version;
    void *JAQ_NULLABLE info;
    const void *JAQ_NULLABLE (*JAQ_NULLABLE retain)(const void *JAQ_NULLABLE info);
    void (*JAQ_NULLABLE release)(const void *JAQ_NULLABLE info);
    CFStringRef JAQ_NULLABLE (*JAQ_NULLABLE copyDescription)(const void *JAQ_NULLABLE info);
    Boolean (*JAQ_NULLABLE equal)(const void *JAQ_NULLABLE info1, const void *JAQ_NULLABLE info2);
    CFHashCode (*JAQ_NULLABLE hash)(const void *JAQ_NULLABLE info);
    void (*JAQ_NULLABLE schedule)(void *JAQ_NULLABLE info, CFRunLoopRef rl, CFRunLoopMode mode);
    void (*JAQ_NULLABLE cancel)(void *JAQ_NULLABLE info, CFRunLoopRef rl, CFRunLoopMode mode);
    void (*JAQ_NULLABLE perform)(void *JAQ_NULLABLE info);
} CFRunLoopSourceContext;

/** Creates a version-0 source that calls `context->perform` when signalled. */
CFRunLoopSourceRef JAQ_NULLABLE CFRunLoopSourceCreate(CFAllocatorRef JAQ_NULLABLE allocator, CFIndex order,
                                                      CFRunLoopSourceContext *context)
    JAQ_CF_FORWARD(CFRunLoopSourceCreate) CF_RETURNS_RETAINED;
void CFRunLoopAddSource(CFRunLoopRef rl, CFRunLoopSourceRef source, CFRunLoopMode mode)
    JAQ_CF_FORWARD(CFRunLoopAddSource);
void CFRunLoopRemoveSource(CFRunLoopRef rl, CFRunLoopSourceRef source, CFRunLoopMode mode)
    JAQ_CF_FORWARD(CFRunLoopRemoveSource);
/** Marks the source ready; the run loop performs it on its next pass (wake it up). */
void CFRunLoopSourceSignal(CFRunLoopSourceRef source) JAQ_CF_FORWARD(CFRunLoopSourceSignal);
void CFRunLoopSourceInvalidate(CFRunLoopSourceRef source) JAQ_CF_FORWARD(CFRunLoopSourceInvalidate);

JAQ_ASSUME_NONNULL_END
JAQ_EXTERN_C_END
#endif
