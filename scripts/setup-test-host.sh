#!/usr/bin/env bash
# What the slow tests need on a Debian host, installed if missing: podman with runc (crun fails
# on these hosts' cgroup layout; see builders/resources/containers/containers.conf), debootstrap, and the local base
# image the container tests build on; Debian's docker.io (dockerd, and a docker CLI with BuildKit
# built in; tests/integration/test_docker.py starts and stops its own daemon, none is started
# here); Debian's headless Chromium and its WebDriver, and
# axe-core from the npm registry, for the compatibility page's browser test; ccache (the compiler
# cache the builds use, and the tests measure); Debian's docker-registry (the CNCF distribution
# server: the local registry the release workflow's act run pushes its images to); binutils' readelf
# (the independent oracle of the RPATH tests); Redis (a shared compile cache on loopback, started by
# tests/integration/test_compile_cache.py on a free port) and bubblewrap (the sandbox of sccache-dist's build
# server in the distributed-compilation test). The table below is the one list: a test that finds one
# of these tools missing fails naming this script (tests/helpers.py's require_tool). Run by
# `nox -s tests` (and so by .ci/run); needs root only when something is missing. Idempotent
# and quiet: a second run installs nothing.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# Where the browser test finds axe-core (tests/integration/test_report_browser.py reads the same).
axe_dir=${BUILDERS_AXE_DIR:-$HOME/.cache/builders/axe}

# command -> the Debian package that provides it
declare -A package=(
  [podman]=podman [runc]=runc [debootstrap]=debootstrap [dockerd]=docker.io
  [chromium]=chromium [chromedriver]=chromium-driver [npm]=npm [ccache]=ccache [docker-registry]=docker-registry
  [readelf]=binutils [redis-server]=redis-server [redis-cli]=redis-tools [bwrap]=bubblewrap
)
missing=()
for tool in "${!package[@]}"; do
  command -v "$tool" >/dev/null 2>&1 || PATH="$PATH:/usr/sbin:/sbin" command -v "$tool" >/dev/null 2>&1 \
    || missing+=("${package[$tool]}")
done
if [ "${1:-}" = "--check" ]; then  # report only: what is missing, exit 1 if anything is
  [ -f "$axe_dir/node_modules/axe-core/axe.min.js" ] || missing+=("axe-core (npm, into $axe_dir)")
  [ "${#missing[@]}" -eq 0 ] && { echo "every tool is installed (${!package[*]}, axe-core)"; exit 0; }
  echo "missing: ${missing[*]}"; exit 1
fi
if [ "${#missing[@]}" -gt 0 ]; then
  echo "installing ${missing[*]} (apt)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ ! -f "$axe_dir/node_modules/axe-core/axe.min.js" ]; then
  echo "installing axe-core (npm) into $axe_dir"
  mkdir -p "$axe_dir"
  npm install --prefix "$axe_dir" --no-audit --no-fund --no-save --silent axe-core@4 >/dev/null
fi

if [ -n "${BUILDERS_SETUP_NO_BASE_IMAGE:-}" ]; then  # scripts/prove-setup.sh: no podman inside podman
  echo "not making the base image (BUILDERS_SETUP_NO_BASE_IMAGE is set)"
else
  "$here/scripts/podman-base.sh" localhost/builders-base:sid
fi
