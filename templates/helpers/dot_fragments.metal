{# simdgroup_matrix fragments to and from the two registers a lane holds, and the partial sums of int8 dots and float16 accumulators (tl.dot). No data in. #}
// tl.dot: an 8x8 simdgroup matrix is the (row, col), (row, col + 1) pair of every lane
// (thread_elements()), so fragments are built from and read back into plain registers.
template <typename T>
inline simdgroup_matrix<T, 8, 8> km_frag(T x0, T x1) {
  simdgroup_matrix<T, 8, 8> m;
  m.thread_elements() = vec<T, 2>(x0, x1);
  return m;
}
template <typename T>
inline T km_frag_elem(thread simdgroup_matrix<T, 8, 8>& m, int i) {
  return m.thread_elements()[i];
}
// int8 tl.dot: a chunk's float partial is an exact integer (docs/dot.md: |partial| <= 2^24); it
// joins the int32 accumulator by wrapping addition, as Triton's int32 accumulator wraps (signed
// overflow is undefined in MSL, unsigned addition is modular).
inline int km_int_partial(int acc, float partial) {
  return as_type<int>(as_type<uint>(acc) + as_type<uint>(int(partial)));
}
// A float16 accumulator: the dot's float partial is rounded once to half and added in half (the
// rounding of Triton's interpreter; half arithmetic rounds the exact sum once).
inline half km_half_partial(half acc, float partial) {
  return acc + half(partial);
}
