"""`test-print-axis-info`: report the axis info of every integer and pointer result as remarks.

For file tests (as Triton's `test-print-alignment`): one remark line per op with tracked results,
in program order (a region's block arguments before its ops), `%name = op.name: contiguity =
[...], divisibility = [...], constancy = [...], constant_value = ...` (names as the printer will
print them), after the function's arguments.
The module is left unchanged; run it as `-p test-print-axis-info 2>&1 >/dev/null | filecheck`.
"""

from __future__ import annotations

from typing import ClassVar

from ..ir import Block, Module
from ..ir.printer import Printer
from .axis_info import AxisInfoResult, analyze_axis_info, is_tracked
from .pass_base import ModulePass, PassContext, register_pass, remark


@register_pass
class TestPrintAxisInfo(ModulePass):
    name: ClassVar[str] = "test-print-axis-info"

    def apply(self, ctx: PassContext | None, module: Module) -> None:
        result = analyze_axis_info(module)
        for func in module.funcs:
            printer = Printer()
            printer.op(func, 0)  # assigns the names the module printer will use
            remark(ctx, f"func @{getattr(func, 'sym_name', '?')}:")
            for arg in func.body.block.args:
                if is_tracked(arg.type):
                    remark(ctx, f"{printer.name(arg)} = argument: {result.get(arg)}")
            self._block(ctx, func.body.block, printer, result, skip_args=True)

    def _block(self, ctx: PassContext | None, block: Block, printer: Printer, result: AxisInfoResult,
               skip_args: bool = False) -> None:
        if not skip_args:
            for a in block.args:
                if is_tracked(a.type):
                    remark(ctx, f"{printer.name(a)} = block argument: {result.get(a)}")
        for op in block.ops:
            for r in op.results:
                if is_tracked(r.type):
                    remark(ctx, f"{printer.name(r)} = {op.name}: {result.get(r)}")
            for reg in op.regions:
                for b in reg.blocks:
                    self._block(ctx, b, printer, result)
