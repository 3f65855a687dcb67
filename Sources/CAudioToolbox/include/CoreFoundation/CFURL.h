#ifndef JAQ_CFURL_H
#define JAQ_CFURL_H
#include "CFBase.h"

JAQ_EXTERN_C_BEGIN
JAQ_ASSUME_NONNULL_BEGIN

/*
 * In C, CFURLRef is CoreFoundation's URL object. In Swift, `CFURL` is
 * Foundation's `URL` (so `url as CFURL` compiles as it does on Apple
 * platforms); the C declarations below are refined for Swift by the
 * AudioToolbox module.
 */
typedef const struct __CFURL *CFURLRef CF_SWIFT_NAME(__CFURLRef);

/** Creates a file URL from a path of `bufLen` bytes; release it with CFRelease. */
CFURLRef JAQ_NULLABLE CFURLCreateFromFileSystemRepresentation(CFAllocatorRef JAQ_NULLABLE allocator,
                                                              const UInt8 *buffer, CFIndex bufLen,
                                                              Boolean isDirectory)
    JAQ_CF_FORWARD(CFURLCreateFromFileSystemRepresentation) CF_RETURNS_RETAINED CF_REFINED_FOR_SWIFT;
/** How a path passed to CFURLCreateWithFileSystemPath is spelled. */
JAQ_TYPED_ENUM_BEGIN(CFIndex, CFURLPathStyle)
    kCFURLPOSIXPathStyle = 0,
    kCFURLHFSPathStyle = 1,
    kCFURLWindowsPathStyle = 2
JAQ_TYPED_ENUM_END(CFURLPathStyle)

/** Creates a file URL from a path held in a CFString; release it with CFRelease. Only
 *  kCFURLPOSIXPathStyle paths are taken here (others give NULL). A relative path is taken
 *  from the current directory. */
CFURLRef JAQ_NULLABLE CFURLCreateWithFileSystemPath(CFAllocatorRef JAQ_NULLABLE allocator, CFStringRef filePath,
                                                    CFURLPathStyle pathStyle, Boolean isDirectory)
    JAQ_CF_FORWARD(CFURLCreateWithFileSystemPath) CF_RETURNS_RETAINED CF_REFINED_FOR_SWIFT;
/** Writes the URL's file system path into `buffer`; false if it does not fit. */
Boolean CFURLGetFileSystemRepresentation(CFURLRef url, Boolean resolveAgainstBase, UInt8 *buffer, CFIndex maxBufLen)
    JAQ_CF_FORWARD(CFURLGetFileSystemRepresentation) CF_REFINED_FOR_SWIFT;

JAQ_ASSUME_NONNULL_END
JAQ_EXTERN_C_END
#endif
