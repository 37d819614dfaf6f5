#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Kiln Studio on the GPU machine (Ubuntu, no Qt, no apt): Debian's Qt 6 and the Studio's other
# build dependencies carried as packages, beside ../shared/tools/gpu-debs.sh's (which it needs too).
#
#   tests/bench/gpu_studio_debs.sh fetch    here, once: downloads the packages into ./.gpu-qt
#                                           (about 27 MB; git ignores the folder)
#   tests/bench/gpu_studio_debs.sh unpack  
#                                           there, after gpu-debs.sh's unpack, with carry
#                                           [".gpu-debs", ".gpu-qt"]; then configure as usual
#                                           (KILN_STUDIO ON, OpenCV off) and run with
#                                           QT_QPA_PLATFORM=offscreen
# Two things the plain `dpkg -x` of gpu-debs.sh would get wrong there: a package that ships /lib
# (libdbus-1-3) replaces Ubuntu's /lib -> usr/lib link and breaks the linker, so each package is
# unpacked aside and merged into /usr; and Qt's CMake packages import tools of packages not carried
# (qtpaths, androiddeployqt, ...), which CMake refuses when absent, so those are stubbed.
set -u
top=$(git rev-parse --show-toplevel 2>/dev/null || pwd)
case "${1:-}" in
  fetch)
    set -e
    cd "$top"
    grep -qx '/.gpu-qt/' .git/info/exclude 2>/dev/null || echo '/.gpu-qt/' >> .git/info/exclude
    mkdir -p .gpu-qt /tmp/amd64-lists/partial
    o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64-lists'
    apt-get $o update >/dev/null
    cd .gpu-qt
    apt-get $o download libqt6core6 libqt6gui6 libqt6widgets6 libqt6test6 libqt6svg6 libqt6concurrent6 \
      libqt6printsupport6 libqt6dbus6 libqt6network6 libqt6opengl6 libqt6openglwidgets6 libqt6sql6 libqt6xml6 \
      qt6-base-dev qt6-base-dev-tools qt6-svg-dev qmake6 libqcustomplot-dev libqcustomplot2.1-qt6 libsqlite3-dev \
      libicu72 libdouble-conversion3 libb2-1 libpcre2-16-0 libmd4c0 libxkbcommon0 libxkbcommon-dev libfontconfig1 \
      fontconfig-config libfreetype6 libharfbuzz0b libgraphite2-3 libglib2.0-0 libdbus-1-3 \
      libgl-dev libegl-dev libglx-dev libopengl-dev libgles-dev 2>&1 | grep -v '^W:' || true
    du -sh .
    ;;
  unpack)
    for f in "$top"/.gpu-qt/*.deb; do
      rm -rf /tmp/gpu-qt-x && dpkg -x "$f" /tmp/gpu-qt-x
      if [[ -d /tmp/gpu-qt-x/lib ]]; then cp -a /tmp/gpu-qt-x/lib/. /usr/lib/ && rm -rf /tmp/gpu-qt-x/lib; fi
      cp -a /tmp/gpu-qt-x/. /
    done
    rm -rf /tmp/gpu-qt-x
    ldconfig
    for f in $(grep -ho 'IMPORTED_LOCATION_NONE "[^"]*"' /usr/lib/x86_64-linux-gnu/cmake/Qt6*Tools/*Targets*.cmake |
               cut -d'"' -f2 | sed 's|${_IMPORT_PREFIX}|/usr|'); do
      [[ -e $f ]] || { mkdir -p "$(dirname "$f")" && ln -s /bin/false "$f"; }
    done
    echo "unpacked $(ls "$top"/.gpu-qt/*.deb | wc -l) Qt packages"
    ;;
  *) sed -n '3,16s/^# \{0,1\}//p' "$0"; exit 2 ;;
esac
