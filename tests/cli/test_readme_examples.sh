#!/usr/bin/env bash
# test_readme_examples: every `build/tokmeter ...` command of README.md, run as
# written, so a README example that fails is a failing test.
#
# The commands are read from README.md itself, not copied here: every line of
# an indented (4+ spaces) or fenced code block that starts with
# `build/tokmeter ` (or with `scripts/build && build/tokmeter `: the build is
# CTest's, already done, so only the part from `build/tokmeter` runs), lines
# continued with a trailing backslash joined, a trailing `# comment` stripped
# (a `#` inside quotes is not one). `build/tokmeter` becomes "$TOKMETER"; the
# rest of the line goes to the shell unchanged, except for:
#   - server URLs: `--url http://127.0.0.1:PORT` (or localhost) gets the port
#     of a fake server (tests/server/) standing in for what usually listens on
#     PORT (SERVERS below): 8080 llama-server (paced, honouring max_tokens;
#     replay is tested elsewhere), 11434 Ollama, 8000 vLLM, 1234 LM Studio;
#   - the few examples that would take over a minute on a 2-core machine: run
#     with shortened lists (SHORTEN below, each with why); the test prints
#     which ones it shortened and what it ran instead.
# TOKMETER_PROBE_QUICK=1 throughout: a full probe (`probe --json`, and the
# first `ceiling` or `bench` of a fresh cache) takes 7+ s of 1 GiB passes;
# the quick one measures the same things on a small buffer in well under a
# second (its figures are marked quick; no check here depends on them).
#
# Each code block runs in its own fresh working directory under $dir
# (block1: the main job at the top; block3: the "Examples:" chain), and the
# examples of a block run in README order in that ONE shared directory, so
# files flow from one example to the next as they would for a reader typing
# them: m.gguf from `synth` (read by `ceiling`, `bench -m`, `import -m`),
# tokmeter-results.jsonl from `bench` and `import` (read by `report` and
# `decide`).
# Files the README takes as given, which no example writes, are made first
# (PREPARED below): llama-bench.json (the fixture of a real llama-bench -o
# json run), before.jsonl / after.jsonl (two short benches against a fake
# llama-server, the second one's tokens twice as fast).
#
# An example fails when it exits non-zero, prints nothing on stdout, or fails
# the check of its family (check_example): what it printed or wrote.
set -euo pipefail
: "${TOKMETER:?}" "${TOKMETER_FAKESERVER:?}" "${TOKMETER_FIXTURES:?}" "${TOKMETER_SOURCE_DIR:?}"
. "$(dirname "$0")/lib.sh"
export TOKMETER_PROBE_QUICK=1 NO_PROXY='*'
unset OPENAI_API_KEY
TOKMETER=$(cd "$(dirname "$TOKMETER")" && pwd)/$(basename "$TOKMETER")
README="$TOKMETER_SOURCE_DIR/README.md"
[ -f "$README" ] || fail "no README at $README"

# --- SHORTEN: README text -> what runs instead, and why ----------------------
# One row per example that needs it, fields separated by "|" (so none holds
# one): an extended regular expression the whole command (as in the README)
# must match, then substitutions "FROM=>TO" of whole words of the command
# (FROM empty: TO appended), then why. Nothing else is shortened. A row that matches no example is reported (the README changed:
# update the row).
SHORTEN=(
  # the main job: Q4_0 and Q8_0 x pp512 + tg128 x 1..N threads x (1 warm-up +
  # 3 timed): minutes. The README's own "quick look" instead; the two models,
  # the probe and the thread counts stay.
  '^build/tokmeter bench$|=>-r 1 -p 32 -n 32|the main job (pp512/tg128, 3 repetitions) takes minutes; the README'"'"'s quick look (-r 1 -p 32 -n 32)'
  # a 0.6B model, 2 lengths x 2 depths x 2 thread counts x (1 + 5 runs), with
  # 1024 tokens prefilled before every depth-1024 run: minutes. The same
  # shape (two depths, the same thread counts: what `decide --match` selects
  # from later) at small sizes.
  # 16 streams of a 0.6B model, 64-token prompts, 1 warm-up + 3 timed passes
  # per level: half a minute beside the other tests; the same levels, short
  # prompts, the fewest steps with a decode rate, one timed pass
  '^build/tokmeter load -m m\.gguf -c 1,4,16 -d 64 -n 32$|-d 64=>-d 8|-n 32=>-n 24|=>-r 1 --warmup 0|3 levels x 4 passes of a 0.6B model (64-token prompts) take half a minute; 8-token prompts, 24 steps, one timed pass'
  '^build/tokmeter bench -m m\.gguf -p 128,512 -n 128 -d 0,1024 -t 1,2$|-p 128,512=>-p 32|-n 128=>-n 32|-d 0,1024=>-d 0,64|=>-r 1|2 prompt lengths x 2 depths (1024 prefilled) x 2 thread counts x 6 runs of a 0.6B model take minutes; one length, depths 0 and 64, one timed run'
)

# --- SERVERS: README port -> the fake server standing in for it ---------------
# llama-server: real llama.cpp exchanges ($TOKMETER_FIXTURES/llama-server)
# replayed at a twentieth of their recorded pacing (its 1.3 s exchange x 14
# requests would be 18 s); the others paced (5 ms + 0.02 ms per prompt token
# before the first token, then 1 ms per token). Either is faster than this
# machine could be, so `-m`'s % of the ceiling comes out above 100% (and is
# said to be no measurement): the examples' exit, table and records are what
# is tested, not the fakes' rates. Sets fs_args.
server_args() {
  case $1 in
  # a llama-server that honours max_tokens (the recorded exchanges answer
  # with their own lengths, which the bench now fails as more tokens than
  # asked: issue 31; replay is tested in test_bench_server.sh)
  8080) fs_args=(--mode paced --flavor llamacpp --a 5 --b 0.02 --c 1) ;;
  11434) fs_args=(--mode paced --flavor ollama --a 5 --b 0.02 --c 1) ;;
  8000) fs_args=(--mode paced --flavor openai --a 5 --b 0.02 --c 1) ;;
  1234) fs_args=(--mode paced --flavor lmstudio --a 5 --b 0.02 --c 1) ;;
  *) return 1 ;;
  esac
}
declare -A fake_port=()

# --- the examples, from the README --------------------------------------------
# One line per example: block number, the command as in the README, the
# command to run (shortened), which SHORTEN rows applied, the README line
# number, the `scripts/build &&` left out before it (or nothing); separated by
# the ASCII unit separator (0x1f), which keeps empty fields.
python3 - "$README" "${SHORTEN[@]}" >"$dir/examples.txt" <<'PY' || fail "reading the examples from README.md (see above)"
import re, sys

readme, rows = sys.argv[1], sys.argv[2:]
lines = open(readme, encoding="utf-8").read().split("\n")

def strip_comment(s):
    """s without a trailing shell comment: a # at a word start outside quotes."""
    q = None
    for i, ch in enumerate(s):
        if q:
            if ch == q:
                q = None
            elif ch == "\\" and q == '"':
                pass
        elif ch in "'\"":
            q = ch
        elif ch == "#" and (i == 0 or s[i - 1].isspace()):
            return s[:i].rstrip()
    if q:
        raise SystemExit(f"README.md: unbalanced quote in: {s}")
    return s.rstrip()

# code blocks: fenced (``` or ~~~), or indented by 4+ spaces after a blank
# line (or continuing such a block)
blocks, cur, fence, prev_blank = [], None, None, True
for no, line in enumerate(lines, 1):
    if fence:
        if line.strip().startswith(fence):
            fence, cur = None, None
        else:
            cur.append((no, line.strip()))
        continue
    if line.strip().startswith(("```", "~~~")):
        fence = line.strip()[:3]
        cur = []
        blocks.append(cur)
        continue
    if line.strip() == "":
        prev_blank = True
        continue
    if line.startswith("    ") and (prev_blank or cur is not None):
        if cur is None:
            cur = []
            blocks.append(cur)
        cur.append((no, line.strip()))
    else:
        cur = None
    prev_blank = False

PREFIX = "scripts/build && "
examples = []
for b, block in enumerate(blocks, 1):
    i = 0
    while i < len(block):
        no, text = block[i]
        i += 1
        while text.endswith("\\") and i < len(block):  # a continued line
            text = text[:-1].rstrip() + " " + block[i][1]
            i += 1
        text = strip_comment(text)
        dropped = ""
        if text.startswith(PREFIX + "build/tokmeter "):
            text, dropped = text[len(PREFIX):], PREFIX.strip()
        if text.startswith("build/tokmeter "):
            examples.append((b, no, text, dropped))

if not examples:
    raise SystemExit("README.md: no `build/tokmeter ...` example found")

used = set()
for b, no, text, dropped in examples:
    run, applied = text, []
    for r, row in enumerate(rows):
        parts = row.split("|")
        pattern, subs = parts[0], parts[1:-1]
        if not re.search(pattern, text):
            continue
        used.add(r)
        applied.append(str(r))
        for sub in subs:
            frm, to = sub.split("=>")
            if not frm:
                run += " " + to
                continue
            new = re.sub(r"(?<!\S)" + re.escape(frm) + r"(?!\S)", to, run)
            if new == run:
                raise SystemExit(f"SHORTEN row {r}: '{frm}' not in: {text}")
            run = new
    for field in (text, run):
        assert "\x1f" not in field, field
    print("\x1f".join([str(b), text, run, ",".join(applied), str(no), dropped]))
for r, row in enumerate(rows):
    if r not in used:
        print(f"note: SHORTEN row {r} ({row.split('|')[0]}) matches no README example", file=sys.stderr)
PY
n_examples=$(wc -l <"$dir/examples.txt")
echo "$n_examples examples in README.md"

# --- PREPARED: the files the README takes as given ------------------------------
# Made in every block's directory before its first example (only those its
# examples name), from the fixtures or from tokmeter itself.
prepare_block() {
  local wd=$1 cmds=$2
  if grep -qw "llama-bench.json" <<<"$cmds"; then
    # a real `llama-bench -o json` run (pp64, tg32; shared/fixtures/README.md)
    cp "$TOKMETER_FIXTURES/llama-bench/llama-bench-output.json" "$wd/llama-bench.json"
    echo "prepared: llama-bench.json = \$TOKMETER_FIXTURES/llama-bench/llama-bench-output.json"
  fi
  if grep -qw "before.jsonl" <<<"$cmds" || grep -qw "after.jsonl" <<<"$cmds"; then
    # two short benches against a fake llama-server: 2 ms per token, then 1
    local name c
    for name in before after; do
      c=2; [ $name = after ] && c=1
      start_server "prep-$name" --mode paced --flavor llamacpp --a 5 --b 0.02 --c $c
      "$TOKMETER" bench --url "http://127.0.0.1:$PORT" -w classify,generate -r 3 \
        --out "$wd/$name.jsonl" >"$dir/prep.out" 2>"$dir/prep.err" </dev/null ||
        fail "preparing $name.jsonl: $(cat "$dir/prep.err")"
    done
    echo "prepared: before.jsonl, after.jsonl = tokmeter bench --url (a fake llama-server at 2, then 1 ms per token) -w classify,generate -r 3"
  fi
}

# --- what each family of examples must print or write ----------------------------
# check_example CMD WD: the example CMD (as in the README) has run in WD, its
# stdout in $dir/out, stderr in $dir/err. Prints what is wrong, if anything.
# The results file a command wrote: its --out / -o, else the default.
results_of() {
  local prev="" a out=tokmeter-results.jsonl
  for a in "$@"; do
    case $prev in --out | -o) out=$a ;; esac
    case $a in --out=*) out=${a#--out=} ;; esac
    prev=$a
  done
  echo "$out"
}
# record lines of KIND ("run", ...) in FILE that were not there before
new_records() { tail -n +"$(($2 + 1))" "$1" 2>/dev/null | grep -c "\"record\":\"$3\"" || true; }

check_example() {
  local cmd=$1 wd=$2 out="$dir/out"
  local -a argv
  eval "argv=(${cmd#build/tokmeter })"
  local sub=${argv[0]}
  case $sub in
  synth)
    # writes the -o file, a GGUF (magic "GGUF")
    local f prev=""
    for a in "${argv[@]}"; do [ "$prev" = -o ] || [ "$prev" = --out ] && f=$a; prev=$a; done
    [ -n "${f:-}" ] || { echo "no -o FILE in the example"; return; }
    [ "$(head -c 4 "$wd/$f" 2>/dev/null)" = GGUF ] || echo "$f is not a GGUF file"
    ;;
  ceiling)
    # a decode ceiling with a figure; with a model (a file or a preset) a
    # prefill ceiling with a figure, never "not known" (it once followed the
    # real one on every CPU without AMX); with --measured-decode the measured
    # rate as a share of the ceiling
    grep -Eq "^decode ceiling.*[0-9] tok/s|^  depth +[0-9]+: +[0-9.]+[kM]? tok/s" "$out" ||
      echo "no decode ceiling figure"
    if grep -Eq "\.gguf( |$)|--preset" <<<"$cmd"; then
      grep -Eq "^prefill ceiling[^:]*: [0-9.]+[kM]? tok/s" "$out" || echo "no prefill ceiling figure"
      grep -E "^prefill ceiling" "$out" | grep -q "not known" &&
        echo "a prefill ceiling 'not known': $(grep -E '^prefill ceiling' "$out" | tr '\n' ';')"
    fi
    if grep -q -- "--measured-decode" <<<"$cmd"; then
      grep -Eq "^measured decode .*[0-9]+% of the ceiling" "$out" || echo "no verdict for --measured-decode"
    fi
    ;;
  probe)
    # --json: one JSON document with a read bandwidth; else the table
    if grep -q -- "--json" <<<"$cmd"; then
      python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["read_bandwidth_bytes_s"] > 0 and d["read_bandwidth_by_threads"]' \
        "$out" 2>/dev/null || echo "stdout is not the probe's JSON with a read bandwidth"
    else
      grep -q "GB/s" "$out" || echo "no bandwidth in the probe's table"
    fi
    ;;
  bench)
    # records appended to the results file: timed runs, all ok; over a
    # server a table row per workload, and with -m the % of the ceiling
    local f runs
    f=$wd/$(results_of "${argv[@]}")
    runs=$(new_records "$f" "$results_before" run)
    [ "$runs" -gt 0 ] || echo "no run records appended to $(basename "$f")"
    tail -n +"$((results_before + 1))" "$f" 2>/dev/null | grep '"record":"run"' | grep -q '"ok":false' &&
      echo "failed runs in $(basename "$f")"
    if grep -q -- "--url" <<<"$cmd"; then
      local w=classify,extract,generate prev="" a
      for a in "${argv[@]}"; do [ "$prev" = -w ] || [ "$prev" = --workload ] && w=$a; prev=$a; done
      for a in ${w//,/ }; do grep -q "^$a " "$out" || echo "no table row for workload $a"; done
      if grep -Eq -- "(^| )(-m|--gguf) " <<<"$cmd"; then
        grep -q "% of ceiling" "$out" || echo "-m given, but no % of ceiling in the table"
      fi
    else
      grep -Eq "^ +[0-9]+ +(pp|tg)[0-9]+ .*%|^ +[0-9]+ +[0-9.]+( \+- [0-9.]+)? +[0-9]+ +[0-9]+%" "$out" || echo "no table rows (threads, rate, ceiling, %)"
    fi
    ;;
  report)
    # the table on stdout; --html FILE: one page with inline SVG plots
    grep -q "PF prefill\|DC decode" "$out" || echo "no table on stdout"
    local prev="" a h=""
    for a in "${argv[@]}"; do [ "$prev" = --html ] && h=$a; prev=$a; done
    if [ -n "$h" ]; then
      grep -qi "<!DOCTYPE html" "$wd/$h" 2>/dev/null && grep -q "<svg" "$wd/$h" ||
        echo "$h is not an HTML page with plots"
    fi
    ;;
  compare)
    # a ratio and a verdict per metric
    grep -Eq "^  (prefill|decode)_tok_s .*(faster|slower|not distinguishable)" "$out" ||
      echo "no ratio with a verdict for prefill or decode"
    ;;
  import)
    # records appended (one identity per input file) and the table
    local f
    f=$wd/$(results_of "${argv[@]}")
    [ "$(new_records "$f" "$results_before" run)" -gt 0 ] || echo "no run records appended to $(basename "$f")"
    grep -Eq "[0-9]+ tests?, [0-9]+ runs?" "$out" || echo "no 'N tests, M runs' line"
    ;;
  whatif)
    # one row per rate and the floor
    grep -q "end-to-end" "$out" && grep -q "^floor" "$out" || echo "no end-to-end table or floor"
    ;;
  decide)
    grep -q "^first token" "$out" && grep -q "^complete answer" "$out" ||
      echo "no first-token / complete-answer comparison"
    ;;
  load)
    # a table row per level of -c; in process each beside its ceiling
    local c="" prev=""
    for a in "${argv[@]}"; do [ "$prev" = -c ] || [ "$prev" = --concurrency ] && c=$a; prev=$a; done
    for l in ${c//,/ }; do grep -q "^c=$l " "$out" || echo "no table row for c=$l"; done
    if ! grep -q -- "--url" <<<"$cmd"; then
      grep -Eq "^c=[0-9]+ .*ceiling [0-9]+ tok/s" "$out" || echo "no level beside its ceiling"
    fi
    ;;
  *) ;; # a new family: exit code and stdout only
  esac
  return 0
}

# --- run them -------------------------------------------------------------------
passed=0 failed=0 cur_block="" failures=""
start_all=$(date +%s)
while IFS=$'\x1f' read -r block readme run rows lineno dropped; do
  wd="$dir/block$block"
  if [ "$block" != "$cur_block" ]; then
    cur_block=$block
    mkdir -p "$wd"
    prepare_block "$wd" "$(awk -F'\037' -v b="$block" '$1 == b { print $2 }' "$dir/examples.txt")"
  fi
  # the fake server for a URL's port
  if [[ $run =~ --url[=\ ]+http://(127\.0\.0\.1|localhost):([0-9]+) ]]; then
    host=${BASH_REMATCH[1]} want=${BASH_REMATCH[2]}
    if [ -z "${fake_port[$want]:-}" ]; then
      server_args "$want" || fail "README line $lineno: no fake server stands in for port $want: $readme"
      start_server "port$want" "${fs_args[@]}"
      fake_port[$want]=$PORT
    fi
    run=${run//"http://$host:$want"/"http://127.0.0.1:${fake_port[$want]}"}
  fi
  if [ -n "$rows" ]; then
    echo "shortened (README line $lineno): $readme"
    echo "  ran: $run"
    for r in ${rows//,/ }; do echo "  why: ${SHORTEN[$r]##*|}"; done
  fi
  [ -z "$dropped" ] || echo "note: README line $lineno: '$dropped' left out (CTest built \$TOKMETER): $dropped $readme"
  cmd=${run/#build\/tokmeter/\"\$TOKMETER\"}
  # the results file's length before (bench, import), for the checks of what
  # was appended
  eval "set -- ${run#build/tokmeter }"
  results_before=0
  case $1 in
  bench | import)
    rf="$wd/$(results_of "$@")"
    [ -f "$rf" ] && results_before=$(wc -l <"$rf")
    ;;
  esac
  t0=$(date +%s.%N)
  set +e
  (cd "$wd" && eval "$cmd") >"$dir/out" 2>"$dir/err" </dev/null
  rc=$?
  set -e
  secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  why=""
  if [ "$rc" != 0 ]; then
    why="exited $rc"
  elif [ ! -s "$dir/out" ]; then
    why="printed nothing on stdout"
  else
    why=$(check_example "$readme" "$wd")
  fi
  if [ -z "$why" ]; then
    echo "ok: $readme  (${secs} s)"
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    failures+="  README line $lineno: $readme"$'\n'
    {
      echo "FAIL: $readme  (README line $lineno, ${secs} s): $(tr '\n' ' ' <<<"$why")"
      echo "  stdout (last lines):"; tail -n 15 "$dir/out" | sed 's/^/    /'
      echo "  stderr:"; sed 's/^/    /' "$dir/err"
    } >&2
  fi
done <"$dir/examples.txt"
echo "($(($(date +%s) - start_all)) s)"
[ "$failed" = 0 ] || fail "$failed of $n_examples README examples failed:"$'\n'"$failures"
echo "$passed README examples passed"
