#!/bin/sh
# install-rocm.sh SOURCE PREFIX INDEX_URL REQUIREMENTS SYSTEM_PACKAGES: the ROCm toolkit of the
# rocm image, from the source named by the ROCM_SOURCE build argument (never guessed).
#   therock  TheRock's pinned wheels (REQUIREMENTS, newline-separated) into PREFIX: the release
#            path, exactly install-toolkit.sh.
#   debian   Debian's HIP toolchain (SYSTEM_PACKAGES, newline-separated) under /usr, from the
#            base image's own Debian mirror. Debian's HIP 7.2 is in the experimental suite: it is
#            enabled, but pinned so that only the ROCm stack comes from it (without the pin apt
#            would take glibc and the kernel headers from experimental too).
set -eu
source=$1 prefix=$2 index=$3 requirements=$4 packages=$5
here=$(dirname "$0")
case $source in
  therock) exec sh "$here/install-toolkit.sh" "$prefix" "$index" "$requirements" ;;
  debian) ;;
  *) echo "ROCM_SOURCE=$source is not a ROCm source: use therock (the default) or debian" >&2; exit 1 ;;
esac
if ! command -v apt-get >/dev/null 2>&1; then
  echo "ROCM_SOURCE=debian needs a Debian base image (apt-get); this base has none" >&2
  exit 1
fi
if [ -z "$packages" ]; then
  echo "ROCM_SOURCE=debian installs the matrix's toolkit.system_packages, and none are named" >&2
  exit 1
fi

# The base's mirror, as its apt sources name it (one-line or deb822 format).
mirror=$(sed -n 's/^deb \(\[[^]]*\] \)\{0,1\}\([^ ]*\) .*/\2/p' /etc/apt/sources.list 2>/dev/null | head -n 1)
if [ -z "$mirror" ]; then
  mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | sed -n 's/^URIs: *\([^ ]*\).*/\1/p' | head -n 1)
fi
if [ -z "$mirror" ]; then
  echo "ROCM_SOURCE=debian: no Debian mirror found in the base image's apt sources" >&2
  exit 1
fi
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
signed=""
if [ -f "$keyring" ]; then signed="[signed-by=$keyring] "; fi
echo "deb ${signed}$mirror experimental main" > /etc/apt/sources.list.d/builders-experimental.list
cat > /etc/apt/preferences.d/builders-rocm <<'PIN'
Package: hipcc libamdhip64* libhiprtc* libhsa-runtime* libamd-comgr* rocm-device-libs* rocminfo*
Pin: release a=experimental
Pin-Priority: 990
PIN

export DEBIAN_FRONTEND=noninteractive
# A mirror snapshot may carry an expired Release file; its signatures are still checked.
apt-get -o Acquire::Check-Valid-Until=false update -qq
old_ifs=$IFS
IFS='
'
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $packages
IFS=$old_ifs
rm -rf /var/lib/apt/lists/*
hipcc --version
