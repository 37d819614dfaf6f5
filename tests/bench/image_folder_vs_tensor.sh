#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Training from an image folder against the same data in memory (issue 14's "not input-bound"):
# writes N photo-like JPEGs of about 500 x 375 in 10 classes (kiln_image_fixtures jpegs; kept in
# CACHE_DIR when given, so later runs reuse them) and runs bench_image_folder_train on them: the
# image-folder CNN template at 64 x 64, from the folder (decoded once into Kiln's cache) and from
# an in-memory TensorDataset, images/s of each and the median ratio (goal >= 0.9). Not a test.
# Usage: tests/bench/image_folder_vs_tensor.sh BUILD_DIR [N=1000] [EPOCHS=2] [WORKERS=1] [AUGMENT=flip] [CACHE_DIR]
set -euo pipefail
BUILD=$(cd "$1" && pwd) N=${2:-1000} EPOCHS=${3:-2} WORKERS=${4:-1} AUGMENT=${5:-flip} CACHE=${6:-}
for b in kiln_image_fixtures bench_image_folder_train; do
  [ -x "$BUILD/bin/$b" ] || { echo "build $b first (cmake --build $BUILD --target $b; needs KILN_OPENCV)"; exit 2; }
done
if [ -n "$CACHE" ]; then dir=$CACHE/jpegs-$N; else work=$(mktemp -d); trap 'rm -rf "$work"' EXIT; dir=$work/jpegs; fi
[ -d "$dir" ] || "$BUILD/bin/kiln_image_fixtures" jpegs "$dir" "$N"
echo "$N JPEGs in $dir, $(du -sh "$dir" | cut -f1); $(nproc) cores, OMP_NUM_THREADS=${OMP_NUM_THREADS:-unset}"
"$BUILD/bin/bench_image_folder_train" "$dir" "$EPOCHS" "$WORKERS" 64 "$AUGMENT" 3
