#!/usr/bin/env bash
# test_bench_engine: `tokmeter bench -m FILE` in-process on the tiny Qwen3
# fixture: exit codes, the records (identity, runs with the warm-up flagged,
# summaries, end) and their figures against each other (rate = tokens / ms,
# percent = rate / ceiling, ceiling = bandwidth / bytes per token), one row
# and one summary per combination of -p/-n/-t/-d lists, the progress at depth
# on a terminal, a cached probe narrower than the machine, and bad input (exit
# 2, one line): flags, --out paths, a corrupt file, a vocabulary-only file, an
# architecture the engine does not run.
set -euo pipefail
: "${TOKMETER:?TOKMETER must point at the binary}"
: "${TOKMETER_FIXTURES:?}"
. "$(dirname "$0")/lib.sh"
export TOKMETER_PROBE_QUICK=1
model="$TOKMETER_FIXTURES/gguf/tiny-qwen3-Q8_0.gguf"

# -n 64: a curve of two segments (1-32, 33-64; none shorter than 24 tokens)
expect_exit 0 "$TOKMETER" bench -v -m "$model" -p 32 -n 64 -t 1 -r 2 --out "$dir/r.jsonl"
grep -qE "^threads +pp32 tok/s +ceiling +% +tg64 tok/s +ceiling +%$" "$dir/out" ||
  fail "no pp32 and tg64 columns: $(cat "$dir/out")"
grep -q "^      1 " "$dir/out" || fail "no row for 1 thread"
grep -q "loaded in" "$dir/out" || fail "load time not reported"
grep -qE "^memory: [0-9.]+ [KMG]iB resident after the runs \(weights [0-9.]+ [KMG]iB memory-mapped, KV cache [0-9.]+ [KMG]iB of [0-9.]+ [KMG]iB, buffers [0-9.]+ [KMG]iB\): (within|ABOVE) the bound, file \+ KV cache \+ 10% \([0-9.]+ [KMG]iB\)$" \
  "$dir/out" || fail "no memory line: $(cat "$dir/out")"
grep -qE "^ +decode curve at 1 thread \(tok/s\): 1-32 [0-9.]+, 33-64 [0-9.]+$" "$dir/out" ||
  fail "no decode curve 1-32, 33-64: $(cat "$dir/out")"
grep -q "(a)" "$dir/out" && fail "a footnote mark with a rate for every cell: $(cat "$dir/out")"
# the ceiling's bandwidth read again after the runs, held against the probe's
grep -qE "^memory read after the runs .*: [0-9.]+ GB/s \(1 thread, [+-][0-9]+% vs the probe\)$" \
  "$dir/out" || fail "no second bandwidth reading: $(cat "$dir/out")"
python3 - "$dir/r.jsonl" "$model" <<'PY' || fail "record checks (see above)"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
kinds = [l["record"] for l in lines]
assert kinds[0] == "identity" and kinds[-1] == "end", kinds
ident = lines[0]
assert ident["backend"] == "engine" and ident["target"] == "in-process", ident
assert ident["model"]["file"] == sys.argv[2] and ident["model"]["type"] == "Q8_0", ident["model"]
assert ident["settings"]["reps"] == 2 and ident["settings"]["threads"] == [1], ident["settings"]
runs = [l for l in lines if l["record"] == "run"]
sums = [l for l in lines if l["record"] == "summary"]
assert len(runs) == 6, len(runs)          # 2 tests x (1 warm-up + 2 timed)
assert len(sums) == 2, len(sums)
for r in runs:
    assert r["identity"] == ident["id"], r
    for k in ("backend", "target", "test", "threads", "depth", "tokens", "ms", "rate_tok_s",
              "ceiling", "percent_of_ceiling", "decode_by_segment", "warmup", "kernel_path",
              "decode_chunk_bytes"):
        assert k in r, (k, r)
    assert r["decode_chunk_bytes"] in (262144, 2097152), r["decode_chunk_bytes"]
    assert r["backend"] == "engine" and r["threads"] == 1 and r["depth"] == 0
    assert r["test"] in ("pp32", "tg64"), r["test"]
    assert r["tokens"] == int(r["test"][2:]), r
    assert r["ms"] > 0 and r["rate_tok_s"] > 0
    assert abs(r["rate_tok_s"] - r["tokens"] * 1000.0 / r["ms"]) <= 1e-3 * r["rate_tok_s"], r
    c = r["ceiling"]["ceiling_tok_s"]
    assert abs(r["percent_of_ceiling"] - 100 * r["rate_tok_s"] / c) < 1e-6, r
    if r["test"] == "tg64":
        want = r["ceiling"]["read_bandwidth_bytes_s"] / r["ceiling"]["bytes_per_token"]
        assert abs(c - want) < 1e-6 * want, (c, want)
        seg = r["decode_by_segment"]
        assert [(x["from"], x["to"]) for x in seg] == [(1, 32), (33, 64)], seg
        assert abs(sum(s["ms"] for s in seg) - r["ms"]) < 0.01, (seg, r["ms"])
    else:
        assert r["decode_by_segment"] is None
        assert r["ceiling"]["compute_path"] in ("int8", "int8_tile", "f32"), r["ceiling"]
for test in ("pp32", "tg64"):
    rs = [r for r in runs if r["test"] == test]
    assert [r["warmup"] for r in rs] == [True, False, False], rs
    assert [r["index"] for r in rs] == [None, 0, 1]
    s = [s for s in sums if s["test"] == test][0]
    timed = [r["rate_tok_s"] for r in rs if not r["warmup"]]
    assert s["n"] == 2 and s["rate_tok_s"]["n"] == 2, s
    assert abs(s["rate_tok_s"]["mean"] - sum(timed) / 2) < 1e-6 * s["rate_tok_s"]["mean"], s
    assert s["model"]["load_ms"] >= 0, s["model"]
    if test == "tg64":
        # a reading after the warm-up and after each repetition: the
        # warm-up's record rests on the first, timed repetition i on the
        # mean of readings i and i + 1, the summary on the mean of those;
        # the reading after the last repetition is in the summary only
        rd = s["read_bandwidth_readings_bytes_s"]
        assert len(rd) == 3 and all(x > 0 for x in rd), rd
        # each reading is the faster of the run's buffer's and the weights'
        # in place, both recorded
        rb = s["buffer_read_bandwidth_readings_bytes_s"]
        rw = s["weights_read_bandwidth_readings_bytes_s"]
        assert len(rb) == 3 and len(rw) == 3, (rb, rw)
        assert all(w > 0 for w in rw), rw
        for i in range(3):
            assert rd[i] == max(x for x in (rb[i], rw[i]) if x is not None), (i, rd, rb, rw)
        bw = [r["ceiling"]["read_bandwidth_bytes_s"] for r in rs]
        assert bw[0] == rd[0], (bw, rd)
        for i in (0, 1):
            assert abs(bw[i + 1] - (rd[i] + rd[i + 1]) / 2) <= 1e-9 * bw[i + 1], (i, bw, rd)
        sb = s["ceiling"]["read_bandwidth_bytes_s"]
        assert abs(sb - (bw[1] + bw[2]) / 2) <= 1e-9 * sb, (sb, bw)
        assert abs(s["percent_of_ceiling"] - 100 * s["rate_tok_s"]["mean"] / s["ceiling"]["ceiling_tok_s"]) < 1e-6, s
        assert s["read_bandwidth_after_bytes_s"] == rd[-1], s
        assert all("read_bandwidth_after_bytes_s" not in r for r in rs)
        assert all("read_bandwidth_readings_bytes_s" not in r for r in rs)
        assert all("weights_read_bandwidth_readings_bytes_s" not in r for r in rs)
assert lines[-1]["runs"] == 4, lines[-1]
PY

# Rule 5 (docs/design.md): no decode rate from a handful of tokens. Below 24
# generated tokens the decode cell is blank with a footnote saying why (the
# server table's words), its percentage too, its ceiling stays; the records
# carry null for the rate and the percentages and keep tokens and times; no
# conclusion uses the withheld rate; report and compare leave it blank.
threads_few=1
[ "$(nproc)" -ge 2 ] && threads_few=1,2
expect_exit 0 "$TOKMETER" bench -v -m "$model" -p 8 -n 16 -t "$threads_few" -r 2 --out "$dir/few.jsonl"
grep -qE "^ +1  [0-9.]+ \+- [0-9.]+ +[0-9]+ +[0-9]+%    - \(a\) +[0-9]+ +-$" "$dir/out" ||
  fail "tg16 at 1 thread: decode cell and % blank, ceiling shown: $(cat "$dir/out")"
grep -qx "(a) decode blank by rule: < 24 generated tokens say nothing reliable about the decode rate" \
  "$dir/out" || fail "no footnote for the blank decode cell: $(cat "$dir/out")"
[ "$(grep -c '^(a) ' "$dir/out")" = 1 ] || fail "one footnote per table: $(cat "$dir/out")"
grep -q "decode curve" "$dir/out" && fail "a decode curve from 16 tokens: $(cat "$dir/out")"
grep -q "decode at\|of the memory ceiling" "$dir/out" && fail "a conclusion used the blank rate: $(cat "$dir/out")"
grep -qE "^Q8_0 at [12] threads?: prefill at [0-9]+% of the compute ceiling; decode has no rate \(tg16: fewer than 24 generated tokens\)\.$" \
  "$dir/out" || fail "the ceiling conclusion must say decode has no rate: $(cat "$dir/out")"
if [ "$threads_few" = 1,2 ]; then
  grep -qE "^[^ ]+: from 1 to 2 threads prefill [0-9.]+x; decode has no rate \(tg16: fewer than 24 generated tokens\)\.$" \
    "$dir/out" || fail "the scaling conclusion must leave decode out: $(cat "$dir/out")"
fi
python3 - "$dir/few.jsonl" <<'PY' || fail "rule 5 in the records (see above)"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
runs = [l for l in lines if l["record"] == "run" and l["test"] == "tg16"]
sums = [l for l in lines if l["record"] == "summary" and l["test"] == "tg16"]
assert runs and sums, lines
for r in runs:
    # the rate and its percentage withheld, the measurements kept
    assert r["rate_tok_s"] is None and r["percent_of_ceiling"] is None, r
    assert r["tokens"] == 16 and r["ms"] > 0, r
    assert r["ceiling"]["ceiling_tok_s"] > 0, r
    assert r["decode_by_segment"] == [], r["decode_by_segment"]
for s in sums:
    assert s["rate_tok_s"] == {"n": 0, "median": None, "mean": None, "sd": None, "min": None,
                               "max": None}, s["rate_tok_s"]
    assert s["percent_of_ceiling"] is None and s["percent_of_ceiling_median"] is None, s
    assert s["ms"]["n"] == 2 and s["ms"]["median"] > 0, s["ms"]
    assert s["tokens"] == 16 and s["ceiling"]["ceiling_tok_s"] > 0, s
    assert s["decode_by_segment"] == [], s
# prefill keeps its rate
pp = [l for l in lines if l["record"] == "summary" and l["test"] == "pp8"]
assert pp and all(s["rate_tok_s"]["n"] == 2 and s["percent_of_ceiling_median"] is not None
                  for s in pp), pp
PY
"$TOKMETER" report "$dir/few.jsonl" >"$dir/rep.out" 2>"$dir/err" || fail "report: $(cat "$dir/err")"
grep -qE "^  tg16 +1 +0 *$" "$dir/rep.out" || fail "report: tg16 must be blank: $(cat "$dir/rep.out")"
grep -qF "DC decode (tok/s)" "$dir/rep.out" && fail "report: a decode column: $(cat "$dir/rep.out")"
"$TOKMETER" compare "$dir/few.jsonl" "$dir/few.jsonl" >"$dir/cmp.out" 2>"$dir/err" ||
  fail "compare: $(cat "$dir/err")"
grep -q "decode_tok_s" "$dir/cmp.out" && fail "compare: a decode rate from tg16: $(cat "$dir/cmp.out")"
# --json: the summaries and the conclusions the same
expect_exit 0 "$TOKMETER" bench -v -m "$model" -p 8 -n 16 -t 1 -r 1 --json --out "$dir/few.jsonl"
python3 - "$dir/out" <<'PY' || fail "rule 5 in --json (see above)"
import json, sys
d = json.load(open(sys.argv[1]))
tg = [s for s in d["summaries"] if s["test"] == "tg16"]
assert len(tg) == 1 and tg[0]["rate_tok_s"]["median"] is None, tg
assert tg[0]["percent_of_ceiling_median"] is None and tg[0]["percent_of_ceiling"] is None, tg
assert not any("decode at" in c for c in d["conclusions"]), d["conclusions"]
assert any("decode has no rate (tg16: fewer than 24 generated tokens)" in c
           for c in d["conclusions"]), d["conclusions"]
PY
# lists: the blank cell's footnote under the rows, the 24-token run rated
expect_exit 0 "$TOKMETER" bench -v -m "$model" -p 0 -n 16,24 -t 1 -r 1 --out "$dir/few.jsonl"
grep -qE "^ +1  tg16 +0  - \(a\) +[0-9]+ +-$" "$dir/out" || fail "list row tg16: $(cat "$dir/out")"
grep -qE "^ +1  tg24 +0  [0-9.]+ +[0-9]+ +[0-9]+%$" "$dir/out" || fail "list row tg24: $(cat "$dir/out")"
grep -qx "(a) decode blank by rule: < 24 generated tokens say nothing reliable about the decode rate" \
  "$dir/out" || fail "no footnote under the list: $(cat "$dir/out")"

# lists: one table row and one summary per combination (threads x depth x test)
# --hugepages: the weights copied into huge pages, said in the table
expect_exit 0 "$TOKMETER" bench -v -m "$model" -p 8 -n 8 -t 1 -r 1 --hugepages --out "$dir/h.jsonl"
grep -q "copied into huge pages" "$dir/out" || fail "--hugepages not reported: $(cat "$dir/out")"
grep -q '"hugepages":true' "$dir/h.jsonl" || fail "--hugepages not in the identity settings"
expect_exit 0 "$TOKMETER" bench -v -m "$model" -p 8,16 -n 4,8 -t 1,2 -d 0,4 -r 1 --out "$dir/l.jsonl"
rows=$(grep -cE "^ +[12]  (pp|tg)[0-9]+ " "$dir/out" || true)
[ "$rows" = 16 ] || fail "expected 16 rows for 2x2x2x2, got $rows: $(cat "$dir/out")"
# progress on a terminal (stderr the pty of script(1), whose typescript
# keeps it): a run at depth
# says it fills the context first, and after a repetition that it fills it
# again for the next; no such line at depth 0
if command -v script >/dev/null; then
  script -qec "$TOKMETER bench -m $model -p 0 -n 4 -t 1 -d 0,16 -r 1 --out $dir/p.jsonl >/dev/null" \
    "$dir/tty" >/dev/null
  grep -q "tg4 d=16, 1 thread: filling 16 tokens of context (untimed)" "$dir/tty" ||
    fail "no fill progress at depth: $(tr '\r' '\n' <"$dir/tty")"
  # (tg4 has no rate, rule 5: the progress gives its time)
  # each line names the configuration's place in the plan; the warm-up is not
  # counted among the repetitions
  grep -q "\[2/2[],] .*Q8_0 tg4 d=16, 1 thread: warm-up: [0-9.]* ms (no rate below 24 tokens); filling the context for the next" "$dir/tty" ||
    fail "no refill progress after the warm-up: $(tr '\r' '\n' <"$dir/tty")"
  grep -q "tg4 .* tok/s" "$dir/tty" && fail "a decode rate of 4 tokens in the progress"
  ! grep -q "d=0, 1 thread: filling" "$dir/tty" || fail "fill progress at depth 0"
fi
expect_exit 0 "$TOKMETER" bench -v -m "$model" -p 8 -n 4,8 -t 1 -d 0,4 -r 1 --json --out "$dir/j.jsonl"
python3 - "$dir/out" <<'PY' || fail "--json checks"
import json, sys
r = json.load(open(sys.argv[1]))
s = r["summaries"]
got = sorted((x["test"], x["depth"], x["threads"]) for x in s)
want = sorted((t, d, 1) for t in ("pp8", "tg4", "tg8") for d in (0, 4))
assert got == want, got
for x in s:
    if x["test"].startswith("tg"):
        n = int(x["test"][2:])
        assert x["mean_depth"] == x["depth"] + (n - 1) / 2, x
assert r["models"][0]["kernel_path"], r["models"]
assert r["models"][0]["decode_chunk_bytes"] in (262144, 2097152), r["models"]
assert r["runs"] == 6, r["runs"]
# the engine's resident memory after the runs: every weight page was touched
# at load; the KV cache resident no more than its mapping; the parts summed;
# the bound file + KV cache + 10%
mo = r["models"][0]
mem = mo["memory"]
fb = mo["file_bytes"]
assert 0.99 * fb <= mem["weights_resident_bytes"] <= fb, (mem, fb)
assert 0 < mem["kv_resident_bytes"] <= mem["kv_bytes"] + 2 * 1024 * 1024, mem
assert mem["buffer_bytes"] > 0, mem
assert mem["resident_bytes"] == mem["weights_resident_bytes"] + mem["kv_resident_bytes"] + mem["buffer_bytes"], mem
assert mem["limit_bytes"] == int((fb + mem["kv_bytes"]) * 1.1), mem
assert mem["within_limit"] == (mem["resident_bytes"] <= mem["limit_bytes"]), mem
# the probe's read loop over the model's own pages, at 1 thread (the run's -t)
wb = r["models"][0]["weights_read_bandwidth_by_threads"]
assert [x["threads"] for x in wb] == [1], wb
assert 100e6 < wb[0]["bytes_s"] < 10e12, wb
# the probe's loop again after the runs, on the run's own buffer, at the run's threads
ab = r["read_bandwidth_after_by_threads"]
assert [x["threads"] for x in ab] == [1], ab
assert 100e6 < ab[0]["bytes_s"] < 10e12, ab
# steal time while each configuration ran: a share of the busy time, or
# null when unknown (no steal column in /proc/stat, or a configuration of
# fewer than MACHINE_TICKS_MIN_BUSY = 100 busy ticks: 1 s at one thread)
has_steal = len(open("/proc/stat").readline().split()) >= 9
for x in s:
    v = x["cpu_steal_share"]
    ran_ms = x["ms"]["mean"] * (x["n"] + x["warmups"])
    if not has_steal:
        assert v is None, x
    elif ran_ms > 1500:
        assert v is not None and 0 <= v <= 1, (v, ran_ms)
    else:
        assert v is None or 0 <= v <= 1, (v, ran_ms)
PY
# a decode long enough for /proc/stat's ticks to move (4 x ~0.4 s: more than
# 100 busy ticks): its steal share is known
expect_exit 0 "$TOKMETER" bench -v -m "$model" -p 0 -n 768 -t 1 -r 3 --json --out "$dir/j.jsonl"
python3 - "$dir/out" <<'PY' || fail "steal share of a long decode"
import json, sys
s = json.load(open(sys.argv[1]))["summaries"]
assert len(s) == 1 and s[0]["test"] == "tg768", s
if len(open("/proc/stat").readline().split()) >= 9:
    v = s[0]["cpu_steal_share"]
    assert v is not None and 0 <= v <= 1, (v, s[0]["ms"])
PY
python3 - "$dir/j.jsonl" <<'PY' || fail "steal share in the end record"
import json, sys
end = [json.loads(l) for l in open(sys.argv[1])][-1]
assert end["record"] == "end", end
if len(open("/proc/stat").readline().split()) >= 9:
    v = end["cpu_steal_share"]
    assert v is not None and 0 <= v <= 1, end
PY
# no decode measured: no second reading (it is the decode ceiling's)
# a prompt of 512 on a 5 MiB model: the engine prefills in smaller batches, so
# that its buffers keep it within file + KV cache + 10% (engine.c
# batch_within_bound), and says so
expect_exit 0 "$TOKMETER" bench -v -m "$model" -p 512 -n 0 -t 1 -r 1 --json --out "$dir/b.jsonl"
python3 - "$dir/out" <<'PY' || fail "the prefill batch within the memory bound (see above)"
import json, sys
mo = json.load(open(sys.argv[1]))["models"][0]
assert mo["prefill_batch_asked"] == 512, mo
assert 32 <= mo["prefill_batch"] < 512 and mo["prefill_batch"] % 16 == 0, mo
assert mo["memory"]["within_limit"] is True, mo["memory"]
PY
expect_exit 0 "$TOKMETER" bench -v -m "$model" -p 512 -n 0 -t 1 -r 1 --out "$dir/b.jsonl"
grep -q "^prefill in batches of [0-9]* tokens, not 512: the buffers of larger ones would break" \
  "$dir/out" || fail "no line on the prefill batch: $(cat "$dir/out")"
grep -q "): within the bound, file + KV cache + 10%" "$dir/out" || fail "memory: $(cat "$dir/out")"

expect_exit 0 "$TOKMETER" bench -v -m "$model" -p 8 -n 0 -t 1 -r 1 --json --out "$dir/j.jsonl"
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert r['read_bandwidth_after_by_threads'] == [], r" \
  "$dir/out" || fail "-n 0 measured the bandwidth again"

# bad input: exit 2, one line naming the problem
printf 'GGUX\3\0\0\0' > "$dir/bad.gguf"
for args in "-m $dir/bad.gguf" "-m $dir/missing.gguf" \
            "-m $TOKMETER_FIXTURES/gguf/ggml-vocab-qwen2.gguf"; do
  # shellcheck disable=SC2086
  expect_exit 2 "$TOKMETER" bench -v $args -t 1 -p 8 -n 4 -r 1 --out "$dir/x.jsonl"
  [ "$(wc -l < "$dir/err")" = 1 ] || fail "$args: expected one line, got: $(cat "$dir/err")"
done
grep -q "no tensors" "$dir/err" || fail "vocab-only file: $(cat "$dir/err")"
# a real model of an architecture the engine does not run (keys renamed)
python3 -c "import sys; d=open(sys.argv[1],'rb').read(); open(sys.argv[2],'wb').write(d.replace(b'qwen3', b'gemma'))" \
  "$model" "$dir/gemma.gguf"
expect_exit 2 "$TOKMETER" bench -v -m "$dir/gemma.gguf" -t 1 -p 8 -n 4 -r 1 --out "$dir/x.jsonl"
grep -q "gemma" "$dir/err" || fail "unsupported architecture not named: $(cat "$dir/err")"
[ "$(wc -l < "$dir/err")" = 1 ] || fail "gemma: expected one line, got: $(cat "$dir/err")"
expect_exit 2 "$TOKMETER" bench -v -m "$model" -p x
expect_exit 2 "$TOKMETER" bench -v -m "$model" -d -1
expect_exit 2 "$TOKMETER" bench -v -m "$model" -p 0 -n 0
expect_exit 2 "$TOKMETER" bench -v -m "$model" -t 0
# a list is a set: a value twice would be measured twice and shown once
for dup in "-t 1,1" "-p 8,16,8" "-n 4,4" "-d 0,0"; do
  # shellcheck disable=SC2086
  expect_exit 2 "$TOKMETER" bench -v -m "$model" $dup
  grep -q "listed twice" "$dir/err" || fail "$dup: $(cat "$dir/err")"
  [ "$(wc -l < "$dir/err")" = 2 ] || fail "$dup: expected the error and the --help hint"
done
# other processes busy on the cores while the runs run: measured per
# configuration (other_cpus_busy in the summaries) and said before the other
# conclusions (two busy loops keep at least one CPU of any machine busy)
busy_pids=""
for _ in 1 2; do (while :; do :; done) & busy_pids="$busy_pids $!"; done
set +e
# (a decode of 768 tokens: configurations shorter than 0.5 s of wall time,
# like the prompt's here, have the figure unknown)
"$TOKMETER" bench -v -m "$model" -p 32 -n 768 -t 1 -r 2 --out "$dir/busy.jsonl" >"$dir/out" 2>"$dir/err"
busy_rc=$?
set -e
kill $busy_pids 2>/dev/null; wait $busy_pids 2>/dev/null || true
[ "$busy_rc" = 0 ] || fail "bench beside busy loops exited $busy_rc: $(cat "$dir/err")"
grep -q "^Other processes kept [0-9.]* of this machine's [0-9]* CPUs busy while the runs at 1 thread ran" \
  "$dir/out" || fail "no conclusion on the other processes' load: $(cat "$dir/out")"
python3 - "$dir/busy.jsonl" <<'PY' || fail "other_cpus_busy in the summaries"
import json, sys
s = [json.loads(l) for l in open(sys.argv[1]) if '"summary"' in l]
tg = [x for x in s if x["test"] == "tg768"]
assert len(tg) == 1 and tg[0]["other_cpus_busy"] is not None and tg[0]["other_cpus_busy"] >= 0.25, s
assert all(x["other_cpus_busy"] is None or x["other_cpus_busy"] >= 0.25 for x in s), s
PY

# too many threads: refused before the model loads with them (no 998 workers
# started, no blame on the file)
expect_exit 2 "$TOKMETER" bench -v -m "$model" -t 999 -p 8 -n 4 --out "$dir/x.jsonl"
grep -q "^tokmeter bench: --threads 999: this machine has [0-9]* online CPUs$" "$dir/err" ||
  fail "-t 999: $(cat "$dir/err")"
# an --out that cannot be written: bad usage, before anything runs
for out in "$dir" "$dir/no/such/dir/r.jsonl"; do
  expect_exit 2 "$TOKMETER" bench -v -m "$model" -t 1 -p 8 -n 4 -r 1 --out "$out"
  grep -q "^tokmeter bench: --out: records: " "$dir/err" || fail "--out $out: $(cat "$dir/err")"
  grep -q "loading\|probing" "$dir/err" && fail "--out $out: checked only after starting"
done
# a cached probe narrower than the machine (probe -t 1) is measured again, so
# -t 2 is not refused for it
if [ "$(nproc)" -ge 2 ]; then
  export TOKMETER_CACHE_DIR="$dir/cache-narrow"
  expect_exit 0 "$TOKMETER" probe -t 1
  expect_exit 0 "$TOKMETER" bench -v -m "$model" -t 2 -p 8 -n 4 -r 1 --out "$dir/n.jsonl"
  grep -q "measured 1..1 threads of this machine's" "$dir/err" ||
    fail "no note on the narrower cache: $(cat "$dir/err")"
  expect_exit 0 "$TOKMETER" probe --cached --json
  python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); assert p["max_threads"] >= 2, p["max_threads"]' \
    "$dir/out" || fail "the cache was not replaced by a wider probe"
  export TOKMETER_CACHE_DIR="$dir/cache"
else
  echo "test_bench_engine: not checked here (1 CPU): a narrow cached probe measured again for -t 2" >&2
fi
expect_exit 2 "$TOKMETER" bench -v -m "$model" -r 0
expect_exit 2 "$TOKMETER" bench -v -m "$model" --workload generate
expect_exit 2 "$TOKMETER" bench -v -m "$model" -p 100000 -n 4 -t 1 --out "$dir/x.jsonl"
grep -q "exceeds" "$dir/err" || fail "too long a run: $(cat "$dir/err")"
expect_exit 2 "$TOKMETER" bench -v --url http://127.0.0.1:1 -d 4

# The table's rate is the median of the repetitions +- sd and its percentage
# median / ceiling, as `tokmeter report` shows them (docs/design.md rule 1; it printed
# the mean); the summary's percent_of_ceiling stays the mean's, with
# percent_of_ceiling_median beside it. Threads given in descending order: the
# scaling conclusion goes from the fewest to the most ("from 2 to 1" before),
# and "follows the bandwidth" only when decode scaled within 15% of it.
if [ "$(nproc)" -ge 2 ]; then
  expect_exit 0 "$TOKMETER" bench -v -m "$model" -p 16 -n 24 -t 2,1 -r 3 --out "$dir/med.jsonl"
  grep -q "rates are median +- sd" "$dir/out" || fail "method line: $(grep method "$dir/out")"
  python3 - "$dir/med.jsonl" "$dir/out" <<'PY' || fail "median table (see above)"
import json, re, sys
sums = [json.loads(l) for l in open(sys.argv[1])]
sums = {(r["threads"], r["phase"]): r for r in sums if r["record"] == "summary"}
out = open(sys.argv[2]).read()
for line in out.splitlines():
    m = re.match(r"\s+(\d+)\s+([\d.]+) \+- [\d.]+\s+\d+\s+(\d+)%\s+([\d.]+) \+- [\d.]+\s+\d+\s+(\d+)%", line)
    if not m:
        continue
    t = int(m.group(1))
    for phase, rate, pct in (("prefill", m.group(2), m.group(3)), ("decode", m.group(4), m.group(5))):
        s = sums[(t, phase)]
        med = s["rate_tok_s"]["median"]
        assert rate == "%.1f" % med, (t, phase, rate, s["rate_tok_s"])
        want = 100 * med / s["ceiling"]["ceiling_tok_s"]
        assert abs(s["percent_of_ceiling_median"] - want) < 1e-6 * want, s
        assert int(pct) == round(want), (pct, want)
        assert abs(s["percent_of_ceiling"] - 100 * s["rate_tok_s"]["mean"] / s["ceiling"]["ceiling_tok_s"]) < 1e-6 * want
    sums.pop((t, "prefill")); sums.pop((t, "decode"))
assert not sums, "rows missing from the table: %s" % list(sums)
m = re.search(r"from (\d+) to (\d+) threads prefill [\d.]+x, decode ([\d.]+)x \(read bandwidth ([\d.]+)x\)[^:]*: (.*)", out)
assert m, out
assert (m.group(1), m.group(2)) == ("1", "2"), m.group(0)
rd, rbw = float(m.group(3)), float(m.group(4))
if "follows the bandwidth" in m.group(5):
    assert 0.85 * rbw <= rd <= 1.15 * rbw, m.group(0)
if "outruns the bandwidth" in m.group(5):
    assert rd > 1.15 * rbw, m.group(0)
PY
else
  echo "test_bench_engine: not checked here (1 CPU): the median table over 2 and 1 threads" >&2
fi

# A Q4_K_M file holds most of its bytes in Q6_K (its embeddings): it is named
# Q4_K_M, as `tokmeter ceiling --type` names it (general.file_type), not Q6_K.
expect_exit 0 "$TOKMETER" bench -v -m "$TOKMETER_FIXTURES/gguf/kq-llama-Q4_K_M.gguf" -p 8 -n 4 -t 1 \
  -r 1 --out "$dir/kq.jsonl"
grep -q "^Q4_K_M at 1 thread: prefill" "$dir/out" || fail "Q4_K_M label: $(cat "$dir/out")"
grep -q "Q6_K at 1 thread" "$dir/out" && fail "labelled Q6_K: $(cat "$dir/out")"
grep -q "llama Q4_K_M, most bytes in Q6_K" "$dir/out" || fail "model line: $(cat "$dir/out")"
expect_exit 0 "$TOKMETER" bench -v -m "$TOKMETER_FIXTURES/gguf/kq-llama-Q4_K_M.gguf" -p 8 -n 4 -t 1 \
  -r 1 --json --out "$dir/kq.jsonl"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
m = d["models"][0]
assert m["file_type"] == "Q4_K_M" and m["type"] == "Q6_K", m
assert d["conclusions"] and all("Q6_K at" not in c for c in d["conclusions"]), d["conclusions"]
' "$dir/out" || fail "--json file_type"
# and the records name it the same way (report and compare label by them)
python3 -c '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
types = {r["model"]["type"] for r in recs if r["record"] in ("identity", "run", "summary")}
assert types == {"Q4_K_M"}, types
' "$dir/kq.jsonl" || fail "records name the Q4_K_M file $(grep -o '"type":"[^"]*"' "$dir/kq.jsonl" | sort -u)"
# A rate above its ceiling in process: no cached prompt, buffered stream or
# speculative decoding can explain it here, so the conclusion names the
# ceiling's figure. A cached probe whose compute rates are a thousandth of a
# GOPS puts any prefill far above: the probe's figure is low, and says so.
CRAFT="$(dirname "$0")/craft_probe.py"
python3 "$CRAFT" "$TOKMETER_CACHE_DIR" avx512_vnni >/dev/null || fail "crafting an avx512_vnni probe"
python3 - "$TOKMETER_CACHE_DIR" <<'PY' || fail "crafting a low-compute probe"
import glob, json, sys
f = glob.glob(sys.argv[1] + "/probe*.json")
assert len(f) == 1, f
p = json.load(open(f[0]))
p["compute_int8_ops"] = p["compute_f32_flops"] = 1e6
for e in p["compute_int8_by_threads"]: e["ops_s"] = 1e6
for e in p["compute_f32_by_threads"]: e["flops"] = 1e6
json.dump(p, open(f[0], "w"))
PY
expect_exit 0 "$TOKMETER" bench -v -m "$model" -p 32 -n 0 -t 1 -r 1 --out "$dir/above.jsonl"
grep -qE "^Q8_0 pp32 at 1 thread: [0-9]+% of the ceiling: above the probe's compute rate at that thread count, so that figure is low here \(other work while probing\? --reprobe on a quiet machine\)\.$" \
  "$dir/out" || fail "prefill above its ceiling: $(cat "$dir/out")"
grep -qE "cached prompt|buffered stream|speculative" "$dir/out" &&
  fail "server causes named for an in-process rate: $(cat "$dir/out")"
# The probe of three machine classes (craft_probe.py), so this runs the same
# on any CPU. An AVX2-only machine has no int8 rate: a Q8_0 prefill is held
# against its f32 rate, and a ceiling is printed, never "not known".
python3 "$CRAFT" "$TOKMETER_CACHE_DIR" avx2 >/dev/null || fail "crafting an avx2 probe"
expect_exit 0 "$TOKMETER" bench -v -m "$model" -p 32 -n 0 -t 1 -r 1 --out "$dir/avx2.jsonl"
grep -q "not known" "$dir/out" && fail "avx2 probe: a ceiling not known: $(cat "$dir/out")"
python3 - "$dir/avx2.jsonl" <<'PY' || fail "avx2 probe: the prefill ceiling (see above)"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
c = [r for r in recs if r["record"] == "summary" and r["test"] == "pp32"][0]["ceiling"]
assert c["compute_path"].startswith("f32") and c["compute_ops_s"] == 100e9, c
assert c["ceiling_tok_s"] > 0, c
PY
# A CPU with int8 tiles (AMX). Where the engine's kernels use them (the header
# says so), a Q8_0 prefill of 16 tokens and more is held against their rate;
# with TOKMETER_NO_AMX=1, or where the engine cannot run them, against the
# vector path's.
python3 "$CRAFT" "$TOKMETER_CACHE_DIR" amx >/dev/null || fail "crafting a probe with int8 tiles"
check_tiles() { # $1: records, $2: "int8_tile" or "int8"
  python3 - "$1" "$2" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
want = sys.argv[2]
sums = {r["test"]: r for r in recs if r["record"] == "summary" and r["test"].startswith("pp")}
assert set(sums) == {"pp32", "pp8"}, list(sums)
c = sums["pp32"]["ceiling"]
assert c["compute_path"] == want, (c, want)
if want == "int8_tile":
    assert c["compute_ops_s"] == 6.5e12, c  # the crafted tile rate at 1 thread
else:
    assert c["compute_ops_s"] == 800e9, c  # the crafted int8 rate at 1 thread
# 8 tokens: under the tiles' smallest batch, always the vector path
assert sums["pp8"]["ceiling"]["compute_path"] == "int8", sums["pp8"]["ceiling"]
PY
}
TOKMETER_NO_AMX=1 expect_exit 0 "$TOKMETER" bench -v -m "$model" -p 32,8 -n 0 -t 1 -r 1 --out "$dir/tiles0.jsonl"
grep -qE "^ +int8 tiles [0-9.]+ TOPS \(amx_int8\): the engine has no kernels for them here, so its prefill ceilings use the [a-z0-9_]+ rate$" \
  "$dir/out" || fail "int8 tiles, TOKMETER_NO_AMX=1: no header line: $(head -12 "$dir/out")"
check_tiles "$dir/tiles0.jsonl" int8 || fail "int8 tiles, TOKMETER_NO_AMX=1: the prefill ceiling (see above)"
expect_exit 0 "$TOKMETER" bench -v -m "$model" -p 32,8 -n 0 -t 1 -r 1 --out "$dir/tiles.jsonl"
if grep -qE "^ +int8 tiles [0-9.]+ TOPS \(amx_int8\): the engine's Q4_0 and Q8_0 prefill runs on them \(batches of 16 tokens and more\), and those prefill ceilings use their rate$" "$dir/out"; then
  check_tiles "$dir/tiles.jsonl" int8_tile || fail "int8 tiles: the prefill ceiling (see above)"
else
  grep -q "the engine has no kernels for them here" "$dir/out" || fail "int8 tiles: no header line: $(head -12 "$dir/out")"
  check_tiles "$dir/tiles.jsonl" int8 || fail "int8 tiles (none in the engine): the prefill ceiling (see above)"
  echo "test_bench_engine: not checked here: a prefill on the engine's AMX tiles (this CPU or OS has none)" >&2
fi
# ... and none without them
python3 "$CRAFT" "$TOKMETER_CACHE_DIR" avx512_vnni >/dev/null || fail "removing the probe's int8 tiles"
expect_exit 0 "$TOKMETER" bench -v -m "$model" -p 32 -n 0 -t 1 -r 1 --out "$dir/notiles.jsonl"
grep -q "int8 tiles" "$dir/out" && fail "int8 tiles named without them: $(head -12 "$dir/out")"
# TOKMETER_KERNELS pins the engine's kernel set: a name that is no set, or a
# set this build or CPU cannot run, is refused in one line (exit 2), never
# run on another set in its place; a narrower set than the CPU's runs and
# says so.
expect_exit 0 "$TOKMETER" bench --help
grep -q "TOKMETER_KERNELS=scalar|avx2|avx512|vnni|vbmi|amx|neon" "$dir/out" ||
  fail "bench --help does not name TOKMETER_KERNELS"
for k in bogus neon; do
  TOKMETER_KERNELS=$k expect_exit 2 "$TOKMETER" bench -v -m "$model" -p 16 -n 0 -t 1 -r 1 --out "$dir/k.jsonl"
  [ "$(wc -l <"$dir/err")" = 1 ] && grep -q "TOKMETER_KERNELS=$k" "$dir/err" ||
    fail "TOKMETER_KERNELS=$k: $(cat "$dir/err")"
done
# (the engine's own answer of what this CPU runs, from --json: /proc/cpuinfo
# is not what an emulated CPU offers)
expect_exit 0 "$TOKMETER" bench -v -m "$model" -p 16 -n 0 -t 1 -r 1 --json --out "$dir/k.jsonl"
best=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["models"][0]["best_cpu_path"])' "$dir/out") ||
  fail "no best_cpu_path in --json: $(cat "$dir/out")"
if [ "$best" = avx512 ] || [ "$best" = avx512_vnni ]; then
  TOKMETER_KERNELS=avx2 expect_exit 0 "$TOKMETER" bench -v -m "$model" -p 16 -n 0 -t 1 -r 1 --out "$dir/k.jsonl"
  grep -q "kernels: avx2 " "$dir/out" || fail "TOKMETER_KERNELS=avx2: $(cat "$dir/out")"
  grep -q "TOKMETER_KERNELS=avx2: the engine runs avx2 kernels, narrower than this CPU's" "$dir/err" ||
    fail "TOKMETER_KERNELS=avx2: no warning: $(cat "$dir/err")"
else
  echo "test_bench_engine: not checked here (the CPU's best kernels are '${best:-unknown}'): a kernel set narrower than the CPU's" >&2
fi
echo "test_bench_engine: ok"
