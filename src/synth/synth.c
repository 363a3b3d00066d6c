/* synth: see synth.h. This file owns the options, the weight scales, the
 * metadata, the output file (temp + rename) and the cache helper; the parallel
 * generate -> convert -> write pipeline is in synth_pipeline.c. */
#include "synth/synth.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "synth/synth_internal.h"
#include "util/clock.h"
#include "util/paths.h"

void synth_options_init(struct synth_options *opt) {
  memset(opt, 0, sizeof *opt);
  opt->ftype = MODEL_FTYPE_Q8_0;
  opt->seed = SYNTH_DEFAULT_SEED;
}

/* Weight scales. The forward pass alternates RMSNorm (output RMS ~ the norm
 * weight, here ~1) and matrix products; a product x.W over a row of length
 * ne[0] with W ~ N(0, 1/ne[0]) keeps the RMS of x (sum of ne[0] terms of variance
 * rms^2/ne[0]). So every matrix uses std 1/sqrt(ne[0]) (its fan-in): Q/K/V and
 * the FFN see normalized inputs of RMS 1 and produce RMS ~1, attention logits
 * q.k/sqrt(head_dim) have std ~1 (softmax neither one-hot nor flat), and each
 * block adds O(1) to the residual stream, which therefore grows only like
 * sqrt(2 n_layer) - no vanishing, no explosion. The router (ffn_gate_inp,
 * ne[0] = n_embd) gets the same rule: expert logits of std ~1 spread the
 * routing. Norm weights are 1 with a little noise (0.02) so they are never
 * constant; biases are small (std 0.02) and nonzero. The token embedding: when
 * tied it is also the output head, so its std is 1/sqrt(n_embd), giving logits of
 * std ~1 from a normalized hidden state; untied, the embedding is only looked up,
 * so std 1 starts the residual stream at RMS 1 and the separate output.weight
 * takes the matrix rule. */
void synth_tensor_init(const struct model_shape *shape, const struct plan_tensor *t, float *mean,
                       float *std) {
  const char *name = t->name;
  size_t len = strlen(name);
  if (len >= 5 && strcmp(name + len - 5, ".bias") == 0) {
    *mean = 0.0f;
    *std = 0.02f;
  } else if (t->n_dims == 1) { /* every 1-D weight is a norm */
    *mean = 1.0f;
    *std = 0.02f;
  } else if (strcmp(name, "token_embd.weight") == 0 && !shape->tied) {
    *mean = 0.0f;
    *std = 1.0f;
  } else {
    *mean = 0.0f;
    *std = (float)(1.0 / sqrt((double)t->ne[0]));
  }
}

static int err_kind(struct synth_result *res, int kind) {
  res->err_kind = kind;
  return -1;
}

/* Adds the metadata llama.cpp's loader reads for these architectures (and what
 * its own writers put in: see the fixtures). */
static int write_metadata(struct gguf_writer *w, const struct synth_options *opt,
                          const struct model_shape *s, const struct gguf_file *vocab,
                          struct tm_err *err) {
  char key[128], name[96];
  const char *a = s->arch;
  int rc = 0;
#define K(suffix) (snprintf(key, sizeof key, "%s.%s", a, suffix), key)
  if (opt->name)
    snprintf(name, sizeof name, "%s", opt->name);
  else
    snprintf(name, sizeof name, "tokmeter-synth-%s", a);
  rc |= gguf_w_str(w, "general.architecture", a);
  rc |= gguf_w_str(w, "general.name", name);
  rc |= gguf_w_u32(w, K("block_count"), s->n_layer);
  rc |= gguf_w_u32(w, K("context_length"), s->n_ctx_train ? s->n_ctx_train : 4096);
  rc |= gguf_w_u32(w, K("embedding_length"), s->n_embd);
  if (s->n_ff) rc |= gguf_w_u32(w, K("feed_forward_length"), s->n_ff);
  rc |= gguf_w_u32(w, K("attention.head_count"), s->n_head);
  rc |= gguf_w_u32(w, K("attention.head_count_kv"), s->n_head_kv);
  rc |= gguf_w_u32(w, K("attention.key_length"), s->head_dim);
  rc |= gguf_w_u32(w, K("attention.value_length"), s->head_dim);
  rc |= gguf_w_f32(w, K("rope.freq_base"), s->rope_base);
  rc |= gguf_w_u32(w, K("rope.dimension_count"), s->head_dim);
  rc |= gguf_w_f32(w, K("attention.layer_norm_rms_epsilon"), s->rms_eps);
  if (s->n_expert) {
    rc |= gguf_w_u32(w, K("expert_count"), s->n_expert);
    rc |= gguf_w_u32(w, K("expert_used_count"), s->n_expert_used);
    rc |= gguf_w_u32(w, K("expert_feed_forward_length"), s->n_ff_exp);
  }
  rc |= gguf_w_u32(w, K("vocab_size"), s->n_vocab);
  rc |= gguf_w_u32(w, "general.file_type", (uint32_t)opt->ftype);
  rc |= gguf_w_u32(w, "general.quantization_version", 2);
#undef K
  if (vocab) {
    for (uint64_t i = 0; i < vocab->n_kv; i++)
      if (strncmp(vocab->kv[i].key, "tokenizer.", 10) == 0) rc |= gguf_w_copy_kv(w, &vocab->kv[i]);
  } else {
    rc |= gguf_w_str(w, "tokenizer.ggml.model", "none");
  }
  rc |= gguf_w_u64(w, "tokmeter.synth.seed", opt->seed);
  if (rc) return tm_errf(err, "metadata: %s", gguf_writer_error(w));
  return 0;
}

/* Opens --vocab-from and sets *n_vocab from its token list. */
static struct gguf_file *open_vocab(const char *path, uint32_t *n_vocab, struct tm_err *err) {
  struct gguf_file *f = gguf_open(path, err);
  if (!f) {
    tm_err_prefix(err, "--vocab-from");
    return NULL;
  }
  const struct gguf_kv *tok = gguf_find_kv(f, "tokenizer.ggml.tokens");
  if (!tok || tok->type != GGUF_VT_ARRAY || tok->v.arr.elem_type != GGUF_VT_STRING ||
      tok->v.arr.count == 0 || tok->v.arr.count > 4000000) {
    tm_errf(err, "--vocab-from %s: no tokenizer (tokenizer.ggml.tokens missing or not a list of "
                 "strings); give a GGUF that has one, or leave --vocab-from out",
            path);
    gguf_close(f);
    return NULL;
  }
  *n_vocab = (uint32_t)tok->v.arr.count;
  return f;
}

/* What may be at the output path: nothing, or (with force) a regular file.
 * The file is renamed over the path at the end, and rename() replaces a
 * device node, a FIFO, a socket or a symbolic link just as readily as a file
 * (`-o /dev/full --force` once turned /dev/full into a regular file), so
 * anything but a regular file is refused, force or not. lstat, not stat: a
 * symbolic link is itself what rename would replace. Checked before the work
 * and again just before the rename. 0 ok, -1 with err. */
static int check_target(const char *path, bool force, const char *when, struct tm_err *err) {
  struct stat st;
  if (lstat(path, &st) != 0) {
    /* Nothing there: the directory must exist to take the file (a mistyped
     * -o is the user's input, said before the work, not an I/O failure). */
    char dir[4096];
    if (!tm_parent_dir_exists(path, dir, sizeof dir))
      return tm_errf(err, "cannot create %s: no directory %s", path, dir);
    return 0; /* unwritable: the create says so */
  }
  if (S_ISREG(st.st_mode)) {
    if (force) return 0;
    return tm_errf(err, "%s %s (use --force to replace it)", path, when);
  }
  const char *kind = S_ISDIR(st.st_mode)    ? "a directory"
                     : S_ISCHR(st.st_mode)  ? "a character device"
                     : S_ISBLK(st.st_mode)  ? "a block device"
                     : S_ISFIFO(st.st_mode) ? "a FIFO"
                     : S_ISSOCK(st.st_mode) ? "a socket"
                     : S_ISLNK(st.st_mode)  ? "a symbolic link"
                                            : "not a regular file";
  return tm_errf(err, "%s is %s: synth replaces only regular files, even with --force", path,
                 kind);
}

int synth_write(const struct synth_options *opt, const char *path, synth_progress_fn progress,
                void *ctx, struct synth_result *res_out, struct tm_err *err) {
  struct synth_result res_local;
  struct synth_result *res = res_out ? res_out : &res_local;
  memset(res, 0, sizeof *res);
  uint64_t t0 = tm_now_ns();
  struct model_shape shape = opt->shape;
  struct gguf_file *vocab = NULL;
  struct gguf_writer *w = NULL;
  struct model_plan plan = {0};
  FILE *out = NULL;
  char tmp[4200] = "";
  int rc = -1;

  if (!path || !*path) {
    tm_errf(err, "the output path is empty");
    return err_kind(res, SYNTH_ERR_INPUT);
  }
  if (check_target(path, opt->force, "already exists", err) != 0)
    return err_kind(res, SYNTH_ERR_INPUT);
  if (opt->vocab_from) {
    vocab = open_vocab(opt->vocab_from, &shape.n_vocab, err);
    if (!vocab) return err_kind(res, SYNTH_ERR_INPUT);
  }
  if (model_plan_make(&shape, opt->ftype, &plan, err) != 0) {
    err_kind(res, SYNTH_ERR_INPUT);
    goto done;
  }
  res->n_vocab = shape.n_vocab;
  res->n_tensors = plan.n_tensors;

  w = gguf_writer_new(GGUF_DEFAULT_ALIGNMENT);
  if (!w) {
    tm_errf(err, "out of memory");
    err_kind(res, SYNTH_ERR_RUNTIME);
    goto done;
  }
  if (write_metadata(w, opt, &shape, vocab, err) != 0) {
    err_kind(res, SYNTH_ERR_RUNTIME);
    goto done;
  }
  for (size_t i = 0; i < plan.n_tensors; i++) {
    const struct plan_tensor *t = &plan.tensors[i];
    if (gguf_w_tensor(w, t->name, t->n_dims, t->ne, t->type) < 0) {
      tm_errf(err, "tensor %s: %s", t->name, gguf_writer_error(w));
      err_kind(res, SYNTH_ERR_RUNTIME);
      goto done;
    }
    uint64_t bytes = gguf_w_tensor_bytes(w, (int)i);
    res->data_bytes += bytes;
    res->n_params += t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
    if (t->type < GGML_TYPE_COUNT) {
      res->type_tensors[t->type]++;
      res->type_bytes[t->type] += bytes;
    }
  }

  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  out = fopen(tmp, "wb");
  if (!out) {
    tm_errf(err, "cannot create %s: %s", tmp, strerror(errno));
    tmp[0] = 0;
    err_kind(res, SYNTH_ERR_RUNTIME);
    goto done;
  }
  /* Chunks arrive in MiB pieces; a large stdio buffer keeps the header and the
   * small tensors (norms) from turning into many small writes. */
  setvbuf(out, NULL, _IOFBF, 1 << 22);
  if (gguf_w_begin(w, out, err) != 0 ||
      synth_pipeline_run(opt, &shape, &plan, w, progress, ctx, err) != 0 ||
      gguf_w_end(w, err) != 0) {
    err_kind(res, SYNTH_ERR_RUNTIME);
    goto done;
  }
  if (vocab) { /* the header (with copied keys) is written: the map may go */
    gguf_close(vocab);
    vocab = NULL;
  }
  if (fflush(out) != 0 || ferror(out)) {
    tm_errf(err, "writing %s: %s", tmp, strerror(errno));
    err_kind(res, SYNTH_ERR_RUNTIME);
    goto done;
  }
  res->file_bytes = (uint64_t)ftello(out);
  if (fclose(out) != 0) {
    out = NULL;
    tm_errf(err, "writing %s: %s", tmp, strerror(errno));
    err_kind(res, SYNTH_ERR_RUNTIME);
    goto done;
  }
  out = NULL;
  if (check_target(path, opt->force, "appeared while writing", err) != 0) {
    err_kind(res, SYNTH_ERR_INPUT);
    goto done;
  }
  if (rename(tmp, path) != 0) {
    tm_errf(err, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
    err_kind(res, SYNTH_ERR_RUNTIME);
    goto done;
  }
  tmp[0] = 0;
  rc = 0;

done:
  if (out) fclose(out);
  if (tmp[0]) unlink(tmp);
  if (vocab) gguf_close(vocab);
  gguf_writer_free(w);
  model_plan_free(&plan);
  res->seconds = (double)(tm_now_ns() - t0) / 1e9;
  return rc;
}

int synth_cache_path(const char *preset, int ftype, uint64_t seed, char *buf, size_t n,
                     struct tm_err *err) {
  char dir[4096];
  const char *tname = model_ftype_name(ftype);
  if (!tname) return tm_errf(err, "unknown file type %d", ftype);
  if (!model_preset_find(preset)) return tm_errf(err, "unknown preset '%s'", preset);
  if (tm_cache_dir(dir, sizeof dir - 16, err) != 0) return -1;
  strcat(dir, "/models");
  if (tm_mkdirs(dir, err) != 0) return -1;
  int len = snprintf(buf, n, "%s/synth-%s-%s-s%llu.gguf", dir, preset, tname,
                     (unsigned long long)seed);
  if (len < 0 || (size_t)len >= n) return tm_errf(err, "cache path too long");
  return 0;
}

int synth_cached(const char *preset, int ftype, uint64_t seed, unsigned n_threads,
                 synth_progress_fn progress, void *ctx, char *path, size_t n, bool *written,
                 struct tm_err *err) {
  if (written) *written = false;
  if (synth_cache_path(preset, ftype, seed, path, n, err) != 0) return -1;
  struct stat st;
  if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) return 0;
  struct synth_options opt;
  synth_options_init(&opt);
  opt.shape = model_preset_find(preset)->shape;
  opt.ftype = ftype;
  opt.seed = seed;
  opt.n_threads = n_threads;
  opt.force = true; /* a racing writer produced the same bytes */
  if (synth_write(&opt, path, progress, ctx, NULL, err) != 0) return -1;
  if (written) *written = true;
  return 0;
}
