#!/bin/sh
# install-system-toolkit.sh REPOSITORY KEY_URL PACKAGES: a vendor toolkit (oneAPI) from its
# signed apt or yum repository. PACKAGES is newline-separated.
set -euf
repo=$1 key=$2 packages=$3
if [ -z "$repo" ] || [ -z "$key" ]; then
  echo "a toolkit repository and its signing key URL are required (see matrix.yaml toolkit)" >&2
  exit 1
fi
old_ifs=$IFS
IFS='
'
if command -v apt-get >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  # A mirror snapshot may carry an expired Release file; its signatures are still checked.
  apt-get -o Acquire::Check-Valid-Until=false update -qq
  apt-get install -y -qq --no-install-recommends curl gpg
  curl -fsSL "$key" | gpg --dearmor -o /usr/share/keyrings/toolkit.gpg
  echo "deb [signed-by=/usr/share/keyrings/toolkit.gpg] $repo all main" > /etc/apt/sources.list.d/toolkit.list
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $packages
  rm -rf /var/lib/apt/lists/*
else
  printf '[toolkit]\nname=toolkit\nbaseurl=%s\nenabled=1\ngpgcheck=1\ngpgkey=%s\n' "$repo" "$key" > /etc/yum.repos.d/toolkit.repo
  # shellcheck disable=SC2086
  dnf install -y -q $packages
  dnf clean all
fi
IFS=$old_ifs
