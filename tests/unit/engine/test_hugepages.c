/* engine_options.hugepages: the weights copied into huge pages at load must
 * give bit-identical logits to the memory-mapped weights (the copy is the
 * file's bytes at the same addresses), and the engine must say it copied.
 * Memory-mapped loads (hugemap.c) may drop and re-read the file's pages to
 * get 2 MiB folios: a fresh copy of a file (written with write(2), so its
 * cached pages are small) must give the same logits, and the share of 2 MiB
 * pages reported must be a share. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "tm_test.h"

static float *run(const char *path, bool hugepages, bool *copied, double *share) {
  struct engine_options o;
  engine_options_init(&o);
  o.n_threads = 1;
  o.hugepages = hugepages;
  struct tm_err err = {{0}};
  struct engine *e = engine_load(path, &o, &err);
  CHECK_MSG(e != NULL, "%s", err.msg);
  if (!e) return NULL;
  struct engine_info info;
  engine_get_info(e, &info);
  *copied = info.hugepages;
  *share = info.huge_share;
  float *logits = malloc((size_t)info.n_vocab * 2 * sizeof *logits);
  const int32_t prompt[5] = {1, 450, 11473, 29892, 3763};
  int ok = logits && engine_prefill(e, prompt, 5, logits, &err) == 0 &&
           engine_decode(e, 338, logits + info.n_vocab, &err) == 0;
  CHECK_MSG(ok, "%s", err.msg);
  engine_free(e);
  if (!ok) {
    free(logits);
    return NULL;
  }
  return logits;
}

/* The bracketed word of /sys/kernel/mm/transparent_hugepage/enabled. */
static const char *thp_mode(void) {
  static char mode[32] = "not readable";
  FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  char line[128];
  if (f && fgets(line, sizeof line, f)) {
    char *a = strchr(line, '['), *b = a ? strchr(a, ']') : NULL;
    if (a && b && b - a - 1 < (long)sizeof mode) snprintf(mode, sizeof mode, "%.*s", (int)(b - a - 1), a + 1);
  }
  if (f) fclose(f);
  return mode;
}

static void hugepages_give_the_same_logits(void) {
  const char *path = tm_fixture("gguf/tiny-llama-Q4_0.gguf");
  bool c0 = true, c1 = false, c2 = true;
  double s0 = -2, s1 = -2, s2 = -2;
  float *a = run(path, false, &c0, &s0), *b = run(path, true, &c1, &s1);
  CHECK(!c0);
  CHECK(c1);
  /* what the kernel gave the copy: all of it when transparent huge pages are
   * on ("always" or "madvise") and memory is not fragmented, never more */
  CHECK_MSG(s1 == -1.0 || (s1 >= 0.0 && s1 <= 1.0), "copy's share %g", s1);
  fprintf(stderr, "  2 MiB page share of the --hugepages copy: %.2f (THP %s)\n", s1, thp_mode());
  if (strcmp(thp_mode(), "never") == 0) CHECK_MSG(s1 <= 0.0, "THP off, yet a share of %g", s1);
  CHECK_MSG(s0 == -1.0 || (s0 >= 0.0 && s0 <= 1.0), "share %g", s0);
  if (a && b) CHECK(memcmp(a, b, 32000 * 2 * sizeof(float)) == 0);

  /* A fresh copy: small page-cache folios, so the load re-reads it. */
  const char *copy = tm_tmpfile("copy.gguf");
  FILE *in = fopen(path, "rb"), *out = fopen(copy, "wb");
  CHECK(in && out);
  if (in && out) {
    char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) CHECK(fwrite(buf, 1, n, out) == n);
  }
  if (in) fclose(in);
  if (out) fclose(out);
  float *c = run(copy, false, &c2, &s2);
  CHECK(!c2);
  CHECK_MSG(s2 == -1.0 || (s2 >= 0.0 && s2 <= 1.0), "share %g", s2);
  fprintf(stderr, "  2 MiB page share: fixture %.2f, fresh copy %.2f\n", s0, s2);
  if (a && c) CHECK(memcmp(a, c, 32000 * 2 * sizeof(float)) == 0);
  free(a);
  free(b);
  free(c);
}

void tm_run_tests(void) { TM_RUN(hugepages_give_the_same_logits); }
