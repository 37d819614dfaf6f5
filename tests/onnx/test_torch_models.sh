#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# PyTorch models (make_torch_models.py: torchvision resnet18 / mobilenet_v2, a small
# nn.TransformerEncoder, a small U-Net, random weights, torch.onnx at opset 17) run in Kiln and match PyTorch's
# outputs within 1e-4 relative to the output's largest magnitude; exported again by
# `kiln export` (through the graph IR, checked by libonnx's checker) they still match.
# With BUILD_DIR (the convolutional models): `kiln codegen` C++ of the model, built against the engine
# installed from BUILD_DIR, reproduces the executor's outputs (its main checks them).
# Usage: test_torch_models.sh KILN MODEL [BUILD_DIR]. Exit 77 when python3-torch / python3-torchvision are missing
# (make_torch_models.py; a failure under KILN_REQUIRE_TEST_DEPS=1).
set -u
KILN=$1
MODEL=$2
PY=/usr/bin/python3
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

out=$("$PY" "$HERE/make_torch_models.py" "$TMP" "$MODEL" 2>&1); rc=$?
[ $rc -eq 77 ] && { echo "$out"; exit 77; }
[ $rc -eq 0 ] || fail "make_torch_models.py: $out"
D=$TMP/$MODEL
compare() {  # compare OUT.npy: max |kiln - torch| <= 1e-4 * max |torch|
  "$PY" - "$1" "$D/expected_output.npy" <<'PYEOF'
import sys
import numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
err, scale = float(np.abs(a - b).max()), float(np.abs(b).max())
print(f"max abs error {err:.3g}, largest output {scale:.3g}, relative {err / scale:.3g}")
sys.exit(0 if a.shape == b.shape and err <= 1e-4 * scale else 1)
PYEOF
}
mkdir -p "$D/kiln" "$D/re"
out=$("$KILN" run "$D/model.onnx" --input "$D/input.npy" --out-dir "$D/kiln" --device cpu 2>&1) || fail "kiln run: $out"
compare "$D/kiln/output.npy" || fail "$MODEL: Kiln's outputs differ from PyTorch's"
out=$("$KILN" export "$D/model.onnx" --out "$D/re.onnx" 2>&1) || fail "kiln export: $out"
grep -q "checker: ok" <<<"$out" || fail "$out"
out=$("$KILN" run "$D/re.onnx" --input "$D/input.npy" --out-dir "$D/re" --device cpu 2>&1) || fail "kiln run (re-exported): $out"
compare "$D/re/output.npy" || fail "$MODEL: the re-exported model's outputs differ from PyTorch's"
if [ -n "${3:-}" ] && [ "$MODEL" != transformer ]; then
  out=$("$KILN" codegen "$D/model.onnx" --out "$D/gen" --class TorchModel 2>&1) || fail "kiln codegen: $out"
  cmake --install "$3" --prefix "$TMP/prefix" > /dev/null || fail "cmake --install $3"
  out=$(cmake -S "$D/gen" -B "$D/gen/build" -G Ninja -DCMAKE_PREFIX_PATH="$TMP/prefix" -DCMAKE_BUILD_TYPE=Release 2>&1) \
    || fail "configuring the generated project: $out"
  out=$(cmake --build "$D/gen/build" 2>&1) || fail "building the generated project: $out"
  "$D/gen/build/torch_model_main" || fail "$MODEL: the generated C++ differs from the executor"
fi
echo "ok: $MODEL"
