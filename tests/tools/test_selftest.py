"""The self-test on the emulator: every example against the interpreter, the comparison itself,
the report, and the command."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

from triton_metal.selftest import check_case, run_selftest
from triton_metal.selftest.cases import Case


def test_examples_agree_with_the_interpreter():
    report = run_selftest(stream=None, only=["vector_add", "softmax", "cumsum", "histogram"])
    assert report.backend == "emulator"
    assert [c.name for c in report.cases] == ["vector_add", "softmax", "cumsum", "histogram"]
    assert report.ok, [(c.name, c.detail) for c in report.cases]
    text = str(report)
    assert "| vector_add | pass |" in text and "CPU emulator" in text
    assert "4/4 kernels agree" in text


def test_the_mx_matmul_case_agrees_with_the_interpreter():
    # the case launches `ops.quantized_matmul`'s MX kernel itself, with its full signature
    report = run_selftest(stream=None, only=["mxfp4 matmul"])
    assert [c.name for c in report.cases] == ["mxfp4 matmul"]
    assert report.ok, [(c.name, c.detail) for c in report.cases]


def test_a_disagreement_fails():
    def run(lib):
        interpreted = os.environ.get("TRITON_METAL_INTERPRET") == "1"
        return (np.array([1.0, 2.0 if interpreted else 2.5]),)

    result = check_case(Case("fake", run, atol=0.1), lambda a: a)
    assert not result.passed and result.max_error == 0.5
    within = check_case(Case("fake", run, atol=0.6), lambda a: a)
    assert within.passed


def test_a_crash_is_a_failure_not_an_exception():
    def run(lib):
        raise ValueError("boom")

    result = check_case(Case("crash", run, atol=0.0), lambda a: a)
    assert not result.passed and "ValueError: boom" in result.detail


def test_bench_reports_kernel_and_builtin():
    report = run_selftest(bench=True, stream=None, only=["softmax"])
    assert report.ok
    assert [b.name for b in report.bench] == ["softmax"]
    b = report.bench[0]
    assert b.builtin_name == "mx.softmax" and b.kernel_ms > 0 and b.builtin_ms > 0
    text = str(report)
    assert "GB/s" in text and "MLX's CPU built-ins" in text


def test_command():
    done = subprocess.run([sys.executable, "-m", "triton_metal.selftest", "--only", "vector_add", "dropout"],
                          capture_output=True, text=True, timeout=300,
                          env={k: v for k, v in os.environ.items() if k != "TRITON_METAL_INTERPRET"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "| vector_add | pass |" in done.stdout and "| dropout | pass |" in done.stdout


def test_bench_includes_the_ops():
    report = run_selftest(bench=True, stream=None, only=["ops.rms_norm"])
    assert [b.name for b in report.bench] == ["ops.rms_norm"]
    b = report.bench[0]
    assert b.builtin_name == "mx.fast.rms_norm" and b.kernel_ms > 0 and b.builtin_ms > 0
