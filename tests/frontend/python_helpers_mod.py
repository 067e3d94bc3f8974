"""Plain Python helpers that kernels in test_python_helpers.py call through this module."""

from __future__ import annotations


def blocks(n, b):  # noqa: ANN001, ANN201
    return (n + b - 1) // b


def affine(x, k):  # noqa: ANN001, ANN201
    return x * k + 1
