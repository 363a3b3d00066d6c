#!/usr/bin/env bash
# test_import: `tokmeter import` end to end on the real llama-bench fixtures
# (-o json and -o jsonl): records appended and tied to one identity per input,
# values equal to llama-bench's samples, `-o -`, ceilings from --bandwidth and
# from the cached probe (at the run's thread count), and bad input: corrupt,
# empty, missing files and bad flags exit 2 without touching the results file.
set -euo pipefail
: "${TOKMETER:?}" "${TOKMETER_FIXTURES:?}"
. "$(dirname "$0")/lib.sh"
unset TOKMETER_PROBE_QUICK || true
LB="$TOKMETER_FIXTURES/llama-bench"
GGUF="$TOKMETER_FIXTURES/gguf/tiny-llama-Q4_0.gguf"

# --help lists every flag with its default
expect_exit 0 "$TOKMETER" import --help
for f in --out --gguf --bandwidth --compute --no-probe --help; do
  grep -q -- "$f" "$dir/out" || fail "--help does not list $f"
done
grep -q "default: tokmeter-results.jsonl" "$dir/out" || fail "--help: no default for --out"

# --- JSON and JSONL into one results file --------------------------------
expect_exit 0 "$TOKMETER" import -o "$dir/r.jsonl" "$LB/llama-bench-output.json"
grep -q "pp64" "$dir/out" && grep -q "tg32" "$dir/out" && grep -q " PF " "$dir/out" ||
  fail "table: $(cat "$dir/out")"
grep -q "2 tests, 4 runs" "$dir/out" || fail "counts: $(cat "$dir/out")"
expect_exit 0 "$TOKMETER" import --out "$dir/r.jsonl" "$LB/llama-bench-output.jsonl"
python3 - "$dir/r.jsonl" <<'PY' || fail "records (see above)"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
idents = [r for r in recs if r["record"] == "identity"]
assert len(idents) == 2, len(idents)
assert [r["record"] for r in recs[:8]] == ["identity"] + ["run"] * 4 + ["summary"] * 2 + ["end"]
for ident in idents:
    mine = [r for r in recs if r.get("identity") == ident["id"]]
    assert len(mine) == 7, len(mine)
    assert ident["backend"] == "llama-bench" and ident["target"] == "in-process"
    assert ident["machine"]["cpu"] == "AMD EPYC" and ident["machine"]["cores"] is None
runs = [r for r in recs if r["record"] == "run"]
assert len(runs) == 8
r0 = runs[0]
assert r0["test"] == "pp64" and r0["phase"] == "prefill" and r0["threads"] == 2
assert r0["model"]["type"] == "Q4_0" and r0["model"]["arch"] == "qwen3"
assert abs(r0["ms"] - 232.091) < 1e-9, r0["ms"]
assert abs(r0["rate_tok_s"] - 275.754) < 1e-3, r0["rate_tok_s"]
assert r0["ceiling"] is None and r0["percent_of_ceiling"] is None
# JSONL: the last tg sample was 70.41 tok/s
assert abs(runs[7]["rate_tok_s"] - 70.41) < 1e-3, runs[7]
assert runs[7]["test"] == "tg32" and runs[7]["warmup"] is False
sums = [r for r in recs if r["record"] == "summary"]
assert abs(sums[0]["reported"]["avg_ts"] - 272.752121) < 1e-9
assert sums[1]["rate_tok_s"]["n"] == 2
ends = [r for r in recs if r["record"] == "end"]
assert all(e["runs"] == 4 for e in ends)
PY

# -o -: records on stdout (valid JSONL), the table on stderr
expect_exit 0 "$TOKMETER" import -o - "$LB/llama-bench-output.jsonl"
[ "$(wc -l <"$dir/out")" = 8 ] || fail "-o -: $(wc -l <"$dir/out") lines on stdout, expected 8"
python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' "$dir/out" ||
  fail "-o -: stdout is not JSON Lines"
grep -q "pp64" "$dir/err" || fail "-o -: table not on stderr"
# stdin
expect_exit 0 "$TOKMETER" import -o - - <"$LB/llama-bench-output.json"
[ "$(wc -l <"$dir/out")" = 8 ] || fail "stdin: wrong line count"

# --- ceilings ---------------------------------------------------------------
# Given bandwidth: the tg runs get a decode ceiling, pp runs none (no compute,
# no probe); the tiny model is not the one llama-bench ran: warned.
expect_exit 0 "$TOKMETER" import -o "$dir/c.jsonl" -m "$GGUF" --bandwidth 28.6GB/s \
  "$LB/llama-bench-output.json"
grep -q "ceilings are for a different file" "$dir/err" || fail "no model-size warning: $(cat "$dir/err")"
grep -q "no cached probe" "$dir/err" || fail "no 'no cached probe' note: $(cat "$dir/err")"
grep -qx "ceilings: decode from --bandwidth 28.6 GB/s" "$dir/out" ||
  fail "where the ceilings came from: $(cat "$dir/out")"
python3 - "$dir/c.jsonl" <<'PY' || fail "ceilings from --bandwidth"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
tg = [r for r in recs if r["record"] == "run" and r["phase"] == "decode"]
pp = [r for r in recs if r["record"] == "run" and r["phase"] == "prefill"]
for r in tg:
    c = r["ceiling"]
    assert c["read_bandwidth_bytes_s"] == 28.6e9, c
    assert abs(c["ceiling_tok_s"] - 28.6e9 / c["bytes_per_token"]) < 1e-6 * c["ceiling_tok_s"], c
    assert abs(r["percent_of_ceiling"] - 100 * r["rate_tok_s"] / c["ceiling_tok_s"]) < 1e-6
for r in pp:
    assert r["ceiling"] is None and r["percent_of_ceiling"] is None, r
ident = recs[0]
assert ident["settings"]["imported"]["gguf"].endswith("tiny-llama-Q4_0.gguf")
assert isinstance(ident["model"]["bytes_per_token"], int) and ident["model"]["bytes_per_token"] > 0, ident["model"]  # integer bytes, as engine records
PY

# From the cached probe: a quick probe is used only by a quick caller, at the
# run's thread count (2).
"$TOKMETER" probe --quick -t 2 --json >"$dir/probe.json" 2>/dev/null || fail "probe --quick"
expect_exit 0 "$TOKMETER" import -o "$dir/p0.jsonl" -m "$GGUF" "$LB/llama-bench-output.json"
grep -q "quick one" "$dir/err" || fail "a quick probe must not be used silently: $(cat "$dir/err")"
# The fixture's runs name another CPU ("AMD EPYC") than this machine's
# probe: not held against it, said so; --this-machine says they ran here.
TOKMETER_PROBE_QUICK=1 expect_exit 0 "$TOKMETER" import -o "$dir/other.jsonl" -m "$GGUF" \
  "$LB/llama-bench-output.json"
grep -q "runs made on 'AMD EPYC', and this machine is '.*': its probe is not their ceiling" \
  "$dir/err" || fail "another machine's runs: $(cat "$dir/err")"
python3 - "$dir/other.jsonl" <<'PY' || fail "another machine's runs got this probe's ceilings"
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
runs = [r for r in runs if r["record"] == "run"]
assert runs and all(r["ceiling"] is None for r in runs), runs[0].get("ceiling")
PY
TOKMETER_PROBE_QUICK=1 expect_exit 0 "$TOKMETER" import -o "$dir/p.jsonl" -m "$GGUF" \
  --this-machine "$LB/llama-bench-output.json"
grep -q "cached probe" "$dir/out" || fail "no probe note in the table: $(cat "$dir/out")"
python3 - "$dir/p.jsonl" "$dir/probe.json" <<'PY' || fail "ceilings from the probe"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
probe = json.load(open(sys.argv[2]))
bw2 = [e["bytes_s"] for e in probe["read_bandwidth_by_threads"] if e["threads"] == 2][0]
tg = [r for r in recs if r["record"] == "run" and r["phase"] == "decode"]
# (records round to the byte per second)
assert tg and all(abs(r["ceiling"]["read_bandwidth_bytes_s"] - bw2) <= 1 for r in tg), (bw2, tg[0]["ceiling"])
pp = [r for r in recs if r["record"] == "run" and r["phase"] == "prefill"]
assert pp and all(r["ceiling"]["compute_path"] in ("int8", "f32") for r in pp), pp[0]["ceiling"]
PY
# --bandwidth without --compute: decode from the figure given, prefill from the
# probe, each said (the note claimed the probe's figures for both)
TOKMETER_PROBE_QUICK=1 expect_exit 0 "$TOKMETER" import -o "$dir/p2.jsonl" -m "$GGUF" \
  --this-machine --bandwidth 32.9GB/s "$LB/llama-bench-output.json"
grep -q "^ceilings: decode from --bandwidth 32.9 GB/s; prefill from the cached probe's compute" \
  "$dir/out" || fail "mixed ceiling sources: $(cat "$dir/out")"
grep -q "decode from the cached probe" "$dir/out" && fail "probe claimed for decode: $(cat "$dir/out")"
# --no-probe: blank again
TOKMETER_PROBE_QUICK=1 expect_exit 0 "$TOKMETER" import -o - --no-probe --this-machine \
  -m "$GGUF" "$LB/llama-bench-output.json"
grep -q '"ceiling":{' "$dir/out" && fail "--no-probe still has ceilings"

# --- bad input: exit 2, one line, results file untouched --------------------
cp "$dir/r.jsonl" "$dir/before.jsonl"
head -c 300 "$LB/llama-bench-output.json" >"$dir/cut.json"
expect_exit 2 "$TOKMETER" import -o "$dir/r.jsonl" "$LB/llama-bench-output.jsonl" "$dir/cut.json"
grep -q "cut.json: not valid JSON at byte" "$dir/err" || fail "corrupt: $(cat "$dir/err")"
[ "$(wc -l <"$dir/err")" = 1 ] || fail "corrupt: more than one line on stderr"
cmp -s "$dir/r.jsonl" "$dir/before.jsonl" || fail "a failed import changed the results file"
: >"$dir/empty.json"
expect_exit 2 "$TOKMETER" import -o "$dir/r.jsonl" "$dir/empty.json"
grep -q "no records in $dir/empty.json" "$dir/err" || fail "empty: $(cat "$dir/err")"
echo '[]' >"$dir/empty2.json"
expect_exit 2 "$TOKMETER" import -o "$dir/r.jsonl" "$dir/empty2.json"
grep -q "no records in" "$dir/err" || fail "[]: $(cat "$dir/err")"
cp "$LB/llama-bench-qwen3-0.6b-sweep.md" "$dir/sweep.md"
expect_exit 2 "$TOKMETER" import -o "$dir/r.jsonl" "$dir/sweep.md"
grep -q "expected '\['" "$dir/err" || fail "markdown: $(cat "$dir/err")"
echo '[{"model_type":"m","n_prompt":64,"n_gen":0,"samples_ns":[1]}]' >"$dir/nothreads.json"
expect_exit 2 "$TOKMETER" import -o "$dir/r.jsonl" "$dir/nothreads.json"
grep -q 'entry 0: field "n_threads" missing' "$dir/err" || fail "field: $(cat "$dir/err")"
expect_exit 2 "$TOKMETER" import -o "$dir/r.jsonl" "$dir/nope.json"
grep -q "cannot read" "$dir/err" || fail "missing file: $(cat "$dir/err")"
cmp -s "$dir/r.jsonl" "$dir/before.jsonl" || fail "a failed import changed the results file"
expect_exit 2 "$TOKMETER" import
expect_exit 2 "$TOKMETER" import --bandwidth fast "$LB/llama-bench-output.json"
expect_exit 2 "$TOKMETER" import --bogus "$LB/llama-bench-output.json"
expect_exit 2 "$TOKMETER" import -m "$dir/nope.gguf" "$LB/llama-bench-output.json"
echo "test_import: ok"
