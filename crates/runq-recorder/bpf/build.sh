#!/bin/sh
# Rebuilds the committed BPF objects from their C sources and records each
# source's hash next to the object (a test fails when they disagree).
# Needs clang and libbpf-dev: apt-get install -y clang libbpf-dev
set -eu
cd "$(dirname "$0")"
for src in *.bpf.c; do
  obj="${src%.c}.o"
  clang -target bpf -O2 -g -I/usr/include/x86_64-linux-gnu -c "$src" -o "$obj"
  # Debug line info would embed this machine's paths; keep BTF, drop the rest.
  llvm-strip -g "$obj" 2>/dev/null || true
  sha256sum "$src" | cut -d' ' -f1 > "$src.sha256"
  echo "built $obj"
done
