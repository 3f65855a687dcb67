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

JAQ_ASSUME_NONNULL_END
JAQ_EXTERN_C_END
#endif
