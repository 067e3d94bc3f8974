"""The Triton-suite plugin's answers to torch's CUDA queries on a machine without CUDA:
`torch.cuda.synchronize()` returns, `get_device_capability()` is (0, 0); restored afterwards."""

from __future__ import annotations

import pytest

from triton_metal.tools.triton_suite import plugin


def test_cuda_queries_answer_without_cuda(monkeypatch):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this torch has CUDA: its own answers stand")
    for name in ("synchronize", "get_device_capability"):
        monkeypatch.setattr(torch.cuda, name, getattr(torch.cuda, name))  # put back after the test
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
        torch.cuda.synchronize()
    plugin._answer_capability()
    assert torch.cuda.synchronize() is None
    assert torch.cuda.get_device_capability() == (0, 0)
