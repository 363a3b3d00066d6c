/* buildcheck: see buildcheck.h. */
#include "bench/buildcheck.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>

/* The build's name for a feature, and the CPU flag that provides it. */
static const struct {
  const char *build, *flag;
} features[] = {
    {"AVX", "avx"},           {"AVX2", "avx2"},           {"FMA", "fma"},
    {"F16C", "f16c"},         {"AVX512", "avx512f"},      {"AVX512_VNNI", "avx512_vnni"},
    {"AVX512_BF16", "avx512_bf16"}, {"AVX_VNNI", "avx_vnni"}, {"AMX_INT8", "amx_int8"},
    {"NEON", "neon"},         {"DOTPROD", "asimddp"},     {"MATMUL_INT8", "i8mm"},
    {"SVE", "sve"},
};

/* The first character of NAME's value in "NAME = V" (NAME a whole word, so
 * "AVX" does not match "AVX2 = 0"); 0 when the string does not say. */
static char reported_value(const char *s, const char *name) {
  size_t n = strlen(name);
  for (const char *p = strstr(s, name); p; p = strstr(p + 1, name)) {
    bool starts = p == s || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
    const char *q = p + n;
    if (!starts || isalnum((unsigned char)*q) || *q == '_') continue;
    while (*q == ' ') q++;
    if (*q != '=') continue;
    q++;
    while (*q == ' ') q++;
    return *q;
  }
  return 0;
}

bool buildcheck_reports_on(const char *system_info, const char *name) {
  return system_info && name && reported_value(system_info, name) == '1';
}

int buildcheck_missing(const char *system_info, const struct machine_info *mi,
                       const char *missing[BUILDCHECK_MAX]) {
  int n = 0;
  if (!system_info || !*system_info || !mi) return 0;
  for (size_t i = 0; i < sizeof features / sizeof features[0] && n < BUILDCHECK_MAX; i++)
    if (reported_value(system_info, features[i].build) == '0' && machine_has_flag(mi, features[i].flag))
      missing[n++] = features[i].flag;
  return n;
}
