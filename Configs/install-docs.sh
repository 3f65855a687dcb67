#!/usr/bin/env bash
# Installs jaq's manual pages and shell completions (make install-built; Docs/install.md).
#   Configs/install-docs.sh JAQ MANPAGES DATADIR
# JAQ is the built jaq (run for --generate-completion-script), MANPAGES the directory of the
# pages the argument parser's generate-manual plugin wrote (make release makes them), DATADIR
# where they go (PREFIX/share, DESTDIR included): man/man1/jaq*.1.gz,
# bash-completion/completions/jaq, zsh/vendor-completions/_jaq, fish/vendor_completions.d/jaq.fish.
set -euo pipefail
jaq=$1
pages=$2
datadir=$3
shopt -s nullglob
manuals=("$pages"/*.1)
[ ${#manuals[@]} -gt 0 ] || { echo "$pages: no manual pages (make release generates them)" >&2; exit 1; }
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
