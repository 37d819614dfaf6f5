#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Image loading, Kiln against torchvision, side by side in one run: N generated JPEGs of about
# 500 x 375 (kiln_image_fixtures jpegs), the pipeline RandomResizedCrop(224) + RandomHorizontalFlip
# + Normalize, THREADS loader threads (Kiln: DataLoader workers; torchvision: DataLoader worker
# processes of one thread each). Prints images/s and images/s per thread of decode only, the
# first epoch (Kiln decodes and fills its cache) and the later ones (Kiln reads the cache;
# torchvision decodes again), and Kiln's ratios. Needs a build with KILN_OPENCV and Debian's
# python3-torchvision. Not a test.
# Usage: tests/bench/data_vs_torchvision.sh BUILD_DIR [N=2000] [THREADS=2] [EPOCHS=2]
set -euo pipefail
BUILD=$(cd "$1" && pwd) N=${2:-2000} THREADS=${3:-2} EPOCHS=${4:-2}
HERE=$(cd "$(dirname "$0")" && pwd)
for b in kiln_image_fixtures bench_image_loader; do
  [ -x "$BUILD/bin/$b" ] || { echo "build $b first (cmake --build $BUILD --target $b; needs KILN_OPENCV)"; exit 2; }
done
/usr/bin/python3 -c "import torchvision" 2>/dev/null || { echo "python3-torchvision is missing"; exit 2; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
"$BUILD/bin/kiln_image_fixtures" jpegs "$work/jpegs" "$N"
echo "$N JPEGs, $(du -sh "$work/jpegs" | cut -f1); $THREADS threads; $(nproc) cores"
export OMP_NUM_THREADS=1
"$BUILD/bin/bench_image_loader" "$work/jpegs" "$THREADS" "$EPOCHS" | tee "$work/kiln.txt"
/usr/bin/python3 "$HERE/torchvision_loader.py" "$work/jpegs" "$THREADS" "$EPOCHS" | tee "$work/tv.txt"
/usr/bin/python3 - "$work/kiln.txt" "$work/tv.txt" <<'PY'
import sys
def rates(path):
    out = {}
    for line in open(path):
        parts = line.split()
        key = "decode" if "decode" in line else ("epoch1" if "epoch 1" in line else "later")
        out.setdefault(key, []).append(float(parts[parts.index("images/s") - 1]))
    return {k: sum(v) / len(v) for k, v in out.items()}
k, t = rates(sys.argv[1]), rates(sys.argv[2])
print("ratio kiln/torchvision: decode only %.2fx, first epoch %.2fx, later epochs (kiln cached) %.2fx"
      % (k["decode"] / t["decode"], k["epoch1"] / t["epoch1"], k.get("later", 0) / t.get("later", t["epoch1"])))
PY
