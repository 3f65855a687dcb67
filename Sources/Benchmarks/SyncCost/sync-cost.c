/*
 * What making a take durable costs the writing thread (issue #29): writes N tracks of 32-bit
 * float at 48 kHz, half a second at a time as jaq's writer and floor-record do, for 10 s, and
 * once a second (1) does nothing more, (2) calls syncfs once, (3) calls fdatasync per track,
 * or (4) starts the writeback with sync_file_range (no durability: for comparison). Prints
 * the process's CPU time (CLOCK_PROCESS_CPUTIME_ID, to the nanosecond) for each, in turns.
 * The writeback the kernel's threads do is not counted: without a sync, the disk write is
 * still paid, by someone else.
 *
 * usage: cc -O2 sync-cost.c -o sync-cost && ./sync-cost [TRACKS] [ROUNDS] [DIR]
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double cpu_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static double take(int mode, int tracks, const char *dir) {
    enum { half = 24000 * 4 };          /* half a second of float samples, bytes */
    static char samples[half];
    memset(samples, 1, sizeof samples);
    int files[256];
    char path[4096];
    for (int i = 0; i < tracks; i++) {
        snprintf(path, sizeof path, "%s/sync-cost-%d.raw", dir, i);
        files[i] = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
        if (files[i] < 0) { perror(path); exit(1); }
    }
    double start = cpu_ms();
    struct timespec pause = {0, 500000000};
    for (int step = 0; step < 20; step++) {
        nanosleep(&pause, NULL);
        for (int i = 0; i < tracks; i++)
            if (write(files[i], samples, half) != half) { perror("write"); exit(1); }
        if (step % 2 == 1) {
            if (mode == 2) syncfs(files[0]);
            else if (mode == 3) for (int i = 0; i < tracks; i++) fdatasync(files[i]);
            else if (mode == 4) for (int i = 0; i < tracks; i++) sync_file_range(files[i], 0, 0, SYNC_FILE_RANGE_WRITE);
        }
    }
    double spent = cpu_ms() - start;
    for (int i = 0; i < tracks; i++) {
        close(files[i]);
        snprintf(path, sizeof path, "%s/sync-cost-%d.raw", dir, i);
        unlink(path);
    }
    return spent;
}

int main(int argc, char **argv) {
    int tracks = argc > 1 ? atoi(argv[1]) : 2;
    int rounds = argc > 2 ? atoi(argv[2]) : 3;
    const char *dir = argc > 3 ? argv[3] : ".";
    if (tracks < 1 || tracks > 256 || rounds < 1) { fprintf(stderr, "usage: sync-cost [TRACKS 1-256] [ROUNDS] [DIR]\n"); return 2; }
    const char *names[] = {"", "no sync", "syncfs once a second", "fdatasync per track once a second", "sync_file_range (not durable)"};
    for (int round = 1; round <= rounds; round++)
        for (int mode = 1; mode <= 4; mode++)
            printf("round %d, %d tracks, %-34s %6.2f ms CPU per 10 s\n", round, tracks, names[mode], take(mode, tracks, dir));
    return 0;
}
