{# tl.dot on Metal 4 tensor ops (codegen/lower_tensor_dot.py; docs/dot.md). No data in. #}
// tl.dot on Metal 4 tensor ops (MSL 4.0) over row-major tiles staged in threadgroup memory
// (A: M x K, B: K x N, C: M x N). One matmul2d over the whole M x N tile runs on every SIMD
// group of the threadgroup; its destination cooperative tensor (the accumulator) comes from
// km_tensor_acc, is loaded from and stored to C, and accumulates A @ B over K in chunks of
// KStep in km_tensor_run. A dot inside a K loop whose accumulator only it uses keeps the
// cooperative tensor across the loop's iterations (loaded before the loop, stored after it);
// any other dot is km_tensor_dot: load, run, store. A carried accumulator the loop rescales
// (acc * f, then the dot) is scaled in place element by element (km_tensor_scale_*).
// A tl.dot_scaled K loop whose tile splits into blocks of 16 or 32, one to four a SIMD group,
// runs km_sg_*: each SIMD group an op a block (execution_simdgroup) on input cooperative tensors
// that the generated code fills element by element (macOS 26.2), each block's accumulator
// carried across the loop.
// Dimension 0 of a tensor is the contiguous one: a row-major R x C matrix has extents (C, R).
#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
// The op's type; the descriptor is a constexpr variable, as shipping tensor-op kernels pass it.
template <int M, int N, int KStep, int SimdGroups>
struct km_tensor_op {
  static constexpr auto desc = mpp::tensor_ops::matmul2d_descriptor(
      M, N, KStep, false, false, false, mpp::tensor_ops::matmul2d_descriptor::mode::multiply_accumulate);
  using type = mpp::tensor_ops::matmul2d<desc, execution_simdgroups<SimdGroups>>;
};

// The op's destination cooperative tensor of element type TC for operands staged at a and b
// (their tensors give the operand types; nothing is read here).
template <int M, int N, int K, int KStep, int SimdGroups, typename TC, typename TA, typename TB>
inline auto km_tensor_acc(threadgroup TA* a, threadgroup TB* b) {
  typename km_tensor_op<M, N, KStep, SimdGroups>::type op;
  tensor<threadgroup TA, dextents<int, 2>, tensor_inline> ta(a, dextents<int, 2>(K, M));
  tensor<threadgroup TB, dextents<int, 2>, tensor_inline> tb(b, dextents<int, 2>(N, K));
  auto a0 = ta.slice(0, 0);
  auto b0 = tb.slice(0, 0);
  return op.template get_destination_cooperative_tensor<decltype(a0), decltype(b0), TC>();
}

template <int M, int N, typename Acc, typename TC>
inline void km_tensor_load(thread Acc& acc, threadgroup TC* c) {
  tensor<threadgroup TC, dextents<int, 2>, tensor_inline> tc(c, dextents<int, 2>(N, M));
  acc.load(tc);
}

template <int M, int N, typename Acc, typename TC>
inline void km_tensor_store(thread Acc& acc, threadgroup TC* c) {
  tensor<threadgroup TC, dextents<int, 2>, tensor_inline> tc(c, dextents<int, 2>(N, M));
  acc.store(tc);
}

// acc += A @ B, K in chunks of KStep (the descriptor's k).
template <int M, int N, int K, int KStep, int SimdGroups, typename TA, typename TB, typename Acc>
inline void km_tensor_run(threadgroup TA* a, threadgroup TB* b, thread Acc& acc) {
  typename km_tensor_op<M, N, KStep, SimdGroups>::type op;
  tensor<threadgroup TA, dextents<int, 2>, tensor_inline> ta(a, dextents<int, 2>(K, M));
  tensor<threadgroup TB, dextents<int, 2>, tensor_inline> tb(b, dextents<int, 2>(N, K));
  for (int k = 0; k < K; k += KStep) {
    auto ak = ta.slice(k, 0);  // columns k.. of A
    auto bk = tb.slice(0, k);  // rows k.. of B
    op.run(ak, bk, acc);
  }
}

// acc *= f before a run, for the elements this thread holds (a K loop that rescales its carried
// accumulator, as attention does): one factor a row (f[m]) or a column (f[n]) staged in
// threadgroup memory, or one for the tile. Where an element sits is Metal's choice; its
// coordinate is (column, row), dimension 0 being the contiguous one.
template <typename Acc, typename TF>
inline void km_tensor_scale_rows(thread Acc& acc, threadgroup TF* f) {
  for (ushort i = 0; i < acc.get_capacity(); ++i) {
    if (acc.is_valid_element(i)) {
      auto at = acc.get_multidimensional_index(i);
      acc[i] *= f[at[1]];
    }
  }
}

template <typename Acc, typename TF>
inline void km_tensor_scale_cols(thread Acc& acc, threadgroup TF* f) {
  for (ushort i = 0; i < acc.get_capacity(); ++i) {
    if (acc.is_valid_element(i)) {
      auto at = acc.get_multidimensional_index(i);
      acc[i] *= f[at[0]];
    }
  }
}

template <typename Acc, typename TF>
inline void km_tensor_scale(thread Acc& acc, TF f) {
  for (ushort i = 0; i < acc.get_capacity(); ++i) {
    if (acc.is_valid_element(i)) acc[i] *= f;
  }
}

// C = A @ B + C for one dot.
template <int M, int N, int K, int KStep, int SimdGroups, typename TA, typename TB, typename TC>
inline void km_tensor_dot(threadgroup TA* a, threadgroup TB* b, threadgroup TC* c) {
  auto acc = km_tensor_acc<M, N, K, KStep, SimdGroups, TC>(a, b);
  km_tensor_load<M, N>(acc, c);
  km_tensor_run<M, N, K, KStep, SimdGroups>(a, b, acc);
  km_tensor_store<M, N>(acc, c);
}

// One SIMD group's op on its BM x BN block, K in parts of 32, on input cooperative tensors.
template <int BM, int BN>
struct km_sg_op {
  static constexpr auto desc = mpp::tensor_ops::matmul2d_descriptor(
      BM, BN, 32, false, false, false, mpp::tensor_ops::matmul2d_descriptor::mode::multiply_accumulate);
  using type = mpp::tensor_ops::matmul2d<desc, execution_simdgroup>;
};

// Fresh input cooperative tensors of element type T (left: BM x 32; right: 32 x BN).
template <int BM, int BN, typename T, typename TC>
inline auto km_sg_left() {
  typename km_sg_op<BM, BN>::type op;
  return op.template get_left_input_cooperative_tensor<T, T, TC>();
}

template <int BM, int BN, typename T, typename TC>
inline auto km_sg_right() {
  typename km_sg_op<BM, BN>::type op;
  return op.template get_right_input_cooperative_tensor<T, T, TC>();
}

// The block's destination cooperative tensor, made for those inputs.
template <int BM, int BN, typename T, typename TC>
inline auto km_sg_acc() {
  using Op = typename km_sg_op<BM, BN>::type;
  Op op;
  return op.template get_destination_cooperative_tensor<typename Op::template cooperative_tensor_left_input_t<T, T, TC>,
                                                        typename Op::template cooperative_tensor_right_input_t<T, T, TC>,
                                                        TC>();
}

// The block at row m0, column n0 of the row-major M x N tile c, into or out of acc.
template <int M, int N, typename Acc, typename TC>
inline void km_sg_load(thread Acc& acc, threadgroup TC* c, uint m0, uint n0) {
  tensor<threadgroup TC, dextents<int, 2>, tensor_inline> tc(c, dextents<int, 2>(N, M));
  acc.load(tc.slice(int(n0), int(m0)));
}

template <int M, int N, typename Acc, typename TC>
inline void km_sg_store(thread Acc& acc, threadgroup TC* c, uint m0, uint n0) {
  tensor<threadgroup TC, dextents<int, 2>, tensor_inline> tc(c, dextents<int, 2>(N, M));
  acc.store(tc.slice(int(n0), int(m0)));
}

// acc += a @ b for one part of 32 along K.
template <int BM, int BN, typename A, typename B, typename Acc>
inline void km_sg_run(thread A& a, thread B& b, thread Acc& acc) {
  typename km_sg_op<BM, BN>::type op;
  op.run(a, b, acc);
}

// Every element of a cooperative tensor set to v (a constant initial accumulator).
template <typename CT, typename T>
inline void km_coop_fill(thread CT& ct, T v) {
  for (ushort i = 0; i < ct.get_capacity(); ++i) {
    if (ct.is_valid_element(i)) ct[i] = v;
  }
}

// A cooperative tensor's elements: how many slots this thread has, whether slot i holds one, and
// its row and column in the op's operand (coordinates are (column, row)).
template <typename CT>
inline ushort km_coop_count(thread CT& ct) { return ushort(ct.get_capacity()); }

template <typename CT>
inline bool km_coop_valid(thread CT& ct, ushort i) { return ct.is_valid_element(i); }

template <typename CT>
inline uint km_coop_row(thread CT& ct, ushort i) { return uint(ct.get_multidimensional_index(i)[1]); }

template <typename CT>
inline uint km_coop_col(thread CT& ct, ushort i) { return uint(ct.get_multidimensional_index(i)[0]); }
