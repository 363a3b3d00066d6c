#!/usr/bin/env bash
# test_bench_flags: flags of `tokmeter bench --url` that once were accepted and
# ignored: a custom workload's defaults are the ones --help states (-p alone
# generates 128 tokens, -n alone reads a 50-token prompt), --prompt-file with -p
# is refused (the -p was dropped). Against the paced loopback fake server.
set -euo pipefail
: "${TOKMETER:?}" "${TOKMETER_FAKESERVER:?}"
. "$(dirname "$0")/lib.sh"
export TOKMETER_PROBE_QUICK=1 NO_PROXY='*'
unset OPENAI_API_KEY

"$TOKMETER" bench --help >"$dir/help"
grep -q "(default 50" "$dir/help" && grep -q "when only -n is given" "$dir/help" \
  || fail "--help: -p's default with -n alone"
grep -q "(default 128 when" "$dir/help" && grep -q "only -p or --prompt-file is given" "$dir/help" \
  || fail "--help: -n's default with -p alone"

# --prompt-file and -p: refused before any request (nothing listens on port 1)
printf 'Summarise the incident report in two sentences.\n' >"$dir/prompt.txt"
expect_exit 2 "$TOKMETER" bench --url http://127.0.0.1:1 --prompt-file "$dir/prompt.txt" -p 100 \
  -n 30 --out "$dir/x.jsonl"
grep -q -- "--prompt-file and --prompt-tokens" "$dir/err" || fail "prompt-file + -p: $(cat "$dir/err")"
[ "$(grep -c . "$dir/err")" -le 2 ] || fail "prompt-file + -p: more than one message"
[ ! -e "$dir/x.jsonl" ] || fail "prompt-file + -p: records written"

start_server server

# the defaults --help states, as the run records them (identity settings)
workload() { # the custom workload of the identity record in $1, as "prompt max"
  python3 -c '
import json, sys
ident = [json.loads(l) for l in open(sys.argv[1]) if json.loads(l)["record"] == "identity"][0]
w = [w for w in ident["settings"]["workloads"] if w["name"] in ("custom", "prompt-file")]
assert len(w) == 1, w
print(w[0]["prompt_tokens"], w[0]["max_tokens"])' "$1"
}
expect_exit 0 "$TOKMETER" bench --url "http://127.0.0.1:$PORT" -p 100 -r 1 --out "$dir/p.jsonl"
[ "$(workload "$dir/p.jsonl")" = "100 128" ] || fail "-p 100 alone: $(workload "$dir/p.jsonl")"
expect_exit 0 "$TOKMETER" bench --url "http://127.0.0.1:$PORT" -n 30 -r 1 --out "$dir/n.jsonl"
[ "$(workload "$dir/n.jsonl")" = "50 30" ] || fail "-n 30 alone: $(workload "$dir/n.jsonl")"
expect_exit 0 "$TOKMETER" bench --url "http://127.0.0.1:$PORT" --prompt-file "$dir/prompt.txt" \
  -r 1 --out "$dir/f.jsonl"
read -r _ max < <(workload "$dir/f.jsonl")
[ "$max" = 128 ] || fail "--prompt-file alone: max_tokens $max"
# a mistyped command gets the nearest one, a word far from every command none
expect_exit 2 "$TOKMETER" bnech
grep -q "unknown command 'bnech' (did you mean 'bench'?)" "$dir/err" || fail "bnech: $(cat "$dir/err")"
expect_exit 2 "$TOKMETER" frobnicate
grep -q "did you mean" "$dir/err" && fail "frobnicate got a suggestion: $(cat "$dir/err")"
echo "test_bench_flags: ok"
