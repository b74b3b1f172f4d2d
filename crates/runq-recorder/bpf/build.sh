#!/bin/sh
# Rebuilds the committed BPF objects from their C sources and records each
# source's hash next to the objects (a test fails when they disagree): the
# hash of the source followed by the tracepoint records it includes,
# crates/runq-kernel/bpf/tracepoints.h. recorder.bpf.o is built on the
# classic tracepoints, recorder-btf.bpf.o on the BTF tracepoints
# (-DBTF_TP, CO-RE). -mcpu=v3: the atomic compare-and-swap and fetch-add
# that claim slots (Linux 5.12 and later).
# Needs clang and libbpf-dev: apt-get install -y clang libbpf-dev
set -eu
cd "$(dirname "$0")"
shared=../../runq-kernel/bpf
build() {
  clang -target bpf -mcpu=v3 -O2 -g -I/usr/include/x86_64-linux-gnu -I"$shared" "$@"
}
for src in *.bpf.c; do
  base="${src%.bpf.c}"
  build -c "$src" -o "$base.bpf.o"
  build -DBTF_TP -c "$src" -o "$base-btf.bpf.o"
  for obj in "$base.bpf.o" "$base-btf.bpf.o"; do
    # Debug line info would embed this machine's paths; keep BTF (and the
    # CO-RE relocations in .BTF.ext), drop the rest.
    llvm-strip -g "$obj" 2>/dev/null || true
    echo "built $obj"
  done
  cat "$src" "$shared/tracepoints.h" | sha256sum | cut -d' ' -f1 > "$src.sha256"
done
