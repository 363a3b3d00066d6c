/* test_ggml_types: the GGML type table (ids, names, block and type sizes as
 * ggml-common.h defines them), removed/out-of-range ids, name lookup, and
 * ggml_row_bytes' rejection of non-multiples and overflow. */
#include <stdint.h>

#include "gguf/ggml_types.h"
#include "tm_test.h"

struct expect {
  uint32_t id;
  const char *name;
  uint32_t block_size, type_size;
  int quantized, has_ref;
};

/* Sizes derived independently from the block structs in ggml-common.h. */
static const struct expect expected[] = {
    {0, "F32", 1, 4, 0, 1},          {1, "F16", 1, 2, 0, 1},
    {2, "Q4_0", 32, 2 + 16, 1, 1},   {3, "Q4_1", 32, 2 + 2 + 16, 1, 1},
    {6, "Q5_0", 32, 2 + 4 + 16, 1, 1}, {7, "Q5_1", 32, 2 + 2 + 4 + 16, 1, 1},
    {8, "Q8_0", 32, 2 + 32, 1, 1},   {9, "Q8_1", 32, 2 + 2 + 32, 1, 0},
    {10, "Q2_K", 256, 16 + 64 + 2 + 2, 1, 0},
    {11, "Q3_K", 256, 32 + 64 + 12 + 2, 1, 0},
    {12, "Q4_K", 256, 2 + 2 + 12 + 128, 1, 1},
    {13, "Q5_K", 256, 2 + 2 + 12 + 32 + 128, 1, 1},
    {14, "Q6_K", 256, 128 + 64 + 16 + 2, 1, 1},
    {15, "Q8_K", 256, 4 + 256 + 2 * 16, 1, 0},
    {16, "IQ2_XXS", 256, 2 + 2 * 32, 1, 0},
    {17, "IQ2_XS", 256, 2 + 2 * 32 + 8, 1, 0},
    {18, "IQ3_XXS", 256, 2 + 3 * 32, 1, 0},
    {19, "IQ1_S", 256, 2 + 32 + 2 * 8, 1, 0},
    {20, "IQ4_NL", 32, 2 + 16, 1, 0},
    {21, "IQ3_S", 256, 2 + 64 + 8 + 32 + 4, 1, 0},
    {22, "IQ2_S", 256, 2 + 64 + 16, 1, 0},
    {23, "IQ4_XS", 256, 2 + 2 + 4 + 128, 1, 0},
    {24, "I8", 1, 1, 0, 0},          {25, "I16", 1, 2, 0, 0},
    {26, "I32", 1, 4, 0, 0},         {27, "I64", 1, 8, 0, 0},
    {28, "F64", 1, 8, 0, 0},
    {29, "IQ1_M", 256, 32 + 16 + 8, 1, 0},
    {30, "BF16", 1, 2, 0, 1},
    {34, "TQ1_0", 256, 48 + 4 + 2, 1, 0},
    {35, "TQ2_0", 256, 64 + 2, 1, 0},
    {39, "MXFP4", 32, 1 + 16, 1, 0},
    {40, "NVFP4", 64, 4 + 32, 1, 0},
    {41, "Q1_0", 128, 2 + 16, 1, 0},
};
#define N_EXPECTED (sizeof expected / sizeof expected[0])

static void test_every_defined_type(void) {
  CHECK_EQ_INT(N_EXPECTED, 34); /* 42 ids minus the 8 removed ones */
  for (size_t i = 0; i < N_EXPECTED; i++) {
    const struct expect *e = &expected[i];
    const struct ggml_type_info *ti = ggml_type_get(e->id);
    CHECK_MSG(ti != NULL, "type %u missing", e->id);
    if (!ti) continue;
    CHECK_STR(ti->name, e->name);
    CHECK_MSG(ti->block_size == e->block_size, "%s block %u want %u", e->name,
              ti->block_size, e->block_size);
    CHECK_MSG(ti->type_size == e->type_size, "%s size %u want %u", e->name, ti->type_size,
              e->type_size);
    CHECK_EQ_INT(ti->quantized, e->quantized);
    CHECK_EQ_INT(ti->has_ref, e->has_ref);
  }
  /* docs/design.md's list, spelled out once more as literal numbers. */
  CHECK_EQ_INT(ggml_type_get(GGML_TYPE_Q4_K)->type_size, 144);
  CHECK_EQ_INT(ggml_type_get(GGML_TYPE_Q6_K)->type_size, 210);
  CHECK_EQ_INT(ggml_type_get(GGML_TYPE_IQ4_XS)->type_size, 136);
  CHECK_EQ_INT(ggml_type_get(GGML_TYPE_MXFP4)->type_size, 17);
  CHECK_EQ_INT(ggml_type_get(GGML_TYPE_Q3_K)->type_size, 110);
  CHECK_EQ_INT(ggml_type_get(GGML_TYPE_Q2_K)->type_size, 84);
}

static void test_removed_and_out_of_range(void) {
  const uint32_t removed[] = {4, 5, 31, 32, 33, 36, 37, 38};
  for (size_t i = 0; i < sizeof removed / sizeof removed[0]; i++)
    CHECK_MSG(ggml_type_get(removed[i]) == NULL, "removed id %u should be NULL", removed[i]);
  CHECK(ggml_type_get(42) == NULL);
  CHECK(ggml_type_get(GGML_TYPE_COUNT) == NULL);
  CHECK(ggml_type_get(1000) == NULL);
  CHECK(ggml_type_get(UINT32_MAX) == NULL);
  CHECK(ggml_type_get((uint32_t)-1) == NULL);
  /* Exactly the expected ids are defined. */
  int defined = 0;
  for (uint32_t t = 0; t < 64; t++) defined += ggml_type_get(t) != NULL;
  CHECK_EQ_INT(defined, 34);
}

static void test_names_round_trip(void) {
  for (size_t i = 0; i < N_EXPECTED; i++)
    CHECK_EQ_INT(ggml_type_from_name(expected[i].name), expected[i].id);
  /* ggml's own lower-case spellings. */
  CHECK_EQ_INT(ggml_type_from_name("q4_K"), GGML_TYPE_Q4_K);
  CHECK_EQ_INT(ggml_type_from_name("bf16"), GGML_TYPE_BF16);
  CHECK_EQ_INT(ggml_type_from_name("iq2_xxs"), GGML_TYPE_IQ2_XXS);
  CHECK_EQ_INT(ggml_type_from_name("f32"), GGML_TYPE_F32);
  CHECK_EQ_INT(ggml_type_from_name("Q4_2"), -1); /* removed */
  CHECK_EQ_INT(ggml_type_from_name("Q4_K_M"), -1); /* a file type, not a tensor type */
  CHECK_EQ_INT(ggml_type_from_name(""), -1);
  CHECK_EQ_INT(ggml_type_from_name("Q4_"), -1);
  CHECK_EQ_INT(ggml_type_from_name(NULL), -1);
}

static void test_row_bytes(void) {
  uint64_t b = 12345;
  CHECK_EQ_INT(ggml_row_bytes(GGML_TYPE_F32, 1024, &b), 0);
  CHECK_EQ_U64(b, 4096);
  CHECK_EQ_INT(ggml_row_bytes(GGML_TYPE_F16, 3, &b), 0);
  CHECK_EQ_U64(b, 6);
  CHECK_EQ_INT(ggml_row_bytes(GGML_TYPE_Q4_0, 4096, &b), 0);
  CHECK_EQ_U64(b, 128 * 18);
  CHECK_EQ_INT(ggml_row_bytes(GGML_TYPE_Q4_K, 1024, &b), 0);
  CHECK_EQ_U64(b, 4 * 144);
  CHECK_EQ_INT(ggml_row_bytes(GGML_TYPE_Q1_0, 256, &b), 0);
  CHECK_EQ_U64(b, 36);
  CHECK_EQ_INT(ggml_row_bytes(GGML_TYPE_Q8_0, 0, &b), 0);
  CHECK_EQ_U64(b, 0);
  /* Qwen3-0.6B embedding as one row count: 151936 * 1024 Q6_K. */
  CHECK_EQ_INT(ggml_row_bytes(GGML_TYPE_Q6_K, 151936ull * 1024, &b), 0);
  CHECK_EQ_U64(b, 151936ull * 4 * 210);

  /* Not a whole number of blocks. */
  b = 777;
  CHECK_EQ_INT(ggml_row_bytes(GGML_TYPE_Q4_K, 128, &b), -1);
  CHECK_EQ_U64(b, 777); /* untouched on failure */
  CHECK_EQ_INT(ggml_row_bytes(GGML_TYPE_Q8_0, 33, &b), -1);
  CHECK_EQ_INT(ggml_row_bytes(GGML_TYPE_NVFP4, 32, &b), -1);
  /* Unknown types. */
  CHECK_EQ_INT(ggml_row_bytes(4, 32, &b), -1);
  CHECK_EQ_INT(ggml_row_bytes(42, 32, &b), -1);
  CHECK_EQ_INT(ggml_row_bytes(UINT32_MAX, 32, &b), -1);
  /* Overflow: 2^62 F32 elements are 2^64 bytes. */
  CHECK_EQ_INT(ggml_row_bytes(GGML_TYPE_F32, 1ull << 62, &b), -1);
  CHECK_EQ_INT(ggml_row_bytes(GGML_TYPE_I64, UINT64_MAX, &b), -1);
  CHECK_EQ_INT(ggml_row_bytes(GGML_TYPE_F32, (1ull << 62) - 1, &b), 0);
  CHECK_EQ_U64(b, ((1ull << 62) - 1) * 4);
  /* Largest multiple of 32 elements whose Q8_0 size fits, and one block more. */
  const uint64_t max_blocks = UINT64_MAX / 34;
  CHECK_EQ_INT(ggml_row_bytes(GGML_TYPE_Q8_0, max_blocks * 32, &b), 0);
  CHECK_EQ_U64(b, max_blocks * 34);
  CHECK_EQ_INT(ggml_row_bytes(GGML_TYPE_Q8_0, (max_blocks + 1) * 32, &b), -1);
  /* I8 at UINT64_MAX elements is exactly UINT64_MAX bytes: fits. */
  CHECK_EQ_INT(ggml_row_bytes(GGML_TYPE_I8, UINT64_MAX, &b), 0);
  CHECK_EQ_U64(b, UINT64_MAX);
}

static void test_ref_dispatch_rejects(void) {
  float x[64] = {0};
  _Alignas(8) uint8_t buf[512];
  CHECK_EQ_INT(ggml_quantize_ref(GGML_TYPE_Q2_K, x, buf, 256), -1);  /* no reference */
  CHECK_EQ_INT(ggml_dequantize_ref(GGML_TYPE_IQ4_NL, buf, x, 32), -1);
  CHECK_EQ_INT(ggml_quantize_ref(4, x, buf, 32), -1);               /* removed id */
  CHECK_EQ_INT(ggml_quantize_ref(GGML_TYPE_Q8_0, x, buf, 33), -1);  /* not a multiple */
  CHECK_EQ_INT(ggml_quantize_ref(GGML_TYPE_Q8_0, x, buf, -32), -1); /* negative */
  CHECK_EQ_INT(ggml_quantize_ref(GGML_TYPE_Q8_0, x, buf + 1, 32), -1); /* misaligned */
  CHECK_EQ_INT(ggml_quantize_ref(GGML_TYPE_Q8_0, x, buf, 64), 0);
  CHECK_EQ_INT(ggml_quantize_ref(GGML_TYPE_F16, x, buf + 1, 3), 0); /* any alignment */
  CHECK_EQ_INT(ggml_quantize_ref(GGML_TYPE_Q4_K, x, buf, 0), 0);
}

void tm_run_tests(void) {
  TM_RUN(test_every_defined_type);
  TM_RUN(test_removed_and_out_of_range);
  TM_RUN(test_names_round_trip);
  TM_RUN(test_row_bytes);
  TM_RUN(test_ref_dispatch_rejects);
}
