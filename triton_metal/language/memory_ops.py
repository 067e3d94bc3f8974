"""`tl` builtins that touch memory: `load`, `store` and the atomics.

NVIDIA/AMD cache and eviction hints and `volatile` are accepted (validated, then ignored by the
Apple backends), so kernels written for Triton keep compiling.
"""

from __future__ import annotations

from typing import Any

from .block_pointer import block_pointer, load_block, store_block
from .core import _unwrap, builtin, tensor
from .semantic import Semantic


@builtin
def load(
    pointer: Any,
    mask: Any = None,
    other: Any = None,
    boundary_check: Any = (),
    padding_option: Any = "",
    cache_modifier: Any = "",
    eviction_policy: Any = "",
    volatile: Any = False,
    layout: Any = None,
    _semantic: Semantic = None,  # type: ignore[assignment]
) -> tensor:
    """`layout="COALESCED" | "BLOCK"` (triton_metal only) overrides the layout the compiler picks
    for the loaded block; the interpreter ignores it. Through a block pointer
    (`tl.make_block_ptr`), `boundary_check` and `padding_option` choose the bounds checked."""
    if isinstance(_unwrap(pointer), block_pointer):
        hints = (_unwrap(cache_modifier), _unwrap(eviction_policy), _unwrap(volatile), _unwrap(layout))
        return load_block(_unwrap(pointer), _unwrap(mask), _unwrap(other), boundary_check, padding_option,
                          hints, _semantic)
    return _semantic.load(
        _unwrap(pointer), _unwrap(mask), _unwrap(other), _unwrap(boundary_check),
        _unwrap(padding_option), _unwrap(cache_modifier), _unwrap(eviction_policy), _unwrap(volatile),
        _unwrap(layout),
    )


@builtin
def store(
    pointer: Any,
    value: Any,
    mask: Any = None,
    boundary_check: Any = (),
    cache_modifier: Any = "",
    eviction_policy: Any = "",
    layout: Any = None,
    _semantic: Semantic = None,  # type: ignore[assignment]
) -> None:
    """`layout="COALESCED" | "BLOCK"` (triton_metal only) overrides the layout the compiler
    stores the block from; the interpreter ignores it. Through a block pointer
    (`tl.make_block_ptr`), `boundary_check` chooses the bounds checked."""
    if isinstance(_unwrap(pointer), block_pointer):
        hints = (_unwrap(cache_modifier), _unwrap(eviction_policy), _unwrap(layout))
        store_block(_unwrap(pointer), value, _unwrap(mask), boundary_check, hints, _semantic)
        return
    _semantic.store(
        _unwrap(pointer), _unwrap(value), _unwrap(mask), _unwrap(boundary_check),
        _unwrap(cache_modifier), _unwrap(eviction_policy), _unwrap(layout),
    )


def _rmw(name: str) -> Any:
    def fn(pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None,
           _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
        method = getattr(_semantic, name)
        return method(_unwrap(pointer), _unwrap(val), _unwrap(mask), _unwrap(sem), _unwrap(scope))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"`{name}(pointer, val, mask=None, sem=None, scope=None)`: returns the old values."
    return builtin(fn)


atomic_add = _rmw("atomic_add")
atomic_max = _rmw("atomic_max")
atomic_min = _rmw("atomic_min")
atomic_and = _rmw("atomic_and")
atomic_or = _rmw("atomic_or")
atomic_xor = _rmw("atomic_xor")
atomic_xchg = _rmw("atomic_xchg")


@builtin
def atomic_cas(pointer: Any, cmp: Any, val: Any, sem: Any = None, scope: Any = None,
               _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    return _semantic.atomic_cas(_unwrap(pointer), _unwrap(cmp), _unwrap(val), _unwrap(sem), _unwrap(scope))


@builtin
def atomic_poll(pointer: Any, expected_value: Any, sem: Any = None, scope: Any = None, timeout_ns: Any = None,
                _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    """Wait until the scalar at `pointer` equals `expected_value`, reading it atomically; returns
    whether it did (int1). `sem` is `"acquire"` (default) or `"relaxed"`, `scope` `"gpu"`
    (default), `"cta"` or `"sys"`. Without `timeout_ns` it returns true once the value matched;
    with it, false if the value did not match before the budget ran out: Apple GPUs have no clock a
    kernel can read, so the budget is one poll per 100 ns (at least one poll). The element is a
    16- or 32-bit integer. The interpreter runs programs one after another, so there nothing can
    change the value during a poll: a mismatch without `timeout_ns` raises instead of waiting
    forever."""
    return _semantic.atomic_poll(_unwrap(pointer), _unwrap(expected_value), _unwrap(sem), _unwrap(scope),
                                 _unwrap(timeout_ns))
