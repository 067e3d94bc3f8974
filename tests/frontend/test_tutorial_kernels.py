"""Tutorial-style kernels compile to IR that verifies, round-trips, and has the expected shape."""

from __future__ import annotations

import re

import triton_metal.language as tl
from triton_metal.language.jit_marker import JITCallable

from .helpers import C, compile_kernel, ir_text, op_names


def jit(fn):  # noqa: ANN001, ANN201 - the marker alone, without the runtime
    return JITCallable(fn)


def count(text: str, op: str) -> int:
    return len(re.findall(rf"= {re.escape(op)} |^\s*{re.escape(op)}( |$)", text, flags=re.M))


def vector_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def test_vector_add() -> None:
    text = ir_text(vector_add, "*fp32/16", "*fp32/16", "*fp32/16", "i32", C(256))
    assert "tt.func @vector_add(%x_ptr: !tt.ptr<f32> {tt.divisibility = 16}, %y_ptr: !tt.ptr<f32> {tt.divisibility = 16}, %out_ptr: !tt.ptr<f32> {tt.divisibility = 16}, %n: i32)" in text
    assert "%pid = tt.get_program_id {axis = 0} : i32" in text
    assert "arith.constant {value = 256} : i32" in text
    assert "tt.make_range {end = 256, start = 0} : tensor<256xi32>" in text
    assert "%mask = arith.cmpi %offs, " in text and "{predicate = slt} : tensor<256xi1>" in text
    assert re.search(r"%x = tt.load %\w+, mask %mask \{volatile = false\} : tensor<256xf32>", text)
    assert re.search(r"tt.store %\w+, %\w+, mask %mask$", text, flags=re.M)
    assert count(text, "arith.addf") == 1 and count(text, "tt.addptr") == 3


def test_vector_add_without_specialization_facts() -> None:
    text = ir_text(vector_add, "*fp16", "*fp16", "*fp16", "i64", C(64))
    assert "tt.func @vector_add(%x_ptr: !tt.ptr<f16>, %y_ptr: !tt.ptr<f16>, %out_ptr: !tt.ptr<f16>, %n: i64)" in text
    # i32 offsets compared with an i64 bound are widened first (Triton's promotion).
    assert "arith.extsi" in text and "{predicate = slt} : tensor<64xi1>" in text


def softmax(out_ptr, in_ptr, in_stride, out_stride, n_rows, n_cols, BLOCK: tl.constexpr):
    start = tl.program_id(0)
    step = tl.num_programs(0)
    for row in tl.range(start, n_rows, step, num_stages=2):
        row_ptr = in_ptr + row * in_stride
        cols = tl.arange(0, BLOCK)
        x = tl.load(row_ptr + cols, mask=cols < n_cols, other=-float("inf"))
        x = x - tl.max(x, axis=0)
        num = tl.exp(x)
        den = tl.sum(num, axis=0)
        tl.store(out_ptr + row * out_stride + cols, num / den, mask=cols < n_cols)


def test_softmax_loops_over_rows() -> None:
    text = ir_text(softmax, "*fp32/16", "*fp32/16", "i32/16", "i32/16", "i32", "i32", C(128))
    assert "tt.get_num_programs {axis = 0} : i32" in text
    assert re.search(r"scf.for %start, %n_rows, %step body \{\n\s+\^bb0\(%row: i32\):", text)
    assert "arith.constant {value = -inf} : f32" in text
    assert count(text, "tt.reduce") == 2
    assert "arith.maxnumf" in text or "arith.maximumf" in text  # the max combine function
    assert "math.exp" in text and "arith.divf" in text


def grouped_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                   ACTIVATION: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    tl.assume(stride_am > 0)
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    if ACTIVATION == "leaky_relu":
        accumulator = leaky_relu(accumulator)
    c = accumulator.to(tl.float16)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


@jit
def leaky_relu(x):
    return tl.where(x >= 0, x, 0.01 * x)


MATMUL_PARAMS = ("*fp16/16", "*fp16/16", "*fp16/16", "i32", "i32", "i32", "i32", C(1), "i32", C(1), "i32", C(1),
                 C(32), C(32), C(16), C(8))


def test_grouped_matmul_carries_accumulator_and_pointers() -> None:
    text = ir_text(grouped_matmul, *MATMUL_PARAMS, C(""))
    # The loop carries the accumulator and both pointer tiles, in order of first assignment.
    assert re.search(
        r"%accumulator_1, %a_ptrs_1, %b_ptrs_1 = scf.for %\w+, %\w+, %\w+, iter_args\(%accumulator, %a_ptrs, %b_ptrs\) body \{",
        text,
    ), text
    assert "^bb0(%k: i32, %accumulator_2: tensor<32x32xf32>, %a_ptrs_2: tensor<32x16x!tt.ptr<f16>>, %b_ptrs_2: tensor<16x32x!tt.ptr<f16>>):" in text
    assert re.search(r"%accumulator_3 = tt.dot %a, %b, %accumulator_2 \{input_precision = \"ieee\"\} : tensor<32x32xf32>", text)
    assert "} : tensor<32x32xf32>, tensor<32x16x!tt.ptr<f16>>, tensor<16x32x!tt.ptr<f16>>" in text
    assert "arith.truncf %accumulator_1 {rounding = rtne} : tensor<32x32xf16>" in text
    assert "tt.assume" in text
    assert "%group_size_m = arith.minsi" in text  # Python's min() on run-time values is tl.minimum
    assert "select" not in text  # no activation: the constexpr branch is not generated


def test_grouped_matmul_inlines_the_activation_chosen_by_a_constexpr() -> None:
    text = ir_text(grouped_matmul, *MATMUL_PARAMS, C("leaky_relu"))
    assert count(text, "arith.select") == 1
    assert "arith.constant {value = 0.01} : f32" in text


def layer_norm(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    mean = 0
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        tl.store(Y + cols, y, mask=mask)


def test_layer_norm() -> None:
    text = ir_text(layer_norm, "*fp16/16", "*fp16/16", "*fp32/16", "*fp32/16", "*fp32/16", "*fp32/16", "i32", "i32",
                   "fp32", C(256))
    assert count(text, "scf.for") == 3
    # `mean = 0` before the first loop is not carried by it (the loop does not assign it).
    assert "%_mean_1 = scf.for" in text and "%_var_1 = scf.for" in text
    assert "math.sqrt" in text
    assert re.search(r"tt.store %\w+, %mean_\d+$", text, flags=re.M) or re.search(r"tt.store %\w+, %mean$", text, flags=re.M)


def dropout(x_ptr, out_ptr, n, p, seed, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    random = tl.rand(seed, offsets)
    keep = random > p
    tl.store(out_ptr + offsets, tl.where(keep, x / (1 - p), 0.0), mask=mask)


def test_dropout_inlines_philox() -> None:
    text = ir_text(dropout, "*fp32/16", "*fp32/16", "i32", "fp32", "i32", C(128))
    # ten Philox rounds, unrolled by tl.static_range: two 32-bit high-half products each
    assert count(text, "tt.mulhi") == 20
    assert "scf.for" not in text
    assert "arith.uitofp" in text or "arith.sitofp" in text


def cumsum(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.store(y_ptr + offs, tl.cumsum(x, axis=0), mask=offs < n)


def test_cumsum_is_a_scan_with_an_add_region() -> None:
    text = ir_text(cumsum, "*i32/16", "*i32/16", "i32", C(64))
    assert re.search(r"= tt.scan %x \{axis = 0, reverse = false\} combine \{\n\s+\^bb0\(%\w+: i32, %\w+: i32\):\n\s+%\w+ = arith.addi", text), text
    assert "tt.scan.return" in text


def histogram(x_ptr, hist_ptr, n, NUM_BINS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    bins = tl.histogram(x, NUM_BINS)
    tl.atomic_add(hist_ptr + tl.arange(0, NUM_BINS), bins)
    one = tl.full([BLOCK], 1, tl.int32)
    tl.atomic_add(hist_ptr + x % NUM_BINS, one, mask=mask, sem="relaxed")


def test_histogram_with_atomics() -> None:
    text = ir_text(histogram, "*i32/16", "*i32/16", "i32", C(16), C(256))
    assert re.search(r"= tt.histogram %x : tensor<16xi32>", text)
    assert "tt.atomic_rmw" in text and "{kind = add, scope = \"gpu\", sem = \"acq_rel\"}" in text
    assert "{kind = add, scope = \"gpu\", sem = \"relaxed\"}" in text


@jit
def attn_inner(acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, start_m, qk_scale,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL_DIAG: tl.constexpr, offs_m, offs_n, N_CTX):
    if CAUSAL_DIAG:
        lo, hi = start_m * BLOCK_M, (start_m + 1) * BLOCK_M
    else:
        lo, hi = 0, N_CTX
    k_ptrs += lo * stride_kn
    v_ptrs += lo * stride_kn
    for start_n in range(lo, hi, BLOCK_N):
        k = tl.load(k_ptrs)
        qk = tl.dot(q, tl.trans(k))
        if CAUSAL_DIAG:
            mask = offs_m[:, None] >= (start_n + offs_n[None, :])
            qk = qk * qk_scale + tl.where(mask, 0, -1.0e6)
        else:
            qk = qk * qk_scale
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = tl.load(v_ptrs)
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
        k_ptrs += BLOCK_N * stride_kn
        v_ptrs += BLOCK_N * stride_kn
    return acc, l_i, m_i


def attention_fwd(Q, K, V, Out, stride_m, N_CTX, sm_scale,
                  HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + offs_m[:, None] * stride_m + offs_d[None, :])
    k_ptrs = K + offs_n[:, None] * stride_m + offs_d[None, :]
    v_ptrs = V + offs_n[:, None] * stride_m + offs_d[None, :]
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    if CAUSAL:
        acc, l_i, m_i = attn_inner(acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_m, start_m, qk_scale,
                                   BLOCK_M, BLOCK_N, True, offs_m, offs_n, N_CTX)
    else:
        acc, l_i, m_i = attn_inner(acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_m, start_m, qk_scale,
                                   BLOCK_M, BLOCK_N, False, offs_m, offs_n, N_CTX)
    acc = acc / l_i[:, None]
    tl.store(Out + offs_m[:, None] * stride_m + offs_d[None, :], acc.to(Out.dtype.element_ty))


ATTN = ("*fp16/16", "*fp16/16", "*fp16/16", "*fp16/16", "i32/16", "i32", "fp32", C(64), C(32), C(32))


def test_flash_attention_causal_branch_on_a_constexpr() -> None:
    causal = ir_text(attention_fwd, *ATTN, C(True))
    plain = ir_text(attention_fwd, *ATTN, C(False))
    for text in (causal, plain):
        assert count(text, "scf.for") == 1 and count(text, "scf.if") == 0
        assert count(text, "tt.dot") == 2 and count(text, "tt.trans") == 1
        # carried in order of first assignment in the body: l_i, acc, m_i, k_ptrs, v_ptrs
        assert "} : tensor<32xf32>, tensor<32x64xf32>, tensor<32xf32>, tensor<32x64x!tt.ptr<f16>>, tensor<32x64x!tt.ptr<f16>>" in text
    # Only the causal variant masks the diagonal block (a select on a 2-D i1 mask).
    assert count(causal, "arith.select") == 1 and count(plain, "arith.select") == 0
    assert "{predicate = sge} : tensor<32x32xi1>" in causal


def test_examples_compile_to_verified_ir() -> None:
    """The repository's example kernels, through the same entry point the runtime uses."""
    import examples.flash_attention as fa
    import examples.layer_norm as ln

    m = compile_kernel(ln._layer_norm_fwd_fused, "*fp32/16", "*fp32/16", "*fp32/16", "*fp32/16", "*fp32/16",
                       "*fp32/16", "i32", "i32", "fp32", C(128))
    assert "scf.for" in op_names(m)
    params = ["*fp16/16"] * 3 + ["fp32", "*fp32/16", "*fp16/16"] + ["i32/16"] * 16 + ["i32", "i32", C(64), C(32), C(32), C(3)]
    m = compile_kernel(fa._attn_fwd, *params)
    assert op_names(m).count("tt.dot") == 4


def shapes_and_math(x_ptr, i_ptr, out_ptr):
    r = tl.arange(0, 8)
    x = tl.load(x_ptr + r[:, None] * 4 + tl.arange(0, 4)[None, :])
    t = x.T
    p = tl.permute(x, (1, 0))
    y = tl.reshape(t, (32,))
    a, b = tl.split(tl.join(y, y))
    c = tl.cat(a, b, can_reorder=True)
    idx = tl.load(i_ptr + r)
    g = tl.gather(r.to(tl.float32), idx, 0)
    h = tl.histogram(idx, 8)
    s = tl.sqrt_rn(tl.abs(g)) + tl.fma(g, g, g) + tl.exp2(g) + tl.erf(g)
    m = tl.maximum(g, 1.0, propagate_nan=tl.PropagateNan.ALL)
    q = tl.umulhi(idx.to(tl.uint32), idx.to(tl.uint32))
    tl.debug_barrier()
    tl.device_print("s", s)
    print("h", h)
    tl.store(out_ptr + tl.arange(0, 64), c)
    tl.store(out_ptr + r, s + m + q.to(tl.float32) + tl.sum(p, 0))


def test_shape_and_math_builtins() -> None:
    text = ir_text(shapes_and_math, "*fp32", "*i32", "*fp32")
    expected = [
        "%t = tt.trans %x {order = [1, 0]} : tensor<4x8xf32>",
        "%y = tt.reshape %t {allow_reorder = false} : tensor<32xf32>",
        "tt.join %y, %y : tensor<32x2xf32>",
        "%a, %b = tt.split %",
        "%c = tt.cat %a, %b : tensor<64xf32>",
        "%g = tt.gather %",
        "%h = tt.histogram %idx : tensor<8xi32>",
        "tt.precise_sqrt", "math.fma %g, %g, %g", "math.exp2 %g", "math.erf %g",
        "%m = arith.maximumf %g,",
        "%q = tt.mulhi %", "arith.bitcast %idx : tensor<8xu32>",
        "tt.barrier",
        'tt.print %s {hex = false, is_signed = [false], prefix = " s: "}',
        'tt.print %h {hex = false, is_signed = [true], prefix = " h: "}',
        "arith.uitofp %q : tensor<8xf32>",
    ]
    for line in expected:
        assert line in text, line


def many_builtins(x_ptr, i_ptr, h_ptr, out_ptr, seed):
    r = tl.arange(0, 16)
    x = tl.load(x_ptr + r)
    i = tl.load(i_ptr + r)
    h = tl.load(h_ptr + r)
    a = tl.argmax(x, 0) + tl.argmin(x, 0)
    cp = tl.cumprod(x, 0)
    xs = tl.xor_sum(i, 0)
    ro = tl.reduce_or(i, 0)
    fl = tl.flip(x, 0)
    sw = tl.swizzle2d(i, i, 4, 4, 2)
    cl = tl.clamp(x, 0.0, 1.0)
    sg = tl.sigmoid(x)
    sm = tl.softmax(x)
    rn = tl.randn(seed, r)
    tl.atomic_min(i_ptr + r, i)
    tl.atomic_max(i_ptr + r, i)
    tl.atomic_and(i_ptr + r, i)
    tl.atomic_or(i_ptr + r, i)
    tl.atomic_xor(i_ptr + r, i)
    tl.atomic_xchg(i_ptr + r, i)
    fd = tl.fdiv(x, x) + tl.div_rn(x, x)
    z = tl.zeros_like(x) + tl.full([16], 2.5, tl.float32)
    b = tl.broadcast_to(x[None, :], (2, 16))
    sq = tl.squeeze(tl.expand_dims(x, 0), 0)
    hh = h.to(tl.float32) + h.to(tl.bfloat16).to(tl.float32) + x.to(tl.float16, fp_downcast_rounding="rtz").to(tl.float32)
    bc = x.to(tl.int32, bitcast=True)
    hf = h.to(tl.float32)  # tl.exp, log and cos take fp32 (and fp64) only, as in Triton
    ex = tl.exp(hf) + tl.log(hf) + tl.cos(hf)
    mn = tl.minimum(x, fl, propagate_nan=tl.PropagateNan.ALL)
    total = x + a + cp + xs + ro + fl + cl + sg + sm + rn + fd + z + sq + hh + ex.to(tl.float32) + mn + bc
    tl.store(out_ptr + r, total + sw[0] + sw[1] + tl.sum(b, axis=0))


def test_wide_builtin_coverage() -> None:
    names = set(op_names(ir_text(many_builtins, "*fp32", "*i32", "*fp16", "*fp32", "i32")))
    expected = {
        "tt.reduce", "tt.scan", "tt.reduce.return", "tt.scan.return", "arith.cmpf", "arith.select", "arith.xori",
        "arith.ori", "tt.atomic_rmw", "arith.divf", "math.exp", "math.log", "math.cos", "arith.minimumf",
        "arith.extf", "arith.truncf", "arith.bitcast", "tt.broadcast", "tt.expand_dims", "tt.mulhi",
        "math.sqrt", "math.log",
    }
    assert expected - names == set()
