/* cmd_synth: `tokmeter synth` - write a random-weight GGUF model of a real shape
 * (a preset or flags) at a llama.cpp file type. Library work is in
 * src/synth/synth.h; this file parses flags, picks the output path, shows
 * progress and prints the summary line.
 * Exit codes: 0 written; 2 bad flag, unknown preset/type/arch, inconsistent
 * shape, a row length the type cannot hold, --vocab-from without a tokenizer, or
 * an existing output file without --force, an output path that exists and is not
 * a regular file (with or without --force: a device, directory or FIFO is never
 * replaced), --vocab with --vocab-from; 1 I/O or other runtime failure. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "model/plan.h"
#include "model/shape.h"
#include "synth/synth.h"
#include "util/units.h"

static const char *const CMD = "synth";

static void usage(FILE *out) {
  fprintf(out,
          "Usage: tokmeter synth [--preset NAME] [shape flags] [--type T] [-o FILE] [options]\n"
          "\n"
          "Writes a random-weight GGUF model that llama.cpp can load and run, with the\n"
          "tensor types llama-quantize would choose for the file type.\n"
          "\n"
          "Model:\n"
          "  --preset NAME      start from a named shape (see --list-presets); shape\n"
          "                     flags override its fields. Default: none (give the shape)\n"
          "  --list-presets     print the presets and exit\n"
          "  --type T           file type: %s\n"
          "                     (default Q8_0)\n"
          "  --vocab-from FILE  copy every tokenizer.* key of FILE (a GGUF) and use its\n"
          "                     vocabulary size; not with --vocab (default: tokenizer\n"
          "                     \"none\" + vocab_size)\n"
          "  --seed N           weights seed; same seed, same bytes (default %u)\n"
          "  --name S           general.name (default \"tokmeter-synth-<preset or arch>\")\n"
          "\n"
          "Shape (without --preset: --arch, --layers, --n-embd, --heads, --n-ff, --vocab\n"
          "are required; qwen3moe also --experts, --experts-used, --expert-n-ff):\n"
          "  --arch A           llama, qwen2, qwen3, qwen3moe\n"
          "  --layers N         block count\n"
          "  --n-embd N         embedding length\n"
          "  --heads N          attention heads\n"
          "  --kv-heads N       KV heads (default: the preset's if they divide --heads, else --heads)\n"
          "  --head-dim N       head dimension, even (default: the preset's, else\n"
          "                     n-embd / heads, which must then divide exactly)\n"
          "  --n-ff N           feed-forward length\n"
          "  --vocab N          vocabulary size (rows of token_embd); not with --vocab-from\n"
          "  --experts N        experts (qwen3moe)\n"
          "  --experts-used N   experts per token (qwen3moe)\n"
          "  --expert-n-ff N    expert feed-forward length (qwen3moe)\n"
          "  --tied, --untied   output head shares token_embd or not; one of them\n"
          "                     (default: the preset's; tied without one)\n"
          "  --rope-base X      rope.freq_base, 1 to 1e12 (default: the preset's; without\n"
          "                     one 10000 for llama, 1e6 otherwise)\n"
          "  --rms-eps X        RMSNorm epsilon, 1e-12 to 1 (default: the preset's;\n"
          "                     without one 1e-5 for llama, 1e-6 otherwise)\n"
          "  --ctx N            context_length (default: the preset's, e.g. 40960 for\n"
          "                     qwen3-0.6b; 4096 without one)\n"
          "\n"
          "Output:\n"
          "  -o, --output FILE  where to write (default ./<preset or arch>-<TYPE>.gguf)\n"
          "  --force            replace an existing regular file (default: refuse, exit 2);\n"
          "                     a directory, device, FIFO, socket or symbolic link at FILE\n"
          "                     is never replaced (exit 2, --force or not)\n"
          "  --threads N        worker threads (default: all CPUs); the output does not\n"
          "                     depend on it\n"
          "  -h, --help         this help\n"
          "\n"
          "The file is written to FILE.tmp.<pid> and renamed when complete. Prints one\n"
          "line: path, architecture, parameters, size, tensor types, seconds, MB/s.\n",
          model_ftype_names(), SYNTH_DEFAULT_SEED);
}

enum {
  OPT_PRESET = 1000, OPT_LIST, OPT_TYPE, OPT_VOCAB_FROM, OPT_SEED, OPT_NAME, OPT_ARCH,
  OPT_LAYERS, OPT_EMBD, OPT_HEADS, OPT_KV_HEADS, OPT_HEAD_DIM, OPT_FF, OPT_VOCAB, OPT_EXPERTS,
  OPT_EXPERTS_USED, OPT_EXPERT_FF, OPT_TIED, OPT_UNTIED, OPT_ROPE, OPT_EPS, OPT_CTX, OPT_FORCE,
  OPT_THREADS,
};

/* Shape fields given on the command line (0 / unset = not given). */
struct shape_flags {
  const char *arch;
  uint32_t layers, embd, heads, kv_heads, head_dim, ff, vocab, experts, experts_used, expert_ff,
      ctx;
  int tied; /* -1 unset */
  double rope, eps;
};

struct progress_state {
  int last_pct;
};

static void on_progress(uint64_t done, uint64_t total, void *ctx) {
  struct progress_state *ps = ctx;
  int pct = total ? (int)(done * 100 / total) : 100;
  if (pct == ps->last_pct) return;
  ps->last_pct = pct;
  char msg[128];
  snprintf(msg, sizeof msg, "%d%% (%llu/%llu MiB)", pct, (unsigned long long)(done >> 20),
           (unsigned long long)(total >> 20));
  cli_progress(msg, (void *)CMD);
}

/* A finite number in [min, max]. The shape stores these as float, so the
 * ranges (--help) also keep them far inside float's range: "inf" or 1e39
 * would be written as an infinite rope base. */
static int parse_double_in(const char *s, const char *what, double min, double max,
                           const char *range, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (!*s || *end || errno || !isfinite(v) || !(v > 0)) {
    cli_usage_error(CMD, "%s: '%s' is not a positive number", what, s);
    return -1;
  }
  if (v < min || v > max) {
    cli_usage_error(CMD, "%s: '%s' is outside %s", what, s, range);
    return -1;
  }
  *out = v;
  return 0;
}

static void list_presets(void) {
  size_t n;
  const struct model_preset *p = model_presets(&n);
  for (size_t i = 0; i < n; i++) printf("%-14s %s\n", p[i].name, p[i].description);
}

/* Builds the shape from the preset (if any) and the flags. Returns 0 or an exit code. */
static int build_shape(const struct model_preset *preset, const struct shape_flags *f,
                       struct model_shape *s) {
  if (preset) {
    *s = preset->shape;
  } else {
    memset(s, 0, sizeof *s);
    const char *missing = !f->arch ? "--arch" : !f->layers ? "--layers" : !f->embd ? "--n-embd"
                        : !f->heads ? "--heads" : !f->vocab ? "--vocab" : NULL;
    if (!missing && !f->ff && !(f->arch && strcmp(f->arch, "qwen3moe") == 0)) missing = "--n-ff";
    if (missing) return cli_usage_error(CMD, "give --preset NAME or the shape (%s is missing)", missing);
    s->tied = true;
    s->n_ctx_train = 4096;
  }
  if (f->arch) {
    if (strlen(f->arch) >= sizeof s->arch)
      return cli_usage_error(CMD, "unknown architecture '%s' (llama, qwen2, qwen3, qwen3moe)", f->arch);
    snprintf(s->arch, sizeof s->arch, "%s", f->arch);
  }
  bool llama = strcmp(s->arch, "llama") == 0;
  if (!preset) {
    s->rope_base = llama ? 10000.0f : 1e6f;
    s->rms_eps = llama ? 1e-5f : 1e-6f;
  }
  if (f->layers) s->n_layer = f->layers;
  if (f->embd) s->n_embd = f->embd;
  if (f->heads) s->n_head = f->heads;
  /* KV heads: given, else a preset's own when they still divide the heads, else
   * the heads (plain multi-head). head_dim: given, else a preset's own, else
   * n_embd / heads. */
  if (f->kv_heads)
    s->n_head_kv = f->kv_heads;
  else if (!preset || (s->n_head_kv && s->n_head % s->n_head_kv != 0))
    s->n_head_kv = s->n_head;
  if (f->head_dim) {
    s->head_dim = f->head_dim;
  } else if (!preset) {
    /* The default must be exact: 64 / 3 heads is not a head of 21. */
    if (s->n_head && s->n_embd % s->n_head)
      return cli_usage_error(CMD, "--n-embd %u is not a multiple of --heads %u: give "
                             "--head-dim, or heads that divide n_embd", s->n_embd, s->n_head);
    s->head_dim = s->n_head ? s->n_embd / s->n_head : 0;
  }
  if (f->ff) s->n_ff = f->ff;
  if (f->vocab) s->n_vocab = f->vocab;
  if (f->experts) s->n_expert = f->experts;
  if (f->experts_used) s->n_expert_used = f->experts_used;
  if (f->expert_ff) s->n_ff_exp = f->expert_ff;
  if (f->tied >= 0) s->tied = f->tied;
  if (f->rope > 0) s->rope_base = (float)f->rope;
  if (f->eps > 0) s->rms_eps = (float)f->eps;
  if (f->ctx) s->n_ctx_train = f->ctx;
  struct tm_err err;
  if (model_shape_validate(s, &err) != 0) return cli_usage_error(CMD, "%s", err.msg);
  return 0;
}

int cmd_synth(int argc, char **argv) {
  static const struct option longopts[] = {
      {"preset", required_argument, NULL, OPT_PRESET},
      {"list-presets", no_argument, NULL, OPT_LIST},
      {"type", required_argument, NULL, OPT_TYPE},
      {"vocab-from", required_argument, NULL, OPT_VOCAB_FROM},
      {"seed", required_argument, NULL, OPT_SEED},
      {"name", required_argument, NULL, OPT_NAME},
      {"arch", required_argument, NULL, OPT_ARCH},
      {"layers", required_argument, NULL, OPT_LAYERS},
      {"n-embd", required_argument, NULL, OPT_EMBD},
      {"heads", required_argument, NULL, OPT_HEADS},
      {"kv-heads", required_argument, NULL, OPT_KV_HEADS},
      {"head-dim", required_argument, NULL, OPT_HEAD_DIM},
      {"n-ff", required_argument, NULL, OPT_FF},
      {"vocab", required_argument, NULL, OPT_VOCAB},
      {"experts", required_argument, NULL, OPT_EXPERTS},
      {"experts-used", required_argument, NULL, OPT_EXPERTS_USED},
      {"expert-n-ff", required_argument, NULL, OPT_EXPERT_FF},
      {"tied", no_argument, NULL, OPT_TIED},
      {"untied", no_argument, NULL, OPT_UNTIED},
      {"rope-base", required_argument, NULL, OPT_ROPE},
      {"rms-eps", required_argument, NULL, OPT_EPS},
      {"ctx", required_argument, NULL, OPT_CTX},
      {"output", required_argument, NULL, 'o'},
      {"force", no_argument, NULL, OPT_FORCE},
      {"threads", required_argument, NULL, OPT_THREADS},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  struct shape_flags f = {.tied = -1};
  const char *preset_name = NULL, *type_name = "Q8_0", *out_path = NULL, *vocab_from = NULL,
             *name = NULL;
  uint64_t seed = SYNTH_DEFAULT_SEED;
  uint32_t threads = 0;
  bool force = false, list = false;
  struct tm_err err;

  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
    uint32_t *u = NULL;
    const char *what = NULL;
    switch (c) {
    case 'h': usage(stdout); return TM_EXIT_OK;
    case OPT_PRESET: preset_name = optarg; break;
    case OPT_LIST: list = true; break;
    case OPT_TYPE: type_name = optarg; break;
    case OPT_VOCAB_FROM: vocab_from = optarg; break;
    case OPT_NAME: name = optarg; break;
    case OPT_ARCH: f.arch = optarg; break;
    case 'o': out_path = optarg; break;
    case OPT_FORCE: force = true; break;
    case OPT_TIED:
    case OPT_UNTIED:
      /* both given: the last one won silently */
      if (f.tied == (c == OPT_TIED ? 0 : 1))
        return cli_usage_error(CMD, "--tied and --untied contradict each other; give one");
      f.tied = c == OPT_TIED;
      break;
    case OPT_SEED: {
      char *end;
      errno = 0;
      unsigned long long v = strtoull(optarg, &end, 10);
      if (!*optarg || *end || errno || *optarg == '-')
        return cli_usage_error(CMD, "--seed: '%s' is not a non-negative integer", optarg);
      seed = v;
      break;
    }
    case OPT_ROPE:
      if (parse_double_in(optarg, "--rope-base", 1, 1e12, "1 to 1e12", &f.rope)) return TM_EXIT_USAGE;
      break;
    case OPT_EPS:
      if (parse_double_in(optarg, "--rms-eps", 1e-12, 1, "1e-12 to 1", &f.eps)) return TM_EXIT_USAGE;
      break;
    case OPT_LAYERS: u = &f.layers; what = "--layers"; break;
    case OPT_EMBD: u = &f.embd; what = "--n-embd"; break;
    case OPT_HEADS: u = &f.heads; what = "--heads"; break;
    case OPT_KV_HEADS: u = &f.kv_heads; what = "--kv-heads"; break;
    case OPT_HEAD_DIM: u = &f.head_dim; what = "--head-dim"; break;
    case OPT_FF: u = &f.ff; what = "--n-ff"; break;
    case OPT_VOCAB: u = &f.vocab; what = "--vocab"; break;
    case OPT_EXPERTS: u = &f.experts; what = "--experts"; break;
    case OPT_EXPERTS_USED: u = &f.experts_used; what = "--experts-used"; break;
    case OPT_EXPERT_FF: u = &f.expert_ff; what = "--expert-n-ff"; break;
    case OPT_CTX: u = &f.ctx; what = "--ctx"; break;
    case OPT_THREADS: u = &threads; what = "--threads"; break;
    case ':': return cli_usage_error(CMD, "%s needs a value", argv[optind - 1]);
    default: return cli_bad_option(CMD, argv[optind - 1], longopts);
    }
    if (u && tm_parse_u32(optarg, what, u, &err) != 0) return cli_usage_error(CMD, "%s", err.msg);
  }
  if (optind < argc) return cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
  if (vocab_from && f.vocab)
    return cli_usage_error(CMD, "--vocab and --vocab-from both set the vocabulary size; give one "
                                "(--vocab-from takes it from the file)");
  if (out_path && !*out_path) return cli_usage_error(CMD, "--output: the path is empty");
  if (list) {
    list_presets();
    return TM_EXIT_OK;
  }

  const struct model_preset *preset = NULL;
  if (preset_name && !(preset = model_preset_find(preset_name))) {
    size_t n;
    const struct model_preset *p = model_presets(&n);
    char names[512] = "";
    for (size_t i = 0; i < n; i++)
      snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", p[i].name);
    return cli_usage_error(CMD, "unknown preset '%s' (known: %s)", preset_name, names);
  }
  int ftype = model_ftype_from_name(type_name);
  if (ftype < 0)
    return cli_usage_error(CMD, "unknown --type '%s' (supported: %s)", type_name, model_ftype_names());

  struct synth_options opt;
  synth_options_init(&opt);
  int rc = build_shape(preset, &f, &opt.shape);
  if (rc) return rc;
  opt.ftype = ftype;
  opt.seed = seed;
  opt.n_threads = threads;
  opt.vocab_from = vocab_from;
  opt.force = force;
  const char *label = preset ? preset->name : opt.shape.arch;
  char default_name[96], default_path[128];
  snprintf(default_name, sizeof default_name, "tokmeter-synth-%s", label);
  opt.name = name ? name : default_name;
  if (!out_path) {
    snprintf(default_path, sizeof default_path, "%s-%s.gguf", label, model_ftype_name(ftype));
    out_path = default_path;
  }

  struct progress_state ps = {-1};
  struct synth_result res;
  rc = synth_write(&opt, out_path, on_progress, &ps, &res, &err);
  cli_progress_done();
  if (rc != 0)
    return cli_fail(CMD, res.err_kind == SYNTH_ERR_INPUT ? TM_EXIT_USAGE : TM_EXIT_RUNTIME, "%s",
                    err.msg);

  char params[32], size[32], types[512] = "";
  for (uint32_t t = 0; t < GGML_TYPE_COUNT; t++) {
    if (!res.type_tensors[t]) continue;
    const struct ggml_type_info *ti = ggml_type_get(t);
    snprintf(types + strlen(types), sizeof types - strlen(types), "%s%s x%u", types[0] ? ", " : "",
             ti ? ti->name : "?", res.type_tensors[t]);
  }
  double mbps = res.seconds > 0 ? (double)res.file_bytes / res.seconds / 1e6 : 0;
  printf("%s: %s, %s params, %s, types %s; %.2f s, %.1f MB/s\n", out_path, opt.shape.arch,
         tm_fmt_count((double)res.n_params, params, sizeof params),
         tm_fmt_bytes((double)res.file_bytes, size, sizeof size), types, res.seconds, mbps);
  return TM_EXIT_OK;
}
