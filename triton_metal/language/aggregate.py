"""Aggregates (`@triton.aggregate`, `tl.core._aggregate`): user classes whose instances kernels
build, pass to and return from `@jit` functions, and read fields and call methods on.

An aggregate class declares its fields by annotation (`first: tl.tensor`, `BLOCK: tl.constexpr`,
`shape: tl.tuple`, another aggregate), after those of the aggregates it inherits from. Building
one runs the class's own `__init__` (plain Python, or a `constexpr_function`; given `_semantic`
and `_generator` where it takes them), or else the generated one, which binds the fields from
the arguments and the declared defaults. Afterwards every field must have a value, and the
instance is immutable: `tl.aggregate_replace(value, field=...)` builds a changed copy.

Values are checked against the annotations as Triton checks them, with Triton's words. Python
numbers (and the elements of tuples) given to `tl.constexpr` and `tl.tuple` fields become
`tl.constexpr`s, so a field holds the same thing whether the kernel is compiled (where literals
are already constexprs) or interpreted (where they are Python numbers).

`@jit` and `constexpr_function` methods bind to the instance (`pair.unpack()`,
`agg.square_val()`, `v[0]` through a `@jit` `__getitem__`): attribute access gives a
`BoundMethod`, which the front end inlines and the interpreter calls. Plain Python methods (and a
Python `__init__` and `__getitem__`) get their arguments' constexprs unwrapped, as a plain Python
helper does, so they see the same values compiled and interpreted. The front end and the
interpreter both hold aggregates as these Python objects; the compiled front end carries their
run-time fields through `if`, `for` and `while` (`frontend/control_flow.py`).
"""

from __future__ import annotations

import functools
import inspect
import struct
import sys
import types
import typing
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .core import TRITON_BUILTIN, constexpr, to_python, tuple_like
from .jit_marker import ConstexprFunction, JITCallable, bind_by_name

_FROZEN = "_tm_frozen"
_NO_DEFAULT = object()


@dataclass(frozen=True)
class AggregateField:
    """One declared field: its name, its annotation, and its default (`_NO_DEFAULT` if none)."""

    name: str
    annotation: Any
    default: Any = _NO_DEFAULT

    @property
    def has_default(self) -> bool:
        return self.default is not _NO_DEFAULT


@dataclass(frozen=True)
class BoundMethod:
    """A `@jit` or `constexpr_function` method of an aggregate, bound to the instance."""

    __self__: Any
    __func__: JITCallable

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.__func__(self.__self__, *args, **kwargs)


class _Method:
    """The class attribute of a `@jit` method: binds to the instance it is read from, and is the
    function itself when read from the class (`Parent.function_with_name()`)."""

    def __init__(self, fn: JITCallable) -> None:
        self.fn = fn

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        return self.fn if instance is None else BoundMethod(instance, self.fn)


def is_aggregate(value: Any) -> bool:
    """An instance of an aggregate class."""
    return isinstance(value, aggregate_value)


def is_aggregate_class(value: Any) -> bool:
    """A class made by `@triton.aggregate`."""
    return isinstance(value, type) and issubclass(value, aggregate_value) and value is not aggregate_value


def jit_methods(cls: type) -> list[JITCallable]:
    """The `@jit` functions an aggregate class holds (methods and static methods, inherited ones
    too): device code a kernel that names the class may run."""
    found: list[JITCallable] = []
    for klass in cls.__mro__:
        for member in vars(klass).values():
            fn = member.fn if isinstance(member, _Method) else getattr(member, "__func__", member)
            if isinstance(fn, JITCallable) and not isinstance(fn, ConstexprFunction) and fn not in found:
                found.append(fn)
    return found


def python_methods(cls: type) -> list[types.FunctionType]:
    """The Python functions `cls` itself holds but for its `@jit` methods: its methods, its
    `__init__`, its static, class and `constexpr_function` methods and property getters, as
    written (what the cache key reads when the class has no source)."""
    found: list[types.FunctionType] = []
    for member in vars(cls).values():
        fn = member.fn if isinstance(member, _Method) else member
        if isinstance(fn, JITCallable):
            fn = fn.fn if isinstance(fn, ConstexprFunction) else None
        elif isinstance(fn, (staticmethod, classmethod)):
            fn = fn.__func__
        elif isinstance(fn, property):
            fn = fn.fget
        if isinstance(fn, types.FunctionType):
            fn = inspect.unwrap(fn)
            if fn not in found:
                found.append(fn)
    return found


def runtime_fields(value: Any) -> dict[str, Any]:
    """An aggregate's fields that hold run-time values (all but its `tl.constexpr`s): what flows
    through a compiled `if`, `for` or `while`, as Triton flattens an aggregate into its IR values."""
    return {f.name: value.__dict__[f.name] for f in type(value)._tm_fields
            if not isinstance(value.__dict__[f.name], constexpr)}


def same_constexprs(a: Any, b: Any) -> bool:
    """Both aggregates of one class whose compile-time fields are equal (a field compile-time
    in one and run-time in the other differs)."""
    if type(a) is not type(b):
        return False
    for f in type(a)._tm_fields:
        x, y = a.__dict__[f.name], b.__dict__[f.name]
        if isinstance(x, constexpr) or isinstance(y, constexpr):
            if not (isinstance(x, constexpr) and isinstance(y, constexpr) and same_compile_time_value(x.value, y.value)):
                return False
    return True


def same_compile_time_value(x: Any, y: Any) -> bool:
    """Whether two compile-time values compile alike: of one type, floats with the same bits
    (`0.0 == -0.0` but `1 / x` differs; a NaN equals no value but is the same constant), tuples
    element by element."""
    while isinstance(x, constexpr) and isinstance(y, constexpr):
        x, y = x.value, y.value
    if type(x) is not type(y):
        return False
    if isinstance(x, float):
        return struct.pack("<d", x) == struct.pack("<d", y)
    if isinstance(x, np.floating):
        return x.tobytes() == y.tobytes()
    if isinstance(x, tuple):
        return len(x) == len(y) and all(same_compile_time_value(u, v) for u, v in zip(x, y))
    return bool(x == y)


class aggregate_value:  # noqa: N801 - Triton's name for the class every aggregate derives from
    """The base of every aggregate class: construction, field checks and immutability."""

    __triton_builtin__: ClassVar[bool] = True  # called from a kernel with `_semantic=`, as Triton calls it
    _tm_fields: ClassVar[tuple[AggregateField, ...]] = ()
    _tm_init: ClassVar[Any] = None

    def __new__(cls, *args: Any, _semantic: Any = None, _generator: Any = None, **kwargs: Any) -> Any:
        instance = object.__new__(cls)
        init = cls._tm_init
        if isinstance(init, JITCallable) and not isinstance(init, ConstexprFunction):
            raise ValueError(f"{cls.__name__}.__init__ cannot be a @triton.jit function")
        if init is None:
            _generated_init(instance, args, kwargs)
        else:
            extra = {k: v for k, v in (("_semantic", _semantic), ("_generator", _generator)) if _takes(init, k)}
            init(instance, *args, **extra, **kwargs)
        for f in cls._tm_fields:
            if f.name not in instance.__dict__:
                raise AttributeError(f"constructor for {cls.__name__} did not initialize attribute '{f.name}'")
        object.__setattr__(instance, _FROZEN, True)
        return instance

    def __setattr__(self, name: str, value: Any) -> None:
        cls = type(self)
        field = next((f for f in cls._tm_fields if f.name == name), None)
        if field is None:
            raise AttributeError(f"{cls.__name__} has no attribute '{name}'")
        if self.__dict__.get(_FROZEN):
            raise AttributeError(
                f"cannot assign to field '{name}' on immutable aggregate {cls.__name__}: "
                "use tl.aggregate_replace to build a changed copy"
            )
        object.__setattr__(self, name, _checked(cls, field, value))

    def __repr__(self) -> str:
        values = ", ".join(f"{f.name}={self.__dict__.get(f.name)!r}" for f in type(self)._tm_fields)
        return f"{type(self).__name__}({values})"


def _takes(fn: Any, name: str) -> bool:
    try:
        return name in inspect.signature(getattr(fn, "fn", fn)).parameters
    except (TypeError, ValueError):
        return False


def _generated_init(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """The `__init__` of a class that defines none: fields from the arguments, by position then
    name, else their defaults."""
    cls = type(instance)
    given = bind_by_name(f"{cls.__name__}()", [f.name for f in cls._tm_fields], args, kwargs, TypeError)
    for f in cls._tm_fields:
        if f.name in given:
            setattr(instance, f.name, given[f.name])
        elif f.default is not _NO_DEFAULT:
            setattr(instance, f.name, f.default)
        else:
            raise TypeError(f"{cls.__name__}() missing required argument '{f.name}'")


def _as_constexpr(value: Any) -> Any:
    """Python numbers, strings and None as `tl.constexpr`s (what a kernel's literals are)."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return constexpr(value)
    return value


def _checked(cls: type, field: AggregateField, value: Any) -> Any:
    """`value` as `field` holds it, or Triton's TypeError when it is not of the declared type."""
    annotation = field.annotation
    if annotation is constexpr:
        value = _as_constexpr(value)
    elif annotation is tuple and isinstance(value, tuple):
        value = tuple_like(value, [_as_constexpr(v) for v in value])
    if isinstance(annotation, type) and annotation is not typing.Any and not isinstance(value, annotation):
        raise TypeError(f"Expected {annotation} for attribute '{field.name}', got {type(value)}")
    return value


def _own_fields(cls: type) -> list[AggregateField]:
    """The fields `cls` itself declares, each annotation resolved on its own (`_resolved`)."""
    own = cls.__dict__.get("__annotations__", {})
    return [AggregateField(name, _resolved(cls, annotation), cls.__dict__.get(name, _NO_DEFAULT))
            for name, annotation in own.items()]


def _resolved(cls: type, annotation: Any) -> Any:
    """A string annotation (PEP 563) evaluated as `typing` evaluates it, in the class's module
    and namespace; one naming `constexpr` that cannot be evaluated (`tl` bound only in a
    function) is `constexpr` still; any other that cannot is kept as written (and not checked).
    Each is resolved alone, so a name defined further down leaves only its own field a string."""
    if not isinstance(annotation, str):
        return annotation
    module = sys.modules.get(cls.__module__)
    try:
        return eval(annotation, vars(module) if module else {}, dict(vars(cls)))  # noqa: S307 - as typing does
    except Exception:  # noqa: BLE001 - a name not defined (yet), or not a name at all
        return constexpr if annotation.rsplit(".", 1)[-1] == "constexpr" else annotation


def field_aggregates(cls: type) -> list[type]:
    """The aggregate classes the fields `cls` itself declares are annotated with (a string
    annotation that could not be resolved when the class was made is tried again now)."""
    own = cls.__dict__.get("__annotations__", {})
    found = (_resolved(cls, f.annotation) for f in cls._tm_fields if f.name in own)
    return [a for a in found if is_aggregate_class(a)]


def _called_as_helper(name: str, member: Any) -> Any:
    """A Python method (`__init__`, `__getitem__` and `__call__` too; a static method's function) that
    unwraps its arguments' constexprs before it runs, as the front end calls a plain Python
    helper: it sees `None` or `3`, not `constexpr(None)`, whether the kernel is compiled (where
    literals are constexprs) or interpreted (where they are Python values). Other dunders, `@jit`
    and `constexpr_function` methods are left as they are."""
    if name.startswith("__") and name not in ("__init__", "__getitem__", "__call__"):
        return member
    if isinstance(member, staticmethod):
        return staticmethod(_called_as_helper(name, member.__func__))
    if not isinstance(member, types.FunctionType):
        return member

    @functools.wraps(member)
    def with_python_values(*args: Any, **kwargs: Any) -> Any:
        return member(*to_python(args), **{k: to_python(v) for k, v in kwargs.items()})

    return with_python_values


def _aggregate(cls: type) -> type:
    """Triton's `triton.aggregate` (`tl.core._aggregate`): make `cls` an aggregate class (module
    docstring)."""
    bases = tuple(b for b in cls.__bases__ if b is not object)
    for base in bases:
        if not is_aggregate_class(base):
            raise TypeError(
                f"Aggregates can only inherit from other aggregates: {cls.__name__} inherits from {base.__name__}"
            )
    inherited = [f for base in bases for f in base._tm_fields]
    own = _own_fields(cls)
    own_names = {f.name for f in own}
    all_fields = tuple([f for f in inherited if f.name not in own_names] + own)
    init = cls.__dict__.get("__init__")
    namespace: dict[str, Any] = {}
    for name, member in cls.__dict__.items():
        if name in ("__dict__", "__weakref__", "__init__") or name in own_names:
            continue
        namespace[name] = _Method(member) if isinstance(member, JITCallable) else _called_as_helper(name, member)
    # The class keeps its module and qualified name (a class made in a function or another class
    # is `make.<locals>.Tile`), so `inspect.getsource` finds it and the cache key reads its source.
    namespace["__qualname__"] = cls.__qualname__
    namespace["_tm_fields"] = all_fields
    inherited_init = next((b._tm_init for b in bases if b._tm_init), None)
    namespace["_tm_init"] = _called_as_helper("__init__", init) if init is not None else inherited_init
    return type(cls.__name__, bases or (aggregate_value,), namespace)


aggregate = _aggregate


def aggregate_replace(value: Any, _semantic: Any = None, **changes: Any) -> Any:
    """Triton's `tl.aggregate_replace`: a copy of the aggregate `value` with the given fields
    changed (checked as the constructor checks them); `value` itself is unchanged."""
    if not is_aggregate(value):
        raise TypeError(f"aggregate_replace expects an aggregate instance, got {type(value).__name__}")
    cls = type(value)
    names = {f.name for f in cls._tm_fields}
    for key in changes:
        if key not in names:
            raise TypeError(f"{cls.__name__} has no field '{key}'")
    copy = object.__new__(cls)
    for f in cls._tm_fields:
        setattr(copy, f.name, changes[f.name] if f.name in changes else value.__dict__[f.name])
    object.__setattr__(copy, _FROZEN, True)
    return copy


setattr(aggregate_replace, TRITON_BUILTIN, True)

__all__ = ["AggregateField", "BoundMethod", "aggregate", "aggregate_replace", "aggregate_value", "field_aggregates", "is_aggregate", "is_aggregate_class", "jit_methods", "python_methods", "runtime_fields", "same_constexprs"]
