#!/usr/bin/env bash
# test_ttft_sweep: `tokmeter bench --ttft-sweep` over the paced fake server,
# whose prefill is exactly a + b * (processed prompt tokens) ms: the fit must
# recover b (the prefill rate 1000 / b) and a (plus the loopback's own small
# cost); in-process on a tiny synthetic model: pp runs only, one per length,
# and a fit printed; bad usage exits 2.
set -euo pipefail
: "${TOKMETER:?}" "${TOKMETER_FAKESERVER:?}"
. "$(dirname "$0")/lib.sh"
export TOKMETER_PROBE_QUICK=1 NO_PROXY='*'
unset OPENAI_API_KEY
# --- server: a = 30 ms, b = 0.5 ms/token (2000 tok/s) -------------------------
start_server fs --mode paced --flavor llamacpp --a 30 --b 0.5 --c 1
expect_exit 0 "$TOKMETER" bench --url "http://127.0.0.1:$PORT" --ttft-sweep -p 50,200,400,800 \
  -r 3 --out "$dir/s.jsonl"
grep -q "TTFT = " "$dir/out" || fail "no fit printed: $(cat "$dir/out")"
python3 - "$dir/s.jsonl" "$dir/out" <<'PY' || fail "server sweep (see above)"
import json, re, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
runs = [r for r in recs if r["record"] == "run" and r.get("workload") == "custom"
        and not r["warmup"] and not r.get("calibration")]
assert len(runs) == 4 * 3, len(runs)
targets = sorted({r["settings"]["prompt_tokens_target"] for r in runs})
assert targets == [50, 200, 400, 800], targets
assert all(r["max_tokens"] == 16 for r in runs), [r["max_tokens"] for r in runs]
out = open(sys.argv[2]).read()
m = re.search(r"TTFT = (-?[\d.]+) \+- ([\d.]+) ms .* L / \((\d+) \+- (\d+) tok/s\)", out)
assert m, out
fixed, rate = float(m.group(1)), float(m.group(3))
# loopback + client overhead adds a few ms to a; b is exact on the server side
assert 25 <= fixed <= 60, fixed
assert 1700 <= rate <= 2300, rate
PY

# --- bad usage -----------------------------------------------------------------
expect_exit 2 "$TOKMETER" bench --url "http://127.0.0.1:$PORT" --ttft-sweep -p 64
grep -q "2 distinct prompt lengths" "$dir/err" || fail "one length: $(cat "$dir/err")"
expect_exit 2 "$TOKMETER" bench --url "http://127.0.0.1:$PORT" --ttft-sweep -p 1,2,3,4,5,6,7,8,9
expect_exit 2 "$TOKMETER" bench --url "http://127.0.0.1:$PORT" --ttft-sweep -w classify
expect_exit 2 "$TOKMETER" bench --url "http://127.0.0.1:$PORT" -p 64,128
expect_exit 0 "$TOKMETER" bench --help
grep -q -- "--ttft-sweep" "$dir/out" || fail "--help does not list --ttft-sweep"

# --- in-process: a tiny synthetic model ---------------------------------------
"$TOKMETER" synth --preset tiny -o "$dir/tiny.gguf" >/dev/null 2>&1 || fail "synth"
expect_exit 0 "$TOKMETER" bench -m "$dir/tiny.gguf" -t 1 -r 2 --ttft-sweep -p 16,32,64 \
  --out "$dir/e.jsonl"
grep -q "engine | .*tiny.gguf.* | t1 | d0" "$dir/out" || fail "no in-process fit: $(cat "$dir/out")"
grep -q "fitted over 6 runs at 3 lengths" "$dir/out" || fail "fit counts: $(cat "$dir/out")"
python3 - "$dir/e.jsonl" <<'PY' || fail "in-process sweep records"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
runs = [r for r in recs if r["record"] == "run" and not r["warmup"]]
assert sorted({r["test"] for r in runs}) == ["pp16", "pp32", "pp64"], {r["test"] for r in runs}
assert all(r["depth"] == 0 and r["phase"] == "prefill" for r in runs)
PY
# sub-millisecond figures keep 3 significant digits (a tiny model's ~0.06 ms
# printed "TTFT 0.0 ms", its fixed cost "-0.0 +- 0.0")
python3 - "$dir/out" <<'PY' || fail "sub-ms digits: $(cat "$dir/out")"
import re, sys
out = open(sys.argv[1]).read()
nums = re.findall(r"TTFT = (\S+) \+- (\S+) ms", out) + re.findall(r"TTFT (\S+) \+- (\S+) ms,", out)
assert nums, out
for pair in nums:
    for x in pair:
        v = abs(float(x))
        assert x.lstrip("-") not in ("0.0",) or v == 0, x
        if 0 < v < 1:
            assert len(x.lstrip("-").lstrip("0.")) >= 3, x
PY
# fewer than 3 timed points cannot be fitted: refused up front (exit 0 with
# "no fit" before)
expect_exit 2 "$TOKMETER" bench -m "$dir/tiny.gguf" -t 1 -r 1 --ttft-sweep -p 16,32 --out "$dir/f.jsonl"
grep -q "the fit needs at least 3" "$dir/err" || fail "2 points: $(cat "$dir/err")"
[ ! -s "$dir/f.jsonl" ] || fail "2 points ran anyway"
# the method (docs/bench.md, where --help points) says the sweep's depths
doc="${TOKMETER_SOURCE_DIR:?}/docs/bench.md"
grep -q "pp runs at depth 0" "$doc" && fail "docs/bench.md says depth 0 (-d is used)"
grep -q "pp runs at each -d depth" "$doc" || fail "docs/bench.md: the sweep's -d"
echo "test_ttft_sweep: ok"
