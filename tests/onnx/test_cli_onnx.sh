#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `kiln import`, `kiln run` and `kiln onnx-suite` from the command line, on models of the
# ONNX backend test data (libonnx-testdata) and on bad files. Usage: test_cli_onnx.sh KILN CASE
set -u
KILN=$1
CASE=$2
source "$(dirname "$0")/../common/test_deps.sh"  # missing_dep
DATA=/usr/share/libonnx-testdata/data
[ -d "$DATA/node" ] || missing_dep libonnx-testdata "no ONNX test data in $DATA/node"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

case $CASE in
  import_summary)
    out=$("$KILN" import "$DATA/pytorch-converted/test_Conv2d/model.onnx") || fail "exit status $?: $out"
    grep -q "ops: Conv x1" <<<"$out" || fail "no op list: $out"
    grep -q "parameters: 76 in 2 initializers" <<<"$out" || fail "no parameter count: $out"
    grep -q "graph: 5 nodes, 4 edges, 76 trainable parameters, 2880 multiply-adds per sample" <<<"$out" || fail "no graph summary: $out"
    ;;
  import_unsupported)
    out=$("$KILN" import "$DATA/node/test_melweightmatrix/model.onnx") && fail "exit status 0"
    grep -q "unsupported ops: 1" <<<"$out" || fail "$out"
    grep -q "MelWeightMatrix (node 'MelWeightMatrix_0', opset 17)" <<<"$out" || fail "$out"
    out=$("$KILN" import "$DATA/simple/test_sequence_model1/model.onnx") && fail "exit status 0"
    grep -q "unsupported ops: 0" <<<"$out" || fail "$out"
    grep -q "graph: cannot map .*SequenceEmpty.*sequence ops do not map" <<<"$out" || fail "$out"
    ;;
  import_garbage)
    head -c 3000 /dev/urandom > "$TMP/bad.onnx"
    out=$("$KILN" import "$TMP/bad.onnx" 2>&1) && fail "exit status 0"
    grep -q "kiln: error: .*bad.onnx" <<<"$out" || fail "$out"
    head -c 100 "$DATA/pytorch-converted/test_Conv2d/model.onnx" > "$TMP/cut.onnx"
    out=$("$KILN" import "$TMP/cut.onnx" 2>&1) && fail "exit status 0"
    grep -q "truncated or corrupt" <<<"$out" || fail "$out"
    ;;
  run_npy)
    python3 - "$TMP/x.npy" <<'PY'
import struct, sys
vals = [(-1) ** i * i * 0.5 for i in range(60)]
header = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4, 5), }"
header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
with open(sys.argv[1], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + struct.pack("<60f", *vals))
PY
    out=$("$KILN" run "$DATA/node/test_relu/model.onnx" --input "$TMP/x.npy" --out-dir "$TMP/out" --device cpu) || fail "$out"
    grep -q "y: f32\[3, 4, 5\]" <<<"$out" || fail "$out"
    python3 - "$TMP/out/y.npy" <<'PY' || fail "wrong values"
import struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<H", b[8:10])[0]
assert "'shape': (3, 4, 5)" in b[10:10 + n].decode()
y = struct.unpack("<60f", b[10 + n:])
assert all(abs(v - max(0.0, (-1) ** i * i * 0.5)) < 1e-6 for i, v in enumerate(y)), y
PY
    # the model may come after the flags (a flag's value is never taken for it); two are refused, named
    out=$("$KILN" run --device cpu --input "$TMP/x.npy" "$DATA/node/test_relu/model.onnx" --out-dir "$TMP/o2" 2>&1) ||
      fail "the model after the flags: $out"
    cmp -s "$TMP/out/y.npy" "$TMP/o2/y.npy" || fail "the model after the flags: other outputs"
    out=$("$KILN" run --device cpu --input "$TMP/x.npy" 2>&1); rc=$?
    [ $rc -eq 2 ] && grep -q "needs a model" <<<"$out" || fail "no model: exit status $rc: $out"
    out=$("$KILN" run "$DATA/node/test_relu/model.onnx" --device cpu "$TMP/x.npy" 2>&1); rc=$?
    [ $rc -eq 2 ] && grep -qF "two positional arguments, '$DATA/node/test_relu/model.onnx' and '$TMP/x.npy'" <<<"$out" ||
      fail "two models: exit status $rc: $out"
    # --input: a file name with a comma, alone, as NAME=FILE, in a NAME=FILE list; --input repeated
    cp "$TMP/x.npy" "$TMP/a,b.npy"
    for input in "$TMP/a,b.npy" "x=$TMP/a,b.npy"; do
      rm -rf "$TMP/o3"
      out=$("$KILN" run "$DATA/node/test_relu/model.onnx" --input "$input" --out-dir "$TMP/o3" --device cpu 2>&1) ||
        fail "--input $input: $out"
      cmp -s "$TMP/out/y.npy" "$TMP/o3/y.npy" || fail "--input $input: other outputs"
    done
    add=$DATA/node/test_add/model.onnx  # x + y, both FLOAT[3, 4, 5]
    for inputs in "--input $TMP/a,b.npy --input $TMP/x.npy" "--input y=$TMP/x.npy --input x=$TMP/a,b.npy" \
                  "--input x=$TMP/a,b.npy,y=$TMP/x.npy" "--input $TMP/x.npy,$TMP/x.npy"; do
      rm -rf "$TMP/o4"
      # shellcheck disable=SC2086  # the flags split at spaces ($TMP has none)
      out=$("$KILN" run "$add" $inputs --out-dir "$TMP/o4" --device cpu 2>&1) || fail "kiln run $inputs: $out"
      python3 - "$TMP/o4/sum.npy" <<'PY' || fail "kiln run $inputs: wrong sum"
import struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<H", b[8:10])[0]
y = struct.unpack("<60f", b[10 + n:])
assert all(abs(v - 2 * (-1) ** i * i * 0.5) < 1e-6 for i, v in enumerate(y)), y
PY
    done
    out=$("$KILN" run --help) || fail "$out"
    grep -q "(repeatable)" <<<"$out" || fail "--help does not say --input is repeatable: $out"
    out=$("$KILN" run "$DATA/node/test_relu/model.onnx" --input "z=$TMP/x.npy" --device cpu 2>&1) && fail "exit status 0"
    grep -q "'z' is not an input of the model (inputs: x)" <<<"$out" || fail "$out"
    # an f64 .npy for a FLOAT input is refused at the input, before any node runs
    python3 - "$TMP/x64.npy" <<'PY'
import struct, sys
header = "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4, 5), }"
header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
with open(sys.argv[1], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + struct.pack("<60d", *range(60)))
PY
    out=$("$KILN" run "$DATA/node/test_relu/model.onnx" --input "$TMP/x64.npy" --device cpu 2>&1) && fail "exit status 0"
    grep -q "model input 'x' expects FLOAT\[3, 4, 5\] (f32), got f64" <<<"$out" || fail "$out"
    # an --out-dir that cannot be made is named, with the flag, before the model runs
    out=$("$KILN" run "$DATA/node/test_relu/model.onnx" --input "$TMP/x.npy" --out-dir /proc/kiln_no_such/out --device cpu 2>&1) &&
      fail "exit status 0"
    grep -q "kiln: error: --out-dir: cannot create the folder /proc/kiln_no_such/out: " <<<"$out" || fail "$out"
    ;;
  suite_interrupt)
    # Ctrl-C stops after the current case: the summary of the cases run, the JSON, exit 130.
    # The first case fails (its FAIL line says the run is under way), 400 passing ones follow.
    mkdir -p "$TMP/many/test_000_wrong/test_data_set_0"
    cp "$DATA/node/test_abs/model.onnx" "$TMP/many/test_000_wrong/"
    cp "$DATA/node/test_abs/test_data_set_0/input_0.pb" "$TMP/many/test_000_wrong/test_data_set_0/"
    cp "$DATA/node/test_neg/test_data_set_0/output_0.pb" "$TMP/many/test_000_wrong/test_data_set_0/"
    for i in $(seq 100 499); do ln -s "$DATA/node/test_averagepool_3d_default" "$TMP/many/test_$i"; done
    "$KILN" onnx-suite "$TMP/many" --device cpu --json "$TMP/r.json" >"$TMP/out" 2>&1 &
    pid=$!
    for _ in $(seq 600); do grep -q "^FAIL" "$TMP/out" && break; sleep 0.05; done
    kill -INT $pid
    wait $pid
    rc=$?
    out=$(cat "$TMP/out")
    [ $rc -eq 130 ] || fail "exit status $rc, expected 130: $out"
    grep -q "^interrupted (Ctrl-C): [0-9]* of 401 cases not run" <<<"$out" || fail "$out"
    grep -q "^passed: [0-9]* failed: 1 unsupported: 0 total: [0-9]*$" <<<"$out" || fail "$out"
    python3 - "$TMP/r.json" <<'PY' || fail "json: $(cat "$TMP/r.json")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["interrupted"] is True and j["not_run"] > 0, j
assert j["total"] == len(j["cases"]) == j["passed"] + 1 == 401 - j["not_run"], j
PY
    ;;
  suite_summary)
    out=$("$KILN" onnx-suite "$DATA/node" --filter test_abs --json "$TMP/r.json" --device cpu) || fail "$out"
    grep -q "^passed: 1 failed: 0 unsupported: 0 total: 1$" <<<"$out" || fail "$out"
    grep -q '"status": "passed"' "$TMP/r.json" || fail "json: $(cat "$TMP/r.json")"
    mkdir "$TMP/suite" && ln -s "$DATA/node/test_abs" "$DATA/node/test_melweightmatrix" "$TMP/suite/"
    # without --expect every case must pass: an unsupported one makes the exit status 1
    out=$("$KILN" onnx-suite "$TMP/suite" --device cpu); rc=$?
    [ $rc -eq 1 ] || fail "exit status $rc with an unsupported case and no --expect: $out"
    printf 'test_abs\n' > "$TMP/expect.txt"
    out=$("$KILN" onnx-suite "$TMP/suite" --expect "$TMP/expect.txt" --device cpu) || fail "regression reported: $out"
    grep -q "^UNSUPPORTED test_melweightmatrix: MelWeightMatrix" <<<"$out" || fail "$out"
    grep -q "^passed: 1 failed: 0 unsupported: 1 total: 2$" <<<"$out" || fail "$out"
    printf 'test_abs\ntest_no_such_case\n' > "$TMP/expect.txt"
    out=$("$KILN" onnx-suite "$TMP/suite" --expect "$TMP/expect.txt" --device cpu) && fail "a listed case that does not exist passed"
    grep -q "REGRESSION test_no_such_case" <<<"$out" || fail "$out"
    # a case whose outputs differ: a copy of test_abs with a wrong expected output
    mkdir -p "$TMP/bad/test_abs_wrong/test_data_set_0"
    cp "$DATA/node/test_abs/model.onnx" "$TMP/bad/test_abs_wrong/"
    cp "$DATA/node/test_abs/test_data_set_0/input_0.pb" "$TMP/bad/test_abs_wrong/test_data_set_0/"
    cp "$DATA/node/test_neg/test_data_set_0/output_0.pb" "$TMP/bad/test_abs_wrong/test_data_set_0/"
    out=$("$KILN" onnx-suite "$TMP/bad" --device cpu); rc=$?
    [ $rc -eq 1 ] || fail "exit status $rc with a failing case and no --expect: $out"
    grep -q "^FAIL test_abs_wrong: .*(largest error [0-9.]*)$" <<<"$out" || fail "$out"
    # a failure that is not a numeric mismatch (a dtype that differs) ends without "largest error"
    mkdir -p "$TMP/bad/test_dtype_wrong/test_data_set_0"
    cp "$DATA/node/test_abs/model.onnx" "$DATA/node/test_abs/test_data_set_0/input_0.pb" "$TMP/bad/test_dtype_wrong/"
    mv "$TMP/bad/test_dtype_wrong/input_0.pb" "$TMP/bad/test_dtype_wrong/test_data_set_0/"
    cp "$DATA/node/test_cast_FLOAT_to_DOUBLE/test_data_set_0/output_0.pb" "$TMP/bad/test_dtype_wrong/test_data_set_0/"
    out=$("$KILN" onnx-suite "$TMP/bad" --device cpu); rc=$?
    [ $rc -eq 1 ] || fail "exit status $rc: $out"
    grep -q "^FAIL test_dtype_wrong: .*'y': \(shape\|dtype\) [^(]*$" <<<"$out" || fail "$out"
    rm -r "$TMP/bad/test_dtype_wrong"
    printf '' > "$TMP/none.txt"
    out=$("$KILN" onnx-suite "$TMP/bad" --expect "$TMP/none.txt" --device cpu) || fail "a failing case not listed is no regression: $out"
    printf 'test_abs_wrong\n' > "$TMP/expect.txt"
    out=$("$KILN" onnx-suite "$TMP/bad" --expect "$TMP/expect.txt" --device cpu) && fail "a listed failing case passed the check"
    grep -q "REGRESSION test_abs_wrong" <<<"$out" || fail "$out"
    out=$("$KILN" onnx-suite "$TMP/missing" 2>&1) && fail "exit status 0"
    grep -q "no such folder" <<<"$out" || fail "$out"
    out=$("$KILN" onnx-suite "$DATA/node/test_abs/model.onnx" 2>&1) && fail "exit status 0 for a file"
    grep -q "model.onnx is a file, not a folder of test cases" <<<"$out" || fail "$out"
    out=$("$KILN" onnx-suite "$TMP/bad" --expect "$TMP/no_list.txt" 2>&1) && fail "exit status 0 for a missing --expect list"
    grep -q "kiln: error: --expect: cannot open .*no_list.txt" <<<"$out" || fail "$out"
    mkdir "$TMP/empty"
    out=$("$KILN" onnx-suite "$TMP/empty" 2>&1) && fail "exit status 0 for a folder without cases: $out"
    grep -q "no test cases" <<<"$out" || fail "$out"
    out=$("$KILN" onnx-suite "$DATA/node" --filter no_such_case 2>&1) && fail "exit status 0 for a filter matching nothing"
    grep -q "matching 'no_such_case'" <<<"$out" || fail "$out"
    ;;
  *) fail "unknown case $CASE" ;;
esac
echo ok
