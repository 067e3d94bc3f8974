// metal_geometric.h - MSL geometric functions on float and half vectors.
//
// Contract: dot, length, length_squared, distance, distance_squared, normalize (floatN/halfN),
// cross (float3/half3). Sums run in lane order in the element type; length-like results of
// half vectors are computed in float and rounded once.
#pragma once

#include "metal_math.h"

namespace metal {

template <class A, class B>
METAL_FUNC enable_if_t<is_same_v<tm_vtype<A>, tm_vtype<B>>, tm_if_fvec<A, tm_velem<A>>>
dot(const A& a, const B& b) {
  tm_velem<A> s = tm_lane(a, 0) * tm_lane(b, 0);
  for (int i = 1; i < tm_vn<A>; ++i) s = s + tm_lane(a, i) * tm_lane(b, i);
  return s;
}
template <class A>
METAL_FUNC tm_if_fvec<A, tm_velem<A>> length_squared(const A& a) { return dot(a, a); }
template <class A>
METAL_FUNC tm_if_fvec<A, tm_velem<A>> length(const A& a) {
  float s = 0.0f;
  for (int i = 0; i < tm_vn<A>; ++i) s += float(tm_lane(a, i)) * float(tm_lane(a, i));
  return static_cast<tm_velem<A>>(__builtin_sqrtf(s));
}
template <class A, class B>
METAL_FUNC enable_if_t<is_same_v<tm_vtype<A>, tm_vtype<B>>, tm_if_fvec<A, tm_velem<A>>>
distance_squared(const A& a, const B& b) { return length_squared(tm_vtype<A>(a) - b); }
template <class A, class B>
METAL_FUNC enable_if_t<is_same_v<tm_vtype<A>, tm_vtype<B>>, tm_if_fvec<A, tm_velem<A>>>
distance(const A& a, const B& b) { return length(tm_vtype<A>(a) - b); }
template <class A>
METAL_FUNC tm_if_fvec<A> normalize(const A& a) {
  tm_vtype<A> v = a;
  float inv = 1.0f / float(length(v));
  tm_vtype<A> r;
  for (int i = 0; i < tm_vn<A>; ++i) r.tm_data[i] = static_cast<tm_velem<A>>(float(v.tm_data[i]) * inv);
  return r;
}
template <class A, class B>
METAL_FUNC enable_if_t<is_same_v<tm_vtype<A>, tm_vtype<B>> && tm_vn<A> == 3, tm_if_fvec<A>>
cross(const A& a, const B& b) {
  tm_vtype<A> x = a, y = b;
  return tm_vtype<A>(x.y * y.z - x.z * y.y, x.z * y.x - x.x * y.z, x.x * y.y - x.y * y.x);
}

}  // namespace metal
