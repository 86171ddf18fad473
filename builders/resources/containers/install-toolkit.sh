#!/bin/sh
# install-toolkit.sh PREFIX INDEX_URL REQUIREMENTS: pinned toolkit wheels into PREFIX.
# REQUIREMENTS is newline-separated (requirement strings contain [] and spaces).
set -euf
prefix=$1 index=$2 requirements=$3
# Behind a TLS-intercepting proxy the host's CA bundle is mounted here for the build.
if [ -f /run/builders/ca.crt ]; then export PIP_CERT=/run/builders/ca.crt SSL_CERT_FILE=/run/builders/ca.crt; fi
python3 -m venv /opt/toolkit-installer
old_ifs=$IFS
IFS='
'
# shellcheck disable=SC2086
/opt/toolkit-installer/bin/python -m pip install --no-input --target "$prefix" ${index:+--index-url "$index"} $requirements
IFS=$old_ifs
rm -rf /opt/toolkit-installer /root/.cache/pip
