#!/usr/bin/env bash
# test_compare: `tokmeter compare A B` on hand-written records (rule 12's
# example not ranked, a clear gain ranked in the right direction for tok/s and
# ms, drift flagged, --json, the bootstrap deterministic, the prediction from
# bytes per token, and its note when a side's ceilings spread), on real
# records from `tokmeter bench`, and bad input
# (empty, corrupt, missing files, bad flags: exit 2).
set -euo pipefail
: "${TOKMETER:?}"
. "$(dirname "$0")/lib.sh"
export TOKMETER_PROBE_QUICK=1

# run ID TEST MODEL TYPE MS RATE [BYTES_PER_TOKEN]: one timed in-process run line
# (tokens: the N of TEST; MS x RATE must make N, as the reader checks)
run() {
  printf '{"record":"run","schema":1,"identity":"%s","backend":"engine","target":"in-process","model":{"name":"%s","type":"%s"},"test":"%s","phase":"%s","threads":2,"depth":0,"warmup":false,"ok":true,"tokens":%s,"ms":%s,"rate_tok_s":%s,"ceiling":{"ceiling_tok_s":90,"read_bandwidth_bytes_s":3e10,"bytes_per_token":%s}}\n' \
    "$1" "$3" "$4" "$2" "$( [[ $2 == pp* ]] && echo prefill || echo decode )" "${2#??}" "$5" "$6" "${7:-1e9}"
}

{
  echo '{"record":"identity","schema":1,"id":"A","backend":"engine"}'
  # tg128: rule 12's example, 15.66 +- 2.17 (A) vs 17.43 +- 0.74 (B)
  run A tg128 m.gguf Q8_0 9488 13.49; run A tg128 m.gguf Q8_0 8174 15.66; run A tg128 m.gguf Q8_0 7179 17.83
  # pp512: a clear gain in B
  run A pp512 m.gguf Q8_0 3192 160.4; run A pp512 m.gguf Q8_0 3216 159.2; run A pp512 m.gguf Q8_0 3176 161.2
  run A pp512 m.gguf Q8_0 3200 160.0
  echo '{"record":"end","schema":1,"identity":"A"}'
} >"$dir/a.jsonl"
{
  echo '{"record":"identity","schema":1,"id":"B","backend":"engine"}'
  run B tg128 m.gguf Q8_0 7669 16.69; run B tg128 m.gguf Q8_0 7344 17.43; run B tg128 m.gguf Q8_0 7044 18.17
  run B pp512 m.gguf Q8_0 2319 220.8; run B pp512 m.gguf Q8_0 2331 219.6; run B pp512 m.gguf Q8_0 2302 222.4
  run B pp512 m.gguf Q8_0 2327 220.0
} >"$dir/b.jsonl"

expect_exit 0 "$TOKMETER" compare "$dir/a.jsonl" "$dir/b.jsonl"
out=$(cat "$dir/out")
row() { grep -E "^  $1 " "$dir/out" || fail "no row for $1 in: $out"; }
row decode_tok_s | grep -q "not distinguishable" || fail "rule 12's example was ranked: $(row decode_tok_s)"
row decode_tok_s | grep -q "15.7 tok/s (3)" || fail "A median of decode: $(row decode_tok_s)"
row decode_tok_s | grep -q "17.4 tok/s (3)" || fail "B median of decode: $(row decode_tok_s)"
row prefill_tok_s | grep -q " faster" || fail "a clear prefill gain not ranked faster: $(row prefill_tok_s)"
row prefill_ms | grep -q " faster" || fail "lower ms must read as faster: $(row prefill_ms)"
row prefill_ms | grep -q "3.20 s (4)" || fail "ms printed as a duration: $(row prefill_ms)"
grep -q "drift" "$dir/out" && fail "no drift expected: $out"

# the other way round: slower
expect_exit 0 "$TOKMETER" compare "$dir/b.jsonl" "$dir/a.jsonl"
grep -E "^  prefill_tok_s " "$dir/out" | grep -q " slower" || fail "reversed comparison not slower"
grep -E "^  prefill_ms " "$dir/out" | grep -q " slower" || fail "reversed ms not slower"

# --json: exact interval, verdicts, direction
expect_exit 0 "$TOKMETER" compare --json "$dir/a.jsonl" "$dir/b.jsonl"
python3 - "$dir/out" <<'PY' || fail "--json document (above)"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["method"] == "welch" and abs(d["confidence"] - 0.95) < 1e-12, d
rows = {r["metric"]: r for r in d["rows"]}
dc = rows["decode_tok_s"]
assert dc["verdict"] == "not distinguishable", dc
# hand-computed (mpmath): Welch on logs of the three runs a side
assert abs(dc["ratio"] - 1.11956986487089) < 1e-9, dc["ratio"]
assert abs(dc["ci"]["df"] - 2.36742068041399) < 1e-8, dc["ci"]
assert abs(dc["ci"]["lo"] - 0.818251609860887) < 1e-8 and abs(dc["ci"]["hi"] - 1.5318474992553) < 1e-8, dc["ci"]
assert rows["prefill_tok_s"]["verdict"] == "faster" and rows["prefill_ms"]["verdict"] == "faster"
assert rows["prefill_ms"]["lower_is_better"] is True
assert rows["prefill_tok_s"]["ci"]["lo"] > 1
assert rows["prefill_tok_s"]["quantity"] == "PF" and rows["prefill_ms"]["unit"] == "ms"
assert dc["predicted_ratio"] is None, dc   # same file, same machine: nothing to predict
assert d["only_a"] == 0 and d["only_b"] == 0
PY

# bootstrap: deterministic, and the same verdicts here
expect_exit 0 "$TOKMETER" compare --method bootstrap --json "$dir/a.jsonl" "$dir/b.jsonl"
cp "$dir/out" "$dir/boot1"
expect_exit 0 "$TOKMETER" compare --method bootstrap --json "$dir/a.jsonl" "$dir/b.jsonl"
cmp -s "$dir/out" "$dir/boot1" || fail "bootstrap output differs between two runs with the default seed"
python3 - "$dir/out" <<'PY' || fail "bootstrap verdicts"
import json, sys
d = json.load(open(sys.argv[1]))
rows = {r["metric"]: r for r in d["rows"]}
assert d["method"] == "bootstrap" and d["resamples"] == 10000
assert rows["prefill_tok_s"]["verdict"] == "faster", rows["prefill_tok_s"]
assert rows["decode_tok_s"]["verdict"] == "not distinguishable", rows["decode_tok_s"]
assert rows["decode_tok_s"]["ci"]["df"] is None
PY
expect_exit 0 "$TOKMETER" compare --confidence 90 --json "$dir/a.jsonl" "$dir/b.jsonl"
grep -q '"confidence": 0.9' "$dir/out" || fail "--confidence 90 is not 0.9"

# another quantization (by position) with bytes per token 39% lower, and a drift in B
{
  echo '{"record":"identity","schema":1,"id":"C","backend":"engine"}'
  for r in 28.0 27.6 27.2 26.9 26.5 26.1 25.8 25.3; do
    run C tg128 q4.gguf Q4_0 "$(python3 -c "print(128000/$r)")" "$r" 0.61e9
  done
} >"$dir/c.jsonl"
expect_exit 0 "$TOKMETER" compare "$dir/a.jsonl" "$dir/c.jsonl"
grep -q "differs: model, type" "$dir/out" || fail "pairing by position not shown: $(cat "$dir/out")"
grep -E "^  decode_tok_s " "$dir/out" | grep -q "1.639 (+63.9%) from bytes/token" ||
  fail "predicted ratio from bytes per token: $(grep decode_tok_s "$dir/out")"
grep -q "drift: B decode_tok_s gets slower over its 8 runs" "$dir/out" || fail "drift in B not flagged: $(cat "$dir/out")"
grep -q "drift: A" "$dir/out" && fail "drift flagged in A (3 noisy runs)"
grep -q "prefill" "$dir/out" && fail "prefill has no partner in C: $(cat "$dir/out")"
grep -q "2 series only in A, 0 only in B" "$dir/out" || fail "unpaired counts: $(tail -1 "$dir/out")"
grep -q "ceilings: " "$dir/out" && fail "ceiling note without a spread: $(cat "$dir/out")"
# B's runs held against ceilings 33% apart: the prediction says it is that uncertain
awk 'NR > 1 && NR % 2 == 0 { sub(/"ceiling_tok_s":90/, "\"ceiling_tok_s\":120") } { print }' \
  "$dir/c.jsonl" >"$dir/d.jsonl"
expect_exit 0 "$TOKMETER" compare "$dir/a.jsonl" "$dir/d.jsonl"
grep -q "^    ceilings: B: the runs' ceilings spread 33% (90.0 to 120 tok/s) (the prediction is uncertain by as much)$" \
  "$dir/out" || fail "no ceiling note on B: $(cat "$dir/out")"
grep -q "ceilings: A" "$dir/out" && fail "ceiling note on A, whose ceilings agree"
expect_exit 0 "$TOKMETER" compare --json "$dir/a.jsonl" "$dir/d.jsonl"
python3 - "$dir/out" <<'PY' || fail "ceiling notes in --json"
import json, sys
rows = [r for r in json.load(open(sys.argv[1]))["rows"] if r["metric"] == "decode_tok_s"]
assert rows and rows[0]["ceiling_note_a"] is None, rows
assert rows[0]["ceiling_note_b"].startswith("the runs' ceilings spread 33%"), rows
PY

# real records from the engine: the same file against itself is never ranked
if "$TOKMETER" synth --preset tiny -o "$dir/tiny.gguf" >/dev/null 2>"$dir/err"; then
  "$TOKMETER" bench -m "$dir/tiny.gguf" -p 16 -n 32 -t 1 -r 3 --out "$dir/real.jsonl" >/dev/null 2>"$dir/err" ||
    fail "bench for real records: $(cat "$dir/err")"
  expect_exit 0 "$TOKMETER" compare "$dir/real.jsonl" "$dir/real.jsonl"
  grep -q "4 compared: 0 ranked, 4 not distinguishable" "$dir/out" || fail "self-comparison: $(cat "$dir/out")"
  grep -q "| tg32 | t1 | d0" "$dir/out" || fail "real configuration key missing: $(cat "$dir/out")"
else
  fail "synth --preset tiny: $(cat "$dir/err")"
fi

# bad and empty input: exit 2, one clear line
: >"$dir/empty.jsonl"
expect_exit 2 "$TOKMETER" compare --json=1 "$dir/a.jsonl" "$dir/b.jsonl"
grep -q "option '--json' takes no value" "$dir/err" || fail "compare --json=1: $(cat "$dir/err")"
expect_exit 2 "$TOKMETER" compare "$dir/empty.jsonl" "$dir/b.jsonl"
grep -q "no records in $dir/empty.jsonl" "$dir/err" || fail "empty file message: $(cat "$dir/err")"
echo 'not json' >"$dir/bad.jsonl"
expect_exit 2 "$TOKMETER" compare "$dir/a.jsonl" "$dir/bad.jsonl"
grep -q "bad.jsonl:1" "$dir/err" || fail "corrupt file message: $(cat "$dir/err")"
expect_exit 2 "$TOKMETER" compare "$dir/a.jsonl" "$dir/missing.jsonl"
expect_exit 2 "$TOKMETER" compare "$dir/a.jsonl"
expect_exit 2 "$TOKMETER" compare --method magic "$dir/a.jsonl" "$dir/b.jsonl"
expect_exit 2 "$TOKMETER" compare --confidence 1.5 "$dir/a.jsonl" "$dir/b.jsonl"
expect_exit 2 "$TOKMETER" compare --bogus "$dir/a.jsonl" "$dir/b.jsonl"
echo '{"record":"identity","schema":1,"id":"W","backend":"engine"}' >"$dir/idonly.jsonl"
expect_exit 2 "$TOKMETER" compare "$dir/a.jsonl" "$dir/idonly.jsonl"
grep -q "no timed successful runs" "$dir/err" || fail "identity-only file: $(cat "$dir/err")"
[ "$(wc -l <"$dir/err")" = 1 ] || fail "more than one error line: $(cat "$dir/err")"

# flag bounds: exit 2 with one message naming the flag, no output
expect_flag() { # FLAG, then the compare arguments
  local flag=$1; shift
  expect_exit 2 "$TOKMETER" compare "$@"
  grep -q -- "$flag" "$dir/err" || fail "'$*': message does not name $flag: $(cat "$dir/err")"
  [ ! -s "$dir/out" ] || fail "'$*': output on stdout"
}
ab=("$dir/a.jsonl" "$dir/b.jsonl")
# a seed the JSON cannot hold exactly was once clamped to 9223372036854775807
expect_flag --seed --method bootstrap --seed 99999999999999999999999 "${ab[@]}"
expect_flag --seed --method bootstrap --seed 18446744073709551615 "${ab[@]}"
expect_flag --seed --method bootstrap --seed 9223372036854775808 "${ab[@]}"
expect_flag --seed --method bootstrap --seed -1 "${ab[@]}"
expect_flag --seed --method bootstrap --seed 0x10 "${ab[@]}"
# the largest seed is stored exactly
expect_exit 0 "$TOKMETER" compare --method bootstrap --resamples 100 --seed 9223372036854775807 \
  --json "${ab[@]}"
grep -q '"seed": 9223372036854775807,' "$dir/out" || fail "largest seed not stored exactly: $(grep seed "$dir/out")"
expect_exit 0 "$TOKMETER" compare --method bootstrap --seed 12345 --json "${ab[@]}"
grep -q '"seed": 12345,' "$dir/out" || fail "--seed 12345 not in the JSON: $(grep seed "$dir/out")"
# --confidence: a percentage from 50 to 99.9, as --help says
expect_flag --confidence --confidence 99.95 "${ab[@]}"
expect_flag --confidence --confidence 99.99 "${ab[@]}"
expect_flag --confidence --confidence nan "${ab[@]}"
expect_exit 0 "$TOKMETER" compare --confidence 99.9 --json "${ab[@]}"
grep -q '"confidence": 0.999' "$dir/out" || fail "--confidence 99.9 is not 0.999"
# bootstrap-only flags with the welch method would change nothing
expect_flag --resamples --resamples 100 "${ab[@]}"
expect_flag --resamples --method welch --resamples 100 "${ab[@]}"
expect_flag --seed --seed 5 "${ab[@]}"
grep -q "applies to --method bootstrap" "$dir/err" || fail "welch --seed: $(cat "$dir/err")"
expect_exit 0 "$TOKMETER" compare --resamples 100 --method bootstrap "${ab[@]}"

expect_exit 0 "$TOKMETER" compare --help
for f in --confidence --method --resamples --seed --json --help; do
  grep -q -- "$f" "$dir/out" || fail "--help does not list $f"
done
grep -q "default 0.95" "$dir/out" || fail "--help: confidence default"
echo "test_compare: ok"
