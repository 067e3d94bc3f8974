"""What the code generator records about which output elements a launch writes.

The proof has two halves: `passes.coverage_program` turns the kernel's stores into a program of
their addresses and masks (symbolic, once per variant), and `runtime.coverage.check_coverage`
runs it for every program of a launch on the host (numeric, memoised per grid and scalars).
Here each output gets its static status: atomically updated and lock-guarded outputs are never
covered by a proof (the driver starts them from an identity or a uniform value instead); the
others are checked at launch when at least one of their stores was modelled.
"""

from __future__ import annotations

from triton_metal.ir import BlockArgument, Op
from triton_metal.passes.coverage_program import coverage_program

from .kernel import CoverageProgram, OutputCoverage
from .params import ParamUse
from .values import Buffer


def store_coverage(func: Op, buffers: dict[BlockArgument, Buffer], uses: dict[BlockArgument, ParamUse],
                   index_bits: int = 32) -> tuple[tuple[OutputCoverage, ...], CoverageProgram]:
    plain = {arg: buf.output_name for arg, buf in buffers.items()
             if buf.output_name is not None and not uses[arg].atomic and not uses[arg].live}
    statements, left_out = coverage_program(func, plain)  # type: ignore[arg-type]
    program = CoverageProgram(statements, left_out, index_bits)
    modelled = _stored_outputs(program.statements)
    out = []
    for arg, buf in buffers.items():
        if buf.output_name is None:
            continue
        if uses[arg].atomic or uses[arg].live:
            reason = "updated by atomics" if uses[arg].atomic else "loaded and stored under a lock"
            out.append(OutputCoverage(buf.output_name, False, reason))
        elif buf.output_name in modelled:
            out.append(OutputCoverage(buf.output_name, True))
        else:
            why = next((f"{at}: {r}" for o, at, r in program.left_out if o == buf.output_name),
                       "no store to it")
            out.append(OutputCoverage(buf.output_name, False, why))
    return tuple(out), program


def _stored_outputs(statements: tuple) -> set[str]:
    found: set[str] = set()
    for st in statements:
        if st[0] == "store":
            found.add(st[1])
        elif st[0] == "for":
            found |= _stored_outputs(st[6])
        elif st[0] == "if":
            found |= _stored_outputs(st[2]) | _stored_outputs(st[3])
    return found
