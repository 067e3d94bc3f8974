"""`gelu`, `gelu_approx`, `silu` (as `mlx.nn`'s) and the gated `swiglu`, `geglu`, forward and backward.

Elementwise kernels over the flattened arrays, computed in float32 and stored in the input
dtype. `ACT` picks the function: 0 gelu (erf form), 1 gelu_approx (tanh form, written as
`x * sigmoid(2 z)` since `0.5 (1 + tanh z) = sigmoid(2 z)`), 2 silu. It is a compile-time
argument, so each function has its own variant and a thread holds the registers its function
needs, not the most any of the three needs. Gated forms multiply by `up`:
`swiglu(gate, up) = silu(gate) * up`, `geglu(gate, up) = gelu(gate) * up`.

Tuning: `BLOCK` (elements per program) and `num_warps`, keyed on the element count and the
function; a config with more threads than elements in its block is pruned.
"""

from __future__ import annotations

from typing import Any

import triton_metal as triton
import triton_metal.language as tl

from . import _common as c

GELU, GELU_APPROX, SILU = 0, 1, 2
SQRT1_2 = tl.constexpr(0.7071067811865476)
INV_SQRT_2PI = tl.constexpr(0.3989422804014327)
TANH_C = tl.constexpr(0.7978845608028654)  # sqrt(2 / pi)


def _prune(configs: list[Any], named_args: dict[str, Any], **kwargs: Any) -> list[Any]:
    return c.first_or_all([cf for cf in configs if 32 * cf.num_warps <= cf.kwargs["BLOCK"]])


# (BLOCK, num_warps), the default first: 1024 elements on 4 warps (8 a thread) was the fastest
# of these for every activation, forward and backward, f16 and bf16, through the GPU proxy
# (docs/ops.md, "Ninth round"); larger blocks hold more elements a thread in registers
_CONFIGS = [triton.Config({"BLOCK": b}, num_warps=w) for b in (1024, 2048, 4096) for w in (4, 8)]
_TUNING = {"early_config_prune": _prune}


@triton.jit
def _act(x, ACT: tl.constexpr):
    if ACT == 0:
        y = 0.5 * x * (1.0 + tl.erf(x * SQRT1_2))
    elif ACT == 1:
        y = x * tl.sigmoid(2.0 * TANH_C * (x + 0.044715 * x * x * x))
    else:
        y = x * tl.sigmoid(x)
    return y


@triton.jit
def _sigmoid_slope(z):
    # sigmoid(z) and its slope sigmoid(z) * sigmoid(-z), from one exponential and one division:
    # with t = exp(-|z|) and r = 1 / (1 + t), sigmoid(z) is r or t * r by the sign of z, and
    # the slope t * r * r either way. The slope is not taken from 1 - sigmoid(z): where
    # sigmoid(z) rounds to just under 1 that leaves an ulp instead of exp(-z), which the
    # gradients below multiply by up to x^3 (12760 for gelu_approx at 1e4)
    t = tl.exp(-tl.abs(z))
    r = 1.0 / (1.0 + t)
    tr = t * r
    return tl.where(z >= 0.0, r, tr), tr * r


@triton.jit
def _act_grad(x, ACT: tl.constexpr):
    if ACT == 0:
        d = 0.5 * (1.0 + tl.erf(x * SQRT1_2)) + x * INV_SQRT_2PI * tl.exp(-0.5 * x * x)
    elif ACT == 1:
        s, slope = _sigmoid_slope(2.0 * TANH_C * (x + 0.044715 * x * x * x))
        d = s + x * slope * 2.0 * TANH_C * (1.0 + 3.0 * 0.044715 * x * x)
    else:
        s, slope = _sigmoid_slope(x)
        d = s + x * slope
    return d


@triton.autotune(configs=_CONFIGS, key=["n", "ACT", "GATED"], prune_configs_by=_TUNING)
@triton.jit
def _act_fwd(x_ptr, up_ptr, y_ptr, n, ACT: tl.constexpr, GATED: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = _act(x, ACT)
    if GATED:
        y = y * tl.load(up_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, y, mask=mask)


@triton.autotune(configs=_CONFIGS, key=["n", "ACT", "GATED"], prune_configs_by=_TUNING)
@triton.jit
def _act_bwd(x_ptr, up_ptr, dy_ptr, dx_ptr, dup_ptr, n, ACT: tl.constexpr, GATED: tl.constexpr,
             BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    if GATED:
        up = tl.load(up_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(dup_ptr + offs, dy * _act(x, ACT), mask=mask)
        dy = dy * up
    tl.store(dx_ptr + offs, dy * _act_grad(x, ACT), mask=mask)


def _grid(n: int) -> Any:
    return lambda meta: (triton.cdiv(n, meta["BLOCK"]),)


def _forward(x: Any, up: Any, act: int) -> Any:
    y = c.zeros(x.shape, x.dtype)
    if x.size:
        _act_fwd[_grid(x.size)](x, x if up is None else up, y, x.size, act, GATED=up is not None)
    return y


def _backward(x: Any, up: Any, dy: Any, act: int) -> tuple[Any, Any]:
    dx = c.zeros(x.shape, x.dtype)
    dup = c.zeros(x.shape, x.dtype) if up is not None else None
    if x.size:
        _act_bwd[_grid(x.size)](x, x if up is None else up, dy.astype(x.dtype), dx,
                                 dx if dup is None else dup, x.size, act, GATED=up is not None)
    return dx, dup


@triton.op(name="activation")
def _act_op(x: Any, act: int) -> Any:
    return _forward(x, None, act)


@_act_op.backward
def _act_vjp(primals: Any, cotangents: Any, outputs: Any) -> Any:
    x, act = primals
    return (_backward(x, None, c.first(cotangents), act)[0],)


@triton.op(name="gated_activation")
def _gated_op(gate: Any, up: Any, act: int) -> Any:
    return _forward(gate, up, act)


@_gated_op.backward
def _gated_vjp(primals: Any, cotangents: Any, outputs: Any) -> Any:
    gate, up, act = primals
    return _backward(gate, up, c.first(cotangents), act)


def _unary(name: str, x: Any, act: int) -> Any:
    c.check_array(name, "x", x, min_ndim=0)
    return _act_op(x, act)


def _gated(name: str, gate: Any, up: Any, act: int) -> Any:
    c.check_array(name, "gate", gate, min_ndim=0)
    c.check_array(name, "up", up, min_ndim=0)
    if tuple(up.shape) != tuple(gate.shape):
        raise c.fail(name, "up", f"shape {tuple(up.shape)} differs from gate's {tuple(gate.shape)}")
    c.check_same_dtype(name, "up", up, "gate", gate)
    return _gated_op(gate, up, act)


def gelu(x: Any) -> Any:
    """`x * (1 + erf(x / sqrt(2))) / 2`, as `mlx.nn.gelu`; float32/float16/bfloat16, any shape."""
    return _unary("gelu", x, GELU)


def gelu_approx(x: Any) -> Any:
    """`0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))`, as `mlx.nn.gelu_approx`."""
    return _unary("gelu_approx", x, GELU_APPROX)


def silu(x: Any) -> Any:
    """`x * sigmoid(x)`, as `mlx.nn.silu`."""
    return _unary("silu", x, SILU)


def swiglu(gate: Any, up: Any) -> Any:
    """`silu(gate) * up` fused (the SwiGLU MLP's gate); `gate` and `up` of one shape and dtype.

    Differentiable in both."""
    return _gated("swiglu", gate, up, SILU)


def geglu(gate: Any, up: Any) -> Any:
    """`gelu(gate) * up` fused (exact, erf form); `gate` and `up` of one shape and dtype."""
    return _gated("geglu", gate, up, GELU)
