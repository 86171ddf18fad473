#!/bin/sh
# Compilers, CMake, Ninja and the interpreters named in $PYTHONS, on a manylinux (dnf) or a
# Debian (apt) base. manylinux images already carry every CPython under /opt/python.
# $MAX_GCC (optional): the newest GCC the accelerator toolkit accepts as host compiler; when
# the base's default is newer, that version is installed and made the default c++/g++/gcc.
set -eu
if command -v apt-get >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  # A mirror snapshot may carry an expired Release file; its signatures are still checked.
  apt-get -o Acquire::Check-Valid-Until=false update -qq
  pkgs="g++ make cmake ninja-build git ca-certificates python3 python3-venv"
  for v in ${PYTHONS:-}; do
    if apt-cache show "python$v-dev" >/dev/null 2>&1; then
      pkgs="$pkgs python$v-dev python$v-venv"
    else
      echo "note: python$v is not packaged for this base; its targets will be skipped" >&2
    fi
  done
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $pkgs
  default_gcc=$(gcc -dumpversion | cut -d. -f1)
  if [ -n "${MAX_GCC:-}" ] && [ "$default_gcc" -gt "$MAX_GCC" ]; then
    apt-get install -y -qq --no-install-recommends "g++-$MAX_GCC"
    for tool in gcc g++ c++ cc; do
      real=gcc
      case $tool in g++|c++) real=g++ ;; esac
      ln -sf "/usr/bin/$real-$MAX_GCC" "/usr/local/bin/$tool"
    done
  fi
  rm -rf /var/lib/apt/lists/*
elif command -v dnf >/dev/null 2>&1; then
  dnf install -y -q git ninja-build cmake
  dnf clean all
else
  echo "unsupported base image: neither apt-get nor dnf found" >&2
  exit 1
fi
