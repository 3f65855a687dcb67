/*
 * Opens the real CoreFoundation (libFoundation.so) on the first call that needs it
 * (CoreFoundationLoad.h says why), and fills the data the public headers export under jaq_
 * names: the run loop modes are CoreFoundation's own strings, copied when it is opened.
 * Until then they are NULL, which every forwarder and AudioQueueNew* take as the mode
 * Apple's NULL means (CFRunLoopRunInMode: the default mode; sources: the common modes,
 * which in this subset hold the default mode alone).
 */
#define _GNU_SOURCE /* dladdr */
#include "include/CoreFoundation/CoreFoundation.h"
#include "CoreFoundationLoad.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

CFStringRef jaq_kCFRunLoopDefaultMode_storage __asm__("jaq_kCFRunLoopDefaultMode");
CFStringRef jaq_kCFRunLoopCommonModes_storage __asm__("jaq_kCFRunLoopCommonModes");

static void *jaq_cf_handle;
static pthread_once_t jaq_cf_once = PTHREAD_ONCE_INIT;
/* The main thread, seen by this library's constructor (which runs on it). */
static pthread_t jaq_cf_main_thread;

static void jaq_cf_fail(const char *what, const char *name) {
    const char *why = dlerror();
    fprintf(stderr, "libAudioToolbox: %s %s: %s\n", what, name, why ? why : "not found");
    abort();
}

/* libFoundation.so by the search path of this library (its RUNPATH names the Swift runtime's
 * directory), else from the directory that holds the Swift runtime already loaded. */
static void *jaq_cf_open(int flags) {
    void *handle = dlopen("libFoundation.so", flags);
    if (handle) return handle;
    Dl_info info;
    void *runtime = dlsym(RTLD_DEFAULT, "swift_retain");
    if (!runtime || !dladdr(runtime, &info) || !info.dli_fname) return NULL;
    const char *slash = strrchr(info.dli_fname, '/');
    if (!slash) return NULL;
    char path[4096];
    int length = snprintf(path, sizeof path, "%.*s/libFoundation.so", (int)(slash - info.dli_fname), info.dli_fname);
    return (length > 0 && (size_t)length < sizeof path) ? dlopen(path, flags) : NULL;
}

static void jaq_cf_copy_constants(void *handle) {
    const CFStringRef *defaultMode = dlsym(handle, "kCFRunLoopDefaultMode");
    const CFStringRef *commonModes = dlsym(handle, "kCFRunLoopCommonModes");
    if (!defaultMode || !commonModes) jaq_cf_fail("CoreFoundation lacks", "kCFRunLoopDefaultMode");
    __atomic_store_n(&jaq_kCFRunLoopDefaultMode_storage, *defaultMode, __ATOMIC_RELEASE);
    __atomic_store_n(&jaq_kCFRunLoopCommonModes_storage, *commonModes, __ATOMIC_RELEASE);
}

/* Whether a library whose file is named `name` is loaded: a look at the loaded objects
 * (dl_iterate_phdr), where dlopen with RTLD_NOLOAD would first search every directory of the
 * library path for it (some 40 failed opens at each start of a program without it). */
static int jaq_cf_is_name_of(struct dl_phdr_info *info, size_t size, void *name) {
    (void)size;
    const char *path = info->dlpi_name;
    const char *slash = path ? strrchr(path, '/') : NULL;
    return slash && strcmp(slash + 1, name) == 0;
}

static int jaq_cf_is_loaded(const char *name) {
    return dl_iterate_phdr(jaq_cf_is_name_of, (void *)name);
}

/* RTLD_LAZY: its functions are bound when first called, as when it was linked (the toolchain's
 * libraries are not linked with -z now); RTLD_NOW would bind all of ICU's at once. */
static void jaq_cf_load(void) {
    /* libFoundation.so needs the shared Swift runtime: a program with the runtime linked in
     * (the jaq tool's release build) would get a second one beside its own. */
    if (!jaq_cf_is_loaded("libswiftCore.so")) {
        fprintf(stderr, "libAudioToolbox: cannot open CoreFoundation: this program has the Swift runtime linked in statically\n");
        abort();
    }
    void *handle = jaq_cf_open(RTLD_LAZY | RTLD_GLOBAL);
    if (!handle) jaq_cf_fail("cannot open", "CoreFoundation (libFoundation.so)");
    /* CoreFoundation takes the thread that opens it for the main thread (CFRunLoopGetMain):
     * opened from another, it is told which is. */
    pthread_t *mainThread = dlsym(handle, "_CFMainPThread");
    if (mainThread && !pthread_equal(pthread_self(), jaq_cf_main_thread)) *mainThread = jaq_cf_main_thread;
    jaq_cf_copy_constants(handle);
    __atomic_store_n(&jaq_cf_handle, handle, __ATOMIC_RELEASE);
}

void *jaq_cf_resolve(void **slot, const char *name) {
    void *address = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (address) return address;
    pthread_once(&jaq_cf_once, jaq_cf_load);
    address = dlsym(__atomic_load_n(&jaq_cf_handle, __ATOMIC_ACQUIRE), name);
    if (!address) jaq_cf_fail("CoreFoundation lacks", name);
    __atomic_store_n(slot, address, __ATOMIC_RELEASE);
    return address;
}

/* A process that has CoreFoundation already (a Swift program importing Foundation) sees its
 * run loop modes from the start. */
__attribute__((constructor)) static void jaq_cf_constants_init(void) {
    jaq_cf_main_thread = pthread_self();
    void *loaded = jaq_cf_is_loaded("libFoundation.so") ? jaq_cf_open(RTLD_LAZY | RTLD_NOLOAD) : NULL;
    if (loaded) {
        jaq_cf_copy_constants(loaded);
        dlclose(loaded);
    }
}
