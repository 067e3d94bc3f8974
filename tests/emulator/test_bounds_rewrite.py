"""The emulator's rewrites of a kernel's text for bounds checks and line reporting (pure text)."""

from __future__ import annotations

from triton_metal.backends.emulator.bounds import checked_params, checked_text, element_type
from triton_metal.backends.emulator.rewrite import pin_line_directives
from triton_metal.backends.emulator.signature import InputSpec, OutputSpec, build_kernel_source

BODY = """\
  float4 v = float4(0.0f);
#line 12 "k.py"
  float a = x[thread_position_in_grid.x] + v.x;
  float b = x_shape[0] + n;
  out[thread_position_in_grid.x] = a + b;
#line 13 "k.py"
  ((device float4*)(out + 4))[0] = v;
"""


def _source():
    inputs = [InputSpec("x", "float", 1, 64), InputSpec("n", "int32_t", 0, 1)]
    return build_kernel_source("k", inputs, [OutputSpec("out", "float")], BODY, header="inline float x2(float x) { return x; }\n")


def test_only_pointer_buffers_are_checked() -> None:
    src = _source()
    assert [p.name for p in checked_params(src)] == ["x", "out"]
    assert [element_type(p) for p in checked_params(src)] == ["const float", "float"]


def test_declarations_and_mentions_are_rewritten_in_place() -> None:
    src = _source()
    text = checked_text(src, src.text)
    lines, before = text.splitlines(), src.text.splitlines()
    assert len(lines) == len(before)
    assert "  metal::tm_buf<const float> x [[buffer(0)]]," in lines
    assert any(line.startswith("  metal::tm_buf<float> out [[buffer(") for line in lines)
    assert "inline float x2(float x) { return x; }" in lines  # the header is not the body
    assert '  float a = tm_at(x, "k.py", 12)[thread_position_in_grid.x] + v.x;' in lines
    assert "  float b = x_shape[0] + n;" in lines  # longer names and scalars stay
    assert '  tm_at(out, "k.py", 12)[thread_position_in_grid.x] = a + b;' in lines
    assert '  ((device float4*)(tm_at(out, "k.py", 13) + 4))[0] = v;' in lines


def test_line_directives_are_pinned_to_every_line() -> None:
    text = pin_line_directives('a;\n#line 12 "k.py"\nb;\nc;\n\n#line 13 "k.py"\nd;\ne; /* one\ntwo */\nf;\n')
    assert text.split("\n") == [
        "a;", '#line 12 "k.py"', "b;", '#line 12 "k.py"', "c;", "",
        '#line 13 "k.py"', "d;", '#line 13 "k.py"', "e; /* one", "two */", '#line 13 "k.py"', "f;", "",
    ]
