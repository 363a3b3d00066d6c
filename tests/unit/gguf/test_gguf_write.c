/* test_gguf_write: writer -> reader round trips (every value type, arrays incl.
 * strings, several tensor types, default and custom alignment, data streamed in
 * pieces), gguf_w_copy_kv of a real vocabulary, and the writer's refusals. */
#include <inttypes.h>
#include <stdlib.h>

#include "gguf/ggml_types.h"
#include "gguf/gguf.h"
#include "tm_test.h"

struct spec {
  const char *name;
  uint32_t n_dims;
  uint64_t ne[4];
  uint32_t type;
};

static const struct spec specs[] = {
    {"token_embd.weight", 2, {64, 10, 1, 1}, GGML_TYPE_Q8_0},
    {"output_norm.weight", 1, {64, 1, 1, 1}, GGML_TYPE_F32},
    {"blk.0.attn_q.weight", 2, {256, 3, 1, 1}, GGML_TYPE_Q4_K},
    {"blk.0.ffn_up_exps.weight", 3, {256, 2, 4, 1}, GGML_TYPE_Q6_K},
    {"blk.0.attn_k.weight", 2, {32, 5, 1, 1}, GGML_TYPE_F16},
    {"blk.0.x4", 4, {32, 2, 2, 2}, GGML_TYPE_Q4_0},
};
#define N_SPECS (sizeof specs / sizeof specs[0])

static uint8_t pattern(size_t tensor, uint64_t i) { return (uint8_t)(tensor * 31 + i * 7 + 1); }

/* Writes a file with every value type and the tensors above; returns its size. */
static uint64_t write_file(const char *path, uint32_t alignment) {
  struct gguf_writer *w = gguf_writer_new(alignment);
  CHECK(w != NULL);
  if (!w) return 0;
  CHECK(gguf_w_str(w, "general.architecture", "llama") == 0);
  CHECK(gguf_w_u32(w, "llama.block_count", 4000000000u) == 0);
  CHECK(gguf_w_i32(w, "i32", -123456) == 0);
  CHECK(gguf_w_u64(w, "u64", UINT64_MAX - 1) == 0);
  CHECK(gguf_w_f32(w, "f32", -0.375f) == 0);
  CHECK(gguf_w_bool(w, "yes", true) == 0);
  CHECK(gguf_w_bool(w, "no", false) == 0);
  CHECK(gguf_w_str(w, "empty", "") == 0);
  uint8_t a_u8[] = {0, 255, 7};
  int8_t a_i8[] = {-128, 127};
  uint16_t a_u16[] = {65535, 1};
  int16_t a_i16[] = {-32768, 5};
  uint32_t a_u32[] = {8, 8, 4, 4};
  int32_t a_i32[] = {2, -3, 3};
  float a_f32[] = {0.5f, -1e30f};
  bool a_bool[] = {true, false, true};
  uint64_t a_u64[] = {UINT64_MAX, 0};
  int64_t a_i64[] = {INT64_MIN, 42};
  double a_f64[] = {3.25, -1e300};
  CHECK(gguf_w_arr(w, "a.u8", GGUF_VT_UINT8, a_u8, 3) == 0);
  CHECK(gguf_w_arr(w, "a.i8", GGUF_VT_INT8, a_i8, 2) == 0);
  CHECK(gguf_w_arr(w, "a.u16", GGUF_VT_UINT16, a_u16, 2) == 0);
  CHECK(gguf_w_arr(w, "a.i16", GGUF_VT_INT16, a_i16, 2) == 0);
  CHECK(gguf_w_arr(w, "a.u32", GGUF_VT_UINT32, a_u32, 4) == 0);
  CHECK(gguf_w_arr(w, "a.i32", GGUF_VT_INT32, a_i32, 3) == 0);
  CHECK(gguf_w_arr(w, "a.f32", GGUF_VT_FLOAT32, a_f32, 2) == 0);
  CHECK(gguf_w_arr(w, "a.bool", GGUF_VT_BOOL, a_bool, 3) == 0);
  CHECK(gguf_w_arr(w, "a.u64", GGUF_VT_UINT64, a_u64, 2) == 0);
  CHECK(gguf_w_arr(w, "a.i64", GGUF_VT_INT64, a_i64, 2) == 0);
  CHECK(gguf_w_arr(w, "a.f64", GGUF_VT_FLOAT64, a_f64, 2) == 0);
  CHECK(gguf_w_arr(w, "a.empty", GGUF_VT_UINT32, NULL, 0) == 0);
  const char *toks[] = {"<unk>", "", "h\xc3\xa9llo", "a b"};
  CHECK(gguf_w_arr_str(w, "tokenizer.ggml.tokens", toks, 4) == 0);
  for (size_t i = 0; i < N_SPECS; i++)
    CHECK_EQ_INT(gguf_w_tensor(w, specs[i].name, specs[i].n_dims, specs[i].ne, specs[i].type), (int)i);

  FILE *out = fopen(path, "wb");
  CHECK(out != NULL);
  struct tm_err err = {{0}};
  CHECK(gguf_w_begin(w, out, &err) == 0);
  for (size_t i = 0; i < N_SPECS; i++) {
    uint64_t n = gguf_w_tensor_bytes(w, (int)i);
    uint8_t *buf = malloc(n);
    if (!buf) abort();
    for (uint64_t k = 0; k < n; k++) buf[k] = pattern(i, k);
    /* in three uneven pieces */
    uint64_t p1 = n / 3, p2 = n / 2;
    CHECK(gguf_w_data(w, buf, p1, &err) == 0);
    CHECK(gguf_w_data(w, buf + p1, p2 - p1, &err) == 0);
    CHECK(gguf_w_data(w, buf + p2, n - p2, &err) == 0);
    free(buf);
  }
  CHECK_MSG(gguf_w_end(w, &err) == 0, "%s", err.msg);
  uint64_t size = gguf_w_file_size(w);
  fclose(out);
  gguf_writer_free(w);
  return size;
}

static void check_round_trip(uint32_t alignment) {
  const char *path = tm_tmpfile("rt.gguf");
  uint64_t size = write_file(path, alignment);
  struct tm_err err = {{0}};
  struct gguf_file *f = gguf_open(path, &err);
  CHECK_MSG(f != NULL, "align %u: %s", alignment, err.msg);
  if (!f) return;
  uint32_t a = alignment ? alignment : 32;
  CHECK_EQ_U64(f->file_size, size);
  CHECK_EQ_INT(f->version, 3);
  CHECK_EQ_INT(f->alignment, a);
  const struct gguf_kv *ak = gguf_find_kv(f, "general.alignment");
  if (a == 32) CHECK(ak == NULL); /* default: not written */
  else CHECK(ak && ak->type == GGUF_VT_UINT32 && ak->v.u64 == a);
  CHECK_EQ_U64(f->n_kv, 21 + (a != 32));

  char s[32];
  uint64_t u;
  double d;
  bool bl;
  CHECK(gguf_get_str(f, "general.architecture", s, sizeof s, &err) == 0);
  CHECK_STR(s, "llama");
  CHECK(gguf_get_u64(f, "llama.block_count", &u, &err) == 0 && u == 4000000000u);
  CHECK(gguf_find_kv(f, "llama.block_count")->type == GGUF_VT_UINT32);
  const struct gguf_kv *kv = gguf_find_kv(f, "i32");
  CHECK(kv && kv->type == GGUF_VT_INT32 && kv->v.i64 == -123456);
  CHECK(gguf_get_u64(f, "u64", &u, &err) == 0 && u == UINT64_MAX - 1);
  CHECK(gguf_get_f64(f, "f32", &d, &err) == 0 && d == -0.375);
  CHECK(gguf_find_kv(f, "f32")->type == GGUF_VT_FLOAT32);
  CHECK(gguf_get_bool(f, "yes", &bl, &err) == 0 && bl);
  CHECK(gguf_get_bool(f, "no", &bl, &err) == 0 && !bl);
  CHECK(gguf_get_str(f, "empty", s, sizeof s, &err) == 0 && s[0] == 0);

  kv = gguf_find_kv(f, "a.i8");
  CHECK(kv && kv->v.arr.elem_type == GGUF_VT_INT8 && kv->v.arr.count == 2 &&
        (int8_t)kv->v.arr.data[0] == -128);
  kv = gguf_find_kv(f, "a.u16");
  CHECK(gguf_arr_get_u64(kv, 0, &u) == 0 && u == 65535);
  kv = gguf_find_kv(f, "a.i16");
  CHECK(gguf_arr_get_u64(kv, 0, &u) == -1 && gguf_arr_get_u64(kv, 1, &u) == 0 && u == 5);
  kv = gguf_find_kv(f, "a.u32");
  CHECK(kv && kv->v.arr.count == 4 && gguf_arr_get_u64(kv, 2, &u) == 0 && u == 4);
  kv = gguf_find_kv(f, "a.i32");
  CHECK(gguf_arr_get_u64(kv, 1, &u) == -1 && gguf_arr_get_u64(kv, 2, &u) == 0 && u == 3);
  kv = gguf_find_kv(f, "a.f32");
  float fx;
  CHECK(kv && kv->v.arr.data_bytes == 8);
  if (kv) {
    memcpy(&fx, kv->v.arr.data + 4, 4);
    CHECK(fx == -1e30f);
  }
  kv = gguf_find_kv(f, "a.bool");
  CHECK(kv && kv->v.arr.elem_type == GGUF_VT_BOOL && kv->v.arr.data[2] == 1);
  kv = gguf_find_kv(f, "a.u64");
  CHECK(gguf_arr_get_u64(kv, 0, &u) == 0 && u == UINT64_MAX);
  kv = gguf_find_kv(f, "a.i64");
  CHECK(gguf_arr_get_u64(kv, 0, &u) == -1 && gguf_arr_get_u64(kv, 1, &u) == 0 && u == 42);
  kv = gguf_find_kv(f, "a.f64");
  double dx;
  if (kv) {
    memcpy(&dx, kv->v.arr.data, 8);
    CHECK(dx == 3.25);
  }
  kv = gguf_find_kv(f, "a.empty");
  CHECK(kv && kv->v.arr.count == 0 && kv->v.arr.data_bytes == 0);
  kv = gguf_find_kv(f, "tokenizer.ggml.tokens");
  struct gguf_str gs;
  CHECK(kv && kv->v.arr.count == 4);
  CHECK(gguf_arr_get_str(kv, 1, &gs) == 0 && gs.len == 0);
  CHECK(gguf_arr_get_str(kv, 2, &gs) == 0 && gs.len == 6 && memcmp(gs.ptr, "h\xc3\xa9llo", 6) == 0);
  CHECK(gguf_arr_get_str(kv, 3, &gs) == 0 && gs.len == 3);
  CHECK(gguf_arr_get_str(kv, 4, &gs) == -1);

  CHECK_EQ_U64(f->n_tensors, N_SPECS);
  CHECK_EQ_U64(f->data_offset % a, 0);
  for (size_t i = 0; i < N_SPECS && i < f->n_tensors; i++) {
    const struct gguf_tensor *t = &f->tensors[i];
    CHECK_STR(t->name, specs[i].name);
    CHECK_EQ_INT(t->n_dims, specs[i].n_dims);
    CHECK_EQ_INT(t->type, specs[i].type);
    for (int k = 0; k < 4; k++) CHECK_EQ_U64(t->ne[k], specs[i].ne[k]);
    CHECK_EQ_U64(t->offset % a, 0);
    int bad = 0;
    for (uint64_t k = 0; k < t->size_bytes; k++)
      bad += ((const uint8_t *)t->data)[k] != pattern(i, k);
    CHECK_EQ_INT(bad, 0);
  }
  /* Q4_K rows of 256: 144 bytes each */
  const struct gguf_tensor *q = gguf_find_tensor(f, "blk.0.attn_q.weight");
  CHECK(q && q->size_bytes == 3 * 144);
  /* the file ends at the last tensor's padded end */
  const struct gguf_tensor *last = &f->tensors[f->n_tensors - 1];
  CHECK_EQ_U64(f->file_size, f->data_offset + (last->offset + last->size_bytes + a - 1) / a * a);
  gguf_close(f);
}

static void test_round_trip_default_alignment(void) { check_round_trip(0); }
static void test_round_trip_alignment_32(void) { check_round_trip(32); }
static void test_round_trip_alignment_256(void) { check_round_trip(256); }
static void test_round_trip_alignment_8(void) { check_round_trip(8); }

/* Copy every kv of a real vocabulary file, write, read back: same bytes. */
static void test_copy_kv_round_trip(void) {
  struct tm_err err = {{0}};
  struct gguf_file *src = gguf_open(tm_fixture("gguf/ggml-vocab-llama-spm.gguf"), &err);
  CHECK_MSG(src != NULL, "%s", err.msg);
  if (!src) return;
  struct gguf_writer *w = gguf_writer_new(32);
  for (uint64_t i = 0; i < src->n_kv; i++)
    CHECK_MSG(gguf_w_copy_kv(w, &src->kv[i]) == 0, "%s", gguf_writer_error(w));
  CHECK(gguf_w_copy_kv(w, &src->kv[0]) == -1); /* already there */
  CHECK_CONTAINS(gguf_writer_error(w), "duplicate key 'general.architecture'");
  const char *path = tm_tmpfile("copy.gguf");
  FILE *out = fopen(path, "wb");
  CHECK(gguf_w_begin(w, out, &err) == 0 && gguf_w_end(w, &err) == 0);
  fclose(out);
  gguf_writer_free(w);

  struct gguf_file *f = gguf_open(path, &err);
  CHECK_MSG(f != NULL, "%s", err.msg);
  if (f) {
    CHECK_EQ_U64(f->n_kv, src->n_kv);
    int diffs = 0;
    for (uint64_t i = 0; i < src->n_kv && i < f->n_kv; i++) {
      const struct gguf_kv *a = &src->kv[i], *b = &f->kv[i];
      if (strcmp(a->key, b->key) || a->type != b->type) diffs++;
      else if (a->type == GGUF_VT_STRING)
        diffs += a->v.str.len != b->v.str.len || memcmp(a->v.str.ptr, b->v.str.ptr, a->v.str.len);
      else if (a->type == GGUF_VT_ARRAY)
        diffs += a->v.arr.elem_type != b->v.arr.elem_type || a->v.arr.count != b->v.arr.count ||
                 a->v.arr.data_bytes != b->v.arr.data_bytes ||
                 memcmp(a->v.arr.data, b->v.arr.data, a->v.arr.data_bytes);
      else
        diffs += a->v.u64 != b->v.u64; /* same union bits for every scalar */
    }
    CHECK_EQ_INT(diffs, 0);
    /* the vocabulary survived: same header bytes as the source's metadata */
    /* (the source ends unpadded; this writer always pads the header to 32) */
    CHECK_EQ_U64(f->file_size, (src->file_size + 31) / 32 * 32);
    CHECK(memcmp(f->base, src->base, src->file_size) == 0);
    gguf_close(f);
  }
  gguf_close(src);
}

static void test_writer_refusals(void) {
  CHECK(gguf_writer_new(3) == NULL);
  CHECK(gguf_writer_new(48) == NULL);
  struct gguf_writer *w = gguf_writer_new(64);
  CHECK(gguf_w_u32(w, "general.alignment", 64) == 0); /* agrees: accepted, written once */
  CHECK(gguf_w_u32(w, "general.alignment", 32) == -1);
  CHECK_CONTAINS(gguf_writer_error(w), "general.alignment 32 disagrees");
  CHECK(gguf_w_u64(w, "general.alignment", 64) == -1);
  CHECK(gguf_w_u32(w, "k", 1) == 0);
  CHECK(gguf_w_str(w, "k", "x") == -1);
  CHECK_CONTAINS(gguf_writer_error(w), "duplicate key 'k'");
  CHECK(gguf_w_u32(w, "", 1) == -1);
  CHECK_CONTAINS(gguf_writer_error(w), "key is empty");
  CHECK(gguf_w_arr(w, "s", GGUF_VT_STRING, "x", 1) == -1);
  uint8_t bad_bool[] = {2};
  CHECK(gguf_w_arr(w, "b", GGUF_VT_BOOL, bad_bool, 1) == -1);
  uint64_t ne[2] = {33, 2};
  CHECK(gguf_w_tensor(w, "t", 2, ne, GGML_TYPE_Q4_0) == -1);
  CHECK_CONTAINS(gguf_writer_error(w), "not a multiple of the Q4_0 block size 32");
  CHECK(gguf_w_tensor(w, "t", 2, ne, 4) == -1);
  CHECK_CONTAINS(gguf_writer_error(w), "unknown type 4");
  CHECK(gguf_w_tensor(w, "t", 0, ne, GGML_TYPE_F32) == -1);
  CHECK(gguf_w_tensor(w, "t", 5, ne, GGML_TYPE_F32) == -1);
  uint64_t ne0[2] = {4, 0};
  CHECK(gguf_w_tensor(w, "t", 2, ne0, GGML_TYPE_F32) == -1);
  char long_name[80];
  memset(long_name, 'n', 64);
  long_name[64] = 0;
  CHECK(gguf_w_tensor(w, long_name, 2, ne, GGML_TYPE_F32) == -1);
  CHECK_CONTAINS(gguf_writer_error(w), "is 64 bytes (llama.cpp reads at most 63)");
  CHECK_EQ_INT(gguf_w_tensor(w, "t", 2, ne, GGML_TYPE_F32), 0);
  CHECK_EQ_INT(gguf_w_tensor(w, "t", 2, ne, GGML_TYPE_F32), -1);
  CHECK_CONTAINS(gguf_writer_error(w), "duplicate tensor name 't'");
  CHECK_EQ_INT(gguf_w_tensor(w, "u", 1, ne, GGML_TYPE_F16), 1);
  CHECK_EQ_U64(gguf_w_tensor_bytes(w, 0), 33 * 2 * 4);
  CHECK_EQ_U64(gguf_w_tensor_bytes(w, 1), 66);
  CHECK_EQ_U64(gguf_w_tensor_bytes(w, 2), 0);

  const char *path = tm_tmpfile("partial.gguf");
  FILE *out = fopen(path, "wb");
  struct tm_err err = {{0}};
  uint8_t data[400] = {0};
  CHECK(gguf_w_data(w, data, 4, &err) == -1); /* before begin */
  CHECK(gguf_w_begin(w, out, &err) == 0);
  CHECK(gguf_w_u32(w, "late", 1) == -1);
  CHECK(gguf_w_data(w, data, 265, &err) == -1); /* more than tensor 0 holds */
  CHECK_CONTAINS(err.msg, "tensor 't'");
  CHECK(gguf_w_data(w, data, 264, &err) == 0);
  CHECK(gguf_w_end(w, &err) == -1);
  CHECK_CONTAINS(err.msg, "'u' has 0 of 66 bytes written");
  CHECK(gguf_w_data(w, data, 66, &err) == 0);
  CHECK(gguf_w_data(w, data, 1, &err) == -1); /* after the last tensor */
  CHECK(gguf_w_end(w, &err) == 0);
  uint64_t size = gguf_w_file_size(w);
  fclose(out);
  gguf_writer_free(w);
  struct gguf_file *f = gguf_open(path, &err);
  CHECK_MSG(f != NULL, "%s", err.msg);
  if (f) {
    CHECK_EQ_U64(f->file_size, size);
    CHECK_EQ_INT(f->alignment, 64);
    CHECK_EQ_U64(f->tensors[1].offset, 320); /* 264 padded to 64 */
    gguf_close(f);
  }
}

void tm_run_tests(void) {
  TM_RUN(test_round_trip_default_alignment);
  TM_RUN(test_round_trip_alignment_32);
  TM_RUN(test_round_trip_alignment_256);
  TM_RUN(test_round_trip_alignment_8);
  TM_RUN(test_copy_kv_round_trip);
  TM_RUN(test_writer_refusals);
}
