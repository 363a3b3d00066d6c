/* test_gguf_read: the reader on real files (every fixture parses; known facts
 * per file), the getters and lookups, and the "never touch the data section"
 * contract on a sparse file of ~100 GB checked with mincore(). */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gguf/ggml_types.h"
#include "gguf/gguf.h"
#include "gguf_test_builder.h"
#include "tm_test.h"

static struct gguf_file *open_fixture(const char *name) {
  struct tm_err err = {{0}};
  struct gguf_file *f = gguf_open(tm_fixture(name), &err);
  CHECK_MSG(f != NULL, "%s: %s", name, err.msg);
  return f;
}

static bool str_eq(struct gguf_str s, const char *c) {
  return s.len == strlen(c) && memcmp(s.ptr, c, s.len) == 0;
}

/* ------------------------------------------------------------- fixtures -- */

/* Every fixture: parses, tensors aligned, inside the file, and the reader's
 * size agrees with the spacing llama.cpp's writer left between tensors. */
static void test_all_fixtures_parse(void) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s", tm_fixture("gguf"));
  DIR *d = opendir(dir);
  CHECK_MSG(d != NULL, "cannot open %s", dir);
  if (!d) return;
  int n_files = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (len < 5 || strcmp(e->d_name + len - 5, ".gguf") != 0) continue;
    char rel[600];
    snprintf(rel, sizeof rel, "gguf/%s", e->d_name);
    struct gguf_file *f = open_fixture(rel);
    if (!f) continue;
    n_files++;
    CHECK_EQ_INT(f->version, 3);
    CHECK(f->mapped);
    CHECK(gguf_find_kv(f, "general.architecture") != NULL);
    uint64_t end_max = 0;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
      const struct gguf_tensor *t = &f->tensors[i];
      CHECK_EQ_U64(t->offset % f->alignment, 0);
      CHECK(t->data == f->base + f->data_offset + t->offset);
      CHECK(gguf_find_tensor(f, t->name) == t);
      if (t->offset + t->size_bytes > end_max) end_max = t->offset + t->size_bytes;
    }
    if (f->n_tensors) {
      CHECK_EQ_U64(f->data_offset % 32, 0);
      CHECK(f->data_offset + end_max <= f->file_size);
      /* llama.cpp pads the last tensor to the alignment: the file ends there */
      CHECK_EQ_U64(f->file_size - f->data_offset - end_max < f->alignment, 1);
    }
    for (uint64_t i = 0; i < f->n_kv; i++) CHECK(gguf_find_kv(f, f->kv[i].key) == &f->kv[i]);
    gguf_close(f);
  }
  closedir(d);
  CHECK(n_files >= 13);
}

static void test_tiny_llama_f16(void) {
  struct gguf_file *f = open_fixture("gguf/tiny-llama-f16.gguf");
  if (!f) return;
  struct tm_err err = {{0}};
  char arch[32];
  CHECK(gguf_get_str(f, "general.architecture", arch, sizeof arch, &err) == 0);
  CHECK_STR(arch, "llama");
  uint64_t v = 0;
  CHECK(gguf_get_u64(f, "llama.block_count", &v, &err) == 0);
  CHECK_EQ_U64(v, 4);
  CHECK(gguf_get_u64(f, "llama.embedding_length", &v, &err) == 0);
  CHECK_EQ_U64(v, 128);
  CHECK_EQ_U64(f->n_tensors, 38);
  CHECK_EQ_U64(f->n_kv, 24);
  const struct gguf_tensor *t = gguf_find_tensor(f, "token_embd.weight");
  CHECK(t != NULL);
  if (t) {
    CHECK_EQ_INT(t->n_dims, 2);
    CHECK_EQ_U64(t->ne[0], 128);
    CHECK_EQ_U64(t->ne[1], 32000);
    CHECK_EQ_U64(t->ne[2], 1);
    CHECK_EQ_INT(t->type, GGML_TYPE_F16);
    CHECK_EQ_U64(t->offset, 0);
    CHECK_EQ_U64(t->size_bytes, 128ull * 32000 * 2);
    CHECK_EQ_U64(t->n_elements, 128ull * 32000);
  }
  CHECK(gguf_find_tensor(f, "output.weight") == NULL); /* tied */
  const struct gguf_tensor *norm = gguf_find_tensor(f, "output_norm.weight");
  CHECK(norm && norm->type == GGML_TYPE_F32 && norm->offset == 8192000);
  if (norm) { /* norms are 1.0 in this file: the data pointer is real */
    float x;
    memcpy(&x, norm->data, 4);
    CHECK_NEAR(x, 1.0, 0);
  }
  bool add_bos = false;
  CHECK(gguf_get_bool(f, "tokenizer.ggml.add_bos_token", &add_bos, &err) == 0);
  CHECK(add_bos);
  const struct gguf_kv *tok = gguf_find_kv(f, "tokenizer.ggml.tokens");
  CHECK(tok && tok->type == GGUF_VT_ARRAY && tok->v.arr.elem_type == GGUF_VT_STRING &&
        tok->v.arr.count == 32000);
  struct gguf_str s;
  CHECK(gguf_arr_get_str(tok, 1, &s) == 0 && str_eq(s, "<s>"));
  gguf_close(f);
}

static void test_vocab_files(void) {
  struct gguf_file *f = open_fixture("gguf/ggml-vocab-qwen2.gguf");
  struct tm_err err = {{0}};
  if (f) {
    CHECK_EQ_U64(f->n_tensors, 0);
    CHECK_EQ_U64(f->n_kv, 20);
    char model[16];
    CHECK(gguf_get_str(f, "tokenizer.ggml.model", model, sizeof model, &err) == 0);
    CHECK_STR(model, "gpt2");
    const struct gguf_kv *tok = gguf_find_kv(f, "tokenizer.ggml.tokens");
    const struct gguf_kv *merges = gguf_find_kv(f, "tokenizer.ggml.merges");
    CHECK(tok && tok->v.arr.elem_type == GGUF_VT_STRING && tok->v.arr.count == 151936);
    CHECK(merges && merges->v.arr.count == 151387);
    /* walk the whole vocabulary: exactly count strings, ending at data_bytes */
    uint64_t pos = 0, n = 0;
    struct gguf_str s;
    while (tok && gguf_arr_next_str(tok, &pos, &s) == 0) {
      if (n == 0) CHECK(str_eq(s, "!"));
      n++;
    }
    CHECK_EQ_U64(n, 151936);
    if (tok) CHECK_EQ_U64(pos, tok->v.arr.data_bytes);
    CHECK(merges && gguf_arr_get_str(merges, 0, &s) == 0 && str_eq(s, "\xc4\xa0 \xc4\xa0"));
    uint64_t eos;
    CHECK(gguf_get_u64(f, "tokenizer.ggml.eos_token_id", &eos, &err) == 0);
    CHECK_EQ_U64(eos, 151643);
    double base;
    CHECK(gguf_get_f64(f, "qwen2.rope.freq_base", &base, &err) == 0);
    CHECK_NEAR(base, 1e6, 0);
    gguf_close(f);
  }
  f = open_fixture("gguf/ggml-vocab-llama-spm.gguf");
  if (f) {
    CHECK_EQ_U64(f->n_kv, 22);
    const struct gguf_kv *tok = gguf_find_kv(f, "tokenizer.ggml.tokens");
    const struct gguf_kv *scores = gguf_find_kv(f, "tokenizer.ggml.scores");
    const struct gguf_kv *types = gguf_find_kv(f, "tokenizer.ggml.token_type");
    CHECK(tok && tok->v.arr.count == 32000);
    CHECK(scores && scores->v.arr.elem_type == GGUF_VT_FLOAT32 && scores->v.arr.count == 32000 &&
          scores->v.arr.data_bytes == 4 * 32000);
    uint64_t tt = 0;
    CHECK(types && types->v.arr.elem_type == GGUF_VT_INT32);
    CHECK(gguf_arr_get_u64(types, 0, &tt) == 0 && tt == 2);
    CHECK(gguf_arr_get_u64(types, 1, &tt) == 0 && tt == 3);
    CHECK(gguf_arr_get_u64(types, 32000, &tt) == -1);
    CHECK(gguf_arr_get_u64(scores, 0, &tt) == -1); /* not integers */
    bool add_eos = true;
    CHECK(gguf_get_bool(f, "tokenizer.ggml.add_eos_token", &add_eos, &err) == 0);
    CHECK(!add_eos);
    gguf_close(f);
  }
}

static void test_quantized_fixtures(void) {
  struct gguf_file *f = open_fixture("gguf/kq-llama-Q4_K_M.gguf");
  if (f) {
    const struct gguf_tensor *k = gguf_find_tensor(f, "blk.0.attn_k.weight");
    const struct gguf_tensor *e = gguf_find_tensor(f, "token_embd.weight");
    CHECK(k && k->type == GGML_TYPE_Q4_K && k->ne[0] == 256 && k->ne[1] == 128);
    if (k) CHECK_EQ_U64(k->size_bytes, 128 * 144); /* one 256-block of 144 bytes per row */
    CHECK(e && e->type == GGML_TYPE_Q6_K && e->offset == 1024);
    uint64_t ft;
    CHECK(gguf_get_u64(f, "general.file_type", &ft, NULL) == 0 && ft == 15);
    gguf_close(f);
  }
  f = open_fixture("gguf/tiny-llama-Q4_K_M.gguf"); /* rows of 128: fell back to Q5_0/Q8_0 */
  if (f) {
    const struct gguf_tensor *k = gguf_find_tensor(f, "blk.0.attn_k.weight");
    CHECK(k && k->type == GGML_TYPE_Q5_0 && k->size_bytes == 64 * 4 * 22);
    const struct gguf_tensor *e = gguf_find_tensor(f, "token_embd.weight");
    CHECK(e && e->type == GGML_TYPE_Q8_0);
    gguf_close(f);
  }
  f = open_fixture("gguf/tiny-qwen3moe-Q8_0.gguf");
  if (f) {
    const struct gguf_tensor *up = gguf_find_tensor(f, "blk.0.ffn_up_exps.weight");
    CHECK(up && up->n_dims == 3 && up->ne[0] == 128 && up->ne[1] == 64 && up->ne[2] == 8 &&
          up->type == GGML_TYPE_Q8_0);
    const struct gguf_tensor *gi = gguf_find_tensor(f, "blk.0.ffn_gate_inp.weight");
    CHECK(gi && gi->type == GGML_TYPE_F32 && gi->size_bytes == 128 * 8 * 4);
    uint64_t ne;
    CHECK(gguf_get_u64(f, "qwen3moe.expert_count", &ne, NULL) == 0 && ne == 8);
    gguf_close(f);
  }
  f = open_fixture("gguf/tiny-qwen2-Q8_0.gguf");
  if (f) {
    CHECK_EQ_U64(f->n_tensors, 26);
    const struct gguf_tensor *b = gguf_find_tensor(f, "blk.0.attn_k.bias");
    CHECK(b && b->n_dims == 1 && b->ne[0] == 64 && b->type == GGML_TYPE_F32);
    gguf_close(f);
  }
  f = open_fixture("gguf/tiny-qwen3-Q8_0.gguf");
  if (f) {
    const struct gguf_tensor *e = gguf_find_tensor(f, "token_embd.weight");
    CHECK(e && e->ne[0] == 64 && e->ne[1] == 151936 && e->size_bytes == 151936ull * 2 * 34);
    gguf_close(f);
  }
}

/* ---------------------------------------------------------------- getters -- */

static void test_getters(void) {
  struct bb b = {0};
  bb_header(&b, 3, 0, 9);
  bb_key(&b, "u8", 0); bb_u8(&b, 250);
  bb_key(&b, "neg", 5); bb_u32(&b, (uint32_t)-5);
  bb_key(&b, "pos16", 3); bb_le(&b, 300, 2);
  bb_key(&b, "f", 6); bb_f32(&b, 1.5f);
  bb_key(&b, "flag", 7); bb_u8(&b, 0);
  bb_kv_str(&b, "s", "abcdef");
  bb_key(&b, "nul", 8); bb_u64(&b, 6); bb_raw(&b, "lla\0ma", 6);
  bb_key(&b, "i8arr", 9); bb_u32(&b, 1); bb_u64(&b, 3); bb_u8(&b, 1); bb_u8(&b, 0xff); bb_u8(&b, 7);
  bb_key(&b, "u64arr", 9); bb_u32(&b, 10); bb_u64(&b, 2); bb_u64(&b, 5); bb_u64(&b, UINT64_MAX);
  struct tm_err err = {{0}};
  struct gguf_file *f = gguf_parse(b.p, b.n, &err);
  CHECK_MSG(f != NULL, "%s", err.msg);
  if (!f) {
    bb_free(&b);
    return;
  }
  uint64_t u;
  double d;
  bool flag = true;
  char buf[4];
  CHECK(gguf_get_u64(f, "u8", &u, &err) == 0 && u == 250);
  CHECK(gguf_get_u64(f, "pos16", &u, &err) == 0 && u == 300);
  CHECK(gguf_get_u64(f, "neg", &u, &err) == -1);
  CHECK_CONTAINS(err.msg, "'neg' is negative (-5)");
  CHECK(gguf_get_u64(f, "f", &u, &err) == -1);
  CHECK_CONTAINS(err.msg, "'f' has type float32, expected an integer");
  CHECK(gguf_get_u64(f, "flag", &u, &err) == -1);
  CHECK(gguf_get_u64(f, "missing", &u, &err) == -1);
  CHECK_CONTAINS(err.msg, "<buffer>: key 'missing' not found");
  CHECK(gguf_get_f64(f, "f", &d, &err) == 0 && d == 1.5);
  CHECK(gguf_get_f64(f, "neg", &d, &err) == 0 && d == -5.0);
  CHECK(gguf_get_f64(f, "s", &d, &err) == -1);
  CHECK(gguf_get_bool(f, "flag", &flag, &err) == 0 && !flag);
  CHECK(gguf_get_bool(f, "u8", &flag, &err) == -1);
  CHECK(gguf_get_str(f, "s", buf, sizeof buf, &err) == 0);
  CHECK_STR(buf, "abc"); /* truncated to n-1 */
  CHECK(gguf_get_str(f, "nul", buf, sizeof buf, &err) == -1); /* not "lla" */
  CHECK_CONTAINS(err.msg, "'nul' contains a NUL byte");
  CHECK(gguf_get_str(f, "u8", buf, sizeof buf, &err) == -1);
  CHECK_CONTAINS(err.msg, "expected string");
  const struct gguf_kv *a = gguf_find_kv(f, "i8arr");
  CHECK(gguf_arr_get_u64(a, 0, &u) == 0 && u == 1);
  CHECK(gguf_arr_get_u64(a, 1, &u) == -1); /* -1 as int8 */
  CHECK(gguf_arr_get_u64(a, 2, &u) == 0 && u == 7);
  a = gguf_find_kv(f, "u64arr");
  CHECK(gguf_arr_get_u64(a, 1, &u) == 0 && u == UINT64_MAX);
  CHECK(gguf_arr_get_u64(gguf_find_kv(f, "s"), 0, &u) == -1);
  CHECK(gguf_find_kv(f, "nope") == NULL && gguf_find_tensor(f, "nope") == NULL);
  CHECK_EQ_U64(f->data_offset % 32, 0);
  gguf_close(f);
  bb_free(&b);
}

/* A FIFO is refused at once: open() without O_NONBLOCK waited forever for a
 * writer. The alarm turns such a hang into a failed test. */
static void test_fifo_refused(void) {
  const char *path = tm_tmpfile("fifo.gguf");
  CHECK(mkfifo(path, 0600) == 0);
  struct tm_err err = {{0}};
  alarm(10);
  struct gguf_file *f = gguf_open(path, &err);
  alarm(0);
  CHECK(f == NULL);
  CHECK_CONTAINS(err.msg, "not a regular file");
  gguf_close(f);
  f = gguf_open(tm_test_tmpdir(), &err); /* a directory */
  CHECK(f == NULL);
  CHECK_CONTAINS(err.msg, "not a regular file");
  gguf_close(f);
}

/* Many keys and tensors: the index finds each and misses absent ones. */
static void test_index_many(void) {
  enum { N = 3000 };
  struct bb b = {0};
  bb_header(&b, 3, N, N);
  char name[32];
  for (int i = 0; i < N; i++) {
    snprintf(name, sizeof name, "key.%d", i);
    bb_kv_u32(&b, name, (uint32_t)i * 7);
  }
  uint64_t ne[1] = {8};
  for (int i = 0; i < N; i++) {
    snprintf(name, sizeof name, "blk.%d.w", i);
    bb_tensor(&b, name, 1, ne, GGML_TYPE_F32, (uint64_t)i * 32);
  }
  bb_pad(&b, 32);
  bb_fill(&b, (size_t)N * 32, 0);
  struct tm_err err = {{0}};
  struct gguf_file *f = gguf_parse(b.p, b.n, &err);
  CHECK_MSG(f != NULL, "%s", err.msg);
  int misses = 0;
  for (int i = 0; f && i < N; i++) {
    uint64_t v;
    snprintf(name, sizeof name, "key.%d", i);
    if (gguf_get_u64(f, name, &v, NULL) != 0 || v != (uint64_t)i * 7) misses++;
    snprintf(name, sizeof name, "blk.%d.w", i);
    const struct gguf_tensor *t = gguf_find_tensor(f, name);
    if (!t || t->offset != (uint64_t)i * 32) misses++;
  }
  CHECK_EQ_INT(misses, 0);
  CHECK(f && gguf_find_kv(f, "key.3000") == NULL && gguf_find_tensor(f, "blk.-1.w") == NULL);
  gguf_close(f);
  bb_free(&b);
}

/* ------------------------------------------------------- data untouched -- */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Resident pages of the map in [from, to) (page-aligned from). */
static uint64_t resident_pages(const uint8_t *base, uint64_t from, uint64_t to, long page) {
  static unsigned char vec[1 << 18];
  uint64_t n = 0;
  const uint64_t chunk = (uint64_t)sizeof vec * (uint64_t)page;
  for (uint64_t off = from; off < to; off += chunk) {
    uint64_t len = to - off < chunk ? to - off : chunk;
    if (mincore((void *)(base + off), len, vec) != 0) return UINT64_MAX;
    for (uint64_t i = 0; i < (len + page - 1) / page; i++) n += vec[i] & 1;
  }
  return n;
}

static void test_sparse_huge_file_untouched(void) {
  const char *path = tm_tmpfile("huge.gguf");
  /* One F32 tensor of 2^20 x rows: ~100 GB, or smaller if the filesystem says no. */
  uint64_t rows_try[] = {25000, 2500, 250};
  uint64_t total = 0, rows = 0;
  for (size_t k = 0; k < 3 && !total; k++) {
    struct bb b = {0};
    uint64_t ne[2] = {(uint64_t)1 << 20, rows_try[k]};
    bb_header(&b, 3, 1, 1);
    bb_kv_str(&b, "general.architecture", "llama");
    bb_tensor(&b, "token_embd.weight", 2, ne, GGML_TYPE_F32, 0);
    bb_pad(&b, 32);
    uint64_t want = b.n + ne[0] * ne[1] * 4;
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0);
    if (fd < 0) return;
    if (write(fd, b.p, b.n) == (ssize_t)b.n && ftruncate(fd, (off_t)want) == 0) {
      total = want;
      rows = rows_try[k];
    }
    close(fd);
    bb_free(&b);
  }
  CHECK_MSG(total != 0, "could not create a sparse file at %s", path);
  if (!total) return;
  fprintf(stderr, "  sparse file: %.1f GB\n", total / 1e9);

  struct tm_err err = {{0}};
  double t0 = now_s();
  struct gguf_file *f = gguf_open(path, &err);
  double dt = now_s() - t0;
  CHECK_MSG(f != NULL, "%s", err.msg);
  if (!f) return;
  /* No timed assertion (shared, noisy machines): the mincore check below is
   * what proves the data section was not read. The time is printed for people. */
  fprintf(stderr, "  gguf_open: %.3f ms\n", dt * 1e3);
  CHECK_EQ_U64(f->file_size, total);
  const struct gguf_tensor *t = gguf_find_tensor(f, "token_embd.weight");
  CHECK(t && t->ne[1] == rows && t->size_bytes == total - f->data_offset);

  long page = sysconf(_SC_PAGESIZE);
  uint64_t first = (f->data_offset + page - 1) / page * page;
  uint64_t res = resident_pages(f->base, first, total, page);
  CHECK_MSG(res == 0, "%" PRIu64 " pages of the data section are resident", res);
  /* The check can fail: touching one data page makes it resident. */
  uint64_t probe = first + 1000 * (uint64_t)page;
  volatile uint8_t x = f->base[probe];
  (void)x;
  CHECK_EQ_U64(resident_pages(f->base, probe, probe + page, page), 1);
  gguf_close(f);
  unlink(path);
}

void tm_run_tests(void) {
  TM_RUN(test_all_fixtures_parse);
  TM_RUN(test_tiny_llama_f16);
  TM_RUN(test_vocab_files);
  TM_RUN(test_quantized_fixtures);
  TM_RUN(test_getters);
  TM_RUN(test_fifo_refused);
  TM_RUN(test_index_many);
  TM_RUN(test_sparse_huge_file_untouched);
}
