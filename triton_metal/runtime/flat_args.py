"""Arguments made of several values: host tensor descriptors and tuples. One parameter of the
kernel is several arguments of the compiled one.

A `TensorDescriptor` argument (tools/tensor_descriptor.py) is specialized as a `DescriptorArg`
(its base's pointer fact, its shape's and strides' integer facts, its block shape and padding), a
tuple as a `TupleArg` (a fact per element). The front end makes such a parameter a
`tl.tensor_descriptor` or a tuple over function arguments named after their place
(`frontend.signature.leaves`: `<name>_base`, `<name>_shape<d>`, `<name>_stride<d>` for a
descriptor, `<name>_<i>` for a tuple's element, recursively), so a compiled launcher sees the
parameter as those arguments: `flat_names` and `flat_values` turn the kernel's names and a
launch's values into them. The interpreter runs the Python body and takes the values
themselves (`host_values`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..errors import LaunchError
from .signature import signature_param
from .specialization import ArgSpec, DescriptorArg, TupleArg

Launcher = Callable[[tuple[object, ...], tuple[int, int, int]], None]
_COMPOSITE = (DescriptorArg, TupleArg)


def has_composites(facts: tuple[ArgSpec, ...]) -> bool:
    return any(type(f) in _COMPOSITE for f in facts)


def flat_names(kernel_name: str, names: Sequence[str], facts: tuple[ArgSpec, ...]) -> list[str]:
    """The compiled kernel's argument names: each composite parameter replaced by its parts."""
    from ..frontend.signature import leaves  # the front end is imported by compiling, not launching

    flat: list[str] = []
    for name, fact in zip(names, facts):
        if not isinstance(fact, _COMPOSITE):
            flat.append(name)
            continue
        parts = [n for n, _ in leaves(name, signature_param(fact))]
        clash = set(parts) & set(names)
        if clash:
            raise LaunchError(
                f"kernel '{kernel_name}': argument '{name}' travels as parameters "
                f"{', '.join(parts)}, but the kernel has a parameter named '{min(clash)}'; "
                "rename one of them"
            )
        flat.extend(parts)
    return flat


def _parts(value: Any, fact: ArgSpec, out: list[object]) -> None:
    if type(fact) is DescriptorArg:
        out.extend((value.base, *value.shape, *value.strides))
    elif type(fact) is TupleArg:
        for v, f in zip(value, fact.elements):
            _parts(v, f, out)
    else:
        out.append(value)


def flat_values(values: tuple[object, ...], facts: tuple[ArgSpec, ...]) -> tuple[object, ...]:
    """A launch's values with each composite argument replaced by its parts, in `leaves` order."""
    flat: list[object] = []
    for value, fact in zip(values, facts):
        _parts(value, fact, flat)
    return tuple(flat)


def flattening(launcher: Launcher, facts: tuple[ArgSpec, ...]) -> Launcher:
    """`launcher` (built for the flat names) called with a launch's values."""

    def launch(values: tuple[object, ...], grid: tuple[int, int, int]) -> None:
        launcher(flat_values(values, facts), grid)

    return launch


def host_values(value: Any, fact: ArgSpec, host: Callable[[object, ArgSpec], object]) -> Any:
    """A composite value as the interpreter takes it: `host(leaf, fact)` for each array and
    scalar inside (a descriptor keeps its class, its base replaced)."""
    if type(fact) is TupleArg:
        values = tuple(host_values(v, f, host) for v, f in zip(value, fact.elements))
        return values if fact.kind is None else fact.kind(*values)
    if type(fact) is DescriptorArg:
        from ..tools.tensor_descriptor import TensorDescriptor

        view = object.__new__(TensorDescriptor)  # the checks ran when the caller made it
        view.base, view.shape, view.strides = host(value.base, fact.base), list(value.shape), list(value.strides)
        view.block_shape, view.padding = list(value.block_shape), value.padding
        return view
    return host(value, fact)
