// floor-record: the least CPU a realtime-safe libjack recorder can spend, as a referee for
// jaq-bench (not a tool: no options, no checks beyond the essential, no error recovery).
//
// The JACK process callback copies each port's period into that channel's ring (one memcpy
// per port and cycle, the least a recorder whose realtime thread never blocks can do); a
// writer thread wakes every 0.5 s and writes each channel's new frames to its own WAV file in
// one write(2) (float as is, or packed to 24-bit). No queue, no meters, no conversions, no
// file library: what is left is libjack's cost, the copies and the kernel's writes.
//
//   floor-record SECONDS float|24 PREFIX PORT...   ->  PREFIX-1.wav ... PREFIX-N.wav
#include <jack/jack.h>
#include <fcntl.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RING_FRAMES (1 << 16) /* per channel: 1.4 s at 48 kHz, as jaq record's capture ring */

static int channels;
static jack_port_t **ports;
static float **rings;
static _Atomic long long written; /* frames the callback has put in every ring */

static int process(jack_nframes_t frames, void *unused) {
    (void)unused;
    long long at = atomic_load_explicit(&written, memory_order_relaxed);
    size_t offset = (size_t)(at & (RING_FRAMES - 1));
    size_t first = offset + frames <= RING_FRAMES ? frames : RING_FRAMES - offset;
    for (int c = 0; c < channels; c++) {
        const float *in = jack_port_get_buffer(ports[c], frames);
        memcpy(rings[c] + offset, in, first * sizeof(float));
        if (first < frames) memcpy(rings[c], in + first, (frames - first) * sizeof(float));
    }
    atomic_store_explicit(&written, at + frames, memory_order_release);
    return 0;
}

static void put16(uint8_t *p, unsigned v) { p[0] = v; p[1] = v >> 8; }
static void put32(uint8_t *p, uint32_t v) { p[0] = v; p[1] = v >> 8; p[2] = v >> 16; p[3] = v >> 24; }

/// A 44-byte WAV header for `bytes` bytes of mono audio.
static void header(uint8_t *h, int bits, int rate, uint32_t bytes) {
    memcpy(h, "RIFF", 4); put32(h + 4, 36 + bytes); memcpy(h + 8, "WAVEfmt ", 8);
    put32(h + 16, 16); put16(h + 20, bits == 32 ? 3 : 1); put16(h + 22, 1);
    put32(h + 24, rate); put32(h + 28, rate * bits / 8); put16(h + 32, bits / 8); put16(h + 34, bits);
    memcpy(h + 36, "data", 4); put32(h + 40, bytes);
}

int main(int argc, char **argv) {
    if (argc < 5) { fprintf(stderr, "usage: floor-record SECONDS float|24 PREFIX PORT...\n"); return 2; }
    double seconds = atof(argv[1]);
    int bits = strcmp(argv[2], "24") == 0 ? 24 : 32;
    const char *prefix = argv[3];
    channels = argc - 4;
    jack_client_t *client = jack_client_open("floor-record", JackNoStartServer, NULL);
    if (!client) { fprintf(stderr, "floor-record: no JACK server\n"); return 1; }
    int rate = (int)jack_get_sample_rate(client);
    ports = calloc(channels, sizeof *ports);
    rings = calloc(channels, sizeof *rings);
    int *files = calloc(channels, sizeof *files);
    uint8_t wav[44];
    header(wav, bits, rate, 0);
    for (int c = 0; c < channels; c++) {
        char name[32], path[4096];
        snprintf(name, sizeof name, "in_%d", c + 1);
        ports[c] = jack_port_register(client, name, JACK_DEFAULT_AUDIO_TYPE, JackPortIsInput, 0);
        rings[c] = malloc(RING_FRAMES * sizeof(float));
        memset(rings[c], 0, RING_FRAMES * sizeof(float)); /* faulted in now: none in the callback */
        snprintf(path, sizeof path, "%s-%d.wav", prefix, c + 1);
        files[c] = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (!ports[c] || files[c] < 0 || write(files[c], wav, 44) != 44) { fprintf(stderr, "floor-record: %s\n", path); return 1; }
    }
    jack_set_process_callback(client, process, NULL);
    if (jack_activate(client)) { fprintf(stderr, "floor-record: cannot activate\n"); return 1; }
    for (int c = 0; c < channels; c++)
        if (jack_connect(client, argv[4 + c], jack_port_name(ports[c]))) { fprintf(stderr, "floor-record: cannot connect %s\n", argv[4 + c]); return 1; }

    long long start = atomic_load_explicit(&written, memory_order_acquire), want = (long long)(seconds * rate), done = 0;
    uint8_t *packed = malloc(RING_FRAMES * 3);
    while (done < want) {
        struct timespec half = {0, 500000000};
        nanosleep(&half, NULL);
        long long ready = atomic_load_explicit(&written, memory_order_acquire) - start;
        if (ready > want) ready = want;
        while (done < ready) {
            size_t offset = (size_t)((start + done) & (RING_FRAMES - 1));
            size_t count = (size_t)(ready - done);
            if (offset + count > RING_FRAMES) count = RING_FRAMES - offset;
            for (int c = 0; c < channels; c++) {
                const float *samples = rings[c] + offset;
                const void *bytes = samples;
                size_t size = count * 4;
                if (bits == 24) {
                    for (size_t i = 0; i < count; i++) {
                        float s = samples[i] < -1.f ? -1.f : samples[i] > 1.f ? 1.f : samples[i];
                        long v = lrintf(s * 8388608.f);
                        if (v > 8388607) v = 8388607;
                        packed[3 * i] = v; packed[3 * i + 1] = v >> 8; packed[3 * i + 2] = v >> 16;
                    }
                    bytes = packed;
                    size = count * 3;
                }
                if (write(files[c], bytes, size) != (ssize_t)size) { perror("floor-record: write"); return 1; }
            }
            done += count;
        }
    }
    jack_client_close(client);
    header(wav, bits, rate, (uint32_t)(done * bits / 8));
    for (int c = 0; c < channels; c++) {
        if (pwrite(files[c], wav, 44, 0) != 44) { perror("floor-record: header"); return 1; }
        close(files[c]);
    }
    return 0;
}
