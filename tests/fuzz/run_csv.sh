#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Builds and runs the libFuzzer target of the CSV reader and tabular preparation (fuzz_csv.cpp)
# with Debian's clang (-fsanitize=fuzzer,address; libFuzzer comes with clang's runtime,
# libclang-rt-14-dev on Debian 12): engine/data's csv_reader and tabular*.cpp are compiled
# instrumented into the fuzzer, the rest of the engine comes from BUILD_DIR's libkiln.so. The
# seed corpus is a few hand-written tables plus scikit-learn's small ones (python3-sklearn).
# Not part of CI.
# Usage: tests/fuzz/run_csv.sh BUILD_DIR [SECONDS=180] [extra libFuzzer flags ...]
#   Crashes land in BUILD_DIR/fuzz-csv/crash-*; reproduce one with: BUILD_DIR/fuzz-csv/fuzz_csv FILE
set -eu
BUILD=$(cd "$1" && pwd)
SECONDS_TO_RUN=${2:-180}
shift $(( $# >= 2 ? 2 : 1 ))
SRC=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$BUILD/fuzz-csv
source "$SRC/tests/fuzz/build_fuzzer.sh"
build_fuzzer "$OUT" fuzz_csv "$SRC/engine/data/csv_reader.cpp $SRC/engine/data/tabular.cpp $SRC/engine/data/tabular_prepare.cpp $SRC/tests/fuzz/fuzz_csv.cpp" \
  "$SRC/engine/data $SRC/engine/core" "" -lz -lpthread
# Seeds: the first byte is fuzz_csv.cpp's option byte.
seed() { printf "$1" >"$OUT/seeds/$2"; }
seed '\x11a,b,label\n1,2,x\n3,4,y\n5,,x\n7,8,y\n' basic
seed '\x11name,note\n"Smith, J","said ""hi"""\n"two\nlines",x\nlast,""\n' quotes
seed '\x15a\tb\tc\r\n1\t\tNA\r\nred\t2\t?\r\n' tsv
seed '\x72150,4,a,b\n5.1,3.5,1.4,0.2,0\n4.9,3.0,1.4,0.2,1\n' skip
seed '\x31x,y\n1,1.5\n2,2.5\n3,-3e2\n' regression
seed '\x11\xef\xbb\xbfc,l\nu,a\nv,b\nw,a\n' bom
sk=/usr/lib/python3/dist-packages/sklearn/datasets/data
for f in iris.csv wine_data.csv; do
  [ -f "$sk/$f" ] && { printf '\x12'; cat "$sk/$f"; } >"$OUT/seeds/$f"
done
cd "$OUT"
export ASAN_OPTIONS=${ASAN_OPTIONS:-allocator_may_return_null=1}
exec ./fuzz_csv corpus seeds -max_total_time="$SECONDS_TO_RUN" -timeout=10 -rss_limit_mb=4096 -max_len=16384 "$@"
