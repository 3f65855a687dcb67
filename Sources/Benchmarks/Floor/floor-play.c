// floor-play: the least CPU a realtime-safe libjack file player can spend, as a referee for
// jaq-bench (not a tool: no options, no resampling, no error recovery).
//
// A reader thread reads the file's 16-bit frames with libsndfile (sf_readf_short: no
// conversion) in blocks of 0.1 s and converts them to float into per-channel rings, 256
// frames of one channel at a time (a transpose that stays in the cache); the
// JACK process callback copies each channel's period to its port (one memcpy per port and
// cycle). Port N is connected to the Nth physical playback port, if there is one.
//
//   floor-play FILE
#include <jack/jack.h>
#include <sndfile.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RING_FRAMES (1 << 16) /* per channel: 1.4 s at 48 kHz */

static int channels;
static jack_port_t **ports;
static float **rings;
static _Atomic long long decoded; /* frames the reader has put in every ring */
static _Atomic long long played;  /* frames the callback has taken */
static _Atomic int finished;      /* the reader is at the end of the file */

static int process(jack_nframes_t frames, void *unused) {
    (void)unused;
    long long at = atomic_load_explicit(&played, memory_order_relaxed);
    long long ready = atomic_load_explicit(&decoded, memory_order_acquire) - at;
    size_t count = ready < (long long)frames ? (size_t)(ready > 0 ? ready : 0) : frames;
    size_t offset = (size_t)(at & (RING_FRAMES - 1));
    size_t first = offset + count <= RING_FRAMES ? count : RING_FRAMES - offset;
    for (int c = 0; c < channels; c++) {
        float *out = jack_port_get_buffer(ports[c], frames);
        memcpy(out, rings[c] + offset, first * sizeof(float));
        if (first < count) memcpy(out + first, rings[c], (count - first) * sizeof(float));
        if (count < frames) memset(out + count, 0, (frames - count) * sizeof(float));
    }
    atomic_store_explicit(&played, at + (long long)count, memory_order_release);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: floor-play FILE\n"); return 2; }
    SF_INFO info = {0};
    SNDFILE *file = sf_open(argv[1], SFM_READ, &info);
    if (!file) { fprintf(stderr, "floor-play: %s: %s\n", argv[1], sf_strerror(NULL)); return 1; }
    channels = info.channels;
    jack_client_t *client = jack_client_open("floor-play", JackNoStartServer, NULL);
    if (!client) { fprintf(stderr, "floor-play: no JACK server\n"); return 1; }
    ports = calloc(channels, sizeof *ports);
    rings = calloc(channels, sizeof *rings);
    for (int c = 0; c < channels; c++) {
        char name[32];
        snprintf(name, sizeof name, "out_%d", c + 1);
        ports[c] = jack_port_register(client, name, JACK_DEFAULT_AUDIO_TYPE, JackPortIsOutput, 0);
        rings[c] = malloc(RING_FRAMES * sizeof(float));
        memset(rings[c], 0, RING_FRAMES * sizeof(float)); /* faulted in now: none in the callback */
        if (!ports[c]) { fprintf(stderr, "floor-play: cannot register %s\n", name); return 1; }
    }
    int block = info.samplerate / 10;
    short *interleaved = malloc((size_t)block * channels * sizeof(short));
    // Fill the rings before the callback runs, then keep them filled.
    jack_set_process_callback(client, process, NULL);
    for (int primed = 0; primed < 2; primed++) {
        if (primed) {
            if (jack_activate(client)) { fprintf(stderr, "floor-play: cannot activate\n"); return 1; }
            const char **physical = jack_get_ports(client, NULL, JACK_DEFAULT_AUDIO_TYPE, JackPortIsPhysical | JackPortIsInput);
            for (int c = 0; physical && physical[c] && c < channels; c++) jack_connect(client, jack_port_name(ports[c]), physical[c]);
            jack_free(physical);
        }
        while (!atomic_load(&finished)) {
            long long at = atomic_load_explicit(&decoded, memory_order_relaxed);
            if (at - atomic_load_explicit(&played, memory_order_acquire) > RING_FRAMES - block) {
                if (!primed) break;
                struct timespec tenth = {0, 100000000};
                nanosleep(&tenth, NULL);
                continue;
            }
            sf_count_t got = sf_readf_short(file, interleaved, block);
            for (sf_count_t from = 0; from < got; from += 256) {
                sf_count_t to = from + 256 < got ? from + 256 : got;
                for (int c = 0; c < channels; c++) {
                    const short *in = interleaved + from * channels + c;
                    for (sf_count_t i = from; i < to; i++, in += channels)
                        rings[c][(size_t)((at + i) & (RING_FRAMES - 1))] = *in * (1.f / 32768.f);
                }
            }
            atomic_store_explicit(&decoded, at + got, memory_order_release);
            if (got < block) atomic_store(&finished, 1);
        }
    }
    while (atomic_load_explicit(&played, memory_order_acquire) < atomic_load(&decoded)) {
        struct timespec tenth = {0, 100000000};
        nanosleep(&tenth, NULL);
    }
    jack_client_close(client);
    sf_close(file);
    return 0;
}
