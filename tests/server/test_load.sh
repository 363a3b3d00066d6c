#!/usr/bin/env bash
# test_load: `tokmeter load --url` against a server whose truth is known
# (tests/server/batching_server.py: slots, a queue, a step of S streams
# taking c0 + c1 x S ms, each request's times served at GET /truth): the
# --json contract's keys; tokens in the window, queue time and inter-token
# gaps recovered from the client's side within the issue's tolerances (2%,
# 2 ms); the knee where the arithmetic puts it; the open loop's counts; and
# faults under load (errors, a refused server, stalls) counted by kind while
# the run goes on, every record kept. It runs alone (tests/CMakeLists.txt);
# what asserts no timing is in test_load_more.sh.
set -euo pipefail
: "${TOKMETER:?}" "${TOKMETER_FAKESERVER:?}" "${TOKMETER_SOURCE_DIR:?}"
. "$(dirname "$0")/../cli/lib.sh"
export TOKMETER_PROBE_QUICK=1 NO_PROXY='*'
unset OPENAI_API_KEY

. "$(dirname "$0")/load_lib.sh"

# --- 1. closed loop: the contract, the truth, the knee ------------------------
start_batching --slots 4 --c0 20 --c1 1 --b 0.5
expect_exit 0 "$TOKMETER" load --url "http://127.0.0.1:$BPORT" -c 1,2,4,8 -p 50 -n 40 \
  --ramp 1 --duration 3 --json --out "$dir/c.jsonl"
curl -s "http://127.0.0.1:$BPORT/truth" >"$dir/truth.json"
python3 - "$dir/out" "$dir/c.jsonl" "$dir/truth.json" <<'PY' || fail "closed loop (see above)"
import json, sys
out, recs_path, truth_path = sys.argv[1:]
levels = [json.loads(l) for l in open(out) if l.strip()]
assert [l["concurrency"] for l in levels] == [1, 2, 4, 8], levels
keys = ("concurrency request_rate requests_ok requests_failed window_s aggregate_output_tok_s "
        "aggregate_prompt_tok_s requests_per_s per_stream_decode_tok_s ttft_ms ttfat_ms itl_ms "
        "tpot_ms e2e_ms queue_ms ttft_sched_ms aggregate_decode_ceiling_tok_s").split()
for l in levels:
    for k in keys:
        assert k in l, (k, l)
    assert l["request_rate"] is None and l["ttft_sched_ms"] is None, l
    for k in ("per_stream_decode_tok_s", "ttft_ms", "ttfat_ms", "itl_ms", "tpot_ms", "e2e_ms",
              "queue_ms"):
        assert set(l[k]) >= {"min", "p50", "p90", "p95", "p99", "max", "mean"}, (k, l[k])
    assert l["requests_failed"] == 0 and l["requests_ok"] > 0, l
recs = [json.loads(l) for l in open(recs_path)]
assert recs[0]["record"] == "identity" and recs[-1]["record"] == "end", recs[-1]
assert sum(r["record"] == "request" for r in recs) >= sum(l["requests_ok"] for l in levels)
truth = json.load(open(truth_path))

def pct(v, p):  # the order statistic tokmeter uses: linear between neighbours
    v = sorted(v)
    pos = p * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)

for l in levels:
    ws, we, c = l["window_start_unix"], l["window_end_unix"], l["concurrency"]
    # tokens emitted inside the window, by the server's own clock
    emitted = sum(1 for t in truth for x in t["tokens"] if ws <= x <= we)
    got = l["output_tokens_in_window"]
    assert abs(got - emitted) <= 0.02 * emitted, ("tokens in window", c, got, emitted)
    mine = [t for t in truth if ws <= t["arrival"] <= we]
    queue = [(t["admit"] - t["arrival"]) * 1e3 for t in mine]
    for p in (0.5, 0.9, 1.0):
        want, have = pct(queue, p), {0.5: l["queue_ms"]["p50"], 0.9: l["queue_ms"]["p90"],
                                     1.0: l["queue_ms"]["max"]}[p]
        # 2 ms (the issue's tolerance) at p50 and p90; the largest single
        # request also carries the Python server's own jitter on its first
        # step (asyncio oversleeps by up to ~1 ms on a busy 2-core machine),
        # which the client cannot see: 3 ms there
        assert abs(have - want) <= (2.0 if p < 1 else 3.0), ("queue", c, p, have, want)
    gaps = [(b - a) * 1e3 for t in mine for a, b in zip(t["tokens"], t["tokens"][1:])]
    assert abs(l["itl_ms"]["p50"] - pct(gaps, 0.5)) <= 0.02 * pct(gaps, 0.5), \
        ("itl", c, l["itl_ms"]["p50"], pct(gaps, 0.5))
    # one stream's decode: a step of min(c, 4) streams takes 20 + 1 x S ms
    step = 20 + 1 * min(c, 4)
    assert abs(l["per_stream_decode_tok_s"]["p50"] - 1e3 / step) <= 0.03 * 1e3 / step, (c, l)
# the server's own /metrics counters agree with its answers
for l in levels:
    sc = l["server_counters"]
    assert sc and sc["source"] == "llama.cpp" and sc["disagree"] is False, sc
    assert sc["server_generated_tokens"] == sc["client_generated_tokens"], sc
# past the 4 slots the aggregate stops growing and the queue grows: the knee
knee = [f for f in recs[-1]["findings"] if f["code"] == "knee"]
assert knee and knee[0]["config"]["test"] == "c=4", recs[-1]["findings"]
PY
# the report: the levels as a table, and two plots per invocation (one mark
# per level and series: aggregate and one stream; TTFT p50 and p99)
expect_exit 0 "$TOKMETER" report "$dir/c.jsonl" --html "$dir/r.html"
grep -q "^load: http://127.0.0.1:$BPORT (invocation .*, 4 levels)" "$dir/out" || fail "report: $(cat "$dir/out")"
grep -Eq "^  c=8 +[0-9]+ +0 " "$dir/out" || fail "report: no c=8 row: $(cat "$dir/out")"
grep -q 'data-plot="load-0-throughput" data-marks="8"' "$dir/r.html" || fail "report: no throughput plot"
grep -q 'data-plot="load-0-ttft" data-marks="8"' "$dir/r.html" || fail "report: no TTFT plot"
expect_exit 0 "$TOKMETER" load --url "http://127.0.0.1:$BPORT" -c 2 -p 50 -n 30 --ramp 0.5 \
  --duration 2 --out "$dir/t.jsonl"
grep -q "^c=2 " "$dir/out" || fail "no table row: $(cat "$dir/out")"
grep -q "records: $dir/t.jsonl" "$dir/out" || fail "no records line: $(cat "$dir/out")"

# --- 1b. SLOs and capacity: past the 4 slots a request waits a whole answer,
# so the largest concurrency meeting p99 TTFT <= 200 ms is 4 -----------------
expect_exit 0 "$TOKMETER" load --url "http://127.0.0.1:$BPORT" -c 1,16 -p 50 -n 20 --ramp 0.3 \
  --duration 1.2 --slo ttft=200ms --find-capacity --out "$dir/cap.jsonl"
grep -q "capacity: c=4 meets the SLOs, c=5 does not" "$dir/out" || fail "capacity: $(cat "$dir/out")"
python3 - "$dir/cap.jsonl" <<'PY' || fail "capacity records"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
levels = {r["concurrency"]: r for r in recs if r["record"] == "load"}
assert levels[4]["slo_met"] is True and levels[4]["slo_met_share"] == 1, levels[4]
assert levels[5]["slo_met"] is False and levels[16]["slo_met_share"] < 0.5, levels[16]
assert levels[4]["goodput_req_s"] > 0, levels[4]
f = [f for f in recs[-1]["findings"] if f["code"] == "capacity"][0]
assert f["figures"]["capacity_concurrency"] == 4, f
PY

# --- 2. open loop: sent on schedule, latency from the schedule too ------------
expect_exit 0 "$TOKMETER" load --url "http://127.0.0.1:$BPORT" --rate 20 --arrivals constant \
  -p 50 -n 8 --ramp 0.5 --duration 3 --json --out "$dir/o.jsonl"
python3 - "$dir/out" <<'PY' || fail "open loop (see above)"
import json, sys
(l,) = [json.loads(x) for x in open(sys.argv[1]) if x.strip()]
assert l["concurrency"] is None and l["request_rate"] == 20 and l["arrivals"] == "constant", l
n = l["requests_ok"] + l["requests_failed"]
assert 58 <= n <= 62, n                      # 20/s over 3 s, constant gaps
assert l["ttft_sched_ms"]["p50"] >= l["ttft_ms"]["p50"], l
# whether this machine kept the schedule is timing, not asserted; the rule is
# (stats/load_window.h, unit-tested in stats.test_load_window)
assert l["behind_schedule"] == (l["send_lag_share"] > 0.01), l
assert 0 <= l["late_sends"] <= n and l["max_send_lag_ms"] >= 0, l
PY
expect_exit 0 "$TOKMETER" load --url "http://127.0.0.1:$BPORT" --rate 10 -p 50 -n 8 --ramp 0.5 \
  --duration 3 --json --out "$dir/p.jsonl"
python3 - "$dir/out" <<'PY' || fail "poisson (see above)"
import json, sys
(l,) = [json.loads(x) for x in open(sys.argv[1]) if x.strip()]
n = l["requests_ok"] + l["requests_failed"]
assert l["arrivals"] == "poisson" and 8 <= n <= 55, n  # mean 30, beyond 4 sd
PY

# --- 3. faults under load: counted by kind, the run goes on --------------------
start_server err --mode break --break http-500 --break-after 2
expect_exit 1 "$TOKMETER" load --url "http://127.0.0.1:$PORT" --api openai -c 1,2 -n 8 --ramp 0 \
  --duration 1 --out "$dir/e.jsonl"
python3 - "$dir/e.jsonl" <<'PY' || fail "errors under load"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
levels = [r for r in recs if r["record"] == "load"]
assert len(levels) == 2 and all(l["requests_ok"] == 0 and l["failed"].get("http", 0) > 0
                                for l in levels), levels
assert recs[-1]["record"] == "end" and recs[-1]["failed"]["http"] > 0, recs[-1]
PY
grep -q "problem c=1: .* requests failed" "$dir/out" || fail "no failure finding: $(cat "$dir/out")"
# a server that stalls after its calibration: each stalled request ends on the
# idle timeout, the level still ends
start_server stall --mode break --break stall --break-after 2
t0=$(date +%s)
expect_exit 1 "$TOKMETER" load --url "http://127.0.0.1:$PORT" --api openai -c 2 -n 8 --ramp 0 \
  --duration 1 --idle-timeout 1 --out "$dir/s.jsonl"
[ $(($(date +%s) - t0)) -le 15 ] || fail "a stalled server held the load run $(($(date +%s) - t0)) s"
grep -q '"idle-timeout"' "$dir/s.jsonl" || fail "stall not counted: $(tail -1 "$dir/s.jsonl")"
# nothing listening: the identity and end records, a finding, exit 1
expect_exit 1 "$TOKMETER" load --url "http://127.0.0.1:1" -c 1 --out "$dir/r.jsonl"
python3 - "$dir/r.jsonl" <<'PY' || fail "refused: records"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert [r["record"] for r in recs] == ["identity", "end"], recs
assert recs[-1]["findings"][0]["code"] == "server_not_identified", recs[-1]
PY

