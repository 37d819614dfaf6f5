# SPDX-License-Identifier: GPL-3.0-or-later
# Sourced by the onnxruntime benchmarks (onnx_vs_ort.sh, qdq_vs_ort.sh): picks their anchor.
#
#   select_ort PY_SCRIPT JS_SCRIPT PYTHON...
#
# Sets `ort` (the command that runs the benchmark's side script) and `ort_name`: the first
# PYTHON that imports onnxruntime and numpy runs PY_SCRIPT (the GPU machine), else Node.js runs
# JS_SCRIPT with onnxruntime-node from KILN_NPM_DIR (default ~/.local/share/kiln/npm, which
# installer/quickstart.sh bench fills: Debian 12 packages no onnxruntime). Exits 1 naming both
# when neither is there.
select_ort() {
  local py_script=$1 js_script=$2 p
  shift 2
  local npm_dir=${KILN_NPM_DIR:-${KILN_DATA_DIR:-$HOME/.local/share/kiln}/npm}
  for p in "$@"; do
    if "$p" -c 'import onnxruntime, numpy' 2>/dev/null; then
      ort=("$p" "$py_script")
      ort_name="onnxruntime $("$p" -c 'import onnxruntime; print(onnxruntime.__version__)') (python)"
      return 0
    fi
  done
  if [[ -d $npm_dir/node_modules/onnxruntime-node ]] && command -v node >/dev/null; then
    export NODE_PATH=$npm_dir/node_modules
    ort=(node "$js_script")
    ort_name="onnxruntime-node $(node -p 'require("onnxruntime-node/package.json").version')"
    return 0
  fi
  echo "no onnxruntime: Python's onnxruntime and numpy for $*, or onnxruntime-node in $npm_dir (installer/quickstart.sh bench)"
  exit 1
}
