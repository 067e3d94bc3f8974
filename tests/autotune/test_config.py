"""`Config`: Triton's constructor, all_kwargs, equality and hashing, the saved form."""

from __future__ import annotations

import pytest

import triton_metal as triton


def test_all_kwargs_merges_meta_parameters_and_launch_options():
    c = triton.Config({"BLOCK": 128, "GROUP": 8}, num_warps=2, num_stages=4)
    assert c.all_kwargs() == {"BLOCK": 128, "GROUP": 8, "num_warps": 2, "num_ctas": 1, "num_stages": 4}
    assert triton.Config({}, maxnreg=128).all_kwargs()["maxnreg"] == 128
    assert "maxnreg" not in triton.Config({}).all_kwargs()
    assert str(c) == "BLOCK: 128, GROUP: 8, num_warps: 2, num_ctas: 1, num_stages: 4, maxnreg: None"


def test_equality_and_hash_cover_options_and_pre_hook():
    def hook(args):
        return None

    a = triton.Config({"BLOCK": 64}, num_warps=4)
    assert a == triton.Config({"BLOCK": 64}, num_warps=4)
    assert hash(a) == hash(triton.Config({"BLOCK": 64}, num_warps=4))
    assert a != triton.Config({"BLOCK": 64}, num_warps=8)
    assert a != triton.Config({"BLOCK": 128}, num_warps=4)
    assert a != triton.Config({"BLOCK": 64}, num_warps=4, pre_hook=hook)
    assert len({a, triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 32})}) == 2


def test_saved_form_round_trips_and_refuses_what_json_cannot_hold():
    c = triton.Config({"BLOCK": 64, "ACT": "relu", "EVEN": True}, num_warps=8, num_stages=2, maxnreg=64)
    assert triton.Config.from_dict(c.to_dict()) == c
    with pytest.raises(ValueError, match="OBJ"):
        triton.Config({"OBJ": object()}).to_dict()


def test_bad_arguments():
    with pytest.raises(TypeError, match="kwargs"):
        triton.Config([("BLOCK", 1)])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="pre_hook"):
        triton.Config({}, pre_hook=3)  # type: ignore[arg-type]
