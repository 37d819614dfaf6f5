#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Image loading, Kiln against torchvision, side by side in one run: N generated JPEGs of about
# 500 x 375 (kiln_image_fixtures jpegs), the pipeline RandomResizedCrop(224) + RandomHorizontalFlip
# + Normalize, THREADS loader threads (Kiln: DataLoader workers; torchvision: DataLoader worker
# processes of one thread each). Prints images/s and images/s per thread of decode only, the
# first epoch (Kiln decodes and fills its cache) and the later ones (Kiln reads the cache;
# torchvision decodes again), and Kiln's ratios (the median over ROUNDS alternating rounds).
# Needs a build with KILN_OPENCV and Debian's python3-torchvision. Not a test.
# Usage: tests/bench/data_vs_torchvision.sh BUILD_DIR [N=2000] [THREADS=2] [EPOCHS=2] [ROUNDS=3]
set -euo pipefail
BUILD=$(cd "$1" && pwd) N=${2:-2000} THREADS=${3:-2} EPOCHS=${4:-2} ROUNDS=${5:-3}
HERE=$(cd "$(dirname "$0")" && pwd)
for b in kiln_image_fixtures bench_image_loader; do
  [ -x "$BUILD/bin/$b" ] || { echo "build $b first (cmake --build $BUILD --target $b; needs KILN_OPENCV)"; exit 2; }
done
/usr/bin/python3 -c "import torchvision" 2>/dev/null || { echo "python3-torchvision is missing"; exit 2; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
"$BUILD/bin/kiln_image_fixtures" jpegs "$work/jpegs" "$N"
echo "$N JPEGs, $(du -sh "$work/jpegs" | cut -f1); $THREADS threads; $(nproc) cores"
export OMP_NUM_THREADS=1
# On a loaded machine the two sides are measured in alternating rounds (Kiln first in odd rounds,
# torchvision first in even ones); each round gives its ratios, and the median ratio is reported.
for r in $(seq 1 "$ROUNDS"); do
  kiln() { "$BUILD/bin/bench_image_loader" "$work/jpegs" "$THREADS" "$EPOCHS" | tee "$work/kiln.$r.txt"; }
  tv() { /usr/bin/python3 "$HERE/torchvision_loader.py" "$work/jpegs" "$THREADS" "$EPOCHS" | tee "$work/tv.$r.txt"; }
  echo "round $r"
  if [ $((r % 2)) = 1 ]; then kiln; tv; else tv; kiln; fi
done
/usr/bin/python3 - "$work" "$ROUNDS" <<'PY'
import statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
def rates(path):
    out = {}
    for line in open(path):
        parts = line.split()
        key = "decode" if "decode only" in line else ("epoch1" if "epoch 1" in line else "later")
        out.setdefault(key, []).append(float(parts[parts.index("images/s") - 1]))
    return {k: sum(v) / len(v) for k, v in out.items()}
names = {"decode": "decode only", "epoch1": "first epoch", "later": "later epochs (kiln cached)"}
per = {k: [] for k in names}
for r in range(1, rounds + 1):
    k, t = rates("%s/kiln.%d.txt" % (work, r)), rates("%s/tv.%d.txt" % (work, r))
    t.setdefault("later", t["epoch1"])
    for key in names:
        if key in k:
            per[key].append((k[key], t[key], k[key] / t[key]))
for key, name in names.items():
    if per[key]:
        print("%-28s kiln %7.1f images/s, torchvision %7.1f images/s (medians); ratio kiln/torchvision median %.2fx (rounds: %s)"
              % (name, statistics.median(x[0] for x in per[key]), statistics.median(x[1] for x in per[key]),
                 statistics.median(x[2] for x in per[key]), ", ".join("%.2f" % x[2] for x in per[key])))
PY
