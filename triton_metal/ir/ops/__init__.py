"""Every op class of the IR, by family. Importing this package registers them all."""

from __future__ import annotations

from .arith import *  # noqa: F403
from .func import CallOp, FuncOp, ReturnOp
from .scf import ConditionOp, ForOp, IfOp, WhileOp, YieldOp
from .tt import *  # noqa: F403
from .tt_compute import (DotOp, DotScaledOp, MapElementwiseOp, MapElementwiseReturnOp, ReduceOp, ReduceReturnOp, ScanOp,
                         ScanReturnOp)
from .tt_debug import AssertOp, AssumeOp, BarrierOp, HintKind, HintOp, PrintOp
from .tt_memory import AtomicCASOp, AtomicPollOp, AtomicRMWKind, AtomicRMWOp, LoadOp, StoreOp
from . import ttg
from .ttg import ConvertLayoutOp
