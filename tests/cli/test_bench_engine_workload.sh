#!/usr/bin/env bash
# test_bench_engine_workload: `tokmeter bench -m MODEL -w FILE.jsonl` in
# process: each job's text counted by the model's own vocabulary at
# llama.cpp's token count (the counts below are llama-tokenize's for these
# texts, on the fixture vocabularies copied by synth --vocab-from), its
# prompt prefilled as pp<count> and its max_tokens decoded after it, the
# job's name in the table and in every run record; bad combinations refused
# before anything runs (exit 2, one line).
set -euo pipefail
: "${TOKMETER:?}"
. "$(dirname "$0")/lib.sh"
export TOKMETER_PROBE_QUICK=1
fx="${TOKMETER_FIXTURES:?}/gguf"

cat > "$dir/jobs.jsonl" <<'JOBS'
{"name": "greet", "prompt": "Hello world, how are you today?", "max_tokens": 24}
{"name": "turkish", "system": "Answer in one word.", "prompt": "İstanbul'un eski adı nedir?", "max_tokens": 24, "expect": {"equals": "Konstantinopolis"}}
{"name": "code", "prompt": "def square(x):\n    return x ** 2\n\nExplain this function.", "max_tokens": 30, "repeat": 2}
JOBS

expect_exit 0 "$TOKMETER" synth --preset tiny --type Q8_0 --vocab-from "$fx/ggml-vocab-qwen2.gguf" \
  -o "$dir/bpe.gguf"
expect_exit 0 "$TOKMETER" synth --preset tiny --type Q8_0 --vocab-from "$fx/ggml-vocab-llama-spm.gguf" \
  -o "$dir/spm.gguf"

# --- byte-pair vocabulary (qwen2): 8, 15, 16 tokens as llama.cpp counts them --
expect_exit 0 "$TOKMETER" bench -m "$dir/bpe.gguf" -w "$dir/jobs.jsonl" -t 1 -r 2 --out "$dir/b.jsonl"
grep -q "^greet  *8  *1  *[0-9.]* +- " "$dir/out" || fail "greet row: $(cat "$dir/out")"
grep -q "^turkish  *15  *1 " "$dir/out" || fail "turkish row: $(cat "$dir/out")"
grep -q "^code  *16  *1 " "$dir/out" || fail "code row: $(cat "$dir/out")"
grep -q "gpt2 (qwen2), as llama.cpp counts it" "$dir/out" || fail "vocabulary line: $(cat "$dir/out")"
grep -q "answers are not checked in process" "$dir/err" || fail "no note on expect: $(cat "$dir/err")"
python3 - "$dir/b.jsonl" <<'PY' || fail "records (see above)"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
runs = [r for r in recs if r["record"] == "run" and not r["warmup"]]
got = sorted({(r["workload"], r["test"], r["depth"]) for r in runs})
want = sorted({("greet", "pp8", 0), ("greet", "tg24", 8), ("turkish", "pp15", 0),
               ("turkish", "tg24", 15), ("code", "pp16", 0), ("code", "tg30", 16)})
assert got == want, got
code = [r for r in runs if r["workload"] == "code"]
assert len(code) == 4, len(code)              # repeat 2, for pp and tg
assert all(r["rate_tok_s"] > 0 for r in runs)
ident = [r for r in recs if r["record"] == "identity"][0]
st = ident["settings"]
assert st["vocabulary"] == "gpt2 (qwen2)", st
assert [w["prompt_tokens"] for w in st["workloads"]] == [8, 15, 16], st["workloads"]
assert st["workload_file"].endswith("jobs.jsonl")
PY
# the report tells the jobs apart by name
expect_exit 0 "$TOKMETER" report "$dir/b.jsonl"
grep -q "greet pp8" "$dir/out" && grep -q "code tg30" "$dir/out" || fail "report: $(cat "$dir/out")"

# --- SentencePiece vocabulary (llama): BOS first, 9, 20, 20 tokens ----------
expect_exit 0 "$TOKMETER" bench -m "$dir/spm.gguf" -w "$dir/jobs.jsonl" -t 1 -r 1 --out "$dir/s.jsonl"
grep -q "^greet  *9  *1 " "$dir/out" || fail "spm greet row: $(cat "$dir/out")"
grep -q "^turkish  *20  *1 " "$dir/out" || fail "spm turkish row: $(cat "$dir/out")"
grep -q "llama (SentencePiece)" "$dir/out" || fail "spm vocabulary line: $(cat "$dir/out")"

# --- refused before anything runs ----------------------------------------------
expect_exit 0 "$TOKMETER" synth --preset tiny --type Q8_0 -o "$dir/none.gguf"
expect_exit 2 "$TOKMETER" bench -m "$dir/none.gguf" -w "$dir/jobs.jsonl" --out "$dir/x.jsonl"
grep -q "no vocabulary.*--vocab-from" "$dir/err" || fail "no-vocabulary message: $(cat "$dir/err")"
expect_exit 2 "$TOKMETER" bench -w "$dir/jobs.jsonl" --out "$dir/x.jsonl"
grep -q "needs -m MODEL.gguf" "$dir/err" || fail "no -m message: $(cat "$dir/err")"
expect_exit 2 "$TOKMETER" bench -m "$dir/bpe.gguf" -w classify --out "$dir/x.jsonl"
grep -q "built-in workloads are for --url" "$dir/err" || fail "built-in message: $(cat "$dir/err")"
expect_exit 2 "$TOKMETER" bench -m "$dir/bpe.gguf" -w "$dir/jobs.jsonl" -p 64 --out "$dir/x.jsonl"
echo '{"name": "img", "prompt": "What is it?", "images": ["p.png"]}' > "$dir/img.jsonl"
printf '\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR\0\0\0\x03\0\0\0\x02\x08\x02\0\0\0' > "$dir/p.png"
expect_exit 2 "$TOKMETER" bench -m "$dir/bpe.gguf" -w "$dir/img.jsonl" --out "$dir/x.jsonl"
grep -q "img.jsonl:1: job 'img' sends images" "$dir/err" || fail "image message: $(cat "$dir/err")"
[ ! -s "$dir/x.jsonl" ] || fail "a refused invocation wrote records"
echo "$tm_test_name: ok"
