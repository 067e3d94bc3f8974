"""Running Triton's own test files against triton_metal, unmodified.

`python -m triton_metal.tools.triton_suite FILE [--backend interpreter|emulator] [--target T]
[--report PATH] [-- pytest args]` runs one of Triton's test files (`python/test/unit/language/`
in Triton's repository) with `import triton` resolving to this package (`plugin.py`), Triton's
test helper module answered by ours (`helpers.py`, imported as `triton._internal_testing`), and
prints the counts: passed, failed, skipped, and the failures and skips grouped by reason
(`report.py`). docs/triton_suite.md says where to get the files and what they measured.
"""
