#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Makes the pictures of README.md and docs/ from the real programs, under Xvfb:
# docs/images/0[1-7]_*.png from Kiln Studio's scripted session (tests/gui/screenshots.sh, about
# 3 minutes on 2 cores: it trains two short runs) and 08_cli_train.png from `kiln train` in an
# xterm. Needs a build (installer/quickstart.sh run) and the Debian packages xvfb, xterm,
# x11-utils and imagemagick.
#   docs/screenshots.sh [build-dir]      (default: build)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="$(readlink -f "${1:-$here/build}")"
out="$here/docs/images"
for tool in xvfb-run xterm xwininfo import; do
  command -v $tool >/dev/null ||
    { echo "docs/screenshots.sh: $tool not found (apt-get install xvfb xterm x11-utils imagemagick)" >&2; exit 1; }
done
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

"$here/tests/gui/screenshots.sh" "$build" "$work"
cp "$work"/0[1-7]_*.png "$out"/

# The command line: one short epoch of the CNN in a 100x24 terminal, captured as it ends.
cat > "$work/cli.sh" <<SH
cd "$work"
printf '\$ kiln train --model cnn --epochs 1 --out runs/cnn\n'
"$build/bin/kiln" train --model cnn --epochs 1 --out runs/cnn
printf '\$ '
sleep 2
import -window "\$WINDOWID" "$out/08_cli_train.png"
SH
xvfb-run -a -s "-screen 0 1024x768x24" \
  xterm -geometry 100x24 -fa 'DejaVu Sans Mono' -fs 11 -bg '#1e1e1e' -fg '#e0e0e0' -e bash "$work/cli.sh"
ls -l "$out"/*.png
