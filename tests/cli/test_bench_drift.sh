#!/usr/bin/env bash
# test_bench_drift: method rule 11 inside `tokmeter bench`. A server that
# heats up (the fake server's --heat: generation k paced 1.1^k slower) makes
# the later runs of a workload slower than the first: the report says so
# under the table and the summary record carries the test; a steady server
# gets the test (an object) without the sentence. --cooldown pauses before
# every configuration but the first (in-process and --url), is recorded in
# the identity's settings, and its value is checked (exit 2, one line). The
# line after the records names the report command, quoted for a shell, and
# that command works as printed.
set -euo pipefail
: "${TOKMETER:?}" "${TOKMETER_FAKESERVER:?}" "${TOKMETER_FIXTURES:?}"
. "$(dirname "$0")/lib.sh"
export TOKMETER_PROBE_QUICK=1 NO_PROXY='*'
unset OPENAI_API_KEY
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# --- a server heating up: 5 runs of 60 tokens, 2 ms a token times 1.1^k ------
start_server hot --mode paced --flavor llamacpp --a 2 --b 0.02 --c 2 --heat 0.1
expect_exit 0 "$TOKMETER" bench -v --url "http://127.0.0.1:$PORT" -p 50 -n 60 -r 5 \
  --out "$dir/hot.jsonl"
grep -q "decode slower from its first run to its last: -[0-9.]*% fitted over 5 runs, beyond the noise (rule 11)" \
  "$dir/out" || fail "no drift sentence for a heating server: $(cat "$dir/out")"
grep -q -- "--cooldown S rests the machine" "$dir/out" || fail "the drift sentence offers no cool-down"
python3 - "$dir/hot.jsonl" <<'PY' || fail "drift in the heating server's summary"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
s = [r for r in recs if r["record"] == "summary"][-1]
d = s["rates"]["decode_tok_s"]["drift"]
# the warm-up and the calibration took generations 0..k first: each timed run
# is 1.1x the one before, so over 5 runs the fitted fall is about 1 - 1/1.1^4
assert d["n"] == 5 and d["slower"] is True, d
assert -0.40 < d["change"] < -0.20, d
assert d["t"] < -d["t_crit"], d
ident = recs[0]
assert ident["settings"]["cooldown_s"] == 0, ident["settings"]
PY

# --- a steady server: the test is there, the sentence is not ----------------
start_server steady --mode paced --flavor llamacpp --a 2 --b 0.02 --c 2
expect_exit 0 "$TOKMETER" bench -v --url "http://127.0.0.1:$PORT" -p 50 -n 60 -r 3 \
  --out "$dir/steady.jsonl"
python3 - "$dir/steady.jsonl" <<'PY' || fail "drift object in a steady server's summary"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
s = [r for r in recs if r["record"] == "summary"][-1]
for k in ("prefill_tok_s", "decode_tok_s"):
    d = s["rates"][k]["drift"]
    assert d is not None and d["n"] == 3 and isinstance(d["slower"], bool), (k, d)
    assert isinstance(d["t_crit"], float) and d["t_crit"] > 30, (k, d)  # 99%, df 1: 31.8
PY
# two runs: no test (null), and no sentence
expect_exit 0 "$TOKMETER" bench -v --url "http://127.0.0.1:$PORT" -p 50 -n 60 -r 2 \
  --out "$dir/two.jsonl"
grep -q "rule 11" "$dir/out" && fail "a drift sentence from two runs"
python3 - "$dir/two.jsonl" <<'PY' || fail "drift of two runs must be null"
import json, sys
s = [json.loads(l) for l in open(sys.argv[1]) if '"summary"' in l][-1]
assert s["rates"]["decode_tok_s"]["drift"] is None, s["rates"]["decode_tok_s"]
PY

# --- --cooldown with --url: one pause before the second workload -------------
t0=$(now_ms)
expect_exit 0 "$TOKMETER" bench -v --url "http://127.0.0.1:$PORT" -w classify,extract -r 1 \
  --cooldown 1.2 --out "$dir/cool.jsonl"
t1=$(now_ms)
[ $((t1 - t0)) -ge 1200 ] || fail "--cooldown 1.2 with two workloads took $((t1 - t0)) ms"
python3 - "$dir/cool.jsonl" <<'PY' || fail "cooldown_s in the server identity"
import json, sys
ident = json.loads(open(sys.argv[1]).readline())
assert ident["settings"]["cooldown_s"] == 1.2, ident["settings"]
PY

# --- --cooldown in-process: two configurations, one pause --------------------
model="$TOKMETER_FIXTURES/gguf/tiny-qwen3-Q8_0.gguf"
t0=$(now_ms)
expect_exit 0 "$TOKMETER" bench -v -m "$model" -p 16,32 -n 0 -t 1 -r 3 --cooldown 1.5 \
  --out "$dir/eng.jsonl"
t1=$(now_ms)
[ $((t1 - t0)) -ge 1500 ] || fail "--cooldown 1.5 with two configurations took $((t1 - t0)) ms"
python3 - "$dir/eng.jsonl" <<'PY' || fail "in-process records: cooldown_s and drift"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert recs[0]["settings"]["cooldown_s"] == 1.5, recs[0]["settings"]
sums = [r for r in recs if r["record"] == "summary"]
assert len(sums) == 2, len(sums)
for s in sums:  # three repetitions: the test ran over them
    assert s["drift"]["n"] == 3 and isinstance(s["drift"]["slower"], bool), s["drift"]
PY
# the report hint quotes a path a shell would split, and the command works
mkdir -p "$dir/a b"
expect_exit 0 "$TOKMETER" bench -v -m "$model" -p 16 -n 0 -t 1 -r 1 --out "$dir/a b/it's.jsonl"
hint=$(grep "^report: " "$dir/out") || fail "no report hint"
[ "$hint" = "report: tokmeter report '$dir/a b/it'\''s.jsonl' --html report.html (a table, and a page of plots)" ] ||
  fail "report hint: $hint"
cmd=${hint#report: tokmeter }
cmd=${cmd% (a table, and a page of plots)}
(cd "$dir" && eval "\"\$TOKMETER\" $cmd" >/dev/null) || fail "the hinted command failed: $cmd"
[ -s "$dir/report.html" ] || fail "the hinted command wrote no report.html"
# --json carries the same summaries
expect_exit 0 "$TOKMETER" bench -v -m "$model" -p 16 -n 0 -t 1 -r 1 --json --out "$dir/j.jsonl"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); s=d['summaries'][0]; assert s['drift'] is None, s" \
  "$dir/out" || fail "--json summary drift (one repetition: null)"

# --- bad values: exit 2, one line ---------------------------------------------
for bad in -1 abc 3601 ""; do
  expect_exit 2 "$TOKMETER" bench -v -m "$model" --cooldown "$bad" --out "$dir/x.jsonl"
  grep -q "^tokmeter bench: --cooldown: '$bad' is not a number of seconds (0 to 3600)$" "$dir/err" ||
    fail "--cooldown '$bad': $(cat "$dir/err")"
  [ "$(wc -l <"$dir/err")" -le 2 ] || fail "--cooldown '$bad': more than the error and its hint"
done
[ ! -e "$dir/x.jsonl" ] || fail "a records file was written on bad usage"
echo "test_bench_drift: ok"
