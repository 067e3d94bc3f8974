"""Semantic layer, memory family: loads, stores and atomics through pointers.

`mask` and `other` broadcast to the pointer's shape; `other` is cast to the element type and needs
a mask (as in Triton); stored values are cast to the element type; `int1` memory is accessed as
bytes. The cache/eviction hints of NVIDIA and AMD are validated and dropped. Atomics follow
Triton's dtype rules, minus what Apple GPUs cannot do atomically (8/16-bit ints, most 64-bit
atomics); 16-bit floats run as compare-and-swap loops on their 32-bit word.
Block pointers and tensor descriptors are refused with the pointer-tensor alternative.
"""

from __future__ import annotations

from typing import Any

from ..builder import AtomicOp
from ..core import constexpr, tensor
from ..types import int1, int8, pointer_type
from .base import SemanticBase, error, with_element

_LOAD_CACHE = ("", ".ca", ".cg", ".cs", ".cv")  # Triton's load modifiers (hints: Metal has none)
_STORE_CACHE = ("", ".wb", ".cg", ".cs", ".wt")
_EVICTION = ("", "evict_first", "evict_last", "evict_normal")
_SEMS = ("acquire", "release", "acq_rel", "relaxed")
_SCOPES = ("gpu", "cta", "sys")

BLOCK_POINTER_HINT = (
    "with a tensor of pointers (base + offs_m[:, None] * stride_m + offs_n[None, :] * stride_n), "
    "pass mask= for the boundary"
)


def _opt(x: Any) -> Any:
    return x.value if isinstance(x, constexpr) else x



LAYOUT_HINTS = ("COALESCED", "BLOCK")
"""Values of the `layout=` hint of tl.load / tl.store (a triton_metal extension)."""

class MemoryMixin(SemanticBase):
    def _check_hint(self, value: Any, allowed: tuple[str, ...], what: str) -> None:
        value = _opt(value)
        if value is None:
            return
        if value not in allowed:
            raise error(f"{what} {value!r} is not one of {list(allowed)}")

    def _pointer_operand(self, ptr: Any, op: str) -> tensor:
        ptr = self.to_tensor(ptr) if not isinstance(ptr, tensor) else ptr
        if not ptr.type.scalar.is_ptr():
            raise error(
                f"tl.{op} needs a pointer or a tensor of pointers, got {ptr.type!r}",
                hint="pass an array argument and add offsets to it: x_ptr + offs",
            )
        return ptr

    def _bool_mask(self, mask: Any, op: str) -> tensor:
        mask = self.to_tensor(mask)
        if not mask.type.scalar.is_bool():
            raise error(
                f"tl.{op}'s mask must be boolean, got {mask.type.scalar!r}",
                hint="compare to build a mask, e.g. mask=offs < n",
            )
        return mask

    # -- load / store -------------------------------------------------------------------------
    def load(
        self,
        ptr: Any,
        mask: Any = None,
        other: Any = None,
        boundary_check: Any = (),
        padding_option: Any = "",
        cache_modifier: Any = "",
        eviction_policy: Any = "",
        volatile: Any = False,
        layout: Any = None,
    ) -> tensor:
        self._check_hint(cache_modifier, _LOAD_CACHE, "cache_modifier")
        self._check_hint(eviction_policy, _EVICTION, "eviction_policy")
        if _opt(boundary_check) or _opt(padding_option):
            raise error(
                "boundary_check and padding_option work on block pointers (tl.make_block_ptr) only",
                hint=BLOCK_POINTER_HINT,
            )
        ptr = self._pointer_operand(ptr, "load")
        mask, other = _opt(mask), _opt(other)
        if mask is None and other is not None:
            raise error("`other` cannot be provided without `mask`", hint="add mask=... to tl.load")
        is_block = ptr.type.is_block()
        if mask is not None:
            mask = self._bool_mask(mask, "load")
            if not is_block and mask.type.is_block():
                raise error("tl.load: a scalar pointer cannot take a block mask")
            if is_block:
                mask = self.broadcast_impl_shape(mask, ptr.type.shape)
        elt = ptr.type.scalar.element_ty
        load_elt = int8 if elt == int1 else elt
        if elt == int1:
            ptr = self.cast(ptr, pointer_type(int8))
        if other is not None:
            other = self.cast(self.to_tensor(other), load_elt)
            if not is_block and other.type.is_block():
                raise error("tl.load: a scalar pointer cannot take a block `other`")
            if is_block:
                other = self.broadcast_impl_shape(other, ptr.type.shape)
        ty = with_element(ptr.type, load_elt)
        extra = self._layout_hint(layout, is_block, "load")
        h = self.builder.create_load(
            ptr.handle,
            None if mask is None else mask.handle,
            None if other is None else other.handle,
            bool(_opt(volatile)),
            **extra,
        )
        out = tensor(h, ty)
        return self.cast(out, int1) if elt == int1 else out

    def store(
        self,
        ptr: Any,
        value: Any,
        mask: Any = None,
        boundary_check: Any = (),
        cache_modifier: Any = "",
        eviction_policy: Any = "",
        layout: Any = None,
    ) -> None:
        self._check_hint(cache_modifier, _STORE_CACHE, "cache_modifier")
        self._check_hint(eviction_policy, _EVICTION, "eviction_policy")
        if _opt(boundary_check):
            raise error("boundary_check works on block pointers (tl.make_block_ptr) only", hint=BLOCK_POINTER_HINT)
        ptr = self._pointer_operand(ptr, "store")
        if getattr(ptr.type.scalar, "const", False):
            raise error("Cannot store to a constant pointer", hint="the pointer's parameter is annotated tl.const")
        value = self.to_tensor(_opt(value))
        mask = _opt(mask)
        if mask is not None:
            mask = self._bool_mask(mask, "store")
        if not ptr.type.is_block():
            if value.type.is_block():
                raise error(
                    f"tl.store: a scalar pointer cannot take a block value of shape {list(value.shape)}",
                    hint="broadcast the pointer: ptr + tl.arange(0, N)",
                )
            if mask is not None and mask.type.is_block():
                raise error("tl.store: a scalar pointer cannot take a block mask")
        else:
            shape = ptr.type.shape
            value = self._broadcast_to_ptr(value, shape, "value")
            if mask is not None:
                mask = self._broadcast_to_ptr(mask, shape, "mask")
        elt = ptr.type.scalar.element_ty
        if elt == int1:
            ptr = self.cast(ptr, pointer_type(int8))
            elt = int8
        value = self.cast(value, elt)
        extra = self._layout_hint(layout, ptr.type.is_block(), "store")
        self.builder.create_store(ptr.handle, value.handle, None if mask is None else mask.handle, **extra)

    def _layout_hint(self, layout: Any, is_block: bool, what: str) -> dict[str, str]:
        """The `layout=` hint as builder keywords (none when absent, so builders without layouts
        need not know it)."""
        layout = _opt(layout)
        if layout is None:
            return {}
        if layout not in LAYOUT_HINTS:
            raise error(f"tl.{what}: layout must be one of {', '.join(map(repr, LAYOUT_HINTS))}, got {layout!r}")
        if not is_block:
            raise error(f"tl.{what}: layout= applies to blocks, not to a scalar pointer",
                        hint="drop the layout hint")
        return {"layout": layout}

    def _broadcast_to_ptr(self, x: tensor, shape: tuple[int, ...], what: str) -> tensor:
        if x.type.is_block():
            src = x.type.shape
            if len(src) > len(shape) or any(
                s != 1 and s != d for s, d in zip(reversed(src), reversed(shape))
            ):
                raise error(
                    f"tl.store: the {what} of shape {list(src)} does not broadcast to the pointer "
                    f"shape {list(shape)}"
                )
            while len(x.type.shape) < len(shape):
                x = self._expand(x, 0)
        return self.broadcast_impl_shape(x, shape)

    # -- atomics ------------------------------------------------------------------------------
    def _sem_scope(self, sem: Any, scope: Any) -> tuple[str, str]:
        sem, scope = _opt(sem), _opt(scope)
        sem = "acq_rel" if sem in (None, "") else sem
        scope = "gpu" if scope in (None, "") else scope
        if sem not in _SEMS:
            raise error(f"atomic sem {sem!r} is not one of {list(_SEMS)}")
        if scope not in _SCOPES:
            raise error(f"atomic scope {scope!r} is not one of {list(_SCOPES)}")
        return sem, scope

    def _atomic_operands(self, ptr: Any, val: Any, mask: Any, op: str) -> tuple[tensor, tensor, tensor | None]:
        ptr = self._pointer_operand(ptr, f"atomic_{op}")
        elt = ptr.type.scalar.element_ty
        if getattr(ptr.type.scalar, "const", False):
            raise error("cannot update constant memory atomically")
        if elt.is_floating() and op not in ("add", "max", "min", "xchg", "cas"):
            raise error(f"atomic_{op} is not defined on {elt!r}")
        if elt.is_int() and elt.primitive_bitwidth < 32:
            raise error(
                f"atomic_{op} does not support {elt!r}: atomics need 32- or 64-bit elements",
                hint="use an int32/uint32 buffer",
            )
        if elt.is_ptr():
            raise error(f"atomic_{op} on a pointer of pointers is not supported")
        val = self.to_tensor(_opt(val))
        if ptr.type.is_block():
            val = self.broadcast_impl_shape(val, ptr.type.shape)
        elif val.type.is_block():
            raise error(f"atomic_{op}: a scalar pointer cannot take a block value")
        val = self.cast(val, elt)
        m = _opt(mask)
        if m is not None:
            m = self._bool_mask(m, f"atomic_{op}")
            if ptr.type.is_block():
                m = self.broadcast_impl_shape(m, ptr.type.shape)
            elif m.type.is_block():
                raise error(f"atomic_{op}: a scalar pointer cannot take a block mask")
        return ptr, val, m

    def _atomic(self, op: AtomicOp, name: str, ptr: Any, val: Any, mask: Any, sem: Any, scope: Any) -> tensor:
        sem_s, scope_s = self._sem_scope(sem, scope)
        ptr, val, m = self._atomic_operands(ptr, val, mask, name)
        h = self.builder.create_atomic_rmw(op, ptr.handle, val.handle, None if m is None else m.handle, sem_s, scope_s)
        return tensor(h, val.type)

    def atomic_add(self, ptr: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> tensor:
        p = self._pointer_operand(ptr, "atomic_add")
        op = AtomicOp.FADD if p.type.scalar.element_ty.is_floating() else AtomicOp.ADD
        return self._atomic(op, "add", p, val, mask, sem, scope)

    def atomic_max(self, ptr: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> tensor:
        return self._atomic(AtomicOp.MAX, "max", ptr, val, mask, sem, scope)

    def atomic_min(self, ptr: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> tensor:
        return self._atomic(AtomicOp.MIN, "min", ptr, val, mask, sem, scope)

    def atomic_and(self, ptr: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> tensor:
        return self._atomic(AtomicOp.AND, "and", ptr, val, mask, sem, scope)

    def atomic_or(self, ptr: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> tensor:
        return self._atomic(AtomicOp.OR, "or", ptr, val, mask, sem, scope)

    def atomic_xor(self, ptr: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> tensor:
        return self._atomic(AtomicOp.XOR, "xor", ptr, val, mask, sem, scope)

    def atomic_xchg(self, ptr: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> tensor:
        return self._atomic(AtomicOp.XCHG, "xchg", ptr, val, mask, sem, scope)

    def atomic_cas(self, ptr: Any, cmp: Any, val: Any, sem: Any = None, scope: Any = None) -> tensor:
        sem_s, scope_s = self._sem_scope(sem, scope)
        ptr, val, _ = self._atomic_operands(ptr, val, None, "cas")
        cmp_t = self.cast(self.to_tensor(_opt(cmp)), val.type.scalar)
        if ptr.type.is_block():
            cmp_t = self.broadcast_impl_shape(cmp_t, ptr.type.shape)
        elif cmp_t.type.is_block():
            raise error("atomic_cas: a scalar pointer cannot take a block comparand")
        h = self.builder.create_atomic_cas(ptr.handle, cmp_t.handle, val.handle, sem_s, scope_s)
        return tensor(h, val.type)

    def atomic_poll(self, ptr: Any, expected: Any, sem: Any = None, scope: Any = None,
                    timeout_ns: Any = None) -> tensor:
        """The one legality check of `tl.atomic_poll` for every backend (the interpreter's
        builder and the compiler's sit under it)."""
        ptr = self._pointer_operand(ptr, "atomic_poll")
        if ptr.type.is_block():
            raise error(f"tl.atomic_poll polls one value: it takes a scalar pointer, got {ptr.type!r}",
                        hint="poll a single flag, e.g. tl.atomic_poll(flag_ptr, 1)")
        if getattr(ptr.type.scalar, "const", False):
            raise error("tl.atomic_poll on a constant pointer: nothing can change the value it waits for")
        elt = ptr.type.scalar.element_ty
        _check_poll_element(elt)
        sem = _opt(sem)
        sem = "acquire" if sem in (None, "") else sem
        if sem not in _POLL_SEMS:
            raise error(f"tl.atomic_poll's sem must be one of {list(_POLL_SEMS)}, got {sem!r}: a poll only reads")
        _, scope_s = self._sem_scope(None, scope)
        value = self.to_tensor(_opt(expected))
        if value.type.is_block():
            raise error("tl.atomic_poll's expected_value must be a scalar")
        value = self.cast(value, elt)
        timeout = _opt(timeout_ns)
        handle = None
        if timeout is not None:
            if isinstance(timeout, int) and timeout < 0:
                raise error(f"tl.atomic_poll's timeout_ns must not be negative, got {timeout}")
            t = self.to_tensor(timeout)
            if t.type.is_block() or not t.type.scalar.is_int():
                raise error(f"tl.atomic_poll's timeout_ns must be an integer scalar, got {t.type!r}")
            handle = t.handle
        h = self.builder.create_atomic_poll(ptr.handle, value.handle, handle, sem, scope_s)
        return tensor(h, int1)


_POLL_SEMS = ("acquire", "relaxed")


def _check_poll_element(elt: Any) -> None:
    """16- and 32-bit integers: Metal reads a 16-bit value through its 32-bit word and has no
    64-bit atomic load (its only 64-bit atomics, max and min on atomic_ulong, return nothing)."""
    if elt.is_int() and not elt.is_bool() and elt.primitive_bitwidth in (16, 32):
        return
    if elt.is_int() and elt.primitive_bitwidth == 64:
        raise error(
            f"tl.atomic_poll on {'u' if elt.is_int_unsigned() else 'i'}64 is not supported: Metal has no "
            "64-bit atomic load (its only 64-bit atomics, max and min on atomic_ulong, return no value)",
            hint="poll an int32 flag",
        )
    raise error(f"tl.atomic_poll does not support {elt!r}: it polls 16- or 32-bit integers",
                hint="poll an int32 flag")


__all__ = ["BLOCK_POINTER_HINT", "MemoryMixin"]
