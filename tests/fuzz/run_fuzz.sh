#!/usr/bin/env bash
# run_fuzz.sh SRC_DIR OUT_DIR SECONDS: builds the libFuzzer target for the GGUF
# reader (ASan + UBSan, no CMake), builds a seed corpus (small valid files from
# gen_seeds plus the first 4 KiB of each fixture), fuzzes for SECONDS, and exits
# non-zero if the fuzzer found a crash (the reproducer is left in OUT_DIR/crashes).
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: run_fuzz.sh SRC_DIR OUT_DIR [SECONDS]" >&2
  exit 2
fi
src=$(cd "$1" && pwd)
out=$2
secs=${3:-60}
cc=${CLANG:-clang}
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -rf "$out/seeds" "$out/crashes"
mkdir -p "$out/seeds" "$out/corpus" "$out/crashes"

lib_srcs=("$src"/src/util/*.c "$src"/src/gguf/*.c)
san=(-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all)
common=(-std=gnu11 -D_GNU_SOURCE -I"$src/src")

echo "run_fuzz: building $out/fuzz_gguf" >&2
"$cc" "${san[@]}" "${common[@]}" "${lib_srcs[@]}" "$src/tests/fuzz/fuzz_gguf.c" \
  -o "$out/fuzz_gguf" -lm -lpthread
"$cc" -g -O1 "${common[@]}" "${lib_srcs[@]}" "$src/tests/fuzz/gen_seeds.c" \
  -o "$out/gen_seeds" -lm -lpthread

"$out/gen_seeds" "$out/seeds"
fixtures=${TOKMETER_FIXTURES:-$src/tests/fixtures}
for f in "$fixtures"/gguf/*.gguf; do
  [ -e "$f" ] || continue
  head -c 4096 "$f" > "$out/seeds/prefix-$(basename "$f")"
done
# Truncated copies of a valid seed: the most common real-world corruption.
for n in 24 40 100 300; do
  head -c "$n" "$out/seeds/seed-full" > "$out/seeds/trunc-$n"
done
echo "run_fuzz: $(ls "$out/seeds" | wc -l) seeds; fuzzing for ${secs}s" >&2

set +e
"$out/fuzz_gguf" -max_total_time="$secs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="$out/crashes/" -print_final_stats=1 "$out/corpus" "$out/seeds" \
  2> "$out/fuzz.log"
rc=$?
set -e
tail -n 20 "$out/fuzz.log" >&2
if [ $rc -ne 0 ] || [ -n "$(ls -A "$out/crashes")" ]; then
  echo "run_fuzz: FAILED (exit $rc); reproducers in $out/crashes, log $out/fuzz.log" >&2
  exit 1
fi
echo "run_fuzz: no crash in ${secs}s" >&2
