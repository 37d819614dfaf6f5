#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# ctest `package_deb`: build the Debian packages of a Kiln build with CPack into a scratch
# folder, unpack them into a scratch root (dpkg -x, no installation) and check the layout,
# the control fields, the desktop metadata, that the unpacked `kiln` runs from there (its
# RUNPATH is relative to $ORIGIN), that a CMake project finds the unpacked engine with
# find_package(Kiln), and lintian (errors fail; skipped with a note when lintian is missing).
# usage: package.sh BUILD_DIR CONSUMER_SOURCE_DIR WORK_DIR
set -euo pipefail
build=$(readlink -f "$1") consumer_src=$(readlink -f "$2") work=$3
rm -rf "$work" && mkdir -p "$work" && work=$(readlink -f "$work")
fail() { echo "package.sh: FAIL: $*" >&2; exit 1; }
check() { [[ -e $root/$1 ]] || fail "missing /$1"; }

# gzip: quicker than the packages' xz, and the layout is the same.
cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/packages" \
      -D CPACK_DEBIAN_COMPRESSION_TYPE=gzip > "$work/cpack.log" 2>&1 || { cat "$work/cpack.log"; fail "cpack"; }
shopt -s nullglob
debs=("$work"/packages/*.deb)
core=("$work"/packages/kiln_*.deb)
((${#core[@]} == 1)) || fail "no kiln_<version>_<arch>.deb in ${debs[*]}"
echo "packages: ${debs[*]##*/}"

root=$work/root
for deb in "${debs[@]}"; do dpkg-deb -x "$deb" "$root"; done
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
lib=usr/lib/$multiarch
for f in usr/bin/kiln usr/bin/kiln-studio $lib/libkiln.so.0 $lib/libkiln.so $lib/kiln/libkiln_backend_vulkan.so \
         usr/include/kiln/engine/core/tensor.h $lib/cmake/Kiln/KilnConfig.cmake $lib/cmake/Kiln/KilnTargets.cmake \
         usr/share/applications/org.kiln.studio.desktop usr/share/metainfo/org.kiln.studio.metainfo.xml \
         usr/share/icons/hicolor/scalable/apps/org.kiln.studio.svg usr/share/man/man1/kiln.1.gz \
         usr/share/man/man1/kiln-studio.1.gz usr/share/doc/kiln/copyright usr/share/doc/kiln/changelog.gz; do
  check "$f"
done
[[ ! -e $root/usr/local ]] || fail "files under /usr/local"

# Control fields: Depends from dpkg-shlibdeps, the dataset as Recommends, the GPU plugins apart.
depends=$(dpkg-deb -f "${core[0]}" Depends)
recommends=$(dpkg-deb -f "${core[0]}" Recommends)
[[ $depends == *libdnnl* ]] || fail "kiln Depends lacks libdnnl: $depends"
[[ $depends == *libqt6widgets6* ]] || fail "kiln Depends lacks Qt: $depends"
[[ $recommends == *dataset-fashion-mnist* ]] || fail "kiln Recommends lacks dataset-fashion-mnist: $recommends"
contents=$(dpkg-deb -c "${core[0]}")  # (not piped into grep -q: pipefail and SIGPIPE)
grep -Eq 'libkiln_backend_(cuda|hip)' <<< "$contents" && fail "a CUDA or HIP plugin is in kiln"
version=$(dpkg-deb -f "${core[0]}" Version)
for part in cuda hip; do
  pkg=("$work"/packages/kiln-${part}_*.deb)
  ((${#pkg[@]})) || { echo "no kiln-$part package (backend not built)"; continue; }
  contents=$(dpkg-deb -c "${pkg[0]}")
  grep -q "libkiln_backend_$part.so" <<< "$contents" || fail "kiln-$part lacks its plugin"
  [[ $(dpkg-deb -f "${pkg[0]}" Depends) == *"kiln (= $version)"* ]] || fail "kiln-$part does not depend on kiln (= $version)"
  check "usr/share/doc/kiln-$part/copyright"
done
[[ $(gzip -dc "$root/usr/share/doc/kiln/changelog.gz" | head -1) == "kiln ($version)"* ]] ||
  fail "changelog.gz does not start with version $version"

if command -v desktop-file-validate > /dev/null; then
  desktop-file-validate "$root/usr/share/applications/org.kiln.studio.desktop" || fail "desktop-file-validate"
else
  echo "desktop-file-validate not installed (desktop-file-utils): skipped"
fi
if command -v appstreamcli > /dev/null; then
  appstreamcli validate --no-net "$root/usr/share/metainfo/org.kiln.studio.metainfo.xml" || fail "appstreamcli validate"
else
  echo "appstreamcli not installed (appstream): skipped"
fi
[[ $(gzip -dc "$root/usr/share/man/man1/kiln.1.gz") == *devices* ]] || fail "the man page does not list 'devices'"

# The unpacked programs run from the scratch root: libkiln and the plugins through $ORIGIN.
unset LD_LIBRARY_PATH KILN_BACKEND_DIR
[[ $("$root/usr/bin/kiln" --version) == "kiln ${version%%-*}" ]] || fail "kiln --version"
"$root/usr/bin/kiln" devices > "$work/devices.txt" 2>&1 || { cat "$work/devices.txt"; fail "kiln devices"; }
cat "$work/devices.txt"
grep -q "cpu" "$work/devices.txt" || fail "kiln devices lists no CPU"
# A packaged plugin may be unavailable for want of a GPU or driver, not because it was not
# found, was built against another libkiln, or could not load libkiln.
for so in "$root/$lib"/kiln/libkiln_backend_*.so; do
  name=${so##*/libkiln_backend_} name=${name%.so}
  grep -q "^unavailable: $name: not built" "$work/devices.txt" && fail "the packaged $name plugin was not found"
done
# (A backend that was not built at all says "not built (no libkiln_backend_X.so in ...)".)
grep -v ": not built (" "$work/devices.txt" | grep -E "different Kiln engine|libkiln[_a-z]*\.so" &&
  fail "a packaged plugin was refused"
[[ $("$root/usr/bin/kiln-studio" --headless --version) == "Kiln Studio"* ]] || fail "kiln-studio --version"

# find_package(Kiln) from the unpacked /usr.
cmake -S "$consumer_src" -B "$work/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$root/usr" > "$work/consumer.log" 2>&1 &&
  cmake --build "$work/consumer" >> "$work/consumer.log" 2>&1 || { cat "$work/consumer.log"; fail "consumer build"; }
grep -q "^Kiln_DIR:PATH=$root/$lib/cmake/Kiln" "$work/consumer/CMakeCache.txt" ||
  fail "the consumer did not find the unpacked Kiln"
"$work/consumer/consumer" || fail "the consumer did not run"

if command -v lintian > /dev/null; then
  # Errors fail; warnings are printed. The packages carry their overrides (installer/lintian-overrides).
  lintian --fail-on error --tag-display-limit 0 "${debs[@]}" || fail "lintian reported errors"
else
  echo "lintian not installed: skipped (installer/quickstart.sh test installs it)"
fi
rm -rf "$work/packages/_CPack_Packages" "$root"  # the staging copies; the .deb files stay
echo "package.sh: OK"
