#!/usr/bin/env bash
# test_bench: the main job, `tokmeter bench` with no target, kept fast with
# `-r 1 -p 16 -n 24` (the flags override the defaults of the embedded pair;
# 24 generated tokens are the fewest with a decode rate, docs/design.md rule 5) and
# a quick probe in a fresh cache: synthesizes the Qwen3-0.6B-shaped Q4_0/Q8_0
# pair once (cached), measures pp/tg in-process per thread count against the
# ceilings, prints conclusions computed from the numbers, appends records
# (default file in the current directory). Checks the figures against each
# other, the cache reuse, -m on a fixture, and bad input. The later runs use
# `-n 8`: no decode rate, and the pair's conclusions must say so instead of
# using one.
set -euo pipefail
: "${TOKMETER:?TOKMETER must point at the binary}"
: "${TOKMETER_FIXTURES:?}"
. "$(dirname "$0")/lib.sh"
export TOKMETER_PROBE_QUICK=1
RATED=(-r 1 -p 16 -n 24)
FAST=(-r 1 -p 16 -n 8)

mkdir "$dir/cwd"
(cd "$dir/cwd" && expect_exit 0 "$TOKMETER" bench -v "${RATED[@]}" -t 1 --json)
[ -s "$dir/cwd/tokmeter-results.jsonl" ] || fail "no records in the default file"
cp "$dir/out" "$dir/first.json"
python3 - "$dir/first.json" "$dir/cwd/tokmeter-results.jsonl" "$TOKMETER_CACHE_DIR" "$dir/err" <<'PY' || fail "JSON checks (see above)"
import glob, json, sys
r = json.load(open(sys.argv[1]))
assert r["probe_quick"] is True, "a quick probe must say so"
ms = r["models"]
assert len(ms) == 2, ms
q4, q8 = ms
assert q4["type"] == "Q4_0" and q8["type"] == "Q8_0", (q4, q8)
assert "Q4_0" in q4["model"] and "Q8_0" in q8["model"], (q4["model"], q8["model"])
for m in ms:
    assert m["file_bytes"] > 300e6, m
    assert m["load_ms"] > 0 and m["kernel_path"], m
# Qwen3-0.6B Q4_0 reads ~376 MB per token (docs/design.md sketch), Q8_0 ~633 MB
assert 370e6 < q4["bytes_per_token"] < 380e6, q4["bytes_per_token"]
assert 625e6 < q8["bytes_per_token"] < 640e6, q8["bytes_per_token"]
# findings as data (docs/records.md "Findings"): a code, a severity, figures
# with units in their names, a brief for the screen, the sentence; the pair
# always has its fewer_bytes comparison; conclusions keep the sentences
fs = r["findings"]
assert fs, "no findings"
for f in fs:
    assert f["code"] and f["severity"] in ("info", "warning", "problem"), f
    assert isinstance(f["figures"], dict) and f["text"] and 0 < len(f["brief"]) <= 90, f
    assert f["config"] is None or set(f["config"]) == {"model", "test", "threads", "depth", "workload"}, f
fb = [f for f in fs if f["code"] == "fewer_bytes"]
assert len(fb) == 1 and 0.40 < fb[0]["figures"]["bytes_fewer_fraction"] < 0.42, fb
assert r["conclusions"] == [f["text"] for f in fs], (r["conclusions"], fs)
s = r["summaries"]
assert sorted((x["model"]["type"], x["test"], x["threads"]) for x in s) == \
    [("Q4_0", "pp16", 1), ("Q4_0", "tg24", 1), ("Q8_0", "pp16", 1), ("Q8_0", "tg24", 1)], s
by = {(x["model"]["type"], x["test"]): x for x in s}
for x in s:
    assert x["n"] == 1 and x["rate_tok_s"]["mean"] > 0, x
    c = x["ceiling"]["ceiling_tok_s"]
    assert abs(x["percent_of_ceiling"] - 100 * x["rate_tok_s"]["mean"] / c) < 1e-6, x
# decode ceilings: each its own reading of the bandwidth just before it, so
# ceiling / bandwidth is 1 / bytes per token, whose ratio is the bytes ratio
# (depths 0..23)
d4, d8 = by[("Q4_0", "tg24")]["ceiling"], by[("Q8_0", "tg24")]["ceiling"]
for d in (d4, d8):
    assert d["read_bandwidth_bytes_s"] > 0, d
    assert abs(d["ceiling_tok_s"] * d["bytes_per_token"] / d["read_bandwidth_bytes_s"] - 1) < 1e-9, d
want = d8["bytes_per_token"] / d4["bytes_per_token"]
got = (d4["ceiling_tok_s"] / d4["read_bandwidth_bytes_s"]) / (d8["ceiling_tok_s"] / d8["read_bandwidth_bytes_s"])
assert abs(got - want) < 1e-6 * want, (d4, d8)
assert d4["bytes_per_token"] > q4["bytes_per_token"], "a tg run's mean depth adds KV bytes"
# same FLOPs, same compute path: equal prefill ceilings
p4, p8 = by[("Q4_0", "pp16")]["ceiling"], by[("Q8_0", "pp16")]["ceiling"]
assert p4["ceiling_tok_s"] == p8["ceiling_tok_s"], (p4, p8)
cs = r["conclusions"]
assert any("Q4_0 reads 41% fewer bytes per token than Q8_0" in c for c in cs), cs
# the two decodes ran at different moments: when the bandwidth under their
# ceilings differed by more than 10%, a conclusion says so and gives each
# one's share of its own ceiling; otherwise it stays silent
t4, t8 = by[("Q4_0", "tg24")], by[("Q8_0", "tg24")]
moved = [c for c in cs if "part of that difference is the machine's" in c]
if t4.get("read_bandwidth_readings_bytes_s") and t8.get("read_bandwidth_readings_bytes_s"):
    b4, b8 = d4["read_bandwidth_bytes_s"], d8["read_bandwidth_bytes_s"]
    if abs(b4 / b8 - 1) > 0.10 + 1e-9:
        want = "they reached %.0f%% and %.0f%%." % (t4["percent_of_ceiling"], t8["percent_of_ceiling"])
        assert len(moved) == 1 and want in moved[0], (b4, b8, want, cs)
    elif abs(b4 / b8 - 1) < 0.10 - 1e-9:
        assert not moved, (b4, b8, cs)
# weights mapped, or copied because their mapped pages read >5% below the
# probe's buffer (the main job's rule; which one happens depends on where this
# machine put the file's pages): either way the figures must agree with it.
# The rule holds the pages against the probe's buffer read just before them
# (reference_read_bandwidth_by_threads: the same minute, within the probe's
# figure's reach), not against a decode's own reading.
pj = json.load(open(glob.glob(sys.argv[3] + "/probe*.json")[0]))
by_t = lambda xs: {x["threads"]: x["bytes_s"] for x in xs}
for m in ms:
    assert m["weights"] in ("mapped", "copied"), m
    probe = by_t(m["reference_read_bandwidth_by_threads"])
    assert set(probe) == set(by_t(m["weights_read_bandwidth_by_threads"])), m
    assert all(v > 0 for v in probe.values()), m
    if m["weights"] == "copied":
        mb = m["mapped_weights_read_bandwidth_by_threads"]
        mref = by_t(m["mapped_reference_read_bandwidth_by_threads"])
        assert any(x["bytes_s"] < 0.95 * mref[x["threads"]] for x in mb if x["threads"] in mref), (m, mref)
        assert any(c.startswith(m["type"] + ": its memory-mapped weights, read in place,") and
                   "anonymous copy" in c for c in cs), cs
    else:
        # mapped: no page more than 5% slower (the copy rule), or no room
        # for a copy, and then pages more than 10% slower have the
        # conclusion that says decode falls short by that much
        assert "mapped_weights_read_bandwidth_by_threads" not in m, m
        slow = [x for x in m["weights_read_bandwidth_by_threads"]
                if x["threads"] in probe and x["bytes_s"] < 0.9 * probe[x["threads"]]]
        # (one conclusion per model: with a copy tried and dropped, the one
        # that says both)
        assert not slow or any(c.startswith(m["type"] + ": its weights, read in place,") or
                               (c.startswith(m["type"] + ": its memory-mapped weights, read in place,")
                                and "whatever the kernels do" in c) for c in cs), (m, probe, cs)
        assert len([c for c in cs if c.startswith(m["type"] + ": its") and "read in place" in c]) <= 1, cs
        copy_due = [x for x in m["weights_read_bandwidth_by_threads"]
                    if x["threads"] in probe and x["bytes_s"] < 0.95 * probe[x["threads"]]]
        dropped = m.get("copy_weights_read_bandwidth_by_threads")
        if dropped:
            # a copy was made, read slower than the mapping, and was dropped
            # each side against the buffer read beside it, summed
            cb, cref = by_t(dropped), by_t(m["copy_reference_read_bandwidth_by_threads"])
            mb = by_t(m["weights_read_bandwidth_by_threads"])
            common = sorted(set(cb) & set(mb))
            assert common and (sum(cb[t] / cref[t] for t in common) <
                               sum(mb[t] / probe[t] for t in common)), (cb, cref, mb, probe)
            assert copy_due, (m, probe)
            assert any(c.startswith(m["type"] + ": its memory-mapped weights, read in place,") and
                       "read slower still over the thread counts together" in c and
                       "against the mapping's" in c for c in cs), cs
        else:
            assert not copy_due or "read slower than fresh memory" in open(sys.argv[4]).read(), (m, probe)
    for x in s:
        if x["model"]["type"] == m["type"]:
            assert x["model"]["weights"] == m["weights"], (x["model"], m["weights"])
# the records file: identity, 8 runs (4 warm-ups), 4 summaries, end
lines = [json.loads(l) for l in open(sys.argv[2])]
assert lines[0]["record"] == "identity" and lines[0]["backend"] == "engine", lines[0]
runs = [l for l in lines if l["record"] == "run"]
assert len(runs) == 8 and sum(r["warmup"] for r in runs) == 4, runs
assert all(x["model"]["weights"] in ("mapped", "copied") for x in runs), runs
assert lines[-1]["record"] == "end" and lines[-1]["runs"] == 4, lines[-1]
assert len([l for l in lines if l["record"] == "summary"]) == 4
PY

# the synthesized models are cached: a second run writes nothing new; default
# threads are 1..online CPUs, a row each
models=$(ls "$TOKMETER_CACHE_DIR"/models/*.gguf | wc -l)
[ "$models" = 2 ] || fail "expected 2 cached models, found $models"
stamp=$(stat -c %Y "$TOKMETER_CACHE_DIR"/models/*Q4_0*.gguf)
expect_exit 0 "$TOKMETER" bench -v "${FAST[@]}" --out "$dir/r2.jsonl"
[ "$(stat -c %Y "$TOKMETER_CACHE_DIR"/models/*Q4_0*.gguf)" = "$stamp" ] || fail "model rewritten"
grep -q "QUICK" "$dir/out" || fail "a quick probe must be labelled in the table"
grep -q "pp16 tok/s" "$dir/out" || fail "no prefill column: $(cat "$dir/out")"
grep -q "tg8 tok/s" "$dir/out" || fail "no decode column"
ncpu=$(nproc)
for t in $(seq 1 "$ncpu"); do
  [ "$(grep -c "^ \{6\}$t " "$dir/out")" = 2 ] || fail "expected a row for $t threads per model"
  # tg8: no decode rate (rule 5), nor a percentage; the ceiling stays
  [ "$(grep -cE "^ {6}$t  [0-9.]+ +[0-9]+ +[0-9]+%    - \(a\) +[0-9]+ +-$" "$dir/out")" = 2 ] ||
    fail "tg8 at $t threads: blank decode cells expected: $(cat "$dir/out")"
done
[ "$(grep -c "^(a) decode blank by rule: < 24 generated tokens" "$dir/out")" = 2 ] ||
  fail "a footnote under each model's table: $(cat "$dir/out")"
# the pair's conclusions without the withheld decode rates
grep -qE "^Q4_0 reads 41% fewer bytes per token than Q8_0: decode has no rate \(tg8: fewer than 24 generated tokens\), prefill [+-][0-9]+% \(at $ncpu threads?; bytes alone would give decode \+[0-9]+%\)\.$" \
  "$dir/out" || fail "no Q4_0/Q8_0 conclusion without the decode rate: $(cat "$dir/out")"
grep -qE "decode [+-][0-9]+%,|decode at|nan%|nanx" "$dir/out" && fail "a withheld rate used: $(cat "$dir/out")"
if [ "$ncpu" -ge 2 ]; then
  grep -qE "^Q[48]_0: from 1 to $ncpu threads prefill [0-9.]+x; decode has no rate" "$dir/out" ||
    fail "no scaling conclusion: $(cat "$dir/out")"
fi
grep -q "records: $dir/r2.jsonl" "$dir/out" || fail "records file not named"
# the next step, a command that works as printed (a path with a space is quoted)
grep -qx "report: tokmeter report $dir/r2.jsonl --html report.html (a table, and a page of plots)" \
  "$dir/out" || fail "no report hint: $(tail -2 "$dir/out")"
grep -q "read now, before the runs (the cached probe's:" "$dir/out" ||
  fail "a cached probe: the bandwidth must be read again before the runs"
grep -qE "^ +memory read between the decode's repetitions \(GB/s, lowest-highest\): 1 thread [0-9.]+-[0-9.]+" \
  "$dir/out" || fail "no readings between the decode's repetitions: $(cat "$dir/out")"

# without -v: the short screen (docs/bench.md "The screen"): at most 30
# lines, none past 100 characters (but the paths of the last two); the machine in two lines, per model one
# table (rate +- sd, ceiling, %), at most five findings led by their severity,
# the rest named; progress on stderr one line per configuration when stderr
# is not a terminal, and none with --no-progress
expect_exit 0 "$TOKMETER" bench "${RATED[@]}" --out "$dir/short.jsonl"
[ "$(wc -l < "$dir/out")" -le 30 ] || fail "the screen is over 30 lines: $(cat "$dir/out")"
awk '!/^(records|report): / && length($0) > 100 { bad = 1 } END { exit bad }' "$dir/out" ||
  fail "a line over 100 characters: $(cat "$dir/out")"
grep -qE "^machine: .*, kernels [a-z0-9_]+$" "$dir/out" || fail "no machine line: $(cat "$dir/out")"
grep -qE "^probe: +memory [0-9.]+.* GB/s at 1" "$dir/out" || fail "no probe line: $(cat "$dir/out")"
[ "$(grep -cE "^threads +pp16 tok/s +ceiling +% +tg24 tok/s +ceiling +%$" "$dir/out")" = 2 ] ||
  fail "a table per model expected: $(cat "$dir/out")"
[ "$(grep -cE "^ {6}1  [0-9.]+ +[0-9]+ +[0-9]+% +[0-9.]+ +[0-9]+ +[0-9]+%$" "$dir/out")" = 2 ] ||
  fail "a row at 1 thread per model expected: $(cat "$dir/out")"
n_findings=$(grep -cE "^(problem|warning|info) +[^ ]" "$dir/out" || true)
[ "$n_findings" -ge 1 ] && [ "$n_findings" -le 5 ] || fail "1 to 5 findings expected: $(cat "$dir/out")"
grep -q "read between the decode's repetitions" "$dir/out" && fail "a -v detail on the short screen"
[ "$(grep -c "^bench: \[[0-9]*/[0-9]*" "$dir/err")" -ge 4 ] ||
  fail "no progress line per configuration on a non-terminal stderr: $(cat "$dir/err")"
# the HTML report renders the same findings, from the end record
expect_exit 0 "$TOKMETER" report "$dir/short.jsonl" --html "$dir/short.html"
python3 - "$dir/short.jsonl" "$dir/short.html" <<'PY' || fail "the report's findings (see above)"
import html, json, sys
end = [json.loads(l) for l in open(sys.argv[1])][-1]
assert end["record"] == "end" and end["findings"], end
page = open(sys.argv[2]).read()
assert '<h2 id="findings">Findings</h2>' in page
for f in end["findings"]:
    assert "<td>%s</td>" % f["code"] in page, f["code"]
    assert html.escape(f["text"], quote=True).replace("&#x27;", "&#39;") in page, f["text"]
PY
expect_exit 0 "$TOKMETER" bench "${RATED[@]}" -t 1 --no-progress --out "$dir/short.jsonl"
grep -q "^bench: \[" "$dir/err" && fail "--no-progress printed progress: $(cat "$dir/err")"

# with the probe cached, the bandwidth is read again before the runs, which
# --json gives beside what the cache said; each decode's ceiling rests on its
# own reading just before it, and the reading just after is in its summary
expect_exit 0 "$TOKMETER" bench -v "${FAST[@]}" -t 1 --json --out "$dir/r4.jsonl"
python3 - "$dir/out" "$TOKMETER_CACHE_DIR" <<'PY' || fail "cached-probe JSON checks (see above)"
import glob, json, sys
r = json.load(open(sys.argv[1]))
now = {x["threads"]: x["bytes_s"] for x in r["read_bandwidth_before_by_threads"]}
cached = {x["threads"]: x["bytes_s"] for x in r["read_bandwidth_cached_by_threads"]}
assert sorted(now) == sorted(cached) == [1], (now, cached)
assert now[1] > 0 and cached[1] > 0, (now, cached)
probe = json.load(open(glob.glob(sys.argv[2] + "/probe*.json")[0]))
assert abs(cached[1] - probe["read_bandwidth_by_threads"][0]["bytes_s"]) <= 1e-6 * cached[1], \
    (cached, probe["read_bandwidth_by_threads"])
n_decode = 0
for x in r["summaries"]:
    if x["phase"] == "decode":
        n_decode += 1
        bw = x["ceiling"]["read_bandwidth_bytes_s"]
        assert bw > 0 and x["read_bandwidth_after_bytes_s"] > 0, x
        assert len(x["read_bandwidth_readings_bytes_s"]) == x["n"] + 1, x
        # its own reading, not the one before the runs (readings timed in
        # nanoseconds are never bit-equal)
        assert bw != now[x["threads"]], (bw, now)
        want = bw / x["ceiling"]["bytes_per_token"]
        assert abs(x["ceiling"]["ceiling_tok_s"] - want) <= 1e-9 * want, x["ceiling"]
    else:
        assert "read_bandwidth_after_bytes_s" not in x, x
        assert "read_bandwidth_readings_bytes_s" not in x, x
assert n_decode == 2, n_decode  # Q4_0 and Q8_0 at 1 thread
PY

# a given file
expect_exit 0 "$TOKMETER" bench -v -m "$TOKMETER_FIXTURES/gguf/tiny-llama-Q4_0.gguf" -t 1 \
  "${FAST[@]}" --out "$dir/r3.jsonl"
grep -q "tiny-llama-Q4_0.gguf" "$dir/out" || fail "-m model not named"
grep -q "^      2 " "$dir/out" && fail "-t 1 printed a row for 2 threads"

# bad input: exit 2, one line naming the problem
printf 'GGUX\3\0\0\0' > "$dir/bad.gguf"
expect_exit 2 "$TOKMETER" bench -v -m "$dir/bad.gguf"
[ "$(wc -l < "$dir/err")" = 1 ] || fail "corrupt file: expected one line, got: $(cat "$dir/err")"
expect_exit 2 "$TOKMETER" bench -v -m "$dir/missing.gguf"
expect_exit 2 "$TOKMETER" bench -v --bogus
expect_exit 2 "$TOKMETER" bench -v -t 0
expect_exit 2 "$TOKMETER" bench -v -t 999 "${FAST[@]}" --out "$dir/x.jsonl"
expect_exit 2 "$TOKMETER" bench -v extra-arg
expect_exit 2 "$TOKMETER" bench -v --allow-cache
# lists with an empty element, and server URLs that cannot work: bad usage,
# found before any connection is tried
for args in "-t 1,,2" "-t ,1" "-t 1," "-p 8,,16" "-d ,0"; do
  # shellcheck disable=SC2086
  expect_exit 2 "$TOKMETER" bench -v $args
  grep -q "empty element\|not a list" "$dir/err" || fail "$args: $(cat "$dir/err")"
done
for url in notaurl "" ftp://127.0.0.1/ http:// http://127.0.0.1:99999 "http://[::1" \
           http://127.0.0.1: http://:80; do
  expect_exit 2 "$TOKMETER" bench -v --url "$url" -w classify -r 1 --out "$dir/x.jsonl"
  grep -q -- "--url" "$dir/err" || fail "--url '$url': $(cat "$dir/err")"
done
expect_exit 2 "$TOKMETER" bench -v --url http://127.0.0.1:1 -w classify,,extract --out "$dir/x.jsonl"
grep -q "empty element" "$dir/err" || fail "-w with an empty element: $(cat "$dir/err")"
# a well-formed URL with nothing behind it is a runtime failure, not bad usage
expect_exit 1 "$TOKMETER" bench -v --url "http://[::1]:1" -w classify -r 1 --out "$dir/x.jsonl"
# a server that cannot be reached still leaves its identity and end records
# (issue 31 part 3): the failure's kind counted, a finding saying what
# happened, so a sweep tells "down" from "not tried"
rm -f "$dir/down.jsonl"
expect_exit 1 "$TOKMETER" bench --url http://127.0.0.1:1 -w classify -r 1 --out "$dir/down.jsonl"
python3 - "$dir/down.jsonl" <<'PY' || fail "a refused server's records (see above)"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert [r["record"] for r in recs] == ["identity", "end"], recs
end = recs[1]
assert end["identity"] == recs[0]["id"] and end["runs"] == 0 and end["failed"] == {"connect": 1}, end
assert [f["code"] for f in end["findings"]] == ["server_unreachable"], end["findings"]
assert "cannot reach" in end["findings"][0]["text"], end["findings"]
PY
# flags of the other mode are refused, not ignored
expect_exit 2 "$TOKMETER" bench -v -m "$TOKMETER_FIXTURES/gguf/tiny-llama-Q4_0.gguf" --timeout 5
grep -q "needs --url" "$dir/err" || fail "--timeout in-process: $(cat "$dir/err")"
expect_exit 2 "$TOKMETER" bench -v --url http://127.0.0.1:1 -t 2
grep -q "in-process" "$dir/err" || fail "-t with --url: $(cat "$dir/err")"
# no command at all: one line naming the commands, and the --help hint
expect_exit 2 "$TOKMETER"
grep -q "no command given (bench, " "$dir/err" || fail "no command: $(cat "$dir/err")"
[ "$(wc -l < "$dir/err")" = 2 ] || fail "no command: expected 2 lines: $(cat "$dir/err")"
expect_exit 0 "$TOKMETER" bench --help
for flag in --gguf --threads --prompt-tokens --max-tokens --depth --reps --out --url; do
  grep -q -- "$flag" "$dir/out" || fail "--help does not list $flag"
done
echo "test_bench: ok"
