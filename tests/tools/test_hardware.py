"""Hardware capabilities (Metal path against a fake of `mx.metal.is_available()` and
`mx.device_info(mx.gpu)`; the emulator for real), synchronize, clear_cache, set_debug_option."""

from __future__ import annotations

import os

import numpy as np
import pytest

import triton_metal as triton
from triton_metal.tools.hardware import DEBUG_OPTIONS

from diag_fake_mlx import FakeMX
from diag_kernels import copy_rows


@pytest.mark.parametrize(
    "arch,name,chip,family,tier_name,native_bf16,atomics64",
    [
        ("applegpu_g13s", "Apple M1 Max", "M1", "Apple7", "Pro or Max", False, False),
        ("applegpu_g14g", "Apple M2", "M2", "Apple8", "base", False, True),
        ("applegpu_g15d", "Apple M3 Ultra", "M3", "Apple9", "Ultra", True, True),
        ("applegpu_g16s", "Apple M4 Pro", "M4", "Apple9", "Pro or Max", True, True),
        ("applegpu_g17s", "Apple M5 Pro", "M5", "Apple10", "Pro or Max", True, True),
    ],
)
def test_capabilities_from_the_architecture_string(arch, name, chip, family, tier_name, native_bf16, atomics64):
    mx = FakeMX(arch, name, extra={"memory_size": 64 << 30, "max_buffer_length": 32 << 30})
    caps = triton.get_hardware_capabilities(mx)
    assert caps.backend == "metal"
    assert caps.device_name == name and caps.architecture == arch
    assert caps.chip == chip and caps.gpu_family == family and caps.tier_name == tier_name
    assert caps.features["simdgroup_matrix"] and caps.features["float_atomics"]
    assert caps.features["native_bfloat_alu"] is native_bf16
    assert caps.features["atomics_64bit"] is atomics64
    assert caps.features["neural_accelerators"] is (family == "Apple10")
    assert (caps.simd_width, caps.max_threads_per_threadgroup, caps.threadgroup_memory_bytes) == (32, 1024, 32768)
    assert caps.memory_bytes == 64 << 30 and caps.max_buffer_bytes == 32 << 30
    assert arch in caps.derived_from and "derived" in caps.derived_from
    assert ("device_info", "gpu") in mx.calls
    assert name in str(caps) and caps.to_dict()["gpu_family"] == family


def test_phone_generations_number_differently():
    # A16 reports gen 15 but is an Apple8 part without 64-bit atomics
    caps = triton.get_hardware_capabilities(FakeMX("applegpu_g15p", "Apple A16 GPU"))
    assert caps.gpu_family == "Apple8" and caps.chip is None
    assert caps.features["atomics_64bit"] is False


def test_unknown_architecture_claims_no_features():
    caps = triton.get_hardware_capabilities(FakeMX("applegpu_g99x", "Future GPU"))
    assert caps.gpu_family is None
    assert not any(caps.features.values())


def test_emulator_reports_itself():
    caps = triton.get_hardware_capabilities()
    assert caps.backend == "emulator"
    assert "emulator" in caps.device_name and caps.gpu_family is None
    assert "no Apple GPU" in caps.derived_from
    assert caps.features["atomics_64bit"] is False


def test_synchronize_drains_the_stream():
    mx = FakeMX()
    triton.synchronize(mx)
    assert mx.calls == [("synchronize",)]
    triton.synchronize()  # the real MLX (CPU here) accepts it


def test_clear_cache_drops_memory_and_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_METAL_CACHE_DIR", str(tmp_path))
    first = copy_rows.warmup(np.float32, np.float32, 64, BLOCK=64, grid=(1,))
    assert first.origin == "compiled" and len(copy_rows.cache) >= 1
    assert any((tmp_path / "msl").iterdir())
    counts = triton.clear_cache()
    assert counts["memory_variants"] >= 1 and counts["disk_files"] >= 1
    assert len(copy_rows.cache) == 0 and not (tmp_path / "msl").exists()
    again = copy_rows.warmup(np.float32, np.float32, 64, BLOCK=64, grid=(1,))
    assert again.origin == "compiled"  # not read back from a disk entry
    # memory only: the disk entry written just now survives and is read back
    triton.clear_cache(memory=True, disk=False)
    assert copy_rows.warmup(np.float32, np.float32, 64, BLOCK=64, grid=(1,)).origin == "disk"


@pytest.fixture
def restore_env():
    saved = {v: os.environ.get(v) for v in set(DEBUG_OPTIONS.values())}
    yield
    for var, value in saved.items():
        if value is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = value


def test_set_debug_option_sets_the_environment(restore_env, tmp_path):
    assert triton.set_debug_option("debug_level", 2) is None
    assert os.environ["TRITON_METAL_DEBUG"] == "2"
    assert triton.set_debug_option("debug_level", 0) == "2"
    triton.set_debug_option("dump_dir", tmp_path)
    assert os.environ["TRITON_METAL_DUMP_DIR"] == str(tmp_path)
    triton.set_debug_option("dump_shaders", False)
    assert "TRITON_METAL_DUMP_DIR" not in os.environ
    triton.set_debug_option("dump_shaders", True)
    assert os.environ["TRITON_METAL_DUMP_DIR"].endswith(os.path.join(".triton", "metal", "shaders"))
    triton.set_debug_option("interpret", True)
    assert os.environ["TRITON_METAL_INTERPRET"] == "1"
    assert triton.active_backend_name() == "interpreter"
    triton.set_debug_option("interpret", None)
    triton.set_debug_option("backend", "interpreter")
    assert triton.active_backend_name() == "interpreter"
    triton.set_debug_option("backend", None)
    assert triton.active_backend_name() == "emulator"


def test_debug_option_takes_effect_on_launches(restore_env, capfd, tmp_path):
    triton.set_debug_option("debug_level", 1)
    triton.set_debug_option("dump_dir", tmp_path)
    x = np.ones(32, np.float32)
    y = np.zeros_like(x)
    copy_rows[(1,)](x, y, 32, BLOCK=32)
    assert "launch copy_rows" in capfd.readouterr().err
    triton.clear_cache(disk=False)
    copy_rows[(1,)](x, y, 32, BLOCK=32)
    assert any(p.name == "kernel.metal" for p in tmp_path.rglob("*"))


@pytest.mark.parametrize("name,value", [("debug_level", 5), ("debug_level", "high"), ("dump_shaders", "yes"),
                                        ("backend", "cuda"), ("no_such_option", 1)])
def test_set_debug_option_refuses_bad_values(restore_env, name, value):
    with pytest.raises(ValueError, match=name if name != "no_such_option" else "unknown option"):
        triton.set_debug_option(name, value)


_IOREG = b"""<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<array>
  <dict>
    <key>IOClass</key><string>AGXAcceleratorG16X</string>
    <key>gpu-core-count</key><integer>20</integer>
    <key>model</key><string>Apple M4 Pro</string>
  </dict>
</array>
</plist>
"""


@pytest.mark.parametrize("output,cores", [
    (_IOREG, 20),
    (_IOREG.replace(b"<integer>20</integer>", b"<integer>0</integer>"), None),  # not a count
    (_IOREG.replace(b"gpu-core-count", b"other-key"), None),
    (b"<plist><array></array></plist>", None),  # no accelerator entry
    (b"\x00garbled", None),
    (None, None),  # ioreg missing or failed
])
def test_gpu_core_count_from_the_ioregistry(output, cores):
    from triton_metal.backends.metal.chip import IOREG_COMMAND, gpu_core_count

    assert gpu_core_count(lambda: output) == cores
    assert IOREG_COMMAND[0] == "ioreg" and "AGXAccelerator" in IOREG_COMMAND


def test_gpu_cores_on_metal_and_the_emulator(monkeypatch: pytest.MonkeyPatch):
    from triton_metal.backends.metal import chip

    monkeypatch.setattr(chip, "_cached_gpu_core_count", lambda: 38)
    caps = triton.get_hardware_capabilities(FakeMX("applegpu_g15s", "Apple M3 Max"))
    assert caps.gpu_cores == 38 and "38 GPU cores" in str(caps)
    assert triton.get_hardware_capabilities().gpu_cores is None  # the emulator: no GPU cores


def test_persistent_grids_are_sized_from_the_chip(monkeypatch: pytest.MonkeyPatch):
    from triton_metal.backends.metal import chip
    from triton_metal.ops import _common
    from triton_metal.runtime import backend

    assert _common.persistent_programs(10_000) == _common.PROGRAMS_UNKNOWN_CHIP  # the emulator
    monkeypatch.setattr(chip, "_cached_gpu_core_count", lambda: 10)
    monkeypatch.setattr(backend, "active_backend_name", lambda: backend.METAL)
    assert _common.persistent_programs(10_000) == 10 * _common.PROGRAMS_PER_CORE
    assert _common.persistent_programs(7) == 7  # never more programs than rows
    # 16 rows a program at least, while that leaves a program a core
    monkeypatch.setattr(chip, "_cached_gpu_core_count", lambda: 132)
    assert [_common.persistent_programs(r) for r in (8192, 4096, 1024, 100)] == [512, 256, 132, 100]
    assert _common.persistent_programs(100_000) == 132 * _common.PROGRAMS_PER_CORE
