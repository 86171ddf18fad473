#!/usr/bin/env bash
# A GPU smoke job must run where the GPU is: fail unless this runner shows a device of the
# accelerator family given (cuda, rocm, xpu). A runner without one would pass the smoke test
# with nothing exercised. (`python -m builders smoke --require-device` is to take this over.)
#   usage: ci/require-device.sh FAMILY
set -euo pipefail
family=${1:?usage: ci/require-device.sh cuda|rocm|xpu}

need() {
  command -v "$1" >/dev/null || { echo "::error::no $1 on this runner: it cannot show a $family device"; exit 1; }
}

case $family in
  cuda)
    need nvidia-smi
    devices=$(nvidia-smi -L | grep '^GPU ' || true) ;;
  rocm)
    need rocminfo
    devices=$(rocminfo | grep -E '^[[:space:]]*Name:[[:space:]]+gfx[0-9a-f]+' || true) ;;
  xpu)
    if command -v sycl-ls >/dev/null; then
      devices=$(sycl-ls | grep -E 'level_zero:gpu|opencl:gpu' || true)
    else
      need clinfo
      devices=$(clinfo -l | grep -iE 'intel.*(graphics|gpu|arc|max)' || true)
    fi ;;
  *)
    echo "::error::unknown accelerator family '$family' (cuda, rocm or xpu)"; exit 1 ;;
esac
[ -n "$devices" ] || { echo "::error::this runner shows no $family device"; exit 1; }
echo "$devices"
