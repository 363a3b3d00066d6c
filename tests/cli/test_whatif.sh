#!/usr/bin/env bash
# test_whatif: `tokmeter whatif` end to end. Expected figures are worked out by
# hand from docs/whatif.md (the arithmetic is in the comments), never copied
# from the tool's output.
set -euo pipefail
: "${TOKMETER:?binary path}"
. "$(dirname "$0")/lib.sh"

# --- help lists every flag ------------------------------------------------
"$TOKMETER" whatif --help >"$dir/help" || fail "--help exit code"
for flag in --gen-tokens --read-tokens --items --concurrency --step --rate --prefill-rate \
            --prefill-ratio --baseline --claim --claim-prompt --claim-answer --streams \
            --bytes-per-token --json --html --help; do
  grep -q -- "$flag" "$dir/help" || fail "--help does not list $flag"
done

# --- bad usage: exit 2, one message on stderr, nothing on stdout -------------
expect_usage() {
  local what=$1; shift
  set +e; "$TOKMETER" whatif "$@" >"$dir/out" 2>"$dir/err"; local rc=$?; set -e
  [ "$rc" = 2 ] || fail "$what: exit $rc, want 2 ($(cat "$dir/err"))"
  [ -s "$dir/err" ] || fail "$what: nothing on stderr"
  [ ! -s "$dir/out" ] || fail "$what: output on stdout"
}
expect_usage "no arguments"
expect_usage "unknown flag" -g 100 --rate 50 --bogus
expect_usage "no rate" -g 100
expect_usage "no gen tokens" --rate 50
expect_usage "zero rate" -g 100 --rate 0
expect_usage "bad rate" -g 100 --rate fast
expect_usage "downward sweep" -g 100 --rate 1000..10
expect_usage "bad step" -g 100 --rate 50 --step review
expect_usage "bad step unit" -g 100 --rate 50 --step review=5parsecs
expect_usage "read without prefill" -g 100 --read-tokens 500 --rate 50
grep -q -- "--prefill-rate" "$dir/err" || fail "read without prefill: does not name --prefill-rate"
expect_usage "zero items" -g 100 --rate 50 --items 0
expect_usage "claim with rate" --claim 1M --rate 50
expect_usage "bad claim" --claim lots

# --- bounds (stated in --help): exit 2 and a message naming the flag -----------
expect_flag() { # FLAG, then the arguments: usage error whose message names FLAG
  local flag=$1; shift
  expect_usage "$flag: $*" "$@"
  grep -q -- "$flag" "$dir/err" || fail "$*: message does not name $flag: $(cat "$dir/err")"
  [ "$(wc -l <"$dir/err")" -le 2 ] || fail "$*: more than one message: $(cat "$dir/err")"
}
big=99999999999999999999   # above 2^64: once printed as '-0 waves' and '31688087814 years0 s'
expect_flag --concurrency -g 100 -r 100 -c "$big"
expect_flag --concurrency -g 100 -r 100 -c 1000001          # streams: at most 1M
expect_flag --gen-tokens -g "$big" -r 100
expect_flag --gen-tokens -g 1000000000001 -r 100            # tokens: at most 1T
expect_flag --items -g 100 -r 100 --items "$big"
expect_flag --read-tokens -g 100 -r 100 --prefill-rate 10 --read-tokens "$big"
expect_flag --claim-prompt --claim 1M --claim-prompt "$big"
expect_flag --claim-answer --claim 1M --claim-answer "$big"
expect_flag --streams --claim 1M --streams "$big"
expect_flag --step -g 100 -r 100 --step "review=${big}d"
expect_flag --step -g 100 -r 100 --step review=36525.1d       # over 100 years
expect_flag --rate -g 100 -r 1e20
expect_flag --rate -g 100 -r 0.0001
expect_flag --prefill-rate -g 100 -r 100 --read-tokens 5 --prefill-rate 1e20
expect_flag --baseline -g 100 -r 100 --baseline 1e20
expect_flag --claim --claim 1e20
expect_flag --prefill-ratio -g 100 -r 100 --read-tokens 5 --prefill-ratio 1e9
expect_flag --bytes-per-token --claim 1M --bytes-per-token 2PB
# lists with an empty element are typos, not shorter lists
for list in 1,,2 ,1 1, 1M,, "1, ,2"; do expect_flag --rate -g 100 -r "$list"; done
for list in 1,,2 ,1 1,; do expect_flag --streams --claim 1M --streams "$list"; done
# two flags that set the same thing, or a flag the mode does not use
expect_flag --prefill-ratio -g 100 -r 100 --read-tokens 10 --prefill-rate 10 --prefill-ratio 2
expect_flag --items --claim 1M --items 5
expect_flag --step --claim 1M --step review=10
expect_flag --streams -g 100 -r 100 --streams 5
expect_flag --bytes-per-token -g 100 -r 100 --bytes-per-token 4GB
# in range one by one, beyond a million years together
expect_usage "a job of a million years" -g 1T --items 1T -r 0.001
grep -q "million years" "$dir/err" || fail "million years: $(cat "$dir/err")"
# the bounds themselves are accepted, and exact
"$TOKMETER" whatif -g 1T --items 1M -c 1M -r 1T --json >"$dir/edge" || fail "edge values refused"
python3 -c "
import json; d=json.load(open('$dir/edge'))
assert d['inputs']['gen_tokens'] == 1e12 and d['inputs']['concurrency'] == 1e6, d['inputs']
assert d['rows'][0]['waves'] == 1 and d['rows'][0]['generate_s'] == 1.0, d['rows']
" || fail "edge values: $(cat "$dir/edge")"
# a cell wider than its column still leaves a blank before the next one
"$TOKMETER" whatif -g 1T -r 1000 >"$dir/wide" || fail "wide cell run"
grep -qE "^1000 tok/s +1000 tok/s +- +31.7 years +0 s +31.7 years +1.00x +0.0%$" "$dir/wide" \
  || fail "wide cells run together: $(cat "$dir/wide")"
# a rate below 1 tok/s is shown, not rounded to 0.00
"$TOKMETER" whatif -g 10 -r 0.001 >"$dir/slow" || fail "slow rate run"
grep -qE "^0.001 tok/s " "$dir/slow" || fail "0.001 tok/s shown as: $(cat "$dir/slow")"

# --- the worked example -------------------------------------------------------
# 10 items, 4 streams -> 3 waves; per item read 2000 at 4000 tok/s, write 1000.
# steps: test 30 s per item (3 waves x 30 = 90 s), review 600 s per job.
# at 100 tok/s: 1.5 + 30 + 90 + 600 = 721.5 s = "12m 2s"; fixed share 690/721.5 = 95.6%
# at 1000 tok/s: 1.5 + 3 + 690 = 694.5 s = "11m 35s"; speedup 721.5/694.5 = 1.04x
# floor: 691.5 s = "11m 32s"; at most 721.5/691.5 = 1.04x
args=(-g 1000 --read-tokens 2000 --items 10 -c 4 --prefill-rate 4000 --step test=30/item
      --step review=10m)
"$TOKMETER" whatif "${args[@]}" --rate 100,1000 >"$dir/table" || fail "table run"
grep -E "^100 tok/s +400 tok/s +1.50 s +30.0 s +11m 30s +12m 2s +1.00x +95.6%$" "$dir/table" \
  >/dev/null || fail "row at 100 tok/s: $(cat "$dir/table")"
grep -E "^1000 tok/s +4000 tok/s +1.50 s +3.00 s +11m 30s +11m 35s +1.04x +99.4%$" "$dir/table" \
  >/dev/null || fail "row at 1000 tok/s: $(cat "$dir/table")"
grep -q "floor (infinitely fast generation): 11m 32s" "$dir/table" || fail "floor line"

"$TOKMETER" whatif "${args[@]}" --rate 100..1M --json >"$dir/json" || fail "json run"
python3 - "$dir/json" <<'PY' || fail "json values"
import json, sys
d = json.load(open(sys.argv[1]))
rows = d["rows"]
rates = [r["rate_tok_s"] for r in rows]
want = [100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6]
assert len(rates) == len(want), rates
assert all(abs(a - b) < 1e-6 * b for a, b in zip(rates, want)), rates
r0, rl = rows[0], rows[-1]
assert abs(r0["total_s"] - 721.5) < 1e-9, r0
assert abs(r0["read_s"] - 1.5) < 1e-12 and abs(r0["item_steps_s"] - 90) < 1e-12
assert abs(r0["job_steps_s"] - 600) < 1e-12 and r0["waves"] == 3
assert abs(rl["generate_s"] - 0.003) < 1e-12, rl
assert abs(rl["speedup"] - 721.5 / 691.503) < 1e-9, rl
assert abs(d["limit_s"] - 691.5) < 1e-9 and abs(d["max_speedup"] - 721.5 / 691.5) < 1e-9
assert d["inputs"]["steps"][0] == {"name": "test", "seconds": 30.0, "per": "item"}
assert d["inputs"]["baseline_tok_s"] == 100
PY

# a baseline other than the lowest rate: speedup 1.00x at the baseline itself
"$TOKMETER" whatif -g 500 --rate 50,100 --baseline 100 --json >"$dir/json2"
python3 -c "
import json,sys; d=json.load(open('$dir/json2'))
assert abs(d['rows'][0]['speedup']-0.5)<1e-12 and abs(d['rows'][1]['speedup']-1)<1e-12, d['rows']
assert d['rows'][0]['prefill_tok_s'] is None   # nothing read: blank, not 0
" || fail "baseline / blank prefill"

# --- the claim ----------------------------------------------------------------
"$TOKMETER" whatif --claim "1M tok/s" --bytes-per-token 4GB --prefill-rate 2000 >"$dir/claim"
grep -q "context capacity (CC)" "$dir/claim" || fail "claim: no context reading"
grep -q "100k-token prompt is read in 100 ms" "$dir/claim" || fail "claim: prefill consequence"
grep -q "1000-token answer takes 1.00 ms" "$dir/claim" || fail "claim: decode consequence"
grep -q "4 PB/s" "$dir/claim" || fail "claim: bandwidth (1M x 4 GB = 4 PB/s)"
grep -q "takes 8m 20s" "$dir/claim" || fail "claim: 1M tokens at 2000 tok/s = 500 s"
grep -E "^  10k +100 tok/s +10.0 s$" "$dir/claim" >/dev/null || fail "claim: 10k streams row"
# the header counts the readings that follow (it said "five" over four)
python3 - "$dir/claim" <<'PY' || fail "claim: header and readings disagree: $(head -1 "$dir/claim")"
import re, sys
text = open(sys.argv[1]).read()
words = {"two": 2, "three": 3, "four": 4, "five": 5}
said = re.search(r"read as each of the (\w+)", text.splitlines()[0]).group(1)
readings = re.findall(r"^[a-z -]+ \((CC|PF|DC|AT|FX)\): ", text, re.M)
assert words[said] == len(readings) == 4, (said, readings)
PY
"$TOKMETER" whatif --claim 1M --streams 1000 --json >"$dir/cj"
python3 -c "
import json; d=json.load(open('$dir/cj'))
assert d['aggregate']==[{'streams':1000.0,'per_stream_tok_s':1000.0,'answer_s':1.0}], d['aggregate']
assert d['decode']['bandwidth_bytes_s'] is None and d['context']['fill_s'] is None
assert abs(d['prefill']['prompt_s']-0.1)<1e-15
" || fail "claim json"

# --- the HTML plot: one mark per rate for each drawn series --------------------
"$TOKMETER" whatif "${args[@]}" --rate 100..1000 --html "$dir/w.html" >/dev/null || fail "html"
grep -q '<svg class="tm-plot"' "$dir/w.html" || fail "html: no plot"
# 4 rates (100 200 500 1000) x 4 series (end-to-end, generate, fixed, read) = 16 marks
grep -q 'data-marks="16"' "$dir/w.html" || fail "html: want 16 marks: $(grep -o 'data-marks="[0-9]*"' "$dir/w.html")"
grep -q "(tok/s)" "$dir/w.html" || fail "html: x axis unit"
set +e; "$TOKMETER" whatif -g 10 --rate 5 --html "$dir/no/such/dir.html" >/dev/null 2>"$dir/err"; rc=$?; set -e
[ "$rc" = 1 ] || fail "unwritable html: exit $rc, want 1"
echo "ok"
