"""`Config`: one candidate set of meta-parameters and launch options for `autotune`.

`Config(kwargs, num_warps=4, num_stages=3, num_ctas=1, maxnreg=None, pre_hook=None)` as in Triton:
`kwargs` are the constexpr meta-parameters (`{"BLOCK": 128}`); `num_warps` is the launch option
that matters on Apple GPUs (a program is one threadgroup of `32 * num_warps` threads);
`num_stages`, `num_ctas` and `maxnreg` are accepted and passed on, and the launch ignores them as
it always does. `pre_hook(args)` runs before every launch with this config (benchmark runs and the
final one) and receives every argument by name.

`all_kwargs()` is what a launch with the config receives: `kwargs` plus `num_warps`, `num_ctas`,
`num_stages` and a non-None `maxnreg`. Equality and hashing cover `all_kwargs()` and `pre_hook`.
`to_dict()` is the config's JSON form in tuning results (pre-hooks are not saved: results of
configs with a pre-hook are never persisted, as in Triton).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

_JSON_SCALARS = (bool, int, float, str, type(None))


class Config:
    """A candidate for `autotune` (module docstring)."""

    def __init__(
        self,
        kwargs: Mapping[str, Any],
        num_warps: int = 4,
        num_stages: int = 3,
        num_ctas: int = 1,
        maxnreg: int | None = None,
        pre_hook: Callable[[dict[str, Any]], object] | None = None,
    ) -> None:
        if not isinstance(kwargs, Mapping):
            raise TypeError(f"Config(kwargs, ...): kwargs must be a dict of meta-parameters, not {type(kwargs).__name__}")
        if pre_hook is not None and not callable(pre_hook):
            raise TypeError("Config(pre_hook=...): pre_hook must be callable")
        self.kwargs: dict[str, Any] = dict(kwargs)
        self.num_warps = num_warps
        self.num_stages = num_stages
        self.num_ctas = num_ctas
        self.maxnreg = maxnreg
        self.pre_hook = pre_hook

    def all_kwargs(self) -> dict[str, Any]:
        options: dict[str, Any] = {
            "num_warps": self.num_warps, "num_ctas": self.num_ctas, "num_stages": self.num_stages,
        }
        if self.maxnreg is not None:
            options["maxnreg"] = self.maxnreg
        return {**self.kwargs, **options}

    def _identity(self) -> tuple[object, ...]:
        return (tuple(sorted(self.all_kwargs().items(), key=lambda kv: kv[0])), self.pre_hook)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Config):
            return NotImplemented
        return self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    def __str__(self) -> str:
        parts = [f"{k}: {v!r}" if isinstance(v, str) else f"{k}: {v}" for k, v in self.kwargs.items()]
        parts += [f"num_warps: {self.num_warps}", f"num_ctas: {self.num_ctas}",
                  f"num_stages: {self.num_stages}", f"maxnreg: {self.maxnreg}"]
        return ", ".join(parts)

    def __repr__(self) -> str:
        return f"Config({self})"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (a ValueError names a meta-parameter that JSON cannot hold)."""
        for name, value in self.kwargs.items():
            if not isinstance(value, _JSON_SCALARS):
                raise ValueError(
                    f"Config: meta-parameter {name}={value!r} cannot be saved in a tuning result "
                    "(only bool, int, float, str and None can)"
                )
        return {
            "kwargs": dict(self.kwargs), "num_warps": self.num_warps, "num_stages": self.num_stages,
            "num_ctas": self.num_ctas, "maxnreg": self.maxnreg,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Config:
        return cls(
            dict(data["kwargs"]), num_warps=data["num_warps"], num_stages=data["num_stages"],
            num_ctas=data["num_ctas"], maxnreg=data.get("maxnreg"),
        )


__all__ = ["Config"]
