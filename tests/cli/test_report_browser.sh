#!/usr/bin/env bash
# test_report_browser: the HTML report as a browser shows it. Real records
# (an in-process bench of a tiny synthetic model at 1 and 2 threads, and a
# server bench against the paced fake server) -> `tokmeter report --html`;
# headless Chromium (Debian's chromium, installed by scripts/deps test):
#  1. --dump-dom of a test-only copy with an inline script that writes, per
#     plot, its marks and its plot area's rectangle into the DOM: each plot
#     holds one mark per data point of the records (counted here from the
#     records with python), its data-marks attribute agrees, and both axes
#     are labelled with a unit "(...)";
#  2. a screenshot of the same copy: inside every plot area there are
#     coloured (non-grey) pixels, decoded by tests/tools/png_count.c (libpng);
#  3. a control that must fail: the same page with the marks and lines hidden
#     by CSS shows no coloured pixel in any plot area (so step 2 can fail).
set -euo pipefail
: "${TOKMETER:?}" "${TOKMETER_FAKESERVER:?}" "${TOKMETER_SOURCE_DIR:?}"
. "$(dirname "$0")/lib.sh"
export TOKMETER_PROBE_QUICK=1 NO_PROXY='*'

chromium=$(command -v chromium || command -v chromium-browser || true)
[ -n "$chromium" ] || fail "chromium not installed (scripts/deps test installs Debian's chromium)"
cc -O2 "$TOKMETER_SOURCE_DIR/tests/tools/png_count.c" -lpng -o "$dir/png_count" ||
  fail "cannot build tests/tools/png_count.c (libpng-dev: scripts/deps test)"

# --- records ------------------------------------------------------------------
"$TOKMETER" synth --preset tiny -o "$dir/tiny.gguf" >/dev/null 2>&1 || fail "synth"
"$TOKMETER" bench -m "$dir/tiny.gguf" -p 16,32 -n 32 -t 1,2 -r 3 --out "$dir/r.jsonl" \
  >"$dir/bench.out" 2>&1 || fail "engine bench: $(tail -3 "$dir/bench.out")"
start_server fs --mode paced --a 5 --b 0.02 --c 1
port=$PORT
"$TOKMETER" bench --url "http://127.0.0.1:$port" -r 2 --out "$dir/r.jsonl" \
  >"$dir/sbench.out" 2>&1 || fail "server bench: $(tail -3 "$dir/sbench.out")"
"$TOKMETER" load --url "http://127.0.0.1:$port" -c 1,2 -p 40 -n 30 --ramp 0.5 --duration 1.5 \
  --no-progress --out "$dir/r.jsonl" >"$dir/load.out" 2>&1 || fail "load: $(tail -3 "$dir/load.out")"

"$TOKMETER" report --html "$dir/report.html" "$dir/r.jsonl" >/dev/null 2>"$dir/err" ||
  fail "report exited non-zero: $(cat "$dir/err")"
grep -q '<svg class="tm-plot"' "$dir/report.html" || fail "no plot in the HTML"

# --- 1. marks and axes, as the browser parsed them ---------------------------
geom_script='<script>
(function () {
  var out = [];
  document.querySelectorAll("svg.tm-plot").forEach(function (svg) {
    var a = svg.querySelector("rect.tm-plot-area").getBoundingClientRect();
    var labels = [];
    svg.querySelectorAll("text.tm-axis-label").forEach(function (t) { labels.push(t.textContent); });
    out.push({id: svg.getAttribute("data-plot"), attr: +svg.getAttribute("data-marks"),
              marks: svg.querySelectorAll(".tm-mark").length,
              x: Math.round(a.left + window.scrollX), y: Math.round(a.top + window.scrollY),
              w: Math.round(a.width), h: Math.round(a.height), labels: labels});
  });
  var pre = document.createElement("pre");
  pre.id = "tm-geom";
  pre.style.display = "none";
  pre.textContent = JSON.stringify({height: document.documentElement.scrollHeight, plots: out});
  document.body.appendChild(pre);
})();
</script>'
python3 - "$dir/report.html" "$dir/test.html" "$geom_script" <<'PY'
import sys
html = open(sys.argv[1], encoding="utf-8").read()
assert html.count("</body>") == 1
open(sys.argv[2], "w", encoding="utf-8").write(html.replace("</body>", sys.argv[3] + "\n</body>"))
PY
chrome() { # chrome ARGS...: headless, fixed width, one device pixel per CSS pixel
  timeout 60 "$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --force-device-scale-factor=1 --no-first-run --user-data-dir="$dir/profile" "$@" 2>>"$dir/chrome.log"
}
chrome --window-size=1200,1000 --dump-dom "file://$dir/test.html" >"$dir/dom.html" ||
  fail "chromium --dump-dom failed: $(tail -3 "$dir/chrome.log")"

python3 - "$dir/r.jsonl" "$dir/dom.html" "$dir/geom.json" <<'PY' || fail "marks per plot (see above)"
import json, re, sys, html as H
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
m = re.search(r'<pre id="tm-geom"[^>]*>(.*?)</pre>', open(sys.argv[2], encoding="utf-8").read(), re.S)
assert m, "the geometry script did not run"
geom = json.loads(H.unescape(m.group(1)))
open(sys.argv[3], "w").write(json.dumps(geom))
plots = {p["id"]: p for p in geom["plots"]}
runs = [r for r in recs if r["record"] == "run" and r.get("ok") and not r.get("warmup")
        and not r.get("calibration") and not r.get("cold")]
eng = [r for r in runs if "test" in r]
srv = [r for r in runs if "test" not in r]
assert eng and srv, "both kinds of records expected"

def counts(prefix):
    return sorted(p["marks"] for i, p in plots.items() if i.startswith(prefix))

# decode curves: one mark per segment of each timed run, one plot per configuration
want = {}
for r in eng:
    if r.get("decode_by_segment"):
        k = ("e", r["model"]["name"], r["test"], r["threads"], r["depth"])
        want[k] = want.get(k, 0) + len(r["decode_by_segment"])
for r in srv:
    seg = (r.get("rates") or {}).get("decode_by_segment") or []
    if seg:
        k = ("s", r["target"], r["model"], r["workload"])
        want[k] = want.get(k, 0) + len(seg)
assert counts("decode-curve-") == sorted(want.values()), (counts("decode-curve-"), want)

# TTFT: server runs with processed tokens and a TTFT (prefill not excluded), by
# target + model; in-process pp runs by model + threads + depth
want = {}
for r in srv:
    if not (r.get("cache") or {}).get("prefill_excluded") and r["tokens"].get("processed") \
       and r["client"].get("ttft_ms") is not None:
        k = ("s", r["target"], r["model"]); want[k] = want.get(k, 0) + 1
for r in eng:
    if r["test"].startswith("pp"):
        k = ("e", r["model"]["name"], r["threads"], r["depth"]); want[k] = want.get(k, 0) + 1
assert counts("ttft-") == sorted(want.values()), (counts("ttft-"), want)

# threads: one mark per timed in-process run
assert plots["threads-prefill"]["marks"] == sum(r["test"].startswith("pp") for r in eng)
assert plots["threads-decode"]["marks"] == sum(r["test"].startswith("tg") for r in eng)
# ceiling: one bar per in-process configuration with a ceiling (the fake server has none)
confs = {(r["model"]["name"], r["test"], r["threads"], r["depth"]) for r in eng
         if (r.get("ceiling") or {}).get("ceiling_tok_s")}
assert plots["ceiling"]["marks"] == len(confs), (plots["ceiling"]["marks"], confs)

# load: per level one mark of aggregate and one of one stream's decode, and
# TTFT p50 and p99 (the fake server's records carry no ceiling)
loads = [r for r in recs if r["record"] == "load"]
assert len(loads) == 2, loads
assert counts("load-") == sorted([2 * len(loads), 2 * len(loads)]), counts("load-")

for p in geom["plots"]:
    assert p["marks"] == p["attr"] and p["marks"] > 0, p
    assert len(p["labels"]) >= 1 and all(re.search(r"\([^()]+\)", l) for l in p["labels"]), p
    xy = not p["id"].startswith("ceiling")
    assert len(p["labels"]) == (2 if xy else 1), p
    assert p["w"] > 100 and p["h"] > 50, p
print("plots:", ", ".join(f'{p["id"]}={p["marks"]}' for p in geom["plots"]))
PY

# --- 2. the screenshot shows them ---------------------------------------------
height=$(python3 -c 'import json,sys; print(min(json.load(open(sys.argv[1]))["height"] + 20, 16000))' "$dir/geom.json")
rects=$(python3 -c '
import json, sys
for p in json.load(open(sys.argv[1]))["plots"]:
    print(p["x"] + 2, p["y"] + 2, p["w"] - 4, p["h"] - 4)' "$dir/geom.json")
chrome --window-size=1200,"$height" --screenshot="$dir/shot.png" "file://$dir/test.html" >/dev/null ||
  fail "chromium --screenshot failed: $(tail -3 "$dir/chrome.log")"
# shellcheck disable=SC2086
"$dir/png_count" "$dir/shot.png" $rects >"$dir/pixels" || fail "png_count"
# Coloured pixels wanted per plot: 20, or 5 per mark when it has fewer than 4
# (one mark, e.g. a curve whose other run's stream came coalesced under the
# suite's load, showed 10 pixels; the control below shows 0).
ids=$(python3 -c 'import json,sys; print(" ".join("%s:%d" % (p["id"], min(20, 5 * p["marks"])) for p in json.load(open(sys.argv[1]))["plots"]))' "$dir/geom.json")
paste <(tr ' ' '\n' <<<"$ids") "$dir/pixels" >"$dir/pixels.by_plot"
while read -r idneed total nonbg colored; do
  id=${idneed%:*} need=${idneed##*:}
  [ "$total" -gt 1000 ] || fail "plot $id: its area is not on the screenshot ($total pixels)"
  [ "$nonbg" -gt 50 ] || fail "plot $id: only $nonbg non-background pixels inside its area"
  [ "$colored" -gt "$need" ] ||
    fail "plot $id: only $colored coloured pixels (marks, lines) inside its area (want > $need)"
done <"$dir/pixels.by_plot"
# outside the plots (the left page margin) nothing is drawn: the counter is not blind
margin=$("$dir/png_count" "$dir/shot.png" 0 0 12 "$height")
[ "$(cut -d' ' -f2 <<<"$margin")" = 0 ] || fail "png_count sees non-background pixels in the margin: $margin"

# --- 3. control: hide the marks and lines, the same check must fail --------------
sed 's#</style>#.tm-mark,.tm-derived,.tm-line,.tm-legend{display:none}</style>#' "$dir/test.html" >"$dir/hidden.html"
chrome --window-size=1200,"$height" --screenshot="$dir/hidden.png" "file://$dir/hidden.html" >/dev/null ||
  fail "chromium --screenshot (control) failed"
# shellcheck disable=SC2086
"$dir/png_count" "$dir/hidden.png" $rects >"$dir/hidden.pixels"
while read -r _ _ colored; do
  [ "$colored" -le 5 ] || fail "control: $colored coloured pixels in a plot with its marks hidden"
done <"$dir/hidden.pixels"
echo "test_report_browser: ok ($(wc -l <"$dir/pixels.by_plot") plots)"
