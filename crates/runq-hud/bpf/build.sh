#!/bin/sh
# Rebuilds the committed BPF objects from their C sources and records each
# source's hash next to the object (a test fails when they disagree): the
# hash of the source followed by the tracepoint records it includes,
# crates/runq-kernel/bpf/tracepoints.h.
# Needs clang and libbpf-dev: apt-get install -y clang libbpf-dev
set -eu
cd "$(dirname "$0")"
shared=../../runq-kernel/bpf
for src in *.bpf.c; do
  obj="${src%.c}.o"
  clang -target bpf -O2 -g -I/usr/include/x86_64-linux-gnu -I"$shared" -c "$src" -o "$obj"
  # Debug line info would embed this machine's paths; keep BTF, drop the rest.
  llvm-strip -g "$obj" 2>/dev/null || true
  cat "$src" "$shared/tracepoints.h" | sha256sum | cut -d' ' -f1 > "$src.sha256"
  echo "built $obj"
done
