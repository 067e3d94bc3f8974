#!/bin/sh
# Tools for the emulator's portability tests (tests/emulator/test_aarch64.py): an aarch64 cross
# compiler with its C library, qemu user-mode emulation to run what it builds, and clang/LLVM to
# assemble the context switch for Apple targets (Mach-O objects) and to build it with clang++.
# Debian/Ubuntu; run as root (or through sudo). Set TRITON_METAL_REQUIRE_CROSS=1 when running the
# tests afterwards, so that a missing tool fails the run instead of skipping those tests.
set -eu

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi

$SUDO apt-get update
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends \
    g++-aarch64-linux-gnu \
    libc6-dev-arm64-cross \
    qemu-user \
    clang \
    llvm
