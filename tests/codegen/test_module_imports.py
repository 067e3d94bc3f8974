"""Every module of the code generator imports on its own, first, in a fresh interpreter: the
dot lowerings import each other, and a module that takes names from one still being imported
fails only when it is the first of the cycle to load."""

from __future__ import annotations

import subprocess
import sys

_EACH_FIRST = """
import importlib, pkgutil, sys
import triton_metal.codegen as codegen
names = sorted(m.name for m in pkgutil.iter_modules(codegen.__path__))
failed = []
for name in names:
    for key in [k for k in sys.modules if k == "triton_metal" or k.startswith("triton_metal.")]:
        del sys.modules[key]
    try:
        importlib.import_module("triton_metal.codegen." + name)
    except Exception as exc:
        failed.append(f"{name}: {exc!r}")
print(len(names))
print("\\n".join(failed))
"""


def test_each_codegen_module_imports_first() -> None:
    done = subprocess.run([sys.executable, "-c", _EACH_FIRST], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    count, *failed = done.stdout.strip().split("\n")
    assert int(count) > 30  # the folder's modules were found
    assert not [f for f in failed if f], failed
