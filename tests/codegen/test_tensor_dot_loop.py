"""K loops around `tl.dot` on both dot paths: the tensor-op accumulator a loop carries as a
cooperative tensor (MSL 4.0, codegen/lower_tensor_dot_loop.py) where the data flow allows it,
single tensor-op dots where it does not, and simdgroup matrices on MSL 3.2; all against NumPy,
with masked tails in M, N and K, a loaded (non-zero) initial accumulator and loops of 0, 1 and
all K steps (one compiled kernel per form and target, run on several inputs)."""

from __future__ import annotations

import numpy as np
import pytest
from harness import C, compile_source, run
from test_dot_kernels import SIMDGROUP, TARGETS, TENSOR_OPS, path_options, quarters, takes_path, tensor_forms

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.codegen.target import parse_target

CARRIED, PLUS_EQUALS, SCALED, ACC_TWICE = 0, 1, 2, 3
"""`acc = tl.dot(a, b, acc)`, `acc += tl.dot(a, b)`: the loop may carry a cooperative tensor;
`acc = tl.dot(a, b, acc) * 0.5` (the dot's result has another user) and
`acc += tl.dot(a, b, acc)` (the accumulator has two): it may not."""


@triton.jit
def k_step_tiles(a_ptr, b_ptr, offs_m, offs_n, kk, M, N, K):
    """A K step's tiles of row-major A (rows `offs_m`, columns `kk`) and B (rows `kk`, columns
    `offs_n`), zero past M, N and K."""
    a = tl.load(a_ptr + offs_m[:, None] * K + kk[None, :], mask=(offs_m[:, None] < M) & (kk[None, :] < K), other=0)
    b = tl.load(b_ptr + kk[:, None] * N + offs_n[None, :], mask=(kk[:, None] < K) & (offs_n[None, :] < N), other=0)
    return a, b


@triton.jit
def program_tile(c0_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """The program's rows and columns of C, its mask, and its initial accumulator, loaded."""
    offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
    offs_n = tl.program_id(1) * BN + tl.arange(0, BN)
    c_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    return offs_m, offs_n, c_mask, tl.load(c0_ptr + offs_m[:, None] * N + offs_n[None, :], mask=c_mask, other=0)


@triton.jit
def k_loop_kernel(a_ptr, b_ptr, c0_ptr, c_ptr, M, N, K, STEPS, MODE: tl.constexpr, BM: tl.constexpr,
                  BN: tl.constexpr, BK: tl.constexpr):
    offs_m, offs_n, c_mask, acc = program_tile(c0_ptr, M, N, BM, BN)
    offs_k = tl.arange(0, BK)
    for step in range(0, STEPS):
        kk = step * BK + offs_k
        a, b = k_step_tiles(a_ptr, b_ptr, offs_m, offs_n, kk, M, N, K)
        if MODE == 0:
            acc = tl.dot(a, b, acc)
        elif MODE == 1:
            acc += tl.dot(a, b)
        elif MODE == 2:
            acc = tl.dot(a, b, acc) * 0.5
        else:
            acc += tl.dot(a, b, acc)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc, mask=c_mask)


def reference(a: np.ndarray, b: np.ndarray, c0: np.ndarray, steps: int, bk: int, mode: int) -> np.ndarray:
    """The kernel's loop in float64 (columns of A and rows of B past K are zero)."""
    acc = c0.astype(np.float64)
    for step in range(steps):
        part = a[:, step * bk:(step + 1) * bk].astype(np.float64) @ b[step * bk:(step + 1) * bk].astype(np.float64)
        acc = {CARRIED: acc + part, PLUS_EQUALS: acc + part, SCALED: (acc + part) * 0.5,
               ACC_TWICE: 2 * acc + part}[mode]
    return acc


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("mode", [CARRIED, PLUS_EQUALS, SCALED, ACC_TWICE])
def test_k_loop_forms_against_numpy(mode, target):
    bm, bn, bk = 32, 32, 32
    specs = ("*fp16/16", "*fp16/16", "*fp32/16", "*fp32/16", "i32", "i32", "i32", "i32",
             C(mode), C(bm), C(bn), C(bk))
    kernel = compile_source(k_loop_kernel, *specs, num_warps=4, **path_options(target))
    takes_path(kernel, target)
    [report] = kernel.metadata["dot_reports"]
    if target == TENSOR_OPS:
        # the accumulator stays a cooperative tensor only where the dot alone uses it
        carried = mode in (CARRIED, PLUS_EQUALS)
        assert tensor_forms(kernel) == ((0, 1) if carried else (1, 0))
        assert (report["path"], report["form"]) == ("tensor_ops", "carried" if carried else "single")
        # staged once: A and B (and C for a single dot) per K step; the carried loop's buffers
        # alternate, so one barrier per K step; a single dot waits before and after the op and
        # after reading C back
        operand_bytes = (bm * bk + bk * bn) * 2
        assert report["threadgroup_bytes_per_k_step"] == operand_bytes + (0 if carried else bm * bn * 4)
        assert report["barriers_per_k_step"] == (1 if carried else 3)
    else:
        assert report["path"] == "simdgroup" and report["products_per_load"] == 1.0
    M, N, K = 45, 37, 83  # partial tiles in M and N, a K tail in the last step
    a, b = quarters((M, K)).astype(np.float16), quarters((K, N)).astype(np.float16)
    c0 = quarters((M, N))
    for steps in (triton.cdiv(K, bk), 1, 0):
        out = run(kernel, (triton.cdiv(M, bm), triton.cdiv(N, bn)), a_ptr=a, b_ptr=b, c0_ptr=c0,
                  c_ptr=np.zeros((M, N), np.float32), M=M, N=N, K=K, STEPS=steps)["c_ptr"]
        np.testing.assert_array_equal(out, reference(a, b, c0, steps, bk, mode), err_msg=f"{steps} steps")


def test_int8_k_loop_carries_an_int32_cooperative_tensor():
    # `acc += tl.dot(a, b)` on int8: the int32 accumulator wraps like Triton's
    bm, bn, bk = 32, 32, 32
    specs = ("*i8/16", "*i8/16", "*i32/16", "*i32/16", "i32", "i32", "i32", "i32",
             C(PLUS_EQUALS), C(bm), C(bn), C(bk))
    kernel = compile_source(k_loop_kernel, *specs, num_warps=2, target=parse_target(TENSOR_OPS))
    assert tensor_forms(kernel) == (0, 1)
    rng = np.random.default_rng(5)
    M, N, K = 40, 64, 70
    a, b = (rng.integers(-128, 128, s).astype(np.int8) for s in ((M, K), (K, N)))
    c0 = np.full((M, N), 2**31 - 2**20, np.int32)  # near the top: the sums wrap
    out = run(kernel, (2, 2), a_ptr=a, b_ptr=b, c0_ptr=c0, c_ptr=np.zeros((M, N), np.int32), M=M, N=N, K=K,
              STEPS=3)["c_ptr"]
    want = (c0.astype(np.int64) + a.astype(np.int64) @ b.astype(np.int64) + 2**31) % 2**32 - 2**31
    np.testing.assert_array_equal(out, want.astype(np.int32))



@triton.jit
def ticket_loop_kernel(a_ptr, b_ptr, c0_ptr, c_ptr, count_ptr, tickets_ptr, M, N, K, STEPS, BEFORE: tl.constexpr,
                       BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # a carried dot and, in the same loop, a ticket whose value every thread needs: thread 0
    # takes it and hands it on through the lowering's own scratch region
    offs_m, offs_n, c_mask, acc = program_tile(c0_ptr, M, N, BM, BN)
    offs_k = tl.arange(0, BK)
    tickets = tl.zeros([BN], tl.int32)
    for step in range(0, STEPS):
        if BEFORE:
            tickets += tl.atomic_add(count_ptr, 1)
        a, b = k_step_tiles(a_ptr, b_ptr, offs_m, offs_n, step * BK + offs_k, M, N, K)
        acc += tl.dot(a, b)
        if not BEFORE:
            tickets += tl.atomic_add(count_ptr, 1)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc, mask=c_mask)
    tl.store(tickets_ptr + offs_n, tickets)


@pytest.mark.parametrize("before", [False, True])
def test_scratch_the_loop_shares_with_alternating_staging_waits_for_the_run(before):
    # a 16 x 64 x 64 tile stages A and B in two alternating sets of the lowering's own scratch,
    # so no barrier follows the run (docs/dot.md). The ticket's hand-over uses the same region
    # (at its start, A's first set): it must wait for a barrier, whether it comes after the dot
    # in the iteration or before it in the next, or a SIMD group still running the op could
    # read the ticket for A's first elements
    bm, bn, bk = 16, 64, 64
    specs = ("*fp16/16", "*fp16/16", "*fp32/16", "*fp32/16", "*i32", "*i32/16", "i32", "i32", "i32", "i32",
             C(int(before)), C(bm), C(bn), C(bk))
    kernel = compile_source(ticket_loop_kernel, *specs, num_warps=4, target=parse_target(TENSOR_OPS))
    assert tensor_forms(kernel) == (0, 1)
    src = kernel.source
    loop = src[src.index("for (int"):src.index("km_tensor_store")]
    run_at = loop.index("km_tensor_run")
    parity = loop.index(" = (1 - ", run_at)  # the sets alternate: nothing else ends the run
    hand_over = loop.index("((threadgroup int*)")
    assert "threadgroup_barrier" not in loop[run_at:parity]
    if before:
        # the next iteration's hand-over comes first in the body
        assert hand_over < run_at and "threadgroup_barrier" in loop[:hand_over]
    else:
        assert "threadgroup_barrier" in loop[parity:hand_over]
    M, N, K = 30, 64, 200
    a, b = quarters((M, K)).astype(np.float16), quarters((K, N)).astype(np.float16)
    c0 = quarters((M, N))
    steps = triton.cdiv(K, bk)
    out = run(kernel, (2, 1), a_ptr=a, b_ptr=b, c0_ptr=c0, c_ptr=np.zeros((M, N), np.float32),
              count_ptr=np.zeros(1, np.int32), tickets_ptr=np.zeros(N, np.int32), M=M, N=N, K=K, STEPS=steps)
    np.testing.assert_array_equal(out["c_ptr"], reference(a, b, c0, steps, bk, PLUS_EQUALS))
    assert out["count_ptr"][0] == 2 * steps  # a ticket a step in each of the 2 programs


@pytest.mark.parametrize("num_warps", [4, 8])
def test_64x64_tile_stages_operands_once_in_the_loops_double_buffers(num_warps):
    # A and B go straight from their loads into the buffers stage-dot-operands gave their
    # conversions (alternating per iteration), C is staged only before and after the loop: the
    # 64 x 64 x 32 fp16 tile fits in 32 KiB and the loop body has one barrier
    bm = bn = 64
    bk = 32
    specs = ("*fp16/16", "*fp16/16", "*fp32/16", "*fp32/16", "i32", "i32", "i32", "i32",
             C(CARRIED), C(bm), C(bn), C(bk))
    kernel = compile_source(k_loop_kernel, *specs, num_warps=num_warps, target=parse_target(TENSOR_OPS))
    assert tensor_forms(kernel) == (0, 1)
    assert f"km_tensor_run<64, 64, 32, 32, {num_warps}>(" in kernel.source
    loop = kernel.source[kernel.source.index("for (int"):kernel.source.index("km_tensor_store<")]
    assert loop.count("threadgroup_barrier(") == 1
    M, N, K = 100, 70, 75
    a, b = quarters((M, K)).astype(np.float16), quarters((K, N)).astype(np.float16)
    c0 = quarters((M, N))
    steps = triton.cdiv(K, bk)
    out = run(kernel, (2, 2), a_ptr=a, b_ptr=b, c0_ptr=c0, c_ptr=np.zeros((M, N), np.float32), M=M, N=N, K=K,
              STEPS=steps)["c_ptr"]
    np.testing.assert_array_equal(out, reference(a, b, c0, steps, bk, CARRIED))


@pytest.mark.parametrize("mode, num_warps", [(CARRIED, 4), (PLUS_EQUALS, 8), (SCALED, 4)])
def test_fp32_64x64_tile_stages_its_carried_accumulator_over_the_operands(mode, num_warps):
    # fp32 64 x 64 x 32: A and B take 16 KiB a K step and C 16 KiB, beside the 16 KiB the layout
    # passes allocated. A carried accumulator is staged only before and after the loop, A and B
    # only inside it, so C shares their bytes and the tile fits in 32 KiB on tensor ops (two
    # barriers a K step: the operands' two sets do not fit the 16 KiB of double buffers); a
    # single dot (the result scaled) needs A, B and C at once and keeps simdgroup matrices
    bm = bn = 64
    bk = 32
    specs = ("*fp32/16", "*fp32/16", "*fp32/16", "*fp32/16", "i32", "i32", "i32", "i32",
             C(mode), C(bm), C(bn), C(bk))
    kernel = compile_source(k_loop_kernel, *specs, num_warps=num_warps, target=parse_target(TENSOR_OPS))
    [report] = kernel.metadata["dot_reports"]
    if mode == SCALED:
        assert tensor_forms(kernel) == (0, 0) and report["path"] == "simdgroup"
    else:
        assert tensor_forms(kernel) == (0, 1)
        assert (report["path"], report["form"]) == ("tensor_ops", "carried")
        assert (report["barriers_per_k_step"], report["threadgroup_bytes_per_k_step"]) == (2, 16384)
        assert kernel.metadata["threadgroup_memory_bytes"] == 32768
    M, N, K = 100, 70, 75  # partial tiles in M and N, a K tail in the last step
    a, b, c0 = quarters((M, K)), quarters((K, N)), quarters((M, N))
    for steps in (triton.cdiv(K, bk), 1, 0):
        out = run(kernel, (2, 2), a_ptr=a, b_ptr=b, c0_ptr=c0, c_ptr=np.zeros((M, N), np.float32), M=M, N=N,
                  K=K, STEPS=steps)["c_ptr"]
        np.testing.assert_array_equal(out, reference(a, b, c0, steps, bk, mode), err_msg=f"{steps} steps")


@triton.jit
def two_accumulators_kernel(a_ptr, b_ptr, c_ptr, d_ptr, K: tl.constexpr):
    # one A tile feeds two dots (its conversion has two users, so it is not bypassed), each
    # with an accumulator the loop carries
    r = tl.arange(0, 32)
    acc1 = tl.zeros((32, 32), tl.float32)
    acc2 = tl.zeros((32, 32), tl.float32)
    for k in range(0, K, 32):
        a = tl.load(a_ptr + r[:, None] * K + (k + r)[None, :])
        b = tl.load(b_ptr + (k + r)[:, None] * 32 + r[None, :])
        acc1 += tl.dot(a, b)
        acc2 = tl.dot(a, b * 2, acc2)
    tl.store(c_ptr + r[:, None] * 32 + r[None, :], acc1)
    tl.store(d_ptr + r[:, None] * 32 + r[None, :], acc2)


@pytest.mark.parametrize("target", TARGETS)
def test_two_accumulators_carried_by_one_loop(target):
    kernel = compile_source(two_accumulators_kernel, "*fp16/16", "*fp16/16", "*fp32/16", "*fp32/16", C(96),
                            num_warps=4, target=parse_target(target))
    takes_path(kernel, target)
    assert tensor_forms(kernel) == ((0, 2) if target == TENSOR_OPS else (0, 0))
    a, b = quarters((32, 96)).astype(np.float16), quarters((96, 32)).astype(np.float16)
    out = run(kernel, (1,), a_ptr=a, b_ptr=b, c_ptr=np.zeros((32, 32), np.float32),
              d_ptr=np.zeros((32, 32), np.float32))
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_array_equal(out["c_ptr"], ref)
    np.testing.assert_array_equal(out["d_ptr"], 2 * ref)


ROWS, COLUMNS, WHOLE_TILE, FACTOR_AFTER_DOT = 0, 1, 2, 3
"""`acc = acc * f[:, None] + tl.dot(a, b)` (attention's rescaled output), `acc = tl.dot(a, b,
acc * g[None, :])`, `acc = acc * 0.5 + tl.dot(a, b)`: the loop carries a cooperative tensor and
scales its elements before each run; `acc = tl.dot(a, b) + acc * (2 * f)[:, None]`, whose factor
is computed after the dot: it does not."""


@triton.jit
def rescaled_loop_kernel(a_ptr, b_ptr, c0_ptr, f_ptr, g_ptr, c_ptr, M, N, K, STEPS, MODE: tl.constexpr,
                         BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    offs_m, offs_n, c_mask, acc = program_tile(c0_ptr, M, N, BM, BN)
    offs_k = tl.arange(0, BK)
    for step in range(0, STEPS):
        kk = step * BK + offs_k
        a, b = k_step_tiles(a_ptr, b_ptr, offs_m, offs_n, kk, M, N, K)
        f = tl.load(f_ptr + step * M + offs_m, mask=offs_m < M, other=1)
        if MODE == 0:
            acc = acc * f[:, None] + tl.dot(a, b)
        elif MODE == 1:
            g = tl.load(g_ptr + step * N + offs_n, mask=offs_n < N, other=1)
            acc = tl.dot(a, b, acc * g[None, :])
        elif MODE == 2:
            acc = acc * 0.5 + tl.dot(a, b)
        else:
            acc = tl.dot(a, b) + acc * (2 * f)[:, None]
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc, mask=c_mask)


def rescaled_reference(a, b, c0, f, g, steps: int, bk: int, mode: int) -> np.ndarray:
    """`rescaled_loop_kernel`'s loop in float64 (f: a factor a row and step, g: a column and step)."""
    acc = c0.astype(np.float64)
    for step in range(steps):
        part = a[:, step * bk:(step + 1) * bk].astype(np.float64) @ b[step * bk:(step + 1) * bk].astype(np.float64)
        scale = {ROWS: f[step][:, None], COLUMNS: g[step][None, :], WHOLE_TILE: 0.5,
                 FACTOR_AFTER_DOT: 2 * f[step][:, None]}[mode]
        acc = acc * scale + part
    return acc


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("mode", [ROWS, COLUMNS, WHOLE_TILE, FACTOR_AFTER_DOT])
@pytest.mark.parametrize("bm, bn, num_warps", [(32, 32, 4), (64, 32, 2)])
def test_rescaled_accumulator_stays_a_cooperative_tensor(mode, target, bm, bn, num_warps):
    # the tensor-op form taken without the cost rule (path_options), against float64: the
    # factors (powers of two, on quarters) keep every sum exact, so the order the paths add in
    # does not show
    bk = 32
    specs = ("*fp16/16", "*fp16/16", "*fp32/16", "*fp32/16", "*fp32/16", "*fp32/16", "i32", "i32", "i32", "i32",
             C(mode), C(bm), C(bn), C(bk))
    kernel = compile_source(rescaled_loop_kernel, *specs, num_warps=num_warps, **path_options(target))
    takes_path(kernel, target)
    [report] = kernel.metadata["dot_reports"]
    if target == TENSOR_OPS and mode != FACTOR_AFTER_DOT:
        assert tensor_forms(kernel) == (0, 1)
        assert (report["path"], report["form"]) == ("tensor_ops", "rescaled")
        helper = {ROWS: "km_tensor_scale_rows(", COLUMNS: "km_tensor_scale_cols(", WHOLE_TILE: "km_tensor_scale("}
        assert helper[mode] in kernel.source
    elif target == TENSOR_OPS:
        # a factor computed after the dot cannot be applied where the dot runs: the accumulator
        # goes through registers, a single dot
        assert tensor_forms(kernel) == (1, 0) and "km_tensor_scale" not in kernel.source
    M, N, K = 100, 70, 75  # partial tiles in M and N, a K tail in the last step
    a, b = quarters((M, K)).astype(np.float16), quarters((K, N)).astype(np.float16)
    c0 = quarters((M, N))
    rng = np.random.default_rng(mode)
    f = rng.choice([0.5, 1.0, 2.0, -1.0], (3, M)).astype(np.float32)
    g = rng.choice([0.5, 1.0, 2.0, -1.0], (3, N)).astype(np.float32)
    for steps in (triton.cdiv(K, bk), 1, 0):
        out = run(kernel, (triton.cdiv(M, bm), triton.cdiv(N, bn)), a_ptr=a, b_ptr=b, c0_ptr=c0, f_ptr=f, g_ptr=g,
                  c_ptr=np.zeros((M, N), np.float32), M=M, N=N, K=K, STEPS=steps)["c_ptr"]
        np.testing.assert_array_equal(out, rescaled_reference(a, b, c0, f, g, steps, bk, mode),
                                      err_msg=f"{steps} steps")


@pytest.mark.parametrize("mode", [ROWS, COLUMNS, WHOLE_TILE])
def test_rescaled_accumulator_takes_tensor_ops_where_it_waits_no_more(mode):
    # the cost rule on a rescaled carried accumulator (docs/dot.md, "Which path, by cost"): A and
    # B alternate between stage-dot-operands' buffers and the factors between two buffers of C's
    # bytes, so the dot itself waits once a K step, as on simdgroup matrices. A factor loaded
    # from memory is converted to the accumulator's rows or columns first, and that conversion's
    # barrier is one the simdgroup path shares with its operands' staging: there tensor ops take a
    # barrier more and keep simdgroup matrices; one factor for the tile takes tensor ops
    specs = ("*fp16/16", "*fp16/16", "*fp32/16", "*fp32/16", "*fp32/16", "*fp32/16", "i32", "i32", "i32", "i32",
             C(mode), C(64), C(32), C(32))
    forced = compile_source(rescaled_loop_kernel, *specs, num_warps=4, **path_options(TENSOR_OPS))
    ruled = compile_source(rescaled_loop_kernel, *specs, num_warps=4, target=parse_target(TENSOR_OPS))
    simdgroup = compile_source(rescaled_loop_kernel, *specs, num_warps=4, target=parse_target(SIMDGROUP))
    [tensor_report], [ruled_report], [simdgroup_report] = (
        k.metadata["dot_reports"] for k in (forced, ruled, simdgroup))
    factors = {ROWS: 64 * 4, COLUMNS: 32 * 4, WHOLE_TILE: 0}[mode]
    assert tensor_report["threadgroup_bytes_per_k_step"] == simdgroup_report["threadgroup_bytes_per_k_step"] + factors
    barriers = tensor_report["barriers_per_k_step"], simdgroup_report["barriers_per_k_step"]
    assert barriers == ((1, 1) if mode == WHOLE_TILE else (3, 2))
    reason = ruled_report["path_reason"]
    assert reason.startswith("a carried accumulator rescaled each step: ")
    if mode == WHOLE_TILE:
        assert (ruled_report["path"], ruled_report["form"]) == ("tensor_ops", "rescaled")
        assert "no more barriers than simdgroup matrices' 1 barrier" in reason
    else:
        assert ruled_report["path"] == "simdgroup" and "km_tensor" not in ruled.source
        assert f"simdgroup matrices, 2 barriers, {simdgroup_report['threadgroup_bytes_per_k_step']} bytes" in reason
