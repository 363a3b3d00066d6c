/* cmd_ceiling: `tokmeter ceiling` - how fast a model could decode and prefill on
 * a machine: bytes and FLOPs per token (src/model/analysis.h) against read
 * bandwidth and compute rate, measured by this machine's probe or given.
 *
 * Three model sources: a GGUF file, a preset shape at a file type (the tensor
 * types llama-quantize would choose, via model_plan_make), or the napkin
 * (--size, --active-fraction). Human output on stdout, or one JSON object with
 * --json whose keys are a contract documented in docs/ceiling.md.
 * Exit codes: 0 ok; 2 bad flag, unknown preset/type/unit, missing or corrupt
 * file; 1 the probe failed. */
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/cli.h"
#include "gguf/ggml_types.h"
#include "machine/probe.h"
#include "model/analysis.h"
#include "analysis/ceiling_report.h"
#include "model/ceiling.h"
#include "model/plan.h"
#include "model/shape.h"
#include "util/units.h"

static const char *const CMD = "ceiling";
#define MAX_DEPTHS CEILING_REPORT_MAX_DEPTHS
#define DEFAULT_OVERHEAD_BYTES (1024.0 * 1024 * 1024)

struct ceiling_opts {
  const char *file, *preset, *type;
  double size_bytes, active_fraction;
  double bandwidth, compute;   /* 0 = measure */
  bool compute_flops;          /* --compute named FLOPS (else OPS / a bare number) */
  uint32_t threads;            /* 0 = best */
  uint64_t depths[MAX_DEPTHS];
  size_t n_depths;
  uint32_t prompt_tokens;
  uint32_t kv_type;
  double memory_bytes, overhead_bytes;
  double measured_decode, measured_prefill; /* < 0 = not given */
  uint32_t batches[MAX_DEPTHS];
  size_t n_batches;
  bool json;
};

/* list ("A, B, C, ...") wrapped at 80 columns, each line indented by 25. */
static const char *wrapped(const char *list, char *buf, size_t n) {
  size_t at = 0, col = 0;
  for (const char *p = list; *p && at + 30 < n;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) + 1 : strlen(p);
    if (col == 0 || col + len + 1 > 80) {
      at += (size_t)snprintf(buf + at, n - at, "%s%25s", col ? "\n" : "", "");
      col = 25;
    } else {
      buf[at++] = ' ', col++;
    }
    memcpy(buf + at, p, len);
    at += len, col += len;
    p += len;
    while (*p == ' ') p++;
  }
  buf[at] = 0;
  return buf;
}

/* A reference, at most about 45 lines; the method is in docs/ceiling.md. */
static void usage(FILE *out) {
  char types[512];
  fprintf(out,
          "Usage: tokmeter ceiling FILE.gguf [options]\n"
          "       tokmeter ceiling --preset NAME [--type T] [options]\n"
          "       tokmeter ceiling --size BYTES [--active-fraction F] [options]\n"
          "How fast a model could run: decode = read bandwidth / bytes read per token;\n"
          "prefill = compute rate / FLOPs per prompt token. Details: docs/ceiling.md.\n"
          "Model (exactly one):\n"
          "  FILE.gguf              a GGUF model file (any architecture)\n"
          "  --preset NAME          a known shape (tokmeter synth --list-presets)\n"
          "  --type T               file type for --preset (default Q4_K_M), one of:\n"
          "%s\n"
          "  --size BYTES           napkin: a model of this size (e.g. 15GB)\n"
          "  --active-fraction F    napkin: share of --size read per token, 0 < F <= 1\n"
          "                         (default 1)\n"
          "Machine (default: this machine's probe, cached):\n"
          "  --bandwidth BW         read bandwidth, e.g. 273GB/s\n"
          "  --compute RATE         prefill compute, e.g. 14TFLOPS or 900GOPS (default:\n"
          "                         probed int8 for a quantized model, else f32; none\n"
          "                         with --bandwidth alone)\n"
          "  -t, --threads N        the probe's figures at N threads (default: the best)\n"
          "  --memory BYTES         memory for the context that fits (default MemTotal)\n"
          "  --overhead BYTES       memory kept for runtime buffers (default 1GiB)\n"
          "  SI (k, M, G, T) or binary (Ki, Mi, Gi) prefixes; a bare number is the base\n"
          "  unit: --bandwidth 100 is 100 B/s, --size 1e9 is 1e9 bytes.\n"
          "Workload:\n"
          "  -d, --depth LIST       context depths for decode (default 0,4096,32768)\n"
          "  -p, --prompt-tokens N  prompt length for prefill (default 512)\n"
          "  --batch LIST           aggregate decode of B streams at the first depth\n"
          "  --kv-type T            KV cache type: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0,\n"
          "                         Q5_1, IQ4_NL (default F16)\n"
          "Verdicts:\n"
          "  --measured-decode X    a measured decode rate (tok/s): %% of ceiling, verdict\n"
          "  --measured-prefill X   a measured prefill rate (tok/s): %% of ceiling, verdict\n"
          "Output:\n"
          "  --json                 one JSON object on stdout (keys: docs/ceiling.md)\n"
          "  -h, --help             this help\n"
          "Exit: 0 ok; 1 the probe failed; 2 bad usage, unknown preset/type/unit,\n"
          "missing or corrupt file.\n",
          wrapped(model_ftype_names(), types, sizeof types));
}

/* Returns -1 with a usage error printed, 1 when --help was printed, 0 ok. */
static int parse_args(int argc, char **argv, struct ceiling_opts *o, int *rc) {
  enum { O_PRESET = 256, O_TYPE, O_SIZE, O_FRAC, O_BW, O_COMPUTE, O_KV, O_MEM, O_OVERHEAD,
         O_MDEC, O_MPRE, O_JSON, O_BATCH };
  static const struct option longopts[] = {
      {"preset", required_argument, 0, O_PRESET}, {"type", required_argument, 0, O_TYPE},
      {"size", required_argument, 0, O_SIZE}, {"active-fraction", required_argument, 0, O_FRAC},
      {"bandwidth", required_argument, 0, O_BW}, {"compute", required_argument, 0, O_COMPUTE},
      {"threads", required_argument, 0, 't'}, {"depth", required_argument, 0, 'd'},
      {"batch", required_argument, 0, O_BATCH},
      {"prompt-tokens", required_argument, 0, 'p'}, {"kv-type", required_argument, 0, O_KV},
      {"memory", required_argument, 0, O_MEM}, {"overhead", required_argument, 0, O_OVERHEAD},
      {"measured-decode", required_argument, 0, O_MDEC},
      {"measured-prefill", required_argument, 0, O_MPRE}, {"json", no_argument, 0, O_JSON},
      {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
  memset(o, 0, sizeof *o);
  o->active_fraction = 1.0;
  o->depths[0] = 0, o->depths[1] = 4096, o->depths[2] = 32768;
  o->n_depths = 3;
  o->prompt_tokens = 512;
  o->kv_type = GGML_TYPE_F16;
  o->overhead_bytes = DEFAULT_OVERHEAD_BYTES;
  o->measured_decode = o->measured_prefill = -1;
  bool have_size = false, have_frac = false;
  const char *size_arg = NULL;
  struct tm_err err = {{0}};
  opterr = 0;
  optind = 1;
  int c;
  while ((c = getopt_long(argc, argv, ":ht:d:p:", longopts, NULL)) != -1) {
    int bad = 0;
    switch (c) {
      case 'h': usage(stdout); *rc = TM_EXIT_OK; return 1;
      case O_PRESET: o->preset = optarg; break;
      case O_TYPE: o->type = optarg; break;
      case O_SIZE:
        bad = tm_parse_bytes(optarg, &o->size_bytes, &err);
        have_size = true;
        size_arg = optarg;
        break;
      case O_FRAC: {
        have_frac = true;
        char *end;
        o->active_fraction = strtod(optarg, &end);
        if (*end || !(o->active_fraction > 0 && o->active_fraction <= 1))
          bad = tm_errf(&err, "--active-fraction: '%s' is not a number in (0, 1]", optarg);
        break;
      }
      case O_BW:
        bad = tm_parse_bandwidth(optarg, &o->bandwidth, &err);
        if (!bad && !(o->bandwidth > 0)) bad = tm_errf(&err, "--bandwidth must be > 0");
        break;
      case O_COMPUTE:
        bad = tm_parse_ops_rate(optarg, &o->compute, &err);
        o->compute_flops = strcasestr(optarg, "FLOP") != NULL;
        if (!bad && !(o->compute > 0)) bad = tm_errf(&err, "--compute must be > 0");
        break;
      case 't': bad = tm_parse_u32(optarg, "--threads", &o->threads, &err); break;
      case 'd':
        if (tm_parse_u64_list(optarg, "--depth", 1000000000ull, o->depths, MAX_DEPTHS, &o->n_depths, NULL) != 0)
          bad = tm_errf(&err, "--depth: '%s' is not a list of up to %d integers >= 0 (e.g. "
                              "0,4096,32768)", optarg, MAX_DEPTHS);
        break;
      case 'p': bad = tm_parse_u32(optarg, "--prompt-tokens", &o->prompt_tokens, &err); break;
      case O_BATCH: {
        uint64_t v[MAX_DEPTHS];
        size_t n = 0;
        if (tm_parse_u64_list(optarg, "--batch", 65536, v, MAX_DEPTHS, &n, NULL) != 0)
          bad = tm_errf(&err, "--batch: '%s' is not a list of up to %d stream counts 1..65536 "
                              "(e.g. 1,8,64)", optarg, MAX_DEPTHS);
        for (size_t i = 0; !bad && i < n; i++) {
          if (v[i] == 0) bad = tm_errf(&err, "--batch: a batch holds at least 1 stream");
          o->batches[i] = (uint32_t)v[i];
        }
        o->n_batches = bad ? 0 : n;
        break;
      }
      case O_KV:
        if (model_kv_type_from_name(optarg, &o->kv_type) != 0)
          bad = tm_errf(&err, "--kv-type: unknown type '%s'; accepted: F32, F16, BF16, Q8_0, "
                              "Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL", optarg);
        break;
      case O_MEM:
        bad = tm_parse_bytes(optarg, &o->memory_bytes, &err);
        if (!bad && !(o->memory_bytes > 0)) bad = tm_errf(&err, "--memory must be > 0");
        break;
      case O_OVERHEAD: bad = tm_parse_bytes(optarg, &o->overhead_bytes, &err); break;
      case O_MDEC:
        bad = tm_parse_tokens(optarg, &o->measured_decode, &err);
        if (!bad && !(o->measured_decode > 0))
          bad = tm_errf(&err, "--measured-decode must be a rate > 0 tok/s");
        break;
      case O_MPRE:
        bad = tm_parse_tokens(optarg, &o->measured_prefill, &err);
        if (!bad && !(o->measured_prefill > 0))
          bad = tm_errf(&err, "--measured-prefill must be a rate > 0 tok/s");
        break;
      case O_JSON: o->json = true; break;
      case ':':
        *rc = cli_usage_error(CMD, "option '%s' needs a value", argv[optind - 1]);
        return -1;
      default:
        *rc = cli_bad_option(CMD, argv[optind - 1], longopts);
        return -1;
    }
    if (bad) {
      *rc = cli_usage_error(CMD, "%s", err.msg);
      return -1;
    }
  }
  if (optind < argc) o->file = argv[optind++];
  if (optind < argc) {
    *rc = cli_usage_error(CMD, "unexpected argument '%s' (one model file at most)", argv[optind]);
    return -1;
  }
  int sources = (o->file != NULL) + (o->preset != NULL) + have_size;
  if (sources != 1) {
    *rc = cli_usage_error(CMD, sources ? "give one model: FILE.gguf, --preset or --size"
                                       : "no model: give FILE.gguf, --preset NAME or --size BYTES");
    return -1;
  }
  /* 1 EB: far beyond any model, and below where byte counts lose integer
   * precision in a double. */
  if (have_size && !(o->size_bytes > 0 && o->size_bytes <= 1e18)) {
    *rc = cli_usage_error(CMD, "--size must be > 0 and at most 1 EB");
    return -1;
  }
  /* The smallest model files here are a few MB (the tests' 2-layer ones);
   * below 1 MB a bare number is a missing unit, and its ceiling (703 million
   * tok/s for "--size 15") would be a number no machine reaches. */
  if (have_size && o->size_bytes < 1e6) {
    bool bare = strspn(size_arg, "0123456789.eE+-") == strlen(size_arg);
    *rc = bare ? cli_usage_error(CMD, "--size %s is %s bytes, smaller than any language model "
                                      "(1 MB at least); did you mean %sGB?",
                                 size_arg, size_arg, size_arg)
               : cli_usage_error(CMD, "--size %s: smaller than any language model (1 MB at "
                                      "least)", size_arg);
    return -1;
  }
  if (have_size && o->n_batches) {
    *rc = cli_usage_error(CMD, "--batch needs a model's shape (FILE.gguf or --preset): the "
                               "experts and the KV cache per stream; --size has neither");
    return 1;
  }
  if (have_frac && !have_size) {
    *rc = cli_usage_error(CMD, "--active-fraction goes with --size (a file's or preset's "
                               "experts are read from it)");
    return -1;
  }
  if (o->type && !o->preset) {
    *rc = cli_usage_error(CMD, "--type goes with --preset (a file's types are read from it)");
    return -1;
  }
  return 0;
}

/* ------------------------------------------------------------ the model -- */

static int load_model(const struct ceiling_opts *o, struct model_cost *cost, char *type_name,
                      size_t tn) {
  struct tm_err err = {{0}};
  if (o->file) {
    struct model_file_facts facts;
    if (model_cost_from_file(o->file, o->kv_type, cost, &facts, &err) != 0)
      return cli_fail(CMD, TM_EXIT_USAGE, "%s", err.msg);
    snprintf(type_name, tn, "%s", facts.file_type);
  } else {
    const int rc = model_cost_from_preset(o->preset, o->type, o->kv_type, cost, type_name, tn, &err);
    if (rc != 0) return cli_fail(CMD, rc == -2 ? TM_EXIT_RUNTIME : TM_EXIT_USAGE, "%s", err.msg);
  }
  if (cost->bytes_total == 0) return cli_fail(CMD, TM_EXIT_USAGE, "the model has no tensor data");
  return 0;
}

/* ------------------------------------------------------------ the machine -- */


static int machine_rates_get(const struct ceiling_opts *o, double quantized_fraction,
                             struct ceiling_machine *m) {
  memset(m, 0, sizeof *m);
  m->memory_bytes = o->memory_bytes;
  if (o->compute > 0) {
    m->compute = o->compute;
    m->rates.given_compute_ops_s = o->compute;
    snprintf(m->compute_path, sizeof m->compute_path, "given");
  }
  if (o->bandwidth > 0) {
    m->bandwidth = m->rates.read_bw_bytes_s = o->bandwidth;
    if (o->threads) cli_warn(CMD, "-t ignored: the bandwidth is given");
    return 0;
  }
  struct machine_probe *p = calloc(1, sizeof *p);
  if (!p) return cli_fail(CMD, TM_EXIT_RUNTIME, "out of memory");
  struct tm_err err = {{0}};
  if (probe_get(p, false, cli_progress, (void *)CMD, &err) != 0) {
    cli_progress_done();
    free(p);
    return cli_fail(CMD, TM_EXIT_RUNTIME, "probe failed: %s (give --bandwidth instead)",
                    err.msg);
  }
  cli_progress_done();
  if (err.msg[0]) cli_warn(CMD, "%s", err.msg); /* e.g. a corrupt cache was replaced */
  char warn[400];
  if (probe_busy_warning(p, warn, sizeof warn)) cli_warn(CMD, "%s", warn);
  memset(&err, 0, sizeof err);
  const int rc = ceiling_machine_from_probe(p, o->threads, quantized_fraction, o->prompt_tokens,
                                            m, &err);
  free(p);
  if (rc != 0)
    return cli_fail(CMD, rc == -2 ? TM_EXIT_USAGE : TM_EXIT_RUNTIME, "%s", err.msg);
  return 0;
}

/* ------------------------------------------------------------ output -- */

static void types_line(const struct model_cost *c, char *buf, size_t n) {
  buf[0] = 0;
  for (size_t i = 0; i < c->n_types; i++) {
    const struct ggml_type_info *ti = ggml_type_get(c->types[i].type);
    snprintf(buf + strlen(buf), n - strlen(buf), "%s%s x %u", i ? ", " : "",
             ti ? ti->name : "?", c->types[i].count);
  }
}

/* Why no context fits, naming what does not: the weights alone, with the
 * recurrent state, with the overhead, or then not one token of KV cache. */
static void fits_none_line(const struct model_cost *c, double memory, double overhead) {
  char b1[64], b2[64];
  double weights = (double)c->bytes_total;
  tm_fmt_bytes(weights, b1, sizeof b1);
  if (weights > memory)
    printf("none: the weights (%s) do not fit\n", b1);
  else if (weights + c->state_bytes > memory)
    printf("none: the weights (%s) and the recurrent state (%s) do not fit\n", b1,
           tm_fmt_bytes(c->state_bytes, b2, sizeof b2));
  else if (weights + c->state_bytes + overhead >= memory)
    printf("none: the weights (%s) fit, but not with the %s overhead (--overhead)\n", b1,
           tm_fmt_bytes(overhead, b2, sizeof b2));
  else
    printf("none: not one token of KV cache (%s) fits after the weights and overhead\n",
           tm_fmt_bytes(c->kv_bytes_per_token, b2, sizeof b2));
}

int cmd_ceiling(int argc, char **argv) {
  struct ceiling_opts o;
  int rc = 0;
  int pr = parse_args(argc, argv, &o, &rc);
  if (pr != 0) return rc;

  bool napkin = o.file == NULL && o.preset == NULL;
  struct model_cost cost;
  memset(&cost, 0, sizeof cost);
  char type_name[32] = "";
  if (!napkin && (rc = load_model(&o, &cost, type_name, sizeof type_name)) != 0) return rc;

  struct ceiling_machine m;
  if ((rc = machine_rates_get(&o, napkin ? 0 : cost.quantized_bytes_fraction, &m)) != 0)
    return rc;

  struct ceiling_query q = {.cost = napkin ? NULL : &cost, .size_bytes = o.size_bytes,
                           .active_fraction = o.active_fraction, .file = o.file,
                           .preset = o.preset, .type_name = type_name, .kv_type = o.kv_type,
                           .prompt_tokens = o.prompt_tokens, .n_depths = o.n_depths,
                           .overhead_bytes = o.overhead_bytes,
                           .measured_decode = o.measured_decode,
                           .measured_prefill = o.measured_prefill,
                           .n_batches = o.n_batches};
  memcpy(q.depths, o.depths, sizeof q.depths);
  memcpy(q.batches, o.batches, sizeof q.batches);
  struct ceiling_report r;
  struct tm_err err = {{0}};
  if (ceiling_report_make(&q, &m, &r, &err) != 0) return cli_fail(CMD, TM_EXIT_USAGE, "%s", err.msg);
  if (r.prefill_verdict_missing[0])
    cli_warn(CMD, "--measured-prefill: no prefill ceiling (%s)", r.prefill_verdict_missing);
  const double bytes_total = r.bytes_total, bpt0 = r.bpt0, decode0 = r.decode0, dense = r.dense;
  const double prefill = r.prefill, prefill_bound = r.prefill_bound, prefill_tiles = r.prefill_tiles;
  const double prefill_flops = r.prefill_flops;
  const bool kv_known = r.kv_known, fits_known = r.fits_known, fits_capped = r.fits_capped;
  const uint64_t fits = r.fits;

  if (o.json) {
    return cli_print_json(CMD, ceiling_report_json(&q, &m, &r));
  }

  /* Human output. */
  char b1[64], b2[64], b3[64], b4[64], line[1024];
  if (napkin) {
    printf("model: %s (napkin: --size)", tm_fmt_bytes_si(o.size_bytes, b1, sizeof b1));
    if (o.active_fraction < 1)
      printf(", %.3g of it read per token = %s", o.active_fraction,
             tm_fmt_bytes_si(bpt0, b2, sizeof b2));
    printf("\n");
  } else {
    types_line(&cost, line, sizeof line);
    printf("model: %s  %s, %s of tensors (%s)\n",
           o.file ? o.file : o.preset, cost.arch, tm_fmt_bytes(bytes_total, b1, sizeof b1), line);
    if (o.preset) printf("       preset at %s, with the tensor types llama-quantize chooses\n",
                         type_name);
    printf("params: %s total, %s active per token%s\n",
           tm_fmt_count((double)cost.params_total, b1, sizeof b1),
           tm_fmt_count(cost.params_active, b2, sizeof b2),
           cost.moe ? " (routed experts at used/count)" : "");
    printf("bytes read per generated token: %s (weights%s%s)\n",
           tm_fmt_bytes_si(bpt0, b1, sizeof b1),
           cost.tied ? "; tied embedding read in full as the head"
                     : "; input embedding: one row; output head in full",
           cost.state_bytes > 0 ? "; recurrent state" : "");
    const struct ggml_type_info *kvt = ggml_type_get(o.kv_type);
    if (kv_known)
      printf("KV cache: %s per token of context (%s; %u attention layers",
             tm_fmt_bytes(cost.kv_bytes_per_token, b1, sizeof b1), kvt ? kvt->name : "?",
             cost.n_attn_layers);
    else
      printf("KV cache: unknown (no head count in the file; %u attention layers",
             cost.n_attn_layers);
    if (cost.n_swa_layers)
      printf(", %u of them windowed at %u tokens", cost.n_swa_layers, cost.sliding_window);
    if (cost.n_recurrent_layers)
      printf("; %u recurrent layers keep %s of state", cost.n_recurrent_layers,
             tm_fmt_bytes(cost.state_bytes, b2, sizeof b2));
    printf(")\n");
    if (!kv_known && m.memory_bytes > 0) {
      printf("context that fits in %s: unknown (the KV cache per token is unknown)\n",
             tm_fmt_bytes(m.memory_bytes, b1, sizeof b1));
    } else if (fits_known) {
      printf("context that fits in %s (after the weights and %s overhead): ",
             tm_fmt_bytes(m.memory_bytes, b1, sizeof b1),
             tm_fmt_bytes(o.overhead_bytes, b2, sizeof b2));
      if (fits == 0) fits_none_line(&cost, m.memory_bytes, o.overhead_bytes);
      else if (fits == UINT64_MAX) printf("unbounded (the cache does not grow)\n");
      else printf("%llu tokens%s\n", (unsigned long long)fits,
                  fits_capped ? " (capped at the trained context_length)" : "");
    }
  }
  printf("machine: read bandwidth %s", tm_fmt_bandwidth(m.bandwidth, b1, sizeof b1));
  if (m.probed) printf(" at %u thread%s (from this machine's probe%s)", m.bw_threads,
                       m.bw_threads == 1 ? "" : "s", m.quick ? ", QUICK: not memory bandwidth" : "");
  else printf(" (given)");
  if (m.compute > 0 && strcmp(m.compute_path, "given") == 0) {
    /* as given: 14TFLOPS is "14 TFLOPS (given)", not "given 14 TOPS" */
    printf("; compute %s (given)", tm_fmt_ops(m.compute, o.compute_flops ? "FLOPS" : "OPS", b2,
                                              sizeof b2));
  } else if (m.compute > 0) {
    /* the probe's f32 path counts FLOPs, its int8 path integer ops */
    printf("; compute %s %s", m.compute_path,
           tm_fmt_ops(m.compute, strncmp(m.compute_path, "f32", 3) == 0 ? "FLOPS" : "OPS", b2,
                      sizeof b2));
    if (m.compute_threads) printf(" at %u thread%s", m.compute_threads,
                                  m.compute_threads == 1 ? "" : "s");
  } else {
    printf("; compute not known (give --compute)");
  }
  printf("\n");
  if (napkin) {
    printf("decode ceiling: %s tok/s\n", tm_fmt_rate(decode0, b1, sizeof b1));
  } else {
    printf("decode ceiling (one stream, by context depth):\n");
    for (size_t i = 0; i < r.n_by_depth; i++) {
      const struct ceiling_depth_row *at = &r.by_depth[i];
      const double b = at->bytes_per_token;
      if (!kv_known && o.depths[i] > 0) {
        printf("  depth %7llu:  unknown     (the KV cache read per token is unknown)\n",
               (unsigned long long)o.depths[i]);
        continue;
      }
      printf("  depth %7llu: %8s tok/s  (%s read per token)%s\n",
             (unsigned long long)o.depths[i],
             tm_fmt_rate(at->tok_s, b1, sizeof b1),
             tm_fmt_bytes_si(b, b2, sizeof b2),
             cost.context_length && o.depths[i] > cost.context_length
                 ? "  beyond the trained context" : "");
    }
  }
  printf("practical decode (75-85%% of the ceiling at depth 0): %s to %s tok/s\n",
         tm_fmt_rate(decode0 * CEILING_PRACTICAL_LO, b1, sizeof b1),
         tm_fmt_rate(decode0 * CEILING_PRACTICAL_HI, b2, sizeof b2));
  if (r.moe_like)
    printf("dense ceiling (every byte of %s read per token): %s tok/s: only a fraction is "
           "read\n", tm_fmt_bytes_si(bytes_total, b1, sizeof b1),
           tm_fmt_rate(dense, b2, sizeof b2));
  if (!napkin) {
    /* The vector path's ceiling (or why there is none), then the tiles' as a
     * second line where the probe has them: two separate questions. */
    if (prefill > 0)
      printf("prefill ceiling (prompt of %u): %s tok/s (%s FLOPs per prompt token)\n",
             o.prompt_tokens, tm_fmt_rate(prefill, b1, sizeof b1),
             tm_fmt_count(prefill_flops, b3, sizeof b3));
    else if (prefill_bound > 0)
      printf("prefill ceiling (prompt of %u): unknown (the attention FLOPs are unknown); "
             "below %s tok/s, the rate without them (%s FLOPs per prompt token)\n",
             o.prompt_tokens, tm_fmt_rate(prefill_bound, b1, sizeof b1),
             tm_fmt_count(prefill_flops, b3, sizeof b3));
    else
      printf("prefill ceiling: not known (no compute rate; give --compute)\n");
    if (prefill_tiles > 0)
      printf("prefill ceiling on the int8 tiles (%s, %s): %s tok/s, for a runtime whose kernels "
             "use them (llama.cpp built with AMX_INT8; tokmeter's engine for Q4_0 and Q8_0)\n",
             m.tile_path, tm_fmt_ops(m.tile_compute, "OPS", b2, sizeof b2),
             tm_fmt_rate(prefill_tiles, b1, sizeof b1));
  }
  if (r.n_by_batch) {
    printf("decode ceiling of B streams at depth %.0f (all together; model/ceiling.h):\n",
           r.by_batch[0].depth);
    for (size_t i = 0; i < r.n_by_batch; i++) {
      const struct ceiling_batch_point *bp = &r.by_batch[i];
      printf("  B %5u: %9s tok/s aggregate, %8s per stream  (%s, %s FLOPs per step) %s bound\n",
             bp->batch, tm_fmt_rate(bp->aggregate_decode_tok_s, b1, sizeof b1),
             tm_fmt_rate(bp->per_stream_decode_tok_s, b2, sizeof b2),
             tm_fmt_bytes_si(bp->bytes_per_step, b3, sizeof b3),
             tm_fmt_count(bp->flops_per_step, b4, sizeof b4), bp->bound);
    }
    if (!isfinite(r.by_batch[0].compute_s))
      printf("  (no compute rate known: the memory bound alone)\n");
    else if (r.batch_turn)
      printf("  memory bound below %u streams, compute bound from %u\n", r.batch_turn,
             r.batch_turn);
    else
      printf("  memory bound up to 65536 streams (each stream's KV cache grows the step)\n");
  }
  for (size_t i = 0; i < r.n_verdicts; i++)
    printf("measured %s %s tok/s: %s\n", r.verdicts[i].phase,
           tm_fmt_rate(r.verdicts[i].measured_tok_s, b1, sizeof b1), r.verdicts[i].message);
  if (cost.n_assumptions || m.quick) {
    printf("assumed:\n");
    for (size_t i = 0; i < cost.n_assumptions; i++) printf("  - %s\n", cost.assumptions[i]);
    if (m.quick) printf("  - quick probe (TOKMETER_PROBE_QUICK): figures are not memory bandwidth\n");
  }
  return TM_EXIT_OK;
}
