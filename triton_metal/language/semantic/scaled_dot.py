"""Semantic layer: `dot_scaled`, microscaled (MX) operands dequantized into an ordinary `dot`.

Triton's signature and packing (`tl.dot_scaled(lhs, lhs_scale, lhs_format, rhs, rhs_scale,
rhs_format, acc=None, fast_math=False, lhs_k_pack=True, rhs_k_pack=True, out_dtype=float32)`):
* formats "e2m1" (two per uint8 along K, the even element in the low nibble; along M or N with
  `*_k_pack=False`), "e4m3" and "e5m2" (uint8 codes or fp8 blocks), "bf16" and "fp16" (uint16
  bits or the float block);
* 2-D blocks, or 3-D ones with a leading batch axis on the operands, the scales and `acc`;
* scales e8m0 (uint8, or int8 holding the same bits), one per 32 elements along K: lhs_scale
  is [M, K // 32], rhs_scale [N, K // 32] (Triton's layout: the right scale is indexed by
  column first), or None (no scaling); an e8m0 code `s` scales by the float32 with bits
  `s << 23` (2^(s - 127), and 0 for s = 0, as Triton's references compute it), and s = 255 is
  NaN (the OCP MX rule; `fast_math` leaves the check out, so 255 scales by infinity);
* NVFP4: e2m1 operands with float8e4nv scales, one per 16 elements along K (or 32, as Triton
  takes them on Rubin), the group read off the scales' shape; each scales by its e4m3 value.

The operands are multiplied as bfloat16 values, Triton's compute type for these formats
(float32 when an operand is fp16, where Triton computes in fp16): every e2m1, e4m3, e5m2 and bf16
value times a power of two is a bfloat16 (whose exponent range is float32's) as long as it stays
in the normal range, above 2^-126 in magnitude, and bfloat16 products are exact in the float32
accumulator. The accumulator and the result are float32; `out_dtype` float16 or bfloat16 rounds
the result once. Two forms, after the same checks:
* compiled 2-D tiles with M, N and K of at least 16: one `tt.dot_scaled` op on the operands and
  scales as loaded, which the code generator dequantizes where it builds the dot's fragments
  (codegen/lower_dot_scaled.py);
* otherwise (the interpreter, 3-D blocks, smaller tiles): the dequantization as elementwise code
  on the loaded blocks, then `dot` on bfloat16 blocks. Both compute the same values.
"""

from __future__ import annotations

from typing import Any

from ...fp8 import SCALED_FORMATS, scaled_extent
from ..core import constexpr, tensor
from ..types import bfloat16, float8e4nv, float8e5, float16, float32, int8, uint8, uint16, uint32
from .base import SemanticBase, error

SCALE_GROUP = 32
"""Elements along K sharing one e8m0 scale."""
NVFP4_GROUPS = (16, 32)
"""Elements along K sharing one float8e4nv scale (NVFP4; 32 as Triton takes it on Rubin)."""
_FLOAT_OF = {"e4m3": float8e4nv, "e5m2": float8e5, "bf16": bfloat16, "fp16": float16}
_BITS_OF = {"e4m3": uint8, "e5m2": uint8, "bf16": uint16, "fp16": uint16}


def _value(x: Any) -> Any:
    return x.value if isinstance(x, constexpr) else x


class ScaledDotMixin(SemanticBase):
    def dot_scaled(self, lhs: Any, lhs_scale: Any, lhs_format: Any, rhs: Any, rhs_scale: Any, rhs_format: Any,
                   acc: Any = None, fast_math: Any = False, lhs_k_pack: Any = True, rhs_k_pack: Any = True,
                   out_dtype: Any = float32) -> tensor:
        fa, fb = _value(lhs_format), _value(rhs_format)
        for side, fmt in (("lhs", fa), ("rhs", fb)):
            if fmt not in SCALED_FORMATS:
                raise error(f"NYI: {side}_format {fmt}", hint=f"formats: {', '.join(SCALED_FORMATS)}")
        fast, pack_a, pack_b = bool(_value(fast_math)), bool(_value(lhs_k_pack)), bool(_value(rhs_k_pack))
        for pack, fmt in ((pack_a, fa), (pack_b, fb)):
            if not pack and fmt != "e2m1":
                raise error("only mxfp4 inputs can be packed along a dimension different than K")
        out_ty = self._as_dtype(_value(out_dtype) if _value(out_dtype) is not None else float32, "out_dtype")
        if out_ty not in (float32, float16, bfloat16):
            raise error(f"dot_scaled out_dtype must be float32, float16 or bfloat16, not {out_ty!r}")
        a_raw, b_raw = self.to_tensor(_value(lhs)), self.to_tensor(_value(rhs))
        for side, t in (("lhs", a_raw), ("rhs", b_raw)):
            if not t.type.is_block():
                raise error(f"dot_scaled {side} must be a 2-D or 3-D block, got a scalar")
        shapes = (list(a_raw.type.shape), list(b_raw.type.shape))
        if not (len(shapes[0]) == len(shapes[1]) == 2 or len(shapes[0]) == len(shapes[1]) == 3):
            raise error(f"Both inputs must be either 2D or 3D; (lhs: {shapes[0]} vs rhs: {shapes[1]})")
        if len(shapes[0]) == 3 and shapes[0][0] != shapes[1][0]:
            raise error(f"dot_scaled batch sizes differ: {shapes[0][0]} and {shapes[1][0]}")
        pack_axes = (1 if pack_a else 0, 0 if pack_b else 1)
        self._check_operand(a_raw, fa, "lhs")
        self._check_operand(b_raw, fb, "rhs")
        (m, k), (kb, n) = scaled_extent(shapes[0], fa, pack_axes[0]), scaled_extent(shapes[1], fb, pack_axes[1])
        if k != kb:
            raise error(
                "Reduction dimension should pack the same number of elements; "
                f"(lhs: {shapes[0]} vs rhs: {shapes[1]})",
                hint="e2m1 operands hold two elements per byte along the packed axis",
            )
        lead = shapes[0][:-2]
        self._check_scale_factors(_value(lhs_scale), _value(rhs_scale), k)
        scale_a = self._checked_scale(_value(lhs_scale), "lhs", fa, lead, m, k)
        scale_b = self._checked_scale(_value(rhs_scale), "rhs", fb, lead, n, k)
        acc_t = None
        if _value(acc) is not None:
            acc_t = self.to_tensor(_value(acc))
            want = [*lead, m, n]
            if acc_t.type.scalar != out_ty or list(acc_t.type.shape) != want:
                raise error(f"dot_scaled accumulator has type {acc_t.type}, expected {out_ty!r} of shape {want}")
            acc_t = self.cast(acc_t, float32)
        if not self.eager and not lead and min(m, n, k) >= 16:
            # compiled 2-D tiles: one op that keeps the operands as loaded, dequantized by the
            # code generator where it builds the dot's fragments (codegen/lower_dot_scaled.py)
            if acc_t is None:
                acc_t = self.splat(self.scalar_constant(0.0, float32), [m, n])  # type: ignore[attr-defined]
            h = self.builder.create_dot_scaled(
                a_raw.handle, scale_a[0].handle if scale_a else None, fa, b_raw.handle,
                scale_b[0].handle if scale_b else None, fb, acc_t.handle, fast, pack_a, pack_b)
            return self.cast(tensor(h, acc_t.type), out_ty)
        a = self._scaled(self._dequantized(a_raw, fa, pack_axes[0]), scale_a, m, k, fast, transpose=False)
        b = self._scaled(self._dequantized(b_raw, fb, pack_axes[1]), scale_b, n, k, fast, transpose=True)
        # Triton's compute type: bfloat16 unless an operand is fp16 (float32 here, where Triton
        # takes fp16, so that no scaled value overflows)
        operand = float32 if "fp16" in (fa, fb) else bfloat16
        out = self.dot(self.cast(a, operand), self.cast(b, operand), acc_t, None, None, float32)  # type: ignore[attr-defined]
        return self.cast(out, out_ty)

    # -- operands ------------------------------------------------------------------------------
    @staticmethod
    def _check_operand(x: tensor, fmt: str, side: str) -> None:
        """Refuse an operand whose dtype does not carry `fmt`."""
        s = x.type.scalar
        if fmt == "e2m1":
            if s != uint8:
                raise error(f"e2m1 format must be packed as uint8. Got {s!r}", hint=f"pass {side} as uint8 bytes")
        elif s not in (_BITS_OF[fmt], _FLOAT_OF[fmt]):
            raise error(f"Unexpected dtype for {fmt}. Got {s!r}",
                        hint=f"pass {side} as {_BITS_OF[fmt]!r} bits or a {_FLOAT_OF[fmt]!r} block")

    def _dequantized(self, x: tensor, fmt: str, pack_axis: int) -> tensor:
        """The float32 values of an operand in format `fmt` (checked; e2m1 unpacked along
        `pack_axis` of its last two: 0 the rows, 1 the columns)."""
        if fmt == "e2m1":
            if len(x.type.shape) == 3:
                # a batch of blocks unpacks as the 2-D block of all their rows (pairs of rows
                # never straddle two blocks: each block has a whole number of byte rows)
                nb, r, c = x.type.shape
                flat = self._dequantized(self.reshape(x, [nb * r, c]), fmt, pack_axis)  # type: ignore[attr-defined]
                return self.reshape(flat, [nb, *[r * (2 - pack_axis), c * (1 + pack_axis)]])  # type: ignore[attr-defined, no-any-return]
            # the nibbles are interleaved as bytes (the shape ops move a quarter of float32's
            # bytes), then decoded
            pair = self.join(self.and_(x, 15), self.lshr(x, 4))  # type: ignore[attr-defined]  # [R, C, 2]
            r, c = x.type.shape
            if pack_axis == 0:  # bytes pack rows 2i and 2i + 1
                codes = self.reshape(self.trans(pair, (0, 2, 1)), [2 * r, c])  # type: ignore[attr-defined]
            else:  # element 2j in the low nibble, 2j + 1 in the high one
                codes = self.reshape(pair, [r, 2 * c])  # type: ignore[attr-defined]
            return self._e2m1(codes)
        if x.type.scalar == _BITS_OF[fmt]:
            x = self.bitcast(x, _FLOAT_OF[fmt])
        return self.cast(x, float32)

    def _e2m1(self, nibble: tensor) -> tensor:
        """4-bit e2m1 codes (sign, 2 exponent bits with bias 1, 1 mantissa bit) -> float32, built
        as float32 bit patterns: exact, and the same integer operations on every backend."""
        n = self.cast(nibble, uint32)
        sign = self.shl(self.lshr(n, 3), 31)  # type: ignore[attr-defined]
        exponent = self.and_(self.lshr(n, 1), 3)  # type: ignore[attr-defined]
        mantissa = self.and_(n, 1)  # type: ignore[attr-defined]
        normal = self.or_(self.shl(self.add(exponent, 126), 23), self.shl(mantissa, 22))  # type: ignore[attr-defined]
        half = self.mul(mantissa, 0x3F000000)  # type: ignore[attr-defined]  # 0.5 or 0
        bits = self.where(self.equal(exponent, 0), half, normal)  # type: ignore[attr-defined]
        return self.bitcast(self.or_(bits, sign), float32)  # type: ignore[attr-defined]

    def _check_scale_factors(self, lhs_scale: Any, rhs_scale: Any, k: int) -> None:
        """Triton's check before each side's: two block scales cover as many elements of K each
        (the factor is K over their last dimension)."""
        scales = [self.to_tensor(s) for s in (lhs_scale, rhs_scale) if s is not None]
        if len(scales) < 2 or not all(s.type.is_block() and s.type.shape[-1] for s in scales):
            return
        lhs, rhs = (k // s.type.shape[-1] for s in scales)
        if lhs != rhs:
            raise error(
                f"Operands must have the same scale factor; (lhs: {lhs} vs rhs: {rhs})",
                hint=f"one e8m0 scale per {SCALE_GROUP} elements along K on both sides (float8e4nv "
                "scales of NVFP4: one per 16)",
            )

    def _checked_scale(self, scale: Any, side: str, fmt: str, lead: list[int], rows: int, k: int
                       ) -> tuple[tensor, int] | None:
        """The scales of one operand (None: unscaled) and the elements along K each covers,
        refused unless they are e8m0 bytes [.., rows, K // 32] or NVFP4's float8e4nv ones."""
        if scale is None:
            return None
        sc = self.to_tensor(scale)
        if sc.type.is_block() and sc.type.scalar == float8e4nv:
            return sc, self._nvfp4_group(sc, side, fmt, lead, rows, k)
        if k % SCALE_GROUP:
            raise error(f"dot_scaled needs K to be a multiple of {SCALE_GROUP} for e8m0 scales, got K={k}")
        want = [*lead, rows, k // SCALE_GROUP]
        if sc.type.scalar not in (uint8, int8) or not sc.type.is_block() or list(sc.type.shape) != want:
            shown = f"{sc.type.scalar!r} {list(sc.type.shape) if sc.type.is_block() else 'scalar'}"
            raise error(f"{side}_scale must be uint8 or int8 (e8m0 bits) of shape {want}, got {shown}",
                        hint=f"one scale per {SCALE_GROUP} elements along K; rhs_scale is [N, K // {SCALE_GROUP}]; "
                        "float8e4nv scales (NVFP4) go with e2m1 operands")
        return sc, SCALE_GROUP

    def _scaled(self, x: tensor, scale: tuple[tensor, int] | None, rows: int, k: int, fast: bool,
                transpose: bool) -> tensor:
        """`x` times its checked scales, each repeated over its group of elements along K (per
        block of a 3-D batch: scales [B, rows, K // group])."""
        if scale is None:
            return x
        sc, group = scale
        if sc.type.scalar == float8e4nv:
            value = self.cast(sc, float32)
            return self.mul(x, self._expanded(value, rows, k, group, transpose))  # type: ignore[attr-defined, no-any-return]
        if sc.type.scalar == int8:  # the same 8 bits: e8m0 has no sign, so code 128 may arrive as -128
            sc = self.bitcast(sc, uint8)
        value = self.bitcast(self.shl(self.cast(sc, uint32), 23), float32)  # type: ignore[attr-defined]
        if not fast:
            value = self.where(self.equal(sc, 255), float("nan"), value)  # type: ignore[attr-defined]
        return self.mul(x, self._expanded(value, rows, k, group, transpose))  # type: ignore[attr-defined, no-any-return]

    @staticmethod
    def _nvfp4_group(sc: tensor, side: str, fmt: str, lead: list[int], rows: int, k: int) -> int:
        """Elements along K per float8e4nv scale (NVFP4: 16, or 32 as on Rubin), from the scales'
        shape; other formats, shapes and group sizes are refused."""
        if fmt != "e2m1":
            raise error(f"{side}_scale of float8e4nv (NVFP4) needs an e2m1 {side}, not {fmt}",
                        hint="e8m0 scales (uint8) go with every format")
        shape = list(sc.type.shape)
        cols = shape[-1]
        group = k // cols if k % cols == 0 else 0
        if group not in NVFP4_GROUPS or shape != [*lead, rows, cols]:
            raise error(f"{side}_scale of float8e4nv (NVFP4) must be of shape {[*lead, rows, k // 16]} or "
                        f"{[*lead, rows, k // 32]}, got {shape}",
                        hint="one scale per 16 (or 32) elements along K; rhs_scale is [N, K // 16]")
        return group

    def _expanded(self, value: tensor, rows: int, k: int, group: int, transpose: bool) -> tensor:
        """[.., rows, K // group] -> [.., rows, K] (or [.., K, rows] with `transpose`), each value
        over its `group` elements along K: per group, its column picked out (a sum of one value and
        zeros: exact) and selected where K falls in the group. Kept in the operand's rank, so the
        layouts need no reshapes or transposes, which would move the expanded scales through
        threadgroup memory."""
        groups = k // group
        lead = list(value.type.shape[:-2])
        k_axis = len(lead) + (0 if transpose else 1)
        group_of = self.floordiv(self.arange(0, k), group)  # type: ignore[attr-defined]
        index = self.arange(0, groups)  # type: ignore[attr-defined]
        for axis in range(len(lead) + 2):  # [1, .., K at k_axis, ..] and [1, .., 1, groups]
            if axis != k_axis:
                group_of = self.expand_dims(group_of, axis)  # type: ignore[attr-defined]
        for axis in range(len(lead) + 1):
            index = self.expand_dims(index, axis)  # type: ignore[attr-defined]
        shape = [*lead, k, rows] if transpose else [*lead, rows, k]
        out: tensor | None = None
        for g in range(groups):
            col = self.sum(self.where(self.equal(index, g), value, 0.0), len(lead) + 1, False)  # type: ignore[attr-defined]
            col = self.expand_dims(col, k_axis)  # type: ignore[attr-defined]
            out = self.broadcast_to(col, shape) if out is None else self.where(  # type: ignore[attr-defined]
                self.equal(group_of, g), col, out)  # type: ignore[attr-defined]
        assert out is not None
        return out
