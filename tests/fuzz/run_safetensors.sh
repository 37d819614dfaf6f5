#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Builds and runs the libFuzzer target of the safetensors reader (fuzz_safetensors.cpp) with
# Debian's clang (-fsanitize=fuzzer,address; libclang-rt-14-dev): engine/io's safetensors and
# atomic_file are compiled instrumented into the fuzzer, the rest of the engine comes from
# BUILD_DIR's libkiln.so. The seeds are the PyTorch state_dicts of tests/fixtures/seq. Not part of CI.
# Usage: tests/fuzz/run_safetensors.sh BUILD_DIR [SECONDS=180] [extra libFuzzer flags ...]
#   Crashes land in BUILD_DIR/fuzz-safetensors/crash-*; reproduce one with:
#   BUILD_DIR/fuzz-safetensors/fuzz_safetensors FILE
set -eu
BUILD=$(cd "$1" && pwd)
SECONDS_TO_RUN=${2:-180}
shift $(( $# >= 2 ? 2 : 1 ))
SRC=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$BUILD/fuzz-safetensors
source "$SRC/tests/fuzz/build_fuzzer.sh"
build_fuzzer "$OUT" fuzz_safetensors "$SRC/engine/io/safetensors.cpp $SRC/engine/io/atomic_file.cpp \
  $SRC/tests/fuzz/fuzz_safetensors.cpp" "$SRC/engine/io $SRC/engine/core" "" -lpthread
for f in "$SRC"/tests/fixtures/seq/*.safetensors; do
  [ "$(stat -c %s "$f")" -le 16384 ] && cp "$f" "$OUT/seeds/"
done
# Two hand-made seeds: metadata only, and an I64 and a BOOL tensor.
/usr/bin/python3 - "$OUT/seeds" <<'PY'
import struct, sys
def seed(name, header, data=b""):
    with open(sys.argv[1] + "/" + name, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + data)
seed("metadata_only", b'{"__metadata__":{"a":"b"}}')
seed("i64_bool", b'{"i":{"dtype":"I64","shape":[1],"data_offsets":[0,8]},'
                 b'"b":{"dtype":"BOOL","shape":[2],"data_offsets":[8,10]}}', struct.pack("<q", 7) + b"\x01\x00")
PY
cd "$OUT"
export ASAN_OPTIONS=${ASAN_OPTIONS:-allocator_may_return_null=1}
exec ./fuzz_safetensors corpus seeds -max_total_time="$SECONDS_TO_RUN" -timeout=10 -rss_limit_mb=4096 -max_len=16384 "$@"
