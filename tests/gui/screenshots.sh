#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Screenshots of Kiln Studio under Xvfb: the CNN template, training in progress with
# curves, the evaluation, the runs overlay, two panels and an imported ONNX model
# -> OUT/*.png (app/studio/screenshot_demo.h names them).
#   tests/gui/screenshots.sh [build-dir [out-dir]]   (default: build, build-dir/screenshots)
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$here/build}"
studio="$build/bin/kiln-studio"
out="${2:-$build/screenshots}"
if [[ ! -x "$studio" ]]; then
  echo "screenshots.sh: $studio not found; build it first (cmake --build $build --target kiln-studio)" >&2
  exit 1
fi
if ! command -v xvfb-run >/dev/null; then
  echo "screenshots.sh: xvfb-run not found (Debian package xvfb)" >&2
  exit 1
fi
mkdir -p "$out"
# A fresh settings file so that a saved dock layout does not change the pictures.
export XDG_CONFIG_HOME="$(mktemp -d)"
trap 'rm -rf "$XDG_CONFIG_HOME"' EXIT
unset QT_QPA_PLATFORM
xvfb-run -a -s "-screen 0 1680x1050x24" "$studio" --screenshot-demo "$out"
ls -l "$out"/*.png
