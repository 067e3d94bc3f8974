"""Aggregates (`@triton.aggregate`): built in kernels, passed to and returned from `@jit`
functions, their fields read and their methods called, on the emulator and in the interpreter,
against NumPy; refused where Triton refuses them, in Triton's words, on both backends."""

from __future__ import annotations

import collections
from typing import NamedTuple

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.errors import CompilationError

BLOCK = 16


@triton.aggregate
class Pair:
    first: tl.tensor
    second: tl.tensor

    @triton.jit
    def get_first(self):
        return self.first

    def get_second(self, _semantic=None):
        return self.second

    @triton.jit
    def unpack(self):
        return self.get_first(), self.get_second()

    def __getitem__(self, ind: tl.constexpr, _semantic=None):
        if ind == 0:
            return self.first
        assert ind == 1
        return self.second


@triton.aggregate
class Scaled:
    """A tensor with a compile-time scale, and a nested aggregate and a tuple beside it."""

    pair: Pair
    offsets: tl.tuple
    SCALE: tl.constexpr

    @triton.jit
    def total(self):
        a, b = self.pair.unpack()
        return (a + b) * self.SCALE + self.offsets[0] - self.offsets[1]


@triton.aggregate
class Ramp:
    value: tl.tensor
    SQUARED: tl.constexpr

    def __init__(self, n, _semantic=None):
        self.value = tl.arange(0, n, _semantic=_semantic)
        self.SQUARED = tl.constexpr(self.square(n))

    @triton.constexpr_function
    def square(self, n):
        return n * n

    @triton.jit
    def __getitem__(self, ind):
        return self.value + ind


@triton.aggregate
class Base:
    data: tl.tensor
    K: tl.constexpr

    @triton.jit
    def doubled(self):
        return self.data * 2 + self.K


@triton.aggregate
class Child(Base):
    bias: tl.tensor
    EXTRA: tl.constexpr = 100


@triton.jit
def swap(pair):
    return Pair(pair.second, pair.first)


@triton.jit
def pair_kernel(x_ptr, y_ptr, out_ptr, SCALE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    pair = Pair(tl.load(x_ptr + offs), tl.load(y_ptr + offs))
    a, b = pair.unpack()  # a @jit method: x, y
    tl.store(out_ptr + offs, a - b)
    swapped = swap(pair)  # passed to and returned from a @jit function: (y, x)
    tl.store(out_ptr + BLOCK + offs, swapped[0] * 10 + swapped[1])  # a Python __getitem__
    s = Scaled(swapped, (3, 1), SCALE)
    tl.store(out_ptr + 2 * BLOCK + offs, s.total())
    r = Ramp(BLOCK)  # a user __init__, a constexpr_function method, a @jit __getitem__
    tl.store(out_ptr + 3 * BLOCK + offs, r[5] + r.SQUARED + r.square(2))
    c = Child(a, 7, b)  # inherited fields first, a default for EXTRA
    tl.store(out_ptr + 4 * BLOCK + offs, c.doubled() + c.bias + c.EXTRA)
    moved = tl.aggregate_replace(c, data=b)
    tl.store(out_ptr + 5 * BLOCK + offs, moved.doubled() - c.doubled())


def test_aggregates_compute_what_numpy_computes(backend):
    rng = np.random.default_rng(0)
    x = rng.integers(-50, 50, BLOCK).astype(np.int32)
    y = rng.integers(-50, 50, BLOCK).astype(np.int32)
    out = np.zeros(6 * BLOCK, np.int32)
    pair_kernel[(1,)](x, y, out, SCALE=3, BLOCK=BLOCK)
    r = np.arange(BLOCK)
    expected = [x - y, y * 10 + x, (y + x) * 3 + 3 - 1, r + 5 + BLOCK * BLOCK + 4,
                x * 2 + 7 + y + 100, (y * 2 + 7) - (x * 2 + 7)]
    np.testing.assert_array_equal(out.reshape(6, BLOCK), np.stack(expected))


@triton.jit
def assign_attribute_kernel(x_ptr):
    pair = Pair(tl.load(x_ptr), tl.load(x_ptr))
    pair.second = tl.load(x_ptr)  # error


@triton.jit
def assign_item_kernel(x_ptr):
    pair = Pair(tl.load(x_ptr), tl.load(x_ptr))
    pair[1] += 1  # error


@triton.aggregate
class Settable:
    a: tl.tensor

    @triton.jit
    def modify(self, a):
        self.a = a  # error
        return self


@triton.jit
def modify_kernel(x_ptr):
    s = Settable(tl.load(x_ptr))
    s = s.modify(tl.load(x_ptr) + 1)
    tl.store(x_ptr, s.a)


@triton.jit
def wrong_type_kernel(x_ptr):
    pair = Pair(tl.load(x_ptr), 3)
    tl.store(x_ptr, pair.first)


@pytest.mark.parametrize("kernel, words", [
    (assign_attribute_kernel, "Attribute assignment is not supported in triton"),
    (assign_item_kernel, "__setitem__ is not supported in triton"),
    (modify_kernel, "Attribute assignment is not supported in triton"),
    (wrong_type_kernel, "Expected <class 'triton_metal.language.core.tensor'> for attribute 'second'"),
], ids=["attribute", "item", "jit-method", "field-type"])
def test_what_triton_refuses_is_refused_in_its_words(backend, kernel, words):
    x = np.zeros(4, np.int32)
    with pytest.raises(CompilationError, match=words.replace("(", r"\(")):
        kernel[(1,)](x)
    np.testing.assert_array_equal(x, 0)


class Shape(NamedTuple):
    x: tl.constexpr
    y: tl.constexpr


@triton.aggregate
class State:
    shape: tl.tuple
    n: tl.constexpr
    m: tl.constexpr = 42


def test_host_construction_wraps_constexprs_and_freezes():
    state = State(Shape(3, tl.constexpr(7)), 5)
    assert isinstance(state.shape, Shape) and state.shape.x == tl.constexpr(3)
    assert isinstance(state.shape.y, tl.constexpr) and state.n.value == 5 and state.m.value == 42
    with pytest.raises(AttributeError, match="cannot assign to field 'n' on immutable aggregate"):
        state.n = tl.constexpr(1)
    with pytest.raises(AttributeError, match="State has no attribute 'z'"):
        state.z = 1
    changed = tl.aggregate_replace(state, n=9)
    assert changed.n.value == 9 and state.n.value == 5 and changed.shape == state.shape
    with pytest.raises(TypeError, match="has no field 'z'"):
        tl.aggregate_replace(state, z=1)
    with pytest.raises(TypeError, match="expects an aggregate instance"):
        tl.aggregate_replace(42, x=1)
    with pytest.raises(TypeError, match="missing required argument 'n'"):
        State(Shape(1, 2))


def test_class_rules():
    class Plain:
        pass

    with pytest.raises(TypeError, match="Aggregates can only inherit from other aggregates"):
        @triton.aggregate
        class Bad(Plain):
            x: tl.constexpr

    @triton.aggregate
    class JitInit:  # refused when built, as Triton refuses it
        x: tl.constexpr

        @triton.jit
        def __init__(self, x):
            pass

    with pytest.raises(ValueError, match=r"JitInit.__init__ cannot be a @triton.jit function"):
        JitInit(1)

    @triton.aggregate
    class Partial:
        x: tl.constexpr
        y: tl.constexpr

        def __init__(self, x):
            self.x = x

    with pytest.raises(AttributeError, match="constructor for Partial did not initialize attribute 'y'"):
        Partial(1)
    assert tl.core._aggregate is triton.aggregate


@triton.jit
def carried_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    s = Scaled(Pair(x, x * 0), (x, 2), 3)  # run-time fields nested in an aggregate and a tuple
    for i in range(n):
        s = Scaled(Pair(s.pair.first + 1, s.pair.second + s.pair.first), (s.offsets[0] * 2, 2), 3)
    if n > 2:
        s = Scaled(swap(s.pair), s.offsets, s.SCALE)
    i = 0
    while i < n:
        s = tl.aggregate_replace(s, offsets=(s.offsets[0] - 1, 2))
        i += 1
    tl.store(out_ptr + offs, s.total())


@pytest.mark.parametrize("n", [0, 1, 3])
def test_aggregates_flow_through_if_for_and_while(backend, n):
    x = np.arange(-8, 8, dtype=np.int32)
    out = np.zeros(16, np.int32)
    carried_kernel[(1,)](x, out, n, BLOCK=16)
    first, second, offset = x.astype(np.int64), 0 * x, x.astype(np.int64)
    for _ in range(n):
        first, second, offset = first + 1, second + first, offset * 2
    if n > 2:
        first, second = second, first
    offset = offset - n
    np.testing.assert_array_equal(out, (first + second) * 3 + offset - 2)


@triton.jit
def branch_constexpr_kernel(x_ptr, n):
    s = Base(tl.load(x_ptr), 1)
    if n > 0:
        s = Base(tl.load(x_ptr), 2)  # error
    tl.store(x_ptr, s.doubled())


def test_a_constexpr_field_differing_between_branches_is_refused(backend):
    x = np.zeros(4, np.int32)
    with pytest.raises(CompilationError, match="'s' cannot be merged after a run-time 'if'"):
        branch_constexpr_kernel[(1,)](x, 5)


@triton.jit
def float_constexpr_branch_kernel(x_ptr, out_ptr, n, A: tl.constexpr, B: tl.constexpr):
    s = Base(tl.load(x_ptr), A)
    if n > 0:
        s = Base(tl.load(x_ptr) + 0, B)
    tl.store(out_ptr, s.data / s.K)


@pytest.mark.parametrize("a, b", [(0.0, -0.0), (-0.0, 0.0)])
def test_constexpr_fields_of_zeros_of_either_sign_differ_between_branches(backend, a, b):
    x, out = np.ones(1, np.float32), np.zeros(1, np.float32)
    with pytest.raises(CompilationError, match="'s' cannot be merged after a run-time 'if'"):
        float_constexpr_branch_kernel[(1,)](x, out, 5, a, b)


@pytest.mark.parametrize("k", [-0.0, float("nan")])
def test_constexpr_fields_of_the_same_float_bits_merge(backend, k):
    x, out = np.ones(1, np.float32), np.zeros(1, np.float32)
    float_constexpr_branch_kernel[(1,)](x, out, 5, k, k)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = np.float32(1.0) / np.float32(k)
    np.testing.assert_array_equal(out, [expected])


def test_an_edited_method_changes_the_cache_key_of_a_kernel_naming_the_class(monkeypatch):
    from triton_metal.language.aggregate import jit_methods
    from triton_metal.runtime.dependencies import cache_key

    assert [m.__name__ for m in jit_methods(Pair)] == ["get_first", "unpack"]
    assert [m.__name__ for m in jit_methods(Child)] == ["doubled"]  # inherited
    before = cache_key(pair_kernel)
    assert cache_key(pair_kernel) == before
    get_first = jit_methods(Pair)[0]
    monkeypatch.setattr(get_first, "src", get_first.src.replace("return self.first", "return self.second"))
    assert cache_key(pair_kernel) != before


# -- the disk cache key covers every aggregate class a kernel's code may run ---------------------

STALE_MODULE = '''
import triton_metal as triton
import triton_metal.language as tl


@triton.aggregate
class Base:
    data: tl.tensor
    K: tl.constexpr = {base_default}


@triton.aggregate
class Derived(Base):  # the kernel names only Derived; K's default is Base's
    bias: tl.tensor


@triton.jit
def inherited_kernel(x_ptr):
    d = Derived(tl.load(x_ptr), bias=tl.load(x_ptr))
    tl.store(x_ptr, d.data + d.bias + d.K)


@triton.aggregate
class Inner:
    v: tl.tensor

    def scaled(self, _semantic=None):
        return self.v * {inner_factor}


@triton.aggregate
class Outer:  # the kernel names only Outer; Inner is its field's annotation and its __init__ builds one
    inner: Inner

    def __init__(self, v):
        self.inner = Inner(v)

    @triton.jit
    def get(self):
        return self.inner.scaled()


@triton.jit
def nested_kernel(x_ptr):
    o = Outer(tl.load(x_ptr))
    tl.store(x_ptr, o.get())


def compute(v):  # a plain Python helper an aggregate's __init__ calls
    return v * {helper_factor}


@triton.aggregate
class Computed:
    v: tl.tensor

    def __init__(self, v):
        self.v = compute(v)


@triton.jit
def helper_kernel(x_ptr):
    tl.store(x_ptr, Computed(tl.load(x_ptr)).v)


def make_kernel():
    @triton.aggregate
    class Local:  # made by a function: the class is `make_kernel.<locals>.Local`
        v: tl.tensor
        K: tl.constexpr = {local_default}

    @triton.jit
    def local_kernel(x_ptr):
        s = Local(tl.load(x_ptr))
        tl.store(x_ptr, s.v * s.K)

    return local_kernel
'''

STALE_RUNNER = '''
import json
import numpy as np
import stale_aggregates as m

results = []
for kernel in (m.inherited_kernel, m.nested_kernel, m.make_kernel(), m.helper_kernel):
    x = np.ones(1, np.int32)
    kernel[(1,)](x)
    results.append(int(x[0]))
print(json.dumps(results))
'''


def _run_stale(folder, cache, **values) -> list[int]:
    import json
    import os
    import subprocess
    import sys

    (folder / "stale_aggregates.py").write_text(STALE_MODULE.format(**values))
    (folder / "runner.py").write_text(STALE_RUNNER)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRITON_METAL_") or k == "TRITON_METAL_INTERPRET"}
    env["TRITON_METAL_CACHE_DIR"] = str(cache)
    proc = subprocess.run([sys.executable, str(folder / "runner.py")], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_editing_an_aggregate_the_kernel_reaches_recompiles_it_in_a_fresh_process(backend, tmp_path):
    """A base class's default, a Python method of an aggregate another one's field and __init__
    bring in, the default of a class made inside a function and a Python helper an __init__
    calls each change what a fresh process runs (the disk cache keys on them all)."""
    cache = tmp_path / "cache"
    first = dict(base_default=2, inner_factor=3, local_default=4, helper_factor=8)
    assert _run_stale(tmp_path, cache, **first) == [1 + 1 + 2, 3, 4, 8]
    second = dict(base_default=5, inner_factor=6, local_default=7, helper_factor=9)
    assert _run_stale(tmp_path, cache, **second) == [1 + 1 + 5, 6, 7, 9]


@triton.aggregate
class ByAnnotation:
    inner: Pair


@triton.aggregate
class ByInit:
    total: tl.tensor

    def __init__(self, a, b):
        self.total = Pair(a, b).first


def test_the_classes_a_kernel_brings_in_through_bases_fields_and_python_methods():
    from triton_metal.runtime.dependencies import aggregate_classes

    assert aggregate_classes(Child) == [Child, Base]  # a base class
    assert aggregate_classes(ByAnnotation) == [ByAnnotation, Pair]  # a field's annotation
    assert aggregate_classes(ByInit) == [ByInit, Pair]  # built by its __init__
    assert aggregate_classes(Scaled) == [Scaled, Pair]


GENERATED_CLASS = '''
@triton.aggregate
class Generated:
    v: tl.tensor
    K: tl.constexpr = {default}

    def scaled(self, _semantic=None):
        return self.v * {factor}
'''


def _generated_class(default: int, factor: int) -> type:
    """An aggregate class built from text with no file behind it (`inspect.getsource` fails)."""
    namespace = {"triton": triton, "tl": tl}
    exec(compile(GENERATED_CLASS.format(default=default, factor=factor), "<generated>", "exec"), namespace)
    return namespace["Generated"]


def _kernel_using(cls: type):
    @triton.jit
    def generated_kernel(x_ptr):
        g = cls(tl.load(x_ptr))
        tl.store(x_ptr, g.scaled() + g.K)

    return generated_kernel


def test_an_aggregate_without_source_is_keyed_on_its_code_and_defaults_not_its_name():
    from triton_metal.runtime.dependencies import cache_key

    key = cache_key(_kernel_using(_generated_class(1, 2)))
    assert cache_key(_kernel_using(_generated_class(1, 2))) == key  # the same text: the same key
    assert cache_key(_kernel_using(_generated_class(3, 2))) != key  # a field default
    assert cache_key(_kernel_using(_generated_class(1, 4))) != key  # a Python method's code


# -- string annotations (this module has `from __future__ import annotations`) -------------------


@triton.aggregate
class ForwardTile:
    v: tl.tensor
    K: tl.constexpr
    extra: LaterTile  # a class defined further down: only this annotation stays a string for now

    @triton.jit
    def scaled(self):
        return self.v * self.K.value + self.extra.w


@triton.aggregate
class LaterTile:
    w: tl.tensor


@triton.jit
def forward_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    t = ForwardTile(x, 3, LaterTile(x * 10))
    tl.store(out_ptr + offs, t.scaled())


def test_one_unresolvable_annotation_leaves_the_others_resolved(backend):
    from triton_metal.language.aggregate import field_aggregates

    assert [f.annotation for f in ForwardTile._tm_fields] == [tl.tensor, tl.constexpr, "LaterTile"]
    assert field_aggregates(ForwardTile) == [LaterTile]  # resolved now that LaterTile exists
    x = np.arange(-8, 8, dtype=np.int32)
    out = np.zeros(16, np.int32)
    forward_kernel[(1,)](x, out, BLOCK=16)
    np.testing.assert_array_equal(out, x * 3 + x * 10)


def test_a_string_annotation_naming_constexpr_is_constexpr_where_it_cannot_be_evaluated():
    import triton_metal.language as lang  # a name the module's globals do not hold

    @triton.aggregate
    class Local:
        K: lang.constexpr
        other: Unknown  # noqa: F821 - never defined: kept as written, not checked

    assert [f.annotation for f in Local._tm_fields] == [tl.constexpr, "Unknown"]
    built = Local(3, "anything")
    assert isinstance(built.K, tl.constexpr) and built.K.value == 3 and built.other == "anything"


# -- Python methods see Python values on both backends -------------------------------------------


@triton.aggregate
class Holder:
    x: tl.tensor
    N: tl.constexpr

    def __init__(self, x, n, _semantic=None):
        self.x = x
        self.N = 100 if n is None else n  # `None`, not `constexpr(None)`

    def scaled(self, factor=None, _semantic=None):
        if factor is None:
            return self.x * self.N
        return self.x + factor

    def __getitem__(self, ind, _semantic=None):
        return self.x * ind if isinstance(ind, int) else self.x * 0


@triton.jit
def python_method_kernel(x_ptr, out_ptr, FACTOR: tl.constexpr, K: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    h = Holder(tl.load(x_ptr + offs), None)
    tl.store(out_ptr + offs, h.scaled(None))  # a literal: a constexpr when compiled
    tl.store(out_ptr + BLOCK + offs, h.scaled(FACTOR))  # a constexpr parameter on both backends
    tl.store(out_ptr + 2 * BLOCK + offs, h[K])


def test_python_methods_init_and_getitem_get_python_values_on_both_backends(backend):
    x = np.arange(-8, 8, dtype=np.int32)
    out = np.zeros(3 * 16, np.int32)
    python_method_kernel[(1,)](x, out, FACTOR=7, K=3, BLOCK=16)
    np.testing.assert_array_equal(out.reshape(3, 16), np.stack([x * 100, x + 7, x * 3]))


@triton.aggregate
class Scaler:
    x: tl.tensor

    def __call__(self, factor):  # no `_semantic`: Triton passes none to a called aggregate
        return self.x * (3 if factor is None else factor)


@triton.jit
def called_aggregate_kernel(x_ptr, out_ptr, F: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    s = Scaler(tl.load(x_ptr + offs))
    tl.store(out_ptr + offs, s(None))
    tl.store(out_ptr + BLOCK + offs, s(F))


def test_a_called_aggregate_gets_python_values_on_both_backends(backend):
    x = np.arange(-8, 8, dtype=np.int32)
    out = np.zeros(32, np.int32)
    called_aggregate_kernel[(1,)](x, out, F=5, BLOCK=16)
    np.testing.assert_array_equal(out.reshape(2, 16), np.stack([x * 3, x * 5]))


@triton.aggregate
class JitScaler:
    factor: tl.tensor

    @triton.jit
    def __call__(self, x):
        return x * self.factor


@triton.jit
def called_jit_aggregate_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    s = JitScaler(tl.load(x_ptr))
    tl.store(out_ptr + offs, s(tl.load(x_ptr + offs)))


def test_a_called_aggregate_runs_its_jit_call_method_on_both_backends(backend):
    x = np.arange(2, 18, dtype=np.float32)
    out = np.zeros(16, np.float32)
    called_jit_aggregate_kernel[(1,)](x, out, BLOCK=16)
    np.testing.assert_array_equal(out, x * 2)


Span = collections.namedtuple("Span", ["lo", "hi"])


@triton.aggregate
class FromSpan:
    x: tl.tensor

    def __init__(self, span):  # a named tuple arrives as one: its fields are read by name
        self.x = span.hi - span.lo


@triton.jit
def named_tuple_kernel(out_ptr):
    s = Span(tl.full([], 2, tl.int32), tl.full([], 9, tl.int32))
    tl.store(out_ptr, FromSpan(s).x)
    if isinstance(Span(1, 2), Span):  # a Python builtin on a named tuple, as in Python
        tl.store(out_ptr + 1, 7)


def test_named_tuples_reach_python_methods_and_builtins_as_named_tuples(backend):
    out = np.zeros(2, np.int32)
    named_tuple_kernel[(1,)](out)
    assert out.tolist() == [7, 7]


# -- an aggregate's @jit method is checked where a call runs it, on both backends ---------------


@triton.aggregate
class Counter:
    n: tl.tensor

    @triton.jit
    def value(self):
        return self.n

    @triton.jit
    def with_break(self):
        for i in range(3):
            if i == 1:
                break  # refused where a call inlines it
        return self.n


@triton.jit
def unused_method_kernel(x_ptr):
    c = Counter(tl.load(x_ptr))
    tl.store(x_ptr, c.value() + 1)


@triton.jit
def used_method_kernel(x_ptr):
    c = Counter(tl.load(x_ptr))
    tl.store(x_ptr, c.with_break() + 1)


def test_a_method_no_call_runs_is_not_checked_and_one_called_is_refused(backend):
    x = np.full(4, 5, np.int32)
    unused_method_kernel[(1,)](x)
    np.testing.assert_array_equal(x, [6, 5, 5, 5])
    with pytest.raises(CompilationError, match="'break' is not supported in kernels") as info:
        used_method_kernel[(1,)](x)
    assert "the error is in 'with_break'" in str(info.value)
    np.testing.assert_array_equal(x, [6, 5, 5, 5])
