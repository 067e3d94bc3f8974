"""`@jit` and `JITFunction`: Triton's host-side kernel object.

    @triton_metal.jit
    def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr): ...

    add[grid](x, y, out, n, BLOCK=1024, num_warps=4)

A launch (`run`) does, in order, and refuses bad input before anything runs:
1. bind the arguments with the generated binder (`binder.py`) and compute each parameter's
   specialization fact (`specialization.py`): argument count, names, array dtypes, value ranges;
2. check the launch options (`num_warps`) and resolve the grid (`grid.py`);
3. unless `TRITON_METAL_INTERPRET=1`: look the `SpecializationKey` up in this function's
   in-memory cache (`cache.py`); on a miss, read the disk cache or compile the kernel to MSL
   (`launch.compile_variant`) and build the backend's launcher for it;
4. execute: the launcher of the variant (Metal, the emulator, or the interpreter when forced),
   or the NumPy interpreter under `TRITON_METAL_INTERPRET=1`.

`kernel.warmup(*args, grid=..., **kwargs)` does steps 1-3 and returns the compiled variant.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any, overload

from ..errors import CompilationError, LaunchError
from ..language.context import quiet_static_prints
from ..language.jit_marker import JITCallable
from ..backends.metal.plan import LAUNCH_DIM_LIMIT
from .backend import METAL, active_backend_name, backend_for_arrays, launch_environment
from .binder import Param, explain_binding_error, make_binder
from .cache import COMPILER_VERSION, CompiledKernel, KernelCache
from .dependencies import UsedGlobal, cache_key_and_globals, check_globals
from .facts import same_array_facts
from .grid import VALID_NUM_WARPS, GridSpec, check_num_warps, normalize_grid, resolve_grid
from .arrays import needs_64bit_indices
from .launch import compile_variant, launch_on_interpreter, make_launcher, to_launch_args
from .log import log
from .observer import OBSERVER
from .target import active_target
from .specialization import (
    ArgSpec,
    ArgumentError,
    MockArray,
    MockTensor,
    SpecializationKey,
    is_fp64_refusal,
    without_fp64,
)

DEFAULT_NUM_WARPS = 4


def annotated_scalar_type(annotation: object) -> Any:
    """The scalar type a parameter's annotation names (`tl.float16`, `"tl.uint8"`, `"i32"`,
    `"fp16"`), which its run-time scalar argument takes, as in Triton; None for any other
    annotation (`torch.Tensor`, `int`, none)."""
    from ..language import types as tlt

    if isinstance(annotation, tlt.dtype):
        return None if annotation.is_ptr() else annotation
    if not isinstance(annotation, str):
        return None
    try:
        ty = tlt.dtype_from_name(annotation.strip().split(".")[-1])
    except ValueError:
        return None
    return None if ty.is_ptr() else ty


def _is_constexpr_annotation(annotation: object) -> bool:
    """`tl.constexpr` (the class), or its name when annotations are strings (PEP 563)."""
    if isinstance(annotation, str):
        return annotation.split(".")[-1] == "constexpr"
    return (
        getattr(annotation, "__name__", None) == "constexpr"
        and getattr(annotation, "__module__", "").startswith("triton_metal.language")
    )


class KernelInterface:
    """Triton's base of launchable kernels (`triton.runtime.jit.KernelInterface`):
    `kernel[grid](*args)` is `kernel.run(*args, grid=grid, warmup=False)`."""

    def run(self, *args: object, grid: GridSpec, warmup: bool, **kwargs: object) -> Any:
        raise NotImplementedError

    def __getitem__(self, grid: GridSpec) -> Callable[..., Any]:
        return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=False, **kwargs)


class JITFunction(KernelInterface, JITCallable):
    """A `@jit` kernel: launch it with `kernel[grid](*args, **kwargs)`."""

    def __init__(
        self,
        fn: Callable[..., Any],
        version: object = None,
        repr: Callable[..., str] | None = None,  # noqa: A002 - Triton's keyword name
        launch_metadata: Callable[..., Any] | None = None,
        do_not_specialize: Iterable[int | str] | None = None,
        do_not_specialize_on_alignment: Iterable[int | str] | None = None,
        debug: bool | None = None,
        noinline: bool | None = None,
    ) -> None:
        if not callable(fn) or not hasattr(fn, "__code__"):
            raise TypeError(f"@jit decorates a Python function, not {type(fn).__name__}")
        signature = inspect.signature(fn)
        self.varargs: str | None = next(
            (p.name for p in signature.parameters.values() if p.kind is inspect.Parameter.VAR_POSITIONAL), None
        )
        """The `*name` parameter: a helper that takes it is called from kernels, never launched."""
        named = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_POSITIONAL]
        names = [p.name for p in named]
        no_spec = self._param_names(fn, names, do_not_specialize, "do_not_specialize")
        no_align = self._param_names(
            fn, names, do_not_specialize_on_alignment, "do_not_specialize_on_alignment"
        )
        super().__init__(fn, do_not_specialize=sorted(no_spec, key=names.index), noinline=bool(noinline))
        self.version = version
        self.repr = repr
        self.launch_metadata = launch_metadata
        self.debug = bool(debug)
        self.do_not_specialize_on_alignment = sorted(no_align, key=names.index)
        self.params: tuple[Param, ...] = tuple(
            self._param(fn, index, p, no_spec, no_align) for index, p in enumerate(named)
        )
        self.arg_names: list[str] = names
        self.constexpr_names = frozenset(p.name for p in self.params if p.is_constexpr)
        self._binder = make_binder(fn.__name__, self.params)
        self.cache = KernelCache()
        self._cache_key: str | None = None
        self._used_globals: tuple[UsedGlobal, ...] = ()

    @property
    def cache_key(self) -> str:
        """SHA-256 of the source, the `@jit` functions it calls and the global constexprs it
        reads (`dependencies.py`); computed on first use, when those constexprs' values are
        recorded: a launch after one of them changed raises, as in Triton."""
        if self._cache_key is None:
            self._cache_key, self._used_globals = cache_key_and_globals(self)
        return self._cache_key

    def _unsafe_update_src(self, new_src: str) -> None:
        """Replace the kernel's source text, as Triton's method of this name: Triton's tests
        substitute an expression into a template kernel's body this way. The parameters must
        stay the same (they were bound from the Python function); compiled variants and the
        cache key are dropped, so the next launch compiles the new text."""
        import ast
        import textwrap

        fdef = ast.parse(textwrap.dedent(new_src)).body[0]
        names = [a.arg for a in fdef.args.args] if isinstance(fdef, ast.FunctionDef) else None
        if names != self.arg_names:
            raise ValueError(
                f"_unsafe_update_src: the new source of '{self.__name__}' must define the same "
                f"parameters {self.arg_names}, not {names}"
            )
        self.src = new_src
        self.cache = KernelCache()
        self._cache_key = None
        self._used_globals = ()

    # -- decoration helpers -------------------------------------------------------------------
    @staticmethod
    def _param_names(
        fn: Callable[..., Any], names: list[str], given: Iterable[int | str] | None, option: str
    ) -> set[str]:
        result: set[str] = set()
        for item in given or ():
            if isinstance(item, bool) or not isinstance(item, (int, str)):
                raise TypeError(f"@jit({option}=...): {item!r} is neither a parameter name nor an index")
            if isinstance(item, int):
                if not 0 <= item < len(names):
                    raise ValueError(
                        f"@jit({option}=...): index {item} is out of range for "
                        f"'{fn.__name__}', which has {len(names)} parameters"
                    )
                result.add(names[item])
            elif item in names:
                result.add(item)
            else:
                raise ValueError(
                    f"@jit({option}=...): '{fn.__name__}' has no parameter named '{item}'"
                )
        return result

    @staticmethod
    def _param(
        fn: Callable[..., Any], index: int, p: inspect.Parameter, no_spec: set[str], no_align: set[str]
    ) -> Param:
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            raise TypeError(f"@jit: kernel '{fn.__name__}' has **{p.name}; kernels take named parameters")
        if p.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise TypeError(
                f"@jit: kernel '{fn.__name__}' has positional-only parameter '{p.name}'; "
                "drop the '/'"
            )
        return Param(
            name=p.name,
            index=index,
            is_constexpr=_is_constexpr_annotation(p.annotation),
            annotated=annotated_scalar_type(p.annotation),
            do_not_specialize=p.name in no_spec,
            do_not_specialize_on_alignment=p.name in no_align,
            keyword_only=p.kind is inspect.Parameter.KEYWORD_ONLY,
            default=p.default,
        )

    # -- launching -----------------------------------------------------------------------------
    def __getitem__(self, grid: GridSpec) -> Callable[..., None]:
        """`kernel[grid]`: a launcher taking the kernel's arguments and launch options."""
        return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=False, **kwargs)

    def warmup(self, *args: object, grid: GridSpec, **kwargs: object) -> CompiledKernel | None:
        """Check the arguments and compile the variant they select, without running it.

        A NumPy or MLX dtype may stand for an array (`kernel.warmup(np.float32, ...)`): it
        compiles as an aligned pointer to that type. Returns the compiled variant, Triton's
        `CompiledKernel` (`n_regs`, `metadata.shared`, `compiled[grid](*args)`: cache.py); under
        `TRITON_METAL_INTERPRET=1`, the variant its legality check compiles, whose launches
        are interpreted."""
        wrapped = [
            a if i < len(self.params) and self.params[i].is_constexpr else MockArray.wrap_dtype(a)
            for i, a in enumerate(args)
        ]
        named = {
            k: v if k in self.constexpr_names else MockArray.wrap_dtype(v) for k, v in kwargs.items()
        }
        return self.run(*wrapped, grid=grid, warmup=True, **named)

    def specialization(self, *args: object, **kwargs: object) -> SpecializationKey:
        """The key a launch with these arguments compiles (and caches) under; checks them too."""
        values, facts, warps, debug = self._bind(args, kwargs)
        debug = debug or launch_environment()[2] > 0
        return SpecializationKey(
            self.__name__, facts, warps, debug, backend_for_arrays(active_backend_name(), facts),
            COMPILER_VERSION,
            64 if needs_64bit_indices(values) else 32,
            target=active_target(),
        )

    def _bind(
        self, args: tuple[object, ...], kwargs: dict[str, object]
    ) -> tuple[tuple[object, ...], tuple[ArgSpec, ...], int, bool]:
        if self.varargs is not None:
            from ..errors import Loc
            from ..frontend.refusals import refusal

            where = Loc(self.fn.__code__.co_filename, self.starting_line, 0)
            raise refusal("kernel_varargs", name=self.__name__, param=self.varargs).with_context(where, self.__name__)
        try:
            values, facts, num_warps, _stages, _ctas, _maxnreg, debug = self._binder(*args, **kwargs)
        except ArgumentError as error:
            if is_fp64_refusal(error):
                self._type_check_before_fp64(args, kwargs)
            raise
        except TypeError as error:
            raise explain_binding_error(self.__name__, self.fn, args, kwargs, error) from None
        if num_warps is None:
            warps = DEFAULT_NUM_WARPS
        elif type(num_warps) is int and num_warps in VALID_NUM_WARPS:  # check_num_warps, inlined
            warps = num_warps
        else:
            warps = check_num_warps(num_warps, self.__name__)
        return values, facts, warps, self.debug if debug is None else bool(debug)

    def _type_check_before_fp64(self, args: tuple[object, ...], kwargs: dict[str, object]) -> None:
        """Triton's order: a program with a type error reports it even when it was given a
        float64 array (which Triton accepts and Apple GPUs refuse). The arrays stand in as
        float32 for the front end; its refusal, if any, is raised in place of the fp64 one, on
        every backend."""
        from .compiler import type_check

        stand_ins = tuple(without_fp64(a) for a in args)
        named = {k: without_fp64(v) for k, v in kwargs.items()}
        if all(a is b for a, b in zip(stand_ins, args)) and all(named[k] is kwargs[k] for k in kwargs):
            return  # no float64 array to stand in: the fp64 refusal stands
        key = self.specialization(*stand_ins, **named)
        try:
            type_check(self, key)
        except CompilationError as refusal:
            note = "the float64 arrays were checked as float32 (Apple GPUs have no fp64)"
            hint = f"{refusal.hint}; {note}" if refusal.hint else note
            located = type(refusal)(refusal.reason, refusal.loc, hint, refusal.kernel, refusal.source_line,
                                    refusal.callee)
            raise located from refusal.__cause__

    def run(self, *args: object, grid: GridSpec, warmup: bool, **kwargs: object) -> CompiledKernel | None:
        try:
            return self._run(args, grid, warmup, kwargs)
        except LaunchError as error:
            raise _name_kernel(error, self.__name__)

    def _run(self, args: tuple[object, ...], grid: GridSpec, warmup: bool,
             kwargs: dict[str, object]) -> CompiledKernel | None:
        name = self.__name__
        values, facts, warps, debug_flag = self._bind(args, kwargs)
        if type(grid) is tuple:  # no META to build (normalize_grid checks it)
            grid3 = normalize_grid(grid, name)
        else:
            grid3 = resolve_grid(grid, lambda: dict(zip(self.arg_names, values)), name)
        interpret, backend, level = launch_environment()
        if level:  # TRITON_METAL_DEBUG compiles device asserts in, as debug=True does
            debug_flag = True
        if interpret:
            if warmup:  # the variant the legality check compiles (disk cached)
                return self._check_compiles(facts, warps, debug_flag, backend, values, grid3[0], True)
            self._check_compiles(facts, warps, debug_flag, backend, values, grid3[0])
            if 0 in grid3:  # no programs: nothing runs, as in Triton
                return None
            if level >= 1:
                log(f"launch {name} grid={grid3} num_warps={warps}: interpreted (TRITON_METAL_INTERPRET=1)")
            launch_on_interpreter(self, grid3, to_launch_args(self.arg_names, values, facts))
            return None

        if backend == METAL:
            facts = same_array_facts(values, facts)
        cache = self.cache
        index_bits = cache.index_bits(facts, values)
        spread = grid3[0] * 32 * warps > LAUNCH_DIM_LIMIT
        target = active_target()
        fast_key = (facts, warps, debug_flag, backend, index_bits, spread, target)
        compiled = cache.last_hit(fast_key)
        observer = OBSERVER.current
        if compiled is not None:
            cache.hits += 1
        else:
            key = SpecializationKey(
                name, facts, warps, debug_flag, backend_for_arrays(backend, facts),
                COMPILER_VERSION, index_bits, spread, target=target,
            )
            compiled = cache.get(key)
            if compiled is None:
                compiled = self._compile(key)
                if observer is not None:
                    observer.compiled(self, compiled)
            cache.by_facts[fast_key] = compiled
        if self._used_globals:
            check_globals(self._used_globals)
        if warmup or 0 in grid3:  # a grid without programs runs nothing, as in Triton
            return compiled
        if level >= 1:
            log(f"launch {name} grid={grid3} num_warps={warps} backend={backend} "
                f"kernel={compiled.msl.name} ({compiled.origin})")
        if observer is None:
            compiled.launcher(values, grid3)
        else:
            observer.launch(self, compiled, values, grid3)
        compiled.launches += 1
        return compiled  # as Triton's launch returns its CompiledKernel (an interpreted one: None)

    def _check_compiles(self, facts: tuple[ArgSpec, ...], warps: int, debug_flag: bool, backend: str,
                        values: tuple[object, ...], programs_x: int, again: bool = False
                        ) -> CompiledKernel | None:
        """One legality: the interpreter runs only what the compiler accepts. The variant a
        compiled launch would use (the same grid spreading) is compiled to MSL once per
        specialization (memory and disk cached, no toolchain run), so the interpreter raises
        exactly the compiler's refusal, from the same place (Metal's buffer limit included).
        Returns that variant when it compiled it (None when it was checked before, unless
        `again`)."""
        index_bits = 64 if needs_64bit_indices(values) else 32
        spread = programs_x * 32 * warps > LAUNCH_DIM_LIMIT
        target = active_target()
        fast_key = (facts, warps, debug_flag, backend, index_bits, spread, target)
        if fast_key in self.cache.legal and not again:
            return None
        key = SpecializationKey(
            self.__name__, facts, warps, debug_flag, backend, COMPILER_VERSION, index_bits, spread,
            target=target,
        )
        with quiet_static_prints():  # the interpreted body prints them when it runs
            compiled = compile_variant(self, key, announce=False)
        compiled.kernel = self
        self.cache.legal.add(fast_key)
        return compiled

    def _compile(self, key: SpecializationKey) -> CompiledKernel:
        compiled = compile_variant(self, key)
        compiled.kernel = self
        compiled.launcher = make_launcher(self, compiled)
        self.cache.put(compiled)
        return compiled

    def __repr__(self) -> str:
        return f"JITFunction({self.fn.__module__}:{self.fn.__qualname__})"


def _name_kernel(error: LaunchError, name: str) -> LaunchError:
    """The launch error with the kernel's name in front, unless its message names it already."""
    text = str(error)
    if error.args and isinstance(error.args[0], str) and f"'{name}'" not in text:
        error.args = (f"kernel '{name}': {error.args[0]}", *error.args[1:])
    return error


def describe_facts(names: list[str], facts: tuple[ArgSpec, ...]) -> str:
    """`x_ptr: *fp32 (aligned), n: i32 (%16), BLOCK=1024` for the debug log."""
    from .specialization import ConstexprArg, DescriptorArg, PointerArg, ScalarArg, TupleArg

    parts: list[str] = []
    for name, fact in zip(names, facts):
        if isinstance(fact, TupleArg):
            parts.append(f"{name}: ({describe_facts([str(i) for i in range(len(fact.elements))], fact.elements)})")
        elif isinstance(fact, DescriptorArg):
            parts.append(f"{name}: tensordesc<{fact.base.element}{list(fact.block_shape)}>")
        elif isinstance(fact, PointerArg):
            parts.append(f"{name}: *{fact.element}" + (" (aligned)" if fact.aligned16 else "")
                         + (f" (= argument {fact.same_as})" if fact.same_as >= 0 else ""))
        elif isinstance(fact, ScalarArg):
            parts.append(f"{name}: {fact.ty}" + (" (%16)" if fact.divisible16 else ""))
        elif isinstance(fact, ConstexprArg):
            parts.append(f"{name}={fact.value!r}")
    return ", ".join(parts)


@overload
def jit(fn: Callable[..., Any]) -> JITFunction: ...
@overload
def jit(
    fn: None = None,
    *,
    version: object = None,
    repr: Callable[..., str] | None = None,  # noqa: A002
    launch_metadata: Callable[..., Any] | None = None,
    do_not_specialize: Iterable[int | str] | None = None,
    do_not_specialize_on_alignment: Iterable[int | str] | None = None,
    debug: bool | None = None,
    noinline: bool | None = None,
    autotune: bool = False,
    configs: Iterable[Any] | None = None,
    key: Iterable[str] | None = None,
) -> Callable[[Callable[..., Any]], Any]: ...
def jit(
    fn: Callable[..., Any] | None = None,
    *,
    version: object = None,
    repr: Callable[..., str] | None = None,  # noqa: A002
    launch_metadata: Callable[..., Any] | None = None,
    do_not_specialize: Iterable[int | str] | None = None,
    do_not_specialize_on_alignment: Iterable[int | str] | None = None,
    debug: bool | None = None,
    noinline: bool | None = None,
    autotune: bool = False,
    configs: Iterable[Any] | None = None,
    key: Iterable[str] | None = None,
) -> Any:
    """Make a Python function a kernel: `@jit`, `@jit(...)` or `jit(fn, ...)`, as in Triton.

    The seed form `@jit(autotune=True, configs=[Config(...), ...], key=[...])` is
    `@autotune(configs, key)` over `@jit` (`autotuner.py`; `key` defaults to none: the dtypes)."""
    if not autotune and (configs is not None or key is not None):
        raise ValueError("@jit(configs=..., key=...) tunes the kernel only with autotune=True")

    def decorator(f: Callable[..., Any]) -> JITFunction:
        return JITFunction(
            f,
            version=version,
            repr=repr,
            launch_metadata=launch_metadata,
            do_not_specialize=do_not_specialize,
            do_not_specialize_on_alignment=do_not_specialize_on_alignment,
            debug=debug,
            noinline=noinline,
        )

    if autotune:
        from .autotuner import autotune as make_autotuner

        def tuned(f: Callable[..., Any]) -> Any:
            return make_autotuner(list(configs or ()), list(key or ()))(decorator(f))

        return tuned(fn) if fn is not None else tuned
    if fn is not None:
        return decorator(fn)
    return decorator


from ..language.jit_marker import ConstexprFunction, constexpr_function  # noqa: E402 - Triton's home of them

__all__ = ["ConstexprFunction", "JITFunction", "KernelInterface", "MockTensor", "constexpr_function", "jit"]
