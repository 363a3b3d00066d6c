#!/usr/bin/env bash
# test_probe: `tokmeter probe` end to end with --quick: JSON keys and sane
# values, the human table, --cached after a probe, --cached on an empty cache
# (exit 1), bad usage (exit 2), --help (exit 0).
set -euo pipefail

: "${TOKMETER:?set TOKMETER to the tokmeter binary}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export TOKMETER_CACHE_DIR="$work/cache"
unset TOKMETER_PROBE_QUICK || true

fail() { echo "test_probe: FAIL: $*" >&2; exit 1; }

expect_exit() { # expected-code description command...
  local want=$1 what=$2; shift 2
  local got=0
  "$@" >"$work/out" 2>"$work/err" || got=$?
  [[ $got == "$want" ]] || { cat "$work/err" >&2; fail "$what: exit $got, expected $want"; }
}

# --cached on an empty cache: exit 1 with a clear message.
expect_exit 1 "--cached on empty cache" "$TOKMETER" probe --cached
grep -q "no cached probe" "$work/err" || fail "--cached on empty cache: message missing"

# Bad usage: exit 2.
expect_exit 2 "unknown flag" "$TOKMETER" probe --bogus
grep -q "Try 'tokmeter probe --help'" "$work/err" || fail "unknown flag: no hint"
expect_exit 2 "bad thread count" "$TOKMETER" probe --quick -t 0
expect_exit 2 "missing thread count" "$TOKMETER" probe --threads
expect_exit 2 "--cached with --quick" "$TOKMETER" probe --cached --quick
expect_exit 2 "stray argument" "$TOKMETER" probe extra

# --help lists every flag.
expect_exit 0 "--help" "$TOKMETER" probe --help
for flag in --threads --quick --cached --json --help; do
  grep -q -- "$flag" "$work/out" || fail "--help does not list $flag"
done

# A quick probe as JSON.
expect_exit 0 "probe --quick --json" "$TOKMETER" probe --quick --json
cp "$work/out" "$work/probe.json"
python3 - "$work/probe.json" <<'PY' || fail "probe --quick --json: bad JSON (see above)"
import json, math, sys
d = json.load(open(sys.argv[1]))
problems = []
def need(cond, what):
    if not cond:
        problems.append(what)
for k in ["read_bandwidth_bytes_s", "read_bandwidth_by_threads", "copy_bandwidth_by_threads",
          "copy_bandwidth_read_plus_write_bytes_s", "compute_f32_flops", "compute_f32_by_threads",
          "compute_int8_ops", "compute_int8_by_threads", "buffer_bytes", "measured_at", "machine",
          "thermal", "f32_path", "int8_path", "quick"]:
    need(k in d, "key " + k)
if problems:
    print("missing:", problems); sys.exit(1)
need(d["quick"] is True, "quick is true")
rb = d["read_bandwidth_bytes_s"]
need(isinstance(rb, float) and 100e6 < rb < 10e12, "read bandwidth in (100 MB/s, 10 TB/s): %r" % rb)
need(d["compute_f32_flops"] > 0, "f32 flops > 0")
n = d["max_threads"]
for k, v in [("read_bandwidth_by_threads", "bytes_s"), ("copy_bandwidth_by_threads", "read_plus_write_bytes_s"),
             ("compute_f32_by_threads", "flops")]:
    arr = d[k]
    need([e["threads"] for e in arr] == list(range(1, n + 1)), k + " threads 1..N")
    need(all(math.isfinite(e[v]) and e[v] > 0 for e in arr), k + " positive")
need(max(e["bytes_s"] for e in d["read_bandwidth_by_threads"]) == rb, "best read = max of series")
m = d["machine"]
for k in ["cpu", "arch", "cores", "memory_bytes", "memory_available_bytes", "llc_bytes", "os", "flags"]:
    need(k in m, "machine." + k)
need(m["cores"] >= 1 and m["memory_bytes"] > 0, "machine cores/memory positive")
# unknown LLC: null, as the identity record says (was 0)
need(m["llc_bytes"] is None or (isinstance(m["llc_bytes"], int) and m["llc_bytes"] > 0), "llc_bytes null or > 0")
need(isinstance(m["flags"], list), "machine.flags is a list")
t = d["thermal"]
need(isinstance(t["readable"], bool) and isinstance(t["temps"], list) and isinstance(t["freqs_mhz"], list), "thermal shape")
need(t["readable"] == (len(t["temps"]) + len(t["freqs_mhz"]) > 0), "thermal.readable matches readings")
flags = set(m["flags"])
has_int8 = ({"avx512_vnni", "avx512f"} <= flags) or ({"avx_vnni", "avx2"} <= flags) or ("asimddp" in flags)
if has_int8:
    need(d["int8_path"] and d["compute_int8_ops"] > 0 and len(d["compute_int8_by_threads"]) == n, "int8 present")
else:
    need(d["int8_path"] is None and d["compute_int8_ops"] is None, "int8 null without the flags")
if problems:
    print("problems:", problems); sys.exit(1)
PY

# The result was cached: --cached shows the same measurement.
ls "$TOKMETER_CACHE_DIR"/probe-*.json >/dev/null 2>&1 || fail "no cache file written"
expect_exit 0 "--cached --json" "$TOKMETER" probe --cached --json
python3 - "$work/probe.json" "$work/out" <<'PY' || fail "--cached differs from the probe just run"
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
sys.exit(0 if a == b else 1)
PY

# Human output: machine line, thermal line, table, best, quick marked.
expect_exit 0 "--cached (table)" "$TOKMETER" probe --cached
for pat in "^machine: " "^temperatures: " "^threads  read GB/s  copy GB/s  f32 GFLOPS  int8 GOPS" \
           "^ *1  " "^best: read " "QUICK"; do
  grep -q -- "$pat" "$work/out" || { cat "$work/out" >&2; fail "table output lacks /$pat/"; }
done

# -t 1 limits the thread counts; the environment variable selects quick mode.
expect_exit 0 "-t 1 via TOKMETER_PROBE_QUICK" env TOKMETER_PROBE_QUICK=1 "$TOKMETER" probe -t 1 --json
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["max_threads"]==1 and len(d["read_bandwidth_by_threads"])==1 and d["quick"] else 1)' "$work/out" \
  || fail "-t 1: expected one thread count and quick"

# ... but a narrower probe does not replace the fuller cache (the next
# `ceiling` once probed the machine again): it says so and the cache stays.
full_n=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["max_threads"])' "$work/probe.json")
if [ "$full_n" -gt 1 ]; then
  grep -q "not cached: the cached probe .* is fuller than this one (quick, 1..1 threads)" "$work/err" \
    || fail "-t 1 after a full probe: no line saying the cache stays: $(cat "$work/err")"
  expect_exit 0 "--cached after -t 1" "$TOKMETER" probe --cached --json
  python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["max_threads"] == int(sys.argv[2]) else 1)' \
    "$work/out" "$full_n" || fail "-t 1 replaced the cached 1..$full_n probe"
fi

# More threads than the machine has: refused before measuring, as bench does
# (64 on 2 CPUs was measured, cached, and ceiling took its "best" of 50 threads).
cpus=$(getconf _NPROCESSORS_ONLN)
cp "$TOKMETER_CACHE_DIR"/probe-*.json "$work/cache-before.json"
expect_exit 2 "-t beyond the CPUs" "$TOKMETER" probe --quick -t $((cpus + 1))
grep -q "this machine has $cpus online CPUs" "$work/err" || fail "-t beyond: $(cat "$work/err")"
[ ! -s "$work/out" ] || fail "-t beyond the CPUs: output on stdout"
cmp -s "$work/cache-before.json" "$TOKMETER_CACHE_DIR"/probe-*.json || fail "-t beyond: cache changed"
grep -q "at most the online CPUs" <("$TOKMETER" probe --help) || fail "--help: -t bound"

# A corrupt cache file: --cached fails with exit 1 naming it; a new probe repairs it.
for f in "$TOKMETER_CACHE_DIR"/probe-*.json; do printf '{"broken' >"$f"; done
expect_exit 1 "--cached on corrupt cache" "$TOKMETER" probe --cached
grep -q "corrupt probe cache" "$work/err" || fail "--cached on corrupt cache: message missing"
expect_exit 0 "probe over corrupt cache" "$TOKMETER" probe --quick --json
expect_exit 0 "--cached after repair" "$TOKMETER" probe --cached --json
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["read_loop"].startswith("quarters, prefetch") else 1)' "$work/out" \
  || fail "read_loop missing from the probe JSON"

# A cache file from before the read loop was recorded (no read_loop key):
# --cached refuses it (its bandwidth was measured another way); a new probe
# replaces it.
for f in "$TOKMETER_CACHE_DIR"/probe-*.json; do
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); del d["read_loop"]; json.dump(d, open(sys.argv[1], "w"))' "$f"
done
expect_exit 1 "--cached on an older read loop" "$TOKMETER" probe --cached
grep -q "older read loop" "$work/err" || fail "--cached on an older read loop: message missing"
expect_exit 0 "probe over an older read loop" "$TOKMETER" probe --quick --json
expect_exit 0 "--cached after the new probe" "$TOKMETER" probe --cached --json

echo "test_probe: ok"
