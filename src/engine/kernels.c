/* kernels: path names, activation formats, and the run-time choice of kernel
 * table (see kernels.h). The CPU dispatch lives in exactly one place,
 * cpu_can_run() below (plus cpu_has_dotprod(), which picks the NEON table's
 * integer variant); every other file only fills tables.
 *
 * Tables are built once (pthread_once) and immutable afterwards: each wider
 * path starts from a copy of the narrower one and overwrites the entries it
 * specialises, so a type without a SIMD kernel on some path runs the scalar
 * (or AVX2) function there. What each path specialises is listed in the
 * header comment of its file (kernels_avx2.c and kernels_avx512.c, with the
 * parts kernels_avx2.h and kernels_avx512.h list, kernels_neon.c).
 *
 * TOKMETER_KERNELS (kernels_forced below) caps what the tables hold and
 * what kernels_get hands out, so the tests run once per kernel set and an
 * A/B can pin one; it is read once, with the tables. */
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/kernels_amx.h"
#include "engine/kernels_internal.h"
#include "engine/kernels_neon.h"

#if defined(__aarch64__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1UL << 20) /* the Linux arm64 ABI's bit, for old headers */
#endif
/* The NEON path's one run-time question: whether sdot (ARMv8.2 dotprod) is
 * there. The kernel reports it in AT_HWCAP (user space cannot read the ID
 * registers portably). */
static bool cpu_has_dotprod(void) { return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0; }
#endif

const char *kernel_path_name(enum kernel_path p) {
  switch (p) {
  case KERNEL_AUTO: return "auto";
  case KERNEL_SCALAR: return "scalar";
  case KERNEL_AVX2: return "avx2";
  case KERNEL_AVX512: return "avx512";
  case KERNEL_AVX512_VNNI: return "avx512_vnni";
  case KERNEL_NEON: return "neon";
  default: return "unknown";
  }
}

enum act_format kernel_act_format(uint32_t weight_type) {
  switch (weight_type) {
  case GGML_TYPE_Q4_0:
  case GGML_TYPE_Q4_1:
  case GGML_TYPE_Q5_0:
  case GGML_TYPE_Q5_1:
  case GGML_TYPE_Q8_0: return ACT_Q8;
  case GGML_TYPE_Q4_K:
  case GGML_TYPE_Q5_K:
  case GGML_TYPE_Q6_K: return ACT_Q8K;
  default: return ACT_F32;
  }
}

size_t kernel_act_row_bytes(enum act_format f, int64_t n) {
  if (n < 0) return 0;
  switch (f) {
  case ACT_Q8: return (size_t)(n / 32) * sizeof(struct act_q8);
  case ACT_Q8K: return (size_t)(n / QK_K) * sizeof(struct act_q8k);
  default: return (size_t)n * sizeof(float);
  }
}

#if defined(__x86_64__) || defined(__i386__)
/* F16C (CPUID.1:ECX bit 29): not a feature name __builtin_cpu_supports takes
 * in every compiler (clang 14 refuses "f16c"), so read from CPUID. Its
 * registers are the AVX ones, whose OS support the avx2 check has confirmed. */
static bool cpu_has_f16c(void) {
  unsigned a, b, c, d;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}
#endif

/* The one place that asks the CPU what it can run. __builtin_cpu_supports
 * also checks that the OS saves the wide registers (XCR0), so a "yes" here
 * means the instructions are usable, not merely present. */
static bool cpu_can_run(enum kernel_path p) {
  switch (p) {
  case KERNEL_SCALAR: return true;
#if defined(__x86_64__) || defined(__i386__)
  case KERNEL_AVX2:
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
  case KERNEL_AVX512:
    return cpu_can_run(KERNEL_AVX2) && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  case KERNEL_AVX512_VNNI:
    return cpu_can_run(KERNEL_AVX512) && __builtin_cpu_supports("avx512vnni");
#endif
#if defined(__aarch64__)
  case KERNEL_NEON: return true; /* NEON is baseline on aarch64 */
#endif
  default: return false;
  }
}

/* Whether this build contains the path's code: the x86 paths on x86-64
 * builds, NEON on aarch64 builds. */
static bool build_has(enum kernel_path p) {
  switch (p) {
  case KERNEL_SCALAR: return true;
#if defined(__x86_64__)
  case KERNEL_AVX2:
  case KERNEL_AVX512:
  case KERNEL_AVX512_VNNI: return true;
#endif
#if defined(__aarch64__)
  case KERNEL_NEON: return true;
#endif
  default: return false;
  }
}

/* The kernel sets TOKMETER_KERNELS names, narrowest first. Each x86 set
 * holds the ones before it; vnni, vbmi and amx are one table
 * (KERNEL_AVX512_VNNI) with or without the VBMI decode kernels and the AMX
 * prefill tiles. */
enum kernel_set { SET_SCALAR, SET_AVX2, SET_AVX512, SET_VNNI, SET_VBMI, SET_AMX, SET_NEON, SET_ALL };
static const char *const set_names[] = {"scalar", "avx2", "avx512", "vnni",
                                        "vbmi",   "amx",  "neon",   NULL};
static const enum kernel_path set_path[] = {KERNEL_SCALAR,      KERNEL_AVX2,        KERNEL_AVX512,
                                            KERNEL_AVX512_VNNI, KERNEL_AVX512_VNNI, KERNEL_AVX512_VNNI,
                                            KERNEL_NEON};

static struct {
  bool unknown;         /* TOKMETER_KERNELS names no set */
  enum kernel_set set;  /* SET_ALL when TOKMETER_KERNELS is unset or empty */
  const char *name;     /* its value, for messages; NULL when unset */
  char unavailable[200]; /* why this CPU or build cannot run it; "" when it can */
} forced = {false, SET_ALL, NULL, ""};

static bool cpu_has_vbmi(void) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512vbmi");
#else
  return false;
#endif
}

static bool amx_turned_off(void) {
  const char *no_amx = getenv("TOKMETER_NO_AMX");
  return no_amx && no_amx[0] == '1';
}

static void read_forced(void) {
  const char *v = getenv("TOKMETER_KERNELS");
  if (!v || !*v) return;
  forced.name = v;
  int set = -1;
  for (int i = 0; set_names[i]; i++)
    if (strcmp(v, set_names[i]) == 0) set = i;
  char *why = forced.unavailable;
  size_t n = sizeof forced.unavailable;
  if (set < 0) {
    snprintf(why, n, "TOKMETER_KERNELS=%s is not a kernel set (scalar, avx2, avx512, vnni, "
                     "vbmi, amx, neon)", v);
    forced.unknown = true; /* kernels_get hands out nothing */
    return;
  }
  forced.set = (enum kernel_set)set;
  enum kernel_path p = set_path[set];
  if (!build_has(p))
    snprintf(why, n, "TOKMETER_KERNELS=%s: this build has no %s kernels (%s)", v, v,
#if defined(__aarch64__)
             "an aarch64 build"
#else
             "an x86-64 build"
#endif
    );
  else if (!cpu_can_run(p))
    snprintf(why, n, "TOKMETER_KERNELS=%s: this CPU lacks %s", v,
             p == KERNEL_AVX2     ? "AVX2, FMA or F16C"
             : p == KERNEL_AVX512 ? "AVX-512 F, BW or VL"
                                  : "AVX-512 VNNI (or AVX-512 F, BW, VL)");
  else if (forced.set == SET_VBMI && !cpu_has_vbmi())
    snprintf(why, n, "TOKMETER_KERNELS=vbmi: this CPU lacks AVX-512 VBMI");
  else if (forced.set == SET_AMX && amx_turned_off())
    snprintf(why, n, "TOKMETER_KERNELS=amx with TOKMETER_NO_AMX=1: the tiles are turned off");
#if defined(__x86_64__)
  else if (forced.set == SET_AMX && !kernels_amx_usable())
    snprintf(why, n, "TOKMETER_KERNELS=amx: this CPU or OS gives no AMX int8 tiles (AMX-TILE, "
                     "AMX-INT8, the OS's tile state, AVX-512 F/BW/VL/DQ)");
#endif
}

/* Whether the forced set (or none) allows a table or a part of one. */
static bool set_allows(enum kernel_set part) {
  if (forced.unavailable[0]) return false;
  if (forced.set == SET_ALL) return true;
  if (part == SET_NEON || forced.set == SET_NEON) return part == forced.set || part == SET_SCALAR;
  return part <= forced.set;
}
static bool set_allows_path(enum kernel_path p) {
  switch (p) {
  case KERNEL_SCALAR: return set_allows(SET_SCALAR);
  case KERNEL_AVX2: return set_allows(SET_AVX2);
  case KERNEL_AVX512: return set_allows(SET_AVX512);
  case KERNEL_AVX512_VNNI: return set_allows(SET_VNNI);
  case KERNEL_NEON: return set_allows(SET_NEON);
  default: return false;
  }
}

static struct kernel_ops tables[KERNEL_PATH_COUNT];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void build_tables(void) {
  read_forced();
  kernels_fill_scalar(&tables[KERNEL_SCALAR]);
#if defined(__x86_64__)
  tables[KERNEL_AVX2] = tables[KERNEL_SCALAR];
  kernels_fill_avx2(&tables[KERNEL_AVX2]);
  tables[KERNEL_AVX512] = tables[KERNEL_AVX2];
  kernels_fill_avx512(&tables[KERNEL_AVX512]);
  tables[KERNEL_AVX512_VNNI] = tables[KERNEL_AVX512];
  kernels_fill_avx512_vnni(&tables[KERNEL_AVX512_VNNI]);
  /* Within the VNNI path, the decode kernels of kernels_vbmi.c depend on one
   * more feature (VBMI's byte permute), and its Q8_0 one, like the Q4_K and
   * Q5_K lanes kernels, on the vendor it was measured on; asked here so the
   * CPU questions stay in this file. */
  __builtin_cpu_init();
  if (__builtin_cpu_is("amd")) kernels_fill_kquant_lanes(&tables[KERNEL_AVX512_VNNI]);
  if (cpu_has_vbmi() && set_allows(SET_VBMI))
    kernels_fill_vbmi(&tables[KERNEL_AVX512_VNNI], __builtin_cpu_is("amd"));
  /* Prefill on AMX int8 tiles, in front of the VNNI entries they fall back
   * to (TOKMETER_NO_AMX=1 keeps the vector kernels: for A/B measurements). */
  if (!amx_turned_off() && set_allows(SET_AMX) && kernels_amx_usable())
    kernels_fill_amx(&tables[KERNEL_AVX512_VNNI]);
#endif
#if defined(__aarch64__)
  /* One NEON table: its integer kernels are the sdot ones when the CPU has
   * dotprod, the widening-multiply ones otherwise (same integer dots). */
  tables[KERNEL_NEON] = tables[KERNEL_SCALAR];
  kernels_fill_neon(&tables[KERNEL_NEON], cpu_has_dotprod());
#endif
}

enum kernel_path kernels_best_for_cpu(void) {
#if defined(__aarch64__)
  return KERNEL_NEON;
#else
  static const enum kernel_path order[] = {KERNEL_AVX512_VNNI, KERNEL_AVX512, KERNEL_AVX2};
  for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
    if (cpu_can_run(order[i])) return order[i];
  return KERNEL_SCALAR;
#endif
}

const struct kernel_ops *kernels_get(enum kernel_path p) {
  pthread_once(&tables_once, build_tables);
  if (p == KERNEL_AUTO) {
    static const enum kernel_path order[] = {KERNEL_AVX512_VNNI, KERNEL_AVX512, KERNEL_AVX2,
                                             KERNEL_NEON, KERNEL_SCALAR};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
      if (build_has(order[i]) && cpu_can_run(order[i]) && set_allows_path(order[i]))
        return &tables[order[i]];
    return NULL;
  }
  if ((int)p < 0 || p >= KERNEL_PATH_COUNT || !build_has(p) || !cpu_can_run(p) ||
      !set_allows_path(p))
    return NULL;
  return &tables[p];
}

const char *kernels_forced_name(void) {
  pthread_once(&tables_once, build_tables);
  return forced.name;
}

bool kernels_forced_known(void) {
  pthread_once(&tables_once, build_tables);
  return !forced.unknown;
}

const char *kernels_forced_unavailable(void) {
  pthread_once(&tables_once, build_tables);
  return forced.unavailable[0] ? forced.unavailable : NULL;
}

bool kernels_supports(uint32_t weight_type) {
  if (weight_type >= GGML_TYPE_COUNT) return false;
  pthread_once(&tables_once, build_tables);
  /* Wider tables start from the scalar one, so scalar support is the answer. */
  return tables[KERNEL_SCALAR].gemm[weight_type] != NULL;
}
