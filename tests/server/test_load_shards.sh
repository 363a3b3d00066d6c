#!/usr/bin/env bash
# test_load_shards: one load run split over four processes (issue 32 part 7)
# against one loopback server that batches (batching_server.py), each shard
# taking its place from a different launcher's convention (--shard, Slurm,
# Open MPI, a Kubernetes Indexed Job), from a common --start-at: merged by
# `report` and `compare` without being asked, they give the aggregate one
# process gives driving the same load (within 5%; the same arithmetic is
# checked here again from the raw request records); a run with a shard
# missing, settings that differ or a window that began late is refused with
# the reason, never summed; bad shard flags are one-line usage errors.
set -euo pipefail
: "${TOKMETER:?}" "${TOKMETER_SOURCE_DIR:?}"
. "$(dirname "$0")/../cli/lib.sh"
export TOKMETER_PROBE_QUICK=1 NO_PROXY='*'
unset OPENAI_API_KEY SLURM_PROCID SLURM_NTASKS OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE \
  JOB_COMPLETION_INDEX

rm -f "$dir/b.port"
python3 "$TOKMETER_SOURCE_DIR/tests/server/batching_server.py" --port-file "$dir/b.port" \
  --slots 16 --c0 20 --c1 1 --b 0.5 >/dev/null 2>"$dir/b.log" &
pids+=($!)
for _ in $(seq 100); do [ -s "$dir/b.port" ] && break; sleep 0.05; done
URL="http://127.0.0.1:$(cat "$dir/b.port")" || fail "batching server: $(cat "$dir/b.log")"
cd "$dir" # a refused run must leave no results file here
common=(--url "$URL" -c 4,8 -p 50 -n 40 --ramp 1 --duration 3 --no-progress)

# --- 1. bad shard flags: one line, exit 2, nothing run -------------------------
future=$(( $(date +%s) + 60 ))
bad() { # expected message, then the arguments
  local want=$1; shift
  expect_exit 2 "$@"
  grep -q -- "$want" "$dir/err" || fail "'$*': no '$want' in: $(cat "$dir/err")"
  [ "$(wc -l <"$dir/err")" -le 2 ] || fail "'$*': more than a line: $(cat "$dir/err")"
}
bad "below N" "$TOKMETER" load "${common[@]}" --shard 4/4 --start-at "$future"
bad "is not I/N" "$TOKMETER" load "${common[@]}" --shard two --start-at "$future"
bad "needs --start-at" "$TOKMETER" load "${common[@]}" --shard 1/4
bad "ago" "$TOKMETER" load "${common[@]}" --start-at "$(( $(date +%s) - 5 ))"
bad "UTC time" "$TOKMETER" load "${common[@]}" --start-at tomorrow
bad "no shard index" "$TOKMETER" load "${common[@]}" --shards 4 --start-at "$future"
bad "needs --duration\|--requests" "$TOKMETER" load "${common[@]}" --requests 5 --start-at "$future"
bad "give --start-at" "$TOKMETER" load "${common[@]}" --drain 5
bad "SLURM_PROCID" env SLURM_PROCID=x SLURM_NTASKS=4 "$TOKMETER" load "${common[@]}" --start-at "$future"
bad "shard count" env OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=0 "$TOKMETER" load "${common[@]}" --start-at "$future"
[ ! -e tokmeter-results.jsonl ] || fail "a refused run wrote a results file"

# --- 2. one process, then four shards of the same load ------------------------
expect_exit 0 "$TOKMETER" load "${common[@]}" --out "$dir/one.jsonl"
start=$(( $(date +%s) + 3 ))
shard_out() { echo "$dir/shard$1.jsonl"; }
"$TOKMETER" load "${common[@]}" --start-at "$start" --drain 3 --shard 0/4 \
  --out "$(shard_out 0)" >"$dir/s0.out" 2>&1 & s0=$!
env SLURM_PROCID=1 SLURM_NTASKS=4 "$TOKMETER" load "${common[@]}" --start-at "$start" --drain 3 \
  --out "$(shard_out 1)" >"$dir/s1.out" 2>&1 & s1=$!
env OMPI_COMM_WORLD_RANK=2 OMPI_COMM_WORLD_SIZE=4 "$TOKMETER" load "${common[@]}" \
  --start-at "$(date -u -d "@$start" +%Y-%m-%dT%H:%M:%SZ)" --drain 3 \
  --out "$(shard_out 2)" >"$dir/s2.out" 2>&1 & s2=$!
env JOB_COMPLETION_INDEX=3 "$TOKMETER" load "${common[@]}" --start-at "$start" --drain 3 \
  --shards 4 --out "$(shard_out 3)" >"$dir/s3.out" 2>&1 & s3=$!
for p in $s0 $s1 $s2 $s3; do wait "$p" || fail "a shard failed: $(cat "$dir"/s?.out)"; done
grep -q "shard 1 of 4 (slurm" "$dir/s1.out" || fail "shard 1 did not say Slurm: $(cat "$dir/s1.out")"
grep -q "shard 2 of 4 (openmpi" "$dir/s2.out" || fail "shard 2: $(cat "$dir/s2.out")"
grep -q "shard 3 of 4 (kubernetes" "$dir/s3.out" || fail "shard 3: $(cat "$dir/s3.out")"
cat "$dir"/shard[0-3].jsonl >"$dir/shards.jsonl"

expect_exit 0 "$TOKMETER" compare "$dir/one.jsonl" "$dir/shards.jsonl" --json
cp "$dir/out" "$dir/cmp.json"
expect_exit 0 "$TOKMETER" report "$dir"/shard[0-3].jsonl
grep -q "4 shards, run" "$dir/out" || fail "report did not merge the shards: $(cat "$dir/out")"
python3 - "$dir/cmp.json" "$dir/shards.jsonl" <<'PY' || fail "merged shards (see above)"
import json, sys
cmp = json.load(open(sys.argv[1]))
assert cmp["kind"] == "load" and cmp["a_shards"] == 1 and cmp["b_shards"] == 4, cmp
rows = {(r["level"], r["metric"]): r for r in cmp["rows"]}
for lvl in ("c=4", "c=8"):
    r = rows[(lvl, "aggregate_output_tok_s")]
    assert 0.95 <= r["b"] / r["a"] <= 1.05, ("4 shards against one process", r)
    d = rows[(lvl, "per_stream_decode_tok_s")]
    assert 0.95 <= d["b"] / d["a"] <= 1.05, d

# the merge's arithmetic, again from the raw records: per level, the tokens
# of every shard's requests that arrived inside the common window
recs = [json.loads(l) for l in open(sys.argv[2])]
ids = {r["id"]: r for r in recs if r["record"] == "identity"}
shards = {r["id"]: r["settings"]["shard"] for r in ids.values()}
assert sorted(s["index"] for s in shards.values()) == [0, 1, 2, 3], shards
assert len({s["run"] for s in shards.values()}) == 1, shards
loads = [r for r in recs if r["record"] == "load"]
for lvl, want in ((0, 4), (1, 8)):
    mine = [l for l in loads if l["concurrency"] == want]
    assert len(mine) == 4, mine
    assert sorted(l["shard"]["concurrency"] for l in mine) == [want // 4] * 4, mine
    w0 = max(l["window_start_unix"] for l in mine)
    w1 = min(l["window_end_unix"] for l in mine)
    assert w1 - w0 > 2.9, (w0, w1)
    assert max(l["window_start_unix"] for l in mine) - min(l["window_start_unix"] for l in mine) < 0.05
    tokens = 0.0
    for q in recs:
        if q["record"] != "request" or q["load"]["level"] != lvl:
            continue
        s = q["load"]
        n = len(s["chunk_us"])
        tokens += sum(s["tokens"] / n for c in s["chunk_us"]
                      if w0 <= s["send_unix"] + c / 1e6 <= w1)
    merged = rows[("c=%d" % want, "aggregate_output_tok_s")]["b"]
    assert abs(tokens / (w1 - w0) - merged) <= 1e-6 * merged + 1e-9, (tokens / (w1 - w0), merged)
PY

# --- 3. refusals: a shard missing, settings that differ, a late window --------
expect_exit 2 "$TOKMETER" compare "$dir/one.jsonl" "$dir/shard1.jsonl"
grep -q "shards 0,2,3 of 4 are missing" "$dir/err" || fail "missing shards: $(cat "$dir/err")"
expect_exit 0 "$TOKMETER" report "$(shard_out 0)" "$(shard_out 2)"
grep -q "not merged: shards 1,3 of 4 are missing" "$dir/out" || fail "report: $(cat "$dir/out")"
python3 - "$(shard_out 2)" "$dir/forged_settings.jsonl" "$dir/forged_late.jsonl" <<'PY'
import json, sys
src, settings_out, late_out = sys.argv[1:]
lines = [json.loads(l) for l in open(src)]
with open(settings_out, "w") as f:
    for r in lines:
        if r["record"] == "identity":
            r = json.loads(json.dumps(r)); r["settings"]["max_tokens"] = 41
        f.write(json.dumps(r) + "\n")
with open(late_out, "w") as f:
    for r in lines:
        if r["record"] == "load" and r["concurrency"] == 8:
            r = dict(r); r["window_start_unix"] += 1.5; r["window_end_unix"] += 1.5
        f.write(json.dumps(r) + "\n")
PY
expect_exit 0 "$TOKMETER" report "$(shard_out 0)" "$(shard_out 1)" "$dir/forged_settings.jsonl" "$(shard_out 3)"
grep -q "shard 2's settings differ from shard 0's (max_tokens)" "$dir/out" || fail "settings: $(cat "$dir/out")"
expect_exit 0 "$TOKMETER" report "$(shard_out 0)" "$(shard_out 1)" "$dir/forged_late.jsonl" "$(shard_out 3)"
grep -q "level 2: shard 2's window" "$dir/out" || fail "late window: $(cat "$dir/out")"
grep -q "^  c=4 " "$dir/out" || fail "the level before the late one is kept: $(cat "$dir/out")"
if grep -q "^  c=8 " "$dir/out"; then fail "a late level was merged: $(cat "$dir/out")"; fi
# --- 4. a request's sample that is not one: the file and line, exit 2 -----------
python3 - "$(shard_out 0)" "$dir/bad_sample.jsonl" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
with open(sys.argv[2], "w") as f:
    done = False
    for l in lines:
        r = json.loads(l)
        if r["record"] == "request" and not done:
            r["load"]["chunk_us"] = "x"; done = True; l = json.dumps(r)
        f.write(l + "\n")
PY
expect_exit 2 "$TOKMETER" report "$dir/bad_sample.jsonl"
grep -q "bad_sample.jsonl:[0-9]*: request record: load.chunk_us" "$dir/err" ||
  fail "a broken sample: $(cat "$dir/err")"
expect_exit 2 "$TOKMETER" compare "$dir/one.jsonl" "$dir/bad_sample.jsonl"
grep -q "load.chunk_us" "$dir/err" || fail "compare, a broken sample: $(cat "$dir/err")"
echo "$tm_test_name: ok"
