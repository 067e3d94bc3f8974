"""CHECK lines (LLVM FileCheck syntax, run by the `filecheck` package) on compiled kernels' IR."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import triton_metal.language as tl
from triton_metal.errors import CompilationError
from triton_metal.frontend import KernelSignature, ParamType, compile_to_ir
from triton_metal.language.jit_marker import JITCallable
from triton_metal.language.types import float32, int32, pointer_type

from .helpers import C, ir_text


def filecheck(text: str, checks: str, tmp_path: Path) -> None:
    check_file = tmp_path / "checks.txt"
    check_file.write_text(checks)
    proc = subprocess.run([sys.executable, "-m", "filecheck", str(check_file)], input=text, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr + "\n--- input\n" + text


def masked_copy(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(src + offs, mask=offs < n, other=0.0), mask=offs < n)


def test_masked_copy(tmp_path: Path) -> None:
    checks = """
// CHECK-LABEL: tt.func @masked_copy(%src: !tt.ptr<f32> {tt.divisibility = 16}, %dst: !tt.ptr<f32> {tt.divisibility = 16}, %n: i32)
// CHECK:         %[[PID:.+]] = tt.get_program_id {axis = 0} : i32
// CHECK:         %[[SCALED:.+]] = arith.muli %[[PID]], %{{.+}} : i32
// CHECK:         %[[RANGE:.+]] = tt.make_range {end = 64, start = 0} : tensor<64xi32>
// CHECK:         %[[BASE:.+]] = tt.splat %[[SCALED]] : tensor<64xi32>
// CHECK-NEXT:    %offs = arith.addi %[[BASE]], %[[RANGE]] : tensor<64xi32>
// CHECK:         %[[MASK:.+]] = arith.cmpi %offs, %{{.+}} {predicate = slt} : tensor<64xi1>
// CHECK:         %[[VAL:.+]] = tt.load %{{.+}}, mask %[[MASK]], other %{{.+}} {volatile = false} : tensor<64xf32>
// CHECK:         tt.store %{{.+}}, %[[VAL]], mask %{{.+}}
// CHECK-NEXT:    tt.return
"""
    filecheck(ir_text(masked_copy, "*fp32/16", "*fp32/16", "i32", C(64)), checks, tmp_path)


def row_sums(x_ptr, out_ptr, n_rows, N: tl.constexpr):
    cols = tl.arange(0, N)
    acc = tl.zeros([N], dtype=tl.float32)
    for r in range(n_rows):
        acc += tl.load(x_ptr + r * N + cols)
    tl.store(out_ptr, tl.sum(acc, axis=0))


def test_loop_and_reduction(tmp_path: Path) -> None:
    checks = """
// CHECK-LABEL: tt.func @row_sums
// CHECK:         %acc_1 = scf.for %{{.+}}, %n_rows, %{{.+}}, iter_args(%acc) body {
// CHECK-NEXT:    ^bb0(%r: i32, %acc_2: tensor<16xf32>):
// CHECK:           %acc_3 = arith.addf %acc_2, %{{.+}} : tensor<16xf32>
// CHECK-NEXT:      scf.yield %acc_3
// CHECK-NEXT:    } : tensor<16xf32>
// CHECK-NEXT:    %[[SUM:.+]] = tt.reduce %acc_1 {axis = 0} combine {
// CHECK-NEXT:    ^bb0(%[[A:.+]]: f32, %[[B:.+]]: f32):
// CHECK-NEXT:      %[[S:.+]] = arith.addf %[[A]], %[[B]] : f32
// CHECK-NEXT:      tt.reduce.return %[[S]]
// CHECK-NEXT:    } : f32
// CHECK-NEXT:    tt.store %out_ptr, %[[SUM]]
"""
    filecheck(ir_text(row_sums, "*fp32", "*fp32", "i32", C(16)), checks, tmp_path)


def test_constexpr_parameter_given_a_runtime_type_is_refused() -> None:
    sig = KernelSignature((ParamType(pointer_type(float32)), ParamType(pointer_type(float32)), ParamType(int32),
                           ParamType(int32)))
    with pytest.raises(CompilationError, match="parameter 'BLOCK' is a tl.constexpr"):
        compile_to_ir(JITCallable(masked_copy), sig)


def test_signature_length_must_match() -> None:
    with pytest.raises(ValueError, match="has 4 parameters but the signature describes 1"):
        compile_to_ir(JITCallable(masked_copy), KernelSignature((ParamType(int32),)))


@pytest.mark.parametrize("bad", [lambda: ParamType(float32, True), lambda: KernelSignature((), num_warps=3)])
def test_signature_checks_itself(bad) -> None:  # noqa: ANN001
    with pytest.raises(ValueError):
        bad()
