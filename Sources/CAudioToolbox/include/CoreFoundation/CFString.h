#ifndef JAQ_CFSTRING_H
#define JAQ_CFSTRING_H
#include "CFBase.h"

JAQ_EXTERN_C_BEGIN
JAQ_ASSUME_NONNULL_BEGIN

typedef UInt32 CFStringEncoding;
enum {
    kCFStringEncodingMacRoman = 0,
    kCFStringEncodingUTF8 = 0x08000100,
    kCFStringEncodingASCII = 0x0600,
    kCFStringEncodingISOLatin1 = 0x0201
};

/**
 * CFSTR("text"): a constant CFStringRef for a C string literal, as in CoreFoundation. The same
 * text gives the same string; it lives as long as the program and CFRelease never frees it.
 * Unlike Apple's compiler builtin it is a function call, so it cannot initialise a static.
 */
#define CFSTR(cStr) __CFStringMakeConstantString("" cStr "")
CFStringRef __CFStringMakeConstantString(const char *cStr) JAQ_CF_FORWARD(__CFStringMakeConstantString)
    CF_RETURNS_NOT_RETAINED;

/** Creates a string from a C string (e.g. a JACK port name for CurrentDevice). */
CFStringRef JAQ_NULLABLE CFStringCreateWithCString(CFAllocatorRef JAQ_NULLABLE alloc, const char *cStr,
                                                   CFStringEncoding encoding)
    JAQ_CF_FORWARD(CFStringCreateWithCString) CF_RETURNS_RETAINED;
/** Copies a string's characters into a C buffer; false if it does not fit. */
Boolean CFStringGetCString(CFStringRef theString, char *buffer, CFIndex bufferSize, CFStringEncoding encoding)
    JAQ_CF_FORWARD(CFStringGetCString);
/** The string's characters as a C string in `encoding` when the string holds them so (no
 *  copy), else NULL: callers fall back to CFStringGetCString, as on Apple platforms. */
const char *JAQ_NULLABLE CFStringGetCStringPtr(CFStringRef theString, CFStringEncoding encoding)
    JAQ_CF_FORWARD(CFStringGetCStringPtr);
/** The type ID of CFString objects (compare with CFGetTypeID). */
CFTypeID CFStringGetTypeID(void) JAQ_CF_FORWARD(CFStringGetTypeID);
/** Number of UTF-16 code units. */
CFIndex CFStringGetLength(CFStringRef theString) JAQ_CF_FORWARD(CFStringGetLength);

JAQ_ASSUME_NONNULL_END
JAQ_EXTERN_C_END
#endif
