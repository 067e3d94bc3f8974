{# simdgroup_matrix fragments to and from the two registers a lane holds (tl.dot). No data in. #}
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
