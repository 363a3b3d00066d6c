/* buildcheck: a build's feature string against the machine's flags. */
#include "bench/buildcheck.h"
#include "tm_test.h"

static void names_what_the_build_lacks(void) {
  struct machine_info mi;
  memset(&mi, 0, sizeof mi);
  const char *flags[] = {"avx", "avx2", "fma", "f16c", "avx512f", "avx512_vnni"};
  for (size_t i = 0; i < 6; i++) snprintf(mi.flags[mi.n_flags++], sizeof mi.flags[0], "%s", flags[i]);
  const char *missing[BUILDCHECK_MAX];
  /* llama.cpp's style: a build without AVX-512 on a CPU with it */
  const char *info = "CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | AVX512 = 0 | "
                     "AVX512_VNNI = 0 | NEON = 0 | DOTPROD = 0 |";
  int n = buildcheck_missing(info, &mi, missing);
  CHECK_EQ_INT(n, 2);
  CHECK_STR(n > 0 ? missing[0] : NULL, "avx512f");
  CHECK_STR(n > 1 ? missing[1] : NULL, "avx512_vnni");
  /* NEON = 0 on an x86 machine is not a mismatch; AVX = 1 is not judged by AVX2's
   * or AVX512's values. */
  CHECK_EQ_INT(buildcheck_missing("AVX = 1 | AVX2 = 0 |", &mi, missing), 1);
  CHECK_STR(missing[0], "avx2");
  CHECK_EQ_INT(buildcheck_missing("AVX512=0", &mi, missing), 1);
  CHECK_EQ_INT(buildcheck_missing("AVX512 = 1 | AVX512_VNNI = 1", &mi, missing), 0);
  CHECK_EQ_INT(buildcheck_missing("", &mi, missing), 0);
  CHECK_EQ_INT(buildcheck_missing(NULL, &mi, missing), 0);
  CHECK_EQ_INT(buildcheck_missing("garbage = = 0 AVX2", &mi, missing), 0);
}

/* A feature the build says it uses: "NAME = 1", whole words only. */
static void reads_what_the_build_uses(void) {
  const char *info = "CPU : AVX512 = 1 | AVX512_VNNI = 1 | AMX_INT8 = 1 | LLAMAFILE = 1 |";
  CHECK(buildcheck_reports_on(info, "AMX_INT8"));
  CHECK(buildcheck_reports_on(info, "AVX512"));
  CHECK(!buildcheck_reports_on("AMX_INT8 = 0 |", "AMX_INT8"));
  CHECK(!buildcheck_reports_on("AVX512_AMX_INT8 = 1 |", "AMX_INT8"));
  CHECK(!buildcheck_reports_on("AMX_INT8X = 1", "AMX_INT8"));
  CHECK(buildcheck_reports_on("AMX_INT8=1", "AMX_INT8"));
  CHECK(!buildcheck_reports_on("", "AMX_INT8"));
  CHECK(!buildcheck_reports_on(NULL, "AMX_INT8"));
  CHECK(!buildcheck_reports_on("AMX_INT8 =", "AMX_INT8"));
}

void tm_run_tests(void) {
  TM_RUN(names_what_the_build_lacks);
  TM_RUN(reads_what_the_build_uses);
}
