#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Screenshots of Kiln Studio under Xvfb: the CNN template, training in progress with
# curves, the evaluation, the runs overlay, two panels and an imported ONNX model
# -> OUT/*.png (app/studio/screenshot_demo.h names them). The window fills a virtual screen
# of each SIZE (WxH, or WxH@S for a Qt scale factor S: 1920x1080@1.25 is a 1920x1080 laptop
# at 125%); with more than one size the pictures go to OUT/<SIZE>/. Each size takes about
# 3 minutes on 2 cores (the session trains two short runs).
#   tests/gui/screenshots.sh [build-dir [out-dir [SIZE...]]]   (default: build, build-dir/screenshots, 1600x1000)
#   tests/gui/screenshots.sh build /tmp/shots laptops   (the sizes of issue 15: 1280x720 1366x768
#                                                        1920x1080 1920x1080@1.25 2560x1440)
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$here/build}"
studio="$build/bin/kiln-studio"
out="${2:-$build/screenshots}"
shift $(( $# < 2 ? $# : 2 ))
sizes=("$@")
[[ ${#sizes[@]} -eq 0 ]] && sizes=(1600x1000)
[[ "${sizes[*]}" == laptops ]] && sizes=(1280x720 1366x768 1920x1080 1920x1080@1.25 2560x1440)
if [[ ! -x "$studio" ]]; then
  echo "screenshots.sh: $studio not found; build it first (cmake --build $build --target kiln-studio)" >&2
  exit 1
fi
if ! command -v xvfb-run >/dev/null; then
  echo "screenshots.sh: xvfb-run not found (Debian package xvfb)" >&2
  exit 1
fi
# A fresh settings file so that a saved dock layout does not change the pictures.
export XDG_CONFIG_HOME="$(mktemp -d)"
trap 'rm -rf "$XDG_CONFIG_HOME"' EXIT
unset QT_QPA_PLATFORM
for size in "${sizes[@]}"; do
  if [[ ! "$size" =~ ^([0-9]+)x([0-9]+)(@([0-9.]+))?$ ]]; then
    echo "screenshots.sh: '$size' is not a size such as 1280x720 or 1920x1080@1.25" >&2
    exit 1
  fi
  dir="$out"
  [[ ${#sizes[@]} -gt 1 ]] && dir="$out/$size"
  mkdir -p "$dir"
  QT_SCALE_FACTOR="${BASH_REMATCH[4]:-1}" \
    xvfb-run -a -s "-screen 0 ${BASH_REMATCH[1]}x${BASH_REMATCH[2]}x24" "$studio" --screenshot-demo "$dir"
  ls -l "$dir"/*.png
done
