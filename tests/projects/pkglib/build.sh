#!/bin/bash
# The project's build: gcc, no RUNPATH to the runtime folder (builders sets it at repair); the extension
# reaches its sibling library with its own $ORIGIN/lib. Usage: build.sh PYTHON OUTDIR SOURCE
set -euo pipefail
python=$1 out=$2 src=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/tree/pkg/lib"
gcc -shared -fPIC -Wl,-soname,libfakert.so.1 -o "$work/libfakert.so.1" "$src/rt.c"
gcc -shared -fPIC -Wl,-soname,libx.so -o "$work/tree/pkg/lib/libx.so" "$src/x.c" -L"$work" -l:libfakert.so.1
suffix=$("$python" -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
gcc -shared -fPIC -o "$work/tree/pkg/_C$suffix" "$src/c.c" -L"$work/tree/pkg/lib" -lx -L"$work" -l:libfakert.so.1 \
    -Wl,--enable-new-dtags,-rpath,'$ORIGIN/lib'
cp "$src/pkg/__init__.py" "$work/tree/pkg/"
"$python" "$src/mkwheel.py" "$work/tree" "$out"
