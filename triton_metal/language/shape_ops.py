"""`tl` builtins that create and reshape blocks: program ids, `arange`, `full`, views, joins."""

from __future__ import annotations

from typing import Any

from .core import _tensor_member_fn, _unwrap, builtin, constexpr, tensor
from .semantic import Semantic


def _shape_args(shape: tuple[Any, ...]) -> list[Any]:
    """`f(x, 2, 3)` and `f(x, (2, 3))` both mean the shape (2, 3)."""
    if len(shape) == 1:
        only = _unwrap(shape[0])
        if isinstance(only, (tuple, list)):
            return [_unwrap(s) for s in only]
    return [_unwrap(s) for s in shape]


@builtin
def program_id(axis: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    return _semantic.program_id(_unwrap(axis))


@builtin
def num_programs(axis: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    return _semantic.num_programs(_unwrap(axis))


@builtin
def arange(start: Any, end: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    return _semantic.arange(_unwrap(start), _unwrap(end))


@builtin
def full(shape: Any, value: Any, dtype: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    return _semantic.full(_unwrap(shape), _unwrap(value), _unwrap(dtype))


@builtin
def dtype_call(ty: Any, value: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    """`tl.float32(x)`: `x` as the dtype `ty`: a tensor converted as `x.to(ty)` does, a Python or
    constexpr number as the scalar `tl.full([], x, ty)`. (Triton 3.8 raises "'dtype' object
    is not callable" here; libraries write it, and its meaning is not in doubt.)"""
    value = _unwrap(value)
    if isinstance(value, tensor):
        return _semantic.cast(value, _unwrap(ty))
    return _semantic.full([], value, _unwrap(ty))


@builtin
def zeros(shape: Any, dtype: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    return _semantic.full(_unwrap(shape), 0, _unwrap(dtype))


@builtin
def zeros_like(input: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]  # noqa: A002
    x = _semantic.to_tensor(input)
    return _semantic.full([s.value for s in x.shape], 0, x.dtype)


@builtin
def to_tensor(x: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    return _semantic.to_tensor(_unwrap(x))


@builtin
def cdiv(x: Any, div: Any, _semantic: Semantic = None) -> Any:  # type: ignore[assignment]
    """Ceiling division; folds to a constexpr when both operands are compile-time integers."""
    x, div = _unwrap(x), _unwrap(div)
    if not isinstance(x, tensor) and not isinstance(div, tensor):
        return constexpr((x + div - 1) // div)
    return _semantic.floordiv(_semantic.sub(_semantic.add(x, div), 1), div)


@_tensor_member_fn
@builtin
def reshape(input: Any, *shape: Any, can_reorder: Any = False, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]  # noqa: A002
    return _semantic.reshape(input, _shape_args(shape), bool(_unwrap(can_reorder)))


@_tensor_member_fn
@builtin
def view(input: Any, *shape: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]  # noqa: A002
    return _semantic.reshape(input, _shape_args(shape), True)


@_tensor_member_fn
@builtin
def ravel(x: Any, can_reorder: Any = False, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    t = _semantic.to_tensor(x)
    return _semantic.reshape(t, [t.numel.value], bool(_unwrap(can_reorder)))


@_tensor_member_fn
@builtin
def trans(input: Any, *dims: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]  # noqa: A002
    return _semantic.trans(input, _shape_args(dims) if dims else ())


@_tensor_member_fn
@builtin
def permute(input: Any, *dims: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]  # noqa: A002
    return _semantic.permute(input, _shape_args(dims))


@_tensor_member_fn
@builtin
def broadcast_to(input: Any, *shape: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]  # noqa: A002
    return _semantic.broadcast_to(input, _shape_args(shape))


@builtin
def broadcast(input: Any, other: Any, _semantic: Semantic = None) -> tuple[tensor, tensor]:  # type: ignore[assignment]  # noqa: A002
    return _semantic.broadcast(_unwrap(input), _unwrap(other))


@_tensor_member_fn
@builtin
def expand_dims(input: Any, axis: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]  # noqa: A002
    return _semantic.expand_dims(_unwrap(input), _unwrap(axis))


@builtin
def unsqueeze(input: Any, dim: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]  # noqa: A002
    return _semantic.expand_dims(_unwrap(input), _unwrap(dim))


@builtin
def squeeze(input: Any, dim: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]  # noqa: A002
    return _semantic.squeeze(_unwrap(input), _unwrap(dim))


@builtin
def cat(input: Any, other: Any, can_reorder: Any = False, dim: Any = 0, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]  # noqa: A002
    return _semantic.cat(_unwrap(input), _unwrap(other), bool(_unwrap(can_reorder)), _unwrap(dim))


@builtin
def join(a: Any, b: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    return _semantic.join(_unwrap(a), _unwrap(b))


@_tensor_member_fn
@builtin
def split(a: Any, _semantic: Semantic = None) -> tuple[tensor, tensor]:  # type: ignore[assignment]
    return _semantic.split(_unwrap(a))


@builtin
def interleave(a: Any, b: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    return _semantic.interleave(_unwrap(a), _unwrap(b))


@_tensor_member_fn
@builtin
def gather(src: Any, index: Any, axis: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    return _semantic.gather(_unwrap(src), _unwrap(index), _unwrap(axis))


@_tensor_member_fn
@builtin
def histogram(input: Any, num_bins: Any, mask: Any = None, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]  # noqa: A002
    return _semantic.histogram(_unwrap(input), _unwrap(num_bins), _unwrap(mask))


@_tensor_member_fn
@builtin
def flip(x: Any, dim: Any = None, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    return _semantic.flip(_unwrap(x), _unwrap(dim))


@builtin
def swizzle2d(i: Any, j: Any, size_i: Any, size_j: Any, size_g: Any, _semantic: Semantic = None) -> tuple[Any, Any]:  # type: ignore[assignment]
    """Map row-major (i, j) of a size_i x size_j grid to grouped order (groups of size_g rows)."""
    s = _semantic
    i, j, size_i, size_j, size_g = (_unwrap(v) for v in (i, j, size_i, size_j, size_g))
    ij = s.add(s.mul(i, size_j), j)
    size_gj = s.mul(size_g, size_j) if isinstance(size_g, tensor) or isinstance(size_j, tensor) else size_g * size_j
    group_id = s.floordiv(ij, size_gj)
    off_i = s.mul(group_id, size_g)
    g = s.minimum(s.sub(size_i, off_i), size_g)
    # the index within the group first: on a partial last group (g < size_g) `ij % g` differs
    # from `(ij % size_gj) % g`, and Triton takes the latter
    ij = s.mod(ij, size_gj)
    new_i = s.add(off_i, s.mod(ij, g))
    new_j = s.floordiv(ij, g)
    return new_i, new_j
