// metal_sync.h - memory flags and the barrier declarations.
//
// Contract: `mem_flags` (mem_none, mem_device, mem_threadgroup, mem_texture,
// mem_threadgroup_imageblock, mem_object_data; OR-able) and declarations of
// `metal::threadgroup_barrier(mem_flags)` and `metal::simdgroup_barrier(
// mem_flags)`. The emulator runtime defines both (they switch fibers); the
// SIMD-group functions and simdgroup_matrix are declared by the runtime's
// own headers, which may use metal::tm_scalar_traits from metal_vector.h.
#pragma once

#include "metal_types.h"

namespace metal {

enum class mem_flags : uint {
  mem_none = 0,
  mem_device = 1,
  mem_threadgroup = 2,
  mem_texture = 4,
  mem_threadgroup_imageblock = 8,
  mem_object_data = 16,
};
constexpr mem_flags operator|(mem_flags a, mem_flags b) {
  return static_cast<mem_flags>(static_cast<uint>(a) | static_cast<uint>(b));
}
constexpr mem_flags operator&(mem_flags a, mem_flags b) {
  return static_cast<mem_flags>(static_cast<uint>(a) & static_cast<uint>(b));
}

void threadgroup_barrier(mem_flags flags);
void simdgroup_barrier(mem_flags flags);

}  // namespace metal
