"""The backends kernels run on, each a folder of its own: `emulator`, `interpreter`, `metal`,
`torch_mps`.

`backends` is `triton.backends.backends` under the import swap: Triton's registry of its
installed compiler backends (nvidia, amd, cpu, ...), which PyTorch reads to learn whether it can
generate Triton code for a device (`torch.utils._triton.has_triton`, `torch.compile`). None of
Triton's backends is installed here, so it is empty: PyTorch then generates no Triton code and
compiles as it does without Triton, and kernels written with this package still run inside
compiled functions, called as any Python function is."""

backends: dict[str, object] = {}
