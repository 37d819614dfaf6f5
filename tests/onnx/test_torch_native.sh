#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# torchvision resnet18 and mobilenet_v2, and a small U-Net with ConvTranspose2d (make_torch_models.py:
# Debian's PyTorch, opset 17) import as native graphs: `kiln import` prints "native nodes: N of M"
# with N >= 95% of M, and OnnxNative.TorchModelsImportNative (test_onnx_native.cpp) checks the outputs and the
# export -> checker -> re-import round trip.
# Usage: test_torch_native.sh KILN KILN_ONNX_TESTS. Exit 77 when python3-torch / python3-torchvision
# are missing (a failure under KILN_REQUIRE_TEST_DEPS=1).
set -u
KILN=$1
TESTS=$2
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

out=$(/usr/bin/python3 "$HERE/make_torch_models.py" "$TMP" resnet18 mobilenet_v2 unet 2>&1); rc=$?
[ $rc -eq 77 ] && { echo "$out"; exit 77; }
[ $rc -eq 0 ] || fail "make_torch_models.py: $out"
for model in resnet18 mobilenet_v2 unet; do
  out=$("$KILN" import "$TMP/$model/model.onnx" 2>&1) || fail "kiln import $model: $out"
  line=$(grep -E '^native nodes: [0-9]+ of [0-9]+$' <<<"$out") || fail "$model: no 'native nodes: N of M' line in: $out"
  echo "$model: $line"
  read -r n m < <(sed -E 's/native nodes: ([0-9]+) of ([0-9]+)/\1 \2/' <<<"$line")
  [ "$m" -gt 0 ] && [ $((n * 100)) -ge $((m * 95)) ] || fail "$model: $line is below 95%"
done
KILN_TORCH_MODELS=$TMP "$TESTS" --gtest_filter=OnnxNative.TorchModelsImportNative || fail "OnnxNative.TorchModelsImportNative"
echo "ok"
