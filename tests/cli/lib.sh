# lib.sh: the opening every CLI test shares. Sourced, right after `set -euo
# pipefail` and the checks of the variables a test needs:
#   . "$(dirname "$0")/lib.sh"
# It makes `dir`, a fresh temporary directory, and points TOKMETER_CACHE_DIR
# into it (no test touches the user's cache); a test adds what it starts in
# the background to `pids`. Both go on exit. It gives:
#   fail MESSAGE           print "<test>: FAIL: MESSAGE" on stderr, exit 1
#   expect_exit CODE CMD   run CMD, stdout to $dir/out, stderr to $dir/err,
#                          and fail unless it exits with CODE
#   start_server NAME ARGS the fake server (TOKMETER_FAKESERVER) with ARGS,
#                          its log in $dir/NAME.log; sets PORT once it listens
tm_test_name=$(basename "$0" .sh)
dir=$(mktemp -d)
pids=()
tm_test_cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap tm_test_cleanup EXIT
export TOKMETER_CACHE_DIR="$dir/cache"

fail() { echo "$tm_test_name: FAIL: $*" >&2; exit 1; }

expect_exit() {
  local want=$1; shift
  set +e
  "$@" >"$dir/out" 2>"$dir/err"
  local got=$?
  set -e
  [ "$got" = "$want" ] || fail "'$*' exited $got, expected $want (stderr: $(cat "$dir/err"))"
}

start_server() {
  local name=$1; shift
  : "${TOKMETER_FAKESERVER:?the fake server binary}"
  rm -f "$dir/$name.port"
  "$TOKMETER_FAKESERVER" --port-file "$dir/$name.port" "$@" >/dev/null 2>"$dir/$name.log" &
  pids+=($!)
  for _ in $(seq 100); do [ -s "$dir/$name.port" ] && break; sleep 0.05; done
  PORT=$(cat "$dir/$name.port" 2>/dev/null) || fail "server $name did not start: $(cat "$dir/$name.log")"
}
