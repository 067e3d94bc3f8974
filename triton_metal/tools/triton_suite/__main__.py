"""`python -m triton_metal.tools.triton_suite`: see `runner.main`."""

from __future__ import annotations

from .runner import main

if __name__ == "__main__":
    raise SystemExit(main())
