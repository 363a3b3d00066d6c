/* Tests for model_cost_from_preset and model_cost_from_file (plan.c,
 * from_gguf.c): the one way every command turns a preset or a GGUF file into
 * a model's cost, and its error lines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf/ggml_types.h"
#include "model/analysis.h"
#include "tm_test.h"

static void test_preset(void) {
  struct model_cost c;
  struct tm_err err = {{0}};
  char type[32] = "";
  CHECK_EQ_INT(model_cost_from_preset("tiny", "Q8_0", GGML_TYPE_F16, &c, type, sizeof type, &err),
               0);
  CHECK_STR(type, "Q8_0");
  CHECK(c.bytes_total > 0 && c.weight_bytes_per_token > 0);
  /* the default type is Q4_K_M */
  CHECK_EQ_INT(model_cost_from_preset("tiny", NULL, GGML_TYPE_F16, &c, type, sizeof type, &err), 0);
  CHECK_STR(type, "Q4_K_M");
  CHECK_EQ_INT(model_cost_from_preset("nope", NULL, GGML_TYPE_F16, &c, NULL, 0, &err), -1);
  CHECK(strstr(err.msg, "unknown preset 'nope'; accepted: ") != NULL);
  CHECK(strstr(err.msg, "qwen3-0.6b") != NULL);
  CHECK_EQ_INT(model_cost_from_preset("tiny", "Q9", GGML_TYPE_F16, &c, NULL, 0, &err), -1);
  CHECK(strstr(err.msg, "unknown type 'Q9'") != NULL);
}

static void test_file_errors_name_the_file(void) {
  struct model_cost c;
  struct tm_err err = {{0}};
  CHECK_EQ_INT(model_cost_from_file("/nonexistent/m.gguf", GGML_TYPE_F16, &c, NULL, &err), -1);
  CHECK(strstr(err.msg, "/nonexistent/m.gguf") == err.msg);
  char path[] = "/tmp/tm_cost_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  if (fd < 0) return;
  FILE *f = fdopen(fd, "w");
  fputs("junk, not a GGUF file", f);
  fclose(f);
  CHECK_EQ_INT(model_cost_from_file(path, GGML_TYPE_F16, &c, NULL, &err), -1);
  /* the path once, at the start */
  CHECK(strstr(err.msg, path) == err.msg);
  CHECK(strstr(err.msg + strlen(path), path) == NULL);
  unlink(path);
}

void tm_run_tests(void) {
  TM_RUN(test_preset);
  TM_RUN(test_file_errors_name_the_file);
}
