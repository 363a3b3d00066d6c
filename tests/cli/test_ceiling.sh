#!/usr/bin/env bash
# test_ceiling: `tokmeter ceiling` end to end. Expected numbers are computed here
# independently (a small GGUF tensor-table reader in python3), never copied from
# the tool's output.
set -euo pipefail
: "${TOKMETER:?binary path}" "${TOKMETER_FIXTURES:?fixtures dir}"
. "$(dirname "$0")/lib.sh"
export TOKMETER_PROBE_QUICK=1
G="$TOKMETER_FIXTURES/gguf"

# --- help and usage errors ------------------------------------------------
"$TOKMETER" ceiling --help >"$dir/help" || fail "--help exit code"
for flag in --preset --type --size --active-fraction --bandwidth --compute --threads \
            --memory --overhead --depth --prompt-tokens --kv-type --measured-decode \
            --measured-prefill --json --help; do
  grep -q -- "$flag" "$dir/help" || fail "--help does not list $flag"
done
expect_usage() { # expect_usage "what" args... : exit 2, and the message on stderr
  local what=$1; shift
  set +e; "$TOKMETER" ceiling "$@" >"$dir/out" 2>"$dir/err"; local rc=$?; set -e
  [ "$rc" = 2 ] || fail "$what: exit $rc, want 2 ($(cat "$dir/err"))"
  [ -s "$dir/err" ] || fail "$what: nothing on stderr"
}
expect_usage "unknown flag" "$G/tiny-llama-Q4_0.gguf" --bogus
expect_usage "no model" --bandwidth 1GB/s
expect_usage "two models" "$G/tiny-llama-Q4_0.gguf" --size 1GB --bandwidth 1GB/s
expect_usage "unknown preset" --preset nope --bandwidth 1GB/s
grep -q "qwen3-30b-a3b" "$dir/err" || fail "unknown preset: no list of presets"
# zero is not "not given": a rate or size of 0 is bad usage
expect_usage "bandwidth 0" --preset tiny --bandwidth 0
expect_usage "compute 0" --preset tiny --bandwidth 1GB/s --compute 0
expect_usage "memory 0" --preset tiny --bandwidth 1GB/s --memory 0
expect_usage "measured decode 0" --preset tiny --bandwidth 1GB/s --measured-decode 0
expect_usage "measured prefill 0" --preset tiny --bandwidth 1GB/s --measured-prefill 0
expect_usage "size beyond 1 EB" --size 99999999999999999999999GB --bandwidth 1GB/s
expect_usage "active fraction with a file" "$G/tiny-llama-Q4_0.gguf" --active-fraction 0.5 \
  --bandwidth 1GB/s
grep -q -- "--active-fraction goes with --size" "$dir/err" || fail "active fraction: $(cat "$dir/err")"
for d in 1,,2 ,1 1,; do expect_usage "depth list '$d'" --preset tiny --bandwidth 1GB/s -d "$d"; done
expect_usage "unknown type" --preset qwen3-0.6b --type Q3_XYZ --bandwidth 1GB/s
grep -q "Q4_K_M" "$dir/err" || fail "unknown type: no list of types"
expect_usage "unknown kv type" "$G/tiny-llama-Q4_0.gguf" --kv-type Q2_K --bandwidth 1GB/s
grep -q "Q8_0" "$dir/err" || fail "unknown kv type: no list"
expect_usage "unknown unit" --size 15GB --bandwidth 273furlongs
grep -q "273GB/s" "$dir/err" || fail "unknown unit: no accepted forms"
expect_usage "missing file" "$dir/does-not-exist.gguf" --bandwidth 1GB/s
expect_usage "vocab-only file" "$G/ggml-vocab-qwen2.gguf" --bandwidth 1GB/s
# a FIFO: opening it for reading used to block forever (timeout: a hang fails)
mkfifo "$dir/fifo.gguf"
set +e; timeout 20 "$TOKMETER" ceiling "$dir/fifo.gguf" --bandwidth 1GB/s 2>"$dir/err"; rc=$?; set -e
[ "$rc" = 2 ] || fail "FIFO: exit $rc, want 2"
grep -q "not a regular file" "$dir/err" || fail "FIFO: $(cat "$dir/err")"

# --- corrupt files: one line on stderr, exit 2 ------------------------------
printf 'GGUX\3\0\0\0' >"$dir/badmagic.gguf"
: >"$dir/empty.gguf"
corrupt=("$dir/badmagic.gguf" "$dir/empty.gguf")
for n in 3 24 100 1000 5000 200000 5525000; do
  head -c "$n" "$G/tiny-llama-Q4_0.gguf" >"$dir/trunc-$n.gguf"
  corrupt+=("$dir/trunc-$n.gguf")
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
patch_u32 "$q3" "$dir/bc0.gguf" qwen3.block_count 0
patch_u32 "$q3" "$dir/ctx0.gguf" qwen3.context_length 0
patch_u32 "$q3" "$dir/hkv0.gguf" qwen3.attention.head_count_kv 0
patch_u32 "$q3" "$dir/hc0.gguf" qwen3.attention.head_count 0
patch_u32 "$q3" "$dir/hkv3.gguf" qwen3.attention.head_count_kv 3
patch_u32 "$q3" "$dir/klen0.gguf" qwen3.attention.key_length 0
# block_count beyond the blocks that have tensors (KV for layers that do not
# exist), a key_length whose sum with value_length wrapped in 32 bits
patch_u32 "$q3" "$dir/bc5.gguf" qwen3.block_count 5
patch_u32 "$q3" "$dir/bc65536.gguf" qwen3.block_count 65536
patch_u32 "$q3" "$dir/klenmax.gguf" qwen3.attention.key_length 4294967295
corrupt+=("$dir/bc0.gguf" "$dir/ctx0.gguf" "$dir/hkv0.gguf" "$dir/hc0.gguf" "$dir/hkv3.gguf"
          "$dir/klen0.gguf" "$dir/bc5.gguf" "$dir/bc65536.gguf" "$dir/klenmax.gguf")
"$TOKMETER" ceiling "$q3" --bandwidth 10GB/s >/dev/null || fail "the unpatched file must pass"
for f in "${corrupt[@]}"; do
  set +e; "$TOKMETER" ceiling "$f" --bandwidth 10GB/s >"$dir/out" 2>"$dir/err"; rc=$?; set -e
  [ "$rc" = 2 ] || fail "$(basename "$f"): exit $rc, want 2"
  lines=$(wc -l <"$dir/err")
  [ "$lines" = 1 ] || fail "$(basename "$f"): $lines lines on stderr, want 1: $(cat "$dir/err")"
  [ ! -s "$dir/out" ] || fail "$(basename "$f"): output on stdout"
  case $(basename "$f") in  # the message names the key
    bc5.gguf|bc65536.gguf) grep -q "qwen3.block_count is .* but no tensor belongs to block 4" "$dir/err" ;;
    klenmax.gguf) grep -q "'qwen3.attention.key_length' = 4294967295 is out of range" "$dir/err" ;;
  esac || fail "$(basename "$f"): $(cat "$dir/err")"
done

# --- names that are not UTF-8 ------------------------------------------------
# An architecture name with a byte 0xff is refused (it emptied the JSON of its
# arch key and assumptions, and went raw into the text output).
python3 - "$G/tiny-llama-Q8_0.gguf" "$dir/arch-ff.gguf" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
key = b"general.architecture"
at = d.find(struct.pack("<Q", len(key)) + key) + 8 + len(key)
assert struct.unpack_from("<IQ", d, at) == (8, 5) and d[at + 12:at + 17] == b"llama"
d[at + 16] = 0xFF  # "llam\xff"
open(sys.argv[2], "wb").write(d)
PY
set +e; "$TOKMETER" ceiling "$dir/arch-ff.gguf" --bandwidth 1GB/s --json >"$dir/out" 2>"$dir/err"; rc=$?; set -e
[ "$rc" = 2 ] && [ ! -s "$dir/out" ] || fail "arch 0xff: exit $rc, $(cat "$dir/out")"
grep -q "general.architecture' has byte 0xff at position 4" "$dir/err" || fail "arch 0xff: $(cat "$dir/err")"
LC_ALL=C grep -q $'\xff' "$dir/err" && fail "arch 0xff: the raw byte is in the message"
# A file name that is not UTF-8: --json keeps its keys and stays valid JSON.
cp "$G/tiny-llama-Q8_0.gguf" "$dir/m"$'\xff'".gguf"
"$TOKMETER" ceiling "$dir/m"$'\xff'".gguf" --bandwidth 1GB/s --json >"$dir/ff.json" \
  || fail "ceiling --json on a non-UTF-8 file name"
python3 - "$dir/ff.json" <<'PY' || fail "non-UTF-8 file name: JSON $(cat "$dir/ff.json")"
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
python3 - "$G/tiny-llama-Q4_0.gguf" "$dir/gpt2x.gguf" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
key = b"general.architecture"
at = d.find(struct.pack("<Q", len(key)) + key) + 8 + len(key)
assert struct.unpack_from("<IQ", d, at) == (8, 5) and d[at + 12:at + 17] == b"llama"
d[at + 12:at + 17] = b"gpt2x"
open(sys.argv[2], "wb").write(d)
PY
"$TOKMETER" ceiling "$dir/gpt2x.gguf" --bandwidth 10GB/s --compute 1TFLOPS --memory 8GiB \
  -d 0,4096 >"$dir/u.txt" || fail "unknown architecture: exit code"
for want in "KV cache: unknown" "context that fits in 8 GiB: unknown" \
            "depth    4096:  unknown" "prefill ceiling (prompt of 512): unknown" \
            "gpt2x.block_count absent" "gpt2x.embedding_length absent" \
            "gpt2x.attention.head_count absent" "gpt2x.context_length absent"; do
  grep -qF -- "$want" "$dir/u.txt" || fail "unknown architecture: no '$want': $(cat "$dir/u.txt")"
done
for bad in "0 B per token" "unbounded" "0 attention layers"; do
  grep -qF -- "$bad" "$dir/u.txt" && fail "unknown architecture: '$bad': $(cat "$dir/u.txt")"
done
"$TOKMETER" ceiling "$dir/gpt2x.gguf" --bandwidth 10GB/s --compute 1TFLOPS --memory 8GiB \
  -d 0,4096 --json >"$dir/u.json" || fail "unknown architecture --json"
python3 - "$dir/u.json" "$dir/gpt2x.gguf" <<'PY' || fail "unknown architecture JSON: $(cat "$dir/u.json")"
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
"$TOKMETER" ceiling --preset tiny --bandwidth 1GB/s --compute 14TFLOPS >"$dir/w.txt"
grep -q "compute 14 TFLOPS (given)" "$dir/w.txt" || fail "compute as given: $(grep machine "$dir/w.txt")"
expect_usage "ambiguous --m" --m tiny
grep -q "option '--m' is ambiguous: it abbreviates --memory, --measured-decode, --measured-prefill" \
  "$dir/err" || fail "ambiguous option: $(cat "$dir/err")"
expect_usage "--json=1" --preset tiny --bandwidth 1GB/s --json=1
grep -q "option '--json' takes no value" "$dir/err" || fail "--json=1: $(cat "$dir/err")"

# --- a fixture against an independent sum of its tensor table ---------------
cat >"$dir/gguf_sum.py" <<'PY'
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
read -r tot elems per_token < <(python3 "$dir/gguf_sum.py" "$G/tiny-llama-Q4_0.gguf")
"$TOKMETER" ceiling "$G/tiny-llama-Q4_0.gguf" --bandwidth 32.9GB/s --compute 1TFLOPS --json \
  >"$dir/j.json" || fail "ceiling --json on tiny-llama"
python3 - "$dir/j.json" "$tot" "$elems" "$per_token" <<'PY' || fail "tiny-llama JSON values"
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
"$TOKMETER" ceiling "$G/tiny-llama-Q4_0.gguf" --bandwidth 32.9GB/s >"$dir/h.txt"
grep -Eq "depth +0: +$want tok/s" "$dir/h.txt" || fail "human output lacks '$want tok/s': $(cat "$dir/h.txt")"

# Verdicts from a measured rate.
"$TOKMETER" ceiling "$G/tiny-llama-Q4_0.gguf" --bandwidth 32.9GB/s --json \
  --measured-decode "$(python3 -c "print(32.9e9/$per_token*1.5)")" >"$dir/v.json"
python3 -c "
import json; d=json.load(open('$dir/v.json')); v=d['verdicts'][0]
assert v['phase']=='decode' and v['verdict']=='above-ceiling' and abs(v['percent']-150)<0.01, v
assert 'mixture-of-experts' in v['message'], v" || fail "above-ceiling verdict"
"$TOKMETER" ceiling "$G/tiny-llama-Q4_0.gguf" --bandwidth 32.9GB/s --json \
  --measured-decode "$(python3 -c "print(32.9e9/$per_token*0.8)")" >"$dir/v.json"
python3 -c "
import json; d=json.load(open('$dir/v.json')); assert d['verdicts'][0]['verdict']=='well-tuned'" \
  || fail "well-tuned verdict"

# --- MoE: the fixture and the preset ----------------------------------------
"$TOKMETER" ceiling "$G/tiny-qwen3moe-Q8_0.gguf" --bandwidth 100GB/s --json >"$dir/m.json"
python3 - "$dir/m.json" <<'PY' || fail "tiny-qwen3moe active params"
import json, sys
d = json.load(open(sys.argv[1]))
exps = 2 * 3 * 128 * 64 * 8   # 2 layers x gate/up/down x 128 x 64 x 8 experts
assert d["params_active"] == d["params_total"] - exps * 6 // 8, (d["params_active"], d["params_total"])
PY
"$TOKMETER" ceiling --preset qwen3-30b-a3b --type Q4_K_M --bandwidth 100GB/s --json >"$dir/p.json" \
  || fail "preset qwen3-30b-a3b"
python3 - "$dir/p.json" <<'PY' || fail "qwen3-30b-a3b preset values"
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
  >"$dir/ft.json" || fail "ceiling tiny-llama-Q4_0 --json"
python3 -c "import json; d=json.load(open('$dir/ft.json')); assert d['type'] == 'Q4_0', d['type']" \
  || fail "file type of tiny-llama-Q4_0: $(grep -o '"type":[^,]*' "$dir/ft.json")"

# --- the napkin -------------------------------------------------------------
"$TOKMETER" ceiling --size 15GB --bandwidth 273GB/s >"$dir/n.txt"
grep -q "decode ceiling: 18.2 tok/s" "$dir/n.txt" || fail "napkin: $(cat "$dir/n.txt")"
"$TOKMETER" ceiling --size 15GB --bandwidth 273GB/s --active-fraction 0.1 --json >"$dir/n.json"
python3 -c "
import json; d=json.load(open('$dir/n.json'))
assert abs(d['decode_ceiling_tok_s']-182)<1e-9 and abs(d['dense_ceiling_tok_s']-18.2)<1e-9, d" \
  || fail "napkin --active-fraction"

# results that are not finite numbers are refused, not printed as "inf"
expect_usage "inf ceiling" --size 1MB --active-fraction 1e-320 --bandwidth 1000GB/s
grep -q "decode ceiling is not a finite number: .*--size x --active-fraction" "$dir/err" \
  || fail "inf ceiling: $(cat "$dir/err")"
# a size below any model is a missing unit, not a 703-million tok/s ceiling
expect_usage "size without unit" --size 15 --bandwidth 273GB/s
grep -q -- "--size 15 is 15 bytes.*did you mean 15GB?" "$dir/err" || fail "--size 15: $(cat "$dir/err")"
expect_usage "size below a model" --size 15kB --bandwidth 273GB/s
grep -q -- "--size 15kB: smaller than any language model" "$dir/err" || fail "--size 15kB: $(cat "$dir/err")"
expect_usage "bandwidth overflow" --preset tiny --bandwidth 1e308PB/s
grep -q "too large" "$dir/err" || fail "bandwidth overflow: $(cat "$dir/err")"

# a bare number is the base unit, as for every flag (--help says so): 100 B/s,
# and the ceiling it gives is shown as a figure, not "0.00"
grep -q "a bare" "$dir/help" && grep -q -- "--bandwidth 100 is" "$dir/help" \
  || fail "--help does not say what a bare number is"
"$TOKMETER" ceiling "$G/tiny-llama-Q8_0.gguf" --bandwidth 100 >"$dir/b.txt"
grep -q "read bandwidth 100 B/s (given)" "$dir/b.txt" || fail "bare bandwidth: $(cat "$dir/b.txt")"
grep -Eq "depth +0: +[0-9.]+e-05 tok/s" "$dir/b.txt" || fail "bare bandwidth figure: $(cat "$dir/b.txt")"
grep -q " 0.00 tok/s" "$dir/b.txt" && fail "bare bandwidth: 0.00 tok/s: $(cat "$dir/b.txt")"

# no context fits: the message names what does not fit (the 1 GiB overhead, not
# the 5 MiB of weights)
"$TOKMETER" ceiling "$G/tiny-llama-Q8_0.gguf" --bandwidth 1GB/s --memory 1GB >"$dir/f.txt"
grep -q "none: the weights (.*) fit, but not with the 1 GiB overhead" "$dir/f.txt" \
  || fail "overhead does not fit: $(cat "$dir/f.txt")"
"$TOKMETER" ceiling "$G/tiny-llama-Q8_0.gguf" --bandwidth 1GB/s --memory 1MB >"$dir/f.txt"
grep -q "none: the weights (.*) do not fit" "$dir/f.txt" || fail "weights do not fit: $(cat "$dir/f.txt")"

# --- this machine's probe (quick) --------------------------------------------
"$TOKMETER" ceiling "$G/tiny-llama-Q8_0.gguf" --json --memory 1GiB --overhead 0 >"$dir/q.json" \
  || fail "ceiling with the probe"
python3 - "$dir/q.json" <<'PY' || fail "probe-based JSON"
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
# The probe of three machine classes (tests/cli/craft_probe.py: an AVX2-only
# CPU with no int8 path, AVX-512 VNNI, and AVX-512 VNNI with AMX int8 tiles),
# crafted into the cache so this runs the same on any CPU. Each: the vector
# path's prefill ceiling from the class's rate, the tiles' second line only
# with tiles, never "not known" beside a ceiling; and with --compute (the
# README's example) the given rate wins on every class.
CRAFT="$(dirname "$0")/craft_probe.py"
for cls in avx2 avx512_vnni amx; do
  python3 "$CRAFT" "$TOKMETER_CACHE_DIR" "$cls" >"$dir/class.json" || fail "crafting a $cls probe"
  for given in probe 14TFLOPS; do
    args=(-t 1)
    [ "$given" = probe ] || args+=(--compute "$given")
    "$TOKMETER" ceiling "$G/tiny-llama-Q8_0.gguf" "${args[@]}" >"$dir/t.txt" \
      || fail "ceiling, $cls probe, compute $given"
    "$TOKMETER" ceiling "$G/tiny-llama-Q8_0.gguf" "${args[@]}" --json >"$dir/t.json" \
      || fail "ceiling --json, $cls probe, compute $given"
    grep -q "not known" "$dir/t.txt" && fail "$cls probe, compute $given: 'not known': $(cat "$dir/t.txt")"
    grep -qE "^prefill ceiling \(prompt of 512\): [0-9.]+[kM]? tok/s \(" "$dir/t.txt" \
      || fail "$cls probe, compute $given: no prefill ceiling line: $(cat "$dir/t.txt")"
    python3 - "$dir/t.json" "$dir/class.json" "$given" <<'PY' || fail "ceiling JSON, $cls probe, compute $given (see above)"
import json, math, sys
d = json.load(open(sys.argv[1]))
c = json.load(open(sys.argv[2]))
given = sys.argv[3]
if given != "probe":
    # the given rate, whatever the machine has; no tile line for a given rate
    assert d["compute_ops_s"] == 14e12, d["compute_ops_s"]
    assert d["prefill_ceiling_int8_tile_tok_s"] is None, d
elif c["int8_per_thread"] is None:
    # a Q8_0 file on a machine with no int8 dot products: the f32 FMA rate
    assert d["compute_path"].startswith("f32"), d["compute_path"]
    assert d["compute_ops_s"] == c["f32_per_thread"], (d["compute_ops_s"], c)
else:
    assert d["compute_path"].startswith("int8"), d["compute_path"]
    assert d["compute_ops_s"] == c["int8_per_thread"], (d["compute_ops_s"], c)
assert d["prefill_ceiling_tok_s"] > 0, d
# the ceiling is the rate over the FLOPs per prompt token, nothing else
flops = d["compute_ops_s"] / d["prefill_ceiling_tok_s"]
assert flops > 0 and math.isfinite(flops), flops
if given == "probe" and c["tiles_per_thread"]:
    assert d["compute_int8_tile_ops_s"] == c["tiles_per_thread"], d["compute_int8_tile_ops_s"]
    ratio = d["prefill_ceiling_int8_tile_tok_s"] / d["prefill_ceiling_tok_s"]
    assert math.isclose(ratio, d["compute_int8_tile_ops_s"] / d["compute_ops_s"], rel_tol=1e-9), ratio
elif given == "probe":
    assert d["prefill_ceiling_int8_tile_tok_s"] is None and d["compute_int8_tile_ops_s"] is None, d
PY
    if [ "$cls" = amx ] && [ "$given" = probe ]; then
      grep -qE "^prefill ceiling on the int8 tiles \(amx_int8, 6\.5(0)? TOPS\): [0-9.]+[kM]? tok/s, for a runtime whose kernels use them" \
        "$dir/t.txt" || fail "no tile ceiling line on the amx probe: $(cat "$dir/t.txt")"
    else
      grep -q "int8 tiles" "$dir/t.txt" && fail "a tile ceiling on the $cls probe, compute $given: $(cat "$dir/t.txt")"
    fi
  done
done
# --batch: the aggregate decode ceiling of B streams (model/ceiling.h
# ceiling_batch): dense weights read once per step, the memory bound turning
# compute bound where B x FLOPs / compute passes bytes / bandwidth; a
# mixture-of-experts model's experts as their expected union; no compute
# rate, the memory bound alone; --size has no shape to batch.
expect_exit 0 "$TOKMETER" ceiling --preset qwen3-0.6b --type Q4_0 --bandwidth 40GB/s --compute 2TOPS \
  --batch 1,8,16,64 --json
python3 - "$dir/out" <<'PY' || fail "--batch json (see above)"
import json, sys
d = json.load(open(sys.argv[1]))
b = {e["batch"]: e for e in d["batch"]}
assert set(b) == {1, 8, 16, 64}, b
assert abs(b[1]["aggregate_decode_ceiling_tok_s"] - d["decode_ceiling_tok_s"]) < 1e-6 * d["decode_ceiling_tok_s"], (b[1], d["decode_ceiling_tok_s"])
assert b[8]["bytes_per_step"] == b[1]["bytes_per_step"]          # depth 0: the weights, once
assert abs(b[8]["flops_per_step"] - 8 * b[1]["flops_per_step"]) < 1
assert b[8]["bound"] == "memory" and b[64]["bound"] == "compute", b
assert b[64]["aggregate_decode_ceiling_tok_s"] == 64 * 2e12 / b[64]["flops_per_step"] or \
    abs(b[64]["aggregate_decode_ceiling_tok_s"] - 64 * 2e12 / b[64]["flops_per_step"]) < 1e-6 * b[64]["aggregate_decode_ceiling_tok_s"]
assert 8 < d["batch_turn"] <= 16, d["batch_turn"]
PY
expect_exit 0 "$TOKMETER" ceiling --preset qwen3-30b-a3b --type Q4_K_M --bandwidth 273GB/s --batch 1,64 --json
python3 - "$dir/out" <<'PY' || fail "--batch moe"
import json, sys
d = json.load(open(sys.argv[1]))
one, many = d["batch"]
assert many["bytes_per_step"] > 5 * one["bytes_per_step"], (one, many)  # most experts touched
assert not one["compute_known"] and one["bound"] == "memory" and d["batch_turn"] is None, d["batch"]
PY
expect_exit 0 "$TOKMETER" ceiling --preset qwen3-0.6b --type Q4_0 --bandwidth 40GB/s --batch 1,8
grep -q "B     8: .* memory bound" "$dir/out" || fail "--batch text: $(cat "$dir/out")"
grep -q "no compute rate known: the memory bound alone" "$dir/out" || fail "--batch text: $(cat "$dir/out")"
expect_exit 2 "$TOKMETER" ceiling --size 15GB --bandwidth 1GB/s --batch 2
grep -q "batch needs a model's shape" "$dir/err" || fail "--batch --size: $(cat "$dir/err")"
expect_exit 2 "$TOKMETER" ceiling --preset tiny --bandwidth 1GB/s --batch 0,4
echo "ok"
