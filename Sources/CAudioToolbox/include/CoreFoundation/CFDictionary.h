#ifndef JAQ_CFDICTIONARY_H
#define JAQ_CFDICTIONARY_H
#include "CFBase.h"

JAQ_EXTERN_C_BEGIN
JAQ_ASSUME_NONNULL_BEGIN

/*
 * CFDictionary, to read what Audio File Services hands out (kAudioFilePropertyInfoDictionary:
 * CFString keys and values) and to make dictionaries of CF objects.
 */
typedef const struct __CFDictionary *CFDictionaryRef;

typedef const void *JAQ_NULLABLE (*CFDictionaryRetainCallBack)(CFAllocatorRef JAQ_NULLABLE allocator, const void *value);
typedef void (*CFDictionaryReleaseCallBack)(CFAllocatorRef JAQ_NULLABLE allocator, const void *value);
typedef CFStringRef JAQ_NULLABLE (*CFDictionaryCopyDescriptionCallBack)(const void *value);
typedef Boolean (*CFDictionaryEqualCallBack)(const void *value1, const void *value2);
typedef CFHashCode (*CFDictionaryHashCallBack)(const void *value);

typedef struct {
    CFIndex version;
    CFDictionaryRetainCallBack JAQ_NULLABLE retain;
    CFDictionaryReleaseCallBack JAQ_NULLABLE release;
    CFDictionaryCopyDescriptionCallBack JAQ_NULLABLE copyDescription;
    CFDictionaryEqualCallBack JAQ_NULLABLE equal;
    CFDictionaryHashCallBack JAQ_NULLABLE hash;
} CFDictionaryKeyCallBacks;

typedef struct {
    CFIndex version;
    CFDictionaryRetainCallBack JAQ_NULLABLE retain;
    CFDictionaryReleaseCallBack JAQ_NULLABLE release;
    CFDictionaryCopyDescriptionCallBack JAQ_NULLABLE copyDescription;
    CFDictionaryEqualCallBack JAQ_NULLABLE equal;
} CFDictionaryValueCallBacks;

/** Callbacks for keys and values that are CF objects (retained, compared with CFEqual). */
extern const CFDictionaryKeyCallBacks kCFTypeDictionaryKeyCallBacks JAQ_CF_FORWARD(kCFTypeDictionaryKeyCallBacks);
extern const CFDictionaryValueCallBacks kCFTypeDictionaryValueCallBacks JAQ_CF_FORWARD(kCFTypeDictionaryValueCallBacks);

/** Creates an immutable dictionary of `numValues` pairs; release it with CFRelease. */
CFDictionaryRef JAQ_NULLABLE CFDictionaryCreate(CFAllocatorRef JAQ_NULLABLE allocator,
                                                const void *JAQ_NULLABLE *JAQ_NULLABLE keys,
                                                const void *JAQ_NULLABLE *JAQ_NULLABLE values, CFIndex numValues,
                                                const CFDictionaryKeyCallBacks *JAQ_NULLABLE keyCallBacks,
                                                const CFDictionaryValueCallBacks *JAQ_NULLABLE valueCallBacks)
    JAQ_CF_FORWARD(CFDictionaryCreate) CF_RETURNS_RETAINED;
/** The type ID of CFDictionary objects (compare with CFGetTypeID). */
CFTypeID CFDictionaryGetTypeID(void) JAQ_CF_FORWARD(CFDictionaryGetTypeID);
/** Number of key-value pairs. */
CFIndex CFDictionaryGetCount(CFDictionaryRef theDict) JAQ_CF_FORWARD(CFDictionaryGetCount);
/** The value of `key` (e.g. CFSTR("title")), not retained; NULL when the key is absent. */
const void *JAQ_NULLABLE CFDictionaryGetValue(CFDictionaryRef theDict, const void *JAQ_NULLABLE key)
    JAQ_CF_FORWARD(CFDictionaryGetValue);
/** Whether `key` is present. */
Boolean CFDictionaryContainsKey(CFDictionaryRef theDict, const void *JAQ_NULLABLE key) JAQ_CF_FORWARD(CFDictionaryContainsKey);
/** Fills `keys` and `values` (each CFDictionaryGetCount entries, or NULL) in matching order. */
void CFDictionaryGetKeysAndValues(CFDictionaryRef theDict, const void *JAQ_NULLABLE *JAQ_NULLABLE keys,
                                  const void *JAQ_NULLABLE *JAQ_NULLABLE values) JAQ_CF_FORWARD(CFDictionaryGetKeysAndValues);

JAQ_ASSUME_NONNULL_END
JAQ_EXTERN_C_END
#endif
