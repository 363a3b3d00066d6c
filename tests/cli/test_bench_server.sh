#!/usr/bin/env bash
# test_bench_server: `tokmeter bench --url` end to end against the loopback fake
# servers (tests/server/): the three workloads and their records, the cached-
# prompt trap (a real llama.cpp exchange replayed), failures (refused, broken
# stream, Ctrl-C) recorded and exit 1, a buffered stream, Ollama and an
# OpenAI server without timers, secrets kept out, and bad usage (exit 2).
set -euo pipefail
: "${TOKMETER:?}" "${TOKMETER_FAKESERVER:?}" "${TOKMETER_FIXTURES:?}"
. "$(dirname "$0")/lib.sh"
export TOKMETER_PROBE_QUICK=1 NO_PROXY='*'
unset OPENAI_API_KEY

# start_server NAME ARGS...: starts a fake server, sets PORT
# --- A: the three workloads against a llama.cpp-like server -----------------
start_server llama --mode paced --flavor llamacpp --template-tokens 14 --prompt-cache \
  --a 5 --b 0.02 --c 1
export OPENAI_API_KEY=sk-test-SECRET-0123456789abcdef
expect_exit 0 "$TOKMETER" bench --url "http://127.0.0.1:$PORT" -r 2 --out "$dir/a.jsonl"
grep -q "^classify " "$dir/out" && grep -q "^extract " "$dir/out" && grep -q "^generate " "$dir/out" ||
  fail "table rows missing: $(cat "$dir/out")"
grep "^classify " "$dir/out" | grep -q -- "- (a)" || fail "classify decode must be blank (16 < 24 tokens)"
grep -q "SECRET" "$dir/a.jsonl" "$dir/out" "$dir/err" && fail "the API key leaked into output or records"
python3 - "$dir/a.jsonl" <<'PY' || fail "records of run A (see above)"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
kinds = [r["record"] for r in recs]
assert kinds[0] == "identity" and kinds[-1] == "end", kinds
# steal over the runs: a share of the busy time, or null when unknown
st = recs[-1]["cpu_steal_share"]
assert st is None or 0 <= st <= 1, recs[-1]
ident = recs[0]["id"]
assert all(r.get("identity") == ident for r in recs[1:]), "records not tied to the identity"
runs = [r for r in recs if r["record"] == "run"]
# 2 calibration + 3 workloads x (1 warm-up + 2 timed)
assert len(runs) == 2 + 3 * 3, len(runs)
timed = [r for r in runs if not r["warmup"] and not r["calibration"]]
assert len(timed) == 6 and all(r["ok"] for r in timed), timed
by = {}
for r in timed: by.setdefault(r["workload"], []).append(r)
for r in by["extract"]:
    assert abs(r["tokens"]["prompt"] - 1700) <= 0.03 * 1700, r["tokens"]
for r in by["generate"]:
    assert r["tokens"]["completion"] == 400, r["tokens"]
    assert len(r["client"]["chunk_arrival_ms"]) == 400, len(r["client"]["chunk_arrival_ms"])
    assert "cache:baseline" in r["verdicts"], r["verdicts"]
    assert "stream:token-by-token" in r["verdicts"], r["verdicts"]
    d = r["rates"]["decode_tok_s"]
    assert abs(d["client"] - 1000) < 100 and d["source"] == "server", d
for r in by["classify"]:
    assert r["rates"]["decode_tok_s"]["headline"] is None, "decode must be null below 24 tokens"
sums = [r for r in recs if r["record"] == "summary"]
assert [s["workload"] for s in sums] == ["classify", "extract", "generate"], sums
for s in sums:  # steal over each workload's timed runs: a share, or null when unknown
    assert "cpu_steal_share" in s, s
    assert s["cpu_steal_share"] is None or 0 <= s["cpu_steal_share"] <= 1, s
end = recs[-1]
assert end["runs"] == 6 and not any(end["failed"].values()), end
PY

# --json: the summaries on stdout, one JSON object per line
expect_exit 0 "$TOKMETER" bench --url "http://127.0.0.1:$PORT" -w classify -r 1 --json --out "$dir/j.jsonl"
python3 -c 'import json,sys; l=[json.loads(x) for x in open(sys.argv[1])]; assert len(l)==1 and l[0]["record"]=="summary", l' "$dir/out" ||
  fail "--json output: $(cat "$dir/out")"
unset OPENAI_API_KEY

# --- ceilings in the run records (docs/records.md, run `ceiling`) -------------
# Without -m no record carries a ceiling: null, never a guess.
python3 - "$dir/a.jsonl" <<'PY' || fail "run A (no -m) must carry no ceiling (see above)"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
for r in recs:
    if r["record"] in ("run", "summary"):
        assert r["ceiling"] is None and r["percent_of_ceiling"] is None, r
PY
# With -m FILE every run carries the ceiling object the summaries carry, at its
# own prompt (the server's count) and max_tokens, and its percentages.
# The probe is an AVX-512 VNNI machine's (craft_probe.py), so a Q4_0 file's
# prefill ceiling is on the int8 path on any CPU.
model="$TOKMETER_FIXTURES/gguf/tiny-llama-Q4_0.gguf"
expect_exit 0 "$TOKMETER" probe
python3 "$(dirname "$0")/craft_probe.py" "$TOKMETER_CACHE_DIR" avx512_vnni >/dev/null ||
  fail "crafting an avx512_vnni probe"
expect_exit 0 "$TOKMETER" bench --url "http://127.0.0.1:$PORT" -m "$model" -w classify,generate \
  -r 2 --out "$dir/m.jsonl"
grep -q "% of ceiling" "$dir/out" || fail "-m: no % of ceiling in the table: $(cat "$dir/out")"
python3 - "$dir/m.jsonl" <<'PY' || fail "run records with -m (see above)"
import json, math, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
runs = [r for r in recs if r["record"] == "run"]
sums = {s["workload"]: s for s in recs if s["record"] == "summary"}
assert runs and set(sums) == {"classify", "generate"}, (len(runs), list(sums))
# named by its general.file_type, though its tied Q8_0 embedding holds most bytes
named = {r["model"]["type"] for r in recs if r["record"] == "identity"}
assert named == {"Q4_0"}, named
close = lambda a, b: math.isclose(a, b, rel_tol=1e-9)
for r in runs:
    c, p = r["ceiling"], r["percent_of_ceiling"]
    assert c is not None and p is not None, r
    assert c["read_bandwidth_bytes_s"] > 0 and c["decode_ceiling_tok_s"] > 0, c
    assert c["prefill_ceiling_tok_s"] > 0, c  # every run here reported its prompt
    pf = r["rates"]["prefill_tok_s"]["headline"]
    assert pf is not None and close(p["prefill"], 100 * pf / c["prefill_ceiling_tok_s"]), (p, pf, c)
    dc = r["rates"]["decode_tok_s"]["headline"]
    if dc is None:
        assert p["decode"] is None, p  # blank by rule (classify: 16 tokens)
    else:
        assert close(p["decode"], 100 * dc / c["decode_ceiling_tok_s"]), (p, dc, c)
    if r["calibration"] or r["warmup"]:
        continue
    # the summary's figures: same bandwidth, same model analysis; the same
    # ceiling where the run's prompt is the summary's median prompt
    s = sums[r["workload"]]
    assert close(c["read_bandwidth_bytes_s"], s["ceiling"]["read_bandwidth_bytes_s"]), (c, s["ceiling"])
    if r["tokens"]["prompt"] == s["tokens"]["prompt"]["median"]:
        for k in ("decode_ceiling_tok_s", "prefill_ceiling_tok_s"):
            assert close(c[k], s["ceiling"][k]), (k, c, s["ceiling"])
gen = [r for r in runs if r["workload"] == "generate" and not r["warmup"]]
assert len(gen) == 2 and all(r["percent_of_ceiling"]["decode"] > 0 for r in gen), gen
# The decode ceiling by hand (docs/design.md "The ceiling"): bandwidth / the bytes
# per token averaged over the depths the run's tokens were generated at,
# prompt .. prompt + max_tokens - 1. Bytes at depth d = the file's bytes per
# token at depth 0 (the identity's model.bytes_per_token, rounded to a byte)
# + the KV cache: tiny-llama has 4 layers x 2 KV heads x (32 + 32) x 2 bytes
# (F16) = 1024 bytes per token of context, so the mean is at prompt +
# (max_tokens - 1) / 2.
ident = [x for x in recs if x["record"] == "identity"][0]
w = ident["model"]["bytes_per_token"]
for r in runs:
    c, n, prompt = r["ceiling"], r["max_tokens"], r["tokens"]["prompt"]
    want = c["read_bandwidth_bytes_s"] / (w + 1024 * (prompt + (n - 1) / 2))
    assert math.isclose(c["decode_ceiling_tok_s"], want, rel_tol=1e-6), (c, n, prompt, want)
    # ... and the parts it is made of, in the record
    assert math.isclose(c["bytes_per_token"], w + 1024 * (prompt + (n - 1) / 2), rel_tol=1e-9), c
    assert math.isclose(c["decode_ceiling_tok_s"], c["read_bandwidth_bytes_s"] / c["bytes_per_token"], rel_tol=1e-9), c
    # the prefill ceiling: the compute rate of its path over the FLOPs per
    # prompt token, both in the record
    assert c["compute_path"] in ("int8", "f32"), c
    assert math.isclose(c["prefill_ceiling_tok_s"], c["compute_ops_s"] / c["flops_per_token"], rel_tol=1e-9), c
PY
# The compute rate is the probe's best on that path (a Q4_0 file: int8)
"$TOKMETER" probe --cached --json >"$dir/probe.json" 2>/dev/null || fail "probe --cached --json"
python3 - "$dir/m.jsonl" "$dir/probe.json" <<'PY' || fail "run ceilings' compute against the probe (see above)"
import json, math, sys
pj = json.load(open(sys.argv[2]))
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["record"] != "run":
        continue
    c = r["ceiling"]
    assert c["compute_path"] == "int8", c
    assert math.isclose(c["compute_ops_s"], pj["compute_int8_ops"], rel_tol=1e-9), (c, pj["compute_int8_ops"])
PY
# ... so `report` shows the % of ceiling columns and the CSV its ceilings
expect_exit 0 "$TOKMETER" report "$dir/m.jsonl"
grep -q "PF % of ceiling" "$dir/out" && grep -q "DC % of ceiling" "$dir/out" ||
  fail "report: no % of ceiling columns: $(cat "$dir/out")"
grep "^  generate " "$dir/out" | grep -q "%.*%" || fail "report: generate without percentages: $(cat "$dir/out")"
expect_exit 0 "$TOKMETER" report --format csv "$dir/m.jsonl"
python3 - "$dir/out" <<'PY' || fail "report csv: no ceiling_tok_s (see above)"
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["metric"] in ("prefill_tok_s", "decode_tok_s")]
assert rows and all(float(r["ceiling_tok_s"]) > 0 and float(r["percent_of_ceiling"]) > 0 for r in rows), rows
PY
# ... and `compare` the ratio the ceilings predict: the same runs with the
# run ceilings' bandwidth doubled (another machine's) predict decode 2x
python3 - "$dir/m.jsonl" "$dir/m2.jsonl" <<'PY'
import json, sys
with open(sys.argv[2], "w") as out:
    for l in open(sys.argv[1]):
        r = json.loads(l)
        if r["record"] == "run":
            r["ceiling"]["read_bandwidth_bytes_s"] *= 2
        out.write(json.dumps(r) + "\n")
PY
expect_exit 0 "$TOKMETER" compare "$dir/m.jsonl" "$dir/m2.jsonl"
grep "^  decode_tok_s " "$dir/out" | grep -q "2.000 (+100.0%) from bandwidth" ||
  fail "compare: no ceiling prediction from the runs' bandwidth: $(cat "$dir/out")"
# ... and prefill from the compute rate, now that server runs carry it: a
# machine with 3x the compute predicts prefill 3x
python3 - "$dir/m.jsonl" "$dir/m3.jsonl" <<'PY'
import json, sys
with open(sys.argv[2], "w") as out:
    for l in open(sys.argv[1]):
        r = json.loads(l)
        if r["record"] == "run":
            r["ceiling"]["compute_ops_s"] *= 3
        out.write(json.dumps(r) + "\n")
PY
expect_exit 0 "$TOKMETER" compare "$dir/m.jsonl" "$dir/m3.jsonl"
grep "^  prefill_tok_s " "$dir/out" | grep -q "3.000 (+200.0%) from compute" ||
  fail "compare: no prefill prediction from the runs' compute: $(cat "$dir/out")"

# a custom workload and a prompt file
printf 'Summarise the incident report in two sentences.\n' > "$dir/prompt.txt"
expect_exit 0 "$TOKMETER" bench --url "http://127.0.0.1:$PORT" -n 30 --prompt-file "$dir/prompt.txt" -r 1 --out "$dir/p.jsonl"
grep -q "^prompt-file " "$dir/out" || fail "prompt-file workload missing: $(cat "$dir/out")"

# --list-models
expect_exit 0 "$TOKMETER" bench --url "http://127.0.0.1:$PORT" --list-models
[ -s "$dir/out" ] || fail "--list-models printed nothing"

# --- B: the cached-prompt trap, replayed from a real llama.cpp exchange -----
start_server cached --mode replay --fixtures "$TOKMETER_FIXTURES/llama-server" \
  --replay-file llama-server-chat-long-repeat-cached.json --time-scale 0.05
expect_exit 0 "$TOKMETER" bench --url "http://127.0.0.1:$PORT" --api openai -w generate -r 2 --out "$dir/b.jsonl"
# the short screen: the finding's brief, led by its severity; the lines
# under the table only with -v
grep -q "^warning generate: prompt cache hit in 2 of 2 runs: left out of prefill$" "$dir/out" ||
  fail "cache hits not reported as a finding: $(cat "$dir/out")"
grep -q "decode curve" "$dir/out" && fail "a -v detail on the short screen: $(cat "$dir/out")"
# progress on a non-terminal stderr: one line per workload with its place in
# the plan (none with --no-progress)
grep -q "^bench: \[1/1\] generate: warm-up and 2 timed runs$" "$dir/err" ||
  fail "no progress line for the workload: $(cat "$dir/err")"
python3 - "$dir/b.jsonl" <<'PY' || fail "cached trap records (see above)"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
timed = [r for r in recs if r["record"] == "run" and not r["warmup"] and not r["calibration"]]
assert timed and all("cache:hit" in r["verdicts"] for r in timed), [r["verdicts"] for r in timed]
s = [r for r in recs if r["record"] == "summary"][0]
assert s["verdicts"]["cache:hit"] == 2, s["verdicts"]
# findings as data: the summary carries its workload's, the end record the
# invocation's (docs/records.md "findings")
hit = [f for f in s["findings"] if f["code"] == "cache_hit"]
assert len(hit) == 1 and hit[0]["severity"] == "warning", s["findings"]
assert hit[0]["config"]["workload"] == "generate", hit[0]
assert hit[0]["figures"] == {"cache_hit_runs": 2, "ok_runs": 2}, hit[0]["figures"]
end = recs[-1]
assert end["record"] == "end" and any(f["code"] == "cache_hit" for f in end["findings"]), end
PY
expect_exit 0 "$TOKMETER" bench -v --no-progress --url "http://127.0.0.1:$PORT" --api openai -w generate -r 2 --out "$dir/b.jsonl"
grep -q "^bench: \[" "$dir/err" && fail "--no-progress printed progress: $(cat "$dir/err")"
grep -q "^  generate: prompt cache hit in 2 of 2 runs: excluded from prefill and TTFT$" "$dir/out" ||
  fail "-v: the line under the table: $(cat "$dir/out")"

# --- C: nothing listening -> exit 1, one clear line -------------------------
free_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
expect_exit 1 "$TOKMETER" bench --url "http://127.0.0.1:$free_port" --api openai -r 1 --out "$dir/c.jsonl"
grep -qi "refused\|connect" "$dir/err" || fail "refused: $(cat "$dir/err")"
expect_exit 1 "$TOKMETER" bench --url "http://127.0.0.1:$free_port" -r 1 --out "$dir/c2.jsonl"
grep -qi "no known LLM API\|connect\|refused" "$dir/err" || fail "detection on a dead port: $(cat "$dir/err")"

# --- D: a server that breaks after the first token: runs fail, exit 1 -------
start_server broken --mode break --break after-first-token
expect_exit 1 "$TOKMETER" bench --url "http://127.0.0.1:$PORT" --api openai -w generate -r 2 --out "$dir/d.jsonl"
grep -q "runs failed" "$dir/err" || fail "failed runs not reported: $(cat "$dir/err")"
python3 - "$dir/d.jsonl" <<'PY' || fail "failed-run records (see above)"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
timed = [r for r in recs if r["record"] == "run" and not r["warmup"] and not r["calibration"]]
# the warm-up and the first timed run fail the same way: the second is not
# sent (two consecutive failures of one kind end a workload, issue 31)
assert len(timed) == 1 and not any(r["ok"] for r in timed), timed
assert all(r["error"]["kind"] and r["error"]["message"] for r in timed), [r["error"] for r in timed]
summ = [r for r in recs if r["record"] == "summary"][0]
assert summ["skipped"] == {"runs": 1, "after": timed[0]["error"]["kind"]}, summ["skipped"]
assert recs[-1]["record"] == "end" and sum(recs[-1]["failed"].values()) == 1, recs[-1]
PY
# with -m: a run whose server reported no prompt count (cut before its usage)
# has the machine's bandwidth but no ceiling (its depth is not known), nor has
# the summary of a workload none of whose runs reported one
expect_exit 1 "$TOKMETER" bench --url "http://127.0.0.1:$PORT" --api openai -m "$model" -w generate \
  -r 2 --out "$dir/dm.jsonl"
grep -q "per workload: generate prefill - / decode - tok/s" "$dir/out" ||
  fail "a ceiling at an unknown depth in the table: $(cat "$dir/out")"
python3 - "$dir/dm.jsonl" <<'PY' || fail "ceilings of runs without a prompt count (see above)"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
some = [r for r in recs if r["record"] in ("run", "summary")]
assert len(some) >= 3, some
for r in some:
    assert r["record"] == "summary" or r["tokens"]["prompt"] is None, r["tokens"]
    c = r["ceiling"]
    assert c["read_bandwidth_bytes_s"] > 0, c
    assert c["decode_ceiling_tok_s"] is None and c["prefill_ceiling_tok_s"] is None, c
    assert r["percent_of_ceiling"] == {"prefill": None, "decode": None}, r["percent_of_ceiling"]
PY

# --- E: a buffering proxy: all tokens in one chunk --------------------------
start_server buffered --mode buffered --flavor llamacpp --a 5 --b 0.02 --c 1
expect_exit 0 "$TOKMETER" bench --url "http://127.0.0.1:$PORT" -w generate -r 1 --out "$dir/e.jsonl"
grep -q "buffered" "$dir/out" || fail "buffered stream not reported: $(cat "$dir/out")"
python3 - "$dir/e.jsonl" <<'PY' || fail "buffered records"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
timed = [r for r in recs if r["record"] == "run" and not r["warmup"] and not r["calibration"]]
assert all("stream:buffered" in r["verdicts"] for r in timed), [r["verdicts"] for r in timed]
assert all(r["rates"]["decode_tok_s"]["client"] is None for r in timed), "inter-token figures must be withheld"
PY

# --- F: Ollama (NDJSON, durations in ns) -------------------------------------
start_server ollama --mode paced --flavor ollama --a 5 --b 0.02 --c 1
expect_exit 0 "$TOKMETER" bench --url "http://127.0.0.1:$PORT" -w generate -r 1 --out "$dir/f.jsonl"
grep -q "(ollama" "$dir/out" || fail "Ollama not detected: $(cat "$dir/out")"
grep "^generate " "$dir/out" | grep -q "server" || fail "Ollama's own timers not used: $(cat "$dir/out")"
# --cold: keep_alive 0 unloads after each answer, so each cold run pays a load
expect_exit 0 "$TOKMETER" bench --url "http://127.0.0.1:$PORT" -w classify -r 2 --cold --out "$dir/f2.jsonl"
grep -q "model load (--cold, 2 loads)" "$dir/out" || fail "--cold series missing: $(cat "$dir/out")"
python3 - "$dir/f2.jsonl" <<'PY' || fail "--cold records"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
cold = [r for r in recs if r["record"] == "run" and r["cold"] and not r["calibration"]]
assert len(cold) == 2, len(cold)
PY

# --- G: OpenAI-compatible without timers: client prefill, a lower bound -----
start_server openai --mode paced --flavor openai --a 5 --b 0.02 --c 1
expect_exit 0 "$TOKMETER" bench --url "http://127.0.0.1:$PORT" -w generate -r 1 --out "$dir/g.jsonl"
grep "^generate " "$dir/out" | grep -q "client, lower bound" || fail "client prefill not labelled: $(cat "$dir/out")"
expect_exit 0 "$TOKMETER" bench --url "http://127.0.0.1:$PORT" -w classify -r 1 --cold --out "$dir/g2.jsonl"
grep -q "only Ollama can unload" "$dir/err" || fail "--cold on OpenAI: no warning: $(cat "$dir/err")"

# --- H: Ctrl-C during a stalled stream: exit 1 quickly, records kept --------
start_server stall --mode break --break stall
set +e
"$TOKMETER" bench --url "http://127.0.0.1:$PORT" --api openai -w generate -r 3 --idle-timeout 60 --out "$dir/h.jsonl" >"$dir/out" 2>"$dir/err" &
bench_pid=$!
sleep 1.5
kill -INT "$bench_pid"
start=$(date +%s%N)
wait "$bench_pid"
got=$?
set -e
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ "$got" = 1 ] || fail "Ctrl-C: exit $got, expected 1 (stderr: $(cat "$dir/err"))"
[ "$elapsed_ms" -lt 3000 ] || fail "Ctrl-C took $elapsed_ms ms to stop"
grep -qi "interrupted" "$dir/err" || fail "Ctrl-C not reported: $(cat "$dir/err")"
head -1 "$dir/h.jsonl" | grep -q '"record":"identity"' || fail "identity lost after Ctrl-C"
tail -1 "$dir/h.jsonl" | grep -q '"interrupted":true' || fail "end record missing after Ctrl-C: $(tail -1 "$dir/h.jsonl")"

# --- bad usage: exit 2, one line --------------------------------------------
expect_exit 2 "$TOKMETER" bench --url "http://127.0.0.1:1" --api bogus
expect_exit 2 "$TOKMETER" bench --url "http://127.0.0.1:1" --reps 0
expect_exit 2 "$TOKMETER" bench --url "http://127.0.0.1:1" -w nosuch
expect_exit 2 "$TOKMETER" bench --url "http://127.0.0.1:1" --prompt-file "$dir/missing.txt"
expect_exit 2 "$TOKMETER" bench --url "ftp://127.0.0.1:1" --api openai
expect_exit 2 "$TOKMETER" bench --url "http://127.0.0.1:1" --api-key-env TOKMETER_NO_SUCH_VAR
expect_exit 2 "$TOKMETER" bench --workload classify
expect_exit 2 "$TOKMETER" bench --url "http://127.0.0.1:1" --idle-timeout abc
expect_exit 2 "$TOKMETER" bench --url "http://127.0.0.1:1" --hugepages

# a server that accepts connections and never answers: detection gives up
# after --timeout when that is shorter than its own 10 s, and says so
python3 - "$dir/silent.port" <<'PY' &
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(16)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
held, start = [], time.time()
s.settimeout(0.5)
while time.time() - start < 60:
    try:
        held.append(s.accept()[0])
    except OSError:
        pass
PY
pids+=($!)
for _ in $(seq 100); do [ -s "$dir/silent.port" ] && break; sleep 0.05; done
SPORT=$(cat "$dir/silent.port") || fail "silent server did not start"
expect_exit 1 "$TOKMETER" bench --url "http://127.0.0.1:$SPORT" -w classify --timeout 2 \
  --out "$dir/s.jsonl"
grep -q "cannot reach .*within 2.0 s" "$dir/err" || fail "silent server: $(cat "$dir/err")"
# A llama.cpp server on this machine whose build reports AMX_INT8 = 1 runs its
# prefill on the int8 tiles: its prefill ceiling is their rate (a note says
# so), when the probe measured them. The probe is crafted for three machine
# classes (craft_probe.py), so this runs the same on any CPU:
#   class        server's AMX_INT8   prefill ceiling from
#   amx          1                   the tiles (a note)
#   amx          0                   the int8 vector rate
#   avx512_vnni  1                   the int8 vector rate (no tiles measured: no note)
#   avx2         0                   the f32 rate (no int8 path at all)
CRAFT="$(dirname "$0")/craft_probe.py"
for combo in "amx 1 int8_tile" "amx 0 int8" "avx512_vnni 1 int8" "avx2 0 f32"; do
  read -r cls amx want <<<"$combo"
  python3 "$CRAFT" "$TOKMETER_CACHE_DIR" "$cls" >/dev/null || fail "crafting a $cls probe"
  start_server "amx$amx$cls" --mode paced --flavor llamacpp --a 5 --b 0.02 --c 1 \
    --system-info "CPU : AVX2 = 1 | AVX512 = 1 | AVX512_VNNI = 1 | AMX_INT8 = $amx |"
  expect_exit 0 "$TOKMETER" bench --url "http://127.0.0.1:$PORT" -m "$model" -w classify -r 1 \
    --out "$dir/amx$amx$cls.jsonl"
  if [ "$want" = int8_tile ]; then
    grep -qE "note: the server's build uses amx_int8 tiles: its prefill ceiling is their int8 rate, [0-9.]+ [TPG]OPS" \
      "$dir/err" || fail "$combo: no note: $(cat "$dir/err")"
  else
    grep -q "amx_int8 tiles" "$dir/err" && fail "$combo: the tiles' note: $(cat "$dir/err")"
  fi
  grep -q "not known" "$dir/out" "$dir/err" && fail "$combo: a ceiling not known: $(cat "$dir/out")"
  python3 - "$dir/amx$amx$cls.jsonl" "$TOKMETER_CACHE_DIR" "$want" <<'PY' || fail "$combo: the prefill ceiling's path (see above)"
import glob, json, math, sys
p = json.load(open(glob.glob(sys.argv[2] + "/probe*.json")[0]))
want_path = sys.argv[3]
want_ops = {"int8_tile": p["compute_int8_tile_ops"], "int8": p["compute_int8_ops"],
            "f32": p["compute_f32_flops"]}[want_path]
runs = [json.loads(l) for l in open(sys.argv[1])]
runs = [r for r in runs if r["record"] in ("run", "summary")]
assert runs
for r in runs:
    c = r["ceiling"]
    assert c["compute_path"] == want_path or (want_path == "f32" and c["compute_path"].startswith("f32")), (c, want_path)
    assert math.isclose(c["compute_ops_s"], want_ops, rel_tol=1e-9), (c, want_ops)
    assert math.isclose(c["prefill_ceiling_tok_s"], want_ops / c["flops_per_token"], rel_tol=1e-9), c
PY
done
echo "test_bench_server: ok"
