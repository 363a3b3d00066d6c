#!/usr/bin/env bash
# test_load_more: `tokmeter load --url` on what asserts no timing (so it runs
# beside other tests; test_load.sh holds the timed truth and runs alone):
# the ceiling beside each level with -m, /metrics counters that disagree, are
# garbage or go back, llama.cpp's /slots (another client, levels above the
# slots), bench's workloads as a mixed load, and bad usage (one line, exit 2).
set -euo pipefail
: "${TOKMETER:?}" "${TOKMETER_FAKESERVER:?}" "${TOKMETER_SOURCE_DIR:?}"
. "$(dirname "$0")/../cli/lib.sh"
export TOKMETER_PROBE_QUICK=1 NO_PROXY='*'
unset OPENAI_API_KEY
. "$(dirname "$0")/load_lib.sh"

start_batching --slots 4 --c0 20 --c1 1 --b 0.5
# --- 1b'. -m FILE: the aggregate decode ceiling beside each level, on a
# crafted probe (an AVX-512 VNNI machine's figures, whatever this CPU) -------
model="$TOKMETER_FIXTURES/gguf/tiny-llama-Q4_0.gguf"
expect_exit 0 "$TOKMETER" probe
python3 "$TOKMETER_SOURCE_DIR/tests/cli/craft_probe.py" "$TOKMETER_CACHE_DIR" avx512_vnni >/dev/null ||
  fail "crafting an avx512_vnni probe"
expect_exit 0 "$TOKMETER" load --url "http://127.0.0.1:$BPORT" -c 1,4 -p 50 -n 30 --ramp 0.5 \
  --duration 1.5 -m "$model" --out "$dir/g.jsonl"
grep -q "ceiling .* tok/s (.*%, memory)" "$dir/out" || fail "-m: no ceiling in the table: $(cat "$dir/out")"
python3 - "$dir/g.jsonl" <<'PY' || fail "-m: records"
import json, math, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert recs[0]["model"]["file"].endswith("tiny-llama-Q4_0.gguf"), recs[0]["model"]
lv = {r["concurrency"]: r for r in recs if r["record"] == "load"}
for c, l in lv.items():
    assert l["ceiling_batch"] == c and l["ceiling_depth"] == 65, l
    cl = l["aggregate_decode_ceiling_tok_s"]
    assert cl > 0 and math.isclose(l["percent_of_ceiling"], 100 * l["aggregate_output_tok_s"] / cl), l
# four streams share one read of the weights: a higher ceiling than one
assert lv[4]["aggregate_decode_ceiling_tok_s"] > 2 * lv[1]["aggregate_decode_ceiling_tok_s"], lv
assert any(f["code"] == "batch_turn" for f in recs[-1]["findings"]), recs[-1]["findings"]
PY
expect_exit 2 "$TOKMETER" load --url "http://127.0.0.1:$BPORT" -c 1 -m "$dir/none.gguf"
grep -q "none.gguf" "$dir/err" || fail "-m missing file: $(cat "$dir/err")"

# --- 1c. counters that disagree with the answers: a finding, the run goes on --
start_batching --slots 4 --c0 5 --c1 1 --b 0.5 --metrics-scale 2
expect_exit 0 "$TOKMETER" load --url "http://127.0.0.1:$BPORT" -c 2 -p 50 -n 24 --ramp 0 \
  --duration 1 --out "$dir/m.jsonl"
grep -q '"server_counters_disagree"' "$dir/m.jsonl" || fail "counters: no finding: $(tail -1 "$dir/m.jsonl")"
grep -q "warning c=2: the server's /metrics counted" "$dir/out" || fail "counters: $(cat "$dir/out")"

# --- 1e. /metrics that is not counters, or counters that go back ---------------
start_batching --slots 4 --c0 5 --c1 1 --b 0.5 --metrics-garbage text
expect_exit 0 "$TOKMETER" load --url "http://127.0.0.1:$BPORT" -c 2 -p 50 -n 24 --ramp 0 \
  --duration 1 --json --out "$dir/g.jsonl"
python3 - "$dir/out" <<'PY' || fail "garbage /metrics: the level (see above)"
import json, sys
l = [json.loads(x) for x in open(sys.argv[1]) if x.strip()][0]
assert l["server_counters"] is None and l["requests_ok"] > 0, l
PY
if grep -q "server_counters_disagree" "$dir/g.jsonl"; then fail "garbage /metrics judged"; fi
start_batching --slots 4 --c0 5 --c1 1 --b 0.5 --metrics-garbage backwards
expect_exit 0 "$TOKMETER" load --url "http://127.0.0.1:$BPORT" -c 2 -p 50 -n 24 --ramp 0 \
  --duration 1 --out "$dir/bw.jsonl"
grep -q '"server_counters_reset"' "$dir/bw.jsonl" || fail "counters back: no finding"
if grep -q "server_counters_disagree" "$dir/bw.jsonl"; then fail "counters back: judged"; fi

# --- 1f. llama.cpp's /slots: another client on the server; above the slots -----
start_batching --slots 2 --c0 5 --c1 1 --b 0.5 --busy-slots 1
expect_exit 0 "$TOKMETER" load --url "http://127.0.0.1:$BPORT" -c 1,4 -p 50 -n 24 --ramp 0 \
  --duration 1 --json --out "$dir/sl.jsonl"
python3 - "$dir/out" "$dir/sl.jsonl" <<'PY' || fail "/slots (see above)"
import json, sys
levels = [json.loads(x) for x in open(sys.argv[1]) if x.strip()]
for l in levels:
    assert l["server_slots"]["total"] == 2 and l["server_slots"]["busy_before"] == 1, l
end = [json.loads(x) for x in open(sys.argv[2])][-1]
codes = [(f["code"], (f["config"] or {}).get("test")) for f in end["findings"]]
assert ("server_busy", "c=1") in codes and ("above_slots", "c=4") in codes, codes
assert sum(c == "above_slots" for c, _ in codes) == 1, codes
PY

# --- 1d. -w: bench's workloads in turn, a mixed load ---------------------------
expect_exit 0 "$TOKMETER" load --url "http://127.0.0.1:$BPORT" -c 2 -w classify,generate --ramp 0 \
  --duration 2 --out "$dir/w.jsonl"
python3 - "$dir/w.jsonl" <<'PY' || fail "-w: records"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert recs[0]["settings"]["workloads"] == ["classify", "generate"], recs[0]["settings"]
reqs = [r for r in recs if r["record"] == "request"]
names = {r["workload"] for r in reqs}
assert names == {"classify", "generate"}, names
lv = [r for r in recs if r["record"] == "load"][0]
assert lv["short_decode"] > 0, lv  # classify's 16 tokens give no decode rate
PY

# --- 4. bad usage: one line, exit 2, nothing sent ---------------------------------
for args in "-c 1 --ramp 1" "--url http://127.0.0.1:$BPORT" "--url http://127.0.0.1:$BPORT -c 0" \
  "--url http://127.0.0.1:$BPORT -c 1 --rate 2" "--url http://127.0.0.1:$BPORT -c 2 --arrivals gamma" \
  "--url http://127.0.0.1:$BPORT --rate 2 --burstiness 2" "--url http://127.0.0.1:$BPORT -c 1 -p x" \
  "--url http://127.0.0.1:$BPORT -c 1 --out /dev/full" "--url ftp://x -c 1" "--url http://127.0.0.1:$BPORT -c 1 --bogus" \
  "--url http://127.0.0.1:$BPORT -c 1 --find-capacity" "--url http://127.0.0.1:$BPORT -c 1 --slo ttft=fast" \
  "--url http://127.0.0.1:$BPORT -c 1 -w bogus" "--url http://127.0.0.1:$BPORT -c 1 -w generate -n 5"; do
  # shellcheck disable=SC2086
  expect_exit 2 "$TOKMETER" load $args
  [ "$(grep -cv "^Try 'tokmeter" "$dir/err")" = 1 ] || fail "load $args: not one line: $(cat "$dir/err")"
done
expect_exit 0 "$TOKMETER" load --help
[ "$(wc -l <"$dir/out")" -le 45 ] || fail "load --help is longer than 45 lines"
echo "test_load: ok"
