#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Tests of the `kiln` binary (app/cli): each case runs the real program and checks its
# exit status, messages and files. Registered with ctest (label engine) by
# tests/CMakeLists.txt, one test per case:
#
#   tests/engine/test_cli.sh path/to/kiln CASE
#
# Cases: help usage bad_model bad_device devices eval_missing eval_wrong_shapes
#        missing_data train_smoke interrupt graph_bad graph_train graph_eval eval_interrupt
#        version dir_args device_reason train_bf16
set -uo pipefail
kiln=$1 case=$2
source "$(dirname "$0")/../common/cli_harness.sh"  # $work, fail, run, contains, one_line, missing_dep

# A safetensors file with the mlp's keys, every tensor of shape [1] (F32).
write_wrong_shapes() {
  local header='{' offset=0 key
  for key in 1.weight 1.bias 3.weight 3.bias 5.weight 5.bias; do
    header+="\"$key\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[$offset,$((offset + 4))]},"
    offset=$((offset + 4))
  done
  header="${header%,}}"
  local n=${#header} i
  {
    for i in 0 1 2 3 4 5 6 7; do printf "\\x$(printf %02x $(((n >> (8 * i)) & 255)))"; done
    printf '%s' "$header"
    head -c "$offset" /dev/zero
  } >"$1"
}

# Cases that train need the real data set; without it they are skipped (exit 77), naming the
# package, or fail under KILN_REQUIRE_TEST_DEPS=1 (tests/common/test_deps.sh).
if [[ $case == train_smoke || $case == train_bf16 || $case == interrupt || $case == graph_train || $case == graph_eval ||
      $case == eval_interrupt ]] && [[ ! -d /usr/share/datasets/fashion-mnist ]]; then
  missing_dep dataset-fashion-mnist "no Fashion-MNIST in /usr/share/datasets/fashion-mnist"
fi

case $case in
help)
  run 0 --help
  contains "$out" "train" "kiln --help"
  contains "$out" "devices" "kiln --help"
  for cmd in devices train eval; do
    run 0 "$cmd" --help
    contains "$out" "usage: kiln $cmd" "kiln $cmd --help"
  done
  run 0 train --help
  for flag in "--epochs N" "(default: 5)" "--batch-size B" "(default: 128)" "--lr X" "--optimizer sgd|adam|adamw|rmsprop" \
              "--scheduler none|step|cosine|onecycle" "--val-fraction" "--data-dir" "--threads" "--out" "--resume" \
              "--limit-batches" "--seed" "--device"; do
    contains "$out" "$flag" "kiln train --help"
  done
  run 0 eval --help
  contains "$out" "--model-file" "kiln eval --help"
  ;;
usage)
  run 2; contains "$err" "usage: kiln" "kiln without a command"
  run 2 frobnicate; contains "$err" "unknown command 'frobnicate'" "unknown command"; one_line "$err" "stderr"
  run 2 train --bogus; contains "$err" "unknown flag --bogus" "unknown flag"; one_line "$err" "stderr"
  run 2 train --epochs x; contains "$err" "--epochs expects an integer" "bad integer"; one_line "$err" "stderr"
  run 2 train --epochs; contains "$err" "--epochs needs a value" "missing value"
  run 2 train --optimizer lbfgs; contains "$err" "sgd, adam, adamw, rmsprop" "bad choice"
  run 2 train --lr -1; contains "$err" "--lr expects a number" "negative lr"
  run 2 train --resume; contains "$err" "--resume needs --out" "resume without out"
  run 2 eval; contains "$err" "--model-file" "eval without a file"
  # A flag of one value given twice is refused in every command (the last one used to win silently);
  # a repeatable one (kiln run --input) is not.
  run 2 predict --run "$work/r" --input a.csv --input b.csv
  contains "$err" "kiln predict: --input given twice ('a.csv' and 'b.csv'); it takes one value" "predict --input twice"
  one_line "$err" "stderr"
  run 2 train --epochs 1 --epochs=2; contains "$err" "kiln train: --epochs given twice ('1' and '2')" "train --epochs twice"
  run 2 train --resume --out "$work/r" --resume; contains "$err" "kiln train: --resume given twice" "a switch twice"
  run 1 run "$work/none.onnx" --input "$work/a" --input "$work/b"  # the missing model, not the flags
  [[ $err != *"given twice"* ]] || fail "kiln run's repeatable --input refused: $err"
  # kiln quantize: a learning rate must be > 0 and finite; QAT's flags without --qat-epochs are refused
  # (they were silently ignored). Both before the model file is read.
  q=(quantize --model-file "$work/none.safetensors" --out "$work/q")
  for lr in 0 -0.001 nan inf; do
    run 2 "${q[@]}" --qat-epochs 1 --lr "$lr"; contains "$err" "--lr expects a number in (0, 1e+06], got '$lr'" "quantize --lr $lr"
    one_line "$err" "stderr"
  done
  run 2 "${q[@]}" --lr 0.01; contains "$err" "--lr is for quantization-aware training: it needs --qat-epochs K" "quantize --lr without --qat-epochs"
  run 2 "${q[@]}" --qat-epochs 0 --seed 3 --no-float-finetune
  contains "$err" "--seed, --no-float-finetune are for quantization-aware training: they need --qat-epochs K" "quantize --qat-epochs 0 --seed"
  ;;
bad_model)
  run 2 train --model nope
  contains "$err" "nope" "unknown model"; contains "$err" "mlp, cnn" "unknown model"; one_line "$err" "stderr"
  ;;
bad_device)  # a malformed or absent --device is a mistake on the command line (exit 2), as in kiln-studio --headless
  lists_devices() { grep -Eq 'devices found: ([a-z]+:[0-9]+, )*cpu(, |$)' <<<"$err" || fail "$1: no list of the devices found: $err"; }
  run 2 train --device tpu:0
  contains "$err" "kiln train: --device tpu:0: unknown device 'tpu:0'" "bad device"
  lists_devices "bad device"; one_line "$err" "stderr"
  run 2 train --device cuda:7 --model mlp
  contains "$err" "kiln train: --device cuda:7: " "absent device"; lists_devices "absent device"
  # Before the run directory, model file or data are read (those would be exit 1).
  run 2 train --device cpu:1 --out "$work/none" --resume
  contains "$err" "kiln train: --device cpu:1: unknown device 'cpu:1'; devices found: " "train --device cpu:1"
  run 2 eval --model-file "$work/none.safetensors" --device tpu:
  contains "$err" "kiln eval: --device tpu:: bad device name 'tpu:'" "eval --device tpu:"
  lists_devices "eval --device tpu:"; one_line "$err" "stderr"
  run 2 predict --run "$work/none" --input "$work/none.csv" --device gpu
  contains "$err" "kiln predict: --device gpu: unknown device 'gpu'" "predict --device gpu"
  lists_devices "predict --device gpu"; one_line "$err" "stderr"
  run 2 explain --run "$work/none" --image "$work/none.png" --out "$work/x.png" --device cpu:2
  contains "$err" "kiln explain: --device cpu:2: unknown device 'cpu:2'; devices found: " "explain --device cpu:2"
  run 2 bench --devices cpu,tpu --steps 1; contains "$err" "kiln bench: --devices: unknown device 'tpu'" "bench --devices tpu"
  lists_devices "bench --devices tpu"; one_line "$err" "stderr"
  run 2 bench --graph "$work/none.json" --devices tpu:0
  contains "$err" "kiln bench: --devices: unknown device 'tpu:0'" "bench --graph --devices tpu:0"
  lists_devices "bench --graph --devices tpu:0"
  run 2 analyze --devices cpu:9; contains "$err" "kiln analyze: --devices: unknown device 'cpu:9'" "analyze --devices cpu:9"
  if "$kiln" --help | grep -q '^  run '; then  # the ONNX commands, when kiln is built with engine/onnx
    run 2 run "$work/none.onnx" --device tpu:0; contains "$err" "kiln run: --device tpu:0: unknown device" "run --device tpu:0"
    run 2 onnx-suite "$work" --device tpu:0
    contains "$err" "kiln onnx-suite: --device tpu:0: unknown device" "onnx-suite --device tpu:0"
  fi
  # KILN_DEVICE is not the command line: an engine error (exit 1).
  KILN_DEVICE=nope:3 run 1 devices
  contains "$err" "KILN_DEVICE" "bad KILN_DEVICE"
  ;;
devices)
  run 0 devices
  contains "$out" "compute units" "kiln devices"; contains "$out" "cpu" "kiln devices"
  contains "$out" "default: " "kiln devices"
  KILN_DEVICE=cpu run 0 devices
  contains "$out" "default: cpu (from KILN_DEVICE=cpu)" "kiln devices with KILN_DEVICE"
  # app/omp_wait.h: kiln runs itself again with GOMP_SPINCOUNT=1000 unless the user chose the wait.
  unset GOMP_SPINCOUNT OMP_WAIT_POLICY
  run 0 devices
  contains "$out" "cpu idle wait: GOMP_SPINCOUNT=1000" "kiln devices: the short OpenMP spin"
  GOMP_SPINCOUNT=20000 run 0 devices
  contains "$out" "cpu idle wait: GOMP_SPINCOUNT=20000" "kiln devices: the user's GOMP_SPINCOUNT kept"
  OMP_WAIT_POLICY=active run 0 devices
  contains "$out" "cpu idle wait: OMP_WAIT_POLICY=active" "kiln devices: the user's OMP_WAIT_POLICY kept"
  ;;
eval_missing)
  run 1 eval --model-file /nonexistent/model.safetensors
  contains "$err" "kiln: error:" "missing file"; contains "$err" "/nonexistent/model.safetensors" "missing file"
  one_line "$err" "stderr"
  ;;
eval_wrong_shapes)
  write_wrong_shapes "$work/wrong.safetensors"
  run 1 eval --model-file "$work/wrong.safetensors"
  contains "$err" "load_state_dict" "wrong shapes"; contains "$err" "1.weight" "wrong shapes"
  contains "$err" "wrong.safetensors" "wrong shapes"
  ;;
missing_data)
  run 1 train --data-dir /nonexistent --epochs 1
  contains "$err" "dataset-fashion-mnist" "missing data"; contains "$err" "/nonexistent" "missing data"
  ;;
train_bf16)
  # --precision bf16 on the CPU: bf16 where the CPU has bf16 dot products, else (and under
  # KILN_CPU_BF16=0, which pretends it has none) f32 with a note; training works either way.
  has_bf16=no
  grep -qwE 'avx512_bf16|amx_bf16' /proc/cpuinfo && has_bf16=yes
  run 0 train --model cnn --epochs 1 --batch-size 64 --limit-batches 3 --val-fraction 0.1 --seed 3 --precision bf16 \
    --out "$work/bf16"
  summary=$(cat "$work/bf16/summary.json" 2>/dev/null)
  if [[ $has_bf16 == yes ]]; then
    contains "$summary" '"precision": "bf16"' "summary.json of a bf16 run on a CPU with avx512_bf16"
  else
    contains "$summary" '"precision": "f32"' "summary.json of a bf16 run on a CPU without bf16"
    contains "$err" "no bf16 dot products" "the note of a CPU without bf16"
  fi
  export KILN_CPU_BF16=0
  run 0 train --model cnn --epochs 1 --batch-size 64 --limit-batches 3 --val-fraction 0.1 --seed 3 --precision bf16 \
    --out "$work/fallback"
  unset KILN_CPU_BF16
  contains "$(cat "$work/fallback/summary.json" 2>/dev/null)" '"precision": "f32"' "summary.json under KILN_CPU_BF16=0"
  contains "$err" "KILN_CPU_BF16=0" "the note under KILN_CPU_BF16=0"
  contains "$out" "test accuracy" "the final line under KILN_CPU_BF16=0"
  ;;
train_smoke)
  run 0 train --model mlp --epochs 1 --batch-size 256 --limit-batches 4 --val-fraction 0.1 --seed 3 --out "$work/run"
  for f in model.safetensors metrics.csv summary.json checkpoint; do
    [[ -e $work/run/$f ]] || fail "train did not write $f"
  done
  summary=$(cat "$work/run/summary.json" 2>/dev/null)
  for key in model dataset test_accuracy test_loss epochs batch_size optimizer lr seed images_per_second device \
             seconds parameters peak_memory_bytes; do
    contains "$summary" "\"$key\":" "summary.json"
  done
  contains "$summary" '"parameters": 235146' "summary.json"
  contains "$out" "test accuracy" "the final line"
  csv=$(cat "$work/run/metrics.csv")
  contains "$csv" "epoch,step,kind,loss,accuracy,lr,samples_per_second" "metrics.csv"
  contains "$csv" "1,4,batch," "metrics.csv"; contains "$csv" "1,4,train," "metrics.csv"; contains "$csv" "1,4,val," "metrics.csv"
  # the weights load back, and a second epoch continues from the checkpoint
  run 0 eval --model-file "$work/run/model.safetensors"
  contains "$out" "accuracy" "kiln eval"; contains "$out" "Ankle boot" "kiln eval"; contains "$out" "top-5" "kiln eval"
  run 1 eval --model-file "$work/run/model.safetensors" --model cnn
  contains "$err" "load_state_dict" "eval of mlp weights as a cnn"
  run 0 train --model mlp --epochs 2 --batch-size 256 --limit-batches 4 --val-fraction 0.1 --seed 3 --out "$work/run" --resume
  csv=$(cat "$work/run/metrics.csv")
  contains "$csv" "2,8,train," "metrics.csv after --resume"
  [[ $(grep -c ',train,' "$work/run/metrics.csv") == 2 ]] || fail "metrics.csv after --resume: $(cat "$work/run/metrics.csv")"
  # a finished run is neither overwritten without --resume nor "resumed" to fewer epochs
  sum=$(md5sum "$work/run/model.safetensors")
  run 1 train --model mlp --epochs 1 --limit-batches 4 --out "$work/run"
  contains "$err" "already holds a run" "train into an existing run"
  run 1 train --model mlp --epochs 2 --batch-size 256 --limit-batches 4 --val-fraction 0.1 --seed 3 --out "$work/run" --resume
  contains "$err" "has already trained 2 epochs" "resume to no more epochs"
  run 1 train --model mlp --epochs 3 --batch-size 64 --limit-batches 4 --val-fraction 0.1 --seed 3 --out "$work/run" --resume
  contains "$err" "was made with batch_size = 256, not 64" "resume with other settings"
  [[ $(md5sum "$work/run/model.safetensors") == "$sum" ]] || fail "a refused run changed model.safetensors"
  ;;
interrupt)
  set -m  # background jobs keep SIGINT
  "$kiln" train --model mlp --epochs 100000 --batch-size 64 --limit-batches 2 --out "$work/run" >"$work/out" 2>"$work/err" &
  pid=$!
  for _ in $(seq 200); do
    [[ -e $work/run/checkpoint/trainer.json ]] && break
    kill -0 "$pid" 2>/dev/null || break  # it ended early (an error)
    sleep 0.1
  done
  [[ -e $work/run/checkpoint/trainer.json ]] || fail "no checkpoint appeared"
  kill -INT "$pid"
  wait "$pid"; status=$?
  [[ $status == 130 ]] || fail "after SIGINT kiln exited $status, expected 130; stderr: $(cat "$work/err")"
  contains "$(cat "$work/err")" "cancelled" "stderr after SIGINT"
  [[ -e $work/run/checkpoint/trainer.json ]] || fail "the checkpoint is gone after SIGINT"
  ;;
graph_bad)  # kiln train --graph refuses a graph that cannot run, before reading any data
  templates=$(dirname "$0")/../../projects/templates
  run 1 train --graph "$work/none.json"
  contains "$err" "cannot open graph file '$work/none.json'" "missing graph"
  printf '{"format": "kiln-graph", "version": 1,' >"$work/cut.json"
  run 1 train --graph "$work/cut.json"
  contains "$err" "graph JSON: not valid JSON" "truncated graph"; contains "$err" "cut.json" "truncated graph"
  # the MLP template without its Flatten: fc1 gets images
  sed -e 's/"node": 2, "port": 0}, "to": {"node": 3/"node": 1, "port": 0}, "to": {"node": 3/' \
      -e 's/{"from": {"node": 1, "port": 0}, "to": {"node": 2, "port": 0}},//' "$templates/fashion_mnist_mlp.json" >"$work/noflat.json"
  run 1 train --graph "$work/noflat.json" --data-dir /nonexistent
  contains "$err" "the graph cannot be trained:" "invalid graph"
  contains "$err" "'fc1': Linear expects input features 784, got [N, 1, 28, 28] (flatten first?)" "invalid graph"
  contains "$err" "'flatten': input 'in' is not connected" "invalid graph"
  run 2 train --graph "$templates/fashion_mnist_cnn.json" --model cnn
  contains "$err" "--graph and --model are exclusive" "graph and model"
  ;;
graph_train)
  templates=$(dirname "$0")/../../projects/templates
  run 0 train --graph "$templates/residual_cnn.json" --epochs 1 --batch-size 32 --limit-batches 2 --out "$work/run"
  summary=$(cat "$work/run/summary.json" 2>/dev/null)
  contains "$summary" '"model": "graph-residual_cnn"' "summary.json"; contains "$summary" '"parameters": 19706' "summary.json"
  contains "$out" "test accuracy" "the final line"
  sed -e 's/"shape": \[1, 28, 28\]/"shape": [784]/' \
      "$templates/fashion_mnist_mlp.json" >"$work/flat_input.json"
  run 1 train --graph "$work/flat_input.json" --epochs 1 --limit-batches 1 --out "$work/run2"
  contains "$err" "the graph's input is [N, 784] but fashion-mnist images are [N, 1, 28, 28]" "input that does not fit"
  ;;
graph_eval)  # a run trained from a graph keeps it, and `kiln eval` rebuilds the network from it
  templates=$(dirname "$0")/../../projects/templates
  run 0 train --graph "$templates/fashion_mnist_mlp.json" --epochs 1 --batch-size 32 --limit-batches 2 --out "$work/run"
  [[ -f $work/run/graph.json ]] || fail "the run did not keep graph.json"
  contains "$(cat "$work/run/summary.json")" '"graph": "graph.json"' "summary.json"
  run 0 eval --model-file "$work/run/model.safetensors" --batch-size 500
  contains "$out" "graph $work/run/graph.json" "kiln eval of a graph run"; contains "$out" "accuracy" "kiln eval of a graph run"
  contains "$out" "Ankle boot" "kiln eval of a graph run"
  # the weights alone: the file names its graph, which is missing; --graph gives it
  mkdir "$work/alone" && cp "$work/run/model.safetensors" "$work/alone/"
  run 1 eval --model-file "$work/alone/model.safetensors"
  contains "$err" "$work/alone/graph.json, which is missing; pass the graph with --graph" "eval without graph.json"
  run 0 eval --model-file "$work/alone/model.safetensors" --graph "$templates/fashion_mnist_mlp.json" --batch-size 500
  contains "$out" "accuracy" "kiln eval --graph"
  # weights of another network
  run 1 eval --model-file "$work/alone/model.safetensors" --graph "$templates/residual_cnn.json"
  contains "$err" "load_state_dict" "eval with another graph"; contains "$err" "model.safetensors" "eval with another graph"
  run 2 eval --model-file "$work/alone/model.safetensors" --graph "$templates/fashion_mnist_mlp.json" --model mlp
  contains "$err" "--graph and --model are exclusive" "eval --graph --model"
  ;;
eval_interrupt)  # Ctrl-C during `kiln eval` ends it with a message and status 130
  run 0 train --model mlp --epochs 1 --batch-size 64 --limit-batches 1 --out "$work/run"
  set -m  # background jobs keep SIGINT
  # Its own stderr file: $work/err holds the training's "evaluating on ..." line, which a slow
  # start of the background job let the wait loop below take for the eval's (CI saw it).
  "$kiln" eval --model-file "$work/run/model.safetensors" --batch-size 1 --threads 1 >"$work/out" 2>"$work/eval_err" &
  pid=$!
  for _ in $(seq 300); do
    grep -q "evaluating" "$work/eval_err" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  kill -INT "$pid"
  wait "$pid"; status=$?
  [[ $status == 130 ]] || fail "after SIGINT kiln eval exited $status, expected 130; stderr: $(cat "$work/eval_err")"
  contains "$(cat "$work/eval_err")" "evaluation interrupted after" "stderr after SIGINT"
  [[ ! -s $work/out ]] || fail "an interrupted eval printed results: $(cat "$work/out")"
  ;;
version)
  want=$(sed -n 's/^project(Kiln VERSION \([0-9.]*\).*/\1/p' "$(dirname "$0")/../../CMakeLists.txt")
  [[ -n $want ]] || fail "no project version in CMakeLists.txt"
  run 0 --version; [[ $out == "kiln $want" ]] || fail "kiln --version printed '$out', expected 'kiln $want'"
  run 0 --help; contains "$out" "--version" "kiln --help"
  ;;
dir_args)  # a folder where a file is expected (and the reverse) is named as such
  mkdir -p "$work/dir"; : >"$work/file"
  run 2 train --graph "$work/dir"; contains "$err" "--graph: '$work/dir' is a directory, not a file" "train --graph DIR"
  one_line "$err" "stderr"
  run 2 eval --model-file "$work/dir"; contains "$err" "'$work/dir' is a directory, not a file" "eval --model-file DIR"
  run 2 eval --model-file "$work/file" --graph "$work/dir"; contains "$err" "is a directory, not a file" "eval --graph DIR"
  run 2 train --out "$work/file"; contains "$err" "--out: '$work/file' is a file, not a directory" "train --out FILE"
  if "$kiln" --help | grep -q "^  export "; then
    run 2 export "$work/file" --out "$work/dir"; contains "$err" "is a directory, not a file" "export --out DIR"
    run 2 codegen "$work/file" --out "$work/file"; contains "$err" "is a file, not a directory" "codegen --out FILE"
    run 1 codegen "$work/dir" --out "$work/gen"; contains "$err" "$work/dir is a directory" "kiln codegen DIR"
    run 1 import "$work/dir"; contains "$err" "$work/dir is a directory" "kiln import DIR"
    run 1 export "$work/dir" --out "$work/x.onnx"; contains "$err" "$work/dir is a directory" "kiln export DIR"
    relu=/usr/share/libonnx-testdata/data/node/test_relu/model.onnx
    if [[ -f $relu ]]; then
      run 1 run "$relu" --input "$work/dir"; contains "$err" "$work/dir is a directory, not a .npy file" "kiln run --input DIR"
    fi
  fi
  ;;
device_reason)  # a GPU device whose backend is missing gives the registry's reason, not "unknown device"
  run 0 devices
  checked=0
  for family in cuda hip vulkan; do
    why=$(printf '%s\n' "$out" | sed -n "s/^unavailable: $family: //p" | head -n1)
    [[ -n $why ]] || continue
    case $family in cuda) shown=CUDA ;; hip) shown=HIP ;; vulkan) shown=Vulkan ;; esac
    devices_out=$out
    run 2 eval --model-file /nonexistent.safetensors --device "$family:0"
    contains "$err" "$shown backend unavailable: $why" "--device $family:0"; one_line "$err" "stderr"
    run 2 train --device "$family:0" --epochs 1
    contains "$err" "$shown backend unavailable" "train --device $family:0"
    out=$devices_out checked=$((checked + 1))
  done
  run 2 train --device cpu:3; contains "$err" "unknown device 'cpu:3'" "absent CPU device"
  [[ $checked -gt 0 ]] || { echo "SKIP: every GPU backend is available here"; exit 77; }
  ;;
*)
  echo "unknown case $case"; exit 2 ;;
esac
[[ $failures == 0 ]] && echo "ok: $case" || exit 1
