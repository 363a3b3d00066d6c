#!/usr/bin/env bash
# test_ceiling: `tokmeter ceiling` end to end. Expected numbers are computed here
# independently (a small GGUF tensor-table reader in python3), never copied from
# the tool's output.
set -euo pipefail
: "${TOKMETER:?binary path}" "${TOKMETER_FIXTURES:?fixtures dir}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export TOKMETER_CACHE_DIR="$tmp/cache" TOKMETER_PROBE_QUICK=1
G="$TOKMETER_FIXTURES/gguf"
fail() { echo "FAIL: $*" >&2; exit 1; }

# --- help and usage errors ------------------------------------------------
"$TOKMETER" ceiling --help >"$tmp/help" || fail "--help exit code"
for flag in --preset --type --size --active-fraction --bandwidth --compute --threads \
            --memory --overhead --depth --prompt-tokens --kv-type --measured-decode \
            --measured-prefill --json --help; do
  grep -q -- "$flag" "$tmp/help" || fail "--help does not list $flag"
done
expect_usage() { # expect_usage "what" args... : exit 2, and the message on stderr
  local what=$1; shift
  set +e; "$TOKMETER" ceiling "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?; set -e
  [ "$rc" = 2 ] || fail "$what: exit $rc, want 2 ($(cat "$tmp/err"))"
  [ -s "$tmp/err" ] || fail "$what: nothing on stderr"
}
expect_usage "unknown flag" "$G/tiny-llama-Q4_0.gguf" --bogus
expect_usage "no model" --bandwidth 1GB/s
expect_usage "two models" "$G/tiny-llama-Q4_0.gguf" --size 1GB --bandwidth 1GB/s
expect_usage "unknown preset" --preset nope --bandwidth 1GB/s
grep -q "qwen3-30b-a3b" "$tmp/err" || fail "unknown preset: no list of presets"
# zero is not "not given": a rate or size of 0 is bad usage
expect_usage "bandwidth 0" --preset tiny --bandwidth 0
expect_usage "compute 0" --preset tiny --bandwidth 1GB/s --compute 0
expect_usage "memory 0" --preset tiny --bandwidth 1GB/s --memory 0
expect_usage "measured decode 0" --preset tiny --bandwidth 1GB/s --measured-decode 0
expect_usage "measured prefill 0" --preset tiny --bandwidth 1GB/s --measured-prefill 0
expect_usage "size beyond 1 EB" --size 99999999999999999999999GB --bandwidth 1GB/s
expect_usage "active fraction with a file" "$G/tiny-llama-Q4_0.gguf" --active-fraction 0.5 \
  --bandwidth 1GB/s
grep -q -- "--active-fraction goes with --size" "$tmp/err" || fail "active fraction: $(cat "$tmp/err")"
for d in 1,,2 ,1 1,; do expect_usage "depth list '$d'" --preset tiny --bandwidth 1GB/s -d "$d"; done
expect_usage "unknown type" --preset qwen3-0.6b --type Q3_XYZ --bandwidth 1GB/s
grep -q "Q4_K_M" "$tmp/err" || fail "unknown type: no list of types"
expect_usage "unknown kv type" "$G/tiny-llama-Q4_0.gguf" --kv-type Q2_K --bandwidth 1GB/s
grep -q "Q8_0" "$tmp/err" || fail "unknown kv type: no list"
expect_usage "unknown unit" --size 15GB --bandwidth 273furlongs
grep -q "273GB/s" "$tmp/err" || fail "unknown unit: no accepted forms"
expect_usage "missing file" "$tmp/does-not-exist.gguf" --bandwidth 1GB/s
expect_usage "vocab-only file" "$G/ggml-vocab-qwen2.gguf" --bandwidth 1GB/s
# a FIFO: opening it for reading used to block forever (timeout: a hang fails)
mkfifo "$tmp/fifo.gguf"
set +e; timeout 20 "$TOKMETER" ceiling "$tmp/fifo.gguf" --bandwidth 1GB/s 2>"$tmp/err"; rc=$?; set -e
[ "$rc" = 2 ] || fail "FIFO: exit $rc, want 2"
grep -q "not a regular file" "$tmp/err" || fail "FIFO: $(cat "$tmp/err")"

# --- corrupt files: one line on stderr, exit 2 ------------------------------
printf 'GGUX\3\0\0\0' >"$tmp/badmagic.gguf"
: >"$tmp/empty.gguf"
corrupt=("$tmp/badmagic.gguf" "$tmp/empty.gguf")
for n in 3 24 100 1000 5000 200000 5525000; do
  head -c "$n" "$G/tiny-llama-Q4_0.gguf" >"$tmp/trunc-$n.gguf"
  corrupt+=("$tmp/trunc-$n.gguf")
done
# metadata that parses but cannot describe the model: every figure built on it
# would be wrong (u32 values patched in place in a copy of a real file)
patch_u32() { # patch_u32 SRC DST KEY VALUE
  python3 - "$@" <<'PY'
import struct, sys
src, dst, key, value = sys.argv[1], sys.argv[2], sys.argv[3].encode(), int(sys.argv[4])
d = bytearray(open(src, "rb").read())
at = d.find(struct.pack("<Q", len(key)) + key)
assert at > 0, key
pos = at + 8 + len(key)
assert struct.unpack_from("<I", d, pos)[0] == 4, "not a u32 key"  # GGUF type 4 = uint32
struct.pack_into("<I", d, pos + 4, value)
open(dst, "wb").write(d)
PY
}
q3="$G/tiny-qwen3-Q8_0.gguf"
patch_u32 "$q3" "$tmp/bc0.gguf" qwen3.block_count 0
patch_u32 "$q3" "$tmp/ctx0.gguf" qwen3.context_length 0
patch_u32 "$q3" "$tmp/hkv0.gguf" qwen3.attention.head_count_kv 0
patch_u32 "$q3" "$tmp/hc0.gguf" qwen3.attention.head_count 0
patch_u32 "$q3" "$tmp/hkv3.gguf" qwen3.attention.head_count_kv 3
patch_u32 "$q3" "$tmp/klen0.gguf" qwen3.attention.key_length 0
# block_count beyond the blocks that have tensors (KV for layers that do not
# exist), a key_length whose sum with value_length wrapped in 32 bits
patch_u32 "$q3" "$tmp/bc5.gguf" qwen3.block_count 5
patch_u32 "$q3" "$tmp/bc65536.gguf" qwen3.block_count 65536
patch_u32 "$q3" "$tmp/klenmax.gguf" qwen3.attention.key_length 4294967295
corrupt+=("$tmp/bc0.gguf" "$tmp/ctx0.gguf" "$tmp/hkv0.gguf" "$tmp/hc0.gguf" "$tmp/hkv3.gguf"
          "$tmp/klen0.gguf" "$tmp/bc5.gguf" "$tmp/bc65536.gguf" "$tmp/klenmax.gguf")
"$TOKMETER" ceiling "$q3" --bandwidth 10GB/s >/dev/null || fail "the unpatched file must pass"
for f in "${corrupt[@]}"; do
  set +e; "$TOKMETER" ceiling "$f" --bandwidth 10GB/s >"$tmp/out" 2>"$tmp/err"; rc=$?; set -e
  [ "$rc" = 2 ] || fail "$(basename "$f"): exit $rc, want 2"
  lines=$(wc -l <"$tmp/err")
  [ "$lines" = 1 ] || fail "$(basename "$f"): $lines lines on stderr, want 1: $(cat "$tmp/err")"
  [ ! -s "$tmp/out" ] || fail "$(basename "$f"): output on stdout"
  case $(basename "$f") in  # the message names the key
    bc5.gguf|bc65536.gguf) grep -q "qwen3.block_count is .* but no tensor belongs to block 4" "$tmp/err" ;;
    klenmax.gguf) grep -q "'qwen3.attention.key_length' = 4294967295 is out of range" "$tmp/err" ;;
  esac || fail "$(basename "$f"): $(cat "$tmp/err")"
done

# --- names that are not UTF-8 ------------------------------------------------
# An architecture name with a byte 0xff is refused (it emptied the JSON of its
# arch key and assumptions, and went raw into the text output).
python3 - "$G/tiny-llama-Q8_0.gguf" "$tmp/arch-ff.gguf" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
key = b"general.architecture"
at = d.find(struct.pack("<Q", len(key)) + key) + 8 + len(key)
assert struct.unpack_from("<IQ", d, at) == (8, 5) and d[at + 12:at + 17] == b"llama"
d[at + 16] = 0xFF  # "llam\xff"
open(sys.argv[2], "wb").write(d)
PY
set +e; "$TOKMETER" ceiling "$tmp/arch-ff.gguf" --bandwidth 1GB/s --json >"$tmp/out" 2>"$tmp/err"; rc=$?; set -e
[ "$rc" = 2 ] && [ ! -s "$tmp/out" ] || fail "arch 0xff: exit $rc, $(cat "$tmp/out")"
grep -q "general.architecture' has byte 0xff at position 4" "$tmp/err" || fail "arch 0xff: $(cat "$tmp/err")"
LC_ALL=C grep -q $'\xff' "$tmp/err" && fail "arch 0xff: the raw byte is in the message"
# A file name that is not UTF-8: --json keeps its keys and stays valid JSON.
cp "$G/tiny-llama-Q8_0.gguf" "$tmp/m"$'\xff'".gguf"
"$TOKMETER" ceiling "$tmp/m"$'\xff'".gguf" --bandwidth 1GB/s --json >"$tmp/ff.json" \
  || fail "ceiling --json on a non-UTF-8 file name"
python3 - "$tmp/ff.json" <<'PY' || fail "non-UTF-8 file name: JSON $(cat "$tmp/ff.json")"
import json, sys
d = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))
assert d["file"].endswith("m?.gguf") and d["arch"] == "llama", (d["file"], d["arch"])
assert isinstance(d["assumptions"], list)
PY

# --- an architecture this reader does not know --------------------------------
# general.architecture patched to "gpt2x" (same length: offsets kept), so every
# llama.* key reads as absent. Each default applied is listed under "assumed",
# and the KV cache is unknown, not "0 B" with "0 attention layers" and an
# "unbounded" context as it once was.
python3 - "$G/tiny-llama-Q4_0.gguf" "$tmp/gpt2x.gguf" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
key = b"general.architecture"
at = d.find(struct.pack("<Q", len(key)) + key) + 8 + len(key)
assert struct.unpack_from("<IQ", d, at) == (8, 5) and d[at + 12:at + 17] == b"llama"
d[at + 12:at + 17] = b"gpt2x"
open(sys.argv[2], "wb").write(d)
PY
"$TOKMETER" ceiling "$tmp/gpt2x.gguf" --bandwidth 10GB/s --compute 1TFLOPS --memory 8GiB \
  -d 0,4096 >"$tmp/u.txt" || fail "unknown architecture: exit code"
for want in "KV cache: unknown" "context that fits in 8 GiB: unknown" \
            "depth    4096:  unknown" "prefill ceiling (prompt of 512): unknown" \
            "gpt2x.block_count absent" "gpt2x.embedding_length absent" \
            "gpt2x.attention.head_count absent" "gpt2x.context_length absent"; do
  grep -qF -- "$want" "$tmp/u.txt" || fail "unknown architecture: no '$want': $(cat "$tmp/u.txt")"
done
for bad in "0 B per token" "unbounded" "0 attention layers"; do
  grep -qF -- "$bad" "$tmp/u.txt" && fail "unknown architecture: '$bad': $(cat "$tmp/u.txt")"
done
"$TOKMETER" ceiling "$tmp/gpt2x.gguf" --bandwidth 10GB/s --compute 1TFLOPS --memory 8GiB \
  -d 0,4096 --json >"$tmp/u.json" || fail "unknown architecture --json"
python3 - "$tmp/u.json" "$tmp/gpt2x.gguf" <<'PY' || fail "unknown architecture JSON: $(cat "$tmp/u.json")"
import json, re, struct, sys
d = json.load(open(sys.argv[1]))
# the blocks with an attention tensor, read from the tensor names in the file
names = re.findall(rb"blk\.(\d+)\.attn_(?:k|qkv)\.weight", open(sys.argv[2], "rb").read())
assert d["layers"]["attention"] == len(set(names)) > 0, (d["layers"], names)
for k in ("kv_bytes_per_token", "kv_bytes_per_token_full", "kv_bytes_per_token_swa",
          "context_fits_tokens", "context_length", "prefill_ceiling_tok_s"):
    assert d[k] is None, (k, d[k])
by = {e["depth"]: e for e in d["decode_ceiling_by_depth"]}
assert by[4096]["tok_s"] is None and by[4096]["kv_bytes"] is None, by
assert abs(by[0]["tok_s"] - 10e9 / d["bytes_per_token"]) < 1e-6 * by[0]["tok_s"], by
a = " | ".join(d["assumptions"])
for key in ("block_count", "embedding_length", "attention.head_count", "context_length"):
    assert "gpt2x.%s absent" % key in a, (key, a)
PY

# --- wording: the compute rate as given; an ambiguous abbreviation ------------
"$TOKMETER" ceiling --preset tiny --bandwidth 1GB/s --compute 14TFLOPS >"$tmp/w.txt"
grep -q "compute 14 TFLOPS (given)" "$tmp/w.txt" || fail "compute as given: $(grep machine "$tmp/w.txt")"
expect_usage "ambiguous --m" --m tiny
grep -q "option '--m' is ambiguous: it abbreviates --memory, --measured-decode, --measured-prefill" \
  "$tmp/err" || fail "ambiguous option: $(cat "$tmp/err")"
expect_usage "--json=1" --preset tiny --bandwidth 1GB/s --json=1
grep -q "option '--json' takes no value" "$tmp/err" || fail "--json=1: $(cat "$tmp/err")"

# --- a fixture against an independent sum of its tensor table ---------------
cat >"$tmp/gguf_sum.py" <<'PY'
import struct, sys
# bytes per block, elements per block of the types the fixtures hold
T = {0: (4, 1), 1: (2, 1), 2: (18, 32), 3: (20, 32), 6: (22, 32), 7: (24, 32), 8: (34, 32),
     12: (144, 256), 13: (176, 256), 14: (210, 256), 30: (2, 1)}
f = open(sys.argv[1], 'rb'); b = f.read(); o = 0
def rd(fmt):
    global o; v = struct.unpack_from('<' + fmt, b, o); o += struct.calcsize('<' + fmt); return v[0]
def rstr():
    global o; n = rd('Q'); s = b[o:o+n]; o += n; return s.decode()
SZ = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
def skip(t):
    global o
    if t == 8: rstr()
    elif t == 9:
        et = rd('I'); n = rd('Q')
        for _ in range(n): skip(et)
    else: o += SZ[t]
assert rd('I') == 0x46554747; rd('I'); nt = rd('Q'); nkv = rd('Q')
for _ in range(nkv): rstr(); skip(rd('I'))
tot = 0; el = 0; embd = None; has_out = False
for _ in range(nt):
    name = rstr(); nd = rd('I'); ne = [rd('Q') for _ in range(nd)]; ty = rd('I'); rd('Q')
    n = 1
    for x in ne: n *= x
    bs, be = T[ty]; size = n // be * bs
    tot += size; el += n
    if name == 'token_embd.weight': embd = (size, ne[0] // be * bs)
    if name == 'output.weight': has_out = True
per_token = tot if not has_out else tot - embd[0] + embd[1]
print(tot, el, per_token)
PY
read -r tot elems per_token < <(python3 "$tmp/gguf_sum.py" "$G/tiny-llama-Q4_0.gguf")
"$TOKMETER" ceiling "$G/tiny-llama-Q4_0.gguf" --bandwidth 32.9GB/s --compute 1TFLOPS --json \
  >"$tmp/j.json" || fail "ceiling --json on tiny-llama"
python3 - "$tmp/j.json" "$tot" "$elems" "$per_token" <<'PY' || fail "tiny-llama JSON values"
import json, sys
d = json.load(open(sys.argv[1])); tot, el, bpt = map(int, sys.argv[2:5])
keys = ["bytes_per_token", "params_total", "params_active", "kv_bytes_per_token",
        "decode_ceiling_tok_s", "prefill_ceiling_tok_s", "arch", "file", "bytes_total",
        "flops_per_token", "decode_ceiling_by_depth", "read_bandwidth_bytes_s",
        "bandwidth_threads", "compute_ops_s", "compute_path", "context_fits_tokens",
        "assumptions", "verdicts"]
missing = [k for k in keys if k not in d]
assert not missing, missing
assert d["arch"] == "llama", d["arch"]
assert d["bytes_total"] == tot, (d["bytes_total"], tot)
assert d["params_total"] == el, (d["params_total"], el)
assert d["bytes_per_token"] == bpt, (d["bytes_per_token"], bpt)
assert abs(d["decode_ceiling_tok_s"] - 32.9e9 / bpt) < 1e-6 * 32.9e9 / bpt, d["decode_ceiling_tok_s"]
assert d["kv_bytes_per_token"] == 4 * 2 * 64 * 2, d["kv_bytes_per_token"]  # 4 layers, 2 kv heads, F16
by = {e["depth"]: e for e in d["decode_ceiling_by_depth"]}
assert sorted(by) == [0, 4096, 32768], sorted(by)
assert by[4096]["bytes_per_token"] == bpt + 4096 * 1024, by[4096]
assert d["prefill_ceiling_tok_s"] is not None and d["prefill_ceiling_tok_s"] > 0
assert abs(d["prefill_ceiling_tok_s"] * d["prefill_flops_per_token"] - 1e12) < 1e3
assert d["bandwidth_threads"] is None and d["compute_path"] == "given"
assert d["verdicts"] == [] and isinstance(d["assumptions"], list)
PY
# The human line says the same number.
want=$(python3 -c "v=32.9e9/$per_token; print('%.0f' % v if v >= 100 else '%.1f' % v)")
"$TOKMETER" ceiling "$G/tiny-llama-Q4_0.gguf" --bandwidth 32.9GB/s >"$tmp/h.txt"
grep -Eq "depth +0: +$want tok/s" "$tmp/h.txt" || fail "human output lacks '$want tok/s': $(cat "$tmp/h.txt")"

# Verdicts from a measured rate.
"$TOKMETER" ceiling "$G/tiny-llama-Q4_0.gguf" --bandwidth 32.9GB/s --json \
  --measured-decode "$(python3 -c "print(32.9e9/$per_token*1.5)")" >"$tmp/v.json"
python3 -c "
import json; d=json.load(open('$tmp/v.json')); v=d['verdicts'][0]
assert v['phase']=='decode' and v['verdict']=='above-ceiling' and abs(v['percent']-150)<0.01, v
assert 'mixture-of-experts' in v['message'], v" || fail "above-ceiling verdict"
"$TOKMETER" ceiling "$G/tiny-llama-Q4_0.gguf" --bandwidth 32.9GB/s --json \
  --measured-decode "$(python3 -c "print(32.9e9/$per_token*0.8)")" >"$tmp/v.json"
python3 -c "
import json; d=json.load(open('$tmp/v.json')); assert d['verdicts'][0]['verdict']=='well-tuned'" \
  || fail "well-tuned verdict"

# --- MoE: the fixture and the preset ----------------------------------------
"$TOKMETER" ceiling "$G/tiny-qwen3moe-Q8_0.gguf" --bandwidth 100GB/s --json >"$tmp/m.json"
python3 - "$tmp/m.json" <<'PY' || fail "tiny-qwen3moe active params"
import json, sys
d = json.load(open(sys.argv[1]))
exps = 2 * 3 * 128 * 64 * 8   # 2 layers x gate/up/down x 128 x 64 x 8 experts
assert d["params_active"] == d["params_total"] - exps * 6 // 8, (d["params_active"], d["params_total"])
PY
"$TOKMETER" ceiling --preset qwen3-30b-a3b --type Q4_K_M --bandwidth 100GB/s --json >"$tmp/p.json" \
  || fail "preset qwen3-30b-a3b"
python3 - "$tmp/p.json" <<'PY' || fail "qwen3-30b-a3b preset values"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["params_active"] < 0.15 * d["params_total"], (d["params_active"], d["params_total"])
assert 30.0e9 < d["params_total"] < 31.0e9, d["params_total"]
dense = 100e9 / d["bytes_total"]
assert d["decode_ceiling_tok_s"] > 5 * dense, (d["decode_ceiling_tok_s"], dense)
assert d["type"] == "Q4_K_M" and d["prefill_ceiling_tok_s"] is None
PY

# A file's type is its general.file_type, not the tensor type holding the most
# bytes (this Q4_0 file's tied embedding is Q8_0 and holds the most).
"$TOKMETER" ceiling "$TOKMETER_FIXTURES/gguf/tiny-llama-Q4_0.gguf" --bandwidth 10GB/s --json \
  >"$tmp/ft.json" || fail "ceiling tiny-llama-Q4_0 --json"
python3 -c "import json; d=json.load(open('$tmp/ft.json')); assert d['type'] == 'Q4_0', d['type']" \
  || fail "file type of tiny-llama-Q4_0: $(grep -o '"type":[^,]*' "$tmp/ft.json")"

# --- the napkin -------------------------------------------------------------
"$TOKMETER" ceiling --size 15GB --bandwidth 273GB/s >"$tmp/n.txt"
grep -q "decode ceiling: 18.2 tok/s" "$tmp/n.txt" || fail "napkin: $(cat "$tmp/n.txt")"
"$TOKMETER" ceiling --size 15GB --bandwidth 273GB/s --active-fraction 0.1 --json >"$tmp/n.json"
python3 -c "
import json; d=json.load(open('$tmp/n.json'))
assert abs(d['decode_ceiling_tok_s']-182)<1e-9 and abs(d['dense_ceiling_tok_s']-18.2)<1e-9, d" \
  || fail "napkin --active-fraction"

# results that are not finite numbers are refused, not printed as "inf"
expect_usage "inf ceiling" --size 1B --active-fraction 1e-300 --bandwidth 1000GB/s
grep -q "decode ceiling is not a finite number: .*--size x --active-fraction" "$tmp/err" \
  || fail "inf ceiling: $(cat "$tmp/err")"
expect_usage "bandwidth overflow" --preset tiny --bandwidth 1e308PB/s
grep -q "too large" "$tmp/err" || fail "bandwidth overflow: $(cat "$tmp/err")"

# a bare number is the base unit, as for every flag (--help says so): 100 B/s,
# and the ceiling it gives is shown as a figure, not "0.00"
grep -q "a bare" "$tmp/help" && grep -q -- "--bandwidth 100 is" "$tmp/help" \
  || fail "--help does not say what a bare number is"
"$TOKMETER" ceiling "$G/tiny-llama-Q8_0.gguf" --bandwidth 100 >"$tmp/b.txt"
grep -q "read bandwidth 100 B/s (given)" "$tmp/b.txt" || fail "bare bandwidth: $(cat "$tmp/b.txt")"
grep -Eq "depth +0: +[0-9.]+e-05 tok/s" "$tmp/b.txt" || fail "bare bandwidth figure: $(cat "$tmp/b.txt")"
grep -q " 0.00 tok/s" "$tmp/b.txt" && fail "bare bandwidth: 0.00 tok/s: $(cat "$tmp/b.txt")"

# no context fits: the message names what does not fit (the 1 GiB overhead, not
# the 5 MiB of weights)
"$TOKMETER" ceiling "$G/tiny-llama-Q8_0.gguf" --bandwidth 1GB/s --memory 1GB >"$tmp/f.txt"
grep -q "none: the weights (.*) fit, but not with the 1 GiB overhead" "$tmp/f.txt" \
  || fail "overhead does not fit: $(cat "$tmp/f.txt")"
"$TOKMETER" ceiling "$G/tiny-llama-Q8_0.gguf" --bandwidth 1GB/s --memory 1MB >"$tmp/f.txt"
grep -q "none: the weights (.*) do not fit" "$tmp/f.txt" || fail "weights do not fit: $(cat "$tmp/f.txt")"

# --- this machine's probe (quick) --------------------------------------------
"$TOKMETER" ceiling "$G/tiny-llama-Q8_0.gguf" --json --memory 1GiB --overhead 0 >"$tmp/q.json" \
  || fail "ceiling with the probe"
python3 - "$tmp/q.json" <<'PY' || fail "probe-based JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["bandwidth_source"] == "probe" and d["bandwidth_threads"] >= 1, d
assert d["read_bandwidth_bytes_s"] > 0 and d["compute_ops_s"] > 0
assert d["compute_path"].startswith(("int8", "f32")), d["compute_path"]
assert abs(d["decode_ceiling_tok_s"] - d["read_bandwidth_bytes_s"] / d["bytes_per_token"]) < 1e-6 * d["decode_ceiling_tok_s"]
# 1 GiB, no overhead: (1 GiB - weights) / 1024 B per token, capped at context_length
want = min((2**30 - d["bytes_total"]) // 1024, d["context_length"])
assert d["context_fits_tokens"] == want, (d["context_fits_tokens"], want)
PY
echo "ok"
