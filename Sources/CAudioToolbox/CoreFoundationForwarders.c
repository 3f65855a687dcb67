/*
 * Forwarders from the CoreFoundation subset declared in
 * include/CoreFoundation/ to the real CoreFoundation inside the Swift
 * toolchain's libFoundation.so, opened when first called (CoreFoundationLoad.c).
 *
 * Why a shim: the public headers give these functions `jaq_` symbol names
 * (asm labels) so that a C program links with -lAudioToolbox alone and so
 * that nothing here interposes on libFoundation's own CFRelease & co. This
 * file is the one place that names the real symbols.
 */
#include "include/CoreFoundation/CoreFoundation.h"
#include "CoreFoundationLoad.h"


extern void real_CFRelease(CFTypeRef cf) REAL(CFRelease);
extern CFTypeRef real_CFRetain(CFTypeRef cf) REAL(CFRetain);
extern CFStringRef real_CFStringCreateWithCString(CFAllocatorRef alloc, const char *cStr, CFStringEncoding encoding)
    REAL(CFStringCreateWithCString);
extern Boolean real_CFStringGetCString(CFStringRef s, char *buffer, CFIndex size, CFStringEncoding encoding)
    REAL(CFStringGetCString);
extern CFIndex real_CFStringGetLength(CFStringRef s) REAL(CFStringGetLength);
extern CFRunLoopRef real_CFRunLoopGetCurrent(void) REAL(CFRunLoopGetCurrent);
extern CFRunLoopRef real_CFRunLoopGetMain(void) REAL(CFRunLoopGetMain);
extern SInt32 real_CFRunLoopRunInMode(CFStringRef mode, CFTimeInterval seconds, Boolean returnAfterSourceHandled)
    REAL(CFRunLoopRunInMode);
extern void real_CFRunLoopRun(void) REAL(CFRunLoopRun);
extern void real_CFRunLoopStop(CFRunLoopRef rl) REAL(CFRunLoopStop);
extern void real_CFRunLoopWakeUp(CFRunLoopRef rl) REAL(CFRunLoopWakeUp);
extern CFURLRef real_CFURLCreateFromFileSystemRepresentation(CFAllocatorRef a, const UInt8 *b, CFIndex n, Boolean dir)
    REAL(CFURLCreateFromFileSystemRepresentation);
extern Boolean real_CFURLGetFileSystemRepresentation(CFURLRef url, Boolean resolve, UInt8 *buffer, CFIndex max)
    REAL(CFURLGetFileSystemRepresentation);
extern CFRunLoopSourceRef real_CFRunLoopSourceCreate(CFAllocatorRef a, CFIndex order, CFRunLoopSourceContext *c)
    REAL(CFRunLoopSourceCreate);
extern void real_CFRunLoopAddSource(CFRunLoopRef rl, CFRunLoopSourceRef s, CFStringRef mode) REAL(CFRunLoopAddSource);
extern void real_CFRunLoopRemoveSource(CFRunLoopRef rl, CFRunLoopSourceRef s, CFStringRef mode)
    REAL(CFRunLoopRemoveSource);
extern void real_CFRunLoopSourceSignal(CFRunLoopSourceRef s) REAL(CFRunLoopSourceSignal);
extern void real_CFRunLoopSourceInvalidate(CFRunLoopSourceRef s) REAL(CFRunLoopSourceInvalidate);
extern const CFStringRef real_kCFRunLoopDefaultMode REAL(kCFRunLoopDefaultMode);
extern const CFStringRef real_kCFRunLoopCommonModes REAL(kCFRunLoopCommonModes);

/* PortingForwarders.c: CFSTR's strings are never freed, as on Apple platforms. */
extern int jaq_cf_is_constant_string(CFTypeRef cf);

void jaq_CFRelease(CFTypeRef cf) { if (cf && !jaq_cf_is_constant_string(cf)) JAQ_CF(CFRelease)(cf); }
CFTypeRef jaq_CFRetain(CFTypeRef cf) { return cf ? JAQ_CF(CFRetain)(cf) : cf; }
CFStringRef jaq_CFStringCreateWithCString(CFAllocatorRef alloc, const char *cStr, CFStringEncoding encoding) {
    return cStr ? JAQ_CF(CFStringCreateWithCString)(alloc, cStr, encoding) : NULL;
}
Boolean jaq_CFStringGetCString(CFStringRef s, char *buffer, CFIndex size, CFStringEncoding encoding) {
    return (s && buffer && size > 0) ? JAQ_CF(CFStringGetCString)(s, buffer, size, encoding) : 0;
}
CFIndex jaq_CFStringGetLength(CFStringRef s) { return s ? JAQ_CF(CFStringGetLength)(s) : 0; }
CFRunLoopRef jaq_CFRunLoopGetCurrent(void) { return JAQ_CF(CFRunLoopGetCurrent)(); }
CFRunLoopRef jaq_CFRunLoopGetMain(void) { return JAQ_CF(CFRunLoopGetMain)(); }
SInt32 jaq_CFRunLoopRunInMode(CFStringRef mode, CFTimeInterval seconds, Boolean returnAfterSourceHandled) {
    return JAQ_CF(CFRunLoopRunInMode)(mode ? mode : JAQ_CF(kCFRunLoopDefaultMode), seconds, returnAfterSourceHandled);
}
void jaq_CFRunLoopRun(void) { JAQ_CF(CFRunLoopRun)(); }
void jaq_CFRunLoopStop(CFRunLoopRef rl) { if (rl) JAQ_CF(CFRunLoopStop)(rl); }
void jaq_CFRunLoopWakeUp(CFRunLoopRef rl) { if (rl) JAQ_CF(CFRunLoopWakeUp)(rl); }
CFURLRef jaq_CFURLCreateFromFileSystemRepresentation(CFAllocatorRef a, const UInt8 *b, CFIndex n, Boolean dir) {
    return (b && n >= 0) ? JAQ_CF(CFURLCreateFromFileSystemRepresentation)(a, b, n, dir) : NULL;
}
Boolean jaq_CFURLGetFileSystemRepresentation(CFURLRef url, Boolean resolve, UInt8 *buffer, CFIndex max) {
    return (url && buffer && max > 0) ? JAQ_CF(CFURLGetFileSystemRepresentation)(url, resolve, buffer, max) : 0;
}

CFRunLoopSourceRef jaq_CFRunLoopSourceCreate(CFAllocatorRef a, CFIndex order, CFRunLoopSourceContext *c) {
    return c ? JAQ_CF(CFRunLoopSourceCreate)(a, order, c) : NULL;
}
void jaq_CFRunLoopAddSource(CFRunLoopRef rl, CFRunLoopSourceRef s, CFStringRef mode) {
    if (rl && s) JAQ_CF(CFRunLoopAddSource)(rl, s, mode ? mode : JAQ_CF(kCFRunLoopCommonModes));
}
void jaq_CFRunLoopRemoveSource(CFRunLoopRef rl, CFRunLoopSourceRef s, CFStringRef mode) {
    if (rl && s) JAQ_CF(CFRunLoopRemoveSource)(rl, s, mode ? mode : JAQ_CF(kCFRunLoopCommonModes));
}
void jaq_CFRunLoopSourceSignal(CFRunLoopSourceRef s) { if (s) JAQ_CF(CFRunLoopSourceSignal)(s); }
void jaq_CFRunLoopSourceInvalidate(CFRunLoopSourceRef s) { if (s) JAQ_CF(CFRunLoopSourceInvalidate)(s); }
