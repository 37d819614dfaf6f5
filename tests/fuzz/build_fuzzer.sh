# SPDX-License-Identifier: GPL-3.0-or-later
# Sourced by tests/fuzz/run*.sh: builds one libFuzzer target with Debian's clang
# (-fsanitize=fuzzer,address; libFuzzer comes with clang's runtime, libclang-rt-14-dev).
#   build_fuzzer OUT NAME "SOURCES" "HEADER_DIRS" "EXTRA_CXXFLAGS" LINK_ARGS...
# compiles each of SOURCES instrumented into OUT/obj (again when it or a header under
# HEADER_DIRS is newer than its object) and links OUT/NAME against BUILD's libkiln.so.
# Needs BUILD and SRC set by the caller; SOURCES and HEADER_DIRS are split on spaces (no spaces
# in the source tree's path).
build_fuzzer() {
  local out=$1 name=$2 sources=$3 header_dirs=$4 extra=$5 f o
  shift 5
  [ -f "$BUILD/lib/libkiln.so" ] || { echo "build the engine first: cmake --build $BUILD --target kiln_engine"; exit 2; }
  mkdir -p "$out/obj" "$out/corpus" "$out/seeds"
  local flags="-std=c++20 -O1 -g -fsanitize=fuzzer-no-link,address -fno-omit-frame-pointer -I$SRC $extra"
  local objs=()
  for f in $sources; do
    o="$out/obj/$(basename "${f%.cpp}").o"
    # shellcheck disable=SC2086
    if [ ! -f "$o" ] || [ "$f" -nt "$o" ] || [ -n "$(find $header_dirs -name '*.h' -newer "$o" -print -quit)" ]; then
      echo "compiling $(basename "$f")"
      ${CXX:-clang++} $flags -c "$f" -o "$o"
    fi
    objs+=("$o")
  done
  ${CXX:-clang++} -fsanitize=fuzzer,address "${objs[@]}" -o "$out/$name" -L"$BUILD/lib" -Wl,-rpath,"$BUILD/lib" -lkiln "$@"
}
