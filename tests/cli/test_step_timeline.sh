#!/usr/bin/env bash
# test_step_timeline: bench/step_timeline.c (built by the test build with the
# engine's TM_STEP_PROFILE hooks) on a small synthetic model whose matrices
# are large enough (1-3 MB) for both threads to take chunks: it records every
# step it decoded and drops nothing; at 2 threads both threads read weights;
# the weights the matrix chunks read per step are the same at 1 and 2 threads
# (each chunk recorded once, whichever thread took it) and are the model's
# weights per token as `tokmeter ceiling` counts them, less the norm vectors
# (not read by matrix kernels): within 2%. The step's split into matrix jobs,
# attention jobs and the rest has all three parts positive (the job events
# lie inside the steps, none counted twice), and at 2 threads the shares of
# jobs each thread ended last add up to 100%. A bad argument exits 2.
set -euo pipefail
: "${TOKMETER:?TOKMETER must point at the binary}"
: "${TOKMETER_BUILD_DIR:?TOKMETER_BUILD_DIR must point at the build directory}"
tl="$TOKMETER_BUILD_DIR/tests/tokmeter-step-timeline"
. "$(dirname "$0")/lib.sh"
[ -x "$tl" ] || fail "no step timeline binary at $tl"

"$TOKMETER" synth --preset tiny --n-embd 1024 --heads 8 --n-ff 3072 --vocab 4096 --type Q8_0 \
  -o "$dir/m.gguf" >/dev/null
# At 2 threads both threads must have read weights. Right after the pool
# starts, the kernel may run its worker on the caller's CPU for a few
# milliseconds (until it balances them), and the caller then takes every
# chunk itself (the pool lets a thread take another's leftovers): a warm-up
# of 16 steps (~10 ms on this model) was too short in 2 runs of 8 once the
# test build ran at -O3. So 64 steps (the tool's warm-up repetition is as
# long), and on a loaded machine, where the worker can be descheduled for a
# whole run, up to three runs before calling its events missing.
for t in 1 2; do
  for attempt in 1 2 3; do
    "$tl" "$dir/m.gguf" "$t" 1 64 >"$dir/out$t" 2>"$dir/err$t" || fail "$t thread(s): $(cat "$dir/err$t")"
    [ "$t" = 1 ] || grep -qE "^  thread 1 matrix chunks .*, [0-9.]+ MB," "$dir/out$t" && break
  done
  grep -q ", 64 steps recorded (.* events, 0 dropped)" "$dir/out$t" || fail "$t thread(s): $(head -1 "$dir/out$t")"
done
TOKMETER_PROBE_QUICK=1 "$TOKMETER" ceiling "$dir/m.gguf" --bandwidth 10GB/s --json >"$dir/ceiling.json"
python3 - "$dir/out1" "$dir/out2" "$dir/ceiling.json" <<'PY' || fail "weights per step"
import json, re, sys
def per_step(path):
    m = re.search(r"weights read per step in matrix chunks: (\d+) bytes", open(path).read())
    assert m, "no weights line in " + path
    return int(m.group(1))
one, two = per_step(sys.argv[1]), per_step(sys.argv[2])
assert one == two, f"1 thread read {one} bytes a step, 2 threads {two}"
text2 = open(sys.argv[2]).read()
for t in (0, 1):
    m = re.search(rf"thread {t} matrix chunks .*?, ([0-9.]+) MB,", text2)
    assert m and float(m.group(1)) > 0, f"2 threads: thread {t} read no weights"
for path in sys.argv[1:3]:
    text = open(path).read()
    m = re.search(r"the step: matrix jobs ([0-9.]+) ms, attention jobs ([0-9.]+) ms, the rest (-?[0-9.]+) ms", text)
    assert m, "no split of the step in " + path
    mm, att, rest = map(float, m.groups())
    assert mm > 0 and att > 0 and rest > 0, f"{path}: split {mm} / {att} / {rest} ms"
m = re.search(r"ended on thread: 0 (\d+)%, 1 (\d+)%", text2)
assert m and 99 <= int(m.group(1)) + int(m.group(2)) <= 101, "2 threads: ended-last shares"
want = json.load(open(sys.argv[3]))["weight_bytes_per_token"]
assert 0.98 * want <= one <= want, f"{one} bytes a step in chunks against {want} per token"
PY

set +e
"$tl" "$dir/missing.gguf" 2 >/dev/null 2>"$dir/err"; rc=$?
"$tl" "$dir/m.gguf" 0 >/dev/null 2>"$dir/err0"; rc0=$?
set -e
[ "$rc" = 2 ] || fail "a missing model exited $rc, expected 2"
[ "$rc0" = 2 ] && grep -q "THREADS must be" "$dir/err0" || fail "0 threads exited $rc0: $(cat "$dir/err0")"
echo "test_step_timeline: ok"
