#!/usr/bin/env bash
# test_bench_cache_fit: a model whose weights fit in the CPU's caches has its
# decode ceiling named for the caches, not memory (eb_measure_cache_fit). A
# full probe is too slow for the suite, so the test gives the bench a cached
# full probe with a smaller buffer (256 MiB, or twice the last-level cache
# where that is larger: a Xeon this suite ran on has 480 MiB of L3, which
# held a 256 MiB buffer and read it at the caches' speed); the bench reads that
# buffer again before the runs and holds a buffer of the weights' size
# against it. Runs alone (RUN_SERIAL): the ratio of two bandwidth readings is
# what it checks.
set -euo pipefail
: "${TOKMETER:?binary path}" "${TOKMETER_FIXTURES:?fixtures dir}"
. "$(dirname "$0")/lib.sh"
model="$TOKMETER_FIXTURES/gguf/tiny-llama-Q4_0.gguf"

# A quick probe's file, turned into a full probe's of a given buffer size.
make_probe() { # make_probe BYTES
  rm -rf "$TOKMETER_CACHE_DIR"
  TOKMETER_PROBE_QUICK=1 "$TOKMETER" probe >/dev/null 2>"$dir/err" ||
    fail "quick probe: $(cat "$dir/err")"
  python3 - "$TOKMETER_CACHE_DIR" "$1" <<'PY'
import glob, json, sys
f = glob.glob(sys.argv[1] + "/probe*.json")
assert len(f) == 1, f
p = json.load(open(f[0]))
p["quick"] = False
want = int(sys.argv[2])
if want >= (256 << 20):  # the "far above the caches" buffer
    want = max(want, 2 * (p["machine"]["llc_bytes"] or 0))
p["buffer_bytes"] = want
json.dump(p, open(f[0], "w"))
PY
}

# 1. A 5 MiB model against a 256 MiB buffer: it fits. The caches of a VM are
# shared with other guests, so a reading can fall short: each try checks the
# decision against its readings, and one try in three must find the fit.
make_probe $((256 << 20))
fits=
for try in 1 2 3; do
  rm -f "$dir/a.jsonl"
  "$TOKMETER" bench -v -m "$model" -p 16 -n 32 -t 1,2 -r 2 --json --out "$dir/a.jsonl" \
    >"$dir/a.json" 2>"$dir/err" || fail "bench: $(cat "$dir/err")"
  python3 - "$dir/a.json" "$dir/a.jsonl" <<'PY' || fail "a model that fits, try $try (see above)"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["probe_quick"] is False, r["probe_quick"]
m = r["models"][0]
# the reference the decision used: the probe's buffer read just before the
# weights (not the reading before the runs, minutes apart on a busy host)
now = {x["threads"]: x["bytes_s"] for x in m["reference_read_bandwidth_by_threads"]}
fit = {x["threads"]: x["bytes_s"] for x in m["same_size_read_bandwidth_by_threads"]}
assert sorted(fit) == [1, 2] and sorted(now) == [1, 2], (fit, now)
# the decision follows the readings (EB_CACHE_FIT = 1.5 at every thread count)
want = all(fit[t] >= 1.5 * now[t] for t in fit)
assert m["fits_in_caches"] is want, (m["fits_in_caches"], fit, now)
cs = r["conclusions"]
if not want:  # measured, and not found: memory's wording, and the shell tries again
    assert not any("caches" in c for c in cs), cs
    assert m["fits_in_caches"] is False, m
    sys.exit(0)
assert any("fit in this CPU's caches" in c for c in cs), cs
assert any("of the cache ceiling" in c for c in cs), cs
assert not any("of the memory ceiling" in c for c in cs), cs
assert not any("than the probe's buffer: the memory holding" in c for c in cs), cs
tg = [s for s in r["summaries"] if s["test"] == "tg32"]
assert len(tg) == 2 and all(s["ceiling"]["weights_fit_in_caches"] is True for s in tg), tg
recs = [json.loads(l) for l in open(sys.argv[2])]
runs = [x for x in recs if x["record"] == "run" and x["test"] == "tg32"]
assert runs and all(x["ceiling"]["weights_fit_in_caches"] is True for x in runs), runs
open(sys.argv[1] + ".fits", "w").close()
PY
  [ -e "$dir/a.json.fits" ] && { fits=$try; break; }
done
# on this machine class (an L2 of 1 MiB a core, an L3 of 32 MiB) a 5 MiB
# buffer read 1.8-3.6x the probe's buffer
[ -n "$fits" ] || fail "a 5 MiB buffer read below 1.5x a 256 MiB one in three tries"
# The text: each try judged by its own readings, as above (the weights read in
# place against the probe's buffer, printed under the model): a fit gets the
# caches' line, a try whose readings fell short must not, and tries again.
text_fit=
for try in 1 2 3; do
  "$TOKMETER" bench -v -m "$model" -p 0 -n 32 -t 1 -r 2 --out "$dir/b.jsonl" >"$dir/b.out" \
    2>"$dir/err" || fail "bench (text): $(cat "$dir/err")"
  if grep -q "^the weights fit in the caches: a fresh buffer of their size read" "$dir/b.out"; then
    text_fit=$try
    break
  fi
  python3 - "$dir/b.out" <<'PY' || fail "text, try $try: $(cat "$dir/b.out")"
import re, sys
t = open(sys.argv[1]).read()
m = re.search(r"weights read in place \(the probe's loop over this file's pages\): ([0-9.]+) GB/s "
              r"\(1 thread, probe's buffer ([0-9.]+)\)", t)
assert m, "no reading of the weights in place"
inplace, buf = float(m.group(1)), float(m.group(2))
# readings that say fit, and no line: the text lost the decision
assert inplace < 1.5 * buf, (inplace, buf)
assert "read (the caches)" not in t, "no fit, yet the readings are called the caches'"
PY
done
if [ -n "$text_fit" ]; then
  grep -q "read (the caches) between the decode's repetitions" "$dir/b.out" ||
    fail "the readings between repetitions still called memory: $(cat "$dir/b.out")"
else
  # the JSON tries above found the fit; here the host's caches read short
  # three times (seen: 30.1 against 20.5 GB/s, a ratio of 1.47): the
  # wording of a no-fit was checked instead
  echo "test_bench_cache_fit: note: the text's fit line not seen in three tries (readings below 1.5x)"
fi

# 2. The same model against a buffer of 16 MiB: not four times its size, so
# not measured (null), and the ceiling is memory's as before.
make_probe $((16 << 20))
"$TOKMETER" bench -v -m "$model" -p 16 -n 32 -t 1 -r 2 --json --out "$dir/c.jsonl" \
  >"$dir/c.json" 2>"$dir/err" || fail "bench, small buffer: $(cat "$dir/err")"
python3 - "$dir/c.json" <<'PY' || fail "a model not measured (see above)"
import json, sys
r = json.load(open(sys.argv[1]))
m = r["models"][0]
assert m["fits_in_caches"] is None and m["same_size_read_bandwidth_by_threads"] == [], m
cs = r["conclusions"]
assert not any("caches" in c for c in cs), cs
assert any("of the memory ceiling" in c for c in cs), cs
tg = [s for s in r["summaries"] if s["test"] == "tg32"]
assert tg and tg[0]["ceiling"]["weights_fit_in_caches"] is None, tg
PY
echo "test_bench_cache_fit: ok"
