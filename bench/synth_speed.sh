#!/usr/bin/env bash
# synth_speed: how fast `tokmeter synth` writes a real-size model. Writes the
# Qwen3-0.6B shape at Q4_0, Q8_0, F16, Q4_K_M and Q6_K (the K-quants go through
# src/synth/synth_quant_fast.c) into a temp dir (removed at exit) and
# prints seconds and MB/s of file written (target: >= 200 MB/s on the 2-core dev
# machine). Usage: bench/synth_speed.sh [path/to/tokmeter] [threads]
set -euo pipefail
bin=${1:-$(dirname "$0")/../build/tokmeter}
threads=${2:-0}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for t in Q4_0 Q8_0 F16 Q4_K_M Q6_K; do
  args=(synth --preset qwen3-0.6b --type "$t" -o "$dir/m-$t.gguf")
  [ "$threads" != 0 ] && args+=(--threads "$threads")
  start=$(date +%s.%N)
  "$bin" "${args[@]}" >/dev/null
  end=$(date +%s.%N)
  bytes=$(stat -c %s "$dir/m-$t.gguf")
  awk -v t="$t" -v b="$bytes" -v s="$start" -v e="$end" \
    'BEGIN { d = e - s; printf "qwen3-0.6b %-6s %8.1f MiB  %6.2f s  %7.1f MB/s\n", t, b / 1048576, d, b / d / 1e6 }'
  rm -f "$dir/m-$t.gguf"
done
