#!/usr/bin/env bash
# test_lies: the lying-server suite (issue 31). Each lie of the fake server
# (tests/server/, --lie-*, --rate-limit, --break) against `tokmeter bench
# --url`, with what it must produce: the exit code, the finding (its code is
# the plausibility rule broken, backend.h RUN_CHECKS), the rule in every
# failed request's record (error.check), and the time it may cost. The
# faults that fail fast are run at the default --timeout and --idle-timeout
# (none may wait on a timeout); a stalled server costs at most two idle
# timeouts, for the whole invocation when it stalls from the first request,
# per workload when it stalls later.
set -euo pipefail
: "${TOKMETER:?}" "${TOKMETER_FAKESERVER:?}"
. "$(dirname "$0")/../cli/lib.sh"
export TOKMETER_PROBE_QUICK=1 NO_PROXY='*'
unset OPENAI_API_KEY

# check NAME EXIT MAX_S FINDING CHECK SERVER_ARGS -- BENCH_ARGS
#   FINDING: a finding code some record must carry ("" = none asked);
#   CHECK:   the rule every failed request's record names ("" = not asked;
#            "-" = no request may name one)
check() {
  local name=$1 want=$2 max_s=$3 finding=$4 rule=$5
  shift 5
  local sargs=()
  while [ "$1" != -- ]; do sargs+=("$1"); shift; done
  shift
  start_server "$name" "${sargs[@]}"
  local t0 t1
  t0=$(date +%s.%N)
  expect_exit "$want" "$TOKMETER" bench --url "http://127.0.0.1:$PORT" "$@" --out "$dir/$name.jsonl"
  t1=$(date +%s.%N)
  python3 - "$dir/$name.jsonl" "$finding" "$rule" "$t0" "$t1" "$max_s" "$name" <<'PY' ||
import json, sys
path, finding, rule, t0, t1, max_s, name = sys.argv[1:]
spent = float(t1) - float(t0)
assert spent <= float(max_s), "%s: %.1f s spent, at most %s allowed" % (name, spent, max_s)
recs = [json.loads(l) for l in open(path)]
assert recs[0]["record"] == "identity" and recs[-1]["record"] == "end", [r["record"] for r in recs]
codes = [f["code"] for r in recs for f in (r.get("findings") or [])]
if finding:
    assert finding in codes, "%s: no %s finding in %s" % (name, finding, codes)
runs = [r for r in recs if r["record"] == "run"]
failed = [r for r in runs if not r["ok"]]
if rule == "-":
    assert all((r["error"] or {}).get("check") is None for r in runs), [r["error"] for r in failed]
elif rule:
    assert failed, "%s: no request failed" % name
    checks = [r["error"]["check"] for r in failed]
    assert all(c == rule for c in checks), "%s: checks %s, expected %s" % (name, checks, rule)
PY
    fail "$name (see above; stderr: $(cat "$dir/err"))"
}

A=(--a 1 --b 0 --c 1)
# --- lies about counts: every request judged, calibration included -----------
check neg 1 20 impossible_count impossible_count \
  --mode paced --flavor openai "${A[@]}" --lie-completion -32 -- --api openai -p 20 -n 32 -r 2
check frac 1 20 impossible_count impossible_count \
  --mode paced --flavor openai "${A[@]}" --lie-completion 32.5 -- --api openai -p 20 -n 32 -r 2
check absurd 1 20 count_above_max_tokens "" \
  --mode paced --flavor openai "${A[@]}" --lie-completion 200000 -- --api openai -p 20 -n 32 -r 2
grep -q "200000 generated tokens (usage) for max_tokens 32" "$dir/err" || fail "absurd: $(cat "$dir/err")"
# a usage of 1 token against the calibration's 2 pieces (the issue's case)
check fewer 1 20 pieces_above_count pieces_above_count \
  --mode paced --flavor openai "${A[@]}" --lie-completion 1 -- --api openai -p 20 -n 32 -r 2
python3 - "$dir/fewer.jsonl" <<'PY' || fail "fewer: the calibration was not judged"
import json, sys
cal = [json.loads(l) for l in open(sys.argv[1]) if '"calibration":true' in l]
assert cal and all(not r["ok"] and r["error"]["check"] == "pieces_above_count" for r in cal), cal
PY
check cached 1 20 cached_above_prompt cached_above_prompt \
  --mode paced --flavor openai "${A[@]}" --prompt-cache --lie-cached 5000 -- --api openai -w classify -r 2
# prompt counts that do not follow the server's own tokenizer: nothing can
# rest on them, so the calibration ends the invocation (identity and end kept)
check prompt 1 20 prompt_count_off "" \
  --mode paced --flavor openai "${A[@]}" --lie-prompt 100000 -- --api openai -w classify -r 2
grep -q "the server reports prompts of 100000 and 100000 tokens for texts its own tokenizer counts as" \
  "$dir/err" || fail "prompt: $(cat "$dir/err")"
# --- lies about time: server timers against the client's clock ----------------
check timer 1 20 timer_beyond_clock timer_beyond_clock \
  --mode paced --flavor llamacpp "${A[@]}" --lie-prompt-ms 5000 -- -w classify -r 2
check negtimer 1 20 timer_not_duration timer_not_duration \
  --mode paced --flavor llamacpp "${A[@]}" --lie-prompt-ms -3 -- -w classify -r 2
# --- the honest server: no rule broken ----------------------------------------
check honest 0 20 "" - --mode paced --flavor llamacpp "${A[@]}" -- -w classify,extract -r 2

# --- Retry-After: honoured once, up to 60 s, and said -----------------------------
check retry 0 20 retry_after - \
  --mode paced --flavor openai "${A[@]}" --rate-limit 1 --retry-after 2 -- --api openai -w classify -r 2
python3 - "$dir/retry.jsonl" <<'PY' || fail "retry: records"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
f = [f for f in recs[-1]["findings"] if f["code"] == "retry_after"][0]
assert f["figures"] == {"http_status": 429, "retry_after_s": 2, "waited_s": 2}, f
first = [r for r in recs if r["record"] == "run"][0]
assert first["error"]["kind"] == "http" and first["error"]["retry_after_s"] == 2, first["error"]
assert all(r["ok"] for r in recs if r["record"] == "run" and not r["calibration"]), recs
PY
# an HTTP date three seconds ahead: waited about that long
when=$(date -u -d '+3 seconds' '+%a, %d %b %Y %H:%M:%S GMT')
t0=$(date +%s)
check retrydate 0 20 retry_after - \
  --mode paced --flavor openai "${A[@]}" --rate-limit 1 --retry-after "$when" -- --api openai -w classify -r 1
[ $(($(date +%s) - t0)) -ge 2 ] || fail "retrydate: the HTTP date was not waited for"
# an hour is not waited for: the calibration fails at once, saying so
check retrylong 1 10 retry_after "" \
  --mode paced --flavor openai "${A[@]}" --rate-limit 1 --retry-after 3600 -- --api openai -w classify -r 2
grep -q "HTTP 429.*(Retry-After: 3600 s)" "$dir/err" || fail "retrylong: $(cat "$dir/err")"
# a limiter that keeps refusing after the wait: the calibration says it waited
check retryagain 1 20 retry_after "" \
  --mode paced --flavor openai "${A[@]}" --rate-limit 5 --retry-after 1 -- --api openai -w classify -r 2
grep -q "again after the wait it asked for" "$dir/err" || fail "retryagain: $(cat "$dir/err")"

# --- --max-wait: the invocation's budget --------------------------------------
check maxwait 1 12 max_wait_reached "" \
  --mode paced --flavor openai --a 1 --b 0 --c 50 -- --api openai -w classify,generate -r 3 --max-wait 4
python3 - "$dir/maxwait.jsonl" <<'PY' || fail "maxwait: records"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert recs[0]["settings"]["max_wait_s"] == 4, recs[0]["settings"]
gen = [r for r in recs if r["record"] == "summary" and r["workload"] == "generate"][0]
assert gen["skipped"]["after"] == "max-wait" and gen["skipped"]["runs"] >= 1, gen["skipped"]
PY
expect_exit 2 "$TOKMETER" bench --max-wait 10
grep -q "needs --url" "$dir/err" || fail "--max-wait in process: $(cat "$dir/err")"
expect_exit 2 "$TOKMETER" bench --url http://127.0.0.1:1 --max-wait -1
grep -q "not a number of seconds" "$dir/err" || fail "--max-wait -1: $(cat "$dir/err")"

# --- faults that fail fast, at the default timeouts: none waits on one ---------
for stage in close-on-accept half-headers after-headers mid-event after-first-token \
  no-done-no-usage malformed-json http-500 http-404 error-event context-overflow garbage; do
  check "fault-$stage" 1 20 "" "" --mode break --break "$stage" -- -w classify,extract -r 3
done
# --- a stalled server: two idle timeouts, not one per request ---------------------
# from the first request: the two calibration requests, then the end
check stall 1 8 calibration_failed "" --mode break --break stall -- \
  -w classify,extract,generate -r 5 --idle-timeout 2
check stallhead 1 8 calibration_failed "" --mode break --break stall-before-headers -- \
  -w classify,extract,generate -r 5 --idle-timeout 2
# after the calibration: the warm-up and one timed run per workload
check stalllater 1 20 runs_skipped "" --mode break --break stall --break-after 2 -- \
  -w classify,extract -r 5 --idle-timeout 2
python3 - "$dir/stalllater.jsonl" <<'PY' || fail "stalllater: records"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
for s in [r for r in recs if r["record"] == "summary"]:
    assert s["skipped"] == {"runs": 4, "after": "idle-timeout"}, s["skipped"]
PY
echo "test_lies: ok"
