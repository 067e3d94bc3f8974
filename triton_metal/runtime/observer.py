"""The launch observer hook: how the profiler sees compiles and launches.

`OBSERVER.current` is None unless a tool (the profiler) installs an object with
`compiled(kernel, compiled)` and `launch(kernel, compiled, values, grid)`; the launch path reads
the attribute once per launch and, when it is None, does nothing else, so an idle hook costs one
attribute read. An installed observer's `launch` runs the launch itself (it times it).
"""

from __future__ import annotations

from typing import Any


class _Observer:
    __slots__ = ("current",)

    def __init__(self) -> None:
        self.current: Any = None


OBSERVER = _Observer()
