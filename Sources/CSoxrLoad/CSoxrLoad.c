/*
 * libsoxr, opened when first used.
 *
 * Only a queue or converter whose rates differ, and a Varispeed time/pitch unit, resample. Linked,
 * libsoxr (and the OpenMP runtime it brings, libgomp) would be loaded and relocated by every
 * process that starts: each `jaq` command, each program linking libAudioToolbox (issue #29: about
 * 0.16 ms of a start). Here each libsoxr function jaq calls is defined under its own name and
 * forwards to the library, which is opened (dlopen) by the first of soxr_io_spec,
 * soxr_quality_spec and soxr_create: the specs come before soxr_create, on the thread that makes
 * the resampler, never the realtime one. Without the library soxr_create returns NULL with
 * `jaq_soxr_error`'s reason as its error, and the converter or queue says so (a file at the
 * server's rate still plays and records). The other functions take a resampler soxr_create
 * made, so the library is open when they are called: they call through the pointers directly
 * (soxr_process runs once per buffer), with no check.
 *
 * The compiler checks each definition against libsoxr's own declaration (soxr.h). A function
 * jaq starts to call is added here (the link fails until it is).
 */
#include "CSoxrLoad.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <soxr.h>

static struct {
    __typeof__(&soxr_io_spec) io_spec;
    __typeof__(&soxr_quality_spec) quality_spec;
    __typeof__(&soxr_create) create;
    __typeof__(&soxr_delete) delete_;
    __typeof__(&soxr_process) process;
    __typeof__(&soxr_delay) delay;
    __typeof__(&soxr_clear) clear;
    __typeof__(&soxr_set_io_ratio) set_io_ratio;
} jaq_soxr;

static pthread_once_t jaq_soxr_once = PTHREAD_ONCE_INIT;
static int jaq_soxr_status = -1;
static char jaq_soxr_message[512];

#define JAQ_RESOLVE(field, name) \
    if (!(jaq_soxr.field = (__typeof__(&name))dlsym(handle, #name))) { \
        snprintf(jaq_soxr_message, sizeof jaq_soxr_message, "libsoxr (%s) has no %s", library, #name); \
        return -1; \
    }

static int jaq_soxr_resolve(void) {
    /* The soname of every libsoxr release with this API (0.1.x). */
    const char *library = "libsoxr.so.0";
    /* Another build with the same API (or, in the tests, none: a name that does not exist). */
    const char *chosen = getenv("JAQ_SOXR_LIBRARY");
    if (chosen && *chosen) library = chosen;
    void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        snprintf(jaq_soxr_message, sizeof jaq_soxr_message,
                 "libsoxr is not installed (%s; Debian: apt-get install libsoxr0)", dlerror());
        return -1;
    }
    JAQ_RESOLVE(io_spec, soxr_io_spec)
    JAQ_RESOLVE(quality_spec, soxr_quality_spec)
    JAQ_RESOLVE(create, soxr_create)
    JAQ_RESOLVE(delete_, soxr_delete)
    JAQ_RESOLVE(process, soxr_process)
    JAQ_RESOLVE(delay, soxr_delay)
    JAQ_RESOLVE(clear, soxr_clear)
    JAQ_RESOLVE(set_io_ratio, soxr_set_io_ratio)
    return 0;
}

static void jaq_soxr_open(void) {
    jaq_soxr_status = jaq_soxr_resolve();
}

const char *jaq_soxr_error(void) {
    pthread_once(&jaq_soxr_once, jaq_soxr_open);
    return jaq_soxr_status == 0 ? NULL : jaq_soxr_message;
}

/* Without the library: an all-zero spec, which soxr_create (below) never passes on. */
soxr_io_spec_t soxr_io_spec(soxr_datatype_t itype, soxr_datatype_t otype) {
    if (jaq_soxr_error()) {
        soxr_io_spec_t none;
        memset(&none, 0, sizeof none);
        return none;
    }
    return jaq_soxr.io_spec(itype, otype);
}

soxr_quality_spec_t soxr_quality_spec(unsigned long recipe, unsigned long flags) {
    if (jaq_soxr_error()) {
        soxr_quality_spec_t none;
        memset(&none, 0, sizeof none);
        return none;
    }
    return jaq_soxr.quality_spec(recipe, flags);
}

soxr_t soxr_create(double input_rate, double output_rate, unsigned num_channels, soxr_error_t *error,
                   soxr_io_spec_t const *io_spec, soxr_quality_spec_t const *quality_spec,
                   soxr_runtime_spec_t const *runtime_spec) {
    const char *failure = jaq_soxr_error();
    if (failure) {
        if (error) *error = failure;
        return NULL;
    }
    return jaq_soxr.create(input_rate, output_rate, num_channels, error, io_spec, quality_spec, runtime_spec);
}

void soxr_delete(soxr_t resampler) { jaq_soxr.delete_(resampler); }

soxr_error_t soxr_process(soxr_t resampler, soxr_in_t in, size_t ilen, size_t *idone,
                          soxr_out_t out, size_t olen, size_t *odone) {
    return jaq_soxr.process(resampler, in, ilen, idone, out, olen, odone);
}

double soxr_delay(soxr_t resampler) { return jaq_soxr.delay(resampler); }

soxr_error_t soxr_clear(soxr_t resampler) { return jaq_soxr.clear(resampler); }

soxr_error_t soxr_set_io_ratio(soxr_t resampler, double io_ratio, size_t slew_len) {
    return jaq_soxr.set_io_ratio(resampler, io_ratio, slew_len);
}
