"""Example kernels written the way Triton's tutorials write them, each with a NumPy reference.

Run one with `python -m examples.<name>` (for instance `python -m examples.vector_add`); each
prints its largest error against NumPy and the backend it ran on.
"""
