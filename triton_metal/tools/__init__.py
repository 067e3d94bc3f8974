"""Command-line tools (`triton-metal-opt`)."""
