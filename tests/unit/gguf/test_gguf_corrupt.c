/* test_gguf_corrupt: the reader against hand-made corrupt files. Each case is
 * built with the byte builder, parsed from memory and opened from a file (the
 * mmap path), and must fail cleanly with a message naming the field (and, where
 * the test knows it, the exact byte offset). Also: every prefix of a small valid
 * file must fail without crashing, and the full file must parse. */
#include <inttypes.h>
#include <stdlib.h>

#include "gguf/ggml_types.h"
#include "gguf/gguf.h"
#include "gguf_test_builder.h"
#include "tm_test.h"

enum { VT_U8 = 0, VT_I8, VT_U16, VT_I16, VT_U32, VT_I32, VT_F32, VT_BOOL, VT_STR, VT_ARR,
       VT_U64, VT_I64, VT_F64 };

/* Parses b from memory and from a file; both must fail with a message holding
 * each non-NULL needle. Frees b. */
static void expect_fail_(int line, struct bb *b, const char *n1, const char *n2) {
  struct tm_err err = {{0}};
  struct gguf_file *f = gguf_parse(b->p, b->n, &err);
  CHECK_MSG(f == NULL, "line %d: parse should fail (needle '%s')", line, n1);
  gguf_close(f);
  CHECK_MSG(err.msg[0] != 0, "line %d: empty error message", line);
  if (n1) CHECK_MSG(strstr(err.msg, n1), "line %d: '%s' should contain '%s'", line, err.msg, n1);
  if (n2) CHECK_MSG(strstr(err.msg, n2), "line %d: '%s' should contain '%s'", line, err.msg, n2);

  const char *path = tm_tmpfile("corrupt.gguf");
  CHECK(bb_write_file(b, path) == 0);
  struct tm_err err2 = {{0}};
  f = gguf_open(path, &err2);
  CHECK_MSG(f == NULL, "line %d: open should fail", line);
  gguf_close(f);
  CHECK_CONTAINS(err2.msg, path);
  if (n1) CHECK_CONTAINS(err2.msg, n1);
  bb_free(b);
}
#define EXPECT_FAIL(b, n1, n2) expect_fail_(__LINE__, (b), (n1), (n2))

static char at_buf[64];
static const char *at(size_t off) {
  snprintf(at_buf, sizeof at_buf, "at byte %zu", off);
  return at_buf;
}

/* ------------------------------------------------------------- header cases */

static void test_empty_file(void) {
  struct bb b = {0};
  struct tm_err err = {{0}};
  CHECK(gguf_parse("", 0, &err) == NULL);
  CHECK_CONTAINS(err.msg, "empty");
  EXPECT_FAIL(&b, "empty", NULL);
}

static void test_bad_magic(void) {
  struct bb b = {0};
  bb_u32(&b, 0x46554746u); /* "FGUF" */
  bb_u32(&b, 3);
  bb_u64(&b, 0);
  bb_u64(&b, 0);
  EXPECT_FAIL(&b, "bad magic", "at byte 0");
}

static void test_versions(void) {
  struct bb b = {0};
  bb_header(&b, 4, 0, 0);
  EXPECT_FAIL(&b, "version 4 is not supported", "at byte 4");
  bb_header(&b, 1, 0, 0);
  EXPECT_FAIL(&b, "version 1 is not supported", NULL);
  bb_header(&b, 0xffffffffu, 0, 0);
  EXPECT_FAIL(&b, "version 4294967295", NULL);
  /* version 2 with the same layout is fine */
  bb_header(&b, 2, 0, 0);
  struct tm_err err;
  struct gguf_file *f = gguf_parse(b.p, b.n, &err);
  CHECK(f != NULL);
  if (f) CHECK_EQ_INT(f->version, 2);
  gguf_close(f);
  bb_free(&b);
}

static void test_absurd_counts(void) {
  struct bb b = {0};
  bb_header(&b, 3, UINT64_MAX, 0);
  EXPECT_FAIL(&b, "n_tensors 18446744073709551615 is impossible", "at byte 8");
  bb_header(&b, 3, 0, UINT64_MAX);
  EXPECT_FAIL(&b, "n_kv 18446744073709551615 is impossible", "at byte 16");
  /* not a constant limit: 3 kvs cannot fit in 40 bytes */
  bb_header(&b, 3, 0, 3);
  bb_fill(&b, 40, 0);
  EXPECT_FAIL(&b, "n_kv 3 is impossible", NULL);
  /* kvs fit, kvs + tensors do not */
  bb_header(&b, 3, 2, 1);
  bb_kv_u32(&b, "a", 1);
  bb_fill(&b, 40, 0);
  EXPECT_FAIL(&b, "n_tensors 2 is impossible", NULL);
}

/* -------------------------------------------------------------- kv cases -- */

static void test_string_past_end(void) {
  struct bb b = {0};
  bb_header(&b, 3, 0, 1);
  bb_key(&b, "general.name", VT_STR);
  size_t off = b.n;
  bb_u64(&b, 1000);
  bb_raw(&b, "short", 5);
  EXPECT_FAIL(&b, "string value length 1000 runs past the end", at(off));
}

static void test_key_length(void) {
  struct bb b = {0};
  bb_header(&b, 3, 0, 1);
  bb_u64(&b, 0);
  bb_u32(&b, VT_U32);
  bb_u32(&b, 7);
  bb_fill(&b, 8, 0);
  EXPECT_FAIL(&b, "kv 0: key length 0", "at byte 24");

  bb_header(&b, 3, 0, 1);
  bb_u64(&b, (uint64_t)1 << 40);
  bb_fill(&b, 32, 'a');
  EXPECT_FAIL(&b, "key length 1099511627776", "at byte 24");

  /* within the file but over the name limit */
  bb_header(&b, 3, 0, 1);
  bb_u64(&b, 5000);
  bb_fill(&b, 5000, 'k');
  bb_u32(&b, VT_U8);
  bb_u8(&b, 1);
  EXPECT_FAIL(&b, "key length 5000 > 1024", NULL);
}

static void test_duplicate_key(void) {
  struct bb b = {0};
  bb_header(&b, 3, 0, 3);
  bb_kv_u32(&b, "llama.block_count", 4);
  bb_kv_str(&b, "general.name", "x");
  size_t off = b.n;
  bb_kv_u32(&b, "llama.block_count", 5);
  EXPECT_FAIL(&b, "kv 2 'llama.block_count': duplicate key (first defined by kv 0 at byte 24)",
              at(off));
}

static void test_unknown_value_type(void) {
  struct bb b = {0};
  bb_header(&b, 3, 0, 1);
  bb_str(&b, "k");
  size_t off = b.n;
  bb_u32(&b, 13);
  bb_u64(&b, 0);
  EXPECT_FAIL(&b, "kv 0 'k': unknown value type 13", at(off));
}

static void test_array_types(void) {
  struct bb b = {0};
  bb_header(&b, 3, 0, 1);
  bb_key(&b, "arr", VT_ARR);
  size_t off = b.n;
  bb_u32(&b, 77);
  bb_u64(&b, 1);
  bb_u32(&b, 0);
  EXPECT_FAIL(&b, "unknown array element type 77", at(off));

  bb_header(&b, 3, 0, 1);
  bb_key(&b, "arr", VT_ARR);
  off = b.n;
  bb_u32(&b, VT_ARR);
  bb_u64(&b, 1);
  bb_u32(&b, VT_U8);
  bb_u64(&b, 1);
  bb_u8(&b, 0);
  EXPECT_FAIL(&b, "nested arrays are not supported", at(off));

  /* count of u32 elements beyond the file */
  bb_header(&b, 3, 0, 1);
  bb_key(&b, "arr", VT_ARR);
  bb_u32(&b, VT_U32);
  off = b.n;
  bb_u64(&b, 1000);
  bb_fill(&b, 16, 0);
  EXPECT_FAIL(&b, "array count 1000 of uint32", at(off));

  /* string array count bounded by the bytes left (8 per string at least) */
  bb_header(&b, 3, 0, 1);
  bb_key(&b, "tokenizer.ggml.tokens", VT_ARR);
  bb_u32(&b, VT_STR);
  off = b.n;
  bb_u64(&b, UINT64_MAX / 2);
  bb_str(&b, "a");
  EXPECT_FAIL(&b, "array count 9223372036854775807 of strings", at(off));

  /* one string of the array runs past the end */
  bb_header(&b, 3, 0, 1);
  bb_key(&b, "tokenizer.ggml.tokens", VT_ARR);
  bb_u32(&b, VT_STR);
  bb_u64(&b, 3);
  bb_str(&b, "<s>");
  off = b.n;
  bb_u64(&b, 200);
  bb_fill(&b, 20, 'x');
  EXPECT_FAIL(&b, "array element 1: string length 200", at(off));

  /* bool array with a 2 */
  bb_header(&b, 3, 0, 1);
  bb_key(&b, "flags", VT_ARR);
  bb_u32(&b, VT_BOOL);
  bb_u64(&b, 3);
  bb_u8(&b, 1);
  bb_u8(&b, 0);
  off = b.n;
  bb_u8(&b, 2);
  EXPECT_FAIL(&b, "array element 2: bool value 2", at(off));
}

static void test_bool_value(void) {
  struct bb b = {0};
  bb_header(&b, 3, 0, 1);
  bb_key(&b, "tokenizer.ggml.add_bos_token", VT_BOOL);
  size_t off = b.n;
  bb_u8(&b, 2);
  EXPECT_FAIL(&b, "'tokenizer.ggml.add_bos_token': bool value 2 (must be 0 or 1)", at(off));
}

static void test_alignment_values(void) {
  uint32_t bad[] = {0, 3, 48};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    struct bb b = {0};
    char needle[80];
    bb_header(&b, 3, 0, 1);
    bb_key(&b, "general.alignment", VT_U32);
    size_t off = b.n;
    bb_u32(&b, bad[i]);
    snprintf(needle, sizeof needle, "general.alignment %u is not a non-zero power of two", bad[i]);
    EXPECT_FAIL(&b, needle, at(off));
  }
  struct bb b = {0};
  bb_header(&b, 3, 0, 1);
  bb_key(&b, "general.alignment", VT_U64);
  bb_u64(&b, 64);
  EXPECT_FAIL(&b, "general.alignment has type uint64, must be uint32", NULL);
}

/* ----------------------------------------------------------- tensor cases -- */

/* One tensor info (plus data of data_bytes after padding to 32). */
static size_t one_tensor(struct bb *b, const char *name, uint32_t n_dims, const uint64_t *ne,
                         uint32_t type, uint64_t offset, size_t data_bytes) {
  bb_header(b, 3, 1, 0);
  size_t at_info = bb_tensor(b, name, n_dims, ne, type, offset);
  bb_pad(b, 32);
  bb_fill(b, data_bytes, 0x11);
  return at_info;
}

static void test_tensor_types(void) {
  struct bb b = {0};
  uint64_t ne[4] = {32, 2, 1, 1};
  size_t info = one_tensor(&b, "blk.0.attn_q.weight", 2, ne, 99, 0, 256);
  /* info: name 8+19, n_dims 4, ne 16 -> type at info+47 */
  EXPECT_FAIL(&b, "tensor 0 'blk.0.attn_q.weight': unknown tensor type 99", at(info + 47));
  one_tensor(&b, "t", 2, ne, 4, 0, 256); /* Q4_2, removed from ggml */
  EXPECT_FAIL(&b, "unknown tensor type 4", NULL);
  one_tensor(&b, "t", 2, ne, 32, 0, 256); /* Q4_0_4_8, removed */
  EXPECT_FAIL(&b, "unknown tensor type 32", NULL);
}

static void test_tensor_dims(void) {
  struct bb b = {0};
  uint64_t ne[5] = {2, 2, 2, 2, 2};
  size_t info = one_tensor(&b, "t5", 5, ne, GGML_TYPE_F32, 0, 128);
  EXPECT_FAIL(&b, "tensor 0 't5': n_dims 5 > 4", at(info + 10));
  info = one_tensor(&b, "t0", 0, ne, GGML_TYPE_F32, 0, 128);
  EXPECT_FAIL(&b, "n_dims 0", at(info + 10));

  uint64_t ne0[2] = {4, 0};
  info = one_tensor(&b, "z", 2, ne0, GGML_TYPE_F32, 0, 64);
  EXPECT_FAIL(&b, "ne[1] is 0", at(info + 9 + 4 + 8));

  uint64_t neg[2] = {4, (uint64_t)-3};
  one_tensor(&b, "n", 2, neg, GGML_TYPE_F32, 0, 64);
  EXPECT_FAIL(&b, "ne[1] 18446744073709551613 is negative as int64", NULL);

  uint64_t big[3] = {(uint64_t)1 << 31, (uint64_t)1 << 31, (uint64_t)1 << 31};
  info = one_tensor(&b, "ovf", 3, big, GGML_TYPE_F32, 0, 64);
  EXPECT_FAIL(&b, "element count overflows at ne[2]", at(info + 11 + 4 + 16));

  /* element count fits in int64, byte size does not: 2^62 F32 elements */
  uint64_t huge[2] = {(uint64_t)1 << 31, (uint64_t)1 << 31};
  one_tensor(&b, "bytes", 2, huge, GGML_TYPE_F32, 0, 64);
  EXPECT_FAIL(&b, "overflows", NULL);
}

static void test_tensor_row_block(void) {
  struct bb b = {0};
  uint64_t ne[2] = {33, 4};
  one_tensor(&b, "blk.0.ffn_up.weight", 2, ne, GGML_TYPE_Q4_0, 0, 256);
  EXPECT_FAIL(&b, "row length ne[0] 33 is not a multiple of the Q4_0 block size 32", NULL);
  uint64_t nk[2] = {128, 4}; /* K-quants need rows of 256 */
  one_tensor(&b, "k", 2, nk, GGML_TYPE_Q4_K, 0, 1024);
  EXPECT_FAIL(&b, "not a multiple of the Q4_K block size 256", NULL);
}

static void test_tensor_placement(void) {
  struct bb b = {0};
  uint64_t ne[1] = {8}; /* 8 F32 = 32 bytes */
  size_t info = one_tensor(&b, "past", 1, ne, GGML_TYPE_F32, 0, 16);
  EXPECT_FAIL(&b, "tensor 0 'past': data [offset 0, 32 bytes] runs past the end of the file",
              at(info));

  /* an offset so large that data_offset + offset would wrap */
  one_tensor(&b, "wrap", 1, ne, GGML_TYPE_F32, UINT64_MAX - 31, 64);
  EXPECT_FAIL(&b, "runs past the end of the file", NULL);

  info = one_tensor(&b, "mis", 1, ne, GGML_TYPE_F32, 16, 64);
  EXPECT_FAIL(&b, "tensor 0 'mis': offset 16 is not a multiple of the alignment 32",
              at(info + 11 + 4 + 8 + 4));

  /* overlap: b [32, +64) starts inside a [0, +64) */
  uint64_t ne16[1] = {16};
  b = (struct bb){0};
  bb_header(&b, 3, 2, 0);
  bb_tensor(&b, "a", 1, ne16, GGML_TYPE_F32, 0);
  size_t info_b = bb_tensor(&b, "b", 1, ne16, GGML_TYPE_F32, 32);
  bb_pad(&b, 32);
  bb_fill(&b, 128, 0);
  EXPECT_FAIL(&b, "tensor 1 'b': data [offset 32, 64 bytes] overlaps tensor 0 'a' [offset 0, 64 bytes]",
              at(info_b));

  /* overlap found even when the infos are not in offset order */
  bb_header(&b, 3, 3, 0);
  bb_tensor(&b, "c", 1, ne16, GGML_TYPE_F32, 128);
  bb_tensor(&b, "d", 1, ne16, GGML_TYPE_F32, 0);
  bb_tensor(&b, "e", 1, ne16, GGML_TYPE_F32, 96); /* [96,160) overlaps c [128,192) */
  bb_pad(&b, 32);
  bb_fill(&b, 256, 0);
  EXPECT_FAIL(&b, "overlaps tensor", "'c'");

  /* custom alignment applies to offsets */
  bb_header(&b, 3, 1, 1);
  bb_kv_u32(&b, "general.alignment", 64);
  bb_tensor(&b, "x", 1, ne16, GGML_TYPE_F32, 32);
  bb_pad(&b, 64);
  bb_fill(&b, 128, 0);
  EXPECT_FAIL(&b, "offset 32 is not a multiple of the alignment 64", NULL);
}

static void test_duplicate_tensor(void) {
  struct bb b = {0};
  uint64_t ne[1] = {8};
  bb_header(&b, 3, 2, 0);
  bb_tensor(&b, "token_embd.weight", 1, ne, GGML_TYPE_F32, 0);
  size_t off = bb_tensor(&b, "token_embd.weight", 1, ne, GGML_TYPE_F32, 32);
  bb_pad(&b, 32);
  bb_fill(&b, 64, 0);
  EXPECT_FAIL(&b, "tensor 1 'token_embd.weight': duplicate tensor name (first is tensor 0)", at(off));

  bb_header(&b, 3, 1, 0);
  bb_u64(&b, 0);
  bb_fill(&b, 40, 0);
  EXPECT_FAIL(&b, "tensor 0: name length 0", "at byte 24");
}

/* --------------------------------------------------------- truncation -- */

/* A small valid file with every value type, a string array and two tensors; the
 * last tensor ends exactly at the end of the file (no trailing padding), so
 * every shorter prefix is invalid. */
static void build_valid(struct bb *b) {
  bb_header(b, 3, 2, 15);
  bb_key(b, "u8", VT_U8); bb_u8(b, 200);
  bb_key(b, "i8", VT_I8); bb_u8(b, 0x80);
  bb_key(b, "u16", VT_U16); bb_le(b, 60000, 2);
  bb_key(b, "i16", VT_I16); bb_le(b, 0x8001, 2);
  bb_kv_u32(b, "u32", 4000000000u);
  bb_key(b, "i32", VT_I32); bb_u32(b, (uint32_t)-7);
  bb_key(b, "f32", VT_F32); bb_f32(b, 0.5f);
  bb_key(b, "bool", VT_BOOL); bb_u8(b, 1);
  bb_kv_str(b, "str", "hello");
  bb_key(b, "u64", VT_U64); bb_u64(b, UINT64_MAX);
  bb_key(b, "i64", VT_I64); bb_u64(b, (uint64_t)INT64_MIN);
  bb_key(b, "f64", VT_F64); bb_f64(b, -2.25);
  bb_key(b, "arr_i32", VT_ARR); bb_u32(b, VT_I32); bb_u64(b, 3);
  bb_u32(b, 1); bb_u32(b, (uint32_t)-2); bb_u32(b, 3);
  bb_key(b, "arr_str", VT_ARR); bb_u32(b, VT_STR); bb_u64(b, 3);
  bb_str(b, "<unk>"); bb_str(b, ""); bb_str(b, "wörd");
  bb_kv_u32(b, "general.alignment", 64);
  uint64_t ne_a[2] = {32, 2}, ne_b[1] = {4};
  bb_tensor(b, "q8", 2, ne_a, GGML_TYPE_Q8_0, 0);     /* 2 blocks x 34 = 68 bytes */
  bb_tensor(b, "f32", 1, ne_b, GGML_TYPE_F32, 128);   /* 16 bytes */
  bb_pad(b, 64);
  bb_fill(b, 68, 0x22);
  bb_pad(b, 64); /* the f32 tensor starts at data offset 128 */
  bb_fill(b, 16, 0x33);
}

static void test_valid_file_parses(void) {
  struct bb b = {0};
  build_valid(&b);
  struct tm_err err = {{0}};
  struct gguf_file *f = gguf_parse(b.p, b.n, &err);
  CHECK_MSG(f != NULL, "valid file rejected: %s", err.msg);
  if (f) {
    CHECK_EQ_U64(f->n_kv, 15);
    CHECK_EQ_U64(f->n_tensors, 2);
    CHECK_EQ_INT(f->alignment, 64);
    CHECK_EQ_U64(f->data_offset % 64, 0);
    CHECK_EQ_U64(f->data_offset + 128 + 16, b.n);
    const struct gguf_tensor *t = gguf_find_tensor(f, "f32");
    CHECK(t && t->size_bytes == 16 && ((const uint8_t *)t->data)[0] == 0x33);
  }
  gguf_close(f);
  bb_free(&b);
}

static void test_truncation_every_byte(void) {
  struct bb b = {0};
  build_valid(&b);
  int bad = 0;
  for (size_t len = 0; len < b.n; len++) {
    /* a private copy of exactly len bytes, so ASan catches any overread */
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy) abort();
    memcpy(copy, b.p, len);
    struct tm_err err = {{0}};
    struct gguf_file *f = gguf_parse(copy, len, &err);
    if (f || err.msg[0] == 0 || (len > 0 && !strstr(err.msg, "at byte"))) {
      if (bad++ < 5) CHECK_MSG(0, "prefix %zu: parsed=%d msg='%s'", len, f != NULL, err.msg);
    }
    gguf_close(f);
    free(copy);
  }
  CHECK_EQ_INT(bad, 0);
  /* a few spot checks of what the message names */
  struct tm_err err = {{0}};
  CHECK(gguf_parse(b.p, 10, &err) == NULL);
  CHECK_CONTAINS(err.msg, "truncated: n_tensors needs 8 bytes, only 2 left at byte 8");
  CHECK(gguf_parse(b.p, 30, &err) == NULL);
  CHECK_CONTAINS(err.msg, "n_kv 15 is impossible");
  bb_free(&b);
}

void tm_run_tests(void) {
  TM_RUN(test_empty_file);
  TM_RUN(test_bad_magic);
  TM_RUN(test_versions);
  TM_RUN(test_absurd_counts);
  TM_RUN(test_string_past_end);
  TM_RUN(test_key_length);
  TM_RUN(test_duplicate_key);
  TM_RUN(test_unknown_value_type);
  TM_RUN(test_array_types);
  TM_RUN(test_bool_value);
  TM_RUN(test_alignment_values);
  TM_RUN(test_tensor_types);
  TM_RUN(test_tensor_dims);
  TM_RUN(test_tensor_row_block);
  TM_RUN(test_tensor_placement);
  TM_RUN(test_duplicate_tensor);
  TM_RUN(test_valid_file_parses);
  TM_RUN(test_truncation_every_byte);
}
