#!/usr/bin/env bash
# engine_perf: the main job's figures on a quiet machine, appended to
# bench/RESULTS.md: prefill pp512 and decode tg128 of the Qwen3-0.6B-shaped
# Q4_0 and Q8_0 pair at 1 and 2 threads, each with its ceiling (memory read
# bandwidth / compute measured by the probe at the same thread count, in the
# same run: --reprobe, full probe), the percentage, and llama.cpp's figures
# for the same shapes beside them (llama-bench on the fixtures' machine, whose
# read bandwidth was 28.6 / 32.9 GB/s at 1 / 2 threads).
#
# Usage: bench/engine_perf.sh [BINARY] [REPS] [RESULTS]
#   (defaults build/tokmeter, 5, bench/RESULTS.md)
# Run it with nothing else on the machine: it says the load average it saw.
# A smoke test of the script itself (not a measurement): ENGINE_PERF_SMOKE=1
# uses a quick probe and pp32/tg16 and writes to RESULTS only if given.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-$here/../build/tokmeter}
reps=${2:-5}
results=${3:-$here/RESULTS.md}
P=512; N=128; probe_env=()
if [ "${ENGINE_PERF_SMOKE:-0}" = 1 ]; then
  P=32; N=16; probe_env=(TOKMETER_PROBE_QUICK=1); results=${3:-/dev/null}
fi
[ -x "$bin" ] || { echo "engine_perf: no binary at $bin (build first: scripts/build)" >&2; exit 2; }
unset TOKMETER_PROBE_QUICK
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
load_before=$(cut -d' ' -f1 /proc/loadavg)
start=$(date +%s)
env "${probe_env[@]}" "$bin" bench --reprobe -t 1,2 -p "$P" -n "$N" -r "$reps" --json \
  --out "$tmp/r.jsonl" > "$tmp/out.json"
secs=$(( $(date +%s) - start ))
load_after=$(cut -d' ' -f1 /proc/loadavg)
line=$(python3 - "$tmp/out.json" "$bin" "$reps" "$secs" "$load_before" "$load_after" "$P" "$N" <<'PY'
import json, sys, datetime
r = json.load(open(sys.argv[1]))
bin_, reps, secs, lb, la, P, N = sys.argv[2:9]
pp, tg = "pp" + P, "tg" + N
# llama.cpp's llama-bench sweep of the same shapes (fixtures' machine)
ref = {("Q4_0", "pp512"): (122, 241), ("Q4_0", "tg128"): (45, 65),
       ("Q8_0", "pp512"): (99, 189), ("Q8_0", "tg128"): (27, 42)}
ref_of = lambda typ, test, t: ref[(typ, test)][t - 1] if (typ, test) in ref else float("nan")
ref_bw = (28.6, 32.9)
by = {(s["model"]["type"], s["test"], s["threads"]): s for s in r["summaries"]}
kp = r["models"][0]["kernel_path"]
parts = []
for typ in ("Q4_0", "Q8_0"):
    for test in (pp, tg):
        cells = []
        for t in (1, 2):
            s = by.get((typ, test, t))
            if not s:
                cells.append(f"{t}t -")
                continue
            m, sd = s["rate_tok_s"]["mean"], s["rate_tok_s"]["sd"] or 0.0
            c = s["ceiling"]
            extra = ""
            if test.startswith("tg"):
                extra = f" @ {c['read_bandwidth_bytes_s'] / 1e9:.1f} GB/s"
            else:
                extra = f" @ {c['compute_ops_s'] / 1e9:.0f} G{c['compute_path']}-ops/s"
            lc = ref_of(typ, test, t)
            cells.append(f"{t}t {m:.1f} +- {sd:.1f} tok/s, ceiling {c['ceiling_tok_s']:.0f}{extra}"
                         f" ({s['percent_of_ceiling']:.0f}%), llama.cpp {lc:g}"
                         f" (ours/llama.cpp {m / lc:.2f})")
        parts.append(f"{typ} {test}: " + "; ".join(cells))
date = datetime.date.today().isoformat()
m = r["models"][0]
def huge(model):
    h = model.get("huge_page_share")
    return "?" if h is None else f"{100 * h:.0f}%"
def inplace(model):
    w = model.get("weights_read_bandwidth_by_threads") or []
    s = " / ".join(f"{x['bytes_s'] / 1e9:.1f}" for x in w) or "?"
    if model.get("weights") == "copied":
        mp = model.get("mapped_weights_read_bandwidth_by_threads")
        s += " (an anonymous copy" + (", the mapped pages read " + " / ".join(
            f"{x['bytes_s'] / 1e9:.1f}" for x in mp) if mp else "") + ")"
    return s
after = " / ".join(f"{x['bytes_s'] / 1e9:.1f}"
                   for x in r.get("read_bandwidth_after_by_threads") or []) or "?"
def machine():
    """The CPU this ran on, from /proc/cpuinfo (the script once printed a fixed name)."""
    try:
        lines = open("/proc/cpuinfo").read().splitlines()
    except OSError:
        return "unknown CPU ("
    get = lambda k: next((l.split(":", 1)[1].strip() for l in lines if l.startswith(k)), "?")
    n = sum(1 for l in lines if l.startswith("processor"))
    vm = "VM, " if " hypervisor" in " " + get("flags") else ""
    return f"{get('model name')} (family {get('cpu family')}, {vm}{n} CPUs"
print(f"- {date} engine_perf: {machine()}; load average {lb} before, {la} after), "
      f"`bench/engine_perf.sh {bin_} {reps}` (`tokmeter bench --reprobe -t 1,2 -p {P} -n {N} -r {reps}`,"
      f" full probe in the same run, {secs} s wall incl. probe), kernels {kp}, best for this CPU "
      f"{m['best_cpu_path']}, load {r['models'][0]['load_ms']:.0f} / {r['models'][1]['load_ms']:.0f} ms, "
      f"weights through 2 MiB pages {huge(r['models'][0])} / {huge(r['models'][1])}, "
      f"weights read in place {inplace(r['models'][0])} / {inplace(r['models'][1])} GB/s, "
      f"probe's loop again after the runs {after} GB/s: "
      + " | ".join(parts)
      + f". llama.cpp's machine read {ref_bw[0]} / {ref_bw[1]} GB/s at 1 / 2 threads. "
      + (f"PROBE WARNING: {r['probe_busy_warning']} " if r.get("probe_busy_warning") else "")
      + "Conclusions printed: " + " ".join(r["conclusions"]) + " Target: decode >= 90% of the ceiling.")
PY
)
echo "$line"
echo "$line" >> "$results"
