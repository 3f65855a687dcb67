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
// Every break of the ramp is a discontinuity, printed on its own line (the first 1000 of a
// track, and 20 of the player's):
//   discontinuity track T frame F mismatched K repeated R player P (S s): WHAT
// F is the take frame where it begins, K the frames it spoilt, R how many of those repeat the
// frame before, P 1 if it is the player's (contiguous only: a player that ran dry plays its last
// frame again; a break overlapping one with such repeats, on any track, is the player's; see
// classify), and WHAT says what the frames held:
// "N frames of silence" (a recorder's fill for lost frames), "N frames off the ramp", "N frames
// repeating the frame before", then "ramp resumed in place" (the source's place moved on through
// the break as if nothing was lost) or "jump of +N / -N frames" (the source's place moved on or
// back: frames skipped or played twice). The last line is the summary:
//   summary tracks N frames F checked C mismatched M repeated R player P discontinuities D start S starts OK|DIFFER lengths OK|DIFFER
// (player: the frames of the player's breaks, listed or not; start: the source frame of track 1's
// first frame; starts: whether every track started there). Exit 0 when every frame matched, every
// track started on the same source frame and has FRAMES frames; 1 otherwise; 2 on a usage or file
// error.
#include <sndfile.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RATE 48000
#define BLOCK 65536               /* frames read at a time */
#define MAX_LISTED_PLAYER 20      /* lines per track for the player's breaks; the count goes on */
#define MAX_LISTED 1000           /* lines per track for the others */

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

/// What one track held: its length, first source frame, and how many frames broke its ramp.
struct track_result {
    long long frames, start, mismatched, repeated, discontinuities;
};

/// How a break ended.
enum ending { RESUMED, JUMPED, AT_END, BEFORE_RAMP, NO_RAMP };

/// A break of a track's ramp: where it began, what its frames held, how it ended.
struct brk {
    int track;                           /* 0-based */
    long long start;                     /* take frame, -1 while none is being followed */
    long long silence, other, repeated;  /* frames of each kind */
    long long spoilt;                    /* all its mismatched frames */
    long long jump;                      /* with JUMPED: how far the source's place moved */
    enum ending ending;
    int player;                          /* the player's (see classify) */
};

/// Every break of every track, in track order.
static struct brk *breaks;
static size_t break_count, break_capacity;

/// Ends a break: `extra` mismatched frames besides those counted (the frame that jumped).
static void end_break(struct brk *run, long long extra, enum ending ending, long long jump) {
    run->spoilt = run->silence + run->other + run->repeated + extra;
    run->ending = ending;
    run->jump = jump;
    if (break_count == break_capacity) {
        break_capacity = break_capacity ? 2 * break_capacity : 1024;
        breaks = realloc(breaks, break_capacity * sizeof *breaks);
        if (!breaks) { fprintf(stderr, "soak-check: out of memory\n"); exit(2); }
    }
    breaks[break_count++] = *run;
    run->start = -1;
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
    struct brk run = {.track = channel, .start = -1};
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
                    struct brk before = {.track = channel, .start = 0, .other = at};
                    end_break(&before, 0, BEFORE_RAMP, 0);
                }
            }
            if (value == ramp(channel, expected)) {
                if (run.start >= 0) end_break(&run, 0, RESUMED, 0);
                expected = (expected + 1) % loop;
                previous = value;
                continue;
            }
            result->mismatched++;
            if (run.start < 0) {
                result->discontinuities++;
                run = (struct brk){.track = channel, .start = at};
            }
            long long p = value == 0 ? -1 : position_of(value, channel, loop);
            if (!exact && value == previous && value != 0) {
                run.repeated++;
                result->repeated++;
            } else if (p >= 0) {
                /* Back on the ramp, elsewhere: the source moved by this many frames. */
                long long jump = (p - expected) % loop;
                if (jump > loop / 2) jump -= loop;
                if (jump < -loop / 2) jump += loop;
                end_break(&run, 1, JUMPED, jump);
                expected = (p + 1) % loop;
            } else {
                if (value == 0) run.silence++; else run.other++;
                expected = (expected + 1) % loop;
            }
            previous = value;
        }
    }
    if (run.start >= 0) end_break(&run, 0, AT_END, 0);
    if (expected < 0 && at > 0) {
        result->discontinuities++;
        struct brk none = {.track = channel, .start = 0, .other = at};
        end_break(&none, 0, NO_RAMP, 0);
    }
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

static int by_start(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

/// Marks the player's breaks: a player that runs dry does so on every track at once, and plays
/// its last frame again on some tracks while others get silence or parts of other frames
/// (sndfile-jackplay reads its ring a frame at a time and takes what is there). So a break is
/// the player's when a break with repeated frames, on any track, overlaps it (within a period,
/// 256 frames, either side). A recorder repeats periods, not frames: its breaks are jumps.
static void classify(void) {
    size_t n = 0;
    long long (*spans)[2] = malloc((break_count + 1) * sizeof *spans);
    for (size_t i = 0; i < break_count; i++)
        if (breaks[i].repeated) {
            spans[n][0] = breaks[i].start - 256;
            spans[n][1] = breaks[i].start + breaks[i].spoilt + 256;
            n++;
        }
    qsort(spans, n, sizeof *spans, by_start);
    size_t merged = 0;  /* overlapping spans joined, so that the ends grow with the starts */
    for (size_t i = 0; i < n; i++) {
        if (merged && spans[i][0] <= spans[merged - 1][1]) {
            if (spans[i][1] > spans[merged - 1][1]) spans[merged - 1][1] = spans[i][1];
        } else {
            spans[merged][0] = spans[i][0];
            spans[merged][1] = spans[i][1];
            merged++;
        }
    }
    for (size_t i = 0; i < break_count; i++) {
        long long from = breaks[i].start, to = breaks[i].start + breaks[i].spoilt;
        size_t lo = 0, hi = merged;  /* the first span that ends at or after `from` */
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (spans[mid][1] < from) lo = mid + 1; else hi = mid;
        }
        breaks[i].player = lo < merged && spans[lo][0] <= to;
    }
    free(spans);
}

/// Prints a break's line.
static void print_break(const struct brk *b) {
    printf("discontinuity track %d frame %lld mismatched %lld repeated %lld player %d (%.3f s): ", b->track + 1, b->start,
           b->spoilt, b->repeated, b->player, (double)b->start / RATE);
    const char *sep = "";
    if (b->repeated) { printf("%lld frames repeating the frame before", b->repeated); sep = ", "; }
    if (b->silence) { printf("%s%lld frames of silence", sep, b->silence); sep = ", "; }
    if (b->other) { printf("%s%lld frames off the ramp", sep, b->other); sep = ", "; }
    switch (b->ending) {
    case RESUMED: printf("%sramp resumed in place\n", sep); break;
    case JUMPED: printf("%sjump of %+lld frames\n", *sep ? ", then " : "", b->jump); break;
    case AT_END: printf("%sto the end\n", sep); break;
    case BEFORE_RAMP: printf("%sbefore the ramp began\n", sep); break;
    case NO_RAMP: printf("%sno ramp in the track\n", sep); break;
    }
}

static int check(int exact, long long loop, long long frames, int tracks, char **paths) {
    long long checked = 0, mismatched = 0, repeated = 0, player = 0, discontinuities = 0, start = -1;
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
    if (!exact) classify();
    /* The lines, track by track (breaks are in track order): the first MAX_LISTED_PLAYER of the
       player's and MAX_LISTED of the others. */
    int listed[2] = {0, 0}, unlisted[2] = {0, 0};
    for (size_t i = 0; i < break_count; i++) {
        const struct brk *b = &breaks[i];
        if (b->player) player += b->spoilt;
        if (listed[b->player] < (b->player ? MAX_LISTED_PLAYER : MAX_LISTED)) {
            listed[b->player]++;
            print_break(b);
        } else {
            unlisted[b->player]++;
        }
        if (i + 1 == break_count || breaks[i + 1].track != b->track) {
            if (unlisted[0] || unlisted[1])
                printf("track %d: %d more discontinuities not listed (%d of them the player's)\n", b->track + 1,
                       unlisted[0] + unlisted[1], unlisted[1]);
            listed[0] = listed[1] = unlisted[0] = unlisted[1] = 0;
        }
    }
    printf("summary tracks %d frames %lld checked %lld mismatched %lld repeated %lld player %lld discontinuities %lld start %lld "
           "starts %s lengths %s\n", tracks, frames, checked, mismatched, repeated, player, discontinuities, start,
           starts_ok ? "OK" : "DIFFER", lengths_ok ? "OK" : "DIFFER");
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
