"""Named cases for the GPU proxy (`../shared/gpuproxy`): programs whose Metal launches
`capture.py` records, each with the checks and timing references `replay.py` runs beside it.

A small registry others append to: one `@case(...)` function per program, named
`<op>_<dtype>_<shape>`; the function builds its inputs and launches (the capture records the
launches and returns zeros, so nothing here checks results: `replay.py` does, against the
float64 references given here). Triton references live in `benchmarks/gpuproxy_refs.py`
(imported on the GPU machine only).

    python benchmarks/gpuproxy_cases.py --list
    python ../shared/gpuproxy/capture.py --out .gpuproxy/NAME -- python benchmarks/gpuproxy_cases.py NAME
    python benchmarks/gpuproxy_cases.py --replay NAME [--dir .gpuproxy]   # the replay.py command line

Figures measured with these cases are in docs/ops.md ("GPU proxy").
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

REFS = "benchmarks/gpuproxy_refs.py"


@dataclass(frozen=True)
class Case:
    name: str
    run: Callable[[], None]
    checks: tuple[str, ...] = ()
    """`OUT=EXPR` float64 references of outputs (replay.py --check)."""
    time_refs: tuple[str, ...] = ()
    """`LABEL=EXPR` torch expressions timed beside the kernel (replay.py --time-ref)."""
    ref_fns: tuple[str, ...] = ()
    """Functions of benchmarks/gpuproxy_refs.py returning Triton launches (--time-ref-fn)."""

    def replay_args(self, folder: str) -> list[str]:
        args = ["python3", ".gpuproxy/gpuproxy/replay.py", f"{folder}/{self.name}"]
        for c in self.checks:
            args += ["--check", c]
        for t in self.time_refs:
            args += ["--time-ref", t]
        for f in self.ref_fns:
            args += ["--time-ref-fn", f"{REFS}:{f}"]
        return args


CASES: dict[str, Case] = {}


def case(name: str, checks: tuple[str, ...] = (), time_refs: tuple[str, ...] = (),
         ref_fns: tuple[str, ...] = ()) -> Callable[[Callable[[], None]], Callable[[], None]]:
    def register(fn: Callable[[], None]) -> Callable[[], None]:
        if name in CASES:
            raise ValueError(f"gpuproxy case {name!r} is registered twice")
        CASES[name] = Case(name, fn, checks, time_refs, ref_fns)
        return fn
    return register


def _mx() -> Any:
    import mlx.core as mx
    return mx


def _normal(shape: tuple[int, ...], dtype: str) -> Any:
    mx = _mx()
    return mx.random.normal(shape).astype(getattr(mx, dtype))


# -- row kernels -----------------------------------------------------------------------------------

_SOFTMAX_OP = "y_ptr=torch.softmax(x_ptr.double(), -1)"
_RMS_CHECK = ("y_ptr=x_ptr.double() * torch.rsqrt(x_ptr.double().pow(2).mean(-1, keepdim=True) + eps)"
              " * w_ptr.double()")


def _softmax_op(dtype: str, shape: tuple[int, int] = (4096, 4096)) -> None:
    from triton_metal import ops
    _mx().eval(ops.softmax(_normal(shape, dtype), axis=-1))


@case("softmax_bf16_4096x4096", checks=(_SOFTMAX_OP,),
      time_refs=("torch.softmax=torch.softmax(x_ptr, -1)",), ref_fns=("triton_softmax",))
def _softmax_bf16() -> None:
    _softmax_op("bfloat16")


@case("softmax_f16_4096x4096", checks=(_SOFTMAX_OP,), ref_fns=("triton_softmax",))
def _softmax_f16() -> None:
    _softmax_op("float16")


@case("softmax_f16_512x16384", checks=(_SOFTMAX_OP,), ref_fns=("triton_softmax",))
def _softmax_f16_streamed() -> None:
    _softmax_op("float16", (512, 16384))


@case("softmax_bwd_f16_512x16384",
      checks=(_SOFTMAX_OP, "dx_ptr=y_ptr.double() * (dy_ptr.double() - (dy_ptr.double() * y_ptr.double()).sum(-1, keepdim=True))"),
      ref_fns=("triton_softmax",))
def _softmax_bwd_streamed() -> None:
    # the gradient of a weighted sum, so dy is not uniform (with ones the gradient is zero)
    from triton_metal import ops
    mx = _mx()
    x, g = _normal((512, 16384), "float16"), _normal((512, 16384), "float16")
    mx.eval(mx.grad(lambda a: (ops.softmax(a, axis=-1) * g).astype(mx.float32).sum())(x))


@case("rms_norm_bf16_4096x4096", checks=(_RMS_CHECK,),
      time_refs=("F.rms_norm=F.rms_norm(x_ptr, (x_ptr.shape[-1],), w_ptr, eps)",), ref_fns=("triton_rms_norm",))
def _rms_norm_bf16() -> None:
    from triton_metal import ops
    _mx().eval(ops.rms_norm(_normal((4096, 4096), "bfloat16"), _normal((4096,), "bfloat16"), 1e-5))


def _softmax_example(rows: int, cols: int) -> None:
    from examples import softmax
    _mx().eval(softmax.softmax(_normal((rows, cols), "float16")))


_EXAMPLE_CHECK = "output_ptr=torch.softmax(input_ptr.double(), -1)"


@case("softmax_example_f16_4096x4096", checks=(_EXAMPLE_CHECK,), ref_fns=("triton_softmax",))
def _softmax_f16_square() -> None:
    _softmax_example(4096, 4096)


@case("softmax_example_f16_4096x1000", checks=(_EXAMPLE_CHECK,), ref_fns=("triton_softmax",))
def _softmax_f16_1000() -> None:
    _softmax_example(4096, 1000)


# -- activations -----------------------------------------------------------------------------------

_GELU = "(0.5 * x_ptr.double() * (1 + torch.erf(x_ptr.double() / math.sqrt(2))))"


@case("gelu_f16_4096x4096", checks=(f"y_ptr={_GELU}",),
      time_refs=("F.gelu=F.gelu(x_ptr)",), ref_fns=("triton_gelu",))
def _gelu_f16() -> None:
    from triton_metal import ops
    _mx().eval(ops.gelu(_normal((4096, 4096), "float16")))


@case("geglu_f16_4096x4096", checks=(f"y_ptr={_GELU} * up_ptr.double()",),
      time_refs=("F.gelu*up=F.gelu(x_ptr) * up_ptr",), ref_fns=("triton_geglu",))
def _geglu_f16() -> None:
    from triton_metal import ops
    _mx().eval(ops.geglu(_normal((4096, 4096), "float16"), _normal((4096, 4096), "float16")))


_ACT = {  # op -> (float64 forward, torch's fused backward of the same activation)
    "gelu": ("F.gelu({x})", "torch.ops.aten.gelu_backward({g}, {x})"),
    "gelu_approx": ("F.gelu({x}, approximate='tanh')", "torch.ops.aten.gelu_backward({g}, {x}, approximate='tanh')"),
    "silu": ("F.silu({x})", "torch.ops.aten.silu_backward({g}, {x})"),
}
_GATES = {"geglu": "gelu", "swiglu": "silu"}
_TORCH = {"float16": "f16", "bfloat16": "bf16"}


def _activation_case(op: str, dtype: str, backward: bool) -> None:
    """`ops.<op>` on 4096 x 4096, forward, or its gradient (`_act_bwd`: dx, and dup when gated)
    through `mx.grad` of the sum, so `dy` is ones; checked against float64 and timed beside
    torch's own kernels (its fused backward where torch has one)."""
    act = _GATES.get(op, op)
    fwd, bwd = _ACT[act]
    gated = op in _GATES
    x64 = "x_ptr.double()"
    if backward:
        g = "(dy_ptr.double() * up_ptr.double())" if gated else "dy_ptr.double()"
        checks = (f"dx_ptr={bwd.format(g=g, x=x64)}",)
        if gated:
            checks += (f"dup_ptr=dy_ptr.double() * {fwd.format(x=x64)}",)
        g16 = "dy_ptr * up_ptr" if gated else "dy_ptr"
        refs = (f"torch.{act}_backward={bwd.format(g=g16, x='x_ptr')}",)
    else:
        checks = (f"y_ptr={fwd.format(x=x64)}" + (" * up_ptr.double()" if gated else ""),)
        refs = (f"torch=({fwd.format(x='x_ptr')}" + (" * up_ptr)" if gated else ")"),)
    name = f"{op}{'_bwd' if backward else ''}_{_TORCH[dtype]}_4096x4096"

    @case(name, checks=checks, time_refs=refs)
    def run() -> None:
        from triton_metal import ops
        mx = _mx()
        x = _normal((4096, 4096), dtype)
        up = _normal((4096, 4096), dtype)
        fn = (lambda a, u: getattr(ops, op)(a, u)) if gated else (lambda a, u: getattr(ops, op)(a))
        if backward:
            mx.eval(mx.grad(lambda a, u: fn(a, u).astype(mx.float32).sum(), argnums=(0, 1))(x, up))
        else:
            mx.eval(fn(x, up))


for _op in ("gelu_approx", "silu", "swiglu", "gelu", "geglu"):
    for _dt in ("float16", "bfloat16"):
        if not (_op in ("gelu", "geglu") and _dt == "float16"):  # registered above
            _activation_case(_op, _dt, backward=False)
        _activation_case(_op, _dt, backward=True)


# -- norms' forward --------------------------------------------------------------------------------

_LAYER_CHECK = ("y_ptr=F.layer_norm(x_ptr.double(), (x_ptr.shape[-1],), w_ptr.double(), b_ptr.double(), eps)",)


def _norm_forward_case(kind: str, dtype: str, rows: int, cols: int) -> None:
    """`ops.rms_norm` / `ops.layer_norm` forward; rows over 16384 elements are streamed (two
    passes over x), the others held in registers (`_rows.MAX_ONE_PASS`)."""
    if kind == "rms":
        checks = (_RMS_CHECK,)
        refs = ("F.rms_norm=F.rms_norm(x_ptr, (x_ptr.shape[-1],), w_ptr, eps)",)
        fns: tuple[str, ...] = ("triton_rms_norm",)
    else:
        checks = _LAYER_CHECK
        refs = ("F.layer_norm=F.layer_norm(x_ptr, (x_ptr.shape[-1],), w_ptr, b_ptr, eps)",)
        fns = ("triton_layer_norm",)

    @case(f"{kind}_norm_{_TORCH[dtype]}_{rows}x{cols}", checks=checks, time_refs=refs, ref_fns=fns)
    def run() -> None:
        from triton_metal import ops
        x, w, b = _normal((rows, cols), dtype), _normal((cols,), dtype), _normal((cols,), dtype)
        _mx().eval(ops.rms_norm(x, w, 1e-5) if kind == "rms" else ops.layer_norm(x, w, b, 1e-5))


_norm_forward_case("rms", "float16", 4096, 4096)
for _dt in ("float16", "bfloat16"):
    _norm_forward_case("layer", _dt, 4096, 4096)
for _dt in ("float16", "bfloat16"):
    _norm_forward_case("layer", _dt, 512, 16384)
    _norm_forward_case("rms", _dt, 512, 16384)
_norm_forward_case("rms", "float16", 2048, 16384)


# -- losses ----------------------------------------------------------------------------------------

@case("cross_entropy_bf16_4096x32000",
      checks=("loss_ptr=F.cross_entropy(x_ptr.double(), t_ptr.long(), reduction='none')",),
      time_refs=("F.cross_entropy=F.cross_entropy(x_ptr, t_ptr.long(), reduction='none')",),
      ref_fns=("triton_cross_entropy",))
def _cross_entropy_bf16() -> None:
    from triton_metal import ops
    mx = _mx()
    logits = _normal((4096, 32000), "bfloat16")
    targets = mx.random.randint(0, 32000, (4096,)).astype(mx.int32)
    mx.eval(ops.cross_entropy(logits, targets))


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("names", nargs="*", help="cases to run (all with --all)")
    p.add_argument("--list", action="store_true", help="list the cases")
    p.add_argument("--replay", action="store_true", help="print the replay.py command of each case")
    p.add_argument("--dir", default=".gpuproxy", help="folder of the captures (for --replay)")
    args = p.parse_args(argv)
    if args.list:
        print("\n".join(CASES))
        return 0
    unknown = [n for n in args.names if n not in CASES]
    if unknown:
        p.error(f"unknown case(s) {', '.join(unknown)}; --list shows them")
    for name in args.names:
        if args.replay:
            print(shlex.join(CASES[name].replay_args(args.dir)))
        else:
            CASES[name].run()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
