#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `kiln export` and `kiln codegen` from the command line: templates and suite models export
# and pass the checker, bad weights and bad command lines fail with a clear message.
# Usage: test_onnx_export_cli.sh KILN CASE SOURCE_DIR
set -u
KILN=$1
CASE=$2
SRC=$3
source "$(dirname "$0")/../common/test_deps.sh"  # missing_dep
DATA=/usr/share/libonnx-testdata/data
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

case $CASE in
  export_template)
    for t in "$SRC"/projects/templates/*.json; do
      out=$("$KILN" export "$t" --out "$TMP/m.onnx" 2>&1) || fail "$t: exit status $?: $out"
      grep -q "checker: ok (opset 17, full shape inference)" <<<"$out" || fail "$t: $out"
      out=$("$KILN" import "$TMP/m.onnx" 2>&1) || fail "$t: import: $out"
      grep -q "opsets: ai.onnx=17" <<<"$out" || fail "$t: $out"
      grep -q "unsupported ops: 0" <<<"$out" || fail "$t: $out"
    done
    ;;
  export_onnx)
    [ -d "$DATA/pytorch-converted" ] || missing_dep libonnx-testdata "no ONNX test data in $DATA/pytorch-converted"
    out=$("$KILN" export "$DATA/pytorch-converted/test_Conv2d/model.onnx" --out "$TMP/c.onnx" 2>&1) || fail "$out"
    grep -q "checker: ok" <<<"$out" || fail "$out"
    out=$("$KILN" import "$TMP/c.onnx" 2>&1) || fail "$out"
    grep -qx "ops: Conv x1" <<<"$out" || fail "an Identity or other node was added: $out"
    orig=$("$KILN" import "$DATA/pytorch-converted/test_Conv2d/model.onnx" 2>&1) || fail "$orig"
    # the graph's input and output names (and types) are the original's
    io() { sed -n '/^inputs:/,/^nodes:/p' <<<"$1"; }
    [ "$(io "$out")" = "$(io "$orig")" ] || fail "inputs/outputs differ: $(io "$out") vs $(io "$orig")"
    # issue 6: axes is a graph input; the declared output is what running gives, not that of axes = ones
    out=$("$KILN" export "$DATA/node/test_unsqueeze_axis_0/model.onnx" --out "$TMP/u.onnx" 2>&1) || fail "$out"
    out=$("$KILN" import "$TMP/u.onnx" 2>&1) || fail "$out"
    grep -qx "  y: FLOAT\[1, 3, 4, 5\]" <<<"$out" || fail "unsqueeze output: $out"
    out=$("$KILN" export "$DATA/node/test_reshape_one_dim/model.onnx" --out "$TMP/r.onnx" 2>&1) && fail "exit status 0: $out"
    grep -q "node 'Reshape_0' (Reshape): its shape is the graph input 'shape'" <<<"$out" || fail "$out"
    [ ! -e "$TMP/r.onnx" ] || fail "wrote a model anyway"
    out=$("$KILN" export --help 2>&1) || fail "$out"
    grep -q "unless the model fixes it" <<<"$out" || fail "help: $out"
    ;;
  export_bad_weights)
    printf 'garbage' > "$TMP/w.safetensors"
    out=$("$KILN" export "$SRC/projects/templates/fashion_mnist_mlp.json" --weights "$TMP/w.safetensors" --out "$TMP/m.onnx" 2>&1) \
      && fail "exit status 0: $out"
    grep -q "w.safetensors" <<<"$out" || fail "error does not name the file: $out"
    [ ! -e "$TMP/m.onnx" ] || fail "wrote a model anyway"
    ;;
  export_usage)
    out=$("$KILN" export "$SRC/projects/templates/fashion_mnist_mlp.json" 2>&1); rc=$?
    [ $rc -eq 2 ] || fail "exit status $rc: $out"
    grep -q "needs --out" <<<"$out" || fail "$out"
    out=$("$KILN" export "$TMP/missing.json" --out "$TMP/m.onnx" 2>&1) && fail "exit status 0: $out"
    grep -q "missing.json" <<<"$out" || fail "$out"
    # the graph may come after the flags; a flag's value is never taken for it; two are refused, named
    t=$SRC/projects/templates/fashion_mnist_mlp.json
    out=$("$KILN" export --out "$TMP/m.onnx" "$t" 2>&1) || fail "graph after --out: exit status $?: $out"
    grep -q "checker: ok" <<<"$out" || fail "$out"
    out=$("$KILN" export --out "$TMP/m.onnx" 2>&1); rc=$?
    [ $rc -eq 2 ] && grep -q "needs a graph or model" <<<"$out" || fail "--out's value taken for the graph: $rc: $out"
    out=$("$KILN" export "$t" --out "$TMP/m.onnx" "$TMP/other.json" 2>&1); rc=$?
    [ $rc -eq 2 ] || fail "two graphs: exit status $rc: $out"
    grep -qF "two positional arguments, '$t' and '$TMP/other.json'; kiln export takes one GRAPH.json|MODEL.onnx" <<<"$out" ||
      fail "two graphs: $out"
    out=$("$KILN" export --help 2>&1) || fail "$out"
    grep -qF "usage: kiln export GRAPH.json|MODEL.onnx [flags]" <<<"$out" || fail "help: $out"
    ;;
  codegen_unsupported)
    [ -d "$DATA/node" ] || missing_dep libonnx-testdata "no ONNX test data in $DATA/node"
    out=$("$KILN" codegen "$DATA/node/test_cumsum_1d/model.onnx" --out "$TMP/gen" 2>&1) && fail "exit status 0: $out"
    grep -q "CumSum (node" <<<"$out" || fail "$out"
    out=$("$KILN" codegen --out "$TMP/gen" "$DATA/node/test_cumsum_1d/model.onnx" 2>&1) && fail "exit status 0: $out"
    grep -q "CumSum (node" <<<"$out" || fail "the model after --out: $out"
    [ ! -e "$TMP/gen" ] || fail "wrote files anyway"
    ;;
  *) fail "unknown case $CASE" ;;
esac
echo "ok: $CASE"
