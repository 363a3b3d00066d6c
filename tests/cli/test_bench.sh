#!/usr/bin/env bash
# test_bench: the main job as it stands before the engine: probe (quick, in a
# fresh cache), synthesize the default Q4_0/Q8_0 pair once, print ceilings per
# thread count, and say that nothing was measured. Checks the figures against
# each other (the decode ceilings' ratio is the bytes ratio; prefill is equal),
# the cache reuse, -m on a fixture, and bad input.
set -euo pipefail
: "${TOKMETER:?TOKMETER must point at the binary}"
: "${TOKMETER_FIXTURES:?}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export TOKMETER_CACHE_DIR="$dir/cache"
export TOKMETER_PROBE_QUICK=1
fail() { echo "test_bench: FAIL: $*" >&2; exit 1; }

expect_exit() { # expected_code, then the command
  local want=$1; shift
  set +e
  "$@" >"$dir/out" 2>"$dir/err"
  local got=$?
  set -e
  [ "$got" = "$want" ] || fail "'$*' exited $got, expected $want (stderr: $(cat "$dir/err"))"
}

expect_exit 0 "$TOKMETER" bench --json
cp "$dir/out" "$dir/first.json"
python3 - "$dir/first.json" <<'PY' || fail "JSON checks (see above)"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["probe_quick"] is True, "a quick probe must say so"
assert r["measured"].startswith("none"), r["measured"]
ms = r["models"]
assert len(ms) == 2, ms
q4, q8 = ms
assert "Q4_0" in q4["model"] and "Q8_0" in q8["model"], (q4["model"], q8["model"])
bw = {e["threads"]: e["bytes_s"] for e in r["probe"]["read_bandwidth_by_threads"]}
for m in ms:
    assert m["file_bytes"] > 300e6, m
    assert len(m["by_threads"]) == len(bw), (m["by_threads"], bw)
    for row in m["by_threads"]:
        # decode ceiling = bandwidth at that thread count / mean bytes per token
        want = bw[row["threads"]] / m["decode_bytes_per_token_mean"]
        assert abs(row["decode_ceiling_tok_s"] - want) <= 1e-9 * want, (row, want)
        assert row["prefill_ceiling_tok_s"] > 0, row
    # mean bytes over tg128 include a KV cache: a little above depth 0
    assert m["decode_bytes_per_token_mean"] > m["bytes_per_token"], m
# Qwen3-0.6B Q4_0 reads ~376 MB per token (DESIGN.md sketch), Q8_0 ~633 MB
assert 370e6 < q4["bytes_per_token"] < 380e6, q4["bytes_per_token"]
assert 625e6 < q8["bytes_per_token"] < 640e6, q8["bytes_per_token"]
r4 = q4["by_threads"][0]["decode_ceiling_tok_s"] / q8["by_threads"][0]["decode_ceiling_tok_s"]
want = q8["decode_bytes_per_token_mean"] / q4["decode_bytes_per_token_mean"]
assert abs(r4 - want) < 1e-9, (r4, want)
# same FLOPs, same compute path: equal prefill ceilings
assert q4["by_threads"][0]["prefill_ceiling_tok_s"] == q8["by_threads"][0]["prefill_ceiling_tok_s"]
PY

# the synthesized models are cached: a second run writes nothing new
models=$(ls "$TOKMETER_CACHE_DIR"/models/*.gguf | wc -l)
[ "$models" = 2 ] || fail "expected 2 cached models, found $models"
stamp=$(stat -c %Y "$TOKMETER_CACHE_DIR"/models/*Q4_0*.gguf)
expect_exit 0 "$TOKMETER" bench -t 1
[ "$(stat -c %Y "$TOKMETER_CACHE_DIR"/models/*Q4_0*.gguf)" = "$stamp" ] || fail "model rewritten"
grep -q "not measurements" "$dir/out" || fail "the table must say these are ceilings"
grep -q "QUICK" "$dir/out" || fail "a quick probe must be labelled in the table"
grep -q "^      1 " "$dir/out" || fail "no row for 1 thread: $(cat "$dir/out")"
grep -q "^      2 " "$dir/out" && fail "-t 1 printed a row for 2 threads"

# a given file
expect_exit 0 "$TOKMETER" bench -m "$TOKMETER_FIXTURES/gguf/tiny-llama-Q4_0.gguf" -t 1
grep -q "tiny-llama-Q4_0.gguf" "$dir/out" || fail "-m model not named"

# bad input: exit 2, one line naming the problem
printf 'GGUX\3\0\0\0' > "$dir/bad.gguf"
expect_exit 2 "$TOKMETER" bench -m "$dir/bad.gguf"
[ "$(wc -l < "$dir/err")" = 1 ] || fail "corrupt file: expected one line, got: $(cat "$dir/err")"
expect_exit 2 "$TOKMETER" bench -m "$dir/missing.gguf"
expect_exit 2 "$TOKMETER" bench --bogus
expect_exit 2 "$TOKMETER" bench -t 0
expect_exit 2 "$TOKMETER" bench -t 999
expect_exit 2 "$TOKMETER" bench extra-arg
expect_exit 0 "$TOKMETER" bench --help
grep -q -- "--gguf" "$dir/out" || fail "--help does not list --gguf"
echo "test_bench: ok"
