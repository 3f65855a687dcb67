/*
 * More of the CoreFoundation subset (include/CoreFoundation/) that ported code calls around
 * Audio Toolbox: CFSTR's constant strings, CFURLCreateWithFileSystemPath,
 * CFStringGetCStringPtr, CFGetTypeID and read access to CFDictionary. Forwarders to the real
 * CoreFoundation in libFoundation.so (opened when first called: CoreFoundationLoad.c), as in
 * CoreFoundationForwarders.c, with the checks for
 * NULL that CoreFoundation itself leaves to a crash.
 */
#include "include/CoreFoundation/CoreFoundation.h"
#include "CoreFoundationLoad.h"
#include <pthread.h>


extern CFStringRef real_CFStringCreateWithCString(CFAllocatorRef alloc, const char *cStr, CFStringEncoding encoding)
    REAL(CFStringCreateWithCString);
extern const char *real_CFStringGetCStringPtr(CFStringRef s, CFStringEncoding encoding) REAL(CFStringGetCStringPtr);
extern CFTypeID real_CFStringGetTypeID(void) REAL(CFStringGetTypeID);
extern CFTypeID real_CFGetTypeID(CFTypeRef cf) REAL(CFGetTypeID);
extern CFURLRef real_CFURLCreateWithFileSystemPath(CFAllocatorRef a, CFStringRef path, CFIndex style, Boolean dir)
    REAL(CFURLCreateWithFileSystemPath);
extern CFDictionaryRef real_CFDictionaryCreate(CFAllocatorRef a, const void **keys, const void **values, CFIndex n,
                                               const CFDictionaryKeyCallBacks *k, const CFDictionaryValueCallBacks *v)
    REAL(CFDictionaryCreate);
extern CFTypeID real_CFDictionaryGetTypeID(void) REAL(CFDictionaryGetTypeID);
extern CFIndex real_CFDictionaryGetCount(CFDictionaryRef d) REAL(CFDictionaryGetCount);
extern const void *real_CFDictionaryGetValue(CFDictionaryRef d, const void *key) REAL(CFDictionaryGetValue);
extern Boolean real_CFDictionaryContainsKey(CFDictionaryRef d, const void *key) REAL(CFDictionaryContainsKey);
extern void real_CFDictionaryGetKeysAndValues(CFDictionaryRef d, const void **keys, const void **values)
    REAL(CFDictionaryGetKeysAndValues);
extern const CFDictionaryKeyCallBacks real_kCFTypeDictionaryKeyCallBacks REAL(kCFTypeDictionaryKeyCallBacks);
extern const CFDictionaryValueCallBacks real_kCFTypeDictionaryValueCallBacks REAL(kCFTypeDictionaryValueCallBacks);

/* ---- CFSTR ---------------------------------------------------------------------------------
 * Constant strings: one CFString per distinct text, made on first use and kept for the life of
 * the program. The list only grows (nodes are prepended, never removed), so lookups read it
 * without the lock; the lock orders the inserts. */
struct jaq_constant_string {
    struct jaq_constant_string *next;
    CFStringRef string;
    char text[];
};
static struct jaq_constant_string *jaq_constant_strings;
static pthread_mutex_t jaq_constant_strings_lock = PTHREAD_MUTEX_INITIALIZER;

static CFStringRef jaq_find_constant(const char *text) {
    for (struct jaq_constant_string *node = __atomic_load_n(&jaq_constant_strings, __ATOMIC_ACQUIRE); node; node = node->next) {
        if (strcmp(node->text, text) == 0) return node->string;
    }
    return NULL;
}

/* Whether `cf` is one of CFSTR's strings (CFRelease leaves those alone, as on Apple platforms). */
__attribute__((visibility("hidden"))) int jaq_cf_is_constant_string(CFTypeRef cf) {
    for (struct jaq_constant_string *node = __atomic_load_n(&jaq_constant_strings, __ATOMIC_ACQUIRE); node; node = node->next) {
        if ((CFTypeRef)node->string == cf) return 1;
    }
    return 0;
}

CFStringRef jaq___CFStringMakeConstantString(const char *cStr) {
    if (!cStr) return NULL;
    CFStringRef found = jaq_find_constant(cStr);
    if (found) return found;
    pthread_mutex_lock(&jaq_constant_strings_lock);
    found = jaq_find_constant(cStr);
    if (!found) {
        size_t length = strlen(cStr);
        struct jaq_constant_string *node = malloc(sizeof *node + length + 1);
        CFStringRef string = node ? JAQ_CF(CFStringCreateWithCString)(NULL, cStr, kCFStringEncodingUTF8) : NULL;
        if (string) {
            memcpy(node->text, cStr, length + 1);
            node->string = string;
            node->next = jaq_constant_strings;
            __atomic_store_n(&jaq_constant_strings, node, __ATOMIC_RELEASE);
            found = string;
        } else {
            free(node);
        }
    }
    pthread_mutex_unlock(&jaq_constant_strings_lock);
    return found;
}

/* ---- Strings, URLs, types ------------------------------------------------------------------ */
const char *jaq_CFStringGetCStringPtr(CFStringRef s, CFStringEncoding encoding) {
    return s ? JAQ_CF(CFStringGetCStringPtr)(s, encoding) : NULL;
}
CFTypeID jaq_CFStringGetTypeID(void) { return JAQ_CF(CFStringGetTypeID)(); }
CFTypeID jaq_CFGetTypeID(CFTypeRef cf) { return cf ? JAQ_CF(CFGetTypeID)(cf) : 0; }

CFURLRef jaq_CFURLCreateWithFileSystemPath(CFAllocatorRef a, CFStringRef path, CFURLPathStyle style, Boolean dir) {
    if (!path || style != kCFURLPOSIXPathStyle) return NULL;
    return JAQ_CF(CFURLCreateWithFileSystemPath)(a, path, style, dir);
}

/* ---- CFDictionary ---------------------------------------------------------------------------
 * kCFTypeDictionary*CallBacks are data, here callbacks of this library's own that call
 * CoreFoundation's (CFRetain, CFRelease, CFCopyDescription, CFEqual, CFHash), so that they
 * are whole before CoreFoundation is opened. A caller passing them (or a copy of them, as
 * Swift does) gets CoreFoundation's own in the dictionary. */
extern CFStringRef real_CFCopyDescription(CFTypeRef cf) REAL(CFCopyDescription);
extern Boolean real_CFEqual(CFTypeRef cf1, CFTypeRef cf2) REAL(CFEqual);
extern CFHashCode real_CFHash(CFTypeRef cf) REAL(CFHash);
extern CFTypeRef real_CFRetain(CFTypeRef cf) REAL(CFRetain);
extern void real_CFRelease(CFTypeRef cf) REAL(CFRelease);

static const void *jaq_cf_type_retain(CFAllocatorRef allocator, const void *value) {
    (void)allocator;
    return JAQ_CF(CFRetain)(value);
}
static void jaq_cf_type_release(CFAllocatorRef allocator, const void *value) {
    (void)allocator;
    JAQ_CF(CFRelease)(value);
}
static CFStringRef jaq_cf_type_copy_description(const void *value) { return JAQ_CF(CFCopyDescription)(value); }
static Boolean jaq_cf_type_equal(const void *value1, const void *value2) { return JAQ_CF(CFEqual)(value1, value2); }
static CFHashCode jaq_cf_type_hash(const void *value) { return JAQ_CF(CFHash)(value); }

const CFDictionaryKeyCallBacks jaq_kCFTypeDictionaryKeyCallBacks_storage __asm__("jaq_kCFTypeDictionaryKeyCallBacks") = {
    0, jaq_cf_type_retain, jaq_cf_type_release, jaq_cf_type_copy_description, jaq_cf_type_equal, jaq_cf_type_hash
};
const CFDictionaryValueCallBacks jaq_kCFTypeDictionaryValueCallBacks_storage __asm__("jaq_kCFTypeDictionaryValueCallBacks") = {
    0, jaq_cf_type_retain, jaq_cf_type_release, jaq_cf_type_copy_description, jaq_cf_type_equal
};

CFDictionaryRef jaq_CFDictionaryCreate(CFAllocatorRef a, const void **keys, const void **values, CFIndex n,
                                       const CFDictionaryKeyCallBacks *k, const CFDictionaryValueCallBacks *v) {
    if (n < 0 || (n > 0 && (!keys || !values))) return NULL;
    if (k && memcmp(k, &jaq_kCFTypeDictionaryKeyCallBacks_storage, sizeof *k) == 0) k = &JAQ_CF(kCFTypeDictionaryKeyCallBacks);
    if (v && memcmp(v, &jaq_kCFTypeDictionaryValueCallBacks_storage, sizeof *v) == 0) v = &JAQ_CF(kCFTypeDictionaryValueCallBacks);
    return JAQ_CF(CFDictionaryCreate)(a, keys, values, n, k, v);
}
CFTypeID jaq_CFDictionaryGetTypeID(void) { return JAQ_CF(CFDictionaryGetTypeID)(); }
CFIndex jaq_CFDictionaryGetCount(CFDictionaryRef d) { return d ? JAQ_CF(CFDictionaryGetCount)(d) : 0; }
const void *jaq_CFDictionaryGetValue(CFDictionaryRef d, const void *key) {
    return d ? JAQ_CF(CFDictionaryGetValue)(d, key) : NULL;
}
Boolean jaq_CFDictionaryContainsKey(CFDictionaryRef d, const void *key) { return d ? JAQ_CF(CFDictionaryContainsKey)(d, key) : 0; }
void jaq_CFDictionaryGetKeysAndValues(CFDictionaryRef d, const void **keys, const void **values) {
    if (d) JAQ_CF(CFDictionaryGetKeysAndValues)(d, keys, values);
}
