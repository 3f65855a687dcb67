#!/usr/bin/env bash
# The README's first command (make demo): a private JACK server, a generated
# 4-track session played with `jaq play` while `jaq record` records it, both
# started on the same JACK frame; then proof that the takes equal the sources.
set -euo pipefail
cd "$(dirname "$0")/.."
JAQ=${JAQ:-.build/debug/jaq}
OUT=out/demo
SERVER="jaq-demo-$$"
mkdir -p "$OUT"
rm -f "$OUT"/*.wav

echo "== jaq demo: play a 4-track session and record it, sample-aligned"
jackd -n "$SERVER" --no-realtime -d dummy -r 48000 -p 256 -C 8 -P 8 >"$OUT/jackd.log" 2>&1 &
JACKD=$!
cleanup() { kill "$JACKD" 2>/dev/null || true; wait "$JACKD" 2>/dev/null || true; }
trap cleanup EXIT
for _ in $(seq 100); do JACK_DEFAULT_SERVER=$SERVER jack_lsp >/dev/null 2>&1 && break; sleep 0.05; done
echo "private JACK server $SERVER (dummy backend, 48 kHz, 256-frame periods)"

# A session: kick, bass, chords, lead — 8 s each, 24-bit mono at 48 kHz.
sox -n -r 48000 -b 24 -c 1 "$OUT/kick.wav"   synth 8 sine 60  tremolo 2 100 fade 0 8 0.1 vol 0.8
sox -n -r 48000 -b 24 -c 1 "$OUT/bass.wav"   synth 8 square 55 vol 0.3 lowpass 400
sox -n -r 48000 -b 24 -c 1 "$OUT/chords.wav" synth 8 sine 261.6 sine 329.6 sine 392 remix 1-3 vol 0.3
sox -n -r 48000 -b 24 -c 1 "$OUT/lead.wav"   synth 8 triangle 440-880 vol 0.35
echo "generated $OUT/{kick,bass,chords,lead}.wav (8 s each)"

AT=$(( $($JAQ time --server "$SERVER") + 192000 ))
echo "both start on JACK frame $AT (4 s from now)"
$JAQ play --server "$SERVER" --quiet --at "$AT" "$OUT/kick.wav" "$OUT/bass.wav" "$OUT/chords.wav" "$OUT/lead.wav" &
PLAY=$!
# jaq record records the players' ports: wait until all four are there.
for _ in $(seq 200); do
  [ "$(JACK_DEFAULT_SERVER=$SERVER jack_lsp 2>/dev/null | grep -cE 'jaq-[0-9]-(kick|bass|chords|lead):out_L')" = 4 ] && break
  sleep 0.05
done
$JAQ record --server "$SERVER" --at "$AT" --duration 8 --bits 24 \
    --output "$OUT/take-{take}-{n}.wav" 'jaq-[0-9]-(kick|bass|chords|lead):out_L'
wait "$PLAY"

echo "== comparing each take with its source"
status=0
n=1
for track in kick bass chords lead; do
  take="$OUT/take-001-0$n.wav"
  diff=$(sox -m -v 1 "$OUT/$track.wav" -v -1 "$take" -n stat 2>&1 | awk '/Maximum amplitude/ {print $3}')
  samples=$(soxi -s "$take")
  if [ "$diff" = "0.000000" ] && [ "$samples" = "$(soxi -s "$OUT/$track.wav")" ]; then
    echo "  $take = $track.wav: bit-exact, $samples samples"
  else
    echo "  $take != $track.wav (max difference $diff, $samples samples)"; status=1
  fi
  n=$((n + 1))
done
[ $status -eq 0 ] && echo "== the takes match the sources, sample for sample" || echo "== MISMATCH"
exit $status
