#!/usr/bin/env bash
# run_fuzz_stream.sh SRC_DIR OUT_DIR SECONDS: builds the libFuzzer target for the
# streamed-response parsers (tests/fuzz/fuzz_stream.c: SSE + NDJSON framers and
# the three dialects; ASan + UBSan, no CMake), seeds it with the recorded
# llama-server exchanges (every line back to back, after 4 split-seed bytes) and
# a few NDJSON streams in Ollama's documented format, fuzzes for SECONDS, and
# exits non-zero if the fuzzer found a crash (reproducer left in OUT_DIR/crashes).
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: run_fuzz_stream.sh SRC_DIR OUT_DIR [SECONDS]" >&2
  exit 2
fi
src=$(cd "$1" && pwd)
out=$2
secs=${3:-30}
cc=${CLANG:-clang}
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -rf "$out/seeds" "$out/crashes"
mkdir -p "$out/seeds" "$out/corpus" "$out/crashes"

lib_srcs=("$src"/src/util/*.c "$src"/src/backend/*.c)
san=(-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all)
common=(-std=gnu11 -D_GNU_SOURCE -I"$src/src" $(pkg-config --cflags jansson libcurl))
libs=($(pkg-config --libs jansson libcurl) -lm -lpthread)

echo "run_fuzz_stream: building $out/fuzz_stream" >&2
"$cc" "${san[@]}" "${common[@]}" "${lib_srcs[@]}" "$src/tests/fuzz/fuzz_stream.c" \
  -o "$out/fuzz_stream" "${libs[@]}"

fixtures=${TOKMETER_FIXTURES:-$src/tests/fixtures}
python3 - "$fixtures" "$out/seeds" <<'PY'
import glob, json, os, sys
# 4 split-seed bytes, then the recorded body lines (or a non-streamed body)
for k, f in enumerate(sorted(glob.glob(os.path.join(sys.argv[1], "llama-server", "*.json")))):
    d = json.load(open(f))
    body = "".join(l["line"] for l in d.get("lines", [])) or json.dumps(d.get("body", ""))
    with open(os.path.join(sys.argv[2], "ls-%d" % k), "wb") as o:
        o.write(b"seed" + body.encode()[:16380])
PY
printf 'abcd{"model":"m","message":{"role":"assistant","content":"Hi"},"done":false}\n{"model":"m","message":{"role":"assistant","content":""},"done":true,"done_reason":"length","total_duration":5000000,"load_duration":100,"prompt_eval_count":5,"prompt_eval_duration":2000000,"eval_count":1,"eval_duration":1000000}\n' > "$out/seeds/ollama-chat"
printf 'wxyz{"model":"m","response":"Hi","thinking":"hmm","done":false}\r\n\r\n{"model":"m","response":"","done":true,"eval_count":1}' > "$out/seeds/ollama-generate"
printf '1234data: {"error":{"code":500,"message":"boom","type":"server_error"}}\n\n' > "$out/seeds/sse-error"
echo "run_fuzz_stream: $(ls "$out/seeds" | wc -l) seeds; fuzzing for ${secs}s" >&2

set +e
"$out/fuzz_stream" -max_total_time="$secs" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="$out/crashes/" -print_final_stats=1 "$out/corpus" "$out/seeds" \
  2> "$out/fuzz.log"
rc=$?
set -e
tail -n 20 "$out/fuzz.log" >&2
if [ $rc -ne 0 ] || [ -n "$(ls -A "$out/crashes")" ]; then
  echo "run_fuzz_stream: FAILED (exit $rc); reproducers in $out/crashes, log $out/fuzz.log" >&2
  exit 1
fi
echo "run_fuzz_stream: no crash in ${secs}s" >&2
