"""`python -m examples`: run every example and check it against NumPy.

`matmul_autotuned` tunes on its first run on a GPU (its configs compiled and timed, one refused
with its reason logged); later runs read the saved choice. On the CPU emulator its configs are
not timed unless `TRITON_METAL_AUTOTUNE=measure`: the choice shipped for the chip is taken, else
the first config that compiles.
"""

from __future__ import annotations

import importlib
import sys

EXAMPLES = (
    "vector_add", "softmax", "layer_norm", "matmul", "dropout", "cumsum", "histogram",
    "flash_attention", "matmul_autotuned", "llama_block",
)


def main() -> int:
    failures = 0
    for name in EXAMPLES:
        module = importlib.import_module(f"examples.{name}")
        failures += module.main() != 0
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
