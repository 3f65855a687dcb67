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
# The generated mdoc, as man-db and groff read it: the NAME of `jaq play` is `jaq.play`, as its
# file (whatis and lexgrog parse no space there; the synopsis still says "jaq play", as git's
# pages do), and a blank line, which groff warns about, is a paragraph break.
tidy() {
    awk '/^\.Sh NAME$/ { name = 1; print; next }
         name && /^\.Nm / { full = substr($0, 5); dotted = full; gsub(/"/, "", dotted); gsub(/ /, ".", dotted)
                             print ".Nm " dotted; name = 0; next }
         /^\.Nm$/ && full != "" { print ".Nm " full; next }
         /^$/ { print ".Pp"; next }
         { print }' "$1"
}
for page in "${manuals[@]}"; do
    # -n: no name or time stamp in the archive, so the same page gives the same bytes.
    tidy "$page" | gzip -9n >"$datadir/man/man1/$(basename "$page").gz"
    chmod 644 "$datadir/man/man1/$(basename "$page").gz"
done
# A completion is sourced, not run: no #! line.
"$jaq" --generate-completion-script bash | sed '1{/^#!/d}' >"$datadir/bash-completion/completions/jaq"
"$jaq" --generate-completion-script zsh >"$datadir/zsh/vendor-completions/_jaq"
"$jaq" --generate-completion-script fish >"$datadir/fish/vendor_completions.d/jaq.fish"
chmod 644 "$datadir/bash-completion/completions/jaq" "$datadir/zsh/vendor-completions/_jaq" \
    "$datadir/fish/vendor_completions.d/jaq.fish"
