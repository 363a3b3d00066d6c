#!/usr/bin/env bash
# test_records_out: every writer of results files (bench in-process, bench
# --url, import) refuses, up front, an existing file that is not a tokmeter
# results file: a GGUF or a text file given as --out / -o by mistake, or a
# results file whose last line was cut. Exit 2, one line, nothing probed,
# loaded or requested, the file byte for byte unchanged. A results file is
# still appended to, by each of them.
set -euo pipefail
: "${TOKMETER:?}" "${TOKMETER_FAKESERVER:?}" "${TOKMETER_FIXTURES:?}"
. "$(dirname "$0")/lib.sh"
export TOKMETER_PROBE_QUICK=1 NO_PROXY='*'
unset OPENAI_API_KEY
model="$TOKMETER_FIXTURES/gguf/tiny-llama-Q4_0.gguf"
LB="$TOKMETER_FIXTURES/llama-bench/llama-bench-output.jsonl"

# expect_refused FILE WHY, then the command: exit 2, one line naming FILE and
# WHY, nothing started, FILE unchanged (checksum)
expect_refused() {
  local file=$1 why=$2; shift 2
  local before after
  before=$(sha256sum <"$file")
  expect_exit 2 "$@"
  after=$(sha256sum <"$file")
  [ "$before" = "$after" ] || fail "'$*' changed $file"
  [ "$(wc -l <"$dir/err")" = 1 ] || fail "'$*': expected one line: $(cat "$dir/err")"
  grep -q "$(basename "$file"): not a tokmeter results file ($why): refusing to append" "$dir/err" ||
    fail "'$*': $(cat "$dir/err")"
  [ -s "$dir/out" ] && fail "'$*' printed: $(cat "$dir/out")"
  return 0
}

cp "$model" "$dir/notjsonl.gguf"
printf 'hello\n' >"$dir/notes.txt"
printf '{"record":"identity","schema":1,"id":"x"}\n{"record":"run","iden' >"$dir/cut.jsonl"
notjson="its first line is not a JSON object"

# --- bench, in-process: refused before the probe and the model load --------
FAST=(-m "$model" -r 1 -p 8 -n 0 -t 1)
expect_refused "$dir/notjsonl.gguf" "$notjson" "$TOKMETER" bench "${FAST[@]}" --out "$dir/notjsonl.gguf"
expect_refused "$dir/notes.txt" "$notjson" "$TOKMETER" bench "${FAST[@]}" --out "$dir/notes.txt"
expect_refused "$dir/cut.jsonl" "its last line is cut (no newline at the end)" \
  "$TOKMETER" bench "${FAST[@]}" --out "$dir/cut.jsonl"
[ -e "$dir/cache" ] && fail "a refused --out still probed the machine (cache written)"
grep -q "(bench --repair drops the cut line)" "$dir/err" ||
  fail "a cut file: the remedy is not named: $(cat "$dir/err")"

# --- a cut last line (issue 31 part 4): the readers skip it with a warning
# naming file and line, and read every record before it; bench --repair
# drops it (saying how many bytes) and appends after the whole records. A
# broken line in the middle stays an error.
expect_exit 0 "$TOKMETER" bench "${FAST[@]}" --out "$dir/torn.jsonl"
cp "$dir/torn.jsonl" "$dir/whole.jsonl"
printf '{"record":"run","identity":"cut-he' >>"$dir/torn.jsonl"
torn_line=$(($(wc -l <"$dir/whole.jsonl") + 1))
for cmd in report compare decide; do
  case $cmd in
    report) args=("$dir/torn.jsonl") ;;
    compare) args=("$dir/whole.jsonl" "$dir/torn.jsonl") ;;
    decide) args=(-p 8 -n 1 --results "$dir/torn.jsonl" --device-decode 10 --api-ttft 1s --api-prefill 100 --api-decode 10) ;;
  esac
  "$TOKMETER" $cmd "${args[@]}" >"$dir/out" 2>"$dir/err" || fail "$cmd on a cut file: $(cat "$dir/err")"
  grep -q "torn.jsonl:$torn_line: the last line is cut (34 bytes, no newline, not a whole record): skipped" \
    "$dir/err" || fail "$cmd: no warning for the cut line: $(cat "$dir/err")"
done
printf '{"record":"run","identity":"cut-he\n' >"$dir/mid.jsonl"
cat "$dir/whole.jsonl" >>"$dir/mid.jsonl"
expect_exit 2 "$TOKMETER" report "$dir/mid.jsonl"
grep -q "mid.jsonl:1: not JSON" "$dir/err" || fail "a broken first line: $(cat "$dir/err")"
expect_exit 0 "$TOKMETER" bench "${FAST[@]}" --repair --out "$dir/torn.jsonl"
grep -q "note: --repair: dropped the cut last line of $dir/torn.jsonl (34 bytes)" "$dir/err" ||
  fail "--repair said nothing: $(cat "$dir/err")"
cmp -n "$(wc -c <"$dir/whole.jsonl")" "$dir/whole.jsonl" "$dir/torn.jsonl" ||
  fail "--repair changed the whole records"
expect_exit 0 "$TOKMETER" report "$dir/torn.jsonl"
grep -q "cut" "$dir/err" && fail "still cut after --repair: $(cat "$dir/err")"

# --- bench --url: refused before any request. Nothing listens on port 1: a
# request would fail with exit 1, the check comes first with exit 2.
expect_refused "$dir/notes.txt" "$notjson" \
  "$TOKMETER" bench --url http://127.0.0.1:1 -w classify -r 1 --out "$dir/notes.txt"
expect_refused "$dir/notjsonl.gguf" "$notjson" \
  "$TOKMETER" bench --url http://127.0.0.1:1 -m "$model" -w classify -r 1 --out "$dir/notjsonl.gguf"

# --- import: refused before the inputs are read (a missing input would be
# its own exit 2 with another message)
expect_refused "$dir/notes.txt" "$notjson" "$TOKMETER" import -o "$dir/notes.txt" "$LB"
expect_refused "$dir/notjsonl.gguf" "$notjson" "$TOKMETER" import -o "$dir/notjsonl.gguf" "$dir/missing.json"

# --- a results file is appended to by each writer -------------------------
expect_exit 0 "$TOKMETER" bench "${FAST[@]}" --out "$dir/r.jsonl"
cp "$dir/r.jsonl" "$dir/r1.jsonl"
expect_exit 0 "$TOKMETER" bench "${FAST[@]}" --out "$dir/r.jsonl"
expect_exit 0 "$TOKMETER" import -o "$dir/r.jsonl" "$LB"
start_server srv --mode paced --flavor llamacpp --a 5 --b 0.02 --c 1
port=$PORT
expect_exit 0 "$TOKMETER" bench --url "http://127.0.0.1:$port" -w classify -r 1 --out "$dir/r.jsonl"
n1=$(wc -c <"$dir/r1.jsonl")
cmp -s -n "$n1" "$dir/r1.jsonl" "$dir/r.jsonl" || fail "the first invocation's lines changed"
python3 - "$dir/r.jsonl" <<'PY' || fail "appended results file (see above)"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
ids = [r for r in recs if r["record"] == "identity"]
assert [i["backend"] for i in ids] == ["engine", "engine", "llama-bench", "openai"], ids
assert sum(r["record"] == "end" for r in recs) == 4, recs
PY
# and read back whole
expect_exit 0 "$TOKMETER" report "$dir/r.jsonl"
# Files that take no record, refused up front too (issue 31 part 5): /proc
# files report a size of 0 but hold text (/proc/version), and /dev/full
# refuses every write; both were taken and failed after the model loaded
# (exit 1). /dev/null still takes records.
if [ -r /proc/version ]; then
  expect_exit 2 "$TOKMETER" bench -m "$model" -r 1 -p 16 -n 0 -t 1 --out /proc/version
  grep -q "/proc/version: not a tokmeter results file (its first line is not a JSON object)" "$dir/err" ||
    fail "/proc/version: $(cat "$dir/err")"
  grep -q "loading\|probing" "$dir/err" && fail "/proc/version: work began before the refusal"
fi
if [ -c /dev/full ]; then
  expect_exit 2 "$TOKMETER" bench -m "$model" -r 1 -p 16 -n 0 -t 1 --out /dev/full
  grep -qx "tokmeter bench: --out: records: /dev/full refuses every write (no space on the device)" "$dir/err" ||
    fail "/dev/full: $(cat "$dir/err")"
  expect_exit 2 "$TOKMETER" import -o /dev/full "$LB"
fi
expect_exit 0 "$TOKMETER" bench -m "$model" -r 1 -p 16 -n 0 -t 1 --no-progress --out /dev/null
echo "test_records_out: ok"
