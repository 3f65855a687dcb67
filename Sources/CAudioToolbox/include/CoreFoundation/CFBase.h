/*
 * CoreFoundation subset for jaq's AudioToolbox.
 *
 * The Audio Queue and Audio File APIs name a handful of CoreFoundation types
 * (CFURLRef, CFStringRef, CFRunLoopRef) and functions (CFRunLoopGetCurrent,
 * CFRunLoopRunInMode, CFURLCreateFromFileSystemRepresentation, CFRelease).
 * On Linux the real CoreFoundation ships inside the Swift toolchain's
 * libFoundation.so; these declarations reach it through thin forwarders in
 * libAudioToolbox (the `jaq_` asm labels), so a C program links with
 * `-lAudioToolbox` alone and never clashes with Foundation's own symbols.
 */
#ifndef JAQ_CFBASE_H
#define JAQ_CFBASE_H

#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>

#if defined(__cplusplus)
#define JAQ_EXTERN_C_BEGIN extern "C" {
#define JAQ_EXTERN_C_END }
/* Layout checks: C11's keyword, C++11's spelling (the guides' code is C++). */
#define JAQ_STATIC_ASSERT static_assert
#else
#define JAQ_EXTERN_C_BEGIN
#define JAQ_EXTERN_C_END
#define JAQ_STATIC_ASSERT _Static_assert
#endif

/* Nullability: clang (and the Swift importer) understand it; gcc ignores it. */
#if defined(__clang__)
#define JAQ_NULLABLE _Nullable
#define JAQ_NONNULL _Nonnull
#define JAQ_ASSUME_NONNULL_BEGIN _Pragma("clang assume_nonnull begin")
#define JAQ_ASSUME_NONNULL_END _Pragma("clang assume_nonnull end")
#else
#define JAQ_NULLABLE
#define JAQ_NONNULL
#define JAQ_ASSUME_NONNULL_BEGIN
#define JAQ_ASSUME_NONNULL_END
#endif
#ifndef __nullable
#define __nullable JAQ_NULLABLE
#endif
#ifndef __nonnull
#define __nonnull JAQ_NONNULL
#endif

/*
 * CF_ENUM / CF_OPTIONS as Apple defines them for clang, so Swift imports
 * typed constants, option sets (AudioFileFlags) and enums
 * (AudioFilePermissions); plain C compilers (gcc 12) get the portable form.
 */
#if defined(__clang__)
#define JAQ_ENUM_ATTR __attribute__((enum_extensibility(open)))
#define JAQ_OPTIONS_ATTR __attribute__((flag_enum, enum_extensibility(open)))
#define CF_ENUM(_type) enum : _type
#define CF_TYPED_ENUM(_type, _name) enum JAQ_ENUM_ATTR _name : _type
#define CF_TYPED_OPTIONS(_type, _name) enum JAQ_OPTIONS_ATTR _name : _type
#define CF_SWIFT_NAME(_name) __attribute__((swift_name(#_name)))
#define CF_REFINED_FOR_SWIFT __attribute__((swift_private))
#define CF_RETURNS_RETAINED __attribute__((cf_returns_retained))
#define CF_RETURNS_NOT_RETAINED __attribute__((cf_returns_not_retained))
#define CF_EXTENSIBLE_STRING_ENUM __attribute__((swift_wrapper(struct)))
#else
#define CF_ENUM(_type) enum
#define CF_SWIFT_NAME(_name)
#define CF_REFINED_FOR_SWIFT
#define CF_RETURNS_RETAINED
#define CF_RETURNS_NOT_RETAINED
#define CF_EXTENSIBLE_STRING_ENUM
#endif

/* Declares `typedef <type> name` plus its constants; see CF_TYPED_ENUM use. */
#if defined(__clang__)
#define JAQ_TYPED_ENUM_BEGIN(_type, _name) typedef CF_TYPED_ENUM(_type, _name) {
#define JAQ_TYPED_ENUM_END(_name) } _name;
#define JAQ_TYPED_OPTIONS_BEGIN(_type, _name) typedef CF_TYPED_OPTIONS(_type, _name) {
#define JAQ_TYPED_OPTIONS_END(_name) } _name;
#else
#define JAQ_TYPED_ENUM_BEGIN(_type, _name) typedef _type _name; enum {
#define JAQ_TYPED_ENUM_END(_name) };
#define JAQ_TYPED_OPTIONS_BEGIN(_type, _name) typedef _type _name; enum {
#define JAQ_TYPED_OPTIONS_END(_name) };
#endif

/* Forwarded CoreFoundation entry points carry a jaq_ symbol name. */
#define JAQ_CF_FORWARD(_sym) __asm__("jaq_" #_sym)

/* ---- MacTypes ---------------------------------------------------------- */
typedef uint8_t UInt8;
typedef int8_t SInt8;
typedef uint16_t UInt16;
typedef int16_t SInt16;
typedef unsigned int UInt32;
typedef signed int SInt32;
typedef unsigned long long UInt64;
typedef signed long long SInt64;
typedef float Float32;
typedef double Float64;
typedef SInt32 OSStatus;
typedef UInt32 FourCharCode;
typedef FourCharCode OSType;
typedef UInt8 Byte;
/* Swift sees `Boolean` as Bool, as on Apple platforms; C sees Apple's byte. */
#if defined(__swift__)
typedef _Bool Boolean;
#else
typedef unsigned char Boolean;
#endif

JAQ_EXTERN_C_BEGIN
CF_ENUM(OSStatus) { noErr = 0 };
/* The MacErrors.h file-system codes Audio File Services returns here. */
CF_ENUM(OSStatus) {
    dskFulErr = -34,   /* the disk is full */
    ioErr = -36,       /* an I/O error */
    eofErr = -39,      /* end of file */
    fnfErr = -43,      /* file not found */
    dupFNErr = -48,    /* the file exists (AudioFileCreateWithURL without kAudioFileFlags_EraseFile) */
    paramErr = -50,    /* a bad parameter (NULL pointer) */
    permErr = -54,     /* no permission (POSIX file mode) */
    memFullErr = -108  /* out of memory */
};
/* File Manager permissions used by the guides (Listing 3-9 passes fsRdPerm). */
enum { fsCurPerm = 0, fsRdPerm = 1, fsWrPerm = 2, fsRdWrPerm = 3 };
JAQ_EXTERN_C_END

/* ---- CFBase ------------------------------------------------------------ */
typedef long CFIndex;
typedef unsigned long CFOptionFlags;
typedef unsigned long CFTypeID;
typedef unsigned long CFHashCode;
typedef double CFTimeInterval;
typedef const void *CFTypeRef;
typedef const struct __CFAllocator *CFAllocatorRef;
typedef const struct __CFString *CFStringRef;

JAQ_EXTERN_C_BEGIN
JAQ_ASSUME_NONNULL_BEGIN
/** The default allocator (NULL), as in CoreFoundation. */
#define kCFAllocatorDefault ((CFAllocatorRef)NULL)

/** Releases a CoreFoundation object (URLs from CFURLCreate..., strings). */
void CFRelease(CFTypeRef cf) JAQ_CF_FORWARD(CFRelease) CF_REFINED_FOR_SWIFT;
/** Retains a CoreFoundation object and returns it. */
CFTypeRef CFRetain(CFTypeRef cf) JAQ_CF_FORWARD(CFRetain) CF_REFINED_FOR_SWIFT;
/** The type of a CoreFoundation object (CFStringGetTypeID(), CFDictionaryGetTypeID()). */
CFTypeID CFGetTypeID(CFTypeRef cf) JAQ_CF_FORWARD(CFGetTypeID);
JAQ_ASSUME_NONNULL_END
JAQ_EXTERN_C_END

#endif
