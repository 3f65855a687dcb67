#!/usr/bin/env bash
# make soak: a long 64-track recording, every frame checked, with jaq record's peak memory and CPU.
#
# Phase 1, freewheel: a private jackd (dummy backend, --no-realtime), `jaq play --loop --at T` of
# a 64-channel 24-bit ramp of 10 s into `jaq record --at T -d SECONDS`, both started in real time
# (T = now + 10 s), freewheel turned on once the recorder is connected and before T; the server runs
# its cycles back to back, as fast as jaq record writes. SECONDS of audio (default 3600: 64 tracks
# of 518 MB, 33 GB). Every frame of every track must be the ramp from its first frame (soak-check
# exact).
#
# Phase 2, real time: a fresh private jackd (realtime scheduling when allowed), the peer player
# `sndfile-jackplay -l 0` looping the same ramp into `jaq record --at T -d SECONDS` (default 600).
# Every track must be the looping ramp from one source frame, the same on every track, without a
# break to the end (soak-check contiguous). Each break is listed with its place and sorted: the
# player running dry (frames repeating the frame before, and breaks on other tracks at the same
# time); a break within SOAK_XRUN_WINDOW seconds of an xrun in the server's log is the server's;
# the rest are "outside xruns" and fail the soak.
#
# A client that does not run from its start (jackd: "was not finished" in every cycle; seen with
# jaq play and jaq record when other clients joined and left while they started) stops the
# attempt: the phase is started again, up to SOAK_START_ATTEMPTS times, and the report says so.
#
# jaq record runs under /usr/bin/time -v: peak RSS, user + system CPU. The report is one markdown
# table on stdout (and in SOAK_REPORT, if set). Exit status: 0 when every frame matched (outside
# server xruns), every track has its length, and jaq record exited 0; 1 otherwise; 2 when the
# soak could not run (no disk space, no server, a missing tool).
#
# Settings (environment):
#   SOAK_FREEWHEEL_SECONDS  audio seconds of phase 1 (default 3600; 0 skips the phase)
#   SOAK_REALTIME_SECONDS   audio seconds of phase 2 (default 600; 0 skips the phase)
#   SOAK_CHANNELS           tracks (default 64)
#   SOAK_DIR                where the takes go (default a new mktemp directory under /var/tmp)
#   SOAK_KEEP=1             keep the takes and logs (otherwise removed; logs kept on failure)
#   SOAK_REPORT             also write the report table to this file
#   SOAK_JACKD_REALTIME     phase 2's server: 1 (--realtime), 0 (--no-realtime), auto (default:
#                           --realtime when this user may use SCHED_FIFO)
#   SOAK_XRUN_WINDOW        seconds around a logged xrun that a break is blamed on it (default 2)
#   SOAK_SERVER_WAIT        seconds to wait for one of JACK's 8 server slots (default 600)
#   SOAK_START_ATTEMPTS     starts of a phase whose clients do not run (default 3)
#   JAQ                     the jaq binary (default .build/release/jaq of this tree)
set -uo pipefail

root=$(cd "$(dirname "$0")/../../.." && pwd)
jaq=${JAQ:-$root/.build/release/jaq}
freewheel_seconds=${SOAK_FREEWHEEL_SECONDS:-3600}
realtime_seconds=${SOAK_REALTIME_SECONDS:-600}
channels=${SOAK_CHANNELS:-64}
xrun_window=${SOAK_XRUN_WINDOW:-2}
rate=48000
loop_seconds=10
loop_frames=$((loop_seconds * rate))
lead_frames=$((10 * rate))  # T = now + 10 s: time for the player and the recorder to start, connect and be checked

say() { echo "soak: $*" >&2; }
die() { say "$*"; failed=1; exit 2; }

for tool in jackd jack_lsp jack_freewheel sndfile-jackplay cc chrt; do
    command -v "$tool" >/dev/null || die "$tool is not installed (make deps-bench)"
done
[ -x /usr/bin/time ] || die "/usr/bin/time is missing (apt-get install time)"
[ -x "$jaq" ] || die "$jaq not found: build it first (make release)"
[[ $freewheel_seconds =~ ^[0-9]+$ && $realtime_seconds =~ ^[0-9]+$ && $channels =~ ^[0-9]+$ ]] \
    || die "SOAK_FREEWHEEL_SECONDS, SOAK_REALTIME_SECONDS and SOAK_CHANNELS must be whole numbers"
[ "$channels" -ge 1 ] && [ "$channels" -le 64 ] || die "SOAK_CHANNELS must be 1...64"

# The scratch directory: ours to remove, or the caller's (then only what we put in it).
if [ -n "${SOAK_DIR:-}" ]; then
    mkdir -p "$SOAK_DIR" || die "cannot create SOAK_DIR $SOAK_DIR"
    work=$(mktemp -d "$SOAK_DIR/jaq-soak.XXXXXX") || die "cannot write in SOAK_DIR $SOAK_DIR"
else
    work=$(mktemp -d /var/tmp/jaq-soak.XXXXXX) || die "cannot create a directory under /var/tmp"
fi

# Disk: the larger take (the freewheel one is removed before the real-time phase unless kept) and 20 %.
take_bytes() { echo $(( $1 * rate * 3 * channels )); }
need=$(take_bytes "$freewheel_seconds")
[ "$(take_bytes "$realtime_seconds")" -gt "$need" ] && need=$(take_bytes "$realtime_seconds")
[ "${SOAK_KEEP:-}" = 1 ] && need=$(( $(take_bytes "$freewheel_seconds") + $(take_bytes "$realtime_seconds") ))
need=$(( need * 6 / 5 + loop_frames * channels * 3 ))
free=$(df -B1 --output=avail "$work" | tail -1 | tr -d ' ')
if [ "$free" -lt "$need" ]; then
    rmdir "$work"
    die "$(awk -v n="$need" -v f="$free" -v d="$(dirname "$work")" 'BEGIN { printf "needs %.1f GB free for the takes, %s has %.1f GB: free some space or set SOAK_DIR to a larger disk (or shorten SOAK_FREEWHEEL_SECONDS)", n / 1e9, d, f / 1e9 }')"
fi

# Every process the soak starts, by pid, so that an error or Ctrl-C stops exactly those.
servers=()
children=()
failed=0
cleanup() {
    local pid
    # (A child's own children too: jaq record runs under /usr/bin/time.)
    for pid in "${children[@]}"; do kill -TERM $(pgrep -P "$pid") "$pid" 2>/dev/null; done
    for pid in "${servers[@]}"; do stop_server "${pid%%:*}" "${pid#*:}"; done
    if [ "${SOAK_KEEP:-}" = 1 ]; then
        say "kept $work"
    elif [ "$failed" != 0 ]; then
        find "$work" -name '*.wav' -delete 2>/dev/null
        say "logs kept in $work (takes removed; SOAK_KEEP=1 keeps them)"
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT
trap 'say interrupted; failed=1; exit 130' INT TERM

# stop_server PID NAME: SIGTERM, and SIGKILL after 30 s. A killed jackd keeps its slot among
# JACK's 8 until a server of the same name starts: then one is started and stopped to free it.
stop_server() {
    local pid=$1 name=$2 i
    kill -TERM "$pid" 2>/dev/null
    for i in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        say "jackd $name had to be killed; freeing its server slot"
        jackd -n "$name" --no-realtime -d dummy -r "$rate" -p 256 -C 0 -P 0 > /dev/null 2>&1 &
        pid=$!
        sleep 2
        kill -TERM "$pid" 2>/dev/null
        for i in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null
    fi
    wait "$pid" 2>/dev/null
    forget servers "$1:$name"
}

forget() {  # forget ARRAY PID: a pid that has been waited for is no longer ours to signal
    local -n list=$1
    local kept=() pid
    for pid in "${list[@]}"; do [ "$pid" != "$2" ] && kept+=("$pid"); done
    list=("${kept[@]}")
}

stop_child() {  # a player (and its children, if JAQ is a wrapper): SIGINT, then SIGKILL after 10 s
    local pid=$1 i family
    family=$(pgrep -P "$pid")
    kill -INT $family "$pid" 2>/dev/null
    for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL $family "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    forget children "$pid"
}

stamp() {  # prefixes every line with the wall-clock time it arrived (for placing xruns)
    local line
    while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done
}

# start_server NAME DIR [--realtime|--no-realtime]: a private jackd with CHANNELS capture and
# playback ports, its log in DIR/jackd.log and its xrun lines, with the wall-clock time they were
# logged, in DIR/xruns.log; sets server_pid. jackd writes its log straight to the file: a pipe
# that fills up (a flood of "Process error" lines after a late cycle) blocks jackd's own cycle
# in write(2), and the server never recovers; `tail -F` reads behind it instead. JACK allows 8
# servers on a machine (and a killed jackd keeps its slot until a server of the same name
# starts): while all are taken, tries again for SOAK_SERVER_WAIT seconds (default 600).
start_server() {
    local name=$1 log=$2/jackd.log mode=$3 i waited=0
    export JACK_DEFAULT_SERVER=$name JACK_NO_START_SERVER=1 JACK_NO_AUDIO_RESERVATION=1
    while :; do
        jackd -n "$name" "$mode" -d dummy -r "$rate" -p 256 -C "$channels" -P "$channels" > "$log" 2>&1 &
        server_pid=$!
        servers+=("$server_pid:$name")
        for i in $(seq 100); do
            kill -0 "$server_pid" 2>/dev/null || break
            jack_lsp 2>/dev/null | grep -q "^system:capture_$channels\$" && break
            sleep 0.1
        done
        if kill -0 "$server_pid" 2>/dev/null; then
            jack_lsp 2>/dev/null | grep -q "^system:capture_$channels\$" || die "jackd $name did not come up in 10 s"
            tail -n +1 -F "$log" 2>/dev/null > >(grep --line-buffered XRun | stamp > "$2/xruns.log") &
            follower=$!
            children+=("$follower")
            return 0
        fi
        wait "$server_pid" 2>/dev/null
        forget servers "$server_pid:$name"
        if grep -q 'Too many servers' "$log" && [ "$waited" -lt "${SOAK_SERVER_WAIT:-600}" ]; then
            [ "$waited" = 0 ] && say "all 8 of JACK's server slots are taken (by other servers, or left by killed ones): waiting for one"
            sleep 5
            waited=$((waited + 5))
            continue
        fi
        cat "$log" >&2
        die "jackd $name exited$(grep -q 'Too many servers' "$log" && echo ": JACK's 8 server slots stayed taken for ${SOAK_SERVER_WAIT:-600} s")"
    done
}

# wait_for PID SECONDS: waits for a child to exit (status in waited_status); 1 on timeout.
wait_for() {
    local pid=$1 limit=$2 start=$SECONDS
    while kill -0 "$pid" 2>/dev/null; do
        [ $((SECONDS - start)) -ge "$limit" ] && return 1
        sleep 1
    done
    wait "$pid"
    waited_status=$?
    forget children "$pid"
    return 0
}

ports_count() { jack_lsp 2>/dev/null | grep -c "^$1" ; }

# wait_for_ports PREFIX LOG WHO: until CHANNELS ports PREFIX... exist: after 2 s, then asking
# jack_lsp once a second. Every jack_lsp is a client joining and leaving the server, and a jaq
# client that starts while others join and leave may never run (see `running`): the soak asks as
# little as it can while one starts.
wait_for_ports() {
    local i
    sleep 2
    for i in $(seq 30); do [ "$(ports_count "$1")" -ge "$channels" ] && return 0; sleep 1; done
    cat "$2" >&2
    die "$3's ports $1... did not appear in 30 s"
}

# wait_for_line FILE PATTERN PID WHO: until a process's log says PATTERN (30 s at most), without
# asking the server.
wait_for_line() {
    local i
    for i in $(seq 300); do
        grep -q -e "$2" "$1" && return 0
        kill -0 "$3" 2>/dev/null || break
        sleep 0.1
    done
    cat "$1" >&2
    die "$4 did not start (no \"$2\" in $1)"
}

# running CLIENT: the client takes part in the server's cycles. A client that stopped running
# (jackd: "client = CLIENT was not finished" and "Process error" in every cycle, ~190 a second)
# would hold up the whole run: the server soon answers no new client.
running() {
    local before after
    before=$(grep -c 'Process error' "$dir/jackd.log")
    sleep 1
    after=$(grep -c 'Process error' "$dir/jackd.log")
    [ $((after - before)) -lt 50 ] && return 0
    say "$1 has stopped running: jackd reports it not finished in every cycle ($((after - before)) failed cycles in 1 s)"
    grep -m 3 'was not finished' "$dir/jackd.log" >&2
    return 1
}

# recorder_connected SOURCE-PORT: the recorder's client is active (JACK refuses connections to
# an inactive client's ports).
recorder_connected() { jack_lsp -c "$1" 2>/dev/null | grep -q '^   jaq-record:'; }

# wait_for_recorder SOURCE-PORT: until jaq record is armed (it says so once its queue has started
# and its ports are connected) and connected to SOURCE-PORT.
wait_for_recorder() {
    wait_for_line "$dir/record.log" "recording $channels tracks\? from JACK frame" "$recorder" "jaq record"
    recorder_connected "$1" || { cat "$dir/record.log" >&2; die "jaq record is not connected to $1"; }
}

jaq_time() { "$jaq" time --server "$JACK_DEFAULT_SERVER"; }

# time_field FILE LABEL: a value from /usr/bin/time -v.
time_field() { sed -n "s/^[[:space:]]*$2: //p" "$1" | head -1; }

elapsed_seconds() {  # h:mm:ss or m:ss.ss -> seconds
    awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; printf "%.1f", s }' <<< "$1"
}

# summary_field NAME: a field of soak-check's summary line in $check_log.
summary_field() { awk -v k="$1" '/^summary / { for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }' "$check_log"; }

# The checker and the source.
checker=$work/soak-check
cc -O2 -Wall "$root/Sources/Benchmarks/Soak/soak-check.c" -o "$checker" -lsndfile \
    || die "cannot build soak-check (cc, libsndfile1-dev: make deps-bench)"
source_wav=$work/src.wav
"$checker" ramp "$source_wav" "$channels" "$loop_frames" || die "cannot write the ramp source"

realtime_mode=--no-realtime
case ${SOAK_JACKD_REALTIME:-auto} in
    1) realtime_mode=--realtime ;;
    auto) chrt -f 1 true 2>/dev/null && realtime_mode=--realtime ;;
esac

say "$(date -u +%FT%TZ) on $(hostname), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); scratch $work"
rows=()
notes=()

# measure NAME PHASE-DIR AUDIO-SECONDS: reads the phase's /usr/bin/time and soak-check logs into a
# row of the report. The mismatched frames are sorted by what they were: the player's breaks
# (soak-check: breaks overlapping one with frames repeating the frame before, on any track:
# sndfile-jackplay plays its last frame again when its 21 ms ring is empty), not the recorder's;
# a break within SOAK_XRUN_WINDOW s
# (wall clock) of an xrun in the server's log is blamed on the server; the rest (and any break
# past the 1000 a track that soak-check lists) are "outside xruns" and fail the soak.
# take_start_wall is the wall-clock time of the take's first frame (end_frame and end_wall: a second
# reading of the clock at the end); empty in freewheel, which has
# no deadlines (its frames are not wall-clock time), so that every mismatch there fails.
measure() {
    local name=$1 dir=$2 audio=$3
    local tfile=$dir/time.txt check_log=$dir/check.log
    local rss user sys wall cpu percent checked mismatched peer during outside late_clients late_driver lost
    rss=$(awk '{ printf "%.1f", $1 / 1024 }' <<< "$(time_field "$tfile" 'Maximum resident set size (kbytes)')")
    user=$(time_field "$tfile" 'User time (seconds)')
    sys=$(time_field "$tfile" 'System time (seconds)')
    wall=$(elapsed_seconds "$(time_field "$tfile" 'Elapsed (wall clock) time (h:mm:ss or m:ss)')")
    cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.1f", u + s }')
    percent=$(awk -v c="$cpu" -v w="$wall" 'BEGIN { printf "%.1f", (w > 0 ? 100 * c / w : 0) }')
    checked=$(summary_field checked)
    mismatched=$(summary_field mismatched)
    peer=$(summary_field player)
    late_clients=$(grep -c 'JackEngine::XRun' "$dir/jackd.log")
    late_driver=$(grep -c 'JackTimedDriver::Process XRun' "$dir/jackd.log")
    lost=$(sed -n -e 's/.*lost \([0-9]*\) frames at .*/\1/p' -e 's/.*fell behind: \([0-9]*\) frames dropped.*/\1/p' "$dir/record.log" \
        | awk '{ s += $1 } END { print s + 0 }')
    # A take frame f is on the wall clock between start + f/rate (no cycle lost before it) and
    # end_wall - (end_frame - at - f)/rate (every cycle lost by the end lost before it): the server
    # skips frames of its clock when its driver wakes up late, so one reading drifts. A break is
    # the server's if an xrun lies in that span, widened by the window on both sides.
    during=$(awk -v start="$take_start_wall" -v rate="$rate" -v window="$xrun_window" \
                 -v at="${at:-0}" -v endframe="${end_frame:-}" -v endwall="${end_wall:-}" '
        FNR == NR { xrun[++n] = $1; next }
        /^discontinuity / && $11 == 0 && start != "" {
            low = start + $5 / rate
            high = endframe != "" ? endwall - (endframe - at - $5) / rate : low
            if (high < low) { t = low; low = high; high = t }
            for (i = 1; i <= n; i++) if (xrun[i] > low - window && xrun[i] < high + window) { during += $7; next }
        }
        END { print during + 0 }' "$dir/xruns.log" "$check_log")
    outside=$(( ${mismatched:-0} - ${peer:-0} - during ))
    rows+=("| $name | $audio | $wall | $rss | $cpu | $percent | ${checked:-0} | ${mismatched:-?} | ${peer:-?} | $during | $outside | $late_clients / $late_driver | $lost | $record_status |")
    local others
    others=$(awk '/^discontinuity / && $11 == 0' "$check_log" | head -6 | sed 's/^discontinuity //' | paste -sd';' | sed 's/;/; /g')
    if [ -n "$others" ]; then
        notes+=("$name: breaks of the ramp: $(summary_field discontinuities) (all tracks); the first ones not the player's: $others")
    elif grep -q '^discontinuity ' "$check_log"; then
        notes+=("$name: breaks of the ramp: $(summary_field discontinuities) (all tracks), all the player's running dry")
    fi
    if grep -q -e '^length ' -e '^start ' "$check_log"; then
        notes+=("$name: $(grep -m 4 -e '^length ' -e '^start ' "$check_log" | paste -sd';' | sed 's/;/; /g')")
        failed=1
    fi
    local said
    said=$(grep -v '^recording ' "$dir/record.log" | grep -e 'lost ' -e 'dropped' -e 'xruns while recording' -e 'error' \
        | head -6 | paste -sd';' | sed 's/;/; /g')
    [ -n "$said" ] && notes+=("$name: jaq record said: $said")
    if [ "$outside" -gt 0 ] || [ "$record_status" != 0 ] || [ "$check_status" -ge 2 ] || [ -z "$mismatched" ]; then
        failed=1
    fi
}

# start_recorder SOURCE-PORTS SECONDS: jaq record --at $at under /usr/bin/time -v in $dir; sets recorder.
start_recorder() {
    (cd "$dir" && exec /usr/bin/time -v -o "$dir/time.txt" "$jaq" record --server "$JACK_DEFAULT_SERVER" --at "$at" \
        -d "$2" -o 'take-{n}.wav' "$1") > "$dir/record.log" 2>&1 &
    recorder=$!
    children+=("$recorder")
}

# finish_recording LIMIT PLAYER: waits up to LIMIT s for jaq record to exit (else stops it), then
# stops the player and the server; sets record_status.
finish_recording() {
    if wait_for "$recorder" "$1"; then
        record_status=$waited_status
    else
        say "jaq record still running after $1 s: stopping it"
        kill -TERM "$(pgrep -P "$recorder")" 2>/dev/null
        wait_for "$recorder" 60 || { kill -KILL "$recorder"; wait "$recorder"; forget children "$recorder"; }
        record_status=124
    fi
    stop_child "$2"
    # In real time, a second reading of the clock: where the take's frames are on the wall clock
    # at its end (see measure).
    if [ -n "${take_start_wall:-}" ]; then
        local before after
        before=$EPOCHREALTIME
        end_frame=$(jaq_time) || end_frame=""
        after=$EPOCHREALTIME
        end_wall=$(awk -v b="$before" -v a="$after" 'BEGIN { printf "%.3f", (a + b) / 2 }')
    fi
    stop_server "$server_pid" "$JACK_DEFAULT_SERVER"
    stop_follower
}

# settle: waits (up to 300 s) until the kernel has written the dirty pages back (the 33 GB phase 1
# wrote and removed), so that phase 2's real time does not start on a machine busy with phase 1's disk.
settle() {
    local i dirty
    sync
    for i in $(seq 300); do
        dirty=$(awk '/^(Dirty|Writeback):/ { s += $2 } END { print s }' /proc/meminfo)
        [ "${dirty:-0}" -lt 65536 ] && break
        sleep 1
    done
    sleep 5
    say "disk settled (dirty + writeback ${dirty:-?} kB); load $(cut -d' ' -f1-3 /proc/loadavg)"
}

stop_follower() {
    sleep 1  # it reads the log's last lines
    kill -TERM "$follower" 2>/dev/null
    wait "$follower" 2>/dev/null
    forget children "$follower"
    sleep 0.2
}

# check_takes MODE SECONDS: soak-check over the take's tracks in $dir (check.log, check_status).
check_takes() {
    local takes
    mapfile -t takes < <(ls "$dir"/take-*.wav 2>/dev/null | sort -V)
    check_status=2
    if [ "${#takes[@]}" -eq "$channels" ]; then
        "$checker" "$1" "$loop_frames" $(( $2 * rate )) "${takes[@]}" > "$dir/check.log"
        check_status=$?
    else
        echo "summary tracks ${#takes[@]} frames $(( $2 * rate )) checked 0 mismatched 0 repeated 0 player 0 discontinuities 0 start -1 starts OK lengths DIFFER" > "$dir/check.log"
        echo "length of the take: ${#takes[@]} files, expected $channels" >> "$dir/check.log"
    fi
    grep '^summary ' "$dir/check.log" >&2
    [ "${SOAK_KEEP:-}" = 1 ] || rm -f "$dir"/take-*.wav
}

# stuck PHASE WHO: a client did not run at its start (see `running`). Stops what the attempt
# started, keeps the server's log (jackd-stuck-N.log) and says so in the report; the caller starts
# again, up to SOAK_START_ATTEMPTS times (default 3). jaq play and jaq record have been seen to do
# this when other clients (jack_lsp) joined and left the server while they started.
stuck() {
    start_failures=$((start_failures + 1))
    notes+=("$1: $2's JACK client did not run from its start (jackd: \"was not finished\" in every cycle); stopped and started again (log: jackd-stuck-$start_failures.log)")
    say "$2's JACK client does not run: starting the phase again"
    if [ -n "${recorder:-}" ] && kill -0 "$recorder" 2>/dev/null; then
        kill -TERM "$(pgrep -P "$recorder")" 2>/dev/null
        wait_for "$recorder" 30 || { kill -KILL "$recorder"; wait "$recorder"; forget children "$recorder"; }
    fi
    recorder=""
    stop_child "$player"
    stop_server "$server_pid" "$JACK_DEFAULT_SERVER"
    stop_follower
    mv "$dir/jackd.log" "$dir/jackd-stuck-$start_failures.log"
}

# start_freewheel NAME: a server, jaq play --loop --at T and jaq record --at T -d SECONDS, both
# running, then freewheel on (before T); 1 if a client got stuck (everything stopped again).
start_freewheel() {
    start_server "$1" "$dir" --no-realtime
    now=$(jaq_time) || die "jaq time failed on $1"
    at=$(( now + lead_frames ))
    (cd "$dir" && exec "$jaq" play --server "$JACK_DEFAULT_SERVER" --loop -q --at "$at" "$source_wav") > "$dir/play.log" 2>&1 &
    player=$!
    children+=("$player")
    wait_for_ports jaq-1-src:out_ "$dir/play.log" "jaq play"
    running jaq-1-src || { stuck freewheel "jaq play"; return 1; }
    start_recorder 'jaq-1-src:out_' "$freewheel_seconds"
    wait_for_recorder "jaq-1-src:out_$channels"
    running jaq-record || { stuck freewheel "jaq record"; return 1; }
    # Before T: the take is recorded in freewheel from its first frame. (No client may join from
    # now on: jackd 1.9.21 runs none that joins while it freewheels, so jaq time is asked first.)
    now=$(jaq_time) || die "jaq time failed before freewheel"
    [ "$now" -lt "$at" ] || say "note: freewheel turned on $(( (now - at) / rate )) s after the take's start (a slow start)"
    jack_freewheel y || die "jack_freewheel y failed"
}

# start_realtime NAME: a server, sndfile-jackplay -l 0 and jaq record --at T -d SECONDS, both
# running; 1 if a client got stuck (everything stopped again).
start_realtime() {
    start_server "$1" "$dir" "$realtime_mode"
    sndfile-jackplay -l 0 "$source_wav" > /dev/null 2> "$dir/jackplay.log" &
    player=$!
    children+=("$player")
    # Its progress line ("->") starts once it is connected and reading.
    wait_for_line "$dir/jackplay.log" '^->\|->  ' "$player" sndfile-jackplay
    [ "$(ports_count jackplay:out_)" -ge "$channels" ] || { cat "$dir/jackplay.log" >&2; die "sndfile-jackplay has not $channels ports"; }
    running jackplay || { stuck "real time" sndfile-jackplay; return 1; }
    local before after
    before=$EPOCHREALTIME
    now=$(jaq_time) || die "jaq time failed on $1"
    after=$EPOCHREALTIME
    at=$(( now + lead_frames ))
    take_start_wall=$(awk -v b="$before" -v a="$after" -v l="$lead_frames" -v r="$rate" 'BEGIN { printf "%.3f", (a + b) / 2 + l / r }')
    start_recorder 'jackplay:out_' "$realtime_seconds"
    wait_for_line "$dir/record.log" "recording $channels tracks\? from JACK frame" "$recorder" "jaq record"
    running jaq-record || { stuck "real time" "jaq record"; return 1; }
}

# in_attempts PHASE-FUNCTION NAME: runs the phase's start until its clients run.
in_attempts() {
    local attempt=1
    until "$1" "$2-$attempt"; do
        attempt=$((attempt + 1))
        [ "$attempt" -le "${SOAK_START_ATTEMPTS:-3}" ] || die "the clients did not run in ${SOAK_START_ATTEMPTS:-3} starts; logs in $dir"
    done
}

start_failures=0

# Phase 1: freewheel.
if [ "$freewheel_seconds" -gt 0 ]; then
    dir=$work/freewheel
    mkdir -p "$dir"
    say "phase 1: freewheel, $channels tracks x $freewheel_seconds s of audio"
    in_attempts start_freewheel "jaq-soak-$$-fw"
    take_start_wall=""
    # The end: jaq record exits after SECONDS of audio. The server is then stopped, not taken out
    # of freewheel (jackd 1.9.21 hangs on `jack_freewheel n` after a client left while freewheeling).
    finish_recording $(( freewheel_seconds * 4 + 600 )) "$player"
    say "phase 1: jaq record exited $record_status; checking every frame"
    check_takes exact "$freewheel_seconds"
    measure "freewheel" "$dir" "$freewheel_seconds"
fi

# Phase 2: real time, with a peer player.
if [ "$realtime_seconds" -gt 0 ]; then
    dir=$work/realtime
    mkdir -p "$dir"
    [ "$freewheel_seconds" -gt 0 ] && settle
    say "phase 2: real time ($realtime_mode), sndfile-jackplay into jaq record, $channels tracks x $realtime_seconds s"
    in_attempts start_realtime "jaq-soak-$$-rt"
    finish_recording $(( realtime_seconds + 300 )) "$player"
    # Its stderr is mostly a progress line redrawn 100 times a second: keep the start.
    tr '\r' '\n' < "$dir/jackplay.log" | sed -n 1,20p > "$dir/jackplay.head"
    mv "$dir/jackplay.head" "$dir/jackplay.log"
    say "phase 2: jaq record exited $record_status; checking every frame"
    check_takes contiguous "$realtime_seconds"
    measure "real time" "$dir" "$realtime_seconds"
fi

report=$(
    echo "Soak: $channels tracks, 24-bit, 48 kHz, 256-frame periods; $(date -u +%FT%TZ) on $(hostname), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); real-time server $realtime_mode."
    echo
    echo "| phase | audio s | wall s | jaq record peak RSS MiB | CPU s (user+sys) | CPU % of one core | frames checked | mismatched | the player's (ran dry) | near server xruns | outside xruns | server xruns (late clients / late driver wake-ups) | frames jaq record reported lost | jaq record exit |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    printf '%s\n' "${rows[@]}"
    [ ${#notes[@]} -gt 0 ] && { echo; printf -- '- %s\n' "${notes[@]}"; }
    true
)
echo "$report"
[ -n "${SOAK_REPORT:-}" ] && echo "$report" > "$SOAK_REPORT"
[ "$failed" = 0 ] && say "passed" || say "FAILED"
exit "$failed"
