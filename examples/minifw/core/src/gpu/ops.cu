// Every GPU kernel and entry point that does not depend on MINIFW_CORE_WEIGHT, as one
// translation unit: each .cu file costs its own pass over the runtime headers for every target
// architecture (about 6 s of CPU on 6 archs + PTX), so the parts are included here rather than
// compiled separately. The GEMM variants are gemm_variant.cu, one translation unit each.
#include "gpu/runtime.inl"
#include "gpu/elementwise.inl"
#include "gpu/reduce.inl"
#include "gpu/gemm_dispatch.inl"
