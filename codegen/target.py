"""The GPU family and Metal Shading Language version a kernel is compiled for.

A target is written `<family>:<msl>`, e.g. `apple7:3.1` (M1 on macOS 14), `apple9:3.2` (M3 or M4
on macOS 15) or `apple10:4.0` (M5 on macOS 26). `TRITON_METAL_TARGET` selects it on any machine;
without it the runtime takes the Mac's own chip and OS, and elsewhere `DEFAULT_TARGET`
(docs/targets.md). The code generator's options carry it, so a lowering can choose per target
(`has_tensor_ops`); it is part of the specialization key, the dumps and `launch.json`.

Families are Metal's `MTLGPUFamilyApple<N>` for the Mac chips: apple7 = M1, apple8 = M2,
apple9 = M3 and M4, apple10 = M5. MSL versions are those of the macOS releases the project runs
on: 3.1 (macOS 14; the `bfloat` type), 3.2 (macOS 15), 4.0 (macOS 26.2; Metal 4 tensor ops). The
M5 ships with macOS 26, so apple10 takes MSL 4.0 only.
"""

from __future__ import annotations

from dataclasses import dataclass

FAMILIES: tuple[int, ...] = (7, 8, 9, 10)
"""`MTLGPUFamilyApple<N>` of the Mac chips: M1, M2, M3/M4, M5."""
MSL_VERSIONS: tuple[tuple[int, int], ...] = ((3, 1), (3, 2), (4, 0))
"""MSL of macOS 14, 15 and 26.2 (earlier macOS has no `bfloat`, which the code generator uses)."""
MACOS_MSL: dict[tuple[int, int], tuple[int, int]] = {(14, 0): (3, 1), (15, 0): (3, 2), (26, 2): (4, 0)}
"""The MSL version the code generator takes from each macOS release on (macOS 16-25 do not exist).
macOS 26.0 and 26.1 compile MSL 4.0, but their MetalPerformancePrimitives lack what 26.2's
declares and the tensor-op lowerings use (the input cooperative tensors of `tl.dot_scaled`'s K
loops), and MLX runs none of its own tensor-op kernels before 26.2 (`is_nax_available`): there
the code generator stays on MSL 3.2."""
FAMILY_MIN_MSL: dict[int, tuple[int, int]] = {10: (4, 0)}
"""The first MSL a family's chips run (the M5 ships with macOS 26)."""
GENERATION_FAMILY: dict[int, int] = {13: 7, 14: 8, 15: 9, 16: 9, 17: 10}
"""Apple GPU generation (`applegpu_g<N>`) of the Mac chips -> family."""


@dataclass(frozen=True)
class Target:
    family: int
    """`MTLGPUFamilyApple<family>`."""
    msl: tuple[int, int]
    """(major, minor) of the Metal Shading Language version."""

    def __post_init__(self) -> None:
        if self.family not in FAMILIES or self.msl not in MSL_VERSIONS:
            raise ValueError(f"no such target {self}; {valid_targets_text()}")
        if self.msl < FAMILY_MIN_MSL.get(self.family, self.msl):
            first = FAMILY_MIN_MSL[self.family]
            raise ValueError(f"target {self} does not exist: apple{self.family} chips run MSL "
                             f"{first[0]}.{first[1]} or later; {valid_targets_text()}")

    def __str__(self) -> str:
        return f"apple{self.family}:{self.msl[0]}.{self.msl[1]}"

    @property
    def metal_version(self) -> int:
        """`__METAL_VERSION__` as the Metal compiler defines it (3.2 -> 320)."""
        return self.msl[0] * 100 + self.msl[1] * 10

    @property
    def has_device_fence(self) -> bool:
        """`atomic_thread_fence` at device scope, which Triton's acquire and release atomics need
        to order memory between programs: MSL 3.2 (docs/codegen.md, "Memory order between
        programs")."""
        return self.msl >= (3, 2)

    @property
    def has_tensor_ops(self) -> bool:
        """Metal 4 tensor ops (`mpp::tensor_ops::matmul2d`, cooperative tensors): MSL 4.0."""
        return self.msl >= (4, 0)


def all_targets() -> tuple[Target, ...]:
    return tuple(Target(f, v) for f in FAMILIES for v in MSL_VERSIONS
                 if v >= FAMILY_MIN_MSL.get(f, v))


def valid_targets_text() -> str:
    return "valid targets: " + ", ".join(str(t) for t in all_targets())


DEFAULT_TARGET = Target(9, (3, 2))
"""The target off a Mac (and on a Mac whose chip is not recognised): M3/M4 on macOS 15, the
newest MSL without tensor ops, which every current Mac with macOS 15 runs."""


def parse_target(text: str) -> Target:
    """`"apple9:3.2"` -> Target(9, (3, 2)); a ValueError listing the valid targets otherwise."""
    raw = text.strip().lower()
    family_text, sep, msl_text = raw.partition(":")
    major, dot, minor = msl_text.partition(".")
    if (not sep or not dot or not family_text.startswith("apple") or not family_text[5:].isdigit()
            or not major.isdigit() or not minor.isdigit()):
        raise ValueError(f"TRITON_METAL_TARGET={text!r} is not <family>:<msl> (e.g. apple9:3.2); "
                         f"{valid_targets_text()}")
    try:
        return Target(int(family_text[5:]), (int(major), int(minor)))
    except ValueError as error:
        raise ValueError(f"TRITON_METAL_TARGET={text!r}: {error}") from None


def target_of_chip(generation: int | None, macos: tuple[int, int] | None) -> Target:
    """The target of a Mac: its GPU generation and macOS release (major, minor). Generations past
    the known ones count as the newest family, releases past the known ones as the newest MSL;
    unknown values fall back to `DEFAULT_TARGET`'s. A chip on a release below its family's first
    MSL (an M5 on macOS 26.1) takes the newest family that MSL has: the same code, as every
    family of one MSL compiles alike but for the header line."""
    family = DEFAULT_TARGET.family
    if generation is not None:
        family = GENERATION_FAMILY.get(generation, FAMILIES[-1] if generation > max(GENERATION_FAMILY) else family)
    msl = DEFAULT_TARGET.msl
    if macos is not None:
        known = [v for release, v in MACOS_MSL.items() if release <= macos]
        msl = max(known) if known else MSL_VERSIONS[0]
    if msl < FAMILY_MIN_MSL.get(family, msl):
        family = max(f for f in FAMILIES if FAMILY_MIN_MSL.get(f, msl) <= msl)
    return Target(family, msl)
