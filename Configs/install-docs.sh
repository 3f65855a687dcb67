#!/usr/bin/env bash
# Installs jaq's manual pages and shell completions (make install-built; Docs/install.md).
#   Configs/install-docs.sh JAQ GENERATE-MANUAL DATE DATADIR
# JAQ is the built jaq: its manual pages are generated from it by swift-argument-parser's
# generate-manual tool (GENERATE-MANUAL, built by make release; the pages dated DATE,
# yyyy-mm-dd), its completions by its own --generate-completion-script. They go under DATADIR
# (PREFIX/share, DESTDIR included): man/man1/jaq.1.gz and jaq.COMMAND.1.gz,
# bash-completion/completions/jaq, zsh/vendor-completions/_jaq, fish/vendor_completions.d/jaq.fish.
set -euo pipefail
jaq=$1
generate=$2
date=$3
datadir=$4
[ -x "$generate" ] || { echo "$generate is missing: make release builds it (make manual-tool)" >&2; exit 1; }
pages=$(mktemp -d)
trap 'rm -rf "$pages"' EXIT
"$generate" "$jaq" --multi-page --date "$date" --authors "jaq developers" --output-directory "$pages" >/dev/null
shopt -s nullglob
manuals=("$pages"/*.1)
[ ${#manuals[@]} -gt 1 ] || { echo "$generate made no manual pages for $jaq" >&2; exit 1; }
install -d "$datadir/man/man1" "$datadir/bash-completion/completions" "$datadir/zsh/vendor-completions" \
    "$datadir/fish/vendor_completions.d"
for page in "${manuals[@]}"; do
    # -n: no name or time stamp in the archive, so the same page gives the same bytes.
    gzip -9n <"$page" >"$datadir/man/man1/$(basename "$page").gz"
    chmod 644 "$datadir/man/man1/$(basename "$page").gz"
done
"$jaq" --generate-completion-script bash >"$datadir/bash-completion/completions/jaq"
"$jaq" --generate-completion-script zsh >"$datadir/zsh/vendor-completions/_jaq"
"$jaq" --generate-completion-script fish >"$datadir/fish/vendor_completions.d/jaq.fish"
chmod 644 "$datadir/bash-completion/completions/jaq" "$datadir/zsh/vendor-completions/_jaq" \
    "$datadir/fish/vendor_completions.d/jaq.fish"
