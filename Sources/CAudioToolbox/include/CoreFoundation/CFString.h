#ifndef JAQ_CFSTRING_H
#define JAQ_CFSTRING_H
#include "CFBase.h"

JAQ_EXTERN_C_BEGIN
JAQ_ASSUME_NONNULL_BEGIN

typedef UInt32 CFStringEncoding;
enum { kCFStringEncodingUTF8 = 0x08000100, kCFStringEncodingASCII = 0x0600 };

/** Creates a string from a C string (e.g. a JACK port name for CurrentDevice). */
CFStringRef JAQ_NULLABLE CFStringCreateWithCString(CFAllocatorRef JAQ_NULLABLE alloc, const char *cStr,
                                                   CFStringEncoding encoding)
    JAQ_CF_FORWARD(CFStringCreateWithCString) CF_RETURNS_RETAINED;
/** Copies a string's characters into a C buffer; false if it does not fit. */
Boolean CFStringGetCString(CFStringRef theString, char *buffer, CFIndex bufferSize, CFStringEncoding encoding)
    JAQ_CF_FORWARD(CFStringGetCString);
/** Number of UTF-16 code units. */
CFIndex CFStringGetLength(CFStringRef theString) JAQ_CF_FORWARD(CFStringGetLength);

JAQ_ASSUME_NONNULL_END
JAQ_EXTERN_C_END
#endif
