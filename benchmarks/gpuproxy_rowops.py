"""Captures of the row ops for the GPU proxy: `python benchmarks/gpuproxy_rowops.py [--only NAME...]`.

The cases are the shapes an LLM spends its time on: the norms' backward passes (f16 and bf16,
4096 x 4096), RoPE forward and backward ((1, 32, 4096, 128) f16 and bf16), cross-entropy and
entropy forward and backward (bf16, 4096 x 32000), and the layer-norm backward example (locks,
float32 4096 x 8192: `dx` is 134 MB). Each is captured with the proxy's `capture.py` (every
Metal launch the driver makes, autotune configs included; nothing runs) into
`.gpuproxy/rowops/<case>`, and `.gpuproxy/rowops/replay.sh` lists one replay per case with its
checks (`benchmarks/gpuproxy_rowops_refs.py`: float64 references written from the operations'
definitions) and time references. Copy the proxy beside the captures as its README says and run
`replay.sh` from the project's root on the GPU machine; replay prints each kernel's time against
a copy of the same bytes in the same run.

Statistics that a forward saves for its backward (the norms' `(mean, rstd)`, cross-entropy's
log-sum-exp) are recorded as the capture stand-in's zeros; the backward's replay takes them, with
the input they belong to, from the refs file's `--inputs` functions.

`--gpuproxy DIR`: the proxy's folder (default: the first `shared/gpuproxy` above the project).
`--cores N`: size persistent grids (the norms' backward) as for a GPU of N cores (default: the
unknown-chip fallback, 256 programs at most). The op sizes them from the GPU it runs on, so give
the replaying GPU's count (132 for an H100 SXM or H200) to time the grid that GPU would get
(docs/ops.md, "Tenth round: the norms' persistent grid").
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

REFS = "benchmarks/gpuproxy_rowops_refs.py"
TRITON_REFS = "benchmarks/gpuproxy_refs.py"


@dataclass(frozen=True)
class Case:
    name: str
    run: Callable[[Any], None]
    """Makes the launches, given `mlx.core`."""
    checks: tuple[str, ...] = ()
    """`--check-fn` functions of the refs file."""
    time_refs: tuple[str, ...] = field(default=())
    """`--time-ref LABEL=EXPR` arguments (torch on the same inputs)."""
    inputs: tuple[str, ...] = ()
    """`--inputs` functions of the refs file (inputs that an op's forward saved for its backward:
    the capture records the stand-in's zeros there)."""
    time_fns: tuple[str, ...] = ()
    """`--time-ref-fn` functions of `TRITON_REFS` (Triton implementations of the same op, timed on
    the same inputs; Liger-Kernel's where `LIGER_KERNEL_DIR` or the Python path has it)."""


def _norm_backward(kind: str, dtype: str, shape: tuple[int, int] = (4096, 4096)) -> Callable[[Any], None]:
    def run(mx: Any) -> None:
        from triton_metal import ops

        dt = getattr(mx, dtype)
        x = mx.random.normal(shape).astype(dt)
        w = mx.random.normal(shape[-1:]).astype(dt)
        b = mx.random.normal(shape[-1:]).astype(dt)
        if kind == "rms":
            grads = mx.grad(lambda a, ww: ops.rms_norm(a, ww, 1e-5).sum(), argnums=(0, 1))(x, w)
        else:
            grads = mx.grad(lambda a, ww, bb: ops.layer_norm(a, ww, bb, 1e-5).sum(), argnums=(0, 1, 2))(x, w, b)
        mx.eval(*grads)
    return run


def _rope(dtype: str, backward: bool) -> Callable[[Any], None]:
    def run(mx: Any) -> None:
        from triton_metal import ops

        x = mx.random.normal((1, 32, 4096, 128)).astype(getattr(mx, dtype))
        kw = dict(traditional=False, base=10000.0, scale=1.0, offset=0)
        if backward:
            mx.eval(mx.grad(lambda a: ops.rope(a, 128, **kw).astype(mx.float32).sum())(x))
        else:
            mx.eval(ops.rope(x, 128, **kw))
    return run


def _cross_entropy(which: str) -> Callable[[Any], None]:
    def run(mx: Any) -> None:
        from triton_metal import ops

        x = mx.random.normal((4096, 32000)).astype(mx.bfloat16)
        if which == "entropy":
            mx.eval(mx.grad(lambda a: ops.entropy(a).astype(mx.float32).sum())(x))
            return
        t = mx.random.randint(0, 32000, (4096,))
        smoothing = 0.1 if which == "smoothed" else 0.0
        mx.eval(mx.grad(lambda a: ops.cross_entropy(a, t, label_smoothing=smoothing).astype(mx.float32).sum())(x))
    return run


def _layer_norm_example(mx: Any) -> None:
    from examples import layer_norm

    x = mx.random.normal((4096, 8192))
    w = mx.random.uniform(shape=(8192,))
    b = mx.random.uniform(shape=(8192,))
    dy = 0.1 * mx.random.normal((4096, 8192))
    _, mean, rstd = layer_norm.layer_norm_forward(x, w, b, 1e-5)
    mx.eval(*layer_norm.layer_norm_backward(dy, x, w, mean, rstd))


def _norm_case(name: str, kind: str, dtype: str, shape: tuple[int, int] = (4096, 4096)) -> Case:
    """A norm's backward case; its refs functions are the norm's (`RMS` is a constexpr of
    `_norm_bwd`, so a launch does not say which norm it is)."""
    return Case(name, _norm_backward(kind, dtype, shape), (f"check_{kind}_norm_backward", "check_sum_partials"),
                inputs=(f"inputs_{kind}_norm_backward",),
                time_fns=(f"triton_{kind}_norm_backward", f"liger_{kind}_norm_backward"))


_XENT_INPUTS = ("inputs_cross_entropy",)
_ROPE_TIME = ("torch.mul-add=x_ptr * 0.5 + x_ptr.flip(-1) * 0.5",)
"""A torch elementwise pass over the same tensor (reads it twice, writes once), for scale."""

CASES = (
    _norm_case("rms_norm_bwd_f16", "rms", "float16"),
    _norm_case("rms_norm_bwd_bf16", "rms", "bfloat16"),
    _norm_case("layer_norm_bwd_f16", "layer", "float16"),
    _norm_case("layer_norm_bwd_bf16", "layer", "bfloat16"),
    _norm_case("rms_norm_bwd_f16_8192x2048", "rms", "float16", (8192, 2048)),
    _norm_case("rms_norm_bwd_f16_2048x8192", "rms", "float16", (2048, 8192)),
    _norm_case("rms_norm_bwd_bf16_1024x16384", "rms", "bfloat16", (1024, 16384)),
    _norm_case("layer_norm_bwd_f16_2048x8192", "layer", "float16", (2048, 8192)),
    _norm_case("layer_norm_bwd_f16_1024x16384", "layer", "float16", (1024, 16384)),
    _norm_case("rms_norm_bwd_f16_1024x16384", "rms", "float16", (1024, 16384)),
    _norm_case("layer_norm_bwd_bf16_1024x16384", "layer", "bfloat16", (1024, 16384)),
    _norm_case("rms_norm_bwd_bf16_1024x32768", "rms", "bfloat16", (1024, 32768)),
    _norm_case("layer_norm_bwd_f16_1024x32768", "layer", "float16", (1024, 32768)),
    Case("rope_f16", _rope("float16", False), ("check_rope",), _ROPE_TIME),
    Case("rope_bf16", _rope("bfloat16", False), ("check_rope",), _ROPE_TIME),
    Case("rope_bwd_f16", _rope("float16", True), ("check_rope",), _ROPE_TIME),
    Case("rope_bwd_bf16", _rope("bfloat16", True), ("check_rope",), _ROPE_TIME),
    Case("cross_entropy_bf16", _cross_entropy("class"), ("check_cross_entropy",),
         ("F.cross_entropy=F.cross_entropy(x_ptr, t_ptr.long(), reduction='none')",), _XENT_INPUTS),
    Case("cross_entropy_smoothed_bf16", _cross_entropy("smoothed"), ("check_cross_entropy",),
         ("F.cross_entropy=F.cross_entropy(x_ptr, t_ptr.long(), reduction='none', label_smoothing=0.1)",),
         _XENT_INPUTS),
    Case("entropy_bf16", _cross_entropy("entropy"), ("check_cross_entropy",), inputs=_XENT_INPUTS),
    Case("layer_norm_example", _layer_norm_example, ("check_layer_norm_example",),
         time_fns=("triton_layer_norm_example",)),
)


def _gpuproxy(given: str | None) -> Path:
    if given:
        return Path(given)
    for parent in ROOT.parents:
        candidate = parent / "shared" / "gpuproxy"
        if (candidate / "capture.py").is_file():
            return candidate
    raise SystemExit("gpuproxy_rowops: the proxy's folder was not found; pass --gpuproxy DIR")


def replay_line(case: Case, out: str) -> str:
    args = ["python3", ".gpuproxy/gpuproxy/replay.py", f"{out}/{case.name}"]
    for fn in case.checks:
        args += ["--check-fn", f"{REFS}:{fn}"]
    for ref in case.time_refs:
        args += ["--time-ref", ref]
    for fn in case.time_fns:
        args += ["--time-ref-fn", f"{TRITON_REFS}:{fn}"]
    for fn in case.inputs:
        args += ["--inputs", f"{REFS}:{fn}"]
    args += ["--json", f"$RESULTS/{case.name}.json"]
    return " ".join(a if a.startswith("$RESULTS") else shlex.quote(a) for a in args)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="case names")
    parser.add_argument("--out", default=".gpuproxy/rowops", help="folder of the captures, under the project")
    parser.add_argument("--gpuproxy", default=None)
    parser.add_argument("--configs", choices=["all", "first"], default="all")
    parser.add_argument("--cores", type=int, default=None,
                        help="GPU cores that persistent grids are sized from (default: the fallback)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(_gpuproxy(args.gpuproxy)))
    import capture  # the proxy's module

    import mlx.core as mx

    for case in CASES:
        if args.only and case.name not in args.only:
            continue
        mx.random.seed(0)
        with capture.Capture(configs=args.configs, cores=args.cores, root=str(ROOT)) as cap:
            case.run(mx)
        meta = cap.save(str(ROOT / args.out / case.name), command=[sys.argv[0], case.name])
        print(f"{case.name}: {len(meta['launches'])} launch(es), errors {len(meta['errors'])}")
    # one replay per case captured so far (a run with --only keeps the others' lines)
    lines = ["#!/bin/sh", "# from the project's root on the GPU machine; RESULTS: a folder for the JSON",
             'RESULTS=${RESULTS:-.gpuproxy/results}; mkdir -p "$RESULTS"']
    lines += [replay_line(c, args.out) for c in CASES if (ROOT / args.out / c.name / "capture.json").is_file()]
    (ROOT / args.out / "replay.sh").write_text("\n".join(lines) + "\n")
    print(f"replay commands: {args.out}/replay.sh")
    return 0


if __name__ == "__main__":
    sys.exit(main())
