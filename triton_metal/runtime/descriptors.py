"""Host tensor descriptors at launch: one parameter of the kernel, several of the compiled one.

A `TensorDescriptor` argument (tools/tensor_descriptor.py) is specialized as a `DescriptorArg`
(its base's pointer fact, its shape's and strides' integer facts, its block shape and padding).
The front end makes the parameter a `tl.tensor_descriptor` over function arguments named
`<name>_base`, `<name>_shape<d>` and `<name>_stride<d>` (`frontend.signature.
descriptor_part_names`), so a compiled launcher sees the descriptor as those arguments:
`flat_names` and `flat_values` turn the kernel's names and a launch's values into them. The
interpreter runs the Python body and takes the descriptor itself (`interpreter_descriptor`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..errors import LaunchError
from ..frontend.signature import descriptor_part_names
from .specialization import ArgSpec, DescriptorArg

Launcher = Callable[[tuple[object, ...], tuple[int, int, int]], None]


def has_descriptors(facts: tuple[ArgSpec, ...]) -> bool:
    return any(type(f) is DescriptorArg for f in facts)


def flat_names(kernel_name: str, names: Sequence[str], facts: tuple[ArgSpec, ...]) -> list[str]:
    """The compiled kernel's parameter names: each descriptor parameter replaced by its parts."""
    flat: list[str] = []
    for name, fact in zip(names, facts):
        if isinstance(fact, DescriptorArg):
            parts = descriptor_part_names(name, len(fact.block_shape))
            clash = set(parts) & set(names)
            if clash:
                raise LaunchError(
                    f"kernel '{kernel_name}': tensor descriptor '{name}' travels as parameters "
                    f"{', '.join(parts)}, but the kernel has a parameter named '{min(clash)}'; "
                    "rename one of them"
                )
            flat.extend(parts)
        else:
            flat.append(name)
    return flat


def flat_values(values: tuple[object, ...], facts: tuple[ArgSpec, ...]) -> tuple[object, ...]:
    """A launch's values with each descriptor replaced by its base, shape and strides."""
    flat: list[object] = []
    for value, fact in zip(values, facts):
        if type(fact) is DescriptorArg:
            desc: Any = value
            flat.extend((desc.base, *desc.shape, *desc.strides))
        else:
            flat.append(value)
    return tuple(flat)


def flattening(launcher: Launcher, facts: tuple[ArgSpec, ...]) -> Launcher:
    """`launcher` (built for the flat names) called with a launch's values."""

    def launch(values: tuple[object, ...], grid: tuple[int, int, int]) -> None:
        launcher(flat_values(values, facts), grid)

    return launch


def interpreter_descriptor(value: Any, host: Callable[[object], object]) -> Any:
    """The descriptor with its base replaced by `host(base)` (the interpreter's view)."""
    from ..tools.tensor_descriptor import TensorDescriptor

    view = object.__new__(TensorDescriptor)  # the checks ran when the caller made it
    view.base, view.shape, view.strides = host(value.base), list(value.shape), list(value.strides)
    view.block_shape, view.padding = list(value.block_shape), value.padding
    return view
