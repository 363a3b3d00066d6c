#!/usr/bin/env bash
# test_synth: `tokmeter synth` end to end: writes tiny models, refuses to
# overwrite without --force (exit 2), rejects bad flags / presets / types /
# shapes with exit 2 and one line, --list-presets and --help on stdout.
set -euo pipefail
: "${TOKMETER:?TOKMETER must point at the binary}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export TOKMETER_CACHE_DIR="$dir/cache"
fail() { echo "test_synth: FAIL: $*" >&2; exit 1; }

expect_exit() { # expected_code, then the command
  local want=$1; shift
  set +e
  "$@" >"$dir/out" 2>"$dir/err"
  local got=$?
  set -e
  [ "$got" = "$want" ] || fail "'$*' exited $got, expected $want (stderr: $(cat "$dir/err"))"
}

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

# help and presets on stdout, exit 0
expect_exit 0 "$TOKMETER" synth --help
grep -q -- "--vocab-from" "$dir/out" || fail "--help lacks --vocab-from"
expect_exit 0 "$TOKMETER" synth --list-presets
grep -q "^qwen3-0.6b " "$dir/out" || fail "--list-presets lacks qwen3-0.6b"
echo "test_synth: ok"
