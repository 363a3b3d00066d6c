#!/usr/bin/env bash
# test_bench_server_robust: `tokmeter bench --url` against hostile fake servers
# (tests/server/, --echo-key, --tokenize-hang, --tokenize-404, --fail-unload): an API key echoed
# by the server (whole, or cut by a truncation) never reaches stdout, stderr or
# the records; URL passwords are not shown or recorded; a results file that
# cannot take a whole line keeps whole lines and the command exits 1; failed
# --cold runs are counted; a hung /tokenize does not stall the run, and one
# that answers 404 is said in the notes and the records; bad input
# is refused (exit 2) before anything is sent; HTTP errors name the request.
set -euo pipefail
: "${TOKMETER:?}" "${TOKMETER_FAKESERVER:?}"
. "$(dirname "$0")/lib.sh"
export TOKMETER_PROBE_QUICK=1 NO_PROXY='*'
unset OPENAI_API_KEY

KEY=sk-test-SECRET-0123456789abcdef
# no_key FILES...: no 8-character piece of the key (nor "SECRET") in the files
no_key() {
  python3 - "$KEY" "$@" <<'PY' || fail "the key leaked (see above)"
import sys
key, files = sys.argv[1], sys.argv[2:]
for f in files:
    t = open(f, errors="replace").read()
    for i in range(len(key) - 7):
        if key[i:i + 8] in t:
            sys.exit("%s holds %r of the key: %s" % (f, key[i:i + 8], t[:2000]))
PY
}

# --- 1. a server that echoes the key -----------------------------------------
export OPENAI_API_KEY=$KEY
start_server echo401 --mode paced --flavor openai --echo-key 401 --echo-pad 270
U=http://127.0.0.1:$PORT
expect_exit 1 "$TOKMETER" bench -v --url "$U" -w classify -r 1 --out "$dir/e1.jsonl"
grep -q "HTTP 401" "$dir/err" || fail "detection: no 401 said: $(cat "$dir/err")"
no_key "$dir/out" "$dir/err"
expect_exit 1 "$TOKMETER" bench -v --url "$U" --list-models --api openai
no_key "$dir/out" "$dir/err"
expect_exit 1 "$TOKMETER" bench -v --url "$U" --api openai -w classify -r 1 --out "$dir/e2.jsonl"
grep -q "POST /v1/chat/completions: HTTP 401" "$dir/err" || fail "run error: $(cat "$dir/err")"
no_key "$dir/out" "$dir/err" "$dir/e2.jsonl"

start_server echomodel --mode paced --flavor openai --echo-key model --a 1 --b 0 --c 1
U=http://127.0.0.1:$PORT
expect_exit 0 "$TOKMETER" bench -v --url "$U" --list-models
grep -q "^m \[redacted\]" "$dir/out" || fail "model list: $(cat "$dir/out")"
no_key "$dir/out" "$dir/err"
expect_exit 0 "$TOKMETER" bench -v --url "$U" -w classify -r 1 --out "$dir/e3.jsonl"
no_key "$dir/out" "$dir/err" "$dir/e3.jsonl"
unset OPENAI_API_KEY

# --- 2. URL credentials --------------------------------------------------------
start_server plain --mode paced --flavor llamacpp --a 1 --b 0 --c 1
expect_exit 0 "$TOKMETER" bench -v --url "http://alice:hunter2pass@127.0.0.1:$PORT" -w classify \
  -r 1 --out "$dir/u.jsonl"
grep -q "hunter2pass" "$dir/out" "$dir/err" "$dir/u.jsonl" && fail "URL password shown or recorded"
grep -q "http://127.0.0.1:$PORT" "$dir/out" || fail "header without the URL: $(cat "$dir/out")"
python3 - "$dir/u.jsonl" <<'PY' || fail "URL records"
import json, sys
ident = json.loads(open(sys.argv[1]).readline())
assert "alice" not in ident["command"] and "alice" not in ident["settings"]["url"], ident
PY

# --- 3. a results file that cannot take a whole line ---------------------------
set +e
(trap '' XFSZ; ulimit -f 10; "$TOKMETER" bench -v --url "http://127.0.0.1:$PORT" -r 3 \
  --out "$dir/w.jsonl" >"$dir/out" 2>"$dir/err")
got=$?
set -e
[ "$got" = 1 ] || fail "write failure: exit $got, expected 1 ($(cat "$dir/err"))"
grep -q "not safely kept" "$dir/err" || fail "write failure not said: $(cat "$dir/err")"
python3 - "$dir/w.jsonl" <<'PY' || fail "results file after a failed write"
import json, sys
data = open(sys.argv[1]).read()
assert data.endswith("\n"), "torn last line"
for l in data.splitlines():
    json.loads(l)
PY

# --- 4. --cold runs that fail are counted ----------------------------------------
start_server ollama --mode paced --flavor ollama --fail-unload --a 1 --b 0 --c 1
expect_exit 1 "$TOKMETER" bench -v --url "http://127.0.0.1:$PORT" -w classify -r 2 --cold \
  --out "$dir/c.jsonl"
grep -q "classify cold run 1 failed" "$dir/err" || fail "cold failure label: $(cat "$dir/err")"
grep -q "classify run 1 failed" "$dir/err" && fail "timed runs said failed: $(cat "$dir/err")"
grep -q "model load (--cold): not measured: 2 of 2 cold runs failed" "$dir/out" ||
  fail "cold load line: $(cat "$dir/out")"
python3 - "$dir/c.jsonl" <<'PY' || fail "cold end record"
import json, sys
end = [json.loads(l) for l in open(sys.argv[1])][-1]
assert end["record"] == "end" and end["n_failed"] == 2 and end["runs"] == 4, end
PY

# --- 5. a /tokenize that never answers ------------------------------------------
start_server tokhang --mode paced --flavor llamacpp --tokenize-hang --a 1 --b 0 --c 1
t0=$(date +%s)
expect_exit 0 timeout 40 "$TOKMETER" bench -v --url "http://127.0.0.1:$PORT" -w classify,extract \
  -r 1 --timeout 3 --idle-timeout 2 --out "$dir/t.jsonl"
t1=$(date +%s)
[ $((t1 - t0)) -le 15 ] || fail "hung /tokenize stalled the run for $((t1 - t0)) s"
grep -q "tokenizer did not answer" "$dir/err" || fail "hung /tokenize not said: $(cat "$dir/err")"
python3 - "$dir/t.jsonl" <<'PY' || fail "hung /tokenize: records"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
srv = recs[0]["server"]
assert srv["has_tokenize"] is False and "no complete answer within" in srv["tokenize_error"], srv
assert all(r["settings"]["prompt_sizing"] == "tokens-per-word"
           for r in recs if r["record"] == "summary"), recs
PY

# --- 5b. a /tokenize that answers 404 (a proxy in front of llama.cpp, or any
# OpenAI-compatible server without it): not a failure, not a warning; the
# notes and the records say so, and what sized the prompts instead --------------
start_server tok404 --mode paced --flavor llamacpp --tokenize-404 --a 1 --b 0 --c 1
expect_exit 0 "$TOKMETER" bench -v --url "http://127.0.0.1:$PORT" -w classify,extract -r 1 \
  --out "$dir/t404.jsonl"
grep -qF "prompt lengths: the server has no /tokenize endpoint (HTTP 404), so prompts were aimed with 1.00 tokens per word measured from the server's reported prompt counts, corrected by each warm-up's reported count. The prompt tokens shown are the server's own count." "$dir/out" ||
  fail "404 /tokenize: the note: $(cat "$dir/out")"
grep -qi "tokeniz" "$dir/err" && fail "404 /tokenize warned: $(cat "$dir/err")"
python3 - "$dir/t404.jsonl" <<'PY' || fail "404 /tokenize: records"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
srv = recs[0]["server"]
assert srv["kind"] == "llama.cpp", srv
assert srv["has_tokenize"] is False, srv   # it was true by kind before the probe
assert srv["tokenize_error"] == "the server has no /tokenize endpoint (HTTP 404)", srv
sums = [r for r in recs if r["record"] == "summary"]
assert len(sums) == 2, sums
for r in sums:
    st = r["settings"]
    assert st["prompt_sizing"] == "tokens-per-word" and st["tokens_per_word"] == 1.0, st
# the prompts still reached their targets through the server's own counts
timed = {r["workload"]: r for r in recs if r["record"] == "run" and not r["warmup"]
         and not r["calibration"]}
assert abs(timed["extract"]["tokens"]["prompt"] - 1700) <= 17, timed["extract"]["tokens"]
PY
# the same server with /tokenize: the probe finds it and the prompts use it
start_server tokok --mode paced --flavor llamacpp --a 1 --b 0 --c 1
expect_exit 0 "$TOKMETER" bench -v --url "http://127.0.0.1:$PORT" -w classify -r 1 --out "$dir/tok.jsonl"
grep -qF "prompt lengths: aimed with the server's tokenizer (POST /tokenize). The prompt tokens shown are the server's own count." "$dir/out" ||
  fail "working /tokenize: the note: $(cat "$dir/out")"
python3 - "$dir/tok.jsonl" <<'PY' || fail "working /tokenize: records"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
srv = recs[0]["server"]
assert srv["has_tokenize"] is True and srv["tokenize_error"] is None, srv
s = [r for r in recs if r["record"] == "summary"][0]["settings"]
assert s["prompt_sizing"] == "tokenize" and s["tokens_per_word"] is None, s
PY

# --- 6. bad input, refused before anything is sent --------------------------------
printf 'caf\xe9 au lait\n' >"$dir/latin1.txt"
expect_exit 2 "$TOKMETER" bench -v --url "http://127.0.0.1:$PORT" --prompt-file "$dir/latin1.txt"
grep -q "not UTF-8" "$dir/err" || fail "prompt file: $(cat "$dir/err")"
[ "$(wc -l <"$dir/err")" = 1 ] || fail "not one line: $(cat "$dir/err")"
expect_exit 2 "$TOKMETER" bench -v --url "http://127.0.0.1:$PORT" --model $'m\xff'
grep -q "not UTF-8" "$dir/err" || fail "model: $(cat "$dir/err")"
expect_exit 2 "$TOKMETER" bench -v --url "http://127.0.0.1:$PORT" -w classify,classify
grep -q "given twice" "$dir/err" || fail "duplicate workload: $(cat "$dir/err")"

# --- 7. an HTTP error names the request -------------------------------------------
start_server b404 --mode break --flavor llamacpp --break http-404
expect_exit 1 "$TOKMETER" bench -v --url "http://127.0.0.1:$PORT" -w classify -r 1 --out "$dir/n.jsonl"
grep -q "POST /v1/chat/completions: HTTP 404" "$dir/err" || fail "404 message: $(cat "$dir/err")"
# An answer gzip-encoded though tokmeter asked for no encoding (issue 31
# part 5): the run fails naming the encoding, not "stream ended inside an
# SSE line". A loopback server in a few lines of Python.
cat >"$dir/gz.py" <<'PY'
import gzip, http.server, json
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": "m"}]}).encode()
        self.send_response(200); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = gzip.compress(b'data: {"choices":[{"delta":{"content":"hi"}}]}\n\ndata: [DONE]\n\n')
        self.send_response(200); self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Encoding", "gzip"); self.send_header("Content-Length", str(len(body)))
        self.end_headers(); self.wfile.write(body)
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
PY
python3 "$dir/gz.py" >"$dir/gz.port" &
gz_pid=$!
for _ in $(seq 50); do [ -s "$dir/gz.port" ] && break; sleep 0.1; done
expect_exit 1 "$TOKMETER" bench --url "http://127.0.0.1:$(cat "$dir/gz.port")" --api openai -w classify -r 1 \
  --out "$dir/gz.jsonl"
kill "$gz_pid" 2>/dev/null || true
grep -q "the server sent its answer gzip-encoded (Content-Encoding: gzip), which was not asked for" "$dir/err" ||
  fail "gzip: the encoding is not named: $(cat "$dir/err")"
# A server that lies about its counts (issue 31 part 1): an impossible
# usage.completion_tokens fails the run naming it (never a silent null), and
# so does a count above max_tokens (+1 for a counted stop token); calibration
# requests are judged the same way. Exit 1, the reason in the run record.
for lie in -32 32.5 100; do
  start_server "lie$lie" --mode paced --flavor openai --a 1 --b 0 --c 1 --lie-completion "$lie"
  expect_exit 1 "$TOKMETER" bench --url "http://127.0.0.1:$PORT" --api openai -p 20 -n 32 -r 1 \
    --out "$dir/lie$lie.jsonl"
  case $lie in
    100) want="the server reports 100 generated tokens (usage) for max_tokens" ;;
    *) want="impossible count: usage.completion_tokens is $lie, not a number of tokens" ;;
  esac
  grep -q "$want" "$dir/err" || fail "lie $lie: $(cat "$dir/err")"
  # every request fails, calibration included (its short answers may meet
  # another rule first: "100 generated tokens but streamed 12 bytes")
  case $lie in 100) want="the server reports 100 generated tokens" ;; esac
  python3 - "$dir/lie$lie.jsonl" "$want" <<'PY' || fail "lie $lie: records (see above)"
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if '"record":"run"' in l]
assert runs and all(not r["ok"] for r in runs), [(r["calibration"], r["ok"]) for r in runs]
assert any(r["calibration"] for r in runs), "calibration requests not recorded"
assert all(sys.argv[2] in (r["error"] or {}).get("message", "") for r in runs), [r["error"] for r in runs]
PY
done
# A redirect during auto-detection (issue 31 part 5) is named, with its
# target stripped of credentials and query, never followed; and the
# invocation still leaves its identity and end records.
cat >"$dir/redir.py" <<'PY'
import http.server
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        self.send_response(301)
        self.send_header("Location", "https://user:pw@elsewhere.example" + self.path + "?token=x")
        self.send_header("Content-Length", "0"); self.end_headers()
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
PY
python3 "$dir/redir.py" >"$dir/redir.port" &
redir_pid=$!
for _ in $(seq 50); do [ -s "$dir/redir.port" ] && break; sleep 0.1; done
expect_exit 1 "$TOKMETER" bench --url "http://127.0.0.1:$(cat "$dir/redir.port")" -w classify -r 1 \
  --out "$dir/redir.jsonl"
kill "$redir_pid" 2>/dev/null || true
grep -q "GET /api/version answered HTTP 301 to https://elsewhere.example/api/version (redirects are not followed" \
  "$dir/err" || fail "redirect not named: $(cat "$dir/err")"
grep -q "user:pw\|token=x" "$dir/err" && fail "the redirect's credentials shown: $(cat "$dir/err")"
grep -q '"server_not_identified"' "$dir/redir.jsonl" || fail "no end record for the redirect: $(cat "$dir/redir.jsonl")"
# Give up early (issue 31 part 2): a server that answers the calibration
# and then sends headers and nothing fails the warm-up and the first timed
# run on the idle timeout;
# the other runs are not sent (each would wait its timeout), and the summary
# and a finding say how many and why.
start_server stall5 --mode break --break stall --break-after 2
t0=$(date +%s)
expect_exit 1 "$TOKMETER" bench --url "http://127.0.0.1:$PORT" --api openai -w classify -r 5 \
  --idle-timeout 1 --out "$dir/stall5.jsonl"
elapsed=$(($(date +%s) - t0))
[ "$elapsed" -le 10 ] || fail "a stalled server cost ${elapsed}s for -r 5 at --idle-timeout 1"
grep -q "problem classify: 4 runs skipped after 2 idle-timeout failures in a row" "$dir/out" ||
  fail "no finding for the skipped runs: $(cat "$dir/out")"
python3 - "$dir/stall5.jsonl" <<'PY' || fail "skipped runs' records (see above)"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
s = [r for r in recs if r["record"] == "summary"][0]
assert s["skipped"] == {"runs": 4, "after": "idle-timeout"}, s["skipped"]
timed = [r for r in recs if r["record"] == "run" and not r["warmup"] and not r["calibration"]]
assert len(timed) == 1, len(timed)
assert any(f["code"] == "runs_skipped" for f in s["findings"]), s["findings"]
PY
echo "test_bench_server_robust: ok"
