// What a kernel sees of the emulator runtime: barriers, threadgroup variables, SIMD-group
// functions and simdgroup matrices (namespace metal, as in MSL).
//
// Included into the kernel translation unit after the shim's <metal_stdlib>, so it uses only the
// shim's types and compiler builtins. Every synchronising call records the kernel source position
// (through __builtin_FILE/__builtin_LINE default arguments, or __FILE__/__LINE__ in the barrier
// macros) so that a divergent barrier or a mismatched SIMD-group operation is reported at its
// line.
#ifndef TM_KERNEL_H
#define TM_KERNEL_H

#include "tm_abi.h"

namespace metal {

// ---------------------------------------------------------------- barriers
template <class Flags>
inline void tm_threadgroup_barrier(Flags, const char* file, int line) {
    tm_rt_barrier(0, "threadgroup_barrier", file, line);
}
template <class Flags>
inline void tm_simdgroup_barrier(Flags, const char* file, int line) {
    tm_rt_barrier(1, "simdgroup_barrier", file, line);
}

// ---------------------------------------------------------------- threadgroup memory
// `threadgroup T name[N];` in a kernel body is rewritten to
// `auto& name = metal::tm_tg_var<T[N]>(id, "name", __FILE__, __LINE__);` on the same line.
template <class T>
inline T& tm_tg_var(unsigned id, const char* name, const char* file, int line) {
    return *static_cast<T*>(tm_rt_tg_alloc(id, sizeof(T), alignof(T), name, file, line));
}

}  // namespace metal

#include "tm_simd.h"
#include "tm_matrix.h"

// Barriers are macros so that they record the line even where a kernel calls them qualified
// (`metal::threadgroup_barrier(...)`).
#define threadgroup_barrier(flags) tm_threadgroup_barrier((flags), __FILE__, __LINE__)
#define simdgroup_barrier(flags) tm_simdgroup_barrier((flags), __FILE__, __LINE__)

#endif
