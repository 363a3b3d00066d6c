#!/usr/bin/env python3
"""batching_server: a loopback LLM server that batches like a real one, with a
known truth, for `tokmeter load`'s tests (tests/server/test_load.sh).

It speaks llama.cpp's OpenAI-compatible API (GET /props, GET /v1/models,
POST /tokenize, POST /v1/chat/completions streamed as SSE with `usage` and
llama.cpp-style `timings`). Scheduling, exactly:

  * at most --slots requests are active; more wait in a FIFO queue;
  * the server runs steps back to back while any request is active; a step
    with S active requests lasts c0 + c1 x S ms, plus b ms per prompt token
    of the requests admitted at its start (their prefill rides in the step);
  * queued requests are admitted at the start of a step (a request arriving
    during a step waits for the next one);
  * at the end of each step every active request emits one token (a newly
    admitted one its first); one that has emitted max_tokens ends there, with
    its usage and timings: prompt_ms = the prefill of its first step (b x the
    prompt tokens of every request admitted with it: a batch's prompts are
    read together), predicted_ms = the steps from its first token to its
    last. So a request's time to first token is its queue, its prefill and
    one step's c0 + c1 x S: the split tokmeter's queue_ms makes.

Prompt tokens = the words of the last user message. GET /metrics gives
llama.cpp's token counters (x --metrics-scale: a server whose counters and
answers disagree; 0: no /metrics). GET /truth answers, per
request, the server's own times (time.time(), seconds): arrival, admission,
every token's emission; tokmeter's figures are checked against them. The
port is written to --port-file once listening.
"""
import argparse
import asyncio
import json
import time

ap = argparse.ArgumentParser()
ap.add_argument("--slots", type=int, default=4)
ap.add_argument("--c0", type=float, default=20.0)
ap.add_argument("--c1", type=float, default=2.0)
ap.add_argument("--b", type=float, default=0.0)
ap.add_argument("--port-file", required=True)
ap.add_argument("--host", default="127.0.0.1", help="the address to listen on")
ap.add_argument("--metrics-garbage", choices=["text", "backwards"], default=None,
                help="GET /metrics: text that is not Prometheus counters, or counters that "
                     "go back between reads (a restarted server)")
ap.add_argument("--busy-slots", type=int, default=0,
                help="GET /slots reports this many slots busy beyond the requests in flight "
                     "(another client)")
ap.add_argument("--metrics-scale", type=float, default=1.0,
                help="GET /metrics reports the token counters x this (0: no /metrics)")
args = ap.parse_args()


class Req:
    def __init__(self, n_prompt, max_tokens, writer):
        self.n_prompt, self.max_tokens, self.writer = n_prompt, max_tokens, writer
        self.arrival = time.time()
        self.admit = None
        self.tokens = []          # emission times
        self.prompt_ms = 0.0
        self.predicted_ms = 0.0
        self.done = asyncio.get_running_loop().create_future()


queue, active, truth = [], [], []
counters = {"prompt": 0, "predicted": 0}
metrics_reads = [0]
wake = asyncio.Event()


def sse(writer, obj):
    data = ("data: " + (obj if isinstance(obj, str) else json.dumps(obj)) + "\n\n").encode()
    writer.write(b"%x\r\n%s\r\n" % (len(data), data))


async def scheduler():
    loop = asyncio.get_running_loop()
    while True:
        if not active and not queue:
            wake.clear()
            await wake.wait()
        start = loop.time()
        admitted = []
        while queue and len(active) < args.slots:
            r = queue.pop(0)
            r.admit = time.time()
            active.append(r)
            admitted.append(r)
        prefill = args.b * sum(r.n_prompt for r in admitted)
        counters["prompt"] += sum(r.n_prompt for r in admitted)
        step = args.c0 + args.c1 * len(active) + prefill
        await asyncio.sleep(max(0.0, start + step / 1e3 - loop.time()))
        now = time.time()
        for r in list(active):
            if r in admitted:
                r.prompt_ms = prefill
            else:
                r.predicted_ms += step
            r.tokens.append(now)
            counters["predicted"] += 1
            i = len(r.tokens) - 1
            sse(r.writer, {"choices": [{"index": 0, "delta": {"content": "w%d " % i},
                                        "finish_reason": None}], "object": "chat.completion.chunk"})
            if len(r.tokens) >= r.max_tokens:
                active.remove(r)
                n = len(r.tokens)
                sse(r.writer, {"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}],
                               "object": "chat.completion.chunk"})
                sse(r.writer, {"choices": [], "usage": {
                    "prompt_tokens": r.n_prompt, "completion_tokens": n,
                    "total_tokens": r.n_prompt + n,
                    "prompt_tokens_details": {"cached_tokens": 0}},
                    "timings": {"cache_n": 0, "prompt_n": r.n_prompt, "prompt_ms": r.prompt_ms,
                                "predicted_n": n, "predicted_ms": r.predicted_ms}})
                sse(r.writer, "[DONE]")
                r.writer.write(b"0\r\n\r\n")
                truth.append({"arrival": r.arrival, "admit": r.admit, "tokens": r.tokens,
                              "prompt_tokens": r.n_prompt})
                r.done.set_result(True)
        for r in active:
            try:
                await r.writer.drain()
            except ConnectionError:
                pass


def words(text):
    return len(text.split())


async def respond(writer, status, body, ctype="application/json"):
    data = body.encode() if isinstance(body, str) else body
    writer.write(b"HTTP/1.1 %d OK\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n"
                 % (status, ctype.encode(), len(data)) + data)
    await writer.drain()


async def handle(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            hdrs = {k.lower(): v.strip() for k, v in
                    (l.split(":", 1) for l in lines[1:] if ":" in l)}
            n = int(hdrs.get("content-length", "0"))
            body = json.loads(await reader.readexactly(n)) if n else {}
            if method == "GET" and path == "/props":
                await respond(writer, 200, json.dumps({
                    "build_info": "batching_server", "model_path": "batching.gguf",
                    "total_slots": args.slots,
                    "default_generation_settings": {"n_ctx": 4096}}))
            elif method == "GET" and path == "/v1/models":
                await respond(writer, 200, json.dumps(
                    {"object": "list", "data": [{"id": "batching", "object": "model"}]}))
            elif method == "GET" and path == "/slots":
                busy = min(args.slots, len(active) + args.busy_slots)
                await respond(writer, 200, json.dumps(
                    [{"id": i, "n_ctx": 4096, "is_processing": i < busy} for i in range(args.slots)]))
            elif method == "GET" and path == "/metrics" and args.metrics_garbage == "text":
                await respond(writer, 200, "<html><body>metrics</body></html>\n"
                              "llamacpp:prompt_tokens_total{ 12\nllamacpp:tokens_predicted_total abc\n"
                              "llamacpp:prompt_tokens_total NaN\n\x01\x02\n", "text/plain")
            elif method == "GET" and path == "/metrics" and args.metrics_garbage == "backwards":
                metrics_reads[0] += 1
                v = 1e9 - 1000 * metrics_reads[0]
                await respond(writer, 200, "llamacpp:prompt_tokens_total %g\n"
                              "llamacpp:tokens_predicted_total %g\n" % (v, v), "text/plain")
            elif method == "GET" and path == "/metrics" and args.metrics_scale > 0:
                k = args.metrics_scale
                await respond(writer, 200, "# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.\n"
                              "# TYPE llamacpp:prompt_tokens_total counter\n"
                              "llamacpp:prompt_tokens_total %g\n"
                              "llamacpp:tokens_predicted_total %g\n"
                              % (k * counters["prompt"], k * counters["predicted"]), "text/plain")
            elif method == "GET" and path == "/truth":
                await respond(writer, 200, json.dumps(truth))
            elif method == "POST" and path == "/tokenize":
                await respond(writer, 200, json.dumps(
                    {"tokens": list(range(words(body.get("content", ""))))}))
            elif method == "POST" and path == "/v1/chat/completions":
                msgs = body.get("messages") or [{"content": ""}]
                text = msgs[-1].get("content", "")
                if isinstance(text, list):
                    text = " ".join(p.get("text", "") for p in text if isinstance(p, dict))
                r = Req(words(text), int(body.get("max_tokens") or 16), writer)
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                             b"Transfer-Encoding: chunked\r\n\r\n")
                await writer.drain()
                queue.append(r)
                wake.set()
                await r.done
                await writer.drain()
            else:
                await respond(writer, 404, '{"error":{"code":404,"message":"not found"}}')
    except (asyncio.IncompleteReadError, ConnectionError, ValueError):
        pass
    finally:
        writer.close()


async def main():
    server = await asyncio.start_server(handle, args.host, 0, backlog=4096)
    port = server.sockets[0].getsockname()[1]
    asyncio.get_running_loop().create_task(scheduler())
    with open(args.port_file, "w") as f:
        f.write("%d\n" % port)
    async with server:
        await server.serve_forever()


asyncio.run(main())
