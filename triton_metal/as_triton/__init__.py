"""`install_as_triton()`: make `import triton` resolve to this package.

After `triton_metal.install_as_triton()` (or with `TRITON_METAL_AS_TRITON=1` in the environment
when `triton_metal` is imported), a library written for Triton imports us unchanged:

    import triton                          # triton_metal's host API, __version__ = TRITON_VERSION
    import triton.language as tl           # triton_metal.language
    from triton.language.extra import libdevice          # MSL's math functions
    from triton.language.extra.cuda import libdevice     # the same module (also .hip)
    import triton.language.math, triton.language.standard, triton.language.core
    from triton.runtime import autotuner, jit, driver    # driver: a stub that says what it lacks
    import triton.testing

Any other `triton.<path>` imports `triton_metal.<path>` when that module exists, and fails with
ModuleNotFoundError naming the path otherwise. An import finder does the aliasing (the module
objects are ours, registered under both names), so nothing is copied.

`triton.__version__` is the Triton release whose language and host semantics the package follows
(libraries choose code paths by it; our own version would send them down pre-3.0 paths). The
package refuses to install over a real Triton already imported in the process.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from collections.abc import Sequence
from typing import Any

TRITON_VERSION = "3.8.0"
"""The Triton release whose semantics triton_metal follows (3.8's surface plus 3.9's additions)."""

_ALIASES = {
    "triton.language.extra.cuda": "triton_metal.language.extra",
    "triton.language.extra.cuda.libdevice": "triton_metal.language.extra.libdevice",
    "triton.language.extra.hip": "triton_metal.language.extra",
    "triton.language.extra.hip.libdevice": "triton_metal.language.extra.libdevice",
    "triton.runtime.driver": "triton_metal.runtime.driver_stub",
    "triton.runtime.errors": "triton_metal.errors",
    "triton.compiler": "triton_metal.runtime.compiler",
    "triton.compiler.compiler": "triton_metal.runtime.compiler",
    "triton.compiler.errors": "triton_metal.errors",
    "triton.compiler.code_generator": "triton_metal.frontend.code_generator",
    "triton.backends.compiler": "triton_metal.runtime.driver_stub",
    # Triton's test helpers, for running Triton's own test files (tools/triton_suite)
    "triton._internal_testing": "triton_metal.tools.triton_suite.helpers",
    "triton._filecheck": "triton_metal.tools.triton_suite.filecheck",
}


def _target(fullname: str) -> str:
    return _ALIASES.get(fullname) or "triton_metal" + fullname[len("triton"):]


class _AliasLoader(importlib.abc.Loader):
    """Hands the import system our module; the alias is registered under the spec's name."""

    def __init__(self, target: str) -> None:
        self.target = target
        self._spec: Any = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = importlib.import_module(self.target)
        self._spec = module.__spec__
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        # Already executed; the import system replaced its __spec__ with the alias's: put back
        # its own, so reloads and relative imports inside it keep working.
        module.__spec__ = self._spec


class _TritonFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith("triton."):
            return None
        target_name = _target(fullname)
        try:
            found = importlib.util.find_spec(target_name)
        except ModuleNotFoundError:
            found = None
        if found is None:
            return None
        # every alias may have aliased children (`triton.compiler.errors` under a module)
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(target_name), is_package=True)


def _top_module() -> types.ModuleType:
    """`triton`: our package's namespace, with Triton's `__version__`."""
    import triton_metal

    module = types.ModuleType("triton", "triton_metal installed as triton (install_as_triton)")
    module.__path__ = []  # a package: submodules come from the finder
    # a spec as every imported module has (torch checks `triton.__spec__` before using it)
    module.__spec__ = importlib.machinery.ModuleSpec("triton", None, is_package=True)
    # the file of the package that answers `import triton` (libraries locate themselves by it)
    module.__file__ = triton_metal.__file__
    module.__version__ = TRITON_VERSION  # type: ignore[attr-defined]
    module.__triton_metal__ = True  # type: ignore[attr-defined]

    def __getattr__(name: str) -> Any:
        if name in ("language", "runtime", "testing", "compiler", "backends"):
            return importlib.import_module("triton." + name)
        return getattr(triton_metal, name)

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    module.__dir__ = lambda: sorted(set(dir(triton_metal)) | {"__version__"})  # type: ignore[method-assign]
    return module


def _alias_imported_modules() -> None:
    """Register `triton.<path>` for every `triton_metal.<path>` already imported. Importing a
    submodule the first time binds it on its parent package, and the alias's parent is our
    package: `import triton.runtime.jit` would rebind `triton_metal.runtime.jit` (the `jit`
    function) to the module. A module found in `sys.modules` is not bound again."""
    for name, module in list(sys.modules.items()):
        if name.startswith("triton_metal.") and module is not None:
            alias = "triton" + name[len("triton_metal"):]
            if alias not in _ALIASES:
                sys.modules.setdefault(alias, module)


def install_as_triton() -> types.ModuleType:
    """Make `import triton` (and its submodules) resolve to triton_metal; returns `triton`."""
    current = sys.modules.get("triton")
    if current is not None:
        if vars(current).get("__triton_metal__"):
            return current  # installed before
        raise ImportError(
            "install_as_triton: a real Triton is already imported in this process; call "
            "triton_metal.install_as_triton() before anything imports triton"
        )
    if not any(isinstance(f, _TritonFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _TritonFinder())
    module = _top_module()
    sys.modules["triton"] = module
    _alias_imported_modules()
    # `from triton.runtime import driver` looks the name up on triton_metal.runtime itself
    from ..runtime import driver_stub
    import triton_metal.runtime as runtime

    runtime.driver = driver_stub  # type: ignore[attr-defined]
    return module
