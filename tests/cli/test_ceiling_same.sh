#!/usr/bin/env bash
# test_ceiling_same: one ceiling for one file and one set of rates, whichever
# command asks (model/ceiling.h ceiling_of_workload): `tokmeter ceiling`,
# `tokmeter bench -m` and `tokmeter import` give the same prefill ceiling for
# a 64-token prompt at 2 threads, and the same bytes per generated token for
# a 32-token decode, on a crafted probe of each machine class without tiles
# (tests/cli/craft_probe.py), so it holds on any CPU. Decode's bandwidth in
# bench is read around its repetitions (docs/bench.md), so there the ceiling
# is checked as that reading / the same bytes.
set -euo pipefail
: "${TOKMETER:?}" "${TOKMETER_FIXTURES:?}"
. "$(dirname "$0")/lib.sh"
export TOKMETER_PROBE_QUICK=1
G="$TOKMETER_FIXTURES/gguf/tiny-llama-Q4_0.gguf"
LB="$TOKMETER_FIXTURES/llama-bench/llama-bench-output.jsonl"
CRAFT="$(dirname "$0")/craft_probe.py"
[ "$(nproc)" -ge 2 ] || { echo "test_ceiling_same: SKIPPED: needs 2 online CPUs (the fixture ran at 2 threads)"; exit 77; }

expect_exit 0 "$TOKMETER" probe -t 2 --quick   # the cache the classes are crafted into
for cls in avx2 avx512_vnni; do
  python3 "$CRAFT" "$TOKMETER_CACHE_DIR" "$cls" >"$dir/class.json" || fail "crafting a $cls probe"
  expect_exit 0 "$TOKMETER" ceiling "$G" -t 2 -p 64 -d 0 --json
  cp "$dir/out" "$dir/ceiling.json"
  expect_exit 0 "$TOKMETER" bench -m "$G" -t 2 -p 64 -n 32 -r 1 --json --no-progress \
    --out "$dir/bench-$cls.jsonl"
  cp "$dir/out" "$dir/bench.json"
  expect_exit 0 "$TOKMETER" import -m "$G" --this-machine -o "$dir/import-$cls.jsonl" "$LB"
  python3 - "$dir/ceiling.json" "$dir/bench.json" "$dir/import-$cls.jsonl" "$dir/class.json" \
    "$cls" <<'PY' || fail "$cls: the three commands' ceilings differ (see above)"
import json, sys
ceiling = json.load(open(sys.argv[1]))
bench = json.load(open(sys.argv[2]))
imported = [json.loads(l) for l in open(sys.argv[3]) if '"summary"' in l]
cls, crafted = sys.argv[5], json.load(open(sys.argv[4]))

def same(a, b, what):
    assert a is not None and b is not None and abs(a - b) <= 1e-9 * abs(b), (cls, what, a, b)

b_pp = [s for s in bench["summaries"] if s["test"] == "pp64"][0]["ceiling"]
b_tg = [s for s in bench["summaries"] if s["test"] == "tg32"][0]["ceiling"]
i_pp = [s for s in imported if s["test"] == "pp64"][0]["ceiling"]
i_tg = [s for s in imported if s["test"] == "tg32"][0]["ceiling"]
# prefill: the same path, rate and FLOPs, so the same ceiling in all three
same(b_pp["ceiling_tok_s"], ceiling["prefill_ceiling_tok_s"], "prefill: bench vs ceiling")
same(i_pp["ceiling_tok_s"], ceiling["prefill_ceiling_tok_s"], "prefill: import vs ceiling")
same(b_pp["flops_per_token"], i_pp["flops_per_token"], "prefill FLOPs per token")
same(b_pp["compute_ops_s"], ceiling["compute_ops_s"], "compute")
want_path = "int8" if cls == "avx512_vnni" else "f32"
assert b_pp["compute_path"] == i_pp["compute_path"] == want_path, (cls, b_pp, i_pp)
# decode: the same bytes per token (the mean over depths 0..31) in bench
# and import; import's ceiling is the probe's bandwidth at 2 threads over
# them, bench's its own reading over them
same(b_tg["bytes_per_token"], i_tg["bytes_per_token"], "decode bytes per token")
same(i_tg["ceiling_tok_s"], i_tg["read_bandwidth_bytes_s"] / i_tg["bytes_per_token"], "import decode")
same(i_tg["read_bandwidth_bytes_s"], 2 * 20e9, "import's bandwidth: the crafted probe at 2 threads")
same(b_tg["ceiling_tok_s"], b_tg["read_bandwidth_bytes_s"] / b_tg["bytes_per_token"], "bench decode")
# and at depth 0 with one token, ceiling's figure is the crafted bandwidth
# over its own bytes
d0 = ceiling["decode_ceiling_by_depth"][0]
same(d0["tok_s"], 2 * 20e9 / d0["bytes_per_token"], "ceiling decode at depth 0")
PY
done
echo "test_ceiling_same: ok"
