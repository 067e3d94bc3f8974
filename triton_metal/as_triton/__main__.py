"""`python -m triton_metal.as_triton script.py [args...]`: run a script written for Triton with
`import triton` resolving to triton_metal (`install_as_triton`). A module of its own, which the
package never imports, so running it does not execute an imported module a second time."""

from __future__ import annotations

import sys
from collections.abc import Sequence

USAGE = """usage: python -m triton_metal.as_triton script.py [args...]

Run script.py (with args as its sys.argv[1:]) with `import triton` resolving to triton_metal:
triton.jit, triton.language, triton.runtime, triton.testing and the rest of Triton's host API
that the package provides (docs/torch.md). Equivalent to setting TRITON_METAL_AS_TRITON=1 and
importing triton_metal first, or calling triton_metal.install_as_triton()."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the script; 2 (and the usage) without one, 0 after `-h`/`--help`."""
    import runpy

    from . import install_as_triton

    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    if not args or args[0].startswith("-"):
        print(USAGE, file=sys.stderr)
        return 2
    install_as_triton()
    sys.argv = args
    runpy.run_path(args[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
