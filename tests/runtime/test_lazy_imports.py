"""What `import triton_metal` loads: the launch path's modules, not the diagnostics tools (the
memory analysis pulls in the IR and its parser); the tools' names still resolve on first use."""

from __future__ import annotations

import subprocess
import sys

import pytest

import triton_metal


def test_import_leaves_tools_and_ir_unloaded():
    code = (
        "import sys, triton_metal\n"
        "print(sorted(m for m in sys.modules if m.startswith(('triton_metal.tools', 'triton_metal.ir',"
        " 'triton_metal.testing', 'importlib.metadata'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_every_exported_name_resolves():
    from triton_metal.tools import hardware, memory_analysis, profiler, throughput

    for name in triton_metal.__all__:
        assert getattr(triton_metal, name) is not None
    assert triton_metal.analyze_memory_access is memory_analysis.analyze_memory_access
    assert triton_metal.synchronize is hardware.synchronize
    assert triton_metal.start_profiling is profiler.start_profiling
    assert triton_metal.test_memory_bandwidth is throughput.test_memory_bandwidth
    assert triton_metal.testing.do_bench.__module__ == "triton_metal.testing"
    assert set(triton_metal.__all__) <= set(dir(triton_metal))


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no_such_name"):
        triton_metal.no_such_name  # noqa: B018
