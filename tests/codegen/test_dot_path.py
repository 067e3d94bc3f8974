"""The cost rule's choice between tensor ops and simdgroup matrices (codegen/dot_path.py) over
given figures: ties go to tensor ops, a dot worse in barriers or in bytes keeps simdgroup
matrices, dots with different choices get a lowering of their own, and the figures the reasons
quote are the lowerings'. The figures of real kernels: tests/passes/dot_path.ir,
tests/ops/test_ops_attention.py and tests/compiled/test_grown_dots.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from triton_metal.codegen import CodegenOptions
from triton_metal.codegen.dot_path import choose_dot_paths
from triton_metal.codegen.dot_report import DotReport
from triton_metal.codegen.target import parse_target


def report(path: str, barriers: int, nbytes: int) -> DotReport:
    return DotReport("k.py:1", (32, 32, 32), "f16 -> f32", (2, 2), (16, 16), 0, 0, 0, 0.0, True, 1, barriers, nbytes,
                     path, "single" if path == "tensor_ops" else "")


@dataclass
class FakeLowering:
    """Lowerings whose dots report `tensor` figures on tensor ops and `simdgroup` ones when kept."""

    tensor: dict[str, tuple[int, int]]
    simdgroup: dict[str, tuple[int, int]]
    calls: list[frozenset[str]] = field(default_factory=list)

    def __call__(self, kept: frozenset[Any]) -> Any:
        self.calls.append(kept)
        reports = {op: report("simdgroup", *self.simdgroup[op]) if op in kept
                   else report("tensor_ops", *self.tensor[op]) for op in self.tensor}
        return SimpleNamespace(kept=kept, ctx=SimpleNamespace(scratch_end=0), reports=lambda: reports)


def choose(lowering: FakeLowering, target: str = "apple10:4.0", **opts: Any) -> tuple[Any, dict[Any, str]]:
    return choose_dot_paths(lowering, CodegenOptions(target=parse_target(target), **opts))  # type: ignore[arg-type]


def test_each_dot_on_the_path_its_figures_choose():
    # x: more barriers and bytes on tensor ops; y: a tie (no worse: tensor ops); z: fewer
    # barriers but more bytes (worse in one figure: simdgroup matrices)
    lowering = FakeLowering({"x": (3, 8192), "y": (2, 4096), "z": (1, 6144)},
                            {"x": (1, 4096), "y": (2, 4096), "z": (2, 4096)})
    chosen, why = choose(lowering)
    assert lowering.calls == [frozenset(), frozenset({"x", "y", "z"}), frozenset({"x", "z"})]
    assert chosen.kept == {"x", "z"}
    assert why["x"] == ("a single dot: simdgroup matrices, 1 barrier, 4096 bytes a K step, "
                        "where tensor ops take 3 barriers, 8192 bytes")
    assert why["y"] == ("a single dot: tensor ops, 2 barriers, 4096 bytes a K step, "
                        "no worse than simdgroup matrices' 2 barriers, 4096 bytes")
    assert why["z"].startswith("a single dot: simdgroup matrices, 2 barriers, 4096 bytes a K step")


@pytest.mark.parametrize("worse", [True, False])
def test_one_choice_for_all_dots_needs_no_third_lowering(worse):
    simdgroup = (1, 2048) if worse else (4, 16384)
    lowering = FakeLowering({"x": (3, 8192), "y": (3, 8192)}, {"x": simdgroup, "y": simdgroup})
    chosen, _ = choose(lowering)
    assert len(lowering.calls) == 2
    assert chosen.kept == (frozenset({"x", "y"}) if worse else frozenset())


@pytest.mark.parametrize("target, opts", [("apple9:3.2", {}), ("apple10:4.0", {"dot_path": "tensor_ops"})])
def test_no_comparison_without_tensor_ops_or_with_the_rule_off(target, opts):
    lowering = FakeLowering({"x": (3, 8192)}, {"x": (1, 4096)})
    chosen, why = choose(lowering, target, **opts)
    assert lowering.calls == [frozenset()] and chosen.kept == frozenset()
    assert why == ({} if target == "apple9:3.2" else {"x": "a single dot, tensor ops taken without the cost rule"})


def test_dot_path_option_is_checked():
    with pytest.raises(ValueError, match="dot_path"):
        CodegenOptions(dot_path="fastest")
