#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `kiln explain`: Grad-CAM and saliency heat maps over an image (engine/explain; the maps themselves
# are checked against PyTorch's by tests/engine/test_explain.cpp).
#   graph:     the CNN of tests/fixtures/gradcam_reference.json as a graph JSON, and the same
#              exported to ONNX (--onnx): the predicted class, the layer used (the last
#              convolution, or --layer), a PNG of the image's size enlarged to 256 pixels
#   run:       runs of `kiln train` on a small image folder, a drawn graph and the built-in cnn
#   bad_input: Grad-CAM on a model without convolutions, an unknown layer, a layer without a
#              spatial output, a class out of range, an unreadable image, a table model, no
#              model: one clear line each, exit status 2
# Registered with ctest (label engine) by tests/CMakeLists.txt, one test per case:
#   tests/cli/test_explain.sh path/to/kiln CASE
set -uo pipefail
kiln=$1 case=$2
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../common/cli_harness.sh"  # $work, fail, run, contains, one_line, missing_dep
templates=$here/../../projects/templates

# png W H FILE: an RGB PNG with a gradient pattern (Python's standard library only).
png() {
  /usr/bin/python3 - "$@" <<'EOF'
import struct, sys, zlib
w, h, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
rows = b"".join(b"\0" + bytes(v for x in range(w) for v in ((x * 16 + y) % 256, (y * 20) % 256, ((x + y) * 9) % 256))
                for y in range(h))
def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
open(path, "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                       + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
EOF
}
# png_size FILE: "W H" of a PNG (its IHDR).
png_size() { /usr/bin/python3 -c "import struct,sys; print(*struct.unpack('>II', open(sys.argv[1],'rb').read()[16:24]))" "$1"; }

# The fixture's CNN (image [3, 12, 16] -> conv1 ... conv2 ... fc -> 5 logits) as a graph JSON.
/usr/bin/python3 -c "import json,sys; json.dump(json.load(open(sys.argv[1]))['graph'], open(sys.argv[2], 'w'))" \
  "$here/../fixtures/gradcam_reference.json" "$work/cnn.json"
png 32 24 "$work/x.png"

case $case in
graph)
  run 0 explain --graph "$work/cnn.json" --image "$work/x.png" --out "$work/heat.png"
  contains "$out" "layer: conv2 (Conv2d, output [1, 6, 6, 8])" "the default layer (the last convolution)"
  contains "$out" "predicted: class " "the predicted class"
  predicted=$(sed -n 's/^predicted: class \([0-9]*\),.*/\1/p' <<<"$out")
  contains "$out" "explained: class $predicted," "the class explained by default"
  [[ $(png_size "$work/heat.png") == "256 192" ]] || fail "heat.png is $(png_size "$work/heat.png"), not 16 x 12 enlarged 16 times"
  run 0 explain --graph "$work/cnn.json" --image "$work/x.png" --out "$work/c1.png" --layer conv1 --class 3
  contains "$out" "layer: conv1 (Conv2d, output [1, 4, 12, 16])" "--layer conv1"
  contains "$out" "explained: class 3," "--class 3"
  run 0 explain --graph "$work/cnn.json" --image "$work/x.png" --out "$work/s.png" --method saliency
  contains "$out" "layer: none (saliency" "saliency has no layer"
  [[ -s $work/s.png ]] || fail "no saliency picture"
  if "$kiln" --help | grep -q '^  export '; then  # built with ONNX: the same model imported from ONNX
    run 0 export "$work/cnn.json" --out "$work/cnn.onnx"
    run 0 explain --onnx "$work/cnn.onnx" --image "$work/x.png" --out "$work/o.png"
    contains "$out" "predicted: class $predicted," "the ONNX model's prediction"
    contains "$out" "(Conv2d, output [1, 6, 6, 8])" "the ONNX model's last convolution, a native Conv2d"
    cmp -s "$work/o.png" "$work/heat.png" || fail "the ONNX model's heat map differs from the graph's"
  fi
  ;;
run)
  for c in a b; do
    mkdir -p "$work/ds/$c"
    for i in 0 1 2 3; do png $((16 + i)) $((12 + i)) "$work/ds/$c/$i.png"; done
  done
  /usr/bin/python3 -c "import json,sys; g=json.load(open(sys.argv[1])); del g['initial_state']; g['version']=1
[n['attrs'].update(out_features=2) for n in g['nodes'] if n['name']=='fc']; json.dump(g, open(sys.argv[2], 'w'))" \
    "$work/cnn.json" "$work/cnn2.json"
  run 0 train --graph "$work/cnn2.json" --dataset imagefolder:"$work/ds" --image-size 12x16 --epochs 1 --out "$work/g"
  run 0 explain --run "$work/g" --image "$work/ds/a/1.png" --out "$work/g.png" --class 1
  contains "$out" "layer: conv2 (Conv2d, output [1, 6, 6, 8])" "the graph run's last convolution"
  contains "$out" "explained: class 1 'b'" "the run's class names"
  run 0 train --model cnn --dataset imagefolder:"$work/ds" --image-size 12x16 --epochs 1 --out "$work/c"
  run 0 explain --run "$work/c" --image "$work/ds/b/2.png" --out "$work/c.png"
  contains "$out" "layer: 3 (Conv2d, output [1, 64, 6, 8])" "the built-in cnn's second Conv2d (child 3)"
  [[ $(png_size "$work/c.png") == "256 192" ]] || fail "c.png is $(png_size "$work/c.png")"
  ;;
bad_input)
  run 2 explain --graph "$templates/fashion_mnist_mlp.json" --image "$work/x.png" --out "$work/h.png"
  contains "$err" "kiln explain: Grad-CAM needs a convolution layer; the model has none — use --method saliency" "no convolution"
  one_line "$err" "the no-convolution message"
  run 0 explain --graph "$templates/fashion_mnist_mlp.json" --image "$work/x.png" --out "$work/h.png" --method saliency
  run 2 explain --graph "$work/cnn.json" --image "$work/x.png" --out "$work/h.png" --layer conv9
  contains "$err" "no layer named 'conv9'; the model's convolution layers: conv1, conv2" "an unknown layer"
  run 2 explain --graph "$work/cnn.json" --image "$work/x.png" --out "$work/h.png" --layer fc
  contains "$err" "layer 'fc' (Linear) gives [1, 5], not [1, C, H, W]" "a layer without a spatial output"
  run 2 explain --graph "$work/cnn.json" --image "$work/x.png" --out "$work/h.png" --class 5
  contains "$err" "class 5 is out of range: the model has 5 classes (0 to 4)" "a class out of range"
  run 2 explain --graph "$work/cnn.json" --image "$work/x.png" --out "$work/h.png" --method saliency --class 9
  contains "$err" "class 9 is out of range" "a class out of range (saliency)"
  run 2 explain --graph "$work/cnn.json" --image "$work/missing.png" --out "$work/h.png"
  contains "$err" "kiln explain: cannot read the image: $work/missing.png" "a missing image"
  run 2 explain --graph "$work/cnn.json" --image "$work/cnn.json" --out "$work/h.png"
  contains "$err" "cannot read the image: $work/cnn.json: not a JPEG, PNG" "a file that is not an image"
  run 2 explain --graph "$templates/table_mlp.json" --image "$work/x.png" --out "$work/h.png"
  contains "$err" "not an image [N, 1 or 3, H, W]" "a table model"
  run 2 explain --image "$work/x.png" --out "$work/h.png"
  contains "$err" "give one of --run DIR, --graph FILE or --onnx FILE" "no model"
  run 2 explain --graph "$work/cnn.json" --image "$work/x.png" --out "$work/h.png" --method saliency --layer conv1
  contains "$err" "--layer is Grad-CAM's" "--layer with saliency"
  ;;
*)
  echo "unknown case $case"; exit 2 ;;
esac
[[ $failures == 0 ]] || exit 1
echo "ok: $case"
