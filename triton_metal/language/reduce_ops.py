"""`tl` builtins that combine many elements: reductions, scans, `softmax`, `dot`."""

from __future__ import annotations

from typing import Any

from .core import _tensor_member_fn, _unwrap, builtin, tensor
from .semantic import Semantic


def _operands(input: Any) -> tuple[list[Any], bool]:  # noqa: A002
    """The tensors a reduction or scan combines, and whether a single tensor (not a tuple) came."""
    inputs = _unwrap(input)
    single = isinstance(inputs, tensor) or not isinstance(inputs, (tuple, list))
    return ([inputs] if single else list(inputs)), single


@_tensor_member_fn
@builtin
def reduce(input: Any, axis: Any, combine_fn: Any, keep_dims: Any = False,  # noqa: A002
           _semantic: Semantic = None, _generator: Any = None) -> Any:  # type: ignore[assignment]
    """Reduce `input` (a tensor or a tuple of tensors) along `axis` with a `@jit` combine_fn."""
    xs, single = _operands(input)
    combine = _semantic.user_combine(_unwrap(combine_fn), _generator)
    out = _semantic.reduction(xs, _unwrap(axis), combine, _unwrap(keep_dims))
    return out[0] if single else out


@_tensor_member_fn
@builtin
def associative_scan(input: Any, axis: Any, combine_fn: Any, reverse: Any = False,  # noqa: A002
                     _semantic: Semantic = None, _generator: Any = None) -> Any:  # type: ignore[assignment]
    """Inclusive scan of `input` (a tensor or a tuple of tensors) along `axis` with combine_fn."""
    xs, single = _operands(input)
    combine = _semantic.user_combine(_unwrap(combine_fn), _generator)
    out = _semantic.scan(xs, _unwrap(axis), combine, _unwrap(reverse))
    return out[0] if single else out


@_tensor_member_fn
@builtin
def sum(input: Any, axis: Any = None, keep_dims: Any = False, dtype: Any = None,  # noqa: A001,A002
        _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    return _semantic.sum(_unwrap(input), _unwrap(axis), _unwrap(keep_dims), _unwrap(dtype))


@_tensor_member_fn
@builtin
def max(input: Any, axis: Any = None, return_indices: Any = False,  # noqa: A001,A002
        return_indices_tie_break_left: Any = True, keep_dims: Any = False,
        _semantic: Semantic = None) -> Any:  # type: ignore[assignment]
    return _semantic.max(_unwrap(input), _unwrap(axis), _unwrap(return_indices),
                         _unwrap(return_indices_tie_break_left), _unwrap(keep_dims))


@_tensor_member_fn
@builtin
def min(input: Any, axis: Any = None, return_indices: Any = False,  # noqa: A001,A002
        return_indices_tie_break_left: Any = True, keep_dims: Any = False,
        _semantic: Semantic = None) -> Any:  # type: ignore[assignment]
    return _semantic.min(_unwrap(input), _unwrap(axis), _unwrap(return_indices),
                         _unwrap(return_indices_tie_break_left), _unwrap(keep_dims))


@_tensor_member_fn
@builtin
def argmax(input: Any, axis: Any, tie_break_left: Any = True, keep_dims: Any = False,  # noqa: A002
           _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    return _semantic.max(_unwrap(input), _unwrap(axis), True, _unwrap(tie_break_left), _unwrap(keep_dims))[1]


@_tensor_member_fn
@builtin
def argmin(input: Any, axis: Any, tie_break_left: Any = True, keep_dims: Any = False,  # noqa: A002
           _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    return _semantic.min(_unwrap(input), _unwrap(axis), True, _unwrap(tie_break_left), _unwrap(keep_dims))[1]


@_tensor_member_fn
@builtin
def xor_sum(input: Any, axis: Any = None, keep_dims: Any = False,  # noqa: A002
            _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    return _semantic.xor_sum(_unwrap(input), _unwrap(axis), _unwrap(keep_dims))


@_tensor_member_fn
@builtin
def reduce_or(input: Any, axis: Any = None, keep_dims: Any = False,  # noqa: A002
              _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    return _semantic.reduce_or(_unwrap(input), _unwrap(axis), _unwrap(keep_dims))


@_tensor_member_fn
@builtin
def cumsum(input: Any, axis: Any = 0, reverse: Any = False, dtype: Any = None,  # noqa: A002
           _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    return _semantic.cumsum(_unwrap(input), _unwrap(axis), _unwrap(reverse), _unwrap(dtype))


@_tensor_member_fn
@builtin
def cumprod(input: Any, axis: Any = 0, reverse: Any = False, dtype: Any = None,  # noqa: A002
            _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    return _semantic.cumprod(_unwrap(input), _unwrap(axis), _unwrap(reverse), _unwrap(dtype))


@_tensor_member_fn
@builtin
def softmax(x: Any, dim: Any = None, keep_dims: Any = False, ieee_rounding: Any = False,
            _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    """exp(x - max) / sum(exp(x - max)) along `dim` (0 when None), computed as Triton does."""
    s = _semantic
    t = s.to_tensor(_unwrap(x))
    d = _unwrap(dim)
    d = 0 if d is None else d
    z = s.sub(t, s.max(t, d, False, True, True))
    from .builder import MathOp

    num = s.math_unary(MathOp.EXP, z, "softmax")
    den = s.sum(num, d, True)
    return s.fdiv(num, den, bool(_unwrap(ieee_rounding)))


@builtin
def dot(input: Any, other: Any, acc: Any = None, input_precision: Any = None,  # noqa: A002
        allow_tf32: Any = None, max_num_imprecise_acc: Any = None, out_dtype: Any = None,
        _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    """Matrix product of 2-D (or batched 3-D) blocks, plus `acc`; `allow_tf32` is ignored."""
    return _semantic.dot(_unwrap(input), _unwrap(other), _unwrap(acc), _unwrap(input_precision),
                         _unwrap(max_num_imprecise_acc), _unwrap(out_dtype))


@builtin
def dot_scaled(lhs: Any, lhs_scale: Any, lhs_format: Any, rhs: Any, rhs_scale: Any, rhs_format: Any,
               acc: Any = None, fast_math: Any = False, lhs_k_pack: Any = True, rhs_k_pack: Any = True,
               out_dtype: Any = None, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    """Matrix product of microscaled (MX) 2-D blocks (or batches of them: 3-D blocks with a
    leading batch axis on the operands, scales, `acc` and result), plus `acc`, as Triton's
    `tl.dot_scaled`.

    `lhs` is [M, K] ([M, K // 2] bytes for "e2m1", two values per byte along K, the even one in
    the low nibble; along M with `lhs_k_pack=False`), `rhs` [K, N] ([K // 2, N] for "e2m1"; along
    N with `rhs_k_pack=False`). Formats: "e2m1", "e4m3", "e5m2" (uint8 codes or fp8 blocks),
    "bf16", "fp16". Scales are e8m0 bytes, one per 32 elements along K: `lhs_scale` [M, K // 32],
    `rhs_scale` [N, K // 32], or None. The operands are dequantized into bfloat16 (float32 when
    one is "fp16") and multiplied with float32 accumulation; the result (and `acc`) have
    `out_dtype` (float32 by default). `fast_math` skips the NaN check of scale 255."""
    return _semantic.dot_scaled(_unwrap(lhs), _unwrap(lhs_scale), _unwrap(lhs_format), _unwrap(rhs),  # type: ignore[attr-defined, no-any-return]
                                _unwrap(rhs_scale), _unwrap(rhs_format), _unwrap(acc), _unwrap(fast_math),
                                _unwrap(lhs_k_pack), _unwrap(rhs_k_pack), _unwrap(out_dtype))
