"""The objects a kernel body handles: `constexpr`, `tensor`, the `@builtin` convention, loops.

A `tensor` is a builder handle plus its `tl` type; every operator on it is a builtin that forwards
to the semantic layer. Builtins follow Triton's convention: the front end passes `_semantic=`;
when it is absent (the interpreter runs the body as Python) the semantic of the running launch is
taken from `context.current_semantic()`; outside any kernel the call is refused.

`constexpr` wraps a compile-time Python value; operations between constexprs fold in Python and
give constexprs. Used as an annotation (`BLOCK: tl.constexpr`) it marks a parameter.
"""

from __future__ import annotations

import builtins as _py
import functools
import operator
from collections.abc import Callable, Iterable, Iterator
from enum import Enum
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import CompilationError
from .context import current_semantic
from .types import block_type, dtype

if TYPE_CHECKING:
    from .semantic import Semantic

F = TypeVar("F", bound=Callable[..., Any])

TRITON_BUILTIN = "__triton_builtin__"
TRITON_MAX_TENSOR_NUMEL = 1048576


class PropagateNan(Enum):
    """Whether `minimum`/`maximum`/`clamp` return NaN when an operand is NaN."""

    NONE = 0
    ALL = 0xFFFF


def semantic_for(name: str, given: Semantic | None) -> Semantic:
    """The semantic a builtin must use: the one passed in, else the running launch's."""
    if given is not None:
        return given
    sem = current_semantic()
    if sem is None:
        raise RuntimeError(
            f"tl.{name} can only be called inside a @jit kernel "
            "(launch the kernel with kernel[grid](...), or set TRITON_METAL_INTERPRET=1 to debug it)"
        )
    return sem


def builtin(fn: F) -> F:
    """Mark a `tl` function as a builtin and give it a `_semantic` when the caller did not."""
    name = fn.__name__

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        kwargs["_semantic"] = semantic_for(name, kwargs.get("_semantic"))
        return fn(*args, **kwargs)

    setattr(wrapper, TRITON_BUILTIN, True)
    return wrapper  # type: ignore[return-value]


def is_builtin(fn: object) -> bool:
    return getattr(fn, TRITON_BUILTIN, False) is True


def must_use_result(fn: Any, flag: bool | str = True) -> Any:
    """Mark a `@jit` function, builtin or `constexpr_function` whose result a kernel must use,
    as Triton's `triton.must_use_result`: a call to it written as a statement of its own is
    refused ("The result of f is not being used."). `@must_use_result("words")` adds the words
    to the message."""
    if isinstance(fn, str):
        words = fn
        return lambda f: must_use_result(f, words)
    fn._must_use_result = flag
    return fn


def unused_result_message(fn: Any, name: str) -> str | None:
    """Triton's refusal of a dropped result of `fn` (written `name` in the kernel), or None
    when `fn` is not marked `must_use_result`."""
    flag = getattr(fn, "_must_use_result", False)
    if not flag:
        return None
    message = f"The result of {name} is not being used."
    return f"{message} {flag}" if isinstance(flag, str) else message


LOGICAL_ON_BLOCK_WARNING = (
    "Logical operators 'and' and 'or' are deprecated for non-scalar tensors; "
    "please use '&' or '|' instead"
)


def warn_logical_on_block(value: Any, where: tuple[str, int] | None = None) -> None:
    """Triton's warning for `and`/`or` with a block operand (both backends give it), at the
    kernel line `where` (file, line), or at the caller's caller."""
    if isinstance(value, tensor) and value.type.is_block():
        import warnings

        if where is None:
            warnings.warn(LOGICAL_ON_BLOCK_WARNING, UserWarning, stacklevel=3)
        else:
            warnings.warn_explicit(LOGICAL_ON_BLOCK_WARNING, UserWarning, where[0], where[1])


def _tensor_member_fn(fn: F) -> F:
    """Also expose a free builtin `tl.f(x, ...)` as the method `x.f(...)`."""
    setattr(tensor, fn.__name__, fn)
    return fn


def _unwrap(x: Any) -> Any:
    """The Python value inside a constexpr (other values unchanged)."""
    return x.value if isinstance(x, constexpr) else x


_unwrap_if_constexpr = _unwrap


def tuple_like(like: tuple[Any, ...], items: Any) -> tuple[Any, ...]:
    """`items` as a tuple of `like`'s kind: a named tuple keeps its class (its fields are read by
    name), any other tuple (`tl.tuple` included) becomes a plain one."""
    return type(like)(*items) if hasattr(like, "_fields") else tuple(items)


def to_python(v: Any) -> Any:
    """Unwrap constexprs, recursively through tuples and lists (tensors stay): the values a
    Python helper or a Python method of an aggregate is called with on every backend."""
    v = _unwrap(v)
    if isinstance(v, tuple):
        return tuple_like(v, [to_python(x) for x in v])
    if isinstance(v, list):
        return [to_python(x) for x in v]
    return v


# ---------------------------------------------------------------------------------------------
# constexpr
# ---------------------------------------------------------------------------------------------


def _fold(op: Callable[[Any, Any], Any]) -> Callable[[constexpr, Any], Any]:
    def method(self: constexpr, other: Any) -> Any:
        if isinstance(other, tensor):
            return NotImplemented
        return constexpr(op(self.value, _unwrap(other)))

    return method


def _rfold(op: Callable[[Any, Any], Any]) -> Callable[[constexpr, Any], Any]:
    def method(self: constexpr, other: Any) -> Any:
        if isinstance(other, tensor):
            return NotImplemented
        return constexpr(op(_unwrap(other), self.value))

    return method


class constexpr:
    """A value known when the kernel is compiled (Python int/float/bool/str/dtype/None/...)."""

    def __init__(self, value: Any) -> None:
        self.value: Any = value.value if isinstance(value, constexpr) else value

    def __repr__(self) -> str:
        return f"constexpr[{self.value!r}]"

    def __hash__(self) -> int:
        return hash(self.value)

    def __bool__(self) -> bool:
        return bool(self.value)

    def __index__(self) -> int:
        return operator.index(self.value)

    def __int__(self) -> int:
        return int(self.value)

    def __float__(self) -> float:
        return float(self.value)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.value(*args, **kwargs)

    @property
    def type(self) -> constexpr_type | tuple_type:
        """Its type, as Triton's `constexpr.type`: `constexpr_type(value)`, equal to another
        constexpr's type exactly when the values are equal (`x.type == tl.constexpr_type(3)`);
        a tuple's is its `tuple_type` (`type_of`)."""
        return type_of(self)

    def __getattr__(self, name: str) -> Any:
        if name == "value":  # not yet set (unpickling); avoid infinite recursion
            raise AttributeError(name)
        return getattr(self.value, name)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.value)

    def __len__(self) -> int:
        return len(self.value)

    def __getitem__(self, key: Any) -> Any:
        return constexpr(self.value[_unwrap(key)])

    __add__ = _fold(operator.add)
    __radd__ = _rfold(operator.add)
    __sub__ = _fold(operator.sub)
    __rsub__ = _rfold(operator.sub)
    __mul__ = _fold(operator.mul)
    __rmul__ = _rfold(operator.mul)
    __truediv__ = _fold(operator.truediv)
    __rtruediv__ = _rfold(operator.truediv)
    __floordiv__ = _fold(operator.floordiv)
    __rfloordiv__ = _rfold(operator.floordiv)
    __mod__ = _fold(operator.mod)
    __rmod__ = _rfold(operator.mod)
    __pow__ = _fold(operator.pow)
    __rpow__ = _rfold(operator.pow)
    __lshift__ = _fold(operator.lshift)
    __rlshift__ = _rfold(operator.lshift)
    __rshift__ = _fold(operator.rshift)
    __rrshift__ = _rfold(operator.rshift)
    __and__ = _fold(operator.and_)
    __rand__ = _rfold(operator.and_)
    __or__ = _fold(operator.or_)
    __ror__ = _rfold(operator.or_)
    __xor__ = _fold(operator.xor)
    __rxor__ = _rfold(operator.xor)
    __eq__ = _fold(operator.eq)  # type: ignore[assignment]
    __ne__ = _fold(operator.ne)  # type: ignore[assignment]
    __lt__ = _fold(operator.lt)
    __le__ = _fold(operator.le)
    __gt__ = _fold(operator.gt)
    __ge__ = _fold(operator.ge)

    def __neg__(self) -> constexpr:
        return constexpr(-self.value)

    def __pos__(self) -> constexpr:
        return constexpr(+self.value)

    def __invert__(self) -> constexpr:
        return constexpr(~self.value)

    def __abs__(self) -> constexpr:
        return constexpr(abs(self.value))

    def logical_and(self, other: Any) -> constexpr:
        return constexpr(self.value and _unwrap(other))

    def logical_or(self, other: Any) -> constexpr:
        return constexpr(self.value or _unwrap(other))

    def logical_not(self) -> constexpr:
        return constexpr(not self.value)


CONSTEXPR_0 = constexpr(0)
"""Triton's shared constexpr 0 (a default of `sort`, `argsort` helpers in libraries)."""


class constexpr_type:
    """The type of a compile-time value (Triton's `tl.constexpr_type`): equal when the values are."""

    def __init__(self, value: Any) -> None:
        self.value: Any = _unwrap(value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, constexpr_type) and self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"constexpr_type[{self.value}]"


class tuple_type:
    """The type of a tuple (Triton's `tl.tuple_type`): its elements' types and, for a named
    tuple, its field names. Two are equal when both are (`((5, 6)).type == C.type`)."""

    def __init__(self, types: Iterable[Any], fields: Iterable[str] | None = None) -> None:
        self.types: list[Any] = list(types)
        # Triton names a plain tuple's fields "" (so a named tuple's type differs from it)
        self.fields: tuple[str, ...] = _py.tuple(fields) if fields is not None else ("",) * len(self.types)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, tuple_type) and self.types == other.types and self.fields == other.fields

    def __hash__(self) -> int:
        return hash((_py.tuple(self.types), self.fields))

    def __iter__(self) -> Iterator[Any]:
        return iter(self.types)

    def __len__(self) -> int:
        return len(self.types)

    def __getitem__(self, index: int) -> Any:
        return self.types[index]

    def __repr__(self) -> str:
        return f"tuple_type[{', '.join(repr(t) for t in self.types)}]"


def type_of(value: Any) -> Any:
    """`value.type` of any value a kernel handles, as Triton's front end types it: a tensor's
    `tl` type; a tuple's `tuple_type` of its elements' types (Triton's tuple literals hold
    constexprs: `(5, 6).type` is `tuple_type([constexpr_type(5), constexpr_type(6)])`); any
    other compile-time value's `constexpr_type`; what else has a `type` (descriptors) keeps it."""
    raw = value.value if isinstance(value, constexpr) else value
    if isinstance(raw, _py.tuple):
        return tuple_type((type_of(v) for v in raw), getattr(raw, "_fields", None))
    if isinstance(raw, tensor) or (not isinstance(value, constexpr) and hasattr(raw, "type")):
        return raw.type
    return constexpr_type(raw)


# ---------------------------------------------------------------------------------------------
# tensor
# ---------------------------------------------------------------------------------------------


class tensor:
    """A value in a kernel: a builder `handle` and its `tl` type (scalar, pointer or block)."""

    def __init__(self, handle: Any, type: dtype) -> None:  # noqa: A002 - Triton's name
        self.handle = handle
        self.type: dtype = type
        self.dtype: dtype = type.scalar
        self.shape: list[constexpr] = (
            [constexpr(s) for s in type.shape] if isinstance(type, block_type) else []
        )

    @property
    def numel(self) -> constexpr:
        n = 1
        for s in self.shape:
            n *= s.value
        return constexpr(n)

    def __repr__(self) -> str:
        sem = current_semantic()
        if sem is not None and sem.eager and self.handle is not None:
            return f"tensor({self.type}, {sem.concrete_value(self)!r})"  # the interpreter knows it
        return f"tensor({self.type})"

    __hash__ = object.__hash__

    # -- Python protocols that would need the data --------------------------------------------
    def __bool__(self) -> bool:
        sem = current_semantic()
        if sem is not None and sem.eager:
            return bool(sem.concrete_scalar(self, "bool"))
        raise CompilationError(
            "a tensor's truth value is not known when the kernel is compiled",
            hint="use tl.where(cond, a, b) for data-dependent choices, or compare constexprs",
        )

    def __index__(self) -> int:
        sem = current_semantic()
        if sem is not None and sem.eager and self.dtype.is_int():
            return int(sem.concrete_scalar(self, "int"))
        raise CompilationError(
            "a tensor cannot be used as a Python integer",
            hint="loop bounds and shapes must be tl.constexpr or scalar kernel arguments",
        )

    def __int__(self) -> int:
        return self.__index__()

    def __float__(self) -> float:
        sem = current_semantic()
        if sem is not None and sem.eager:
            return float(sem.concrete_scalar(self, "float"))
        raise CompilationError("a tensor cannot be used as a Python float")

    def __iter__(self) -> Iterator[Any]:
        raise CompilationError(
            "tensors are not iterable", hint="index with tl.arange and masks, or use tl.split"
        )

    # -- arithmetic ---------------------------------------------------------------------------
    @builtin
    def __add__(self, other: Any, _semantic: Semantic | None = None) -> tensor:
        return _semantic.add(self, _unwrap(other), True)  # type: ignore[union-attr]

    @builtin
    def __radd__(self, other: Any, _semantic: Semantic | None = None) -> tensor:
        return _semantic.add(_unwrap(other), self, True)  # type: ignore[union-attr]

    @builtin
    def __sub__(self, other: Any, _semantic: Semantic | None = None) -> tensor:
        return _semantic.sub(self, _unwrap(other), True)  # type: ignore[union-attr]

    @builtin
    def __rsub__(self, other: Any, _semantic: Semantic | None = None) -> tensor:
        return _semantic.sub(_unwrap(other), self, True)  # type: ignore[union-attr]

    @builtin
    def __mul__(self, other: Any, _semantic: Semantic | None = None) -> tensor:
        return _semantic.mul(self, _unwrap(other), True)  # type: ignore[union-attr]

    @builtin
    def __rmul__(self, other: Any, _semantic: Semantic | None = None) -> tensor:
        return _semantic.mul(_unwrap(other), self, True)  # type: ignore[union-attr]

    @builtin
    def __truediv__(self, other: Any, _semantic: Semantic | None = None) -> tensor:
        return _semantic.truediv(self, _unwrap(other))  # type: ignore[union-attr]

    @builtin
    def __rtruediv__(self, other: Any, _semantic: Semantic | None = None) -> tensor:
        return _semantic.truediv(_unwrap(other), self)  # type: ignore[union-attr]

    @builtin
    def __floordiv__(self, other: Any, _semantic: Semantic | None = None) -> tensor:
        return _semantic.floordiv(self, _unwrap(other))  # type: ignore[union-attr]

    @builtin
    def __rfloordiv__(self, other: Any, _semantic: Semantic | None = None) -> tensor:
        return _semantic.floordiv(_unwrap(other), self)  # type: ignore[union-attr]

    @builtin
    def __mod__(self, other: Any, _semantic: Semantic | None = None) -> tensor:
        return _semantic.mod(self, _unwrap(other))  # type: ignore[union-attr]

    @builtin
    def __rmod__(self, other: Any, _semantic: Semantic | None = None) -> tensor:
        return _semantic.mod(_unwrap(other), self)  # type: ignore[union-attr]

    @builtin
    def __pow__(self, other: Any, _semantic: Semantic | None = None) -> tensor:
        return _semantic.pow(self, _unwrap(other))  # type: ignore[union-attr]

    @builtin
    def __rpow__(self, other: Any, _semantic: Semantic | None = None) -> tensor:
        return _semantic.pow(_unwrap(other), self)  # type: ignore[union-attr]

    @builtin
    def __neg__(self, _semantic: Semantic | None = None) -> tensor:
        return _semantic.minus(self)  # type: ignore[union-attr]

    @builtin
    def __pos__(self, _semantic: Semantic | None = None) -> tensor:
        return _semantic.plus(self)  # type: ignore[union-attr]

    @builtin
    def __invert__(self, _semantic: Semantic | None = None) -> tensor:
        return _semantic.invert(self)  # type: ignore[union-attr]

    @builtin
    def __abs__(self, _semantic: Semantic | None = None) -> tensor:
        return _semantic.abs(self)  # type: ignore[union-attr]

    # -- bitwise ------------------------------------------------------------------------------
    @builtin
    def __and__(self, other: Any, _semantic: Semantic | None = None) -> tensor:
        return _semantic.and_(self, _unwrap(other))  # type: ignore[union-attr]

    @builtin
    def __rand__(self, other: Any, _semantic: Semantic | None = None) -> tensor:
        return _semantic.and_(_unwrap(other), self)  # type: ignore[union-attr]

    @builtin
    def __or__(self, other: Any, _semantic: Semantic | None = None) -> tensor:
        return _semantic.or_(self, _unwrap(other))  # type: ignore[union-attr]

    @builtin
    def __ror__(self, other: Any, _semantic: Semantic | None = None) -> tensor:
        return _semantic.or_(_unwrap(other), self)  # type: ignore[union-attr]

    @builtin
    def __xor__(self, other: Any, _semantic: Semantic | None = None) -> tensor:
        return _semantic.xor_(self, _unwrap(other))  # type: ignore[union-attr]

    @builtin
    def __rxor__(self, other: Any, _semantic: Semantic | None = None) -> tensor:
        return _semantic.xor_(_unwrap(other), self)  # type: ignore[union-attr]

    @builtin
    def __lshift__(self, other: Any, _semantic: Semantic | None = None) -> tensor:
        return _semantic.shl(self, _unwrap(other))  # type: ignore[union-attr]

    @builtin
    def __rlshift__(self, other: Any, _semantic: Semantic | None = None) -> tensor:
        return _semantic.shl(_unwrap(other), self)  # type: ignore[union-attr]

    @builtin
    def __rshift__(self, other: Any, _semantic: Semantic | None = None) -> tensor:
        return _semantic.shr(self, _unwrap(other))  # type: ignore[union-attr]

    @builtin
    def __rrshift__(self, other: Any, _semantic: Semantic | None = None) -> tensor:
        return _semantic.shr(_unwrap(other), self)  # type: ignore[union-attr]

    # -- comparisons --------------------------------------------------------------------------
    @builtin
    def __lt__(self, other: Any, _semantic: Semantic | None = None) -> tensor:
        return _semantic.less_than(self, _unwrap(other))  # type: ignore[union-attr]

    @builtin
    def __le__(self, other: Any, _semantic: Semantic | None = None) -> tensor:
        return _semantic.less_equal(self, _unwrap(other))  # type: ignore[union-attr]

    @builtin
    def __gt__(self, other: Any, _semantic: Semantic | None = None) -> tensor:
        return _semantic.greater_than(self, _unwrap(other))  # type: ignore[union-attr]

    @builtin
    def __ge__(self, other: Any, _semantic: Semantic | None = None) -> tensor:
        return _semantic.greater_equal(self, _unwrap(other))  # type: ignore[union-attr]

    @builtin
    def __eq__(self, other: Any, _semantic: Semantic | None = None) -> tensor:  # type: ignore[override]
        return _semantic.equal(self, _unwrap(other))  # type: ignore[union-attr]

    @builtin
    def __ne__(self, other: Any, _semantic: Semantic | None = None) -> tensor:  # type: ignore[override]
        return _semantic.not_equal(self, _unwrap(other))  # type: ignore[union-attr]

    @builtin
    def logical_and(self, other: Any, _semantic: Semantic | None = None) -> tensor:
        return _semantic.logical_and(self, _unwrap(other))  # type: ignore[union-attr]

    @builtin
    def logical_or(self, other: Any, _semantic: Semantic | None = None) -> tensor:
        return _semantic.logical_or(self, _unwrap(other))  # type: ignore[union-attr]

    @builtin
    def logical_not(self, _semantic: Semantic | None = None) -> tensor:
        return _semantic.logical_not(self)  # type: ignore[union-attr]

    # -- shape --------------------------------------------------------------------------------
    @builtin
    def __getitem__(self, slices: Any, _semantic: Semantic | None = None) -> tensor:
        return _semantic.getitem(self, slices)  # type: ignore[union-attr]

    @property
    def T(self) -> tensor:  # noqa: N802 - Triton's name
        return _semantic_trans(self)

    @builtin
    def to(
        self,
        dtype: Any,
        fp_downcast_rounding: Any = None,
        bitcast: Any = False,
        _semantic: Semantic | None = None,
    ) -> tensor:
        dst = _unwrap(dtype)
        if _unwrap(bitcast):
            return _semantic.bitcast(self, dst)  # type: ignore[union-attr]
        return _semantic.cast(self, dst, _unwrap(fp_downcast_rounding))  # type: ignore[union-attr]

    @builtin
    def item(self, _semantic: Semantic | None = None) -> tensor:
        return _semantic.item(self)  # type: ignore[union-attr]


def _semantic_trans(x: tensor) -> tensor:
    sem = semantic_for("trans", None)
    n = len(x.shape)
    return sem.permute(x, tuple(_py.reversed(_py.range(n))))


# ---------------------------------------------------------------------------------------------
# loops
# ---------------------------------------------------------------------------------------------


def _loop_bound(x: Any, what: str) -> int:
    x = _unwrap(x)
    if isinstance(x, tensor):
        return operator.index(x)  # the interpreter knows the value; the compiler refuses
    if isinstance(x, bool) or not isinstance(x, int):
        raise CompilationError(f"{what} must be an integer, not {type(x).__name__}")
    return x


class range:  # noqa: A001 - Triton's name
    """`for i in tl.range(start, end, step, num_stages=...)`: a loop the compiler keeps as a loop.

    The pipelining hints are accepted and ignored (they steer NVIDIA/AMD software pipelining)."""

    def __init__(
        self,
        arg1: Any,
        arg2: Any = None,
        step: Any = None,
        num_stages: Any = None,
        loop_unroll_factor: Any = None,
        disallow_acc_multi_buffer: Any = False,
        flatten: Any = False,
        warp_specialize: Any = False,
        disable_licm: Any = False,
    ) -> None:
        if arg2 is None:
            self.start, self.end = constexpr(0), arg1
        else:
            self.start, self.end = arg1, arg2
        self.step = constexpr(1) if step is None else step
        self.num_stages = num_stages
        self.loop_unroll_factor = loop_unroll_factor
        self.disallow_acc_multi_buffer = disallow_acc_multi_buffer
        self.flatten = flatten
        self.warp_specialize = warp_specialize
        self.disable_licm = disable_licm

    def __iter__(self) -> Iterator[Any]:
        step = _loop_bound(self.step, "the loop step")
        if step == 0:
            raise CompilationError("a loop step of 0 never ends")
        start, end = _loop_bound(self.start, "the loop start"), _loop_bound(self.end, "the loop end")
        sem = current_semantic()
        if sem is None:  # plain Python, outside a kernel
            return iter(_py.range(start, end, step))
        # the interpreter: the index is a tl scalar of the compiled loop's index type (`row.to(
        # tl.int64)`, `row.dtype`), counted as the compiled loop counts (past int32 included)
        bounds = (self.start, self.end, self.step)
        count_ty, index_ty = sem.loop_types([sem.to_tensor(b).type.scalar for b in bounds])
        bits = count_ty.int_bitwidth
        signed = [(v + 2 ** (bits - 1)) % 2**bits - 2 ** (bits - 1) for v in (start, end, step)]
        return (sem.loop_index_constant(v, index_ty) for v in _py.range(*signed))


class static_range:
    """`for i in tl.static_range(...)`: unrolled at compile time; bounds must be constexprs."""

    def __init__(self, arg1: Any, arg2: Any = None, step: Any = None) -> None:
        if arg2 is None:
            start, end = 0, _unwrap(arg1)
        else:
            start, end = _unwrap(arg1), _unwrap(arg2)
        step = 1 if step is None else _unwrap(step)
        for v, what in ((start, "start"), (end, "end"), (step, "step")):
            if isinstance(v, bool) or not isinstance(v, int):
                raise CompilationError(
                    f"tl.static_range {what} must be a constexpr integer, got {v!r}",
                    hint="use tl.range for loops with run-time bounds",
                )
        if step == 0:
            raise CompilationError("a loop step of 0 never ends")
        self.start, self.end, self.step = constexpr(start), constexpr(end), constexpr(step)

    def __iter__(self) -> Iterator[int]:
        return iter(_py.range(self.start.value, self.end.value, self.step.value))


class condition:
    """`while tl.condition(c):` - a `while` condition with a compiler hint (accepted, ignored)."""

    def __init__(self, arg1: Any, disable_licm: Any = False) -> None:
        self.condition = arg1
        self.disable_licm = disable_licm

    def __bool__(self) -> bool:
        return bool(self.condition)


def __getattr__(name: str) -> Any:
    """Triton defines every builtin in its `language/core.py`, and libraries reach them through
    it (`core.reshape`, `core.static_range`, `core.view`): the names of the language package that
    live in its other modules answer here too (the same objects)."""
    import triton_metal.language as tl

    if name == "_aggregate":  # `triton.aggregate`'s name here, as in Triton
        from .aggregate import _aggregate

        return _aggregate
    if name in tl.__all__:
        return getattr(tl, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
