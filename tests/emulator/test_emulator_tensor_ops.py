"""The emulator's model of Metal 4 tensor ops (`mpp::tensor_ops::matmul2d`, include/metal_tensor and
include/MetalPerformancePrimitives/): hand-written MSL in the style of Apple's header examples,
checked against float64 / int64 NumPy products, and the strictness of the model (what Apple's
header does not declare, or the model does not cover, fails to compile; a scope that is not the
threadgroup faults).
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

from triton_metal.backends.emulator import KernelFault, MSLCompileError, metal_kernel

RNG = np.random.default_rng(17)
HEADER = "#include <metal_tensor>\n#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>\n"

# C (32 x 32, float) = A (32 x 64, half) @ B (64 x 32, half) + C0 on 2 SIMD groups: the operands
# staged in threadgroup memory, a cooperative accumulator loaded from C0 and carried over two K
# chunks of 32, stored to the device output.
ACCUMULATE = """
    uint t = thread_position_in_threadgroup.x;
    threadgroup half sa[32 * 64];
    threadgroup half sb[64 * 32];
    for (uint i = t; i < 32 * 64; i += 64) { sa[i] = a[i]; sb[i] = b[i]; }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    constexpr auto desc = mpp::tensor_ops::matmul2d_descriptor(
        32, 32, 32, false, false, false, mpp::tensor_ops::matmul2d_descriptor::mode::multiply_accumulate);
    mpp::tensor_ops::matmul2d<desc, execution_simdgroups<2>> op;
    tensor<threadgroup half, dextents<int, 2>, tensor_inline> ta(sa, dextents<int, 2>(64, 32));
    tensor<threadgroup half, dextents<int, 2>, tensor_inline> tb(sb, dextents<int, 2>(32, 64));
    tensor<device float, dextents<int, 2>, tensor_inline> tc(out, dextents<int, 2>(32, 32));
    tensor<device float, dextents<int, 2>, tensor_inline> t0((device float*)c0, dextents<int, 2>(32, 32));
    auto a0 = ta.slice(0, 0);
    auto b0 = tb.slice(0, 0);
    auto acc = op.get_destination_cooperative_tensor<decltype(a0), decltype(b0), float>();
    acc.load(t0);
    for (int k = 0; k < 64; k += 32) {
        auto ak = ta.slice(k, 0);
        auto bk = tb.slice(0, k);
        op.run(ak, bk, acc);
    }
    acc.store(tc);
"""

# int8 x int8 -> int32 with `mode::multiply` straight into a device tensor: B given transposed
# (N x K row-major, transpose_right), K dynamic (read from A's extent), a 16 x 32 tile at row 16
# and column 32 of a 48 x 64 output, on 1 SIMD group.
INT8_TRANSPOSED = """
    constexpr auto desc = mpp::tensor_ops::matmul2d_descriptor(16, 32, static_cast<int>(dynamic_extent),
                                                               false, true);
    mpp::tensor_ops::matmul2d<desc, execution_simdgroup> op;
    tensor<device int8_t, dextents<int, 2>, tensor_inline> ta((device int8_t*)a, dextents<int, 2>(40, 48));
    tensor<device int8_t, dextents<int, 2>, tensor_inline> tb((device int8_t*)bt, dextents<int, 2>(40, 64));
    tensor<device int32_t, dextents<int, 2>, tensor_inline> tc(out, dextents<int, 2>(64, 48));
    auto ma = ta.slice(0, 16);
    auto mb = tb.slice(0, 32);
    auto mc = tc.slice(32, 16);
    op.run(ma, mb, mc);
"""


def test_cooperative_accumulator_over_k_chunks():
    a = RNG.standard_normal((32, 64)).astype(np.float16)
    b = RNG.standard_normal((64, 32)).astype(np.float16)
    c0 = RNG.standard_normal((32, 32)).astype(np.float32)
    kernel = metal_kernel("mpp_acc", ["a", "b", "c0"], ["out"], ACCUMULATE, header=HEADER)
    (out,) = kernel(inputs=[mx.array(a), mx.array(b), mx.array(c0)], output_shapes=[(32, 32)],
                    output_dtypes=[mx.float32], grid=(64, 1, 1), threadgroup=(64, 1, 1))
    ref = a.astype(np.float64) @ b.astype(np.float64) + c0
    np.testing.assert_allclose(np.array(out), ref, rtol=1e-5, atol=1e-4)


def test_an_accumulator_never_loaded_holds_no_value():
    # Metal declares no initial value for a destination cooperative tensor: the model starts its
    # slots as NaN, so code that accumulates into one without loading it shows it
    a = RNG.standard_normal((32, 64)).astype(np.float16)
    b = RNG.standard_normal((64, 32)).astype(np.float16)
    kernel = metal_kernel("mpp_unloaded", ["a", "b", "c0"], ["out"], ACCUMULATE.replace("acc.load(t0);", ""),
                          header=HEADER)
    (out,) = kernel(inputs=[mx.array(a), mx.array(b), mx.zeros((32, 32))], output_shapes=[(32, 32)],
                    output_dtypes=[mx.float32], grid=(64, 1, 1), threadgroup=(64, 1, 1))
    assert np.isnan(np.array(out)).all()


def test_int8_multiply_into_a_tensor_slice_with_transposed_right_operand():
    a = RNG.integers(-128, 128, (48, 40)).astype(np.int8)
    bt = RNG.integers(-128, 128, (64, 40)).astype(np.int8)
    kernel = metal_kernel("mpp_i8", ["a", "bt"], ["out"], INT8_TRANSPOSED, header=HEADER)
    (out,) = kernel(inputs=[mx.array(a), mx.array(bt)], output_shapes=[(48, 64)], output_dtypes=[mx.int32],
                    grid=(32, 1, 1), threadgroup=(32, 1, 1), init_value=-7)
    expected = np.full((48, 64), -7, np.int64)
    expected[16:32, 32:64] = a[16:32].astype(np.int64) @ bt[32:64].astype(np.int64).T
    np.testing.assert_array_equal(np.array(out), expected)


# Element access (what a rescaled accumulator uses, docs/dot.md): each thread visits the valid
# elements it holds, finds their (column, row) and writes row * 100 + column + its scaled sum
# of A @ B; the store then puts every element where its index says it is.
ELEMENTS = """
    uint t = thread_position_in_threadgroup.x;
    threadgroup half sa[32 * 32];
    threadgroup half sb[32 * 64];
    for (uint i = t; i < 32 * 32; i += 64) sa[i] = a[i];
    for (uint i = t; i < 32 * 64; i += 64) sb[i] = b[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    constexpr auto desc = mpp::tensor_ops::matmul2d_descriptor(32, 64, 32);
    mpp::tensor_ops::matmul2d<desc, execution_simdgroups<2>> op;
    tensor<threadgroup half, dextents<int, 2>, tensor_inline> ta(sa, dextents<int, 2>(32, 32));
    tensor<threadgroup half, dextents<int, 2>, tensor_inline> tb(sb, dextents<int, 2>(64, 32));
    tensor<device float, dextents<int, 2>, tensor_inline> tc(out, dextents<int, 2>(64, 32));
    auto acc = op.get_destination_cooperative_tensor<decltype(ta), decltype(tb), float>();
    op.run(ta, tb, acc);
    for (ushort i = 0; i < acc.get_capacity(); ++i) {
        if (acc.is_valid_element(i)) {
            auto at = acc.get_multidimensional_index(i);
            acc[i] = 0.5f * acc[i] + float(at[1] * 100 + at[0]);
        }
    }
    acc.store(tc);
"""


def test_elements_know_their_place_in_the_tile():
    a = RNG.standard_normal((32, 32)).astype(np.float16)
    b = RNG.standard_normal((32, 64)).astype(np.float16)
    kernel = metal_kernel("mpp_elements", ["a", "b"], ["out"], ELEMENTS, header=HEADER)
    (out,) = kernel(inputs=[mx.array(a), mx.array(b)], output_shapes=[(32, 64)], output_dtypes=[mx.float32],
                    grid=(64, 1, 1), threadgroup=(64, 1, 1), init_value=-1)
    rows, cols = np.mgrid[0:32, 0:64]
    ref = 0.5 * (a.astype(np.float64) @ b.astype(np.float64)) + rows * 100 + cols
    np.testing.assert_allclose(np.array(out), ref, rtol=1e-5, atol=1e-3)


def test_wrong_simdgroup_count_faults():
    # execution_simdgroups<2> is the whole threadgroup: three SIMD groups are not its scope
    source = INT8_TRANSPOSED.replace("execution_simdgroup>", "execution_simdgroups<2>>")
    kernel = metal_kernel("mpp_scope", ["a", "bt"], ["out"], source, header=HEADER)
    with pytest.raises(KernelFault, match="execution scope"):  # at the launch, or at mx.eval when lazy
        mx.eval(kernel(inputs=[mx.zeros((48, 40), mx.int8), mx.zeros((64, 40), mx.int8)], output_shapes=[(48, 64)],
                       output_dtypes=[mx.int32], grid=(96, 1, 1), threadgroup=(96, 1, 1)))


# Input cooperative tensors (macOS 26.2): each of 4 SIMD groups runs its own 32 x 32 x 32 op
# (execution_simdgroup) on its block of C (64 x 64, float) = A (64 x 64, bfloat) @ B (64 x 64,
# bfloat), K in two parts; every thread fills the elements its left and right inputs hold, found
# by their coordinates ((k, m) for the left, (n, k) for the right), from device memory, scaled by
# 0.5 on the way in (what a dequantizing fill does), and the destination, made for those input
# types, accumulates from zero.
INPUTS = """
    uint sg = simdgroup_index_in_threadgroup;
    int m0 = int(sg / 2) * 32, n0 = int(sg % 2) * 32;
    constexpr auto desc = mpp::tensor_ops::matmul2d_descriptor(
        32, 32, 32, false, false, false, mpp::tensor_ops::matmul2d_descriptor::mode::multiply_accumulate);
    mpp::tensor_ops::matmul2d<desc, execution_simdgroup> op;
    using L = decltype(op)::cooperative_tensor_left_input_t<bfloat, bfloat, float>;
    using R = decltype(op)::cooperative_tensor_right_input_t<bfloat, bfloat, float>;
    auto acc = op.get_destination_cooperative_tensor<L, R, float>();
    for (ushort i = 0; i < acc.get_capacity(); ++i)
        if (acc.is_valid_element(i)) acc[i] = 0.0f;
    for (int k0 = 0; k0 < 64; k0 += 32) {
        auto ca = op.get_left_input_cooperative_tensor<bfloat, bfloat, float>();
        for (ushort i = 0; i < ca.get_capacity(); ++i) {
            if (!ca.is_valid_element(i)) continue;
            auto at = ca.get_multidimensional_index(i);
            ca[i] = bfloat(0.5f * float(a[(m0 + at[1]) * 64 + k0 + at[0]]));
        }
        auto cb = op.get_right_input_cooperative_tensor<bfloat, bfloat, float>();
        for (ushort i = 0; i < cb.get_capacity(); ++i) {
            if (!cb.is_valid_element(i)) continue;
            auto at = cb.get_multidimensional_index(i);
            cb[i] = b[(k0 + at[1]) * 64 + n0 + at[0]];
        }
        op.run(ca, cb, acc);
    }
    tensor<device float, dextents<int, 2>, tensor_inline> tc(out, dextents<int, 2>(64, 64));
    acc.store(tc.slice(n0, m0));
"""


def _bf16(x: np.ndarray) -> np.ndarray:
    """x rounded to bfloat16 (to nearest even), as float32."""
    bits = x.astype(np.float32).view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).view(np.float32)


def test_input_cooperative_tensors_filled_by_coordinate_per_simdgroup():
    a = _bf16(RNG.standard_normal((64, 64)))
    b = _bf16(RNG.standard_normal((64, 64)))
    kernel = metal_kernel("mpp_inputs", ["a", "b"], ["out"], INPUTS, header=HEADER)
    (out,) = kernel(inputs=[mx.array(a).astype(mx.bfloat16), mx.array(b).astype(mx.bfloat16)],
                    output_shapes=[(64, 64)], output_dtypes=[mx.float32], grid=(128, 1, 1), threadgroup=(128, 1, 1),
                    init_value=-1)
    ref = (0.5 * a.astype(np.float64)) @ b.astype(np.float64)  # 0.5 x a bfloat16 is exact
    np.testing.assert_allclose(np.array(out), ref, rtol=1e-5, atol=1e-4)


def test_an_input_element_never_written_holds_no_value():
    # as a destination's: Metal declares no initial value, the model starts the slots as NaN
    source = INPUTS.replace("ca[i] = bfloat(", "if (at[0] != 5) ca[i] = bfloat(")
    kernel = metal_kernel("mpp_inputs_unset", ["a", "b"], ["out"], source, header=HEADER)
    (out,) = kernel(inputs=[mx.ones((64, 64), mx.bfloat16), mx.ones((64, 64), mx.bfloat16)],
                    output_shapes=[(64, 64)], output_dtypes=[mx.float32], grid=(128, 1, 1), threadgroup=(128, 1, 1))
    assert np.isnan(np.array(out)).all()


@pytest.mark.parametrize("edit,message", [
    # Apple's implementation: "Input cooperative tensors require a single SIMD group"
    (("execution_simdgroup>", "execution_simdgroups<4>>"), "single SIMD group"),
    # "Inner dimension cannot be dynamic with input cooperative tensors"
    (("32, 32, 32, false", "32, 32, static_cast<int>(dynamic_extent), false"), "Inner dimension cannot be dynamic"),
    # a left input is not a right operand
    (("op.run(ca, cb, acc)", "op.run(ca, ca, acc)"), "left input cooperative tensor is not a right operand"),
    # the destination was made for bfloat inputs; inputs of half do not match it
    (("get_left_input_cooperative_tensor<bfloat, bfloat, float>", "get_left_input_cooperative_tensor<half, bfloat, float>"),
     "Input types must match|belongs to another op or other operand types"),
    # with both inputs cooperative, m, n and k are 16 or 32
    (("32, 32, 32, false", "64, 32, 32, false"), "each 16 or 32"),
    # an input made from a destination (the 26.2 converting form) is not modelled
    (("auto ca = op.get_left_input_cooperative_tensor<bfloat, bfloat, float>();",
      "auto ca = op.get_left_input_cooperative_tensor<bfloat, bfloat, float>(acc);"), "get_left_input_cooperative_tensor"),
])
def test_what_apple_requires_of_input_cooperative_tensors_does_not_compile_otherwise(edit, message):
    kernel = metal_kernel("mpp_inputs_strict", ["a", "b"], ["out"], INPUTS.replace(*edit), header=HEADER)
    with pytest.raises(MSLCompileError, match=message):
        kernel(inputs=[mx.ones((64, 64), mx.bfloat16), mx.ones((64, 64), mx.bfloat16)], output_shapes=[(64, 64)],
               output_dtypes=[mx.float32], grid=(128, 1, 1), threadgroup=(128, 1, 1))


@pytest.mark.parametrize("source,message", [
    # half x float -> half is not a row of Apple's table (half x float -> float is)
    ("tensor<device half, dextents<int, 2>, tensor_inline> ta((device half*)x, dextents<int, 2>(16, 16));"
     "tensor<device float, dextents<int, 2>, tensor_inline> tb((device float*)y, dextents<int, 2>(32, 16));"
     "tensor<device half, dextents<int, 2>, tensor_inline> tc((device half*)out, dextents<int, 2>(32, 16));"
     "op.run(ta, tb, tc);", "not in Apple's table"),
    # Apple's header recognises int8_t operands, not plain char
    ("tensor<device char, dextents<int, 2>, tensor_inline> ta((device char*)x, dextents<int, 2>(16, 16));"
     "tensor<device int32_t, dextents<int, 2>, tensor_inline> tc((device int32_t*)out, dextents<int, 2>(32, 16));"
     "op.run(ta, ta, tc);", "not in Apple's table"),
    # the single-thread scope is declared by Metal but not modelled
    ("mpp::tensor_ops::matmul2d<desc, execution_thread> op1;", "execution_thread"),
    # the 26.1 header comment's `get_mask(i)`: a macOS 26.5 report says the class lacks it, and
    # code compiled on Macs uses `is_valid_element(i)`
    ("tensor<device half, dextents<int, 2>, tensor_inline> ta((device half*)x, dextents<int, 2>(16, 16));"
     "auto ct = op.get_destination_cooperative_tensor<decltype(ta), decltype(ta), float>();"
     "out[0] = ct.get_mask(0);", "get_mask"),
    # a destination cooperative tensor is no left operand (an input one is)
    ("tensor<device half, dextents<int, 2>, tensor_inline> ta((device half*)x, dextents<int, 2>(16, 16));"
     "auto ct = op.get_destination_cooperative_tensor<decltype(ta), decltype(ta), float>();"
     "op.run(ct, ta, ct);", "left and right are tensors or this op's input cooperative tensors"),
])
def test_what_the_model_does_not_declare_does_not_compile(source, message):
    body = ("constexpr auto desc = mpp::tensor_ops::matmul2d_descriptor(16, 32, 16);"
            "mpp::tensor_ops::matmul2d<desc, execution_simdgroup> op;" + source)
    kernel = metal_kernel("mpp_strict", ["x", "y"], ["out"], body, header=HEADER)
    with pytest.raises(MSLCompileError, match=message):
        kernel(inputs=[mx.zeros((16, 16), mx.float16), mx.zeros((16, 32), mx.float32)], output_shapes=[(16, 32)],
               output_dtypes=[mx.float16], grid=(32, 1, 1), threadgroup=(32, 1, 1))
