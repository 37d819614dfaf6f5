#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Training throughput, Kiln vs PyTorch on the CPU: Fashion-MNIST, batch 128, Adam (lr 1e-3),
# the reference mlp and cnn, the same thread count on both sides. Prints images/s (training
# time only) and the ratio Kiln / best PyTorch, then the whole process of each side: wall
# time and CPU-seconds (user + system) of `kiln train --epochs 1` and of the PyTorch script's
# epoch (loading the data included; Kiln also evaluates the validation and test sets), the
# median of 3 paired runs (-q: one run, for quick checks). A benchmark, not a test: it prints figures.
#
#   tests/bench/train_vs_pytorch.sh [-t THREADS] [-m "mlp cnn"] [-k path/to/kiln] [-q]
#
# PyTorch runs as installed and, on CPUs with AVX-512, with OPENBLAS_CORETYPE=SkylakeX
# (OpenBLAS 0.3.21 takes some VMs' CPUs for a Prescott); the better of the two is the anchor.
# PYTHON picks the interpreter (default: the first of python3, /usr/bin/python3 that has torch).
set -euo pipefail
# PyTorch's OpenMP threads wait as kiln's do (app/omp_wait.h), unless the caller chose.
[[ -n ${GOMP_SPINCOUNT:-}${OMP_WAIT_POLICY:-} ]] || export GOMP_SPINCOUNT=1000
cd "$(dirname "$(readlink -f "$0")")/../.."

threads=$(nproc) models="mlp cnn" kiln=build/bin/kiln runs=3
while getopts "t:m:k:qh" opt; do
  case $opt in
    t) threads=$OPTARG ;; m) models=$OPTARG ;; k) kiln=$OPTARG ;; q) runs=1 ;;
    *) sed -n '3,14s/^# \{0,1\}//p' "$0"; exit 2 ;;
  esac
done
data=/usr/share/datasets/fashion-mnist
[[ -f $data/train-images-idx3-ubyte.gz ]] || { echo "no Fashion-MNIST in $data: apt-get install dataset-fashion-mnist"; exit 1; }
[[ -x $kiln ]] || { echo "kiln: $kiln is missing; build it first (cmake --preset default && cmake --build --preset default)"; exit 1; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
status=0
json_field() { python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))[sys.argv[2]]))' "$1" "$2"; }
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
TIMEFORMAT='%R %U %S'  # bash's `time`: wall, user and system seconds of the command and its children
timed() { # OUTFILE COMMAND... -> the command's stdout+stderr in OUTFILE; "wall cpu" in $work/time
  local t
  { time "${@:2}" >"$1" 2>&1; } 2>"$work/time.raw" || { t=$?; tail -n 15 "$1"; return $t; }
  awk '{printf "%.1f %.1f\n", $1, $2 + $3}' "$work/time.raw" >"$work/time"
}

python=
for p in ${PYTHON:-python3 /usr/bin/python3}; do
  if "$p" -c 'import torch' 2>/dev/null; then python=$p; break; fi
done
[[ -n $python ]] || echo "python3-torch is not installed (apt-get install python3-torch): Kiln's side only"
avx512=$(grep -qw avx512f /proc/cpuinfo && echo yes || echo no)

echo "Fashion-MNIST training, batch 128, Adam lr 1e-3, $threads threads, $runs paired run(s); load average $(cut -d' ' -f1-3 /proc/loadavg)"

kiln_run() { # model -> images/s in $work/ips, wall and CPU in $work/time
  OMP_NUM_THREADS=$threads timed "$work/kiln.log" "$kiln" train --dataset fashion-mnist --model "$1" --epochs 1 \
    --batch-size 128 --optimizer adam --lr 0.001 --device cpu --seed 0 --threads "$threads" --out "$work/kiln-run" \
    || return 1
  json_field "$work/kiln-run/summary.json" images_per_second >"$work/ips"
  rm -rf "$work/kiln-run"
}
pytorch_run() { # model, OPENBLAS_CORETYPE or "" -> images/s in $work/ips, wall and CPU in $work/time; core in $work/core
  rm -f "$work/core"
  local env=(OMP_NUM_THREADS="$threads" OPENBLAS_NUM_THREADS="$threads" OPENBLAS_VERBOSE=2)
  [[ -n $2 ]] && env+=(OPENBLAS_CORETYPE="$2")
  timed "$work/pt.log" env -u OPENBLAS_CORETYPE "${env[@]}" "$python" tests/bench/pytorch_train.py --model "$1" \
      --threads "$threads" --batch-size 128 --lr 0.001 || return 1
  sed -n 's/^Core: *//p' "$work/pt.log" | head -n1 >"$work/core"
  tail -n1 "$work/pt.log" >"$work/pt.json"
  json_field "$work/pt.json" images_per_second >"$work/ips"
}

declare -A ips wall cpu
for m in $models; do
  for side in kiln pt pt_skx; do ips[$side,$m]=""; wall[$side,$m]=""; cpu[$side,$m]=""; done
  skx=no
  for ((r = 1; r <= runs; ++r)); do
    echo "run $r/$runs: kiln trains $m for one epoch ..."
    if kiln_run "$m"; then
      ips[kiln,$m]+=" $(cat "$work/ips")"; read -r w c <"$work/time"; wall[kiln,$m]+=" $w"; cpu[kiln,$m]+=" $c"
    else
      echo "kiln: training $m failed"; status=1
    fi
    [[ -n $python ]] || continue
    echo "run $r/$runs: pytorch trains $m for one epoch (as installed) ..."
    if pytorch_run "$m" ""; then
      ips[pt,$m]+=" $(cat "$work/ips")"; read -r w c <"$work/time"; wall[pt,$m]+=" $w"; cpu[pt,$m]+=" $c"
    else
      status=1
    fi
    core=$(cat "$work/core" 2>/dev/null || true)
    if ((r == 1)); then
      [[ -n $core ]] || echo "pytorch: OpenBLAS did not report its core; if libblas.so.3 is the reference BLAS the anchor is far too slow: apt-get install libopenblas0-pthread"
      [[ $avx512 == yes && $core != SkylakeX ]] && skx=yes
      [[ $avx512 == yes && $core == SkylakeX ]] && echo "pytorch: OpenBLAS chose SkylakeX by itself; no second run"
    fi
    if [[ $skx == yes ]]; then
      echo "run $r/$runs: pytorch trains $m for one epoch (OPENBLAS_CORETYPE=SkylakeX; detected: ${core:-?}) ..."
      if pytorch_run "$m" SkylakeX; then
        ips[pt_skx,$m]+=" $(cat "$work/ips")"; read -r w c <"$work/time"; wall[pt_skx,$m]+=" $w"; cpu[pt_skx,$m]+=" $c"
      else
        status=1
      fi
    fi
  done
done

med() { [[ -n ${1// /} ]] && median $1 || echo n/a; }  # a list of numbers -> its median, or n/a
ratio() { [[ $1 != n/a && $2 != n/a ]] && python3 -c "print(f'{$1/$2:.2f}')" || echo n/a; }
echo
echo "training images/s (median of $runs):"
printf '%-5s %12s %16s %20s %22s\n' model "kiln img/s" "pytorch img/s" "pytorch SkylakeX" "kiln / best pytorch"
declare -A best
for m in $models; do
  k=$(med "${ips[kiln,$m]}") d=$(med "${ips[pt,$m]}") s=$(med "${ips[pt_skx,$m]}")
  best[$m]=pt
  [[ $s != n/a && ( $d == n/a || $s -gt $d ) ]] && best[$m]=pt_skx
  b=$(med "${ips[${best[$m]},$m]}")
  printf '%-5s %12s %16s %20s %22s\n' "$m" "$k" "$d" "$s" "$(ratio "$k" "$b")"
done
echo
echo "whole process, one epoch (median of $runs; PyTorch: its faster configuration by images/s):"
printf '%-5s %14s %14s %16s %16s %18s %20s\n' model "kiln wall s" "kiln CPU s" "pytorch wall s" "pytorch CPU s" \
  "speed (pt/kiln)" "kiln cores busy"
for m in $models; do
  kw=$(med "${wall[kiln,$m]}") kc=$(med "${cpu[kiln,$m]}")
  pw=$(med "${wall[${best[$m]},$m]}") pc=$(med "${cpu[${best[$m]},$m]}")
  printf '%-5s %14s %14s %16s %16s %18s %20s\n' "$m" "$kw" "$kc" "$pw" "$pc" "$(ratio "$pw" "$kw")" "$(ratio "$kc" "$kw")"
done
[[ $avx512 == yes ]] || echo "(no AVX-512 on this CPU: PyTorch ran as installed only)"
exit $status
