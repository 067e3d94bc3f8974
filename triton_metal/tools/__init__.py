"""Command-line tools (`triton-metal-opt`) and the diagnostics (docs/diagnostics.md): profiler,
hardware, bandwidth and throughput, memory analysis, environment check."""
