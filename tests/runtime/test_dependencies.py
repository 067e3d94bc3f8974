"""`JITFunction.cache_key` hashes the source of the kernel and of everything it compiles in."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import triton_metal as triton

TEMPLATE = """
import triton_metal as triton
import triton_metal.language as tl

SCALE = tl.constexpr({scale})
UNUSED = tl.constexpr(5)


@triton.jit
def helper(x):
    return x * {factor}


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(x_ptr + offs, helper(x) * SCALE, mask=offs < n)
"""


def load(tmp_path: Path, name: str, scale: int = 2, factor: int = 3, extra: str = ""):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(TEMPLATE.format(scale=scale, factor=factor)) + extra)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_identical_sources_hash_alike_and_edits_change_the_key(tmp_path):
    base = load(tmp_path, "dep_base")
    same = load(tmp_path, "dep_base")  # reloaded: a new object, same source
    assert base.kernel is not same.kernel
    assert base.kernel.cache_key == same.kernel.cache_key
    assert len(base.kernel.cache_key) == 64

    helper_edited = load(tmp_path, "dep_base", factor=4)
    assert helper_edited.kernel.cache_key != base.kernel.cache_key
    assert helper_edited.helper.cache_key != base.helper.cache_key

    constexpr_edited = load(tmp_path, "dep_base", scale=7)
    assert constexpr_edited.kernel.cache_key != base.kernel.cache_key
    assert constexpr_edited.helper.cache_key == base.helper.cache_key  # it does not read SCALE


def test_unreferenced_globals_do_not_matter(tmp_path):
    base = load(tmp_path, "dep_unref")
    more = load(tmp_path, "dep_unref", extra="\nOTHER = tl.constexpr(9)\n")
    assert base.kernel.cache_key == more.kernel.cache_key


def test_closures_and_module_attributes_are_followed(tmp_path):
    helpers = load(tmp_path, "dep_helpers")
    helpers_edited_src = load(tmp_path, "dep_helpers", factor=8)  # same module name and path

    def make(module):
        @triton.jit
        def outer(x_ptr, BLOCK: triton.language.constexpr):
            offs = triton.language.arange(0, BLOCK)
            triton.language.store(x_ptr + offs, module.helper(triton.language.load(x_ptr + offs)))

        return outer

    a = make(helpers)
    b = make(helpers)
    c = make(helpers_edited_src)
    assert a.cache_key == b.cache_key
    assert a.cache_key != c.cache_key


def test_mutual_recursion_terminates():
    @triton.jit
    def ping(x):
        return pong(x)

    @triton.jit
    def pong(x):
        return ping(x)

    assert len(ping.cache_key) == 64 and ping.cache_key != pong.cache_key
