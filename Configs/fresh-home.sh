#!/usr/bin/env bash
# Runs a command (make test: `swift test`) with a fresh, empty HOME and XDG directories, removed
# afterwards, so that nothing this machine's user has accumulated — Ardour's configuration and
# plugin cache, PipeWire or PulseAudio state, a ~/.jackdrc, caches — can hide what a new user
# meets (Docs/testing.md, "A fresh home").
#
# Carried over, as they are not the tests' business but reaching the package sources is:
# git's url.*.insteadOf and safe.directory settings from the user's global git configuration
# (the system one, /etc/gitconfig, is read anyway), and SwiftPM's user configuration
# (~/.swiftpm/configuration: mirrors, registries). Nothing else of the old HOME is visible.
#
#   Configs/fresh-home.sh swift test --no-parallel
#   JAQ_KEEP=1 Configs/fresh-home.sh …   keeps the directory (its path is printed)
set -euo pipefail

[ $# -gt 0 ] || { echo "usage: $0 command [arguments]" >&2; exit 2; }

old_home=${HOME:-}
fresh=$(mktemp -d "${TMPDIR:-/tmp}/jaq-home-XXXXXX")
if [ -n "${JAQ_KEEP:-}" ]; then
  echo "fresh HOME (kept): $fresh" >&2
else
  trap 'rm -rf "$fresh"' EXIT
fi
mkdir -p "$fresh/.config" "$fresh/.cache" "$fresh/.local/share" "$fresh/.local/state" "$fresh/.run"
chmod 700 "$fresh" "$fresh/.run"
touch "$fresh/.gitconfig"

# git: how to reach the package sources (a mirror's insteadOf), and which checkouts to trust.
if command -v git >/dev/null; then
  git config --global --get-regexp '^(url\..*\.insteadof|safe\.directory)$' 2>/dev/null |
    while read -r key value; do
      git config --file "$fresh/.gitconfig" --add "$key" "$value"
    done || true
fi
# SwiftPM: mirrors and registries the user configured.
if [ -n "$old_home" ] && [ -d "$old_home/.swiftpm/configuration" ]; then
  mkdir -p "$fresh/.swiftpm"
  cp -R "$old_home/.swiftpm/configuration" "$fresh/.swiftpm/configuration"
fi

export HOME=$fresh
export XDG_CONFIG_HOME=$fresh/.config
export XDG_CACHE_HOME=$fresh/.cache
export XDG_DATA_HOME=$fresh/.local/share
export XDG_STATE_HOME=$fresh/.local/state
# A runtime directory of its own: no session's PipeWire, PulseAudio or D-Bus socket is reachable.
export XDG_RUNTIME_DIR=$fresh/.run
# A new user's system defaults (/etc/xdg, /usr/share), whatever this session set.
unset XDG_CONFIG_DIRS XDG_DATA_DIRS DBUS_SESSION_BUS_ADDRESS PIPEWIRE_REMOTE PULSE_SERVER JACK_DEFAULT_SERVER

# Not exec: the trap removes the directory when the command ends.
status=0
"$@" || status=$?
exit $status
