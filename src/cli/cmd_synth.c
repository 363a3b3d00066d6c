/* cmd_synth: `tokmeter synth` - write a random-weight GGUF model of a real shape
 * (a preset or flags) at a llama.cpp file type. Library work is in
 * src/synth/synth.h, the shape from preset and flags in synth_shape.h; this
 * file parses flags, picks the output path, shows progress and prints the
 * summary line.
 * Exit codes: 0 written; 2 bad flag, unknown preset/type/arch, inconsistent
 * shape, a row length the type cannot hold, --vocab-from without a tokenizer, or
 * an existing output file without --force, an output path that exists and is not
 * a regular file (with or without --force: a device, directory or FIFO is never
 * replaced), --vocab with --vocab-from; 1 I/O or other runtime failure. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "model/plan.h"
#include "model/shape.h"
#include "synth/synth.h"
#include "synth/synth_shape.h"
#include "util/units.h"

static const char *const CMD = "synth";

/* Prints words (separated by single spaces) from column `indent` on, wrapped
 * so that no line passes column 80. The first line continues the current one,
 * at column `col`. */
static void put_wrapped(FILE *out, const char *words, int col, int indent) {
  for (const char *p = words; *p;) {
    const char *sp = strchr(p, ' ');
    int len = sp ? (int)(sp - p) : (int)strlen(p);
    if (col > indent && col + 1 + len > 80) {
      fprintf(out, "\n%*s", indent, "");
      col = indent;
    } else if (col > indent) {
      fputc(' ', out);
      col++;
    }
    fprintf(out, "%.*s", len, p);
    col += len;
    p += len;
    while (*p == ' ') p++;
  }
  fputc('\n', out);
}

/* A reference of at most 45 lines; what the file holds and how the defaults
 * are chosen is in docs/synth.md. */
static void usage(FILE *out) {
  fprintf(out,
          "Usage: tokmeter synth [--preset NAME] [shape flags] [--type T] [-o FILE]\n"
          "Writes a random-weight GGUF model that llama.cpp can load and run, with the\n"
          "tensor types llama-quantize would choose for the file type.\n"
          "Model:\n"
          "  --preset NAME      a named shape; shape flags override its fields\n"
          "                     (default: none, give the shape)\n"
          "  --list-presets     print the presets and exit\n");
  put_wrapped(out, model_ftype_names(), fprintf(out, "  --type T           file type (default Q8_0):"),
              21);
  fprintf(out,
          "  --vocab-from FILE  copy FILE's tokenizer.* keys and vocabulary size; not\n"
          "                     with --vocab (default: tokenizer \"none\" + --vocab)\n"
          "  --seed N           weights seed; same seed, same bytes (default %u)\n"
          "  --name S           general.name (default \"tokmeter-synth-<preset or arch>\")\n"
          "Shape (without --preset: --arch, --layers, --n-embd, --heads, --n-ff, --vocab\n"
          "are required; qwen3moe needs the three expert flags instead of --n-ff):\n"
          "  --arch A           llama, qwen2, qwen3, qwen3moe\n"
          "  --layers N         block count\n"
          "  --n-embd N         embedding length\n"
          "  --heads N          attention heads\n"
          "  --kv-heads N       KV heads (default: the preset's if they divide --heads,\n"
          "                     else --heads)\n"
          "  --head-dim N       head dimension, even (default: the preset's, else\n"
          "                     n-embd / heads, which must divide exactly)\n"
          "  --n-ff N           feed-forward length\n"
          "  --vocab N          vocabulary size; not with --vocab-from\n"
          "  --experts N        experts (qwen3moe)\n"
          "  --experts-used N   experts per token (qwen3moe)\n"
          "  --expert-n-ff N    expert feed-forward length (qwen3moe)\n"
          "  --tied, --untied   output head shares token_embd or not; one of them\n"
          "                     (default: the preset's; tied without one)\n"
          "  --rope-base X      rope.freq_base, 1 to 1e12 (default: the preset's;\n"
          "                     without one 10000 for llama, 1e6 otherwise)\n"
          "  --rms-eps X        RMSNorm epsilon, 1e-12 to 1 (default: the preset's;\n"
          "                     without one 1e-5 for llama, 1e-6 otherwise)\n"
          "  --ctx N            context_length (default: the preset's, e.g. 40960 for\n"
          "                     qwen3-0.6b; 4096 without one)\n"
          "Output:\n"
          "  -o, --output FILE  where to write (default ./<preset or arch>-<TYPE>.gguf)\n"
          "  --force            replace an existing regular file (default: refuse)\n"
          "  --threads N        worker threads (default: all CPUs); same bytes at any N\n"
          "  -h, --help         this help\n"
          "Exit codes: 0 written, 1 I/O or runtime failure, 2 bad usage, shape or path.\n"
          "Details: docs/synth.md\n",
          SYNTH_DEFAULT_SEED);
}

enum {
  OPT_PRESET = 1000, OPT_LIST, OPT_TYPE, OPT_VOCAB_FROM, OPT_SEED, OPT_NAME, OPT_ARCH,
  OPT_LAYERS, OPT_EMBD, OPT_HEADS, OPT_KV_HEADS, OPT_HEAD_DIM, OPT_FF, OPT_VOCAB, OPT_EXPERTS,
  OPT_EXPERTS_USED, OPT_EXPERT_FF, OPT_TIED, OPT_UNTIED, OPT_ROPE, OPT_EPS, OPT_CTX, OPT_FORCE,
  OPT_THREADS,
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

static void list_presets(void) {
  size_t n;
  const struct model_preset *p = model_presets(&n);
  for (size_t i = 0; i < n; i++) printf("%-14s %s\n", p[i].name, p[i].description);
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
  struct synth_shape_flags f = {.tied = -1};
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
    /* The shape stores these as float: the ranges (--help) keep them far
     * inside float's, so "inf" or 1e39 is never written as a rope base. */
    case OPT_ROPE:
      if (tm_parse_positive_in(optarg, "--rope-base", 1, 1e12, "1 to 1e12", &f.rope, &err))
        return cli_usage_error(CMD, "%s", err.msg);
      break;
    case OPT_EPS:
      if (tm_parse_positive_in(optarg, "--rms-eps", 1e-12, 1, "1e-12 to 1", &f.eps, &err))
        return cli_usage_error(CMD, "%s", err.msg);
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
  if (synth_shape_build(preset, &f, &opt.shape, &err) != 0)
    return cli_usage_error(CMD, "%s", err.msg);
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
  int rc = synth_write(&opt, out_path, on_progress, &ps, &res, &err);
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
