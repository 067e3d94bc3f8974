"""IR dumps after every pass (`TRITON_METAL_DEBUG=2`, `TRITON_METAL_DUMP_DIR`).

`ir_dump_callback(stream, dump_dir)` makes a `PassPipeline` callback that prints the module after
each pass to `stream` (headed `// IR after pass 'NAME' (kernel K)`) and/or writes it to
`dump_dir/<kernel>-<hash>/<NN>-<pass>.ir`, where the hash is of the IR after the first pass
(specializations of one kernel get their own folders). `callback_from_env()` reads the
environment: level 2 or more prints to standard error and writes to the dump folder
(`TRITON_METAL_DUMP_DIR`, default `~/.triton/metal/shaders`); below level 2 an explicitly set
`TRITON_METAL_DUMP_DIR` still gets the files. With neither, no callback.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from pathlib import Path
from typing import TextIO

from ..ir import Module, print_module
from .pass_base import AfterPass, ModulePass

DEFAULT_DUMP_DIR = Path("~/.triton/metal/shaders")


def _kernel_name(module: Module) -> str:
    funcs = module.funcs
    name = getattr(funcs[0], "sym_name", "module") if funcs else "module"
    return re.sub(r"[^A-Za-z0-9_]", "_", name) or "module"


def ir_dump_callback(stream: TextIO | None = None, dump_dir: Path | None = None) -> AfterPass:
    """A callback printing and/or writing the IR after each pass."""
    state: dict[str, object] = {"index": 0, "folder": None}

    def after(p: ModulePass, module: Module) -> None:
        text = print_module(module)
        kernel = _kernel_name(module)
        index = int(state["index"])  # type: ignore[call-overload]
        state["index"] = index + 1
        if stream is not None:
            stream.write(f"// IR after pass '{p.name}' (kernel {kernel})\n{text}")
            stream.flush()
        if dump_dir is not None:
            folder = state["folder"]
            if folder is None:
                digest = hashlib.sha256(text.encode()).hexdigest()[:10]
                folder = Path(dump_dir).expanduser() / f"{kernel}-{digest}"
                folder.mkdir(parents=True, exist_ok=True)
                state["folder"] = folder
            assert isinstance(folder, Path)
            (folder / f"{index:02d}-{p.name}.ir").write_text(text, encoding="utf-8")

    return after


def _debug_level() -> int:
    raw = os.environ.get("TRITON_METAL_DEBUG", "").strip()
    if not raw:
        return 0
    try:
        return int(raw)
    except ValueError:
        return 0 if raw.lower() in ("0", "false", "no", "off") else 1


def callback_from_env() -> AfterPass | None:
    """The dump callback the environment asks for, or None."""
    level = _debug_level()
    explicit = os.environ.get("TRITON_METAL_DUMP_DIR")
    if level >= 2:
        return ir_dump_callback(sys.stderr, Path(explicit) if explicit else DEFAULT_DUMP_DIR)
    if explicit:
        return ir_dump_callback(None, Path(explicit))
    return None
