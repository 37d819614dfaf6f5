#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# installer/quickstart.sh on bad ground, without touching this machine: a copy of the script
# runs with stand-ins for id, dpkg, dpkg-query, apt-get, sudo and cmake on PATH (each records
# its call), so every case is the same whether this runs as root or not.
#   test_quickstart.sh SOURCE_DIR CASE
# CASE: unknown | not_debian | no_root_no_sudo | interrupted_dpkg | apt_fails | sudo_user
set -uo pipefail
src=$1 case=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/kiln/installer" "$work/bin"
cp "$src/installer/quickstart.sh" "$work/kiln/installer/"
log=$work/calls
# The real tools the script needs, and nothing else from this machine.
for tool in bash cat cut sed grep dirname readlink env mkdir date uname; do
  ln -s "$(command -v $tool)" "$work/bin/$tool"
done
stub() {  # stub NAME BODY: a stand-in that logs its arguments, then runs BODY
  printf '#!%s\necho "%s $*" >> "%s"\n%s\n' "$(command -v bash)" "$1" "$log" "$2" > "$work/bin/$1"
  chmod +x "$work/bin/$1"
}
uid=0 audit= apt_rc=0
case $case in
  unknown | not_debian) ;;
  no_root_no_sudo) uid=1000 ;;
  interrupted_dpkg) audit='The following packages are only half configured: libfoo' ;;
  apt_fails) apt_rc=100 ;;
  sudo_user) uid=1000; stub sudo '"$@"' ;;
  *) echo "unknown case $case"; exit 2 ;;
esac
stub id "[[ \$1 == -u ]] && echo $uid || echo tester"
stub dpkg "[[ \$1 == --audit ]] && echo '$audit'; exit 0"
# Every package is missing except dataset-fashion-mnist, so the install path runs.
stub dpkg-query '[[ ${@: -1} == dataset-fashion-mnist ]] && printf "install ok installed"; exit 0'
stub apt-get "[[ \$1 == install ]] && exit $apt_rc; exit 0"
stub cmake 'exit 3'   # the build is not this test's business: stop right after the set-up
[[ $case == not_debian ]] && rm "$work/bin/apt-get" "$work/bin/dpkg-query"

out=$(PATH="$work/bin" bash "$work/kiln/installer/quickstart.sh" \
        "$([[ $case == unknown ]] && echo frobnicate || echo run)" 2>&1)
rc=$?
calls=$(cat "$log" 2>/dev/null)
fail() { printf 'FAIL (%s): %s\n--- output (exit %s):\n%s\n--- calls:\n%s\n' "$case" "$1" "$rc" "$out" "$calls"; exit 1; }
first=$(head -n 1 <<< "$out")
case $case in
  unknown)
    [[ $rc == 2 && $first == "quickstart: unknown subcommand 'frobnicate'"* ]] || fail "no one-line message, exit 2"
    grep -q 'usage: .*quickstart.sh run|test' <<< "$out" || fail "no usage line" ;;
  not_debian)
    [[ $rc == 1 && $first == "quickstart: this needs Debian 12 (apt-get and dpkg)"* ]] || fail "not refused" ;;
  no_root_no_sudo)
    [[ $rc == 1 && $first == "quickstart: installing "*" needs root: run this as root, or install sudo"* ]] ||
      fail "not refused with the reason"
    grep -q 'build-essential' <<< "$first" || fail "the message does not name the missing packages"
    grep -q '^apt-get\|^cmake' <<< "$calls" && fail "it went on after the refusal" ;;
  interrupted_dpkg)
    grep -n 'dpkg --configure -a' <<< "$calls" | grep -q . || fail "dpkg --configure -a was not run"
    [[ $(grep -n '' <<< "$calls" | grep -m1 'dpkg --configure -a' | cut -d: -f1) -lt \
       $(grep -n '' <<< "$calls" | grep -m1 'apt-get install' | cut -d: -f1) ]] || fail "apt-get ran before dpkg --configure -a"
    grep -q '^cmake --preset default' <<< "$calls" || fail "it did not go on to the build" ;;
  apt_fails)
    [[ $rc == 1 ]] && grep -q 'quickstart: apt-get could not install the packages above; nothing was built' <<< "$out" ||
      fail "an apt-get failure is not reported"
    grep -q '^cmake' <<< "$calls" && fail "it built after apt-get failed" ;;
  sudo_user)
    grep -q '^sudo apt-get update' <<< "$calls" && grep -q '^sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends .*ocl-icd-opencl-dev' <<< "$calls" ||
      fail "the packages were not installed through sudo"
    grep -q '^sudo cmake\|^sudo.*dataset-fashion-mnist' <<< "$calls" && fail "sudo was used beyond apt-get, or for an installed package"
    grep -q '^cmake --preset default' <<< "$calls" || fail "it did not build as the user" ;;
esac
echo "ok: $case"
