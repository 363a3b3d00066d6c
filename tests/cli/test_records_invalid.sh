#!/usr/bin/env bash
# test_records_invalid: report, compare and decide --results refuse a results
# file whose records break docs/records.md's types, or whose run figures
# contradict each other (rate x time = tokens) (exit 2, one line naming the
# file, the line and the field), and still read the files tokmeter wrote
# (exit 0), in-process and from a (fake) server. The inputs are made here: one real `tokmeter bench` run, then one
# field of every run record changed with python3. Also import: llama-bench
# output whose samples disagree, and -o onto a file that is not JSON Lines.
set -euo pipefail
: "${TOKMETER:?binary path}" "${TOKMETER_FIXTURES:?fixtures dir}"
. "$(dirname "$0")/lib.sh"
export TOKMETER_PROBE_QUICK=1

good="$dir/good.jsonl"
# -n 24: the fewest generated tokens that give a decode rate (rule 5), which
# decide --results needs
"$TOKMETER" bench -m "$TOKMETER_FIXTURES/gguf/tiny-qwen3-Q8_0.gguf" -p 8 -n 24 -t 1 -r 2 \
  --out "$good" >/dev/null 2>"$dir/err" || fail "bench for real records: $(cat "$dir/err")"

api=(--api-ttft 1s --api-decode 50)
"$TOKMETER" report "$good" >"$dir/out" 2>"$dir/err" || fail "report good.jsonl: $(cat "$dir/err")"
grep -q "pp8" "$dir/out" && grep -q "tg24" "$dir/out" || fail "report good.jsonl rows: $(cat "$dir/out")"
"$TOKMETER" compare "$good" "$good" >/dev/null 2>"$dir/err" || fail "compare good: $(cat "$dir/err")"
# one invocation split over two files (the second without its identity line):
# valid together, and report shows the same rows as from the whole file
head -n 3 "$good" >"$dir/part1.jsonl"
tail -n +4 "$good" >"$dir/part2.jsonl"
"$TOKMETER" report "$dir/part1.jsonl" "$dir/part2.jsonl" >"$dir/split.out" 2>"$dir/err" ||
  fail "report of a split file: $(cat "$dir/err")"
grep -q "pp8" "$dir/split.out" && grep -q "tg24" "$dir/split.out" ||
  fail "report of a split file: rows missing: $(cat "$dir/split.out")"
"$TOKMETER" decide -p 8 -n 4 "${api[@]}" --results "$good" >/dev/null 2>"$dir/err" ||
  fail "decide good: $(cat "$dir/err")"

# name, then python3 that edits run record r (a dict) in place; the line
# number of the first run record is where the message must point.
python3 - "$good" "$dir" <<'PY' || fail "making the invalid files"
import json, sys
src, out = sys.argv[1], sys.argv[2]
lines = [json.loads(l) for l in open(src) if l.strip()]
first_run = next(i for i, l in enumerate(lines) if l["record"] == "run") + 1
def rate_neg(r): r["rate_tok_s"] = -100
def rate_zero(r): r["rate_tok_s"] = 0
def rate_str(r): r["rate_tok_s"] = "fast"
def ms_neg(r): r["ms"] = -1
def ms_zero(r): r["ms"] = 0
def rate_huge(r): r["rate_tok_s"] = 1e308
def threads_str(r): r["threads"] = "x"
def threads_neg(r): r["threads"] = -5
def threads_huge(r): r["threads"] = 1e300
def depth_neg(r): r["depth"] = -1
def test_bad(r): r["test"] = "zz99"
def test_empty(r): r["test"] = ""
def test_num(r): r["test"] = 5
def phase_bad(r): r["phase"] = "sideways"
def warmup_str(r): r["warmup"] = "no"
def ident_mismatch(r): r["identity"] = "deadbeef"
def ident_absent(r): del r["identity"]
cases = {f.__name__: f for f in [rate_neg, rate_zero, rate_str, ms_neg, ms_zero, rate_huge,
         threads_str, threads_neg,
         threads_huge, depth_neg, test_bad, test_empty, test_num, phase_bad, warmup_str,
         ident_mismatch, ident_absent]}
expect = open(f"{out}/expect.txt", "w")
msgs = {"rate_neg": "rate_tok_s -100 is not a positive rate",
        "rate_zero": "rate_tok_s 0 is not a positive rate",
        "rate_str": 'rate_tok_s "fast" is not a positive rate',
        "ms_neg": "ms -1 is not a time > 0 ms",
        "ms_zero": "ms 0 is not a time > 0 ms",
        "rate_huge": "rate_tok_s 1e+308 is not a positive rate",
        "threads_str": 'threads "x" is not a positive integer',
        "threads_neg": "threads -5 is not a positive integer",
        "threads_huge": "threads 1e+300 is not a positive integer",
        "depth_neg": "depth -1 is not a non-negative integer",
        "test_bad": 'test "zz99" is not pp<N> or tg<N>',
        "test_empty": 'test "" is not pp<N> or tg<N>',
        "test_num": "test 5 is not pp<N> or tg<N>",
        "phase_bad": 'phase "sideways" does not match test',
        "warmup_str": 'warmup "no" is not true or false',
        "ident_mismatch": "identity deadbeef names no identity line in this file",
        "ident_absent": "run's identity missing is not an identity id"}
for name, edit in cases.items():
    with open(f"{out}/{name}.jsonl", "w") as f:
        for l in lines:
            l = dict(l)
            if l["record"] == "run":
                edit(l)
            f.write(json.dumps(l) + "\n")
    expect.write(f"{name}\t{first_run}\t{msgs[name]}\n")
# the identity line dropped: the first remaining line is named
with open(f"{out}/ident_missing.jsonl", "w") as f:
    for l in lines[1:]:
        f.write(json.dumps(l) + "\n")
expect.write(f"ident_missing\t1\tidentity {lines[0]['id']} names no identity line in this file\n")
# the identity renamed to an unknown record kind: its runs are orphans
with open(f"{out}/record_unknown.jsonl", "w") as f:
    for l in lines:
        l = dict(l)
        if l["record"] == "identity":
            l["record"] = "zzz"
        f.write(json.dumps(l) + "\n")
expect.write(f"record_unknown\t{first_run}\tidentity {lines[0]['id']} names no identity line in this file\n")
# a blank rate (null) is legitimate: tokmeter writes null for a rate it
# could not compute; kept as a valid file
with open(f"{out}/rate_null.jsonl", "w") as f:
    for l in lines:
        l = dict(l)
        if l["record"] == "run" and l.get("test", "").startswith("tg"):
            l["rate_tok_s"] = None
        f.write(json.dumps(l) + "\n")
PY

# run CMD...: exit 2, nothing on stdout, exactly one line on stderr (decide's
# usage errors add a "Try 'tokmeter decide --help'." hint line: not counted),
# naming file:line: and the field.
expect_refused() {
  local what=$1 file=$2 line=$3 msg=$4; shift 4
  set +e; "$@" >"$dir/out" 2>"$dir/err"; local rc=$?; set -e
  [ "$rc" = 2 ] || fail "$what: exit $rc, want 2 ($(cat "$dir/err"))"
  [ ! -s "$dir/out" ] || fail "$what: output on stdout: $(head -3 "$dir/out")"
  grep -v "^Try 'tokmeter [a-z]* --help'\.$" "$dir/err" >"$dir/err1" || true
  [ "$(wc -l <"$dir/err1")" = 1 ] || fail "$what: want one line, got: $(cat "$dir/err")"
  grep -qF -- "$file:$line: $msg" "$dir/err1" ||
    fail "$what: want '$file:$line: $msg', got: $(cat "$dir/err1")"
}

n=0
while IFS=$'\t' read -r name line msg; do
  f="$dir/$name.jsonl"
  expect_refused "report $name" "$f" "$line" "$msg" "$TOKMETER" report "$f"
  expect_refused "compare good $name" "$f" "$line" "$msg" "$TOKMETER" compare "$good" "$f"
  expect_refused "compare $name good" "$f" "$line" "$msg" "$TOKMETER" compare "$f" "$good"
  expect_refused "decide $name" "$f" "$line" "$msg" \
    "$TOKMETER" decide -p 8 -n 4 "${api[@]}" --results "$f"
  n=$((n + 1))
done <"$dir/expect.txt"
[ "$n" = 19 ] || fail "expected 19 invalid files, ran $n"

# --- figures that contradict each other (src/analysis/results_agree.c) ---------
# Each rate is a count over a time the same record carries: rate x ms / 1000
# = tokens. Honest records from both writers (the in-process run above, and
# a server run against the fake llama.cpp server) are read; one figure of one
# run edited by more than 2% is refused, naming file:line and the keys; an
# edit within 1% (rounding) is read.
start_server llama --mode paced --flavor llamacpp --template-tokens 14 --prompt-cache \
  --a 5 --b 0.02 --c 1
srv="$dir/srv.jsonl"
NO_PROXY='*' "$TOKMETER" bench --url "http://127.0.0.1:$PORT" -w generate -r 2 --out "$srv" \
  >/dev/null 2>"$dir/err" || fail "bench --url for real server records: $(cat "$dir/err")"
"$TOKMETER" report "$srv" >/dev/null 2>"$dir/err" || fail "report srv.jsonl: $(cat "$dir/err")"
"$TOKMETER" compare "$srv" "$srv" >/dev/null 2>"$dir/err" || fail "compare srv: $(cat "$dir/err")"
"$TOKMETER" decide -p 8 -n 4 "${api[@]}" --results "$srv" >/dev/null 2>"$dir/err" ||
  fail "decide srv: $(cat "$dir/err")"

python3 - "$good" "$srv" "$dir" <<'PY' || fail "making the contradicting files"
import json, sys
good, srv, out = sys.argv[1], sys.argv[2], sys.argv[3]
def load(f): return [json.loads(l) for l in open(f) if l.strip()]
expect = open(f"{out}/agree_expect.txt", "w")
def write(name, lines, idx, edit, msg):
    lines = [dict(l) for l in lines]
    lines[idx] = json.loads(json.dumps(lines[idx]))  # a deep copy to edit
    edit(lines[idx])
    with open(f"{out}/{name}.jsonl", "w") as f:
        for l in lines:
            f.write(json.dumps(l) + "\n")
    expect.write(f"{name}\t{idx + 1}\t{msg}\n")
def prod(rate, rk, ms, mk, name, n):
    return (f"{rk} {rate:g} tok/s x {mk} {ms:g} ms is {rate * ms / 1000:.6g} tokens, "
            f"but {name} is {n}: the figures contradict each other (more than 2% apart)")

# in-process: the first tg run (its decode curve carries per-segment times)
eng = load(good)
i = next(k for k, l in enumerate(eng) if l["record"] == "run" and l["test"].startswith("tg"))
r = eng[i]
write("eng_rate", eng, i, lambda l: l.update(rate_tok_s=r["rate_tok_s"] * 1.1),
      prod(r["rate_tok_s"] * 1.1, "rate_tok_s", r["ms"], "ms", "tokens", r["tokens"]))
write("eng_ms", eng, i, lambda l: l.update(ms=r["ms"] * 0.9),
      prod(r["rate_tok_s"], "rate_tok_s", r["ms"] * 0.9, "ms", "tokens", r["tokens"]))
n = r["tokens"]
write("eng_tokens", eng, i, lambda l: l.update(tokens=n * 2, ms=r["ms"] * 2),
      f'tokens {n * 2} is not the {n} tokens test "{r["test"]}" names')
seg = r["decode_by_segment"][0]
def seg_edit(l): l["decode_by_segment"][0]["tok_s"] = seg["tok_s"] * 1.5
write("eng_segment", eng, i, seg_edit,
      prod(seg["tok_s"] * 1.5, "decode_by_segment[0].tok_s", seg["ms"], "decode_by_segment[0].ms",
           "decode_by_segment[0] to - from + 1", seg["to"] - seg["from"] + 1))

# server: the first timed run (llama.cpp timings, client and server rates)
sl = load(srv)
j = next(k for k, l in enumerate(sl) if l["record"] == "run" and not l["warmup"]
         and not l["calibration"])
s = sl[j]
t, c, sv, rt = s["tokens"], s["client"], s["server"], s["rates"]
assert rt["prefill_tok_s"]["server"] and rt["prefill_tok_s"]["client"], rt
assert rt["decode_tok_s"]["server"] and rt["decode_tok_s"]["client"], rt
assert t["cached"] and t["cached"] > 0, t   # processed = prompt - cached is exercised
pf, dc = rt["prefill_tok_s"], rt["decode_tok_s"]
def set_rate(phase, who, v):
    def f(l):
        l["rates"][phase][who] = v
        if l["rates"][phase]["source"] == who:
            l["rates"][phase]["headline"] = v   # the edit keeps its headline in step
    return f
write("srv_prefill_server", sl, j, set_rate("prefill_tok_s", "server", pf["server"] * 1.05),
      prod(pf["server"] * 1.05, "rates.prefill_tok_s.server", sv["prompt_ms"], "server.prompt_ms",
           "tokens.processed", t["processed"]))
def ttft_edit(l): l["client"]["ttft_ms"] = c["ttft_ms"] / 2
write("srv_ttft", sl, j, ttft_edit,
      prod(pf["client"], "rates.prefill_tok_s.client", c["ttft_ms"] / 2, "client.ttft_ms",
           "tokens.processed", t["processed"]))
write("srv_decode_server", sl, j, set_rate("decode_tok_s", "server", dc["server"] * 1.2),
      prod(dc["server"] * 1.2, "rates.decode_tok_s.server", sv["predicted_ms"],
           "server.predicted_ms", "server.predicted_n - 1", sv["predicted_n"] - 1))
write("srv_decode_client", sl, j, set_rate("decode_tok_s", "client", dc["client"] * 0.8),
      prod(dc["client"] * 0.8, "rates.decode_tok_s.client", c["decode_span_ms"],
           "client.decode_span_ms", "tokens.completion - 1", t["completion"] - 1))
def proc_edit(l): l["server"]["prompt_n"] = None; l["tokens"]["processed"] = t["prompt"]
write("srv_processed", sl, j, proc_edit,
      f'tokens.processed {t["prompt"]} is not tokens.prompt {t["prompt"]} - tokens.cached {t["cached"]}')
def head_edit(l): l["rates"]["prefill_tok_s"]["headline"] = pf["server"] * 3
write("srv_headline", sl, j, head_edit,
      f'rates.prefill_tok_s.headline {pf["server"] * 3:g} is not rates.prefill_tok_s.server '
      f'{pf["server"]:g}, the source it names (more than 2% apart)')

# within the tolerance: figures rounded by hand stay readable
def round_edit(l):
    l["rates"]["prefill_tok_s"]["server"] = pf["server"] * 1.01
    l["rates"]["prefill_tok_s"]["headline"] = pf["server"] * 1.01
    l["rates"]["decode_tok_s"]["client"] = round(dc["client"] * 0.99, 1)
with open(f"{out}/srv_rounded.jsonl", "w") as f:
    for k, l in enumerate(sl):
        l = json.loads(json.dumps(l))
        if k == j: round_edit(l)
        f.write(json.dumps(l) + "\n")
PY

n_agree=0
while IFS=$'\t' read -r name line msg; do
  f="$dir/$name.jsonl"
  case $name in eng_*) other=$good ;; *) other=$srv ;; esac
  expect_refused "report $name" "$f" "$line" "$msg" "$TOKMETER" report "$f"
  expect_refused "compare $name" "$f" "$line" "$msg" "$TOKMETER" compare "$other" "$f"
  expect_refused "decide $name" "$f" "$line" "$msg" \
    "$TOKMETER" decide -p 8 -n 4 "${api[@]}" --results "$f"
  n_agree=$((n_agree + 1))
done <"$dir/agree_expect.txt"
[ "$n_agree" = 10 ] || fail "expected 10 contradicting files, ran $n_agree"
"$TOKMETER" report "$dir/srv_rounded.jsonl" >/dev/null 2>"$dir/err" ||
  fail "figures within 2% refused: $(cat "$dir/err")"

# null rates are blanks: read, the decode column blank, prefill still there
"$TOKMETER" report "$dir/rate_null.jsonl" >"$dir/out" 2>"$dir/err" ||
  fail "report rate_null: $(cat "$dir/err")"
grep -q "pp8" "$dir/out" || fail "rate_null: pp8 row missing: $(cat "$dir/out")"

# (A file continuing an invocation begun in an earlier file is loaded by
# results_load (tests/unit/analysis/test_results.c); `report part1 part2`
# also needs cmd_report.c to stop re-loading part2 alone to see whether it
# is empty: see the report of this change.)

# --- import ---------------------------------------------------------------
python3 - "$TOKMETER_FIXTURES/llama-bench/llama-bench-output.jsonl" "$dir" <<'PY' || fail "making llama-bench inputs"
import json, sys
src, out = sys.argv[1], sys.argv[2]
entries = [json.loads(l) for l in open(src) if l.strip()]
def write(name, edit):
    with open(f"{out}/{name}", "w") as f:
        for e in entries:
            e = dict(e)
            edit(e)
            f.write(json.dumps(e) + "\n")
def mismatch(e): e["samples_ns"] = [1, 2, 3]; e["samples_ts"] = [1.0]
def ts_neg(e): e["avg_ts"] = -1.5; e["samples_ts"] = [-x for x in e["samples_ts"]]
def avgns_zero(e): e["avg_ns"] = 0
def name_empty(e): e["model_type"] = ""
def time_bad(e): e["test_time"] = "garbage"
write("lb_mismatch.jsonl", mismatch)
write("lb_name_empty.jsonl", name_empty)
write("lb_time_bad.jsonl", time_bad)
write("lb_ts_neg.jsonl", ts_neg)
write("lb_avgns_zero.jsonl", avgns_zero)
PY
expect_import_refused() {
  local what=$1 msg=$2; shift 2
  set +e; "$TOKMETER" import "$@" >"$dir/out" 2>"$dir/err"; local rc=$?; set -e
  [ "$rc" = 2 ] || fail "import $what: exit $rc, want 2 ($(cat "$dir/err"))"
  [ "$(wc -l <"$dir/err")" = 1 ] || fail "import $what: want one line, got: $(cat "$dir/err")"
  grep -qF -- "$msg" "$dir/err" || fail "import $what: want '$msg', got: $(cat "$dir/err")"
}
expect_import_refused mismatch \
  "$dir/lb_mismatch.jsonl: line 1 (entry 0): field \"samples_ts\" has 1 value, samples_ns 3" \
  -o "$dir/imp.jsonl" "$dir/lb_mismatch.jsonl"
expect_import_refused ts_neg "$dir/lb_ts_neg.jsonl: line 1 (entry 0): field \"avg_ts\" -1.5" \
  -o "$dir/imp.jsonl" "$dir/lb_ts_neg.jsonl"
expect_import_refused avgns_zero "$dir/lb_avgns_zero.jsonl: line 1 (entry 0): field \"avg_ns\" 0" \
  -o "$dir/imp.jsonl" "$dir/lb_avgns_zero.jsonl"
# an empty model name (printed "(null)" before) and a time that is not ISO 8601
expect_import_refused name_empty "$dir/lb_name_empty.jsonl: line 1 (entry 0): field \"model_type\" is empty" \
  -o "$dir/imp.jsonl" "$dir/lb_name_empty.jsonl"
expect_import_refused time_bad \
  "$dir/lb_time_bad.jsonl: line 1 (entry 0): field \"test_time\" \"garbage\" is not an ISO 8601 UTC time" \
  -o "$dir/imp.jsonl" "$dir/lb_time_bad.jsonl"
[ ! -e "$dir/imp.jsonl" ] || fail "import wrote records from refused input"
# the real fixture still imports and the result reads back
"$TOKMETER" import -o "$dir/imp.jsonl" "$TOKMETER_FIXTURES/llama-bench/llama-bench-output.jsonl" \
  >/dev/null 2>"$dir/err" || fail "import fixture: $(cat "$dir/err")"
"$TOKMETER" report "$dir/imp.jsonl" >/dev/null 2>"$dir/err" || fail "report import: $(cat "$dir/err")"
"$TOKMETER" compare "$dir/imp.jsonl" "$dir/imp.jsonl" >/dev/null 2>"$dir/err" ||
  fail "compare import import: $(cat "$dir/err")"
# -o onto a file that is not JSON Lines (a binary): refused, left unchanged
printf 'GGUF\003\000\000\000 binary' >"$dir/binary.jsonl"
cp "$dir/binary.jsonl" "$dir/binary.bak"
set +e
"$TOKMETER" import -o "$dir/binary.jsonl" "$TOKMETER_FIXTURES/llama-bench/llama-bench-output.jsonl" \
  >/dev/null 2>"$dir/err"
rc=$?
set -e
[ "$rc" = 2 ] || fail "import -o onto a binary file: exit $rc, want 2 ($(cat "$dir/err"))"
grep -q "binary.jsonl: not a tokmeter results file" "$dir/err" || fail "binary -o: $(cat "$dir/err")"
cmp -s "$dir/binary.jsonl" "$dir/binary.bak" || fail "binary -o: the file was changed"

# An endless line (no newline, ever) is refused at 64 MiB, not read until
# memory runs out (it used to grow to ~1 GB and end as "no records"); a NUL
# inside a line is not JSON. Under a 1 GiB address-space limit.
for cmd in "report /dev/zero" "compare /dev/zero /dev/zero" "decide -p 10 -n 10 --results /dev/zero --api-ttft 1 --api-decode 5"; do
  set +e
  (ulimit -v 1048576; "$TOKMETER" $cmd >/dev/null 2>"$dir/err")
  rc=$?
  set -e
  [ "$rc" = 2 ] || fail "$cmd: exit $rc, want 2 ($(cat "$dir/err"))"
  grep -q "/dev/zero:1: a line longer than 64 MiB: not a tokmeter results file" "$dir/err" ||
    fail "$cmd: $(cat "$dir/err")"
done
printf '{"record":"identity",\000"schema":1}\n' >"$dir/nul.jsonl"
set +e
"$TOKMETER" report "$dir/nul.jsonl" >/dev/null 2>"$dir/err"
rc=$?
set -e
[ "$rc" = 2 ] && grep -q "nul.jsonl:1: not JSON" "$dir/err" || fail "a NUL in a line: exit $rc, $(cat "$dir/err")"

echo "ok: $n invalid files refused by report, compare (A and B), decide; $n_agree contradicting files refused; import checks"
