#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Training throughput, Kiln vs PyTorch on the CPU: Fashion-MNIST, batch 128, Adam (lr 1e-3),
# the reference mlp and cnn, the same thread count on both sides. Prints images/s (training
# time only) and the ratio Kiln / best PyTorch. A benchmark, not a test: it prints figures.
#
#   tests/bench/train_vs_pytorch.sh [-t THREADS] [-m "mlp cnn"] [-k path/to/kiln]
#
# PyTorch runs as installed and, on CPUs with AVX-512, with OPENBLAS_CORETYPE=SkylakeX
# (OpenBLAS 0.3.21 takes some VMs' CPUs for a Prescott); the better of the two is the anchor.
# PYTHON picks the interpreter (default: the first of python3, /usr/bin/python3 that has torch).
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/../.."

threads=$(nproc) models="mlp cnn" kiln=build/bin/kiln
while getopts "t:m:k:h" opt; do
  case $opt in
    t) threads=$OPTARG ;; m) models=$OPTARG ;; k) kiln=$OPTARG ;;
    *) sed -n '3,11s/^# \{0,1\}//p' "$0"; exit 2 ;;
  esac
done
data=/usr/share/datasets/fashion-mnist
[[ -f $data/train-images-idx3-ubyte.gz ]] || { echo "no Fashion-MNIST in $data: apt-get install dataset-fashion-mnist"; exit 1; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
status=0
json_field() { python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))[sys.argv[2]]))' "$1" "$2"; }

echo "Fashion-MNIST training, batch 128, Adam lr 1e-3, $threads threads; load average $(cut -d' ' -f1-3 /proc/loadavg)"

# ---- Kiln ----
declare -A kiln_ips pt_default pt_skx
for m in $models; do
  kiln_ips[$m]=n/a
  if [[ ! -x $kiln ]]; then
    echo "kiln: $kiln is missing; build it first (cmake --preset default && cmake --build --preset default)"
    status=1; continue
  fi
  echo "kiln: training $m for one epoch ..."
  if OMP_NUM_THREADS=$threads "$kiln" train --dataset fashion-mnist --model "$m" --epochs 1 --batch-size 128 \
       --optimizer adam --lr 0.001 --device cpu --seed 0 --out "$work/kiln-$m" >"$work/kiln-$m.log" 2>&1 \
     && kiln_ips[$m]=$(json_field "$work/kiln-$m/summary.json" images_per_second); then :
  else
    echo "kiln: training $m failed; its last lines:"; tail -n 15 "$work/kiln-$m.log"; status=1
  fi
done

# ---- PyTorch ----
python=
for p in ${PYTHON:-python3 /usr/bin/python3}; do
  if "$p" -c 'import torch' 2>/dev/null; then python=$p; break; fi
done
if [[ -z $python ]]; then
  for m in $models; do echo "$m: kiln ${kiln_ips[$m]} images/s"; done
  echo "python3-torch is not installed: apt-get install python3-torch"
  exit $status
fi

pytorch() { # model, OPENBLAS_CORETYPE or "" -> images/s on stdout; OpenBLAS core in $work/core
  rm -f "$work/core"
  local env=(OMP_NUM_THREADS="$threads" OPENBLAS_NUM_THREADS="$threads" OPENBLAS_VERBOSE=2)
  [[ -n $2 ]] && env+=(OPENBLAS_CORETYPE="$2")
  env -u OPENBLAS_CORETYPE "${env[@]}" "$python" tests/bench/pytorch_train.py --model "$1" \
      --threads "$threads" --batch-size 128 --lr 0.001 >"$work/pt.log" 2>&1 || { cat "$work/pt.log" >&2; return 1; }
  sed -n 's/^Core: *//p' "$work/pt.log" | head -n1 >"$work/core"
  tail -n1 "$work/pt.log" >"$work/pt.json"
  json_field "$work/pt.json" images_per_second
}
avx512=$(grep -qw avx512f /proc/cpuinfo && echo yes || echo no)
for m in $models; do
  echo "pytorch: training $m for one epoch (as installed) ..."
  pt_default[$m]=$(pytorch "$m" "") || { pt_default[$m]=n/a; status=1; }
  core=$(cat "$work/core" 2>/dev/null || true)
  [[ -n $core ]] || echo "pytorch: OpenBLAS did not report its core; if libblas.so.3 is the reference BLAS the anchor is far too slow: apt-get install libopenblas0-pthread"
  pt_skx[$m]=-
  if [[ $avx512 == yes && $core == SkylakeX ]]; then
    pt_skx[$m]="= default"; echo "pytorch: OpenBLAS chose SkylakeX by itself; no second run"
  elif [[ $avx512 == yes ]]; then
    echo "pytorch: training $m for one epoch (OPENBLAS_CORETYPE=SkylakeX; detected: ${core:-?}) ..."
    pt_skx[$m]=$(pytorch "$m" SkylakeX) || { pt_skx[$m]=n/a; status=1; }
  fi
done

echo
printf '%-5s %12s %16s %20s %22s\n' model "kiln img/s" "pytorch img/s" "pytorch SkylakeX" "kiln / best pytorch"
for m in $models; do
  best=${pt_default[$m]}
  [[ ${pt_skx[$m]} =~ ^[0-9]+$ && ( ! $best =~ ^[0-9]+$ || ${pt_skx[$m]} -gt $best ) ]] && best=${pt_skx[$m]}
  ratio=n/a
  [[ ${kiln_ips[$m]} =~ ^[0-9]+$ && $best =~ ^[0-9]+$ ]] && ratio=$(python3 -c "print(f'{${kiln_ips[$m]}/$best:.2f}')")
  printf '%-5s %12s %16s %20s %22s\n' "$m" "${kiln_ips[$m]}" "${pt_default[$m]}" "${pt_skx[$m]}" "$ratio"
done
[[ $avx512 == yes ]] || echo "(no AVX-512 on this CPU: PyTorch ran as installed only)"
exit $status
