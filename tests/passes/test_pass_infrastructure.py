"""Pass infrastructure: registry, pass specifications with options, pipelines and callbacks,
IR dumps, the default pipeline."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from triton_metal import ir
from triton_metal.passes import (
    PASS_REGISTRY,
    Canonicalize,
    CommonSubexpressionElimination,
    DeadCodeElimination,
    PassPipeline,
    default_pipeline,
    parse_pass_spec,
)
from triton_metal.passes.debug_dump import callback_from_env, ir_dump_callback
from triton_metal.passes.pass_base import ModulePass, split_pass_specs
from triton_metal.tools.opt import main as opt_main

TEXT = """module {
  tt.func @k(%x: i32) -> (i32) {
    %zero = arith.constant {value = 0} : i32
    %a = arith.addi %x, %zero : i32
    %b = arith.muli %x, %x : i32
    %c = arith.muli %x, %x : i32
    %d = arith.addi %b, %c : i32
    tt.return %a
  }
}
"""


def test_registry_holds_the_cleanup_passes() -> None:
    for name, cls in (("canonicalize", Canonicalize), ("cse", CommonSubexpressionElimination), ("dce", DeadCodeElimination)):
        assert PASS_REGISTRY[name] is cls
        assert issubclass(cls, ModulePass) and cls.name == name
    assert "test-print-axis-info" in PASS_REGISTRY


def test_pass_specs_with_options() -> None:
    assert split_pass_specs("a, b{x=1,y=2},c") == ["a", "b{x=1,y=2}", "c"]
    p = parse_pass_spec("canonicalize{fold_floats=false}")
    assert isinstance(p, Canonicalize) and p.fold_floats is False
    assert parse_pass_spec("canonicalize") == Canonicalize(fold_floats=True)
    with pytest.raises(ValueError, match="no option 'nope'"):
        parse_pass_spec("canonicalize{nope=1}")
    with pytest.raises(ValueError, match="takes true or false"):
        parse_pass_spec("canonicalize{fold_floats=maybe}")
    with pytest.raises(ValueError, match="unknown pass 'missing'"):
        parse_pass_spec("missing")
    with pytest.raises(ValueError, match="key=value"):
        parse_pass_spec("canonicalize{fold_floats}")


def test_passes_are_frozen_values() -> None:
    p = Canonicalize()
    with pytest.raises(AttributeError):
        p.fold_floats = False  # type: ignore[misc]
    assert Canonicalize() == Canonicalize() and hash(Canonicalize()) == hash(Canonicalize())


def test_pipeline_runs_in_order_and_calls_back_after_each_pass() -> None:
    module = ir.parse_module(TEXT)
    seen: list[tuple[str, int]] = []
    pipeline = PassPipeline.parse("canonicalize,cse,dce", lambda p, m: seen.append((p.name, sum(1 for _ in m.walk()))))
    pipeline.apply(None, module)
    assert [name for name, _ in seen] == ["canonicalize", "cse", "dce"]
    counts = [n for _, n in seen]
    assert counts[0] > counts[1] > counts[2]  # cse merges the two products, dce drops the rest
    text = ir.print_module(module)
    assert "arith.muli" not in text and "tt.return %x" in text


def test_default_pipeline_starts_with_the_cleanup_passes() -> None:
    names = default_pipeline({"layout_passes": False}).names
    assert names == ("canonicalize", "cse", "dce")
    full = default_pipeline().names
    assert full[:3] == ("canonicalize", "cse", "dce")


def test_ir_dump_callback_prints_and_writes(tmp_path: Path) -> None:
    stream = io.StringIO()
    module = ir.parse_module(TEXT)
    PassPipeline.parse("canonicalize,dce", ir_dump_callback(stream, tmp_path)).apply(None, module)
    out = stream.getvalue()
    assert out.index("// IR after pass 'canonicalize' (kernel k)") < out.index("// IR after pass 'dce' (kernel k)")
    (folder,) = list(tmp_path.iterdir())
    assert folder.name.startswith("k-")
    files = sorted(p.name for p in folder.iterdir())
    assert files == ["00-canonicalize.ir", "01-dce.ir"]
    assert (folder / "01-dce.ir").read_text() == ir.print_module(module)
    # each dump parses back
    ir.parse_module((folder / "00-canonicalize.ir").read_text()).verify()


def test_dump_callback_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("TRITON_METAL_DEBUG", raising=False)
    monkeypatch.delenv("TRITON_METAL_DUMP_DIR", raising=False)
    assert callback_from_env() is None
    assert default_pipeline({"layout_passes": False}).callback is None
    monkeypatch.setenv("TRITON_METAL_DUMP_DIR", str(tmp_path))
    module = ir.parse_module(TEXT)
    default_pipeline({"layout_passes": False}).apply(None, module)
    (folder,) = list(tmp_path.iterdir())
    assert sorted(p.name for p in folder.iterdir()) == ["00-canonicalize.ir", "01-cse.ir", "02-dce.ir"]


def test_debug_level_two_prints_ir_after_every_pass(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("TRITON_METAL_DEBUG", "2")
    monkeypatch.setenv("TRITON_METAL_DUMP_DIR", str(tmp_path))
    default_pipeline({"layout_passes": False}).apply(None, ir.parse_module(TEXT))
    err = capsys.readouterr().err
    assert err.count("// IR after pass") == 3


def test_opt_tool_takes_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "in.ir"
    f.write_text(TEXT)
    assert opt_main([str(f), "-p", "canonicalize{fold_floats=false},cse,dce"]) == 0
    out = capsys.readouterr().out
    assert "tt.return %x" in out and "arith.muli" not in out
    with pytest.raises(SystemExit, match="no option 'x'"):
        opt_main([str(f), "-p", "canonicalize{x=1}"])
