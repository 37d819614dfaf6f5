#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Builds and runs the libFuzzer target of the image loader (fuzz_image.cpp) with Debian's clang
# (-fsanitize=fuzzer,address): engine/data/image's decode, cache and transform sources are
# compiled instrumented into the fuzzer (OpenCV's decoders themselves are Debian's, not
# instrumented), the rest of the engine comes from BUILD_DIR's libkiln.so (built with KILN_OPENCV).
# The seeds are the crafted files of tests/data/image_cases.h (kiln_image_fixtures crafted).
# Not part of CI.
# Usage: tests/fuzz/run_image.sh BUILD_DIR [SECONDS=180] [extra libFuzzer flags ...]
#   Crashes land in BUILD_DIR/fuzz-image/crash-*; reproduce one with: BUILD_DIR/fuzz-image/fuzz_image FILE
set -eu
BUILD=$(cd "$1" && pwd)
SECONDS_TO_RUN=${2:-180}
shift $(( $# >= 2 ? 2 : 1 ))
SRC=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$BUILD/fuzz-image
source "$SRC/tests/fuzz/build_fuzzer.sh"
[ -x "$BUILD/bin/kiln_image_fixtures" ] || { echo "build kiln_image_fixtures first (KILN_OPENCV=ON)"; exit 2; }
img=$SRC/engine/data/image
build_fuzzer "$OUT" fuzz_image "$img/image_decode.cpp $img/image_cache.cpp $img/image_transforms.cpp $SRC/tests/fuzz/fuzz_image.cpp" \
  "$SRC/engine/data $SRC/engine/core" "-I/usr/include/opencv4" -lopencv_imgcodecs -lopencv_imgproc -lopencv_core -lpthread
rm -rf "$OUT/fixtures"
"$BUILD/bin/kiln_image_fixtures" crafted "$OUT/fixtures"
find "$OUT/fixtures/crafted" -type f -size -64k -exec cp {} "$OUT/seeds/" \;
cd "$OUT"
export ASAN_OPTIONS=${ASAN_OPTIONS:-allocator_may_return_null=1}
exec ./fuzz_image corpus seeds -max_total_time="$SECONDS_TO_RUN" -timeout=10 -rss_limit_mb=4096 -max_len=65536 "$@"
