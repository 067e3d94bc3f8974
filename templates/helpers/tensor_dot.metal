{# tl.dot on Metal 4 tensor ops (codegen/lower_tensor_dot.py; docs/dot.md). No data in. #}
// tl.dot on Metal 4 tensor ops (MSL 4.0): C = A @ B + C for row-major tiles staged in
// threadgroup memory (A: M x K, B: K x N, C: M x N). One matmul2d over the whole M x N tile runs
// on every SIMD group of the threadgroup; its destination cooperative tensor starts from C,
// accumulates over K in chunks of KStep and is stored back into C.
#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
template <int M, int N, int K, int KStep, int SimdGroups, typename TA, typename TB, typename TC>
inline void km_tensor_dot(threadgroup TA* a, threadgroup TB* b, threadgroup TC* c) {
  // dimension 0 of a tensor is the contiguous one: a row-major R x C matrix has extents (C, R)
  constexpr auto desc = mpp::tensor_ops::matmul2d_descriptor(
      M, N, KStep, false, false, false, mpp::tensor_ops::matmul2d_descriptor::mode::multiply_accumulate);
  mpp::tensor_ops::matmul2d<desc, execution_simdgroups<SimdGroups>> op;
  tensor<threadgroup TA, dextents<int, 2>, tensor_inline> ta(a, dextents<int, 2>(K, M));
  tensor<threadgroup TB, dextents<int, 2>, tensor_inline> tb(b, dextents<int, 2>(N, K));
  tensor<threadgroup TC, dextents<int, 2>, tensor_inline> tc(c, dextents<int, 2>(N, M));
  auto a0 = ta.slice(0, 0);
  auto b0 = tb.slice(0, 0);
  auto acc = op.template get_destination_cooperative_tensor<decltype(a0), decltype(b0), TC>();
  acc.load(tc);
  for (int k = 0; k < K; k += KStep) {
    auto ak = ta.slice(k, 0);  // columns k.. of A
    auto bk = tb.slice(0, k);  // rows k.. of B
    op.run(ak, bk, acc);
  }
  acc.store(tc);
}
