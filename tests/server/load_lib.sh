# load_lib: sourced by the load tests (after tests/cli/lib.sh).
#   start_batching ARGS  the batching fake server (batching_server.py) with
#                        ARGS on a free loopback port, in $BPORT; stopped on exit
start_batching() {
  rm -f "$dir/b.port"
  python3 "$TOKMETER_SOURCE_DIR/tests/server/batching_server.py" --port-file "$dir/b.port" "$@" \
    >/dev/null 2>"$dir/b.log" &
  pids+=($!)
  for _ in $(seq 100); do [ -s "$dir/b.port" ] && break; sleep 0.05; done
  BPORT=$(cat "$dir/b.port" 2>/dev/null) || fail "batching server: $(cat "$dir/b.log")"
}
