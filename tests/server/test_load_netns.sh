#!/usr/bin/env bash
# test_load_netns: shards as separate hosts. Three network namespaces (a
# server and two client hosts, each with its own address on a bridge); the
# batching server in one, a shard of one run in each of the others, and one
# process driving the same load from a client host: the merged shards give
# its aggregate within 5% (issue 32 part 7). SKIPPED (77) where this machine
# cannot make namespaces (not root, no ip, no veth or bridge support).
set -euo pipefail
: "${TOKMETER:?}" "${TOKMETER_SOURCE_DIR:?}"
. "$(dirname "$0")/../cli/lib.sh"
export TOKMETER_PROBE_QUICK=1 NO_PROXY='*'
unset OPENAI_API_KEY SLURM_PROCID SLURM_NTASKS OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE \
  JOB_COMPLETION_INDEX
skip() { echo "$tm_test_name: SKIPPED: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "network namespaces need root"
command -v ip >/dev/null || skip "no ip (iproute2)"
tag=$$
srv=tm-srv-$tag c0=tm-c0-$tag c1=tm-c1-$tag
cleanup_ns() { for n in "$srv" "$c0" "$c1"; do ip netns del "$n" 2>/dev/null || true; done; }
trap 'tm_test_cleanup; cleanup_ns' EXIT
ip netns add "$srv" 2>/dev/null || skip "cannot create a network namespace"
ip netns add "$c0" && ip netns add "$c1"
{
  ip -n "$srv" link set lo up &&
    ip -n "$srv" link add br0 type bridge &&
    ip -n "$srv" link set br0 up &&
    ip -n "$srv" addr add 10.201.0.1/24 dev br0 &&
    for i in 0 1; do
      ns=$c0; [ $i = 1 ] && ns=$c1
      ip -n "$srv" link add "v$i" type veth peer name eth0 netns "$ns" &&
        ip -n "$srv" link set "v$i" master br0 up &&
        ip -n "$ns" link set lo up &&
        ip -n "$ns" addr add "10.201.0.$((i + 2))/24" dev eth0 &&
        ip -n "$ns" link set eth0 up || exit 1
    done
} 2>"$dir/ns.err" || skip "cannot link namespaces (veth, bridge): $(head -1 "$dir/ns.err")"

ip netns exec "$srv" python3 "$TOKMETER_SOURCE_DIR/tests/server/batching_server.py" \
  --host 10.201.0.1 --port-file "$dir/b.port" --slots 16 --c0 20 --c1 1 --b 0.5 \
  >/dev/null 2>"$dir/b.log" &
pids+=($!)
for _ in $(seq 100); do [ -s "$dir/b.port" ] && break; sleep 0.05; done
[ -s "$dir/b.port" ] || fail "batching server: $(cat "$dir/b.log")"
ip netns exec "$c0" python3 -c 'import socket, sys; socket.create_connection(("10.201.0.1", int(sys.argv[1])), 3)' \
  "$(cat "$dir/b.port")" 2>/dev/null || skip "the namespaces do not reach each other over the bridge"
common=(--url "http://10.201.0.1:$(cat "$dir/b.port")" -c 8 -p 50 -n 40 --ramp 1 --duration 3 --no-progress)
cd "$dir"
ip netns exec "$c0" "$TOKMETER" load "${common[@]}" --out one.jsonl >one.out 2>&1 ||
  fail "one process: $(cat one.out)"
start=$(( $(date +%s) + 3 ))
ip netns exec "$c0" "$TOKMETER" load "${common[@]}" --shard 0/2 --start-at "$start" --drain 3 \
  --out s0.jsonl >s0.out 2>&1 & p0=$!
ip netns exec "$c1" "$TOKMETER" load "${common[@]}" --shard 1/2 --start-at "$start" --drain 3 \
  --out s1.jsonl >s1.out 2>&1 & p1=$!
wait $p0 || fail "shard 0: $(cat s0.out)"
wait $p1 || fail "shard 1: $(cat s1.out)"
cat s0.jsonl s1.jsonl >shards.jsonl
expect_exit 0 "$TOKMETER" compare one.jsonl shards.jsonl --json
python3 - "$dir/out" <<'PY' || fail "two hosts against one (see above)"
import json, sys
cmp = json.load(open(sys.argv[1]))
assert cmp["b_shards"] == 2, cmp
r = [r for r in cmp["rows"] if r["metric"] == "aggregate_output_tok_s"][0]
assert 0.95 <= r["b"] / r["a"] <= 1.05, r
PY
echo "$tm_test_name: ok"
