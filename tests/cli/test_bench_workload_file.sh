#!/usr/bin/env bash
# test_bench_workload_file: `tokmeter bench --url URL -w FILE.jsonl` end to
# end against the fake server: the jobs run as given (system turn, images as
# content parts after the nonce's text, repeat, max_tokens, natural length),
# each checked answer in its run record and the counts in the summary and on
# screen; a server that rejects images fails that job only (exit 1, the
# others measured); Ollama gets base64 images; bad files are refused before
# any request (exit 2, FILE:LINE).
set -euo pipefail
: "${TOKMETER:?}" "${TOKMETER_FAKESERVER:?}"
. "$(dirname "$0")/lib.sh"
export TOKMETER_PROBE_QUICK=1 NO_PROXY='*'
unset OPENAI_API_KEY

# a PNG header of 3 x 2 pixels is all the reader needs
mkdir -p "$dir/img"
printf '\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR\0\0\0\x03\0\0\0\x02\x08\x02\0\0\0' > "$dir/img/panel.png"
cat > "$dir/jobs.jsonl" <<'EOF'
{"name": "panel", "prompt": "Is this an electrical panel? Answer yes or no.", "images": ["img/panel.png"], "max_tokens": 8, "expect": {"equals": "yes"}, "repeat": 3}
{"name": "meter", "system": "Reply in one word.", "prompt": "Which meter is it?", "expect": {"one_of": ["gas", "water"]}}
{"name": "story", "prompt": "Write a story about a lighthouse.", "max_tokens": 40}
EOF

# --- A: an OpenAI-style multimodal server answering "Yes." -------------------
start_server mm --mode paced --flavor openai --answer "Yes." --image-tokens 300 --a 2 --b 0.01 --c 1
expect_exit 0 "$TOKMETER" bench --url "http://127.0.0.1:$PORT" -w "$dir/jobs.jsonl" -r 2 \
  --out "$dir/a.jsonl"
grep -q "^  panel  *3/3 correct$" "$dir/out" || fail "panel answers line: $(cat "$dir/out")"
grep -q "^  meter  *0/2 correct, 2 wrong$" "$dir/out" || fail "meter answers line: $(cat "$dir/out")"
grep -q "^  all  *3/5 correct$" "$dir/out" || fail "total answers line: $(cat "$dir/out")"
grep -q "^  panel  *1 image (png 3x2, 0.0 KB): 300 tokens each, prefill +[0-9.]* ms (TTFT difference)$" "$dir/out" ||
  fail "images line: $(cat "$dir/out")"
grep -q "^story " "$dir/out" || fail "the story job's row is missing"
grep "answers" "$dir/out" | grep -q story && fail "a job without expect has an answers line"
python3 - "$dir/a.jsonl" <<'PY' || fail "records of run A (see above)"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
runs = [r for r in recs if r["record"] == "run" and not r["calibration"]]
by = {}
for r in runs: by.setdefault(r["workload"], []).append(r)
assert sorted(by) == ["meter", "panel", "story"], sorted(by)
# repeat 3 for panel (plus its warm-up); -r 2 for the others
assert len([r for r in by["panel"] if not r["warmup"]]) == 3, by["panel"]
assert len([r for r in by["meter"] if not r["warmup"]]) == 2
for r in by["panel"]:
    a = r["answer"]
    assert a["verdict"] == "correct" and a["kind"] == "equals" and a["answer"] == "yes", a
    assert a["expected"] == "yes" and a["reason"] is None and a["exact"] is False, a
    # the image's tokens are in the server's count (300 + the text's words)
    assert r["tokens"]["prompt"] >= 300, r["tokens"]
    # a job runs at its natural length
    assert r["settings"]["exact_length"] is False, r["settings"]
    assert r["max_tokens"] == 8
for r in by["meter"]:
    assert r["answer"]["verdict"] == "wrong" and r["answer"]["expected"] == "gas | water", r
for r in by["story"]:
    assert "answer" not in r, r
    assert r["max_tokens"] == 40
sums = {r["workload"]: r for r in recs if r["record"] == "summary"}
assert sums["panel"]["answers"] == {"correct": 3, "wrong": 0, "no_answer": 0}, sums["panel"]
assert sums["meter"]["answers"] == {"correct": 0, "wrong": 2, "no_answer": 0}
assert sums["story"]["answers"] is None
im = sums["panel"]["images"]
assert im["n"] == 1 and im["tokens"] == 300 and im["tokens_per_image"] == 300, im
assert im["files"] == [{"mime": "image/png", "width": 3, "height": 2, "bytes": 29}], im
assert im["prefill_source"] == "ttft" and im["prefill_ms"] > 0, im
assert sums["meter"]["images"] is None
# the baseline: one calibration run of the panel's text without its image
base = [r for r in recs if r["record"] == "run" and r["settings"].get("image_baseline")]
assert len(base) == 1 and base[0]["calibration"] and base[0]["settings"]["images"] == 0, base
assert base[0]["tokens"]["prompt"] == im["baseline_prompt_tokens"]
assert all(r["settings"]["images"] == 1 for r in by["panel"])
PY

# the report puts each job's checked answers beside its speed (counts, never
# a bare percentage); a job without expect has no answers cell
expect_exit 0 "$TOKMETER" report "$dir/a.jsonl"
grep -q "^  panel .*3/3 correct *$" "$dir/out" || fail "report panel answers: $(cat "$dir/out")"
grep -q "^  meter .*0/2 correct, 2 wrong *$" "$dir/out" || fail "report meter answers: $(cat "$dir/out")"
grep "^  story " "$dir/out" | grep -q correct && fail "report: story has answers: $(cat "$dir/out")"
expect_exit 0 "$TOKMETER" report "$dir/a.jsonl" --html "$dir/a.html"
grep -q "3/3 correct" "$dir/a.html" || fail "the HTML report has no answers"

# --- A2: llama.cpp's server timers give the images' prefill time ---------
start_server mmll --mode paced --flavor llamacpp --answer "Yes." --image-tokens 200 --a 2 --b 0.1 --c 1
expect_exit 0 "$TOKMETER" bench --url "http://127.0.0.1:$PORT" --api openai -w "$dir/jobs.jsonl" -r 1 \
  --out "$dir/a2.jsonl"
grep -q "^  panel  *1 image (png 3x2, 0.0 KB): 200 tokens each, prefill +20.0 ms (server timer)$" "$dir/out" ||
  fail "images line with timers: $(cat "$dir/out")"

# --- B: a text-only server: the image job fails, the others are measured ----
start_server text --mode paced --flavor openai --reject-images --a 2 --b 0.01 --c 1
expect_exit 1 "$TOKMETER" bench --url "http://127.0.0.1:$PORT" -w "$dir/jobs.jsonl" -r 2 \
  --out "$dir/b.jsonl"
grep -q "image input is not supported" "$dir/err" || fail "the rejection's reason is not shown: $(cat "$dir/err")"
python3 - "$dir/b.jsonl" <<'PY' || fail "records of run B (see above)"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
timed = [r for r in recs if r["record"] == "run" and not r["calibration"] and not r["warmup"]]
panel = [r for r in timed if r["workload"] == "panel"]
assert panel and all(not r["ok"] and r["error"]["kind"] == "http" for r in panel), panel
assert all("answer" not in r for r in panel), "a failed run has no answer"
others = [r for r in timed if r["workload"] != "panel"]
assert len(others) == 4 and all(r["ok"] for r in others), others
PY

# --- C: Ollama: images as base64, a reasoning block kept out of the answer ---
start_server ol --mode paced --flavor ollama --answer "Yes" --think-tags --image-tokens 50 --a 2 --b 0.01 --c 1
printf '%s\n' '{"name": "panel", "prompt": "Is this a panel?", "images": ["img/panel.png"], "max_tokens": 16, "expect": {"equals": "yes"}}' > "$dir/one.jsonl"
expect_exit 0 "$TOKMETER" bench --url "http://127.0.0.1:$PORT" -w "$dir/one.jsonl" -r 1 --out "$dir/c.jsonl"
grep -q "^  panel  *1/1 correct$" "$dir/out" || fail "ollama answer: $(cat "$dir/out")"

# --- E: the repository's examples read and run (a server answering "4") ------
examples="$(cd "$(dirname "$0")/../../examples" && pwd)"
start_server four --mode paced --flavor openai --answer "4" --image-tokens 100 --a 1 --b 0.001 --c 0.2
expect_exit 0 "$TOKMETER" bench --url "http://127.0.0.1:$PORT" -w "$examples/altered-24.jsonl" -r 1 \
  --out "$dir/e.jsonl"
# the three jobs whose answer is 4: thirty-day months, apples on the table, e's in nevertheless
grep -q "^  all  *3/31 correct$" "$dir/out" || fail "altered-24 against '4': $(tail -8 "$dir/out")"
expect_exit 0 "$TOKMETER" bench --url "http://127.0.0.1:$PORT" -w "$examples/panel.jsonl" -r 1 \
  --out "$dir/e.jsonl"
grep -q "^  panel-check  *0/5 correct, 5 wrong$" "$dir/out" || fail "panel example: $(cat "$dir/out")"
grep -q "^  work-order-extract  *0/1 correct, 1 wrong$" "$dir/out" || fail "extract example: $(cat "$dir/out")"

# --- F: load -w FILE.jsonl: the jobs in turn, their images and turns -------
start_server ld --mode paced --flavor openai --answer "Yes." --image-tokens 300 --a 1 --b 0.01 --c 1
expect_exit 0 "$TOKMETER" load --url "http://127.0.0.1:$PORT" -w "$dir/jobs.jsonl" -c 2 \
  --ramp 0.2 --duration 0.5 --out "$dir/f.jsonl"
python3 - "$dir/f.jsonl" <<'PY' || fail "records of the load (see above)"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
ident = recs[0]
assert ident["settings"]["workloads"] == ["panel", "meter", "story"], ident["settings"]
assert ident["settings"]["workload_file"].endswith("jobs.jsonl")
reqs = [r for r in recs if r["record"] == "request"]
names = {r["workload"] for r in reqs}
assert names == {"panel", "meter", "story"}, names
# the panel's image counted by the server (300 tokens + its words)
assert all(r["tokens"]["prompt"] > 300 for r in reqs if r["workload"] == "panel")
assert all(r["tokens"]["prompt"] < 300 for r in reqs if r["workload"] != "panel")
PY
expect_exit 2 "$TOKMETER" load --url "http://127.0.0.1:$PORT" -w "$dir/jobs.jsonl" -c 2 -p 100
grep -q "the jobs are the prompts" "$dir/err" || fail "load -w FILE -p: $(cat "$dir/err")"
printf '{"name": "a"}\n' > "$dir/bad.jsonl"
expect_exit 2 "$TOKMETER" load --url "http://127.0.0.1:$PORT" -w "$dir/bad.jsonl" -c 2
grep -q "bad.jsonl:1: give \"prompt\" or \"messages\"" "$dir/err" || fail "load bad file: $(cat "$dir/err")"

# --- G: compare: accuracy beside speed, with counts and an exact test ------
start_server no --mode paced --flavor openai --answer "No." --image-tokens 300 --a 2 --b 0.01 --c 1
expect_exit 0 "$TOKMETER" bench --url "http://127.0.0.1:$PORT" -w "$dir/jobs.jsonl" -r 2 \
  --out "$dir/g.jsonl"
expect_exit 0 "$TOKMETER" compare "$dir/a.jsonl" "$dir/g.jsonl"
grep -q "^  answers: A 3/3 correct, B 0/3 correct: not distinguishable with these counts (Fisher exact p = 0.1)$" "$dir/out" ||
  fail "compare answers: $(cat "$dir/out")"
grep -q "^  answers: A 0/2 correct, B 0/2 correct" "$dir/out" || fail "compare meter answers: $(cat "$dir/out")"
expect_exit 0 "$TOKMETER" compare "$dir/a.jsonl" "$dir/g.jsonl" --json
python3 - "$dir/out" <<'PY' || fail "compare --json answers (see above)"
import json, sys
doc = json.load(open(sys.argv[1]))
ans = {e["key_a"].split(" | ")[-1]: e for e in doc["answers"]}
assert sorted(ans) == ["meter", "panel"], ans
p = ans["panel"]
assert p["a"] == {"correct": 3, "wrong": 0, "no_answer": 0} and p["b"]["wrong"] == 3, p
assert abs(p["fisher_p"] - 0.1) < 1e-9, p
PY

# --- D: bad files: refused before any request, exit 2, FILE:LINE ------------
printf '%s\n' '{"name": "a", "prompt": "x"}' '{"name": "b", "prompt": "y", "images": ["img/none.png"]}' > "$dir/bad.jsonl"
expect_exit 2 "$TOKMETER" bench --url "http://127.0.0.1:1" -w "$dir/bad.jsonl"
grep -q "bad.jsonl:2: image \"img/none.png\": No such file" "$dir/err" || fail "bad image: $(cat "$dir/err")"
printf '%s\n' '{"name": "a", "prompt": "x", "expect": {"equal": "y"}}' > "$dir/bad.jsonl"
expect_exit 2 "$TOKMETER" bench --url "http://127.0.0.1:1" -w "$dir/bad.jsonl"
grep -q "bad.jsonl:1: expect: unknown key \"equal\"" "$dir/err" || fail "bad expect: $(cat "$dir/err")"
printf '{"name": "a", "prompt": "x"\n' > "$dir/bad.jsonl"
expect_exit 2 "$TOKMETER" bench --url "http://127.0.0.1:1" -w "$dir/bad.jsonl"
grep -q "bad.jsonl:1: invalid JSON" "$dir/err" || fail "bad JSON: $(cat "$dir/err")"
expect_exit 2 "$TOKMETER" bench --url "http://127.0.0.1:1" -w "$dir/absent.jsonl"
grep -q "absent.jsonl: No such file" "$dir/err" || fail "missing file: $(cat "$dir/err")"
expect_exit 2 "$TOKMETER" bench --url "http://127.0.0.1:1" -w "$dir/jobs.jsonl" -p 100
grep -q "goes alone" "$dir/err" || fail "a file with -p: $(cat "$dir/err")"
[ "$(wc -l < "$dir/err")" -le 2 ] || fail "a bad file gets a short error: $(cat "$dir/err")"
echo "$tm_test_name: ok"
