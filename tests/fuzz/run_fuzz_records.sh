#!/usr/bin/env bash
# run_fuzz_records.sh SRC_DIR OUT_DIR SECONDS: builds the libFuzzer target for
# the results-file readers (tests/fuzz/fuzz_records.c: results_load, series,
# compare, decide's choice of rates, report's writers, and the llama-bench
# import; ASan + UBSan, no CMake), seeds it with two results files written by
# tokmeter (tests/fuzz/seeds/) and the llama-bench fixtures, fuzzes for
# SECONDS, and exits non-zero if the fuzzer found a crash (reproducer left in
# OUT_DIR/crashes). Exit 77 (skipped) without clang.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: run_fuzz_records.sh SRC_DIR OUT_DIR [SECONDS]" >&2
  exit 2
fi
src=$(cd "$1" && pwd)
out=$2
secs=${3:-30}
cc=${CLANG:-clang}
command -v "$cc" >/dev/null || { echo "SKIPPED: no clang ($cc) for libFuzzer"; exit 77; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -rf "$out/seeds" "$out/crashes"
mkdir -p "$out/seeds" "$out/corpus" "$out/crashes"

lib_srcs=()
for m in util gguf model machine stats backend record analysis report import; do
  lib_srcs+=("$src"/src/$m/*.c)
done
san=(-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all)
common=(-std=gnu11 -D_GNU_SOURCE -DTOKMETER_VERSION='"fuzz"' -I"$src/src" $(pkg-config --cflags jansson libcurl))
libs=($(pkg-config --libs jansson libcurl) -lm -lpthread)

echo "run_fuzz_records: building $out/fuzz_records" >&2
"$cc" "${san[@]}" "${common[@]}" "${lib_srcs[@]}" "$src/tests/fuzz/fuzz_records.c" \
  -o "$out/fuzz_records" "${libs[@]}"

# the first byte picks the reader: even = a results file, odd = llama-bench output
for f in "$src"/tests/fuzz/seeds/*.jsonl; do
  { printf '\000'; cat "$f"; } > "$out/seeds/results-$(basename "$f")"
done
fixtures=${TOKMETER_FIXTURES:-$src/tests/fixtures}
for f in "$fixtures"/llama-bench/*.json "$fixtures"/llama-bench/*.jsonl; do
  { printf '\001'; cat "$f"; } > "$out/seeds/llama-bench-$(basename "$f")"
done
echo "run_fuzz_records: $(ls "$out/seeds" | wc -l) seeds; fuzzing for ${secs}s" >&2

set +e
"$out/fuzz_records" -max_total_time="$secs" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="$out/crashes/" -print_final_stats=1 "$out/corpus" "$out/seeds" \
  2> "$out/fuzz.log"
rc=$?
set -e
tail -n 20 "$out/fuzz.log" >&2
if [ $rc -ne 0 ] || [ -n "$(ls -A "$out/crashes")" ]; then
  echo "run_fuzz_records: FAILED (exit $rc); reproducers in $out/crashes, log $out/fuzz.log" >&2
  exit 1
fi
echo "run_fuzz_records: no crash in ${secs}s" >&2
