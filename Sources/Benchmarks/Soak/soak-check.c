// soak-check: writes the soak's ramp source and checks every frame of the takes `make soak`
// records (Sources/Benchmarks/Soak/soak.sh builds it with cc ... -lsndfile).
//
// The ramp is the tests' convention (Tests/jaqTests/FreewheelTests.swift, writeRamp in
// CLITestSupport.swift): channel c (0-based), source frame n of a loop of L frames holds the
// 24-bit integer (1 + n % L + c * 1000000) & 0x7FFFFF, so every sample names its channel and
// its place in the loop. Track c of a take is the recording of channel c.
//
//   soak-check ramp OUT.wav CHANNELS FRAMES
//       a 48 kHz 24-bit WAV of FRAMES frames (the loop: L = FRAMES)
//   soak-check exact LOOP FRAMES TRACK1.wav ... TRACKN.wav
//       every track is the ramp from source frame 0, bit-exact, and holds FRAMES frames
//       (a bounce that starts on the player's first frame: phase 1)
//   soak-check contiguous LOOP FRAMES TRACK1.wav ... TRACKN.wav
//       every track is the looping ramp from some source frame (found from its first
//       sample), the same for every track, continuing without a break to the end, and
//       holds FRAMES frames (a take of a player that was already playing: phase 2)
//
// Every break of the ramp is a discontinuity, printed on its own line (the first 50 of a track):
//   discontinuity track T frame F mismatched K repeated R (S s): WHAT
// F is the take frame where it begins, K the frames it spoilt, R how many of those repeat the
// frame before (contiguous only: a player that ran dry plays its last frame again), and WHAT
// says what the frames held: "N frames of silence" (a recorder's fill for lost frames), "N
// frames off the ramp", "N frames repeating the frame before", then "ramp resumed in place"
// (the source's place moved on through the break as if nothing was lost) or "jump of +N / -N
// frames" (the source's place moved on or back: frames skipped or played twice). The last
// line is the summary:
//   summary tracks N frames F checked C mismatched M repeated R discontinuities D start S starts OK|DIFFER lengths OK|DIFFER
// (start: the source frame of track 1's first frame; starts: whether every track started
// there). Exit 0 when every frame matched, every track started on the same source frame and
// has FRAMES frames; 1 otherwise; 2 on a usage or file error.
#include <sndfile.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RATE 48000
#define BLOCK 65536               /* frames read at a time */
#define MAX_REPORTED 50           /* discontinuity lines per track; the count goes on */

static int32_t ramp(int channel, long long position) {
    return (int32_t)((1 + position + (long long)channel * 1000000) & 0x7FFFFF);
}

/// The loop position a 24-bit sample names on `channel`, or -1 if it names none.
static long long position_of(int32_t value, int channel, long long loop) {
    long long p = ((long long)value - 1 - (long long)channel * 1000000) % 0x800000;
    if (p < 0) p += 0x800000;
    return p < loop ? p : -1;
}

static int write_ramp(const char *path, int channels, long long frames) {
    SF_INFO info = {.samplerate = RATE, .channels = channels, .format = SF_FORMAT_WAV | SF_FORMAT_PCM_24};
    if (frames * channels * 3 > 0xFFFFFFF0LL) info.format = SF_FORMAT_RF64 | SF_FORMAT_PCM_24;
    SNDFILE *file = sf_open(path, SFM_WRITE, &info);
    if (!file) { fprintf(stderr, "soak-check: %s: %s\n", path, sf_strerror(NULL)); return 2; }
    int *block = malloc((size_t)BLOCK * channels * sizeof *block);
    for (long long at = 0; at < frames; at += BLOCK) {
        long long count = frames - at < BLOCK ? frames - at : BLOCK;
        for (long long n = 0; n < count; n++)
            for (int c = 0; c < channels; c++) block[n * channels + c] = ramp(c, at + n) * 256; /* left-justified */
        if (sf_writef_int(file, block, count) != count) {
            fprintf(stderr, "soak-check: %s: short write: %s\n", path, sf_strerror(file));
            return 2;
        }
    }
    free(block);
    if (sf_close(file)) { fprintf(stderr, "soak-check: %s: cannot close\n", path); return 2; }
    return 0;
}

/// What one track held: its length, first source frame, and the breaks of its ramp.
struct track_result {
    long long frames, start, mismatched, repeated, discontinuities;
};

/// A break of the ramp being followed: where it began and what its frames held.
struct run {
    long long start;                     /* take frame, -1: none */
    long long silence, other, repeated;  /* frames of each kind so far */
};

/// Prints one discontinuity line (the first MAX_REPORTED of a track); `jump` is meaningful
/// when `how` is "jump".
static void report(int channel, const struct run *run, long long extra, const char *how, long long jump, int *reported) {
    if ((*reported)++ >= MAX_REPORTED) return;
    long long spoilt = run->silence + run->other + run->repeated + extra;
    printf("discontinuity track %d frame %lld mismatched %lld repeated %lld (%.3f s): ", channel + 1, run->start, spoilt,
           run->repeated, (double)run->start / RATE);
    const char *sep = "";
    if (run->repeated) { printf("%lld frames repeating the frame before", run->repeated); sep = ", "; }
    if (run->silence) { printf("%s%lld frames of silence", sep, run->silence); sep = ", "; }
    if (run->other) { printf("%s%lld frames off the ramp", sep, run->other); sep = ", "; }
    if (!strcmp(how, "jump")) printf("%sjump of %+lld frames\n", *sep ? ", then " : "", jump);
    else printf("%s%s\n", sep, how);
}

/// Reads one track and follows its ramp; `exact` fixes the first source frame at 0. Outside
/// `exact`, a frame equal to the one before (and not silence) is a repeat (a player that ran
/// dry and played its last frame again: sndfile-jackplay does) and does not move the source on.
static int check_track(const char *path, int channel, long long loop, int exact, struct track_result *result) {
    SF_INFO info = {0};
    SNDFILE *file = sf_open(path, SFM_READ, &info);
    if (!file) { fprintf(stderr, "soak-check: %s: %s\n", path, sf_strerror(NULL)); return 2; }
    if (info.channels != 1) {
        fprintf(stderr, "soak-check: %s: %d channels, expected one track per file\n", path, info.channels);
        sf_close(file);
        return 2;
    }
    int *block = malloc((size_t)BLOCK * sizeof *block);
    long long at = 0, expected = exact ? 0 : -1; /* the source frame the next sample must name */
    int32_t previous = -1;
    struct run run = {.start = -1};
    int reported = 0;
    memset(result, 0, sizeof *result);
    result->start = exact ? 0 : -1;
    sf_count_t count;
    while ((count = sf_readf_int(file, block, BLOCK)) > 0) {
        for (sf_count_t i = 0; i < count; i++, at++) {
            int32_t value = block[i] >> 8; /* 24-bit: libsndfile left-justifies */
            if (expected < 0) {
                /* The take's first frame: the source frame it names is where the track starts. */
                long long p = position_of(value, channel, loop);
                if (p < 0) { result->mismatched++; continue; }
                result->start = expected = p;
                if (at > 0) {
                    result->discontinuities++;
                    struct run before = {.start = 0, .other = at};
                    report(channel, &before, 0, "before the ramp began", 0, &reported);
                }
            }
            if (value == ramp(channel, expected)) {
                if (run.start >= 0) report(channel, &run, 0, "ramp resumed in place", 0, &reported);
                run.start = -1;
                expected = (expected + 1) % loop;
                previous = value;
                continue;
            }
            result->mismatched++;
            if (run.start < 0) { result->discontinuities++; run = (struct run){.start = at}; }
            long long p = value == 0 ? -1 : position_of(value, channel, loop);
            if (!exact && value == previous && value != 0) {
                run.repeated++;
                result->repeated++;
            } else if (p >= 0) {
                /* Back on the ramp, elsewhere: the source moved by this many frames. */
                long long jump = (p - expected) % loop;
                if (jump > loop / 2) jump -= loop;
                if (jump < -loop / 2) jump += loop;
                report(channel, &run, 1, "jump", jump, &reported);
                run.start = -1;
                expected = (p + 1) % loop;
            } else {
                if (value == 0) run.silence++; else run.other++;
                expected = (expected + 1) % loop;
            }
            previous = value;
        }
    }
    if (run.start >= 0) report(channel, &run, 0, "to the end", 0, &reported);
    if (expected < 0 && at > 0) {
        result->discontinuities++;
        struct run none = {.start = 0, .other = at};
        report(channel, &none, 0, "no ramp in the track", 0, &reported);
    }
    if (reported > MAX_REPORTED)
        printf("track %d: %d more discontinuities not listed\n", channel + 1, reported - MAX_REPORTED);
    if (count < 0 || sf_error(file)) {
        fprintf(stderr, "soak-check: %s: read error at frame %lld: %s\n", path, at, sf_strerror(file));
        free(block);
        sf_close(file);
        return 2;
    }
    free(block);
    sf_close(file);
    result->frames = at;
    return 0;
}

static int check(int exact, long long loop, long long frames, int tracks, char **paths) {
    long long checked = 0, mismatched = 0, repeated = 0, discontinuities = 0, start = -1;
    int lengths_ok = 1, starts_ok = 1;
    for (int t = 0; t < tracks; t++) {
        struct track_result result;
        int status = check_track(paths[t], t, loop, exact, &result);
        if (status) return status;
        checked += result.frames;
        mismatched += result.mismatched;
        repeated += result.repeated;
        discontinuities += result.discontinuities;
        if (result.frames != frames) {
            printf("length track %d: %lld frames, expected %lld\n", t + 1, result.frames, frames);
            lengths_ok = 0;
        }
        if (t == 0) start = result.start;
        else if (result.start != start) {
            /* Each track may be contiguous and still out of step with the others. */
            printf("start track %d: source frame %lld, track 1 started at %lld\n", t + 1, result.start, start);
            starts_ok = 0;
        }
    }
    printf("summary tracks %d frames %lld checked %lld mismatched %lld repeated %lld discontinuities %lld start %lld starts %s lengths %s\n",
           tracks, frames, checked, mismatched, repeated, discontinuities, start, starts_ok ? "OK" : "DIFFER",
           lengths_ok ? "OK" : "DIFFER");
    return mismatched || !lengths_ok || !starts_ok ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc == 5 && !strcmp(argv[1], "ramp")) return write_ramp(argv[2], atoi(argv[3]), atoll(argv[4]));
    if (argc >= 5 && (!strcmp(argv[1], "exact") || !strcmp(argv[1], "contiguous"))) {
        long long loop = atoll(argv[2]), frames = atoll(argv[3]);
        if (loop <= 0 || loop > 0x800000 || frames < 0) { fprintf(stderr, "soak-check: bad LOOP or FRAMES\n"); return 2; }
        return check(!strcmp(argv[1], "exact"), loop, frames, argc - 4, argv + 4);
    }
    fprintf(stderr, "usage: soak-check ramp OUT.wav CHANNELS FRAMES\n"
                    "       soak-check exact|contiguous LOOP FRAMES TRACK1.wav ...\n");
    return 2;
}
