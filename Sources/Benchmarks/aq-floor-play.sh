#!/bin/bash
# Where jaq play's difference to floor-play lies (issue #29), as aq-floor.sh does for jaq record:
# in turns, `jaq play --quiet`, the referee `aq-floor-play` (Sources/Benchmarks/AQFloorPlay: the
# least an Audio Queue player spends, written as the guide's player is) and `floor-play` (the
# least a libjack player spends) play a CHANNELS-channel sine of SECONDS (BITS: 16 or float) on
# a private realtime dummy server; each run's CPU is `perf stat -e task-clock` of the whole
# process. The ratios to floor-play are taken within each turn and their medians printed.
#
# usage: Sources/Benchmarks/aq-floor-play.sh JAQ AQ_FLOOR_PLAY [CHANNELS] [SECONDS] [TURNS] [BITS]
#   e.g. make release && Sources/Benchmarks/aq-floor-play.sh .build/release/jaq .build/release/aq-floor-play 2 10 8 16
set -euo pipefail
dir=$(mktemp -d /tmp/jaq-aqfloor.XXXXXX)
name=aq-floor-play
export JACK_DEFAULT_SERVER=jaq-aqfloor-$$
. "$(dirname "$0")/source-server.sh"
ab_arguments 10 "$@"
channels=$count
bits=${more[0]:-16}
play_setup "$channels" "$seconds" "$bits"

# The CPU ms of one run (play_run's first field).
run() {
    case $1 in
    jaq) play_run "$a" play --quiet "$dir/play.wav" ;;
    aq) play_run "$b" "$dir/play.wav" ;;
    floor) play_run "$dir/floor-play" "$dir/play.wav" ;;
    esac | cut -d' ' -f1
}
results=$dir/results
referee_turns "jaq play" aq-floor-play floor-play
rj=$(ratio_median 1 "$results")
rq=$(ratio_median 2 "$results")
printf '%s channels, %s, %s s, %s turns (medians): jaq play %.1f ms, aq-floor-play %.1f ms, floor-play %.1f ms; ratio to floor-play: jaq %.3f, aq-floor %.3f\n' \
    "$channels" "$bits" "$seconds" "$turns" "$(column_median 1 "$results")" "$(column_median 2 "$results")" "$(column_median 3 "$results")" "$rj" "$rq"
