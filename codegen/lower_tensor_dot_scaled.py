"""`tt.dot_scaled` on Metal 4 tensor ops: a K loop's carried accumulator (MSL 4.0 targets).

A loop `acc = tl.dot_scaled(a, sa, fa, b, sb, fb, acc)`, or `acc += tl.dot_scaled(...)`, whose
accumulator only the dot uses keeps it as the tensor op's cooperative tensor across the loop,
as a `tl.dot` GEMM does (`lower_tensor_dot_loop.py`: the same `carried_dots`, `begin_carried`
and `end_carried`; the iteration is `lower_dot_scaled.run_carried_on_tensor_ops`). Each
iteration:
* every thread writes its registers of both operands and their scales into threadgroup memory
  as they were loaded (the staging of `lower_dot_scaled.py`, the whole of K), and a barrier;
* the threads dequantize A (M x K) and B (K x N) from those bytes into bfloat16 tiles (float32
  when an operand is fp16), element by element in a loop over the tile, each element the value
  `lower_dot_scaled` builds into fragments, and a barrier;
* `km_tensor_run` accumulates A @ B into the cooperative tensor.
Two barriers a K step, as a chunk of the simdgroup form takes. No barrier follows the run: the
next iteration writes the operands' bytes, which no thread reads after the second barrier, and
the tiles only after its own first barrier, which every thread reaches after this run; any
other use of the code generator's scratch in the loop waits for a barrier first
(`LoweringContext.busy_own_scratch`).

Every other `tl.dot_scaled` (a single dot, tiles that are not whole tensor-op tiles, staging
that does not fit) keeps the fragments of `lower_dot_scaled.py`.
"""

from __future__ import annotations

from math import prod

from triton_metal.ir.ops.tt_compute import DotScaledOp
from triton_metal.ir.types import ScalarType, TensorType

from . import lower_dot, lower_tensor_dot
from .context import LoweringContext

_COMPUTE_BYTES = {"bfloat": 2, "float": 4}


def compute_type(op: DotScaledOp) -> str:
    """The MSL type the operands are dequantized to: bfloat16, or float32 when one is fp16
    (lower_dot_scaled.py's module doc)."""
    return "float" if "fp16" in (op.a_format, op.b_format) else "bfloat"


def shape_of(op: DotScaledOp) -> tuple[int, int, int]:
    """M, N and K in elements (an e2m1 operand holds two a byte)."""
    c_ty = op.c.type
    assert isinstance(c_ty, TensorType)
    m, n = c_ty.shape
    a_ty = op.a.type
    assert isinstance(a_ty, TensorType)
    k = a_ty.shape[1] * (2 if op.a_format == "e2m1" and op.a_k_pack else 1)
    return m, n, k


def raw_bytes(op: DotScaledOp) -> int:
    """Threadgroup bytes of both operands and their scales as loaded (`lower_dot_scaled`'s
    staging of the whole of K: each block rounded to 16)."""
    total = 0
    for value, scale in ((op.a, op.a_scale), (op.b, op.b_scale)):
        for v in (value, scale):
            if v is None:
                continue
            ty = v.type
            assert isinstance(ty, TensorType) and isinstance(ty.element, ScalarType)
            unit = 2 if ty.element.name in ("bf16", "f16", "u16") else 1
            total += lower_dot.round16(prod(ty.shape) * unit)
    return total


def tile_bytes(op: DotScaledOp) -> tuple[int, int]:
    """Threadgroup bytes of the dequantized A and B tiles."""
    m, n, k = shape_of(op)
    unit = _COMPUTE_BYTES[compute_type(op)]
    return lower_dot.round16(m * k * unit), lower_dot.round16(k * n * unit)


def own_bytes(op: DotScaledOp) -> int:
    """The code generator's scratch the carried dot takes: the operands as loaded, then the
    dequantized tiles; C (staged before and after the loop) over them."""
    m, n, _ = shape_of(op)
    return max(raw_bytes(op) + sum(tile_bytes(op)), lower_dot.round16(m * n * 4))


def scaled_tile(ctx: LoweringContext, op: DotScaledOp) -> lower_tensor_dot.TensorTile:
    m, n, k = shape_of(op)
    return lower_tensor_dot.TensorTile(m, n, k, compute_type(op), "float", ctx.num_warps)
