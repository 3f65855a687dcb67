#!/usr/bin/env bash
# make bench-late: 64 tracks on a non-realtime dummy server (jackd --no-realtime), jaq record and
# jack_capture in turn, 20 s takes, ROUNDS rounds (default 5). Counts the cycles in which the
# server named each recorder as the client that was not finished (an xrun it caused).
# Run it while the machine is busy (a build) to see the difference; Docs/queues.md, "Realtime".
set -u
J=${J:-$(cd "$(dirname "$0")/../.." && pwd)/.build/release/jaq}
ROUNDS=${ROUNDS:-5}
dir=$(mktemp -d /tmp/jaq-late-XXXXXX)
trap 'rm -rf "$dir"' EXIT
export JACK_DEFAULT_SERVER=jaq-late-$$
jackd -n "$JACK_DEFAULT_SERVER" --no-realtime -d dummy -r 48000 -p 256 -C 64 -P 2 > "$dir/jackd.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$dir"' EXIT
sleep 2
late() { grep "was not finished" "$dir/jackd.log" | grep -c "$1"; }
ports=$(for i in $(seq 1 64); do printf -- '-p system:capture_%d ' "$i"; done)
jaq_total=0; capture_total=0
for r in $(seq 1 "$ROUNDS"); do
  before=$(late jaq-record)
  "$J" record -q -d 20 -b float -o "$dir/j-$r-{n}.wav" 'system:capture_' > /dev/null 2>&1
  j=$(( $(late jaq-record) - before ))
  before=$(late jack_capture)
  # shellcheck disable=SC2086
  timeout 40 jack_capture -d 20 -f wav -c 64 $ports "$dir/c-$r.wav" > /dev/null 2>&1
  c=$(( $(late jack_capture) - before ))
  echo "round $r: late cycles naming jaq record $j, naming jack_capture $c"
  jaq_total=$((jaq_total + j)); capture_total=$((capture_total + c))
  rm -f "$dir"/*.wav
done
echo "total: jaq record $jaq_total, jack_capture $capture_total (load average $(cut -d' ' -f1-3 /proc/loadavg))"
