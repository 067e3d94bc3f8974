"""`autotune`: pick the fastest `Config` per tuning key, and remember it per chip.

    @triton_metal.autotune(configs=[Config({"BLOCK": 256}, num_warps=2), Config({"BLOCK": 1024})],
                           key=["n"])
    @triton_metal.jit
    def kernel(x_ptr, n, BLOCK: tl.constexpr): ...

    kernel[lambda META: (triton_metal.cdiv(n, META["BLOCK"]),)](x, n)

Triton's semantics (reference: triton.md section 4):
* The tuning key is the values of the `key` arguments (defaults included) plus the dtype of every
  argument that has one; dtypes are named alike for NumPy and MLX arrays (`float16`).
* On a key not seen in this process, the configs are pruned (`prune_configs_by`:
  `early_config_prune(configs, named_args, **kwargs)`, then `perf_model(**named_args, **kwargs,
  **config.all_kwargs())` keeping the `top_k` best, a float <= 1 being a fraction of the list, at
  least one kept); a single survivor is chosen without benchmarking. Otherwise the stored result
  for this chip, key and pruned list is used if there is one (`autotune_cache.py`: the user's,
  then the shipped default), without benchmarking; else each survivor is compiled and timed with
  `do_bench(call, quantiles=(0.5, 0.2, 0.8))` and the best is the least (p50, p20, p80), compared
  in that order.
* A config that cannot compile (`OutOfResources`: threadgroup memory; `CompilationError`;
  `LaunchError`: e.g. `num_warps` over 32, more than 1024 threads) is skipped and the reason
  logged on stderr; when every config fails, `AutotunerError` lists each config with its reason.
* Every benchmark run calls the config's `pre_hook`, then the autotuner's `pre_hook(args,
  reset_only=False)` (by default: zero the `reset_to_zero` arrays, snapshot the `restore_value`
  ones), launches (the first run compiles the config's variant, so what a pre-hook sets may
  decide it), then `post_hook(args, exception)` (by default: restore the snapshots). After
  tuning, `pre_hook(args, reset_only=True)` zeroes the `reset_to_zero` arrays once more, so the
  real launch starts from zeros.
* A keyword given by the caller that a config also sets raises
  `ValueError("Conflicting meta-parameters: ...")`; names in `key`, `reset_to_zero` or
  `restore_value` that are not kernel parameters raise `ValueError` at decoration.
* `do_bench=` replaces the benchmark (called as `do_bench(fn, quantiles=(0.5, 0.2, 0.8))`; a float
  result counts as p50 = p20 = p80); otherwise `testing.do_bench(fn, warmup, rep, quantiles=...)`,
  looked up at call time.
* `cache_results=True` (the default here: per-chip tuning is the point) persists each benchmarked
  choice; nothing is persisted under the interpreter or when a config has a `pre_hook`.
* `TRITON_METAL_PRINT_AUTOTUNING=1` prints each choice, where it came from and the tuning time.

Off a GPU (the emulator, the interpreter) configs are not timed by default: CPU timings say
nothing about a GPU, and compiling and timing every config made first runs take minutes. The
stored choice is taken as above (the user's, else the one shipped for this chip), else the first
pruned config that compiles (each is compiled in turn; one that cannot is skipped as above); the
kernel says so once, on stderr. `TRITON_METAL_AUTOTUNE=measure` times them as on a GPU, and so
does a `do_bench=` given to `autotune`. Under `mx.distributed` with more than one rank, rank 0
alone chooses and every rank runs its choice (`autotune_ranks.py`).

After a launch, `best_config`, `last_origin` ("benchmark", "single", "user", "shipped", "first",
"rank 0", "memory"),
`configs_timings` (config -> [p50, p20, p80] of the last tuning) and `bench_time` (seconds) say
what happened; `cache` maps tuning keys to the chosen configs; `base_fn` is the decorated Python
function (Triton's name).
"""

from __future__ import annotations

import inspect
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..errors import CompilationError, LaunchError, OutOfResources, TritonError
from .autotune_config import Config
from .autotune_ranks import distributed_group, shared_index
from .backend import METAL, TORCH_MPS, active_backend_name, interpret_mode
from .grid import GridSpec
from .heuristics import base_jit_function, default_arguments
from .log import log

MODE_ENV = "TRITON_METAL_AUTOTUNE"
MEASURE = "measure"
GPU_BACKENDS = (METAL, TORCH_MPS)
QUANTILES = (0.5, 0.2, 0.8)
SKIPPABLE = (OutOfResources, CompilationError, LaunchError)
_TRUE_WORDS = ("1", "true", "yes", "on")


class AutotunerError(TritonError):
    """No config could be used (every one failed to compile, or pruning left none)."""


def _print_autotuning() -> bool:
    return os.environ.get("TRITON_METAL_PRINT_AUTOTUNING", "").strip().lower() in _TRUE_WORDS


_DTYPE_NAMES: dict[object, str] = {}


def measures(backend: str, custom_bench: bool) -> bool:
    """Whether configs are timed: on a GPU, with a `do_bench=`, or under
    `TRITON_METAL_AUTOTUNE=measure` (module docstring)."""
    mode = os.environ.get(MODE_ENV, "").strip().lower()
    if mode == MEASURE:
        return True
    if mode not in ("", "default"):
        raise AutotunerError(
            f"{MODE_ENV}={mode!r} is not a mode: set it to '{MEASURE}' to time every config, or "
            "leave it unset to time them on a GPU only"
        )
    return custom_bench or backend in GPU_BACKENDS


def dtype_name(dtype: object) -> str:
    """`float16` for NumPy's, MLX's and torch's float16 alike (memoised: this runs on every
    launch)."""
    try:
        return _DTYPE_NAMES[dtype]
    except (KeyError, TypeError):
        pass
    text = str(dtype)
    name = text.rsplit(".", 1)[-1] if text.startswith(("mlx.core.", "torch.")) else text
    try:
        _DTYPE_NAMES[dtype] = name
    except TypeError:  # an unhashable dtype object: not memoised
        pass
    return name


# -- arrays the hooks reset and restore (NumPy in place; MLX rebound, as a kernel's stores are) ----
def _zero(value: object, name: str) -> None:
    try:
        value[...] = 0  # type: ignore[index]
    except (TypeError, ValueError) as error:
        raise TypeError(f"autotune(reset_to_zero=...): cannot zero argument '{name}' ({type(value).__name__})") from error


def _snapshot(value: object, name: str) -> object:
    copy = getattr(value, "copy", None) or getattr(value, "clone", None)  # NumPy / torch
    if callable(copy):
        return copy()
    try:
        import mlx.core as mx

        if isinstance(value, mx.array):
            return mx.array(value)
    except ImportError:  # pragma: no cover - MLX is a dependency
        pass
    raise TypeError(f"autotune(restore_value=...): cannot copy argument '{name}' ({type(value).__name__})")


def _python_function(fn: Any) -> Callable[..., Any]:
    """The Python function under `fn`'s wrappers (`JITFunction`, `Heuristics`, ...: each keeps
    the one it wraps as `.fn`)."""
    while not inspect.isfunction(fn):
        fn = fn.fn
    return fn


def _check_names(kind: str, names: Iterable[str], arg_names: Sequence[str], kernel: str) -> list[str]:
    names = list(names or ())
    unknown = [n for n in names if n not in arg_names]
    if unknown:
        raise ValueError(
            f"autotune({kind}=...): {', '.join(repr(n) for n in unknown)} "
            f"{'is not a parameter' if len(unknown) == 1 else 'are not parameters'} of kernel "
            f"'{kernel}' (its parameters: {', '.join(arg_names)})"
        )
    return names


class Autotuner:
    """A kernel launched with the best of several configs (module docstring)."""

    def __init__(
        self,
        fn: Any,
        configs: Sequence[Config],
        key: Sequence[str],
        prune_configs_by: Mapping[str, Any] | None = None,
        reset_to_zero: Sequence[str] | None = None,
        restore_value: Sequence[str] | None = None,
        pre_hook: Callable[..., object] | None = None,
        post_hook: Callable[..., object] | None = None,
        warmup: float | None = None,
        rep: float | None = None,
        do_bench: Callable[..., Any] | None = None,
        cache_results: bool = True,
    ) -> None:
        base = base_jit_function(fn)
        self.fn = fn
        self.base_fn: Callable[..., Any] = _python_function(fn)
        """The decorated Python function under every wrapper (Triton's `base_fn`)."""
        self.__name__: str = base.__name__
        self.arg_names: list[str] = list(base.arg_names)
        configs = list(configs or ())
        for c in configs:
            if not isinstance(c, Config):
                raise TypeError(f"autotune(configs=...): expected Config objects, got {type(c).__name__}")
        self.configs: list[Config] = configs or [Config({}, num_warps=4, num_stages=3, num_ctas=1)]
        if isinstance(key, str):
            raise TypeError("autotune(key=...): key is a list of parameter names, e.g. key=['n']")
        self.keys = _check_names("key", key, self.arg_names, self.__name__)
        self.reset_to_zero = _check_names("reset_to_zero", reset_to_zero or (), self.arg_names, self.__name__)
        self.restore_value = _check_names("restore_value", restore_value or (), self.arg_names, self.__name__)
        prune = dict(prune_configs_by or {})
        unknown = set(prune) - {"early_config_prune", "perf_model", "top_k"}
        if unknown:
            raise ValueError(
                f"autotune(prune_configs_by=...): unknown entries {sorted(unknown)}; "
                "use early_config_prune, perf_model and top_k"
            )
        self.early_config_prune = prune.get("early_config_prune")
        self.perf_model = prune.get("perf_model")
        self.top_k: int | float = prune.get("top_k", 10)
        self.user_pre_hook = pre_hook
        self.user_post_hook = post_hook
        self.warmup_ms = 25.0 if warmup is None else float(warmup)
        self.rep_ms = 100.0 if rep is None else float(rep)
        self.custom_do_bench = do_bench
        self.cache_results = bool(cache_results)
        self._defaults = default_arguments(fn)
        self._config_names = frozenset(n for c in self.configs for n in c.all_kwargs())
        self._restore_copies: dict[str, object] = {}
        self.cache: dict[tuple[object, ...], Config] = {}
        self.best_config: Config | None = None
        self.last_origin: str | None = None
        self.configs_timings: dict[Config, list[float]] = {}
        self.bench_time: float = 0.0
        self.skipped: dict[Config, str] = {}
        self._announced = False

    @property
    def cache_key(self) -> str:
        return base_jit_function(self.fn).cache_key

    # -- hooks ---------------------------------------------------------------------------------
    def pre_hook(self, args: dict[str, Any], reset_only: bool = False) -> None:
        if self.user_pre_hook is not None:
            self.user_pre_hook(args, reset_only=reset_only)
            return
        for name in self.reset_to_zero:
            _zero(args[name], name)
        if not reset_only:
            self._restore_copies = {n: _snapshot(args[n], n) for n in self.restore_value}

    def post_hook(self, args: dict[str, Any], exception: BaseException | None) -> None:
        if self.user_post_hook is not None:
            self.user_post_hook(args, exception)
            return
        for name, saved in self._restore_copies.items():
            args[name][...] = saved
        self._restore_copies = {}

    # -- the tuning key ------------------------------------------------------------------------
    def tuning_key(self, named: Mapping[str, object]) -> tuple[object, ...]:
        values = tuple(named[k] for k in self.keys if k in named)
        dtypes = tuple(dtype_name(d) for d in (getattr(v, "dtype", None) for v in named.values())
                       if d is not None)
        return values + dtypes

    # -- launching -----------------------------------------------------------------------------
    def __getitem__(self, grid: GridSpec) -> Callable[..., None]:
        return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=False, **kwargs)

    def _check_conflicts(self, kwargs: Mapping[str, object]) -> None:
        if not kwargs or self._config_names.isdisjoint(kwargs):
            return  # the usual launch: one set operation
        for config in self.configs:
            conflicts = sorted(set(kwargs) & set(config.all_kwargs()))
            if conflicts:
                raise ValueError(
                    f"Conflicting meta-parameters: {', '.join(conflicts)}. Make sure that you don't "
                    f"re-define auto-tuned symbols (kernel '{self.__name__}': the configs set them)."
                )

    def run(self, *args: object, grid: GridSpec, warmup: bool = False, **kwargs: object) -> Any:
        self._check_conflicts(kwargs)
        named = {**self._defaults, **dict(zip(self.arg_names, args)), **kwargs}
        key = self.tuning_key(named)
        config = self.cache.get(key)
        if config is not None:
            self.last_origin = "memory"
        else:
            config = self._choose(key, named, args, kwargs, grid)
            self.cache[key] = config
        self.best_config = config
        options = config.all_kwargs()
        if config.pre_hook is not None:
            config.pre_hook({**named, **options})
        return self.fn.run(*args, grid=grid, warmup=warmup, **kwargs, **options)

    def warmup(self, *args: object, grid: GridSpec, **kwargs: object) -> list[Any]:
        """Compile the variant of every (pruned) config for these arguments; run nothing."""
        self._check_conflicts(kwargs)
        named = {**self._defaults, **dict(zip(self.arg_names, args)), **kwargs}
        return [self.fn.run(*args, grid=grid, warmup=True, **kwargs, **c.all_kwargs())
                for c in self.prune_configs(named, kwargs)]

    # -- choosing ------------------------------------------------------------------------------
    def prune_configs(self, named: Mapping[str, object], kwargs: Mapping[str, object]) -> list[Config]:
        pruned = list(self.configs)
        if self.early_config_prune is not None:
            pruned = list(self.early_config_prune(self.configs, dict(named), **kwargs) or ())
            if not pruned:
                raise AutotunerError(
                    f"autotune of '{self.__name__}': no config left after early_config_prune; it must "
                    "return at least one config"
                )
        if self.perf_model is not None:
            top_k = self.top_k
            if isinstance(top_k, float) and top_k <= 1.0:
                top_k = max(1, int(len(self.configs) * top_k))
            elif not isinstance(top_k, int) or isinstance(top_k, bool):
                raise TypeError("autotune(prune_configs_by=...): top_k must be an int, or a float <= 1")
            if len(pruned) > top_k:
                estimates = {
                    c: self.perf_model(**{**named, **kwargs, **c.all_kwargs()}) for c in pruned
                }
                pruned = sorted(pruned, key=lambda c: estimates[c])[: max(1, top_k)]
        return pruned

    def _persisting(self) -> bool:
        if not self.cache_results or interpret_mode():
            return False
        return all(c.pre_hook is None for c in self.configs)

    def _entry(self, key: tuple[object, ...], pruned: list[Config]
               ) -> tuple[Any, str, list[dict[str, Any]]] | None:
        """(entry name, key text, config dicts) of the pruned configs for persistence, or None
        where nothing persists."""
        if not self._persisting():
            return None
        from . import autotune_cache

        chip = autotune_cache.current_chip(active_backend_name())
        if chip is None:
            return None
        try:
            dicts = [c.to_dict() for c in pruned]
        except ValueError as error:
            log(f"autotune of '{self.__name__}': results not saved: {error}")
            return None
        key_text = repr(key)
        digest = autotune_cache.entry_hash(self.cache_key, key_text, dicts)
        return autotune_cache.EntryName(chip, self.__name__, digest), key_text, dicts

    def _choose(self, key: tuple[object, ...], named: dict[str, object], args: tuple[object, ...],
                kwargs: dict[str, object], grid: GridSpec) -> Config:
        pruned = self.prune_configs(named, kwargs)
        if len(pruned) == 1:
            self.last_origin = "single"
            self.configs_timings = {}
            self.bench_time = 0.0
            if _print_autotuning():
                print(f"autotuning of {self.__name__} for key {key}: one config left after pruning, "
                      f"chosen without benchmarking: {pruned[0]}", flush=True)
            return pruned[0]
        group = distributed_group()
        if group is None:
            return self._choose_here(key, pruned, named, args, kwargs, grid)

        def choose() -> int:
            chosen = self._choose_here(key, pruned, named, args, kwargs, grid)
            return next(i for i, c in enumerate(pruned) if c is chosen)

        index = shared_index(group, len(pruned), choose)
        if index is None:
            raise AutotunerError(f"autotune of '{self.__name__}': rank 0 could not choose a config "
                                 "(its error is in rank 0's output)")
        if group.rank() != 0:
            self.last_origin = "rank 0"
            self.configs_timings = {}
            self.bench_time = 0.0
        return pruned[index]

    def _choose_here(self, key: tuple[object, ...], pruned: list[Config], named: dict[str, object],
                     args: tuple[object, ...], kwargs: dict[str, object], grid: GridSpec) -> Config:
        """The choice of this process alone: stored, else timed, else the first that fits."""
        timed = measures(active_backend_name(), self.custom_do_bench is not None)
        entry = self._entry(key, pruned)
        if entry is not None:
            from . import autotune_cache

            found = autotune_cache.lookup(*entry)
            if found is not None:
                data, path, origin = found
                config = pruned[entry[2].index(data["best"])]
                self.last_origin = origin
                if not timed:
                    self._announce(f"the {origin} choice for chip {data['chip']} ({path})", config)
                if _print_autotuning():
                    measured = data.get("measured", {})
                    print(f"autotuning of {self.__name__} for key {key}: reused the {origin} result "
                          f"{path} (chip {data['chip']}, measured {measured.get('date', '?')} on "
                          f"{measured.get('backend', '?')}); config selected: {config}", flush=True)
                return config
        if not timed:
            config = self._first_that_fits(pruned, named, args, kwargs, grid)
            self._announce("the first config that fits", config)
            return config
        start = time.perf_counter()
        timings = self._bench_all(pruned, named, args, kwargs, grid)
        self.bench_time = time.perf_counter() - start
        best = min(timings, key=lambda c: tuple(timings[c]))
        self.last_origin = "benchmark"
        self.configs_timings = timings
        full = {**named, **best.all_kwargs()}
        self.pre_hook(full, reset_only=True)
        if _print_autotuning():
            print(f"autotuning of {self.__name__} for key {key} finished after {self.bench_time:.2f}s; "
                  f"best config selected: {best}", flush=True)
        if entry is not None:
            self._save(entry, pruned, best, timings)
        return best

    def _announce(self, what: str, config: Config) -> None:
        """Say once per kernel that its configs are not timed, and what it runs instead."""
        if self._announced:
            return
        self._announced = True
        log(f"autotune of '{self.__name__}': configs are not timed on the {active_backend_name()} "
            f"(CPU timings say nothing about a GPU); using {what}: {{{config}}}. Set "
            f"{MODE_ENV}={MEASURE} to time them.")

    def _first_that_fits(self, pruned: list[Config], named: dict[str, object], args: tuple[object, ...],
                         kwargs: dict[str, object], grid: GridSpec) -> Config:
        """The first config that compiles (nothing is timed)."""
        self.skipped = {}
        self.configs_timings = {}
        self.bench_time = 0.0
        for config in pruned:
            options = config.all_kwargs()
            if config.pre_hook is not None:  # what it sets may decide the variant (`_bench`)
                config.pre_hook({**named, **options})
            try:
                self.fn.run(*args, grid=grid, warmup=True, **kwargs, **options)
            except SKIPPABLE as error:
                self._skip(config, error)
                continue
            self.last_origin = "first"
            if _print_autotuning():
                print(f"autotuning of {self.__name__}: not timed on the {active_backend_name()}; "
                      f"first config that fits: {config}", flush=True)
            return config
        raise self._every_config_failed()

    def _skip(self, config: Config, error: Exception) -> None:
        log(f"autotune of '{self.__name__}': skipped config {{{config}}}: "
            f"{type(error).__name__}: {error}")
        # the saved reason leaves out file paths and source lines
        short = error.reason if isinstance(error, CompilationError) else str(error)
        self.skipped[config] = f"{type(error).__name__}: {short}"

    def _every_config_failed(self) -> AutotunerError:
        lines = "\n".join(f"  {{{c}}}: {r}" for c, r in self.skipped.items())
        return AutotunerError(f"autotune of '{self.__name__}': every config failed:\n{lines}")

    def _bench_all(self, pruned: list[Config], named: dict[str, object], args: tuple[object, ...],
                   kwargs: dict[str, object], grid: GridSpec) -> dict[Config, list[float]]:
        timings: dict[Config, list[float]] = {}
        self.skipped = {}
        for config in pruned:
            try:
                timings[config] = self._bench(config, named, args, kwargs, grid)
            except SKIPPABLE as error:
                self._skip(config, error)
        if not timings:
            raise self._every_config_failed()
        return timings

    def _bench(self, config: Config, named: dict[str, object], args: tuple[object, ...],
               kwargs: dict[str, object], grid: GridSpec) -> list[float]:
        options = config.all_kwargs()
        full = {**named, **options}

        # as in Triton, the first run compiles, after the hooks: a config's pre-hook may set
        # what the variant is specialised on (tutorial 06: its descriptors' block shapes); a
        # config that cannot compile raises out of the benchmark and is skipped
        def kernel_call() -> None:
            if config.pre_hook is not None:
                config.pre_hook(full)
            self.pre_hook(full)
            try:
                self.fn.run(*args, grid=grid, warmup=False, **kwargs, **options)
            except Exception as error:
                self.post_hook(full, exception=error)
                raise
            self.post_hook(full, exception=None)

        if self.custom_do_bench is not None:
            result = self.custom_do_bench(kernel_call, quantiles=QUANTILES)
        else:
            from .. import testing

            result = testing.do_bench(kernel_call, warmup=self.warmup_ms, rep=self.rep_ms, quantiles=QUANTILES)
        if isinstance(result, (int, float)):
            return [float(result)] * 3
        return [float(v) for v in result]

    def _save(self, entry: tuple[Any, str, list[dict[str, Any]]], pruned: list[Config],
              best: Config, timings: dict[Config, list[float]]) -> None:
        from datetime import datetime, timezone

        from . import autotune_cache
        from .cache import COMPILER_VERSION

        name, key_text, dicts = entry
        how = ("custom do_bench" if self.custom_do_bench is not None else
               f"triton_metal.testing.do_bench(warmup={self.warmup_ms:g} ms, rep={self.rep_ms:g} ms)")
        data = {
            "format": autotune_cache.FORMAT_VERSION,
            "kernel": self.__name__,
            "kernel_cache_key": self.cache_key,
            "chip": name.chip,
            "key": key_text,
            "configs": dicts,
            "best": best.to_dict(),
            "timings_ms": [
                {"config": c.to_dict(), **({"p50_p20_p80": timings[c]} if c in timings
                                           else {"skipped": self.skipped.get(c, "?")})}
                for c in pruned
            ],
            "measured": {
                "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "backend": active_backend_name(),
                "how": f"{how}, quantiles (0.5, 0.2, 0.8), best = least (p50, p20, p80)",
                "compiler_version": COMPILER_VERSION,
                "tuning_seconds": round(self.bench_time, 3),
            },
        }
        if data["measured"]["backend"] != "metal":
            data["measured"]["note"] = (
                f"measured on the {data['measured']['backend']} (the CPU), not on a GPU: it says which "
                "config runs fastest there and nothing about any Apple GPU"
            )
        autotune_cache.store(name, data)

    def __repr__(self) -> str:
        return f"Autotuner({len(self.configs)} configs, key={self.keys}; {self.fn!r})"


def autotune(
    configs: Sequence[Config],
    key: Sequence[str],
    prune_configs_by: Mapping[str, Any] | None = None,
    reset_to_zero: Sequence[str] | None = None,
    restore_value: Sequence[str] | None = None,
    pre_hook: Callable[..., object] | None = None,
    post_hook: Callable[..., object] | None = None,
    warmup: float | None = None,
    rep: float | None = None,
    do_bench: Callable[..., Any] | None = None,
    cache_results: bool = True,
) -> Callable[[Any], Autotuner]:
    """Decorator over a `@jit` kernel (or a `@heuristics` one): see the module docstring."""

    def decorator(fn: Any) -> Autotuner:
        return Autotuner(fn, configs, key, prune_configs_by, reset_to_zero, restore_value,
                         pre_hook, post_hook, warmup, rep, do_bench, cache_results)

    return decorator


__all__ = ["Autotuner", "AutotunerError", "Config", "autotune", "dtype_name"]
