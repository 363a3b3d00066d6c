#!/usr/bin/env bash
# test_load_engine: `tokmeter load` without --url, the engine's streams
# decoding together (src/bench/load_engine.c), on a tiny fixture model of
# each kind (dense, mixture of experts) and a crafted probe (the same ceiling
# on every CPU): the --json contract's keys, the figures' arithmetic (the
# aggregate is B x steps over the median pass's window, one stream's rate
# its B-th share, the ceiling the model's at the level's batch and depth),
# the records (a request per stream with its sample, the passes'
# aggregates), the report's plots, compare on two runs (per pass, no TTFT
# rows), and bad usage (one line, exit 2). No timing is asserted.
set -euo pipefail
: "${TOKMETER:?}" "${TOKMETER_FIXTURES:?}" "${TOKMETER_SOURCE_DIR:?}"
. "$(dirname "$0")/lib.sh"
export TOKMETER_PROBE_QUICK=1

dense="$TOKMETER_FIXTURES/gguf/tiny-qwen3-Q8_0.gguf"
moe="$TOKMETER_FIXTURES/gguf/tiny-qwen3moe-Q8_0.gguf"
expect_exit 0 "$TOKMETER" probe
python3 "$TOKMETER_SOURCE_DIR/tests/cli/craft_probe.py" "$TOKMETER_CACHE_DIR" avx512_vnni \
  >"$dir/probe.json" || fail "crafting a probe"

for model in "$dense" "$moe"; do
  name=$(basename "$model" .gguf)
  expect_exit 0 "$TOKMETER" load -m "$model" -c 1,3,8 -d 6 -n 24 -r 3 -t 2 --json \
    --out "$dir/$name.jsonl"
  cp "$dir/out" "$dir/$name.levels"
  python3 - "$dir/$name.levels" "$dir/$name.jsonl" "$model" <<'PY' || fail "$name: levels (see above)"
import json, math, sys
levels = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
recs = [json.loads(l) for l in open(sys.argv[2])]
assert [l["concurrency"] for l in levels] == [1, 3, 8], levels
keys = ("concurrency request_rate requests_ok requests_failed window_s aggregate_output_tok_s "
        "aggregate_prompt_tok_s requests_per_s per_stream_decode_tok_s ttft_ms ttfat_ms itl_ms "
        "tpot_ms e2e_ms queue_ms aggregate_decode_ceiling_tok_s").split()
for l in levels:
    for k in keys:
        assert k in l, (k, l)
    B = l["concurrency"]
    assert l["request_rate"] is None and l["requests_ok"] == B and l["requests_failed"] == 0, l
    assert l["backend"] == "engine" and l["depth"] == 6 and l["steps"] == 24, l
    # what has no meaning in process is null, not zero
    for k in ("ttft_ms", "ttfat_ms", "ttft_sched_ms", "queue_ms"):
        assert l[k] is None or l[k]["p50"] is None, (k, l[k])
    for k in ("aggregate_prompt_tok_s", "server_counters", "server_slots", "client_cpu_share"):
        assert l[k] is None, (k, l[k])
    # the aggregate: B x 24 tokens over the window, the median of the passes
    agg = l["aggregate_output_tok_s"]
    assert math.isclose(agg, B * 24 / l["window_s"], rel_tol=1e-6), l
    reps = l["reps_aggregate_tok_s"]
    assert len(reps) == 3 and math.isclose(sorted(reps)[1], agg, rel_tol=1e-6), (reps, agg)
    # lockstep: every stream decodes at the aggregate's B-th share
    ps = l["per_stream_decode_tok_s"]
    assert math.isclose(ps["p50"], agg / B, rel_tol=1e-6) and math.isclose(ps["min"], ps["max"]), ps
    assert l["itl_ms"]["p50"] > 0 and l["e2e_ms"]["p50"] > 0, l
    cl = l["aggregate_decode_ceiling_tok_s"]
    assert cl > 0 and l["ceiling_batch"] == B and l["ceiling_depth"] == 6 + 12, l
    assert math.isclose(l["percent_of_ceiling"], 100 * agg / cl, rel_tol=1e-6), l
# more streams share one read of the weights: the ceiling grows with B
c = [l["aggregate_decode_ceiling_tok_s"] for l in levels]
assert c[0] < c[1] < c[2], c
assert recs[0]["record"] == "identity" and recs[0]["backend"] == "engine", recs[0]
assert recs[0]["settings"]["threads"] == 2 and recs[-1]["record"] == "end", recs[-1]
reqs = [r for r in recs if r["record"] == "request"]
assert len(reqs) == 1 + 3 + 8 and all(r["load"]["n_chunks"] == 24 if "n_chunks" in r["load"]
                                      else len(r["load"]["chunk_us"]) == 24 for r in reqs), reqs[0]
codes = [f["code"] for f in recs[-1]["findings"]]
assert "batch_turn" in codes, codes
PY
  grep -q "c=8 .*ceiling" "$dir/$name.levels" && fail "--json printed the table"
done

# the table, the report's plots, compare
expect_exit 0 "$TOKMETER" load -m "$dense" -c 1,4 -d 6 -n 24 -r 2 --out "$dir/a.jsonl"
grep -q "^tokmeter load: in process, .*tiny-qwen3-Q8_0.gguf (engine " "$dir/out" ||
  fail "table header: $(cat "$dir/out")"
grep -Eq "^c=4 +4 +0 .*ceiling [0-9]+ tok/s \([0-9]+%, (memory|compute)\)" "$dir/out" ||
  fail "table row: $(cat "$dir/out")"
expect_exit 0 "$TOKMETER" load -m "$dense" -c 1,4 -d 6 -n 24 -r 2 --out "$dir/b.jsonl"
expect_exit 0 "$TOKMETER" report "$dir/a.jsonl" --html "$dir/r.html"
# one mark per level and series (aggregate, one stream); the ceiling a dashed line
grep -q 'data-plot="load-0-throughput" data-marks="4"' "$dir/r.html" ||
  fail "report: no throughput plot: $(grep -o 'data-plot="[^"]*" data-marks="[0-9]*"' "$dir/r.html")"
grep -q "aggregate decode ceiling (tok/s)" "$dir/r.html" || fail "report: no ceiling line"
grep -q 'data-plot="load-0-ttft" data-marks="4"' "$dir/r.html" || fail "report: no step-time plot"
grep -q "time per decode step" "$dir/r.html" || fail "report: the step plot's title"
expect_exit 0 "$TOKMETER" compare "$dir/a.jsonl" "$dir/b.jsonl"
grep -q "^c=4 .*aggregate_output_tok_s" "$dir/out" || fail "compare: $(cat "$dir/out")"
grep -q "^c=4 .*e2e_ms .*[0-9]\.\.[0-9]" "$dir/out" || fail "compare: no e2e interval: $(cat "$dir/out")"
if grep -q "ttft_ms" "$dir/out"; then fail "compare: a TTFT row in process"; fi
grep -q "over the timed passes" "$dir/out" || fail "compare: footnote"

# bad usage: one line, exit 2, nothing run
for args in "-m $dense -c 0" "-m $dense -c 2000" "-m $dense -c 1 --rate 2" "-m $dense -c 1 -p 8" \
  "-m $dense -c 1 -d 0" "-m $dense -c 1 -r 0" "-m $dir/none.gguf -c 1" "-m $dense -c 1 -d 100000" \
  "-m $dense -c 1 --slo ttft=1s" "-m $dense -c 1 -n 8:2" "--url http://127.0.0.1:1 -c 1 -d 4" \
  "-m $dense -c 1 -t 0" "-m $dense -c 1 --warmup x" "-m $dense -c 1 -r 17" "-m $dense -c 1,x" \
  "-m $TOKMETER_FIXTURES/gguf/ggml-vocab-llama-spm.gguf -c 1"; do
  # shellcheck disable=SC2086
  expect_exit 2 "$TOKMETER" load $args --out "$dir/bad.jsonl"
  [ "$(grep -cv "^Try 'tokmeter" "$dir/err")" = 1 ] || fail "load $args: not one line: $(cat "$dir/err")"
done
[ ! -s "$dir/bad.jsonl" ] || fail "bad usage wrote records: $(head -c 300 "$dir/bad.jsonl")"
