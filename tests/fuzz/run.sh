#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Builds and runs the libFuzzer target of the ONNX importer (fuzz_onnx_import.cpp) with Debian's
# clang (-fsanitize=fuzzer,address): engine/onnx is compiled instrumented into the fuzzer, the
# engine core comes from BUILD_DIR's libkiln.so. The seed corpus is every model.onnx of
# libonnx-testdata. Not part of CI.
# Usage: tests/fuzz/run.sh BUILD_DIR [SECONDS=180] [extra libFuzzer flags ...]
#   KILN_FUZZ_RUN=1 also runs each model that imports (fold_shape_subgraphs: twice on zero inputs).
#   Crashes land in BUILD_DIR/fuzz/crash-*; reproduce one with: BUILD_DIR/fuzz/fuzz_onnx_import FILE
set -eu
BUILD=$(cd "$1" && pwd)
SECONDS_TO_RUN=${2:-180}
shift $(( $# >= 2 ? 2 : 1 ))
SRC=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$BUILD/fuzz
source "$SRC/tests/fuzz/build_fuzzer.sh"
build_fuzzer "$OUT" fuzz_onnx_import "$(echo "$SRC"/engine/onnx/*.cpp) $SRC/tests/fuzz/fuzz_onnx_import.cpp" \
  "$SRC/engine/onnx $SRC/engine/core" "-DONNX_NAMESPACE=onnx -DONNX_ML=1" -lonnx -lonnx_proto -lprotobuf -lpthread
i=0
for m in /usr/share/libonnx-testdata/data/*/*/model.onnx; do
  cp "$m" "$OUT/seeds/$(printf %04d $i).onnx"
  i=$((i + 1))
done
cd "$OUT"
# Kiln's CPU allocator turns a failed allocation into a DeviceError ("cpu: out of memory
# allocating N bytes"): let ASan return NULL for impossible sizes, as glibc does, instead of aborting.
export ASAN_OPTIONS=${ASAN_OPTIONS:-allocator_may_return_null=1}
exec ./fuzz_onnx_import corpus seeds -max_total_time="$SECONDS_TO_RUN" -timeout=10 -rss_limit_mb=4096 -max_len=65536 "$@"
