"""`python -m triton_metal.selftest [--bench]`."""

from __future__ import annotations

import sys

from . import main

sys.exit(main(sys.argv[1:]))
