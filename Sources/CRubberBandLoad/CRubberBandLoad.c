/*
 * Rubber Band, opened when first used.
 *
 * Rubber Band is GPL-2+: linked into libAudioToolbox.so, it would bind every program that links
 * the MIT library to the GPL, and make it a dependency of every installation. Here each Rubber
 * Band function jaq calls is defined under its own name and forwards to the library, which is
 * opened (dlopen) when the first stretcher is made (rubberband_new). Without it, rubberband_new
 * returns NULL, `jaq_rubberband_error` says why, and the queue refuses the Spectral and
 * TimeDomain time/pitch algorithms (Varispeed, on libsoxr, still works). The other functions
 * take a state rubberband_new made, so the library is open when they are called: they call
 * through the pointers directly (they run on the queue thread, some per buffer), with no check.
 *
 * The compiler checks each definition against Rubber Band's own declaration (rubberband-c.h).
 * A function jaq starts to call is added here (the link fails until it is).
 */
#include "CRubberBandLoad.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <rubberband/rubberband-c.h>

#define JAQ_STR2(x) #x
#define JAQ_STR(x) JAQ_STR2(x)

static struct {
    __typeof__(&rubberband_new) new_;
    __typeof__(&rubberband_delete) delete_;
    __typeof__(&rubberband_reset) reset;
    __typeof__(&rubberband_set_time_ratio) set_time_ratio;
    __typeof__(&rubberband_set_pitch_scale) set_pitch_scale;
    __typeof__(&rubberband_get_preferred_start_pad) get_preferred_start_pad;
    __typeof__(&rubberband_get_start_delay) get_start_delay;
    __typeof__(&rubberband_set_max_process_size) set_max_process_size;
    __typeof__(&rubberband_process) process;
    __typeof__(&rubberband_available) available;
    __typeof__(&rubberband_retrieve) retrieve;
} jaq_rubberband;

static pthread_once_t jaq_rubberband_once = PTHREAD_ONCE_INIT;
static int jaq_rubberband_status = -1;
static char jaq_rubberband_message[512];

#define JAQ_RESOLVE(field, name) \
    if (!(jaq_rubberband.field = (__typeof__(&name))dlsym(handle, #name))) { \
        snprintf(jaq_rubberband_message, sizeof jaq_rubberband_message, "Rubber Band (%s) has no %s", library, #name); \
        return -1; \
    }

static int jaq_rubberband_resolve(void) {
    /* The major version of the library the headers describe (its soname). */
    const char *library = "librubberband.so." JAQ_STR(RUBBERBAND_API_MAJOR_VERSION);
    /* Another build with the same API (or, in the tests, none: a name that does not exist). */
    const char *chosen = getenv("JAQ_RUBBERBAND_LIBRARY");
    if (chosen && *chosen) library = chosen;
    void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        snprintf(jaq_rubberband_message, sizeof jaq_rubberband_message,
                 "Rubber Band is not installed (%s: %s; Debian: apt-get install librubberband2)", library, dlerror());
        return -1;
    }
    JAQ_RESOLVE(new_, rubberband_new)
    JAQ_RESOLVE(delete_, rubberband_delete)
    JAQ_RESOLVE(reset, rubberband_reset)
    JAQ_RESOLVE(set_time_ratio, rubberband_set_time_ratio)
    JAQ_RESOLVE(set_pitch_scale, rubberband_set_pitch_scale)
    JAQ_RESOLVE(get_preferred_start_pad, rubberband_get_preferred_start_pad)
    JAQ_RESOLVE(get_start_delay, rubberband_get_start_delay)
    JAQ_RESOLVE(set_max_process_size, rubberband_set_max_process_size)
    JAQ_RESOLVE(process, rubberband_process)
    JAQ_RESOLVE(available, rubberband_available)
    JAQ_RESOLVE(retrieve, rubberband_retrieve)
    return 0;
}

static void jaq_rubberband_open(void) {
    jaq_rubberband_status = jaq_rubberband_resolve();
}

const char *jaq_rubberband_error(void) {
    pthread_once(&jaq_rubberband_once, jaq_rubberband_open);
    return jaq_rubberband_status == 0 ? NULL : jaq_rubberband_message;
}

RubberBandState rubberband_new(unsigned int sampleRate, unsigned int channels, RubberBandOptions options,
                               double initialTimeRatio, double initialPitchScale) {
    if (jaq_rubberband_error()) return NULL;
    return jaq_rubberband.new_(sampleRate, channels, options, initialTimeRatio, initialPitchScale);
}

void rubberband_delete(RubberBandState state) { jaq_rubberband.delete_(state); }

void rubberband_reset(RubberBandState state) { jaq_rubberband.reset(state); }

void rubberband_set_time_ratio(RubberBandState state, double ratio) { jaq_rubberband.set_time_ratio(state, ratio); }

void rubberband_set_pitch_scale(RubberBandState state, double scale) { jaq_rubberband.set_pitch_scale(state, scale); }

unsigned int rubberband_get_preferred_start_pad(const RubberBandState state) {
    return jaq_rubberband.get_preferred_start_pad(state);
}

unsigned int rubberband_get_start_delay(const RubberBandState state) { return jaq_rubberband.get_start_delay(state); }

void rubberband_set_max_process_size(RubberBandState state, unsigned int samples) {
    jaq_rubberband.set_max_process_size(state, samples);
}

void rubberband_process(RubberBandState state, const float *const *input, unsigned int samples, int final) {
    jaq_rubberband.process(state, input, samples, final);
}

int rubberband_available(const RubberBandState state) { return jaq_rubberband.available(state); }

unsigned int rubberband_retrieve(const RubberBandState state, float *const *output, unsigned int samples) {
    return jaq_rubberband.retrieve(state, output, samples);
}
