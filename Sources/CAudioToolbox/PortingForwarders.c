/*
 * More of the CoreFoundation subset (include/CoreFoundation/) that ported code calls around
 * Audio Toolbox: CFSTR's constant strings, CFURLCreateWithFileSystemPath,
 * CFStringGetCStringPtr, CFGetTypeID and read access to CFDictionary. Forwarders to the real
 * CoreFoundation in libFoundation.so, as in CoreFoundationForwarders.c, with the checks for
 * NULL that CoreFoundation itself leaves to a crash.
 */
#include "include/CoreFoundation/CoreFoundation.h"
#include <pthread.h>

#define REAL(_sym) __asm__(#_sym)

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
        CFStringRef string = node ? real_CFStringCreateWithCString(NULL, cStr, kCFStringEncodingUTF8) : NULL;
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
    return s ? real_CFStringGetCStringPtr(s, encoding) : NULL;
}
CFTypeID jaq_CFStringGetTypeID(void) { return real_CFStringGetTypeID(); }
CFTypeID jaq_CFGetTypeID(CFTypeRef cf) { return cf ? real_CFGetTypeID(cf) : 0; }

CFURLRef jaq_CFURLCreateWithFileSystemPath(CFAllocatorRef a, CFStringRef path, CFURLPathStyle style, Boolean dir) {
    if (!path || style != kCFURLPOSIXPathStyle) return NULL;
    return real_CFURLCreateWithFileSystemPath(a, path, style, dir);
}

/* ---- CFDictionary ---------------------------------------------------------------------------
 * kCFTypeDictionary*CallBacks are data: copied from CoreFoundation when the library loads. A
 * caller passing them (or a copy of them, as Swift does) gets CoreFoundation's own. */
CFDictionaryKeyCallBacks jaq_kCFTypeDictionaryKeyCallBacks_storage __asm__("jaq_kCFTypeDictionaryKeyCallBacks");
CFDictionaryValueCallBacks jaq_kCFTypeDictionaryValueCallBacks_storage __asm__("jaq_kCFTypeDictionaryValueCallBacks");

__attribute__((constructor)) static void jaq_cf_dictionary_constants_init(void) {
    jaq_kCFTypeDictionaryKeyCallBacks_storage = real_kCFTypeDictionaryKeyCallBacks;
    jaq_kCFTypeDictionaryValueCallBacks_storage = real_kCFTypeDictionaryValueCallBacks;
}

CFDictionaryRef jaq_CFDictionaryCreate(CFAllocatorRef a, const void **keys, const void **values, CFIndex n,
                                       const CFDictionaryKeyCallBacks *k, const CFDictionaryValueCallBacks *v) {
    if (n < 0 || (n > 0 && (!keys || !values))) return NULL;
    if (k && memcmp(k, &real_kCFTypeDictionaryKeyCallBacks, sizeof *k) == 0) k = &real_kCFTypeDictionaryKeyCallBacks;
    if (v && memcmp(v, &real_kCFTypeDictionaryValueCallBacks, sizeof *v) == 0) v = &real_kCFTypeDictionaryValueCallBacks;
    return real_CFDictionaryCreate(a, keys, values, n, k, v);
}
CFTypeID jaq_CFDictionaryGetTypeID(void) { return real_CFDictionaryGetTypeID(); }
CFIndex jaq_CFDictionaryGetCount(CFDictionaryRef d) { return d ? real_CFDictionaryGetCount(d) : 0; }
const void *jaq_CFDictionaryGetValue(CFDictionaryRef d, const void *key) {
    return d ? real_CFDictionaryGetValue(d, key) : NULL;
}
Boolean jaq_CFDictionaryContainsKey(CFDictionaryRef d, const void *key) { return d ? real_CFDictionaryContainsKey(d, key) : 0; }
void jaq_CFDictionaryGetKeysAndValues(CFDictionaryRef d, const void **keys, const void **values) {
    if (d) real_CFDictionaryGetKeysAndValues(d, keys, values);
}
