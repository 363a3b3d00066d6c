#!/usr/bin/env bash
# test_fakeserver: the fake LLM servers (tests/server/) checked from outside with
# curl, so client tests can trust them. Paced llama.cpp stream: event count,
# usage + timings equal to the configured a + b*n and (n-1)*c, [DONE], first
# content no earlier than a + b*n, token spacing c, keep-alive across requests;
# prompt cache and stop-early; Ollama NDJSON and its final counters; OpenAI
# include_usage honoured; replay reproduces a recorded exchange byte for byte;
# buffered arrives in one burst; every break stage does what it says.
set -euo pipefail
: "${TOKMETER_FIXTURES:?}"
FS=${TOKMETER_FAKESERVER:-}
if [ -z "$FS" ] && [ -n "${TOKMETER_BUILD_DIR:-}" ]; then FS=$TOKMETER_BUILD_DIR/tests/tokmeter-fakeserver; fi
[ -x "$FS" ] || { echo "test_fakeserver: FAIL: no tokmeter-fakeserver binary ($FS)" >&2; exit 1; }
dir=$(mktemp -d)
export TOKMETER_CACHE_DIR="$dir/cache"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "test_fakeserver: FAIL: $*" >&2; exit 1; }

PORT=
n_started=0
start() { # args for the server; sets PORT
  n_started=$((n_started + 1))
  local pf="$dir/port.$n_started"
  "$FS" --port-file "$pf" "$@" >"$dir/server.$n_started.out" 2>"$dir/server.$n_started.err" &
  pids+=($!)
  for _ in $(seq 100); do
    [ -s "$pf" ] && break
    sleep 0.02
  done
  [ -s "$pf" ] || fail "server '$*' did not start: $(cat "$dir/server.$n_started.err")"
  PORT=$(cat "$pf")
  grep -qx "port $PORT" "$dir/server.$n_started.out" || fail "stdout does not say 'port $PORT'"
}
stop_last() {
  local p=${pids[-1]}
  kill "$p"
  wait "$p" || fail "server exited non-zero on SIGTERM"
  unset 'pids[-1]'
}

# curl with stdout lines stamped (ms since just before curl started) by python.
stamped() { # out_file, curl args...
  local out=$1; shift
  python3 - "$out" "$@" <<'PY'
import subprocess, sys, time
out = sys.argv[1]
t0 = time.monotonic()
p = subprocess.Popen(["curl", "-sN"] + sys.argv[2:], stdout=subprocess.PIPE)
with open(out, "w") as f:
    for line in p.stdout:
        f.write("%.3f\t%s" % ((time.monotonic() - t0) * 1e3, line.decode()))
sys.exit(p.wait())
PY
}

raw() { # port: one POST over a raw socket; prints the reply bytes and <EOF>
  python3 - "$1" "$CHAT" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3)
body = sys.argv[2].encode()
s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          b"Content-Length: %d\r\n\r\n" % len(body) + body)
data = b""
while True:
    k = s.recv(65536)
    if not k:
        break
    data += k
print((data.decode() if data.startswith(b"HTTP") else repr(data)) + "<EOF>")
PY
}

expect_curl_exit() { # want, curl args...
  local want=$1; shift
  set +e
  curl -s "$@" >"$dir/body" 2>"$dir/curl.err"
  local got=$?
  set -e
  [ "$got" = "$want" ] || fail "curl $* exited $got, expected $want"
}

"$FS" --help | grep -q -- "--break STAGE" || fail "--help does not list --break"
set +e; "$FS" --mode nonsense >/dev/null 2>&1; rc=$?; set -e
[ "$rc" = 2 ] || fail "bad --mode exited $rc, expected 2"

CHAT='{"model":"m","messages":[{"role":"user","content":"n0nce one two three four five six seven eight nine"}],"max_tokens":20,"stream":true,"stream_options":{"include_usage":true}}'

# ---- paced llama.cpp: a=150 ms, b=4 ms, c=15 ms; prompt = 3 template + 10 words
start --mode paced --flavor llamacpp --a 150 --b 4 --c 15 --template-tokens 3 --prompt-cache
stamped "$dir/s1" "http://127.0.0.1:$PORT/v1/chat/completions" -d "$CHAT" || fail "paced curl failed"
python3 - "$dir/s1" <<'PY' || fail "paced llama.cpp stream (see above)"
import json, sys
ev = []
for l in open(sys.argv[1]):
    t, line = l.split("\t", 1)
    if line.startswith("data: "):
        ev.append((float(t), line[6:].strip()))
assert ev[-1][1] == "[DONE]", "no [DONE] at the end"
chunks = [(t, json.loads(p)) for t, p in ev[:-1]]
content = [(t, c) for t, c in chunks if c["choices"] and c["choices"][0]["delta"].get("content")]
assert len(content) == 20, "want 20 content events, got %d" % len(content)
assert chunks[0][1]["choices"][0]["delta"]["role"] == "assistant"
fin = [c for _, c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
assert fin and fin[0]["choices"][0]["finish_reason"] == "length"
u = chunks[-1][1]
assert u["choices"] == [], "last chunk is not the usage chunk"
assert u["usage"] == {"completion_tokens": 20, "prompt_tokens": 13, "total_tokens": 33,
                      "prompt_tokens_details": {"cached_tokens": 0}}, u["usage"]
tm = u["timings"]
prefill = 150 + 4 * 13
assert tm["prompt_n"] == 13 and tm["cache_n"] == 0 and tm["predicted_n"] == 20, tm
# the runtime's timer covers the prompt work (b x n), not the fixed a
assert abs(tm["prompt_ms"] - 4 * 13) < 1e-9, tm
assert abs(tm["predicted_ms"] - 19 * 15) < 1e-9, tm
t_first = content[0][0]
assert t_first >= prefill, "first content after %.1f ms < a+b*n = %d ms" % (t_first, prefill)
assert t_first < prefill + 300, "first content late: %.1f ms" % t_first
span = content[-1][0] - t_first
assert 19 * 15 - 30 < span < 19 * 15 + 120, "19 intervals of 15 ms took %.1f ms" % span
PY

# keep-alive: two requests through one curl reuse the connection; the second,
# same prompt, is cached up to P-1; a fresh nonce shares only the template.
NONCE2=${CHAT/n0nce/fresh}
curl -sv "http://127.0.0.1:$PORT/v1/chat/completions" -d "$CHAT" \
     --next "http://127.0.0.1:$PORT/v1/chat/completions" -d "$NONCE2" >"$dir/ka" 2>"$dir/ka.err" ||
  fail "keep-alive curl failed"
grep -qi "Re-using existing connection\|Reusing existing" "$dir/ka.err" || fail "connection not kept alive"
python3 - "$dir/ka" <<'PY' || fail "prompt cache (see above)"
import json, sys
us = [json.loads(l[6:]) for l in open(sys.argv[1]) if l.startswith("data: {") and '"usage"' in l]
assert [u["usage"]["prompt_tokens_details"]["cached_tokens"] for u in us] == [12, 3], us
assert [u["timings"]["prompt_ms"] for u in us] == [4 * 1, 4 * 10], us
PY
# info endpoints
curl -sf "http://127.0.0.1:$PORT/props" | grep -q '"build_info"' || fail "/props"
curl -sf "http://127.0.0.1:$PORT/tokenize" -d '{"content":"a b c"}' | grep -qx '{"tokens":\[1000,1001,1002\]}' ||
  fail "/tokenize"
stop_last

# ---- stop-early, reasoning, think tags, native /completion
start --mode paced --a 1 --b 0 --c 1 --stop-early --reasoning
curl -sN "http://127.0.0.1:$PORT/v1/chat/completions" -d "$CHAT" >"$dir/se1"
curl -sN "http://127.0.0.1:$PORT/v1/chat/completions" -d "${CHAT/\"stream\"/\"ignore_eos\":true,\"stream\"}" >"$dir/se2"
curl -sN "http://127.0.0.1:$PORT/completion" -d '{"prompt":"a b","n_predict":6,"ignore_eos":true,"stream":true}' >"$dir/nat"
python3 - "$dir/se1" "$dir/se2" "$dir/nat" <<'PY' || fail "stop-early / reasoning / native (see above)"
import json, sys
def chunks(f):
    return [json.loads(l[6:]) for l in open(f) if l.startswith("data: {")]
a, b, nat = chunks(sys.argv[1]), chunks(sys.argv[2]), chunks(sys.argv[3])
assert a[-1]["usage"]["completion_tokens"] == 5 and b[-1]["usage"]["completion_tokens"] == 20
assert [c["choices"][0]["finish_reason"] for c in a if c["choices"] and c["choices"][0]["finish_reason"]] == ["stop"]
r = [c for c in b if c["choices"] and "reasoning_content" in c["choices"][0]["delta"]]
assert len(r) == 10, "want 10 reasoning events, got %d" % len(r)
assert [c["tokens_predicted"] for c in nat[:-1]] == [1, 2, 3, 4, 5, 6] and nat[-1]["stop"] is True
assert nat[-1]["timings"]["predicted_n"] == 6 and nat[-1]["tokens_evaluated"] == 2
PY
stop_last
start --mode paced --a 1 --b 0 --c 1 --think-tags
curl -sN "http://127.0.0.1:$PORT/v1/chat/completions" -d "$CHAT" | grep -c '"content":"<think>"\|"content":"</think>"' |
  grep -qx 2 || fail "think tags"
stop_last

# ---- Ollama NDJSON
start --mode paced --flavor ollama --a 30 --b 2 --c 5
curl -sf "http://127.0.0.1:$PORT/api/version" | grep -q '"version"' || fail "/api/version"
curl -sf "http://127.0.0.1:$PORT/api/tags" | grep -q '"quantization_level"' || fail "/api/tags"
curl -sN "http://127.0.0.1:$PORT/api/chat" \
  -d '{"model":"q:1b","messages":[{"role":"user","content":"a b c d"}],"options":{"num_predict":7}}' >"$dir/ol"
curl -sN "http://127.0.0.1:$PORT/api/generate" -d '{"model":"q:1b","prompt":"a b","options":{"num_predict":3}}' >"$dir/og"
python3 - "$dir/ol" "$dir/og" <<'PY' || fail "Ollama NDJSON (see above)"
import json, sys
L = [json.loads(l) for l in open(sys.argv[1])]
assert len(L) == 8 and all(not x["done"] for x in L[:7]), L
assert all(x["message"]["role"] == "assistant" and x["message"]["content"] for x in L[:7])
f = L[-1]
assert f["done"] is True and f["done_reason"] == "length" and f["model"] == "q:1b", f
assert f["prompt_eval_count"] == 4 and f["eval_count"] == 7, f
assert f["prompt_eval_duration"] == (2 * 4) * 10**6, f  # b x n: a is outside the runtime timer
assert f["eval_duration"] == 6 * 5 * 10**6, f
assert f["total_duration"] >= f["prompt_eval_duration"] + f["eval_duration"], f
assert "load_duration" in f and "created_at" in f
G = [json.loads(l) for l in open(sys.argv[2])]
assert len(G) == 4 and "response" in G[0] and G[-1]["eval_count"] == 3, G
PY
curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/props" | grep -qx 404 || fail "ollama answers /props"
stop_last

# ---- OpenAI (vLLM-like): no usage unless include_usage; /tokenize count
start --mode paced --flavor openai --a 1 --b 0 --c 1
NOUSAGE='{"model":"x","messages":[{"role":"user","content":"a"}],"max_tokens":3,"stream":true}'
curl -sN "http://127.0.0.1:$PORT/v1/chat/completions" -d "$NOUSAGE" >"$dir/o1"
grep -q '"usage"' "$dir/o1" && fail "openai flavor sent usage without include_usage"
grep -q 'data: \[DONE\]' "$dir/o1" || fail "openai flavor: no [DONE]"
curl -sN "http://127.0.0.1:$PORT/v1/chat/completions" -d "$CHAT" | grep -q '"usage":{"completion_tokens":20' ||
  fail "openai flavor: include_usage ignored"
curl -sf "http://127.0.0.1:$PORT/tokenize" -d '{"model":"x","prompt":"a b c d"}' | grep -q '"count":4' || fail "vLLM /tokenize"
stop_last

# ---- LM Studio /api/v0/models
start --mode paced --flavor lmstudio
curl -sf "http://127.0.0.1:$PORT/api/v0/models" | grep -q '"type":"llm"' || fail "/api/v0/models"
stop_last

# ---- replay: the recorded lines, in order, byte for byte
start --mode replay --fixtures "$TOKMETER_FIXTURES/llama-server" --time-scale 0
curl -sN "http://127.0.0.1:$PORT/v1/chat/completions" -d '{"stream":true}' >"$dir/r1"
python3 - "$TOKMETER_FIXTURES/llama-server/llama-server-chat-stream.json" "$dir/r1" <<'PY' || fail "replay differs from the recording"
import json, sys
want = "".join(l["line"] for l in json.load(open(sys.argv[1]))["lines"])
got = open(sys.argv[2], encoding="utf-8").read()
assert got == want, "replayed %d bytes, recorded %d" % (len(got), len(want))
PY
code=$(curl -s -o "$dir/r2" -w '%{http_code}' "http://127.0.0.1:$PORT/v1/chat/completions" -d '{"stream":false}')
[ "$code" = 200 ] && grep -q '"object":"chat.completion"' "$dir/r2" || fail "replay non-stream chat"
stop_last
start --mode replay --fixtures "$TOKMETER_FIXTURES/llama-server" --replay-file llama-server-error-context-overflow.json --time-scale 0
code=$(curl -s -o "$dir/r3" -w '%{http_code}' "http://127.0.0.1:$PORT/anything" -d '{}')
[ "$code" = 400 ] && grep -q exceed_context_size_error "$dir/r3" || fail "replay-file context overflow"
stop_last

# ---- buffered: every token in one burst at the end
start --mode buffered --a 50 --b 0 --c 20
stamped "$dir/b1" "http://127.0.0.1:$PORT/v1/chat/completions" -d "$CHAT" || fail "buffered curl"
python3 - "$dir/b1" <<'PY' || fail "buffered (see above)"
ts = [float(l.split("\t")[0]) for l in open(__import__("sys").argv[1]) if '"content":"' in l]
assert len(ts) == 20 and ts[0] >= 50 + 19 * 20, ts[:3]
assert ts[-1] - ts[0] < 15, "buffered tokens spread over %.1f ms" % (ts[-1] - ts[0])
PY
stop_last

# ---- break stages (curl exit codes: 52 empty reply, 8 weird reply, 18 partial,
# 28 timeout)
URL_PATH=/v1/chat/completions
brk() { start --break "$1" --a 5 --b 0 --c 5; }
brk close-on-accept
set +e; curl -s "http://127.0.0.1:$PORT$URL_PATH" -d "$CHAT" >"$dir/body"; rc=$?; set -e
# 52 empty reply (FIN), 56 reset (the request was still unread at close)
[ "$rc" = 52 ] || [ "$rc" = 56 ] || fail "close-on-accept: curl exited $rc"
[ ! -s "$dir/body" ] || fail "close-on-accept sent bytes"; stop_last
brk half-headers; raw "$PORT" | grep -qx "HTTP/1.1 20<EOF>" || fail "half-headers: $(raw "$PORT")"
set +e; curl -s "http://127.0.0.1:$PORT$URL_PATH" -d "$CHAT" >/dev/null; rc=$?; set -e
[ "$rc" = 52 ] || [ "$rc" = 8 ] || fail "half-headers: curl exited $rc"; stop_last
brk garbage; raw "$PORT" | grep -q "^b'.*not http.*<EOF>" || fail "garbage: $(raw "$PORT")"
set +e; curl -s "http://127.0.0.1:$PORT$URL_PATH" -d "$CHAT" >/dev/null; rc=$?; set -e
[ "$rc" != 0 ] || fail "garbage: curl accepted it"; stop_last
brk after-headers; expect_curl_exit 18 -N "http://127.0.0.1:$PORT$URL_PATH" -d "$CHAT"
[ ! -s "$dir/body" ] || fail "after-headers sent a body"; stop_last
brk after-first-token; expect_curl_exit 18 -N "http://127.0.0.1:$PORT$URL_PATH" -d "$CHAT"
[ "$(grep -c '"content":"' "$dir/body")" = 1 ] || fail "after-first-token: not exactly one token"; stop_last
brk mid-event; expect_curl_exit 18 -N "http://127.0.0.1:$PORT$URL_PATH" -d "$CHAT"
[ "$(tail -c 1 "$dir/body" | od -An -c | tr -d ' ')" != '\n' ] || fail "mid-event ended on a line boundary"; stop_last
brk no-done-no-usage; expect_curl_exit 0 -N "http://127.0.0.1:$PORT$URL_PATH" -d "$CHAT"
[ "$(grep -c '"content":"' "$dir/body")" = 20 ] || fail "no-done-no-usage: tokens missing"
grep -q 'usage\|DONE' "$dir/body" && fail "no-done-no-usage sent usage or [DONE]"; stop_last
brk stall; expect_curl_exit 28 -N --max-time 0.5 "http://127.0.0.1:$PORT$URL_PATH" -d "$CHAT"
[ "$(grep -c '"content":"' "$dir/body")" = 1 ] || fail "stall: not exactly one token"
# the client gave up: the server notices and serves a new connection
curl -sf --max-time 2 "http://127.0.0.1:$PORT/props" >/dev/null || fail "stall: no recovery after the client closed"
# SIGTERM in the middle of a stall: the process exits at once
curl -sN --max-time 5 "http://127.0.0.1:$PORT$URL_PATH" -d "$CHAT" >/dev/null 2>&1 &
cpid=$!
sleep 0.2
t0=$(date +%s%N); stop_last; t1=$(date +%s%N)
[ $(( (t1 - t0) / 1000000 )) -lt 500 ] || fail "stop during a stall took $(( (t1 - t0) / 1000000 )) ms"
wait "$cpid" 2>/dev/null || true
brk stall-before-headers; expect_curl_exit 28 -N --max-time 0.3 "http://127.0.0.1:$PORT$URL_PATH" -d "$CHAT"; stop_last
brk malformed-json; expect_curl_exit 0 -N "http://127.0.0.1:$PORT$URL_PATH" -d "$CHAT"
python3 - "$dir/body" <<'PY' || fail "malformed-json: no broken event"
import json, sys
bad = 0
for l in open(sys.argv[1]):
    if l.startswith("data: {"):
        try: json.loads(l[6:])
        except ValueError: bad += 1
assert bad == 1, bad
PY
stop_last
for st in http-500:500 http-404:404 context-overflow:400; do
  brk "${st%%:*}"
  code=$(curl -s -o "$dir/body" -w '%{http_code}' "http://127.0.0.1:$PORT$URL_PATH" -d "$CHAT")
  [ "$code" = "${st##*:}" ] || fail "${st%%:*}: HTTP $code"
  python3 -c 'import json,sys; assert "error" in json.load(open(sys.argv[1]))' "$dir/body" || fail "${st%%:*}: body"
  # info endpoints keep working in break mode
  curl -sf "http://127.0.0.1:$PORT/props" >/dev/null || fail "${st%%:*}: /props broken too"
  stop_last
done
grep -q exceed_context_size_error "$dir/body" || fail "context-overflow body"
brk error-event; expect_curl_exit 0 -N "http://127.0.0.1:$PORT$URL_PATH" -d "$CHAT"
head -1 "$dir/body" | grep -q '^data: {"error":' || fail "error-event: first event is not an error"; stop_last

echo "test_fakeserver: ok ($n_started servers)"
