/*
 * cycletime: an LD_PRELOAD library the benchmark puts under jaq and jack_capture
 * alike. It wraps every process callback a program registers with
 * jack_set_process_callback and measures how long each call takes
 * (CLOCK_MONOTONIC), then writes "client count total_ns max_ns" lines to the
 * file named by $JAQ_CYCLE_LOG when the program exits. Same probe, same
 * overhead, for both programs.
 *
 * Built by the benchmark: cc -shared -fPIC -O2 cycletime.c -o libcycletime.so -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <jack/jack.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MAX_CLIENTS 64

static JackProcessCallback callbacks[MAX_CLIENTS];
static void *arguments[MAX_CLIENTS];
static atomic_int clients;
static atomic_ulong counts[MAX_CLIENTS];
static atomic_ulong totals[MAX_CLIENTS];
static atomic_ulong maxima[MAX_CLIENTS];

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int timed_process(jack_nframes_t frames, void *argument) {
    int index = (int)(intptr_t)argument;
    uint64_t start = now_ns();
    int result = callbacks[index](frames, arguments[index]);
    uint64_t spent = now_ns() - start;
    atomic_fetch_add(&counts[index], 1);
    atomic_fetch_add(&totals[index], spent);
    unsigned long seen = atomic_load(&maxima[index]);
    while (spent > seen && !atomic_compare_exchange_weak(&maxima[index], &seen, spent)) {}
    return result;
}

int jack_set_process_callback(jack_client_t *client, JackProcessCallback callback, void *argument) {
    static int (*real)(jack_client_t *, JackProcessCallback, void *);
    if (!real) real = (int (*)(jack_client_t *, JackProcessCallback, void *))dlsym(RTLD_NEXT, "jack_set_process_callback");
    int index = atomic_fetch_add(&clients, 1);
    if (index >= MAX_CLIENTS) return real(client, callback, argument);
    callbacks[index] = callback;
    arguments[index] = argument;
    return real(client, timed_process, (void *)(intptr_t)index);
}

__attribute__((destructor)) static void report(void) {
    const char *path = getenv("JAQ_CYCLE_LOG");
    if (!path) return;
    FILE *file = fopen(path, "w");
    if (!file) return;
    int n = atomic_load(&clients);
    for (int i = 0; i < n && i < MAX_CLIENTS; i++) {
        fprintf(file, "%d %lu %lu %lu\n", i, atomic_load(&counts[i]), atomic_load(&totals[i]), atomic_load(&maxima[i]));
    }
    fclose(file);
}
