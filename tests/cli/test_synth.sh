#!/usr/bin/env bash
# test_synth: `tokmeter synth` end to end: writes tiny models, refuses to
# overwrite without --force (exit 2), rejects bad flags / presets / types /
# shapes with exit 2 and one line, --list-presets and --help on stdout.
set -euo pipefail
: "${TOKMETER:?TOKMETER must point at the binary}"
. "$(dirname "$0")/lib.sh"

# writes a file, prints one summary line naming it
expect_exit 0 "$TOKMETER" synth --preset tiny --type Q4_0 -o "$dir/tiny.gguf"
[ -s "$dir/tiny.gguf" ] || fail "tiny.gguf not written"
grep -q "tiny.gguf: qwen3, .* params, .*Q4_0 x" "$dir/out" || fail "summary line: $(cat "$dir/out")"
[ "$(head -c 4 "$dir/tiny.gguf")" = "GGUF" ] || fail "no GGUF magic"
ls "$dir"/*.tmp.* >/dev/null 2>&1 && fail "temp file left behind"

# deterministic: same seed, same bytes (different thread count); other seed differs
expect_exit 0 "$TOKMETER" synth --preset tiny --type Q4_0 --threads 1 -o "$dir/tiny2.gguf"
cmp -s "$dir/tiny.gguf" "$dir/tiny2.gguf" || fail "same seed gave different files"
expect_exit 0 "$TOKMETER" synth --preset tiny --type Q4_0 --seed 2 -o "$dir/tiny3.gguf"
cmp -s "$dir/tiny.gguf" "$dir/tiny3.gguf" && fail "seeds 1 and 2 gave the same file"

# existing file: exit 2 without --force, replaced with it
expect_exit 2 "$TOKMETER" synth --preset tiny --type Q4_0 -o "$dir/tiny.gguf"
grep -q "already exists" "$dir/err" || fail "no 'already exists' message"
expect_exit 0 "$TOKMETER" synth --preset tiny --type Q8_0 -o "$dir/tiny.gguf" --force
cmp -s "$dir/tiny.gguf" "$dir/tiny2.gguf" && fail "--force did not replace the file"

# never replace what is not a regular file, --force or not (the temp file used to
# be renamed over whatever was there: `-o /dev/full --force` made /dev/full a
# regular file). Tested on a FIFO, a directory, a socket and symbolic links made
# here, never on /dev nodes.
mkfifo "$dir/fifo"
mkdir "$dir/adir"
ln -s "$dir/fifo" "$dir/link-to-fifo"
ln -s "$dir/tiny2.gguf" "$dir/link-to-file"
cp "$dir/tiny2.gguf" "$dir/tiny2.before"
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$dir/sock"
for t in fifo:p adir:d link-to-fifo:l link-to-file:l sock:s; do
  name=${t%%:*} kind=${t##*:}
  for force in --force ""; do
    expect_exit 2 "$TOKMETER" synth --preset tiny -o "$dir/$name" $force
    grep -q "is a .*synth replaces only regular files" "$dir/err" || fail "$name $force: $(cat "$dir/err")"
    [ "$(wc -l <"$dir/err")" = 1 ] || fail "$name $force: more than one line: $(cat "$dir/err")"
    case $kind in
      p) [ -p "$dir/$name" ] || fail "$name $force: the FIFO was replaced" ;;
      d) [ -d "$dir/$name" ] && [ ! -L "$dir/$name" ] || fail "$name $force: the directory was replaced" ;;
      l) [ -L "$dir/$name" ] || fail "$name $force: the symbolic link was replaced" ;;
      s) [ -S "$dir/$name" ] || fail "$name $force: the socket was replaced" ;;
    esac
  done
done
[ -z "$(ls -A "$dir/adir")" ] || fail "something was written into the directory"
ls "$dir"/*.tmp.* >/dev/null 2>&1 && fail "temp file left behind by a refused path"
cmp -s "$dir/tiny2.gguf" "$dir/tiny2.before" || fail "the file behind link-to-file changed"
expect_exit 2 "$TOKMETER" synth --preset tiny -o ""
grep -q -- "--output" "$dir/err" || fail "empty -o: $(cat "$dir/err")"
# a directory that does not exist: the user's input (exit 2), said up front
expect_exit 2 "$TOKMETER" synth --preset tiny -o "$dir/no/such/dir/x.gguf"
grep -q "no directory $dir/no/such/dir" "$dir/err" || fail "missing directory: $(cat "$dir/err")"

# --rope-base / --rms-eps: finite and in range (inf was written into the file)
for v in inf -inf nan 1e999 1e13 0.5 0; do
  expect_exit 2 "$TOKMETER" synth --preset tiny --rope-base "$v" -o "$dir/x.gguf"
  grep -q -- "--rope-base" "$dir/err" || fail "--rope-base $v: $(cat "$dir/err")"
done
for v in inf nan 1e999 2 1e-13 0; do
  expect_exit 2 "$TOKMETER" synth --preset tiny --rms-eps "$v" -o "$dir/x.gguf"
  grep -q -- "--rms-eps" "$dir/err" || fail "--rms-eps $v: $(cat "$dir/err")"
done
[ -e "$dir/x.gguf" ] && fail "a refused --rope-base/--rms-eps wrote x.gguf"
expect_exit 0 "$TOKMETER" synth --preset tiny --rope-base 1e12 --rms-eps 1e-12 -o "$dir/edge.gguf"

# default output name in the current directory
(cd "$dir" && "$TOKMETER" synth --preset tiny-moe --type Q8_0 >/dev/null) || fail "default path"
[ -s "$dir/tiny-moe-Q8_0.gguf" ] || fail "default output tiny-moe-Q8_0.gguf missing"

# shape from flags, flags over a preset, untied
expect_exit 0 "$TOKMETER" synth --arch llama --layers 2 --n-embd 64 --heads 4 --kv-heads 2 \
  --n-ff 128 --vocab 300 --untied --type F16 -o "$dir/flags.gguf"
grep -q "F16 x" "$dir/out" || fail "flags model types: $(cat "$dir/out")"
expect_exit 0 "$TOKMETER" synth --preset tiny --layers 3 --type Q8_0 -o "$dir/l3.gguf"

# --vocab-from a real tokenizer
if [ -n "${TOKMETER_FIXTURES:-}" ] && [ -f "$TOKMETER_FIXTURES/gguf/ggml-vocab-llama-spm.gguf" ]; then
  expect_exit 0 "$TOKMETER" synth --preset tiny --vocab-from "$TOKMETER_FIXTURES/gguf/ggml-vocab-llama-spm.gguf" -o "$dir/voc.gguf"
  expect_exit 2 "$TOKMETER" synth --preset tiny --vocab-from "$dir/l3.gguf" -o "$dir/voc2.gguf"
  grep -q "tokenizer" "$dir/err" || fail "vocab-from without tokenizer: $(cat "$dir/err")"
  # both set the vocabulary size: --vocab was once silently ignored
  expect_exit 2 "$TOKMETER" synth --preset tiny --vocab-from "$TOKMETER_FIXTURES/gguf/ggml-vocab-llama-spm.gguf" --vocab 100 -o "$dir/voc3.gguf"
  grep -q -- "--vocab and --vocab-from" "$dir/err" || fail "--vocab with --vocab-from: $(cat "$dir/err")"
  [ -e "$dir/voc3.gguf" ] && fail "--vocab with --vocab-from wrote a file"
  # a FIFO as --vocab-from: opening it used to block forever (timeout: a hang fails)
  expect_exit 2 timeout 20 "$TOKMETER" synth --preset tiny --vocab-from "$dir/fifo" -o "$dir/voc4.gguf"
  grep -q "not a regular file" "$dir/err" || fail "--vocab-from FIFO: $(cat "$dir/err")"
fi

# bad usage: exit 2 with a message
expect_exit 2 "$TOKMETER" synth --preset no-such-model -o "$dir/x.gguf"
grep -q "unknown preset 'no-such-model'" "$dir/err" || fail "unknown preset message"
expect_exit 2 "$TOKMETER" synth --preset tiny --type Q3_K -o "$dir/x.gguf"
grep -q "unknown --type" "$dir/err" || fail "unknown type message"
expect_exit 2 "$TOKMETER" synth --preset tiny --bogus-flag
expect_exit 2 "$TOKMETER" synth --preset tiny --layers zero
expect_exit 2 "$TOKMETER" synth --arch gpt5 --layers 2 --n-embd 64 --heads 4 --n-ff 128 --vocab 100 -o "$dir/x.gguf"
expect_exit 2 "$TOKMETER" synth --preset tiny --kv-heads 3 -o "$dir/x.gguf"
expect_exit 2 "$TOKMETER" synth --layers 2 -o "$dir/x.gguf"
expect_exit 2 "$TOKMETER" synth --preset tiny --n-embd 48 --head-dim 12 --type Q4_0 -o "$dir/x.gguf"
grep -q "block size" "$dir/err" || fail "row length message: $(cat "$dir/err")"
[ -e "$dir/x.gguf" ] && fail "a failed run left x.gguf"
# shapes the engine cannot run are refused before writing, with a message about
# the heads (n_embd 64 / 3 heads was written as head_dim 21, which bench refused)
for args in "--heads 3 --type F32" "--heads 3 --type Q8_0" "--heads 4 --head-dim 5 --type F32" \
            "--heads 4 --head-dim 5 --type Q8_0"; do
  # shellcheck disable=SC2086
  expect_exit 2 "$TOKMETER" synth --arch llama --layers 2 --n-embd 64 --n-ff 128 --vocab 256 \
    $args -o "$dir/x.gguf"
  grep -Eq "heads|head dimension" "$dir/err" || fail "$args: $(cat "$dir/err")"
  [ -e "$dir/x.gguf" ] && fail "$args: a refused shape wrote x.gguf"
done
grep -q "head dimension 5 (4 heads, n_embd 64) must be even" "$dir/err" || fail "odd head: $(cat "$dir/err")"

# help and presets on stdout, exit 0
expect_exit 0 "$TOKMETER" synth --help
grep -q -- "--vocab-from" "$dir/out" || fail "--help lacks --vocab-from"
expect_exit 0 "$TOKMETER" synth --list-presets
grep -q "^qwen3-0.6b " "$dir/out" || fail "--list-presets lacks qwen3-0.6b"
# --tied and --untied together: refused (the last one silently won)
expect_exit 2 "$TOKMETER" synth --preset tiny --tied --untied -o "$dir/tu.gguf"
grep -q -- "--tied and --untied contradict" "$dir/err" || fail "--tied --untied: $(cat "$dir/err")"
[ ! -e "$dir/tu.gguf" ] || fail "--tied --untied: file written"
# --help: a preset's own context, tying, rope base and epsilon are its defaults
# (--help said "--ctx N (default 4096)"; qwen3-0.6b writes 40960)
expect_exit 0 "$TOKMETER" synth --help
grep -q "context_length (default: the preset's, e.g. 40960 for" "$dir/out" || fail "--help: --ctx default"
grep -q "(default: the preset's; tied without one)" "$dir/out" || fail "--help: --tied default"
expect_exit 0 "$TOKMETER" synth --preset qwen3-0.6b --layers 1 --vocab 256 --type Q8_0 -o "$dir/q1.gguf"
expect_exit 0 "$TOKMETER" ceiling "$dir/q1.gguf" --bandwidth 1GB/s --json
python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["context_length"]; sys.exit(0 if c == 40960 else 1)' \
  "$dir/out" || fail "qwen3-0.6b's context_length is not 40960 as --help says"
# --list-presets: what it says of tiny's size is what synth writes ("a few MB"
# was ~140 KiB)
expect_exit 0 "$TOKMETER" synth --list-presets
want=$(grep "^tiny " "$dir/out" | grep -o "[0-9.]*[kM] params") || fail "tiny: no parameter count listed"
expect_exit 0 "$TOKMETER" synth --preset tiny --type F32 -o "$dir/tf.gguf"
grep -q ": qwen3, $want," "$dir/out" || fail "tiny: listed $want, wrote $(cat "$dir/out")"

echo "test_synth: ok"
