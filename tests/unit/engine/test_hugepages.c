/* engine_options.hugepages: the weights copied into huge pages at load must
 * give bit-identical logits to the memory-mapped weights (the copy is the
 * file's bytes at the same addresses), and the engine must say it copied. */
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "tm_test.h"

static float *run(const char *path, bool hugepages, bool *copied) {
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

static void hugepages_give_the_same_logits(void) {
  const char *path = tm_fixture("gguf/tiny-llama-Q4_0.gguf");
  bool c0 = true, c1 = false;
  float *a = run(path, false, &c0), *b = run(path, true, &c1);
  CHECK(!c0);
  CHECK(c1);
  if (a && b) CHECK(memcmp(a, b, 32000 * 2 * sizeof(float)) == 0);
  free(a);
  free(b);
}

void tm_run_tests(void) { TM_RUN(hugepages_give_the_same_logits); }
