#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `kiln onnx-suite` and `kiln run` on a device other than the CPU (vulkan:0 = lavapipe here),
# with the per-node CPU fallback (onnx::SessionOptions) and without it (--no-fallback).
# Skipped (exit 77, saying why) when the device is absent; registered where the Vulkan plugin is
# built, so a missing vulkan:0 (lavapipe) or test data fails under KILN_REQUIRE_TEST_DEPS=1.
# Usage: test_onnx_suite_device.sh KILN DEVICE suite DIR EXPECT_FILE   (regression check)
#        test_onnx_suite_device.sh KILN DEVICE fallback_cli
set -u
KILN=$1
DEVICE=$2
CASE=$3
source "$(dirname "$0")/../common/test_deps.sh"  # missing_dep
DATA=/usr/share/libonnx-testdata/data
[ -d "$DATA/node" ] || missing_dep libonnx-testdata "no ONNX test data in $DATA/node"
devices=$("$KILN" devices 2>&1)
if ! grep -q "^$DEVICE " <<<"$devices"; then
  [[ $DEVICE == vulkan* ]] && missing_dep mesa-vulkan-drivers "no $DEVICE device ($(grep "unavailable: vulkan" <<<"$devices"))"
  echo "no $DEVICE device: skipped"
  grep "unavailable" <<<"$devices"
  exit 77
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

case $CASE in
  suite)
    exec "$KILN" onnx-suite "$4" --device "$DEVICE" --quiet --expect "$5"
    ;;
  fallback_cli)
    # Mod computes in f64, which the device may lack: those nodes run on the CPU and pass.
    out=$("$KILN" onnx-suite "$DATA/node" --filter test_mod_mixed_sign_float --device "$DEVICE" --json "$TMP/r.json") ||
      fail "exit status $?: $out"
    grep -q "passed: 3 failed: 0 unsupported: 0 total: 3" <<<"$out" || fail "$out"
    python3 - "$TMP/r.json" "$DEVICE" <<'PY' || fail "json: $(cat "$TMP/r.json")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["device"] == sys.argv[2] and j["cpu_fallback"] is True, j
for c in j["cases"]:
    assert c["status"] == "passed", c
    if "cpu_fallback" in c:
        assert c["cpu_fallback"]["nodes"] == 1 and c["cpu_fallback"]["op_types"] == {"Mod": 1}, c
        assert "is not supported on " + sys.argv[2] in c["cpu_fallback"]["reasons"]["Mod"], c
assert j["cpu_fallback_nodes"] == sum(c.get("cpu_fallback", {}).get("nodes", 0) for c in j["cases"]), j
PY
    n=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['cpu_fallback_nodes'])" "$TMP/r.json")
    if [ "$n" -gt 0 ]; then
      grep -q "^cpu fallback: $n nodes\? ($n Mod) of $n cases\? ran on the CPU instead of $DEVICE" <<<"$out" || fail "$out"
      out=$("$KILN" onnx-suite "$DATA/node" --filter test_mod_mixed_sign_float --device "$DEVICE" --no-fallback) &&
        fail "passed without the fallback: $out"
      grep -q "FAIL test_mod_mixed_sign_float32: node 'Mod_0' (Mod): .* is not supported on $DEVICE" <<<"$out" || fail "$out"
      grep -q "cpu fallback" <<<"$out" && fail "a fallback line with --no-fallback: $out"
    else
      grep -q "cpu fallback" <<<"$out" && fail "a fallback line with no node on the CPU: $out"
    fi
    # A u16 output the device holds but cannot convert: compared on the host, so it passes
    # without the fallback; with it, the reason names the device and the dtype it lacks.
    out=$("$KILN" onnx-suite "$DATA/node" --filter bitshift_left_uint16 --device "$DEVICE" --no-fallback) || fail "$out"
    grep -q "passed: 1 failed: 0 unsupported: 0 total: 1" <<<"$out" || fail "$out"
    out=$("$KILN" onnx-suite "$DATA/node" --filter bitshift_left_uint16 --device "$DEVICE" --json "$TMP/b.json") || fail "$out"
    python3 - "$TMP/b.json" "$DEVICE" <<'PY' || fail "json: $(cat "$TMP/b.json")"
import json, sys
c = json.load(open(sys.argv[1]))["cases"][0]
why = c.get("cpu_fallback", {}).get("reasons", {}).get("BitShift")
assert why is None or sys.argv[2] + " cannot hold u16" in why or "bitshift" in why, why
PY
    # kiln run: Pow of int64 computes in f64 too.
    python3 - "$TMP" <<'PY'
import struct, sys
header = "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }"
header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
for name, vals in (("x", (1, 2, 3)), ("y", (4, 5, 6))):
    with open(sys.argv[1] + "/" + name + ".npy", "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + struct.pack("<3q", *vals))
PY
    model=$DATA/node/test_pow_types_int64_int64/model.onnx
    out=$("$KILN" run "$model" --input "$TMP/x.npy,$TMP/y.npy" --out-dir "$TMP/out" --device "$DEVICE") || fail "$out"
    grep -q "z: i64\[3\]" <<<"$out" || fail "$out"
    python3 -c "
import struct, sys
b = open(sys.argv[1], 'rb').read()
n = struct.unpack('<H', b[8:10])[0]
assert struct.unpack('<3q', b[10 + n:]) == (1, 32, 729), struct.unpack('<3q', b[10 + n:])" "$TMP/out/z.npy" || fail "wrong values"
    if grep -q "cpu fallback" <<<"$out"; then
      grep -q "^cpu fallback: 1 node (1 Pow) ran on the CPU instead of $DEVICE" <<<"$out" || fail "$out"
      out=$("$KILN" run "$model" --input "$TMP/x.npy,$TMP/y.npy" --out-dir "$TMP/out" --device "$DEVICE" --no-fallback 2>&1) &&
        fail "ran without the fallback: $out"
      grep -q "kiln: error: node 'Pow_0' (Pow): .* is not supported on $DEVICE" <<<"$out" || fail "$out"
    fi
    ;;
  *)
    fail "unknown case $CASE"
    ;;
esac
