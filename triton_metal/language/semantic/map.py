"""Semantic layer, `tl.map_elementwise`: a scalar `@jit` function applied to every element.

The operands broadcast to one shape; the builder makes one elementwise operation whose body is
the function traced on scalars (the IR builder calls it once on block arguments, the NumPy
builder on whole arrays, element by element where the function's control flow needs it). `pack`
hands the function `pack` consecutive elements (in row-major order) of each operand at once:
the operands are reshaped to `[numel / pack, pack]` and taken apart column by column with
`split`, and the function's results are put back with `join` and `reshape`, so both backends
group the same elements. Triton leaves the grouping to the hardware's registers; a function
that treats the elements of a pack alike gives the same values either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..builder import Handle
from ..core import constexpr, tensor
from ..types import block_type
from .base import SemanticBase, error, is_pow2


def _opt(x: Any) -> Any:
    return x.value if isinstance(x, constexpr) else x


class MapMixin(SemanticBase):
    def map_elementwise(self, fn: Any, args: Sequence[Any], pack: Any = 1, generator: Any = None) -> Any:
        if not callable(fn):
            raise error(f"tl.map_elementwise needs a @jit function, got {fn!r}")
        pack = _opt(pack)
        if isinstance(pack, bool) or not isinstance(pack, int) or pack < 1 or not is_pow2(pack):
            raise error(f"tl.map_elementwise's pack must be a power of two, got {pack!r}")
        xs = self._map_operands(args)
        shape = list(xs[0].type.shape)
        numel = xs[0].type.numel
        if numel % pack:
            raise error(f"tl.map_elementwise: {numel} elements do not split into packs of {pack}")
        columns = [c for x in xs for c in self._pack_columns(x, pack)]
        outs = self._map_packed(fn, columns, generator)
        if len(outs) % pack:
            raise error(f"tl.map_elementwise: the function returned {len(outs)} values, "
                        f"not a multiple of pack={pack}")
        results = [self.reshape(self._unpack_columns(outs[i:i + pack]), shape)  # type: ignore[attr-defined]
                   for i in range(0, len(outs), pack)]
        return results[0] if len(results) == 1 else tuple(results)

    def _map_operands(self, args: Sequence[Any]) -> list[tensor]:
        if not args:
            raise error("tl.map_elementwise needs at least one tensor argument")
        xs = [self.to_tensor(_opt(a)) for a in args]
        if not any(x.type.is_block() for x in xs):
            raise error("tl.map_elementwise needs at least one block argument",
                        hint="call the function directly on scalars")
        for i in range(len(xs)):
            for j in range(len(xs)):
                if i != j:
                    xs[i], xs[j] = self.broadcast_impl_value(xs[i], xs[j])
        return xs

    def _pack_columns(self, x: tensor, pack: int) -> list[tensor]:
        """The `pack` columns of `x` seen as `[numel / pack, pack]`, each of `numel / pack`."""
        if pack == 1:
            return [x]
        rows = x.type.numel // pack
        return _columns(self, self.reshape(x, [rows] + [2] * (pack.bit_length() - 1)))  # type: ignore[attr-defined]

    def _unpack_columns(self, columns: Sequence[tensor]) -> tensor:
        if len(columns) == 1:
            return columns[0]
        return self.join(self._unpack_columns(columns[0::2]), self._unpack_columns(columns[1::2]))  # type: ignore[attr-defined]

    def _map_packed(self, fn: Any, columns: list[tensor], generator: Any) -> list[tensor]:
        dtypes = [c.type.scalar for c in columns]
        shape = list(columns[0].type.shape)
        returned: list[Any] = []

        def body(handles: Sequence[Handle]) -> list[Handle]:
            out = self.call_jit(fn, [tensor(h, d) for h, d in zip(handles, dtypes)], generator)
            values = list(out) if isinstance(out, (tuple, list)) else [out]
            ts = [self.to_tensor(_opt(v)) for v in values]
            if any(t.type.is_block() for t in ts):
                raise error("the tl.map_elementwise function must return scalars")
            returned[:] = [t.type.scalar for t in ts]
            return [t.handle for t in ts]

        handles = self.builder.create_map_elementwise([c.handle for c in columns], body)
        return [tensor(h, block_type(d, shape)) for h, d in zip(handles, returned)]


def _columns(sem: Any, x: tensor) -> list[tensor]:
    """The elements of `x` (shape `[rows, 2, ..., 2]`) by their index in the trailing axes, read
    as one binary number (the last axis its lowest bit): `split` takes the lowest bit apart."""
    if len(x.type.shape) == 1:
        return [x]
    even, odd = sem.split(x)
    return [c for pair in zip(_columns(sem, even), _columns(sem, odd)) for c in pair]


__all__ = ["MapMixin"]
