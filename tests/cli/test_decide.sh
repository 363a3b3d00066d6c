#!/usr/bin/env bash
# test_decide: `tokmeter decide` end to end. Expected figures are worked out by
# hand from docs/decide.md, or (for records) computed here in python3 from the
# JSON Lines file, never copied from the tool's output.
set -euo pipefail
: "${TOKMETER:?binary path}" "${TOKMETER_FIXTURES:?fixtures dir}"
. "$(dirname "$0")/lib.sh"
export TOKMETER_PROBE_QUICK=1

"$TOKMETER" decide --help >"$dir/help" || fail "--help exit code"
for flag in --prompt-tokens --output-tokens --requests-per-day --results --match \
            --device-prefill --device-decode --device-overhead --device-load --device-warm \
            --device-watts --kwh-price --device-price --device-lifetime-days --api-ttft \
            --api-rtt --api-prefill --api-decode --price-in --price-out --currency --json --help; do
  grep -q -- "$flag" "$dir/help" || fail "--help does not list $flag"
done

expect_usage() {
  local what=$1; shift
  set +e; "$TOKMETER" decide "$@" >"$dir/out" 2>"$dir/err"; local rc=$?; set -e
  [ "$rc" = 2 ] || fail "$what: exit $rc, want 2 ($(cat "$dir/err"))"
  [ -s "$dir/err" ] || fail "$what: nothing on stderr"
  [ ! -s "$dir/out" ] || fail "$what: output on stdout"
}
api=(--api-ttft 400ms --api-rtt 100ms --api-decode 50)
dev=(--device-prefill 500 --device-decode 20)
expect_usage "no arguments"
expect_usage "unknown flag" -p 1000 -n 201 "${dev[@]}" "${api[@]}" --bogus
expect_usage "no device rates" -p 1000 -n 201 "${api[@]}"
expect_usage "no api" -p 1000 -n 201 "${dev[@]}"
expect_usage "zero output" -p 1000 -n 0 "${dev[@]}" "${api[@]}"
expect_usage "bad duration" -p 1000 -n 201 "${dev[@]}" --api-ttft 4parsecs --api-decode 50
expect_usage "bad warm" -p 1000 -n 201 "${dev[@]}" "${api[@]}" --device-warm maybe
expect_usage "missing results" -p 1000 -n 201 "${api[@]}" --results "$dir/nope.jsonl"
: >"$dir/empty.jsonl"
expect_usage "empty results" -p 1000 -n 201 "${api[@]}" --results "$dir/empty.jsonl"
grep -q "no records in $dir/empty.jsonl" "$dir/err" || fail "empty: $(cat "$dir/err")"
echo '{"record":"run", "truncated' >"$dir/bad.jsonl"
expect_usage "corrupt results" -p 1000 -n 201 "${api[@]}" --results "$dir/bad.jsonl"
[ "$(wc -l <"$dir/err")" -le 2 ] || fail "corrupt: more than one message"

# --- bounds (stated in --help): exit 2 and a message naming the flag -----------
base=(-p 500 -n 200 --device-prefill 100 --device-decode 20 --api-ttft 0.5s --api-decode 50)
expect_flag() { # FLAG VALUE: the base job with FLAG VALUE appended must be refused naming FLAG
  expect_usage "$1 $2" "${base[@]}" "$1" "$2"
  grep -q -- "$1" "$dir/err" || fail "$1 $2: message does not name $1: $(cat "$dir/err")"
  [ "$(wc -l <"$dir/err")" -le 2 ] || fail "$1 $2: more than one message: $(cat "$dir/err")"
}
big=99999999999999999999   # above 2^64: once 'complete answer 158440439070 years'
for f in --output-tokens --prompt-tokens --requests-per-day --device-lifetime-days \
         --device-watts --kwh-price --device-price --price-in --price-out; do
  expect_flag "$f" "$big"
done
expect_flag --output-tokens 1000000000001      # counts: at most 1e12
expect_flag --device-lifetime-days 36526       # at most 100 years
for f in --api-ttft --api-rtt --device-overhead --device-load; do
  expect_flag "$f" "${big}d"                   # once '273785078713210112 years500 ms'
  expect_flag "$f" 36526d
done
for f in --device-prefill --device-decode --api-prefill --api-decode; do
  expect_flag "$f" 1e20
  expect_flag "$f" 0.0001
done
expect_usage "a million-year answer" "${base[@]}" -n 1e12 --device-decode 0.001
grep -q "million years" "$dir/err" || fail "million years: $(cat "$dir/err")"
# the limits themselves are accepted
"$TOKMETER" decide "${base[@]}" --api-rtt 36525d --device-lifetime-days 36525 -q 1e12 --json \
  >"$dir/edge" || fail "edge values refused: $(cat "$dir/edge")"
python3 -c "
import json; d=json.load(open('$dir/edge'))
assert d['inputs']['api_rtt_s'] == 36525 * 86400 and d['inputs']['requests_per_day'] == 1e12, d
" || fail "edge values"
# a decode rate below 1 tok/s is shown, not rounded to 0.00
"$TOKMETER" decide "${base[@]}" --device-decode 0.005 >"$dir/slow" || fail "slow decode run"
grep -q "decode 0.005 tok/s (DC)" "$dir/slow" || fail "0.005 tok/s shown as: $(head -3 "$dir/slow")"

# --- the worked example (docs/decide.md) ----------------------------------------
# device: first 1000/500 = 2 s, complete 2 + 200/20 = 12 s; reload +5 s: 7 s, 17 s
# API: first 0.1 + 0.4 = 0.5 s, complete 0.5 + 200/50 = 4.5 s
# API money: 1000 x 1e-6 + 201 x 4e-6 = 0.001804 per request, 1.804 a day, 54.12 a month
# device: 100 W x 12 s = 1200 J = 1/3000 kWh x 0.30 = 0.0001; hardware 1500/1095 a day
# break-even: (1500/1095) / (0.001804 - 0.0001) = 803.9 requests a day
full=(-p 1000 -n 201 -q 1000 "${dev[@]}" --device-load 5 --device-watts 100 --kwh-price 0.30
      --device-price 1500 "${api[@]}" --price-in 1 --price-out 4)
"$TOKMETER" decide "${full[@]}" >"$dir/table" || fail "table run"
grep -E "^first token +2.00 s +7.00 s +500 ms$" "$dir/table" >/dev/null || fail "first token row: $(cat "$dir/table")"
grep -E "^complete answer +12.0 s +17.0 s +4.50 s$" "$dir/table" >/dev/null || fail "complete row"
grep -E "^money per request +\\\$0.00147 +\\\$0.00151 +\\\$0.00180$" "$dir/table" >/dev/null || fail "money row"
grep -E "^money per month \(30 days\) +\\\$44.10 +\\\$45.35 +\\\$54.12$" "$dir/table" >/dev/null || fail "month row"
grep -q "complete answer: the API is sooner (4.50 s vs 12.0 s on the device, 2.67x)" "$dir/table" \
  || fail "latency verdict"
grep -q "at 1000 requests a day the device is cheaper" "$dir/table" || fail "cost verdict"
grep -q "break-even: 804 requests a day" "$dir/table" || fail "break-even"
grep -q "each answer waits 5.00 s more" "$dir/table" || fail "reload line"

"$TOKMETER" decide "${full[@]}" --json >"$dir/json" || fail "json run"
python3 - "$dir/json" <<'PY' || fail "json values"
import json, sys
d = json.load(open(sys.argv[1]))
close = lambda a, b, t=1e-9: abs(a - b) <= t
w, r, a = d["device_warm"], d["device_reload"], d["api"]
assert close(w["first_s"], 2) and close(w["complete_s"], 12), w
assert close(r["first_s"], 7) and close(r["complete_s"], 17), r
assert close(a["first_s"], 0.5) and close(a["complete_s"], 4.5), a
assert close(a["money_per_request"], 0.001804, 1e-12) and close(a["money_per_month"], 54.12)
assert close(d["device_energy_per_request"], 0.0001, 1e-12)
assert close(w["money_per_day"], 0.1 + 1500 / 1095)
assert close(d["breakeven_requests_per_day"], (1500 / 1095) / (0.001804 - 0.0001), 1e-6)
assert d["winner"] == {"first_token": "api", "complete": "api", "cost": "device",
                       "first_token_reload": "api", "complete_reload": "api"}, d["winner"]
assert a["capacity_per_day"] is None and close(w["capacity_per_day"], 7200)
PY

# unknown stays blank: no power, no load -> null money on the device, null reload
"$TOKMETER" decide -p 1000 -n 201 "${dev[@]}" "${api[@]}" --json >"$dir/j2"
python3 -c "
import json; d=json.load(open('$dir/j2'))
assert d['device_warm']['money_per_day'] is None and d['api']['money_per_day'] is None
assert d['device_reload']['first_s'] is None and d['winner']['cost'] is None
" || fail "blanks"
"$TOKMETER" decide -p 1000 -n 201 "${dev[@]}" "${api[@]}" >"$dir/t2"
grep -q "device: not known (give --device-watts" "$dir/t2" || fail "no-power sentence"
grep -q "not known: give --device-load" "$dir/t2" || fail "no-load sentence"
if grep -q '\$0' "$dir/t2"; then fail "unknown money printed as zero"; fi

# --device-warm no: the warm break-even stays the warm one (it printed "moves from
# 266 to 266"); energy 200 W x busy s / 3.6e6 x 0.4, hardware 3000 / 1095 a day
w=(-p 2000 -n 500 -q 50 --device-prefill 300 --device-decode 30 --device-overhead 50ms
   --device-load 2m --device-watts 200 --kwh-price 0.4 --device-price 3000 --api-rtt 80ms
   --api-ttft 300ms --api-prefill 5000 --api-decode 80 --price-in 3 --price-out 15)
"$TOKMETER" decide "${w[@]}" --device-warm no >"$dir/t5" || fail "warm no: exit code"
"$TOKMETER" decide "${w[@]}" --device-warm no --json >"$dir/j5" || fail "warm no --json"
python3 - "$dir/t5" "$dir/j5" <<'PY' || fail "break-even with --device-warm no"
import json, sys
busy = 0.05 + 2000 / 300 + 499 / 30            # warm: overhead + prefill + decode (s)
api = 2000 * 3 / 1e6 + 500 * 15 / 1e6
hw = 3000 / 1095
warm = hw / (api - 200 * busy / 3.6e6 * 0.4)
reload = hw / (api - 200 * (busy + 120) / 3.6e6 * 0.4)
d = json.load(open(sys.argv[2]))
assert abs(d["breakeven_requests_per_day"] - warm) < 1e-6, (d["breakeven_requests_per_day"], warm)
assert abs(d["breakeven_requests_per_day_reload"] - reload) < 1e-6, d
text = open(sys.argv[1]).read()
want = "break-even moves from %.0f (warm) to %.0f requests a day." % (warm, reload)
assert want in text, (want, text)
assert "break-even: %.0f requests a day; below it" % reload in text, text  # the reloaded scenario
PY
# --device-warm no without --device-load: every answer waits for a load nobody gave
expect_usage "warm no, no load" -p 1000 -n 201 "${dev[@]}" "${api[@]}" --device-warm no \
  --device-watts 100 --kwh-price 0.3
grep -q -- "--device-warm no needs --device-load" "$dir/err" || fail "warm no, no load: $(cat "$dir/err")"

# --- rates from real records ------------------------------------------------------
"$TOKMETER" bench -m "$TOKMETER_FIXTURES/gguf/tiny-llama-Q4_0.gguf" -p 16,64 -n 32 -t 1,2 -r 3 \
  --out "$dir/r.jsonl" >/dev/null 2>&1 || fail "bench for records"
expect_usage "two configurations" -p 50 -n 32 "${api[@]}" --results "$dir/r.jsonl"
grep -q -- "--match" "$dir/err" || fail "ambiguous: no --match hint"
"$TOKMETER" decide -p 50 -n 32 "${api[@]}" --results "$dir/r.jsonl" --match "| t2 |" --json \
  >"$dir/j3" || fail "decide from records"
python3 - "$dir/r.jsonl" "$dir/j3" <<'PY' || fail "rates from records"
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
runs = [r for r in runs if r["record"] == "run" and not r.get("warmup") and r.get("ok")
        and r.get("threads") == 2]
pp64 = statistics.median(r["rate_tok_s"] for r in runs if r["test"] == "pp64")  # 50 is nearer 64 than 16
tg32 = statistics.median(r["rate_tok_s"] for r in runs if r["test"] == "tg32")
d = json.load(open(sys.argv[2]))
i = d["inputs"]
assert abs(i["device_prefill_tok_s"] - pp64) < 1e-6 * pp64, (i, pp64)
assert abs(i["device_decode_tok_s"] - tg32) < 1e-6 * tg32, (i, tg32)
assert "pp64" in i["device_prefill_from"] and "tg32" in i["device_decode_from"], i
first = 50 / pp64
assert abs(d["device_warm"]["first_s"] - first) < 1e-9
assert abs(d["device_warm"]["complete_s"] - (first + 31 / tg32)) < 1e-9
PY
# a given rate wins over the file's
"$TOKMETER" decide -p 50 -n 32 "${api[@]}" --results "$dir/r.jsonl" --match "| t1 |" \
  --device-decode 7 --json >"$dir/j4"
python3 -c "
import json; d=json.load(open('$dir/j4'))['inputs']
assert d['device_decode_tok_s']==7 and d['device_decode_from'] is None and d['device_prefill_from']
" || fail "given rate over the file's"

# --- a given rate wins: the file supplies only the rates not given ---------------
# A --ttft-sweep file holds prefill runs only; with --device-decode given it once
# exited 2 "no decode runs in the results".
"$TOKMETER" bench -m "$TOKMETER_FIXTURES/gguf/tiny-llama-Q4_0.gguf" --ttft-sweep -p 16,32,64 \
  -t 1 -r 1 --out "$dir/sweep.jsonl" >/dev/null 2>&1 || fail "ttft sweep for records"
"$TOKMETER" decide -p 40 -n 10 --results "$dir/sweep.jsonl" --device-decode 20 --api-ttft 1 \
  --api-decode 5 --json >"$dir/j6" || fail "prefill-only file with --device-decode refused"
python3 - "$dir/sweep.jsonl" "$dir/j6" <<'PY' || fail "prefill from a sweep, decode given"
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
pp32 = statistics.median(r["rate_tok_s"] for r in runs if r["record"] == "run"
                         and r.get("ok") and not r.get("warmup") and r["test"] == "pp32")
i = json.load(open(sys.argv[2]))["inputs"]
assert i["device_decode_tok_s"] == 20 and i["device_decode_from"] is None, i
assert abs(i["device_prefill_tok_s"] - pp32) < 1e-6 * pp32 and "pp32" in i["device_prefill_from"], (i, pp32)
PY
# without --device-decode the file must supply it: refused, naming what to give
expect_usage "prefill-only file, no decode rate" -p 40 -n 10 --results "$dir/sweep.jsonl" \
  --api-ttft 1 --api-decode 5
grep -q "no decode runs in the results (or give --device-decode)" "$dir/err" \
  || fail "no decode runs: $(cat "$dir/err")"
# both given: the file is not needed (not even when it could not supply them)
"$TOKMETER" decide -p 40 -n 10 --results "$dir/sweep.jsonl" --device-prefill 100 \
  --device-decode 20 --api-ttft 1 --api-decode 5 --json >"$dir/j7" || fail "both rates given"
python3 -c "
import json; i=json.load(open('$dir/j7'))['inputs']
assert i['device_prefill_tok_s']==100 and i['device_prefill_from'] is None, i
" || fail "both given"

# --- --match needs --results; bounds said as --help says them --------------------
expect_usage "--match without --results" "${base[@]}" --match t2
grep -q -- "--match chooses a configuration of --results" "$dir/err" || fail "match: $(cat "$dir/err")"
grep -q "requests per day, above 0" "$dir/help" || fail "-q help"
expect_usage "-q 0" "${base[@]}" -q 0
grep -q -- "--requests-per-day: '0' is not a number above 0" "$dir/err" || fail "-q 0: $(cat "$dir/err")"
expect_usage "--device-lifetime-days 0" "${base[@]}" --device-lifetime-days 0
grep -q -- "'0' is not a number above 0" "$dir/err" || fail "lifetime 0: $(cat "$dir/err")"
expect_usage "-q 1e-10" "${base[@]}" -q 1e-10
grep -q "below the limit of 1e-9" "$dir/err" || fail "-q 1e-10: $(cat "$dir/err")"
grep -q "at least 1e-9" "$dir/help" || fail "the 1e-9 floor is not in --help"

# --- docs/decide.md's example on results like the main job's -------------------
# (two models, Q4_0 and Q8_0, at 1 and 2 threads: "| t2 |" once matched both and
# exited 2; the type of a synthesized file was not in the label to match). The
# README's own decide example runs in its chain, in test_readme_examples.sh.
for t in Q4_0 Q8_0; do
  "$TOKMETER" synth --preset tiny --type $t -o "$dir/tiny-$t.gguf" >/dev/null 2>&1 || fail "synth $t"
  "$TOKMETER" bench -m "$dir/tiny-$t.gguf" -p 64 -n 32 -t 1,2 -r 1 --out "$dir/main.jsonl" \
    >/dev/null 2>&1 || fail "bench $t"
done
grep -q -- '--match "Q4_0 | t2 |"' "${TOKMETER_SOURCE_DIR:?source dir}/docs/decide.md" ||
  fail "docs/decide.md's example (--match \"Q4_0 | t2 |\") not found"
args=(-p 1000 -n 200 -q 1000 --results "$dir/main.jsonl" --match "Q4_0 | t2 |"
      --api-ttft 400ms --api-decode 50 --price-in 1 --price-out 4)
"$TOKMETER" decide "${args[@]}" --json >"$dir/j8" 2>"$dir/err" \
  || fail "docs/decide.md's example: $(cat "$dir/err")"
python3 -c "
import json; i=json.load(open('$dir/j8'))['inputs']
assert 'tiny-Q4_0.gguf' in i['device_decode_from'] and '| t2 |' in i['device_decode_from'], i
assert 'tiny-Q4_0.gguf' in i['device_prefill_from'] and '| t2 |' in i['device_prefill_from'], i
" || fail "docs/decide.md's example chose: $(cat "$dir/j8")"
echo "ok"
