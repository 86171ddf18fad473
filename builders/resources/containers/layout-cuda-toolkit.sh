#!/bin/sh
# layout-cuda-toolkit.sh ROOT: the pip-installed CUDA toolkit at ROOT (.../nvidia/cu13) laid out
# as CMake's find_package(CUDAToolkit) expects, the same as builders/families/cuda_layout.py does
# for the local engine: lib/libX.so -> libX.so.N beside each versioned library (the shortest
# version wins), and the driver stub lib/stubs/libcuda.so (soname libcuda.so.1) defining every
# CUresult cu*() function of the toolkit's own include/cuda.h. The stub is only linked against:
# nothing searches lib/stubs at run time, and repair never grafts the driver's libraries.
set -eu
root=$1
cd "$root/lib"
for lib in $(for f in lib*.so.*; do echo "${#f} $f"; done | sort -n | cut -d' ' -f2- | grep -E '\.so(\.[0-9]+)+$'); do
  dev=${lib%%.so.*}.so
  [ -e "$dev" ] || [ -L "$dev" ] || ln -s "$lib" "$dev"
done
mkdir -p stubs
cc -E -P "$root/include/cuda.h" | tr '\n' ' ' \
  | grep -o 'CUresult[[:space:]]\{1,\}cu[A-Za-z0-9_]*[[:space:]]*(' \
  | sed 's/^CUresult[[:space:]]*\(cu[A-Za-z0-9_]*\).*/int \1(void) { return 999; }/' | sort -u > stubs/libcuda.c
cc -shared -fPIC -o stubs/libcuda.so -Wl,-soname,libcuda.so.1 stubs/libcuda.c
rm stubs/libcuda.c
