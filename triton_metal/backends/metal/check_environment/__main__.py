"""`python -m triton_metal.backends.metal.check_environment`."""

from __future__ import annotations

import sys

from . import main

sys.exit(main(sys.argv[1:]))
