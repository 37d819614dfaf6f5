#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Builds and runs the libFuzzer target of the text readers and tokenizers (fuzz_text.cpp) with
# Debian's clang (-fsanitize=fuzzer,address; libclang-rt-14-dev): engine/data/text's readers and
# word/char tokenizers and engine/data's csv_reader are compiled instrumented into the fuzzer,
# the rest of the engine comes from BUILD_DIR's libkiln.so. Not part of CI.
# Usage: tests/fuzz/run_text.sh BUILD_DIR [SECONDS=180] [extra libFuzzer flags ...]
#   Crashes land in BUILD_DIR/fuzz-text/crash-*; reproduce one with: BUILD_DIR/fuzz-text/fuzz_text FILE
set -eu
BUILD=$(cd "$1" && pwd)
SECONDS_TO_RUN=${2:-180}
shift $(( $# >= 2 ? 2 : 1 ))
SRC=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$BUILD/fuzz-text
source "$SRC/tests/fuzz/build_fuzzer.sh"
t=$SRC/engine/data/text
build_fuzzer "$OUT" fuzz_text "$t/text_index.cpp $t/tokenizer.cpp $t/utf8.cpp $t/unicode_tables.cpp $SRC/engine/io/base64.cpp \
  $SRC/engine/data/csv_reader.cpp $SRC/tests/fuzz/fuzz_text.cpp" "$SRC/engine/data $SRC/engine/core" "" -lz -lpthread
# Seeds: the first byte is fuzz_text.cpp's selector.
seed() { printf "$1" >"$OUT/seeds/$2"; }
seed '\x00{"text":"caf\\u00e9 ok","label":1}\n{"text":"no","label":"b"}\n\n{"text":"","label":2}\n' jsonl
seed '\x04{"text":"a","label":1}\n{"text":"a","label":0}\n{"text":"b","label":0}\n' jsonl_dup
seed '\x01id,text,label\n1,"Hello, world",pos\n2,bad day,neg\n3,,neg\n' csv
seed '\x09text\tlabel\nok\t1\nno\t0\n' tsv
seed '\x02Hello, WORLD! It'"'"'s $5.\n\xc2\xbfQu\xc3\x89?\xc2\xa0Caf\xc3\xa9\xe2\x80\x94na\xc3\xafve\n\xd0\x9c\xd0\xb8\xd1\x80 \xe2\x82\xac5\n' words
seed '\x1aZo\xc3\xab zoe \xf0\x9f\x98\x80\n' chars
seed '\x03{"kiln_tokenizer":1,"kind":"word","lowercase":true,"min_frequency":1,"vocab":["<pad>","<unk>","a"]}' tokenizer
cd "$OUT"
export ASAN_OPTIONS=${ASAN_OPTIONS:-allocator_may_return_null=1}
exec ./fuzz_text corpus seeds -max_total_time="$SECONDS_TO_RUN" -timeout=10 -rss_limit_mb=4096 -max_len=16384 "$@"
