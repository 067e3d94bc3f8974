"""`triton_metal.ops`: a model's kernels, written in the kernel language, as differentiable MLX ops.

Each function has the signature of MLX's own (`mx.softmax`, `mx.fast.rms_norm`, ...), so a model
swaps them in; each is a launcher over `@triton_metal.jit` kernels made differentiable with
`triton_metal.op` (its backward launches kernels too). docs/ops.md lists them with their dtypes,
limits and tolerances.
"""

from __future__ import annotations

from ._common import OpArgumentError
from .attention import scaled_dot_product_attention
from .activations import geglu, gelu, gelu_approx, silu, swiglu
from .losses import cross_entropy, entropy
from .norms import layer_norm, rms_norm
from .quantized import (
    int8_matmul, pack_int8, pack_ternary, quantize_activations, quantized_matmul, ternary_matmul,
)
from .rope import rope
from .softmax import log_softmax, softmax

__all__ = [
    "OpArgumentError", "cross_entropy", "entropy", "geglu", "gelu", "gelu_approx", "int8_matmul",
    "layer_norm", "log_softmax", "pack_int8", "pack_ternary", "quantize_activations",
    "quantized_matmul", "rms_norm", "rope", "scaled_dot_product_attention", "silu", "softmax",
    "swiglu", "ternary_matmul",
]
