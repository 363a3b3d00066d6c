#!/usr/bin/env bash
# tests/toolchain/clang_build.sh SRC_DIR OUT_DIR: builds tokmeter with clang (Release, no
# tests) and runs the binary once on the engine and once on a model's
# ceiling, so a construct only GCC accepts (a CPU feature name clang does not
# know, an extension) fails the suite rather than a fuzzer build. Exit 77
# (skipped) without clang.
set -euo pipefail
src=$(cd "$1" && pwd)
out=$2
cc=${CLANG:-clang}
command -v "$cc" >/dev/null || { echo "SKIPPED: no clang ($cc)"; exit 77; }
rm -rf "$out"
CC="$cc" cmake -S "$src" -B "$out" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTOKMETER_TESTS=OFF \
  >"$out.configure.log" 2>&1 || { cat "$out.configure.log" >&2; exit 1; }
cmake --build "$out" --parallel "$(nproc)" >"$out.build.log" 2>&1 ||
  { grep -E "error" "$out.build.log" | head -20 >&2; echo "clang_build: FAILED (log $out.build.log)" >&2; exit 1; }
tm="$out/tokmeter"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export TOKMETER_CACHE_DIR="$tmp/cache" TOKMETER_PROBE_QUICK=1
"$tm" ceiling --preset tiny --bandwidth 10GB/s >/dev/null
"$tm" bench -m "${TOKMETER_FIXTURES:-$src/tests/fixtures}/gguf/tiny-qwen3-Q8_0.gguf" -r 1 -p 16 -n 24 \
  -t 1 --no-progress --out "$tmp/r.jsonl" >/dev/null
[ -s "$tmp/r.jsonl" ] || { echo "clang_build: the clang-built bench wrote no records" >&2; exit 1; }
echo "clang_build: built with $($cc --version | head -1) and ran the engine" >&2
