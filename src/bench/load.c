/* load: see load.h. */
#include "bench/load.h"
#include "bench/load_internal.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/timex.h>
#include <time.h>

#include "backend/pool.h"
#include "bench/metrics.h"
#include "bench/records_bench.h"
#include "bench/runner.h"
#include "record/load_record.h"
#include "gguf/ggml_types.h"
#include "machine/probe.h"
#include "model/analysis.h"
#include "util/clock.h"
#include "util/redact.h"

#ifndef TOKMETER_VERSION
#define TOKMETER_VERSION "0"
#endif

/* The pool's streams in open loop: requests in flight beyond it cannot be
 * sent (each such send is late, and the level says so). */
#define OPEN_LOOP_STREAMS 4096
#define DRIVE_SLICE_MS 5

const char *load_arrivals_name(enum load_arrivals a) {
  switch (a) {
  case LOAD_CONSTANT: return "constant";
  case LOAD_GAMMA: return "gamma";
  case LOAD_POISSON: break;
  }
  return "poisson";
}

void load_opts_init(struct load_opts *o) {
  memset(o, 0, sizeof *o);
  o->arrivals = LOAD_POISSON;
  o->burstiness = 1;
  o->ramp_s = 2;
  o->duration_s = 10;
  o->prompt_tokens = 128;
  o->max_tokens = 128;
  o->idle_timeout_s = 60;
  o->timeout_s = 600;
  o->seed = 1;
  o->shard_count = 1;
  o->start_at_unix = NAN;
  o->drain_s = 30;
  o->reps = 3;
  o->warmup = 1;
}

/* -------------------------------------------------------------- requests */

/* One request in flight. */
struct inflight {
  char workload[32];         /* "load", or the -w workload it follows */
  struct run_result r;
  struct backend_request req;
  char *prompt;
  uint64_t t_sched;
  bool used;
};

struct run {
  struct load_state *s;
  struct backend *b;
  struct backend_pool *pool;
  struct inflight *fl;       /* pool capacity entries */
  size_t n_fl;
  struct metrics_options mopt;
  struct runner_line line;
  uint64_t rng;
  uint32_t seq;
  /* the level being run (each sample's chunk_t is its own malloc'd array) */
  struct load_sample *samples;
  size_t n_samples, cap_samples;
  uint64_t w0, w1;           /* the window; w1 = 0 until known */
  uint32_t in_window_done;   /* requests sent inside the window that ended */
  size_t level_index;
  size_t n_planned;          /* levels planned (0: a capacity search) */
  double rate;               /* open loop */
  /* -w FILE.jsonl: per job, its earlier turns and its images' URLs, made
   * once for all its requests */
  struct load_job *jobs;
};

struct load_job {
  struct backend_message *history;
  size_t n_history;
  char **images;
  size_t n_images;
};

static double uniform01(struct run *c) {
  c->rng ^= c->rng << 13;
  c->rng ^= c->rng >> 7;
  c->rng ^= c->rng << 17;
  return ((double)(c->rng >> 11) + 0.5) / 9007199254740992.0;
}

static double normal(struct run *c) {
  return sqrt(-2 * log(uniform01(c))) * cos(2 * M_PI * uniform01(c));
}

/* Gamma(k, 1) (Marsaglia-Tsang; k < 1 by the boost U^(1/k)). */
static double gamma_k(struct run *c, double k) {
  if (k < 1) return gamma_k(c, k + 1) * pow(uniform01(c), 1 / k);
  double d = k - 1.0 / 3, cc = 1 / sqrt(9 * d);
  for (;;) {
    double x = normal(c), v = 1 + cc * x;
    if (v <= 0) continue;
    v = v * v * v;
    double u = uniform01(c);
    if (log(u) < 0.5 * x * x + d - d * v + d * log(v)) return d * v;
  }
}

/* The next gap between scheduled sends, seconds: mean 1 / rate. Gamma with
 * shape k = 1 / burstiness^2 has mean 1 / rate and coefficient of variation
 * `burstiness` (1: poisson; below 1 steadier, above 1 burstier). */
static double next_gap_s(struct run *c) {
  const struct load_opts *o = c->s->o;
  if (o->arrivals == LOAD_CONSTANT) return 1 / c->rate;
  if (o->arrivals == LOAD_POISSON) return -log(uniform01(c)) / c->rate;
  double k = 1 / (o->burstiness * o->burstiness);
  return gamma_k(c, k) / (k * c->rate);
}

static uint32_t draw(struct run *c, uint32_t mean, uint32_t sd) {
  if (!sd) return mean;
  double v = (double)mean + (double)sd * normal(c);
  return v < 1 ? 1 : v > 1e6 ? 1000000 : (uint32_t)lround(v);
}

static void progress(struct run *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void progress(struct run *c, const char *fmt, ...) {
  if (!c->s->hooks.progress) return;
  char buf[300];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  c->s->hooks.progress(buf, c->s->hooks.ctx);
}

static void request_done(void *tag, struct run_result *r, void *ctx);

/* -w FILE.jsonl: each job's turns and image URLs (read once); -1 with err
 * when an image file can no longer be read. */
static int load_jobs_prepare(struct run *c, struct tm_err *err) {
  const struct workload_file *wf = c->s->o->file;
  c->jobs = calloc(wf->n_jobs, sizeof *c->jobs);
  if (!c->jobs) return tm_errf(err, "out of memory");
  for (size_t k = 0; k < wf->n_jobs; k++) {
    const struct wl_job *j = &wf->jobs[k];
    struct load_job *lj = &c->jobs[k];
    lj->history = calloc(j->n_messages, sizeof *lj->history);
    lj->images = calloc(j->n_images ? j->n_images : 1, sizeof *lj->images);
    if (!lj->history || !lj->images) return tm_errf(err, "out of memory");
    for (size_t i = 0; i + 1 < j->n_messages; i++)
      lj->history[lj->n_history++] =
          (struct backend_message){j->messages[i].role, j->messages[i].content};
    for (size_t i = 0; i < j->n_images; i++) {
      char why[300];
      lj->images[i] = wl_image_url(&j->images[i], why, sizeof why);
      if (!lj->images[i]) return tm_errf(err, "%s: %s", j->name, why);
      lj->n_images = i + 1;
    }
  }
  return 0;
}

static void load_jobs_free(struct run *c) {
  const struct workload_file *wf = c->s->o->file;
  for (size_t k = 0; c->jobs && wf && k < wf->n_jobs; k++) {
    for (size_t i = 0; i < c->jobs[k].n_images; i++) free(c->jobs[k].images[i]);
    free(c->jobs[k].images);
    free(c->jobs[k].history);
  }
  free(c->jobs);
  c->jobs = NULL;
}

static int start_request(struct run *c, uint64_t t_sched) {
  size_t i = 0;
  while (i < c->n_fl && c->fl[i].used) i++;
  if (i == c->n_fl) return -1;
  struct inflight *f = &c->fl[i];
  const struct load_opts *o = c->s->o;
  char nonce[16];
  runner_nonce(nonce);
  /* -w: the named workloads in turn, or a workload file's jobs; else -p / -n */
  struct workload w = {.prompt_tokens = draw(c, o->prompt_tokens, o->prompt_sd),
                       .max_tokens = draw(c, o->max_tokens, o->max_tokens_sd)};
  snprintf(w.name, sizeof w.name, "custom");
  const struct wl_job *job = NULL;
  const struct load_job *lj = NULL;
  if (o->file) {
    const size_t k = c->seq % o->file->n_jobs;
    job = &o->file->jobs[k];
    lj = &c->jobs[k];
    snprintf(w.name, sizeof w.name, "%s", job->name);
    if (job->max_tokens) w.max_tokens = (uint32_t)job->max_tokens;
  } else if (o->n_workloads) {
    workload_by_name(o->workloads[c->seq % o->n_workloads], &w);
  }
  snprintf(f->workload, sizeof f->workload, "%s", o->n_workloads || job ? w.name : "load");
  if (job) {
    const char *text = job->messages[job->n_messages - 1].content;
    const size_t n = strlen(text) + 32;
    f->prompt = malloc(n);
    if (f->prompt) snprintf(f->prompt, n, "Reference %s. %s", nonce, text);
    c->seq++;
  } else {
    uint32_t words = runner_words_for(&c->line, w.prompt_tokens);
    f->prompt = runner_make_prompt(w.name, nonce, words, c->seq++);
  }
  if (!f->prompt) return -1;
  f->req = (struct backend_request){.model = o->model,
                                    .prompt = f->prompt,
                                    .history = lj ? lj->history : NULL,
                                    .n_history = lj ? lj->n_history : 0,
                                    .images = lj ? (const char *const *)lj->images : NULL,
                                    .n_images = lj ? lj->n_images : 0,
                                    .max_tokens = w.max_tokens,
                                    /* a job runs to its natural end */
                                    .exact_length = job == NULL,
                                    .stream = true,
                                    .seed = o->seed,
                                    .idle_timeout_s = o->idle_timeout_s,
                                    .total_timeout_s = o->timeout_s};
  f->t_sched = t_sched;
  f->used = true;
  if (backend_pool_start(c->pool, &f->req, &f->r, f) != 0) {
    /* failed before it was sent: it still counts, as a failure */
    f->r.t_start_ns = f->r.t_send_ns = f->r.t_end_ns = tm_now_ns();
    request_done(f, &f->r, c);
    return 1;
  }
  return 0;
}

/* Time to the first answer (not reasoning) chunk, ms; NAN when none. */
static double first_answer_ms(const struct run_result *r) {
  if (!r->n_chunks || !r->t_send_ns) return NAN;
  bool *reasoning = calloc(r->n_chunks, sizeof *reasoning);
  if (!reasoning) return NAN;
  metrics_classify_chunks(r, reasoning);
  double ms = NAN;
  for (size_t i = 0; i < r->n_chunks; i++)
    if (!reasoning[i]) {
      ms = (double)(r->chunks[i].t_ns - r->t_send_ns) / 1e6;
      break;
    }
  free(reasoning);
  return ms;
}

static void add_sample(struct run *c, const struct load_sample *sm) {
  if (c->n_samples == c->cap_samples) {
    size_t cap = c->cap_samples ? 2 * c->cap_samples : 256;
    struct load_sample *n = realloc(c->samples, cap * sizeof *n);
    if (!n) {
      free((void *)sm->chunk_t);
      return;
    }
    c->samples = n;
    c->cap_samples = cap;
  }
  c->samples[c->n_samples++] = *sm;
}

/* One request ended: judged by the shared method, recorded at once, and
 * kept for the level's figures. */
static double secs(uint64_t ns) { return (double)ns / 1e9; }

static void request_done(void *tag, struct run_result *r, void *ctx) {
  struct run *c = ctx;
  struct inflight *f = tag;
  struct load_state *s = c->s;
  struct run_metrics m;
  run_metrics_compute(r, &f->req, &c->mopt, &m);
  if (r->error == RUN_OK && m.error == RUN_ERR_INCONSISTENT) {
    r->error = RUN_ERR_INCONSISTENT;
    r->check = m.check;
    snprintf(r->error_msg, sizeof r->error_msg, "%s", m.error_msg);
  }
  const uint64_t t_send = r->t_send_ns ? r->t_send_ns : r->t_start_ns;
  struct load_sample sm = {.t_sched = secs(f->t_sched ? f->t_sched : t_send),
                           .t_send = secs(t_send),
                           .t_end = secs(r->t_end_ns),
                           .ok = r->error == RUN_OK,
                           .error = r->error,
                           .implausible = r->error == RUN_ERR_INCONSISTENT};
  sm.cache_hit = m.cache == CACHE_HIT;
  sm.buffered = m.stream == STREAM_BUFFERED;
  sm.token_by_token = m.stream == STREAM_TOKEN_BY_TOKEN;
  sm.ttft_ms = m.ttft_ms;
  sm.ttfat_ms = first_answer_ms(r);
  sm.decode_tok_s = m.decode_headline;
  sm.short_decode = sm.ok && m.generated_tokens >= 0 &&
                    m.generated_tokens < (int64_t)METRICS_MIN_DECODE_TOKENS;
  sm.tpot_ms = isfinite(m.decode_headline) && m.decode_headline > 0 ? 1e3 / m.decode_headline
                                                                    : NAN;
  sm.e2e_ms = r->t_end_ns > t_send ? (double)(r->t_end_ns - t_send) / 1e6 : NAN;
  /* queue = client TTFT - the runtime's prompt time - one decode step */
  sm.queue_ms = isfinite(m.server_prompt_ms) && isfinite(m.ttft_ms) && isfinite(m.median_gap_ms)
                    ? m.ttft_ms - m.server_prompt_ms - m.median_gap_ms
                    : NAN;
  if (isfinite(sm.queue_ms) && sm.queue_ms < 0) sm.queue_ms = 0;
  sm.prompt_processed = m.prompt_processed >= 0 ? (double)m.prompt_processed : NAN;
  sm.prompt_reported = m.prompt_tokens >= 0 ? (double)m.prompt_tokens : NAN;
  sm.tokens = m.generated_tokens >= 0 ? (double)m.generated_tokens : (double)m.client_tokens;
  double *chunk_t = r->n_chunks ? malloc(r->n_chunks * sizeof *chunk_t) : NULL;
  if (chunk_t) {
    for (size_t i = 0; i < r->n_chunks; i++) chunk_t[i] = secs(r->chunks[i].t_ns);
    sm.n_chunks = (uint32_t)r->n_chunks;
  }
  sm.chunk_t = chunk_t;
  if (!sm.ok) s->failed_total++;

  /* the raw request record: the run record's fields, as kind "request", and
   * the sample as judged here ("load": what report merges shards from) */
  json_t *settings = json_pack("{s:i, s:I, s:b}", "level", (int)c->level_index, "scheduled_lag_ns",
                               (json_int_t)(t_send > f->t_sched && f->t_sched ? t_send - f->t_sched : 0),
                               "nonce", 1);
  struct record_run_in in = {.identity = s->session.identity,
                             .workload = f->workload,
                             .index = c->seq,
                             .backend = api_family_name(s->api),
                             .target = s->o->url,
                             .model = s->o->model,
                             .settings = settings,
                             .max_tokens = f->req.max_tokens};
  json_t *rec = record_run_build(&in, r, &m);
  if (rec) {
    json_object_set_new(rec, "record", json_string("request"));
    json_t *lo = record_load_sample_json(&sm, s->unix_offset, (int)c->level_index,
                                         s->o->shard_count > 1 ? (int)s->o->shard_index : -1,
                                         sm.ok ? NULL : run_error_name(r->error));
    if (lo) json_object_set_new(rec, "load", lo);
  }
  bench_session_write(&s->session, rec);
  json_decref(settings);

  const double w0 = secs(c->w0), w1 = secs(c->w1);
  if (c->w0 && sm.t_send >= w0 && (!c->w1 || sm.t_send <= w1)) c->in_window_done++;
  add_sample(c, &sm);
  run_result_free(r);
  free(f->prompt);
  f->prompt = NULL;
  f->used = false;
}

/* ---------------------------------------------------------------- levels */

/* The level's figures from its samples over the window [w0, w1]: the one
 * computation (stats/load_window.h) the merge of shards runs again. */
static void evaluate(struct run *c, struct load_level *lv) {
  const double w0 = secs(c->w0), w1 = secs(c->w1);
  lv->window_start_unix = w0 + c->s->unix_offset;
  lv->window_end_unix = w1 + c->s->unix_offset;
  if (load_window_figures(c->samples, c->n_samples, w0, w1, c->rate > 0, &c->s->o->slo, &lv->f) != 0)
    c->s->oom = true;
}

static double cpu_seconds(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) return NAN;
  return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
         ru.ru_stime.tv_usec / 1e6;
}

/* A scheduled run (--start-at): level k's slot begins on the wall clock at
 * start + k x (ramp + duration + drain). Waits for it (interruptible) and
 * returns its start on the monotonic clock; 0 when the run is not
 * scheduled. */
static uint64_t wait_for_slot(struct run *c) {
  const struct load_opts *o = c->s->o;
  if (!isfinite(o->start_at_unix)) return 0;
  const double slot_s = o->ramp_s + o->duration_s + o->drain_s;
  const double at_unix = o->start_at_unix + (double)c->level_index * slot_s;
  const double at_mono = at_unix - c->s->unix_offset;
  if (at_mono <= 0) return 1;
  const uint64_t at = (uint64_t)(at_mono * 1e9);
  uint64_t last_note = 0;
  for (uint64_t now; (now = tm_now_ns()) < at && !backend_interrupted();) {
    if (now - last_note > 1000000000ull) {
      last_note = now;
      progress(c, "level %zu waits for its slot: %.0f s", c->level_index + 1, (double)(at - now) / 1e9);
    }
    uint64_t left_ms = (at - now) / 1000000u;
    struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)((left_ms < 100 ? left_ms + 1 : 100) * 1000000)};
    nanosleep(&ts, NULL);
  }
  return at;
}

/* One level: ramp, window, drain. want: the streams to hold (closed loop;
 * may be 0 for a shard whose share of the level is none); c->rate the
 * requests/s to send (open loop). slot: the scheduled start (monotonic ns;
 * 0 = now): the window opens at slot + ramp, or, when that has passed (the
 * previous level's drain ran over its budget), a ramp from now, the lag
 * recorded. */
static void run_level(struct run *c, struct load_level *lv, bool closed, uint32_t want,
                      uint64_t slot) {
  const struct load_opts *o = c->s->o;
  const double cpu0 = cpu_seconds();
  c->n_samples = 0;
  c->in_window_done = 0;
  const uint64_t t0 = tm_now_ns(), ramp = (uint64_t)(o->ramp_s * 1e9);
  c->w0 = t0 + ramp;
  if (slot) {
    if (slot + ramp > t0) c->w0 = slot + ramp;
    else lv->schedule_lag_s = (double)(c->w0 - (slot + ramp)) / 1e9;
  }
  c->w1 = o->requests ? 0 : c->w0 + (uint64_t)(o->duration_s * 1e9);
  bool sending = true;
  /* open loop: shards' constant schedules interleave (shard i of n starts
   * i / (n x its rate) late); poisson and gamma shards draw their own */
  uint64_t next_send = t0;
  if (!closed && o->shard_count > 1 && o->arrivals == LOAD_CONSTANT && c->rate > 0)
    next_send += (uint64_t)((double)o->shard_index / ((double)o->shard_count * c->rate) * 1e9);
  uint64_t last_note = t0;
  while (!backend_interrupted()) {
    const uint64_t now = tm_now_ns();
    if (sending && c->w1 && now >= c->w1) sending = false;
    if (sending && o->requests && c->in_window_done >= o->requests) {
      c->w1 = now;
      sending = false;
    }
    if (sending) {
      if (closed) {
        while (backend_pool_active(c->pool) < want) {
          if (start_request(c, 0) != 0) break; /* failed at once: retried next slice */
        }
      } else if (c->rate > 0) {
        while (now >= next_send) {
          if (start_request(c, next_send) < 0) break; /* no stream free: this send is late */
          next_send += (uint64_t)(next_gap_s(c) * 1e9);
        }
      }
    }
    if (!sending && backend_pool_active(c->pool) == 0) break;
    int wait = DRIVE_SLICE_MS;
    if (sending && !closed && next_send > now) {
      uint64_t ms = (next_send - now) / 1000000u;
      if (ms < (uint64_t)wait) wait = (int)ms;
    }
    backend_pool_drive(c->pool, wait, request_done, c);
    if (now - last_note > 1000000000ull) {
      last_note = now;
      double left = c->w1 > now ? (double)(c->w1 - now) / 1e9 : 0;
      char plan[32];
      if (c->n_planned) snprintf(plan, sizeof plan, "level %zu/%zu", c->level_index + 1, c->n_planned);
      else snprintf(plan, sizeof plan, "capacity probe %zu", c->level_index + 1);
      progress(c, "%s (%s%g): %zu in flight, %zu done%s%.0f s left", plan,
               closed ? "c=" : "rate=", closed ? (double)lv->concurrency : lv->request_rate,
               backend_pool_active(c->pool), c->n_samples, sending ? ", " : ", draining, ",
               sending ? left : 0);
    }
  }
  if (!c->w1) c->w1 = tm_now_ns();
  const double wall = (double)(tm_now_ns() - t0) / 1e9;
  lv->client_cpu_share = wall > 0 ? (cpu_seconds() - cpu0) / wall : NAN;
  lv->client_saturated = lv->client_cpu_share > LOAD_CLIENT_SATURATED;
  evaluate(c, lv);
}

static void drop_samples(struct run *c) {
  for (size_t i = 0; i < c->n_samples; i++) free((void *)c->samples[i].chunk_t);
  c->n_samples = 0;
}

/* The server's counters over the level against the client's sums (every
 * request of the level, ramp and drain included: the reads bracket them). */
static void counters_check(struct run *c, struct load_level *lv, const struct server_counters *a,
                           const struct server_counters *b) {
  snprintf(lv->counters_source, sizeof lv->counters_source, "%s", a->source);
  lv->server_prompt_tokens = b->prompt_tokens - a->prompt_tokens;
  lv->server_generated_tokens = b->generated_tokens - a->generated_tokens;
  const bool llama = !strcmp(a->source, "llama.cpp");
  double p = 0, g = 0;
  size_t n = 0;
  for (size_t i = 0; i < c->n_samples; i++) {
    const struct load_sample *sm = &c->samples[i];
    if (sm->n_chunks == 0 && !sm->ok) continue; /* never reached generation */
    n++;
    double pp = llama ? sm->prompt_processed : sm->prompt_reported;
    if (isfinite(pp)) p += pp;
    g += sm->tokens;
  }
  lv->client_prompt_tokens = p;
  lv->client_generated_tokens = g;
  lv->counters_requests = (uint32_t)n;
  lv->counters_before[0] = a->prompt_tokens, lv->counters_before[1] = a->generated_tokens;
  lv->counters_after[0] = b->prompt_tokens, lv->counters_after[1] = b->generated_tokens;
  /* counters that went back (a restarted server, another process behind
   * the address): nothing to hold against */
  if (lv->server_prompt_tokens < 0 || lv->server_generated_tokens < 0) {
    char where[32];
    load_level_name(lv, where, sizeof where);
    struct bench_finding *f = load_level_finding(c->s, "server_counters_reset", BENCH_WARNING, where);
    bench_finding_figure(f, "server_prompt_tokens_change", lv->server_prompt_tokens);
    bench_finding_figure(f, "server_generated_tokens_change", lv->server_generated_tokens);
    bench_finding_brief(f, "%s: the server's /metrics counters went back: not compared", where);
    bench_finding_text(f, "Over %s the server's /metrics token counters fell (prompt %+.0f, "
                          "generated %+.0f): the server restarted, or another one answers at "
                          "this address; they are not held against the requests.",
                       where, lv->server_prompt_tokens, lv->server_generated_tokens);
    lv->server_prompt_tokens = lv->server_generated_tokens = NAN;
    return;
  }
  /* a shard's server counts every shard's requests: the merge judges */
  if (c->s->o->shard_count > 1) return;
  const bool off_p = load_counters_disagree(lv->server_prompt_tokens, p, n);
  const bool off_g = load_counters_disagree(lv->server_generated_tokens, g, n);
  lv->counters_disagree = off_p || off_g;
  if (!lv->counters_disagree) return;
  char where[32];
  load_level_name(lv, where, sizeof where);
  struct bench_finding *f = load_level_finding(c->s, "server_counters_disagree", BENCH_WARNING, where);
  bench_finding_figure(f, "server_generated_tokens", lv->server_generated_tokens);
  bench_finding_figure(f, "client_generated_tokens", g);
  bench_finding_figure(f, "server_prompt_tokens", lv->server_prompt_tokens);
  bench_finding_figure(f, "client_prompt_tokens", p);
  bench_finding_brief(f, "%s: the server's /metrics counted %.0f generated, %.0f prompt tokens; "
                         "the requests %.0f, %.0f", where, lv->server_generated_tokens,
                      lv->server_prompt_tokens, g, p);
  bench_finding_text(f, "%s: the server's own counters (%s /metrics) moved by %.0f generated and "
                        "%.0f prompt tokens over the level, its answers to tokmeter's %zu requests "
                        "add up to %.0f and %.0f: another client shares the server, or its "
                        "counters and its answers disagree.", where, a->source,
                     lv->server_generated_tokens, lv->server_prompt_tokens, n, g, p);
}

/* A stream's mean depth: prompt + output / 2, over the -w workloads' mix (a
 * workload file's prompts at RUNNER_ASSUMED_TOKENS_PER_WORD, images not
 * counted: an estimate for the KV part of the ceiling). */
double load_mean_depth(const struct load_opts *o) {
  if (o->file) {
    double sum = 0;
    for (size_t i = 0; i < o->file->n_jobs; i++) {
      const struct wl_job *j = &o->file->jobs[i];
      char *t = wl_job_text(j);
      uint32_t words = 0;
      for (const char *p = t ? t : ""; *p;) {
        p += strspn(p, " \t\n\r");
        if (!*p) break;
        words++;
        p += strcspn(p, " \t\n\r");
      }
      free(t);
      const double out = j->max_tokens ? (double)j->max_tokens : (double)o->max_tokens;
      sum += words * RUNNER_ASSUMED_TOKENS_PER_WORD + out / 2;
    }
    return sum / (double)o->file->n_jobs;
  }
  if (!o->n_workloads) return (double)o->prompt_tokens + (double)o->max_tokens / 2;
  double sum = 0;
  for (size_t i = 0; i < o->n_workloads; i++) {
    struct workload w = {0};
    if (workload_by_name(o->workloads[i], &w) == 0)
      sum += (double)w.prompt_tokens + (double)w.max_tokens / 2;
  }
  return sum / (double)o->n_workloads;
}

/* -m: the aggregate decode ceiling at the level's batch and mean depth. */
void load_level_ceiling(struct load_state *s, struct load_level *lv) {
  lv->ceiling_batch = lv->ceiling_depth = lv->aggregate_decode_ceiling_tok_s = NAN;
  lv->percent_of_ceiling = NAN;
  lv->ceiling_bound = NULL;
  if (!s->have_model) return;
  /* open loop: Little's law (every shard's requests: a shard's times its count) */
  const double shards = s->o->shard_count > 1 ? (double)s->o->shard_count : 1;
  double b = lv->concurrency ? (double)lv->concurrency
                             : shards * lv->f.requests_per_s * lv->f.e2e_ms.mean / 1e3;
  if (!(b >= 0.5)) return;
  const struct load_opts *o = s->o;
  struct ceiling_batch_point p;
  lv->ceiling_depth = load_mean_depth(o);
  ceiling_batch(s->cost, &s->rates, (uint32_t)lround(b), lv->ceiling_depth, &p);
  lv->ceiling_batch = p.batch;
  lv->aggregate_decode_ceiling_tok_s = p.aggregate_decode_tok_s;
  lv->ceiling_bound = p.bound;
  /* a shard's aggregate is its share: the merge holds the sum against it */
  if (isfinite(p.aggregate_decode_tok_s) && p.aggregate_decode_tok_s > 0 && shards == 1)
    lv->percent_of_ceiling = 100 * lv->f.aggregate_output_tok_s / p.aggregate_decode_tok_s;
}

/* -m: the model's cost from its file and this machine's rates from the
 * probe. 0; -1 out of memory; -2 a file that does not read (err). Without a
 * probe the run goes on with no ceiling. */
int load_model_ceiling_setup(struct load_state *s, struct tm_err *err) {
  s->cost = calloc(1, sizeof *s->cost);
  if (!s->cost) return -1;
  if (model_cost_from_file(s->o->gguf, GGML_TYPE_F16, s->cost, NULL, err) != 0) return -2;
  struct machine_probe *p = calloc(1, sizeof *p);
  struct tm_err perr = {{0}};
  if (p && probe_get(p, false, s->hooks.progress, s->hooks.ctx, &perr) == 0) {
    s->rates = (struct ceiling_rates){.read_bw_bytes_s = probe_best_read_bw(p, NULL),
                                      .f32_flops = probe_best_f32(p, NULL),
                                      .int8_ops = probe_best_int8(p, NULL),
                                      .int8_tile_ops = probe_best_int8_tile(p, NULL)};
    s->have_model = true;
    s->batch_turn = ceiling_batch_turn(s->cost, &s->rates, load_mean_depth(s->o), 4096);
  }
  free(p);
  return 0;
}

void load_batch_turn_finding(struct load_state *s) {
  struct bench_finding *f = bench_findings_add(&s->findings, "batch_turn", BENCH_INFO);
  const double depth = load_mean_depth(s->o);
  bench_finding_figure(f, "batch", s->batch_turn);
  bench_finding_figure(f, "depth", depth);
  if (s->batch_turn) {
    bench_finding_brief(f, "ceiling: the decode step turns compute bound at %u streams (depth %.0f)",
                        s->batch_turn, depth);
    bench_finding_text(f, "On this machine's figures the decode step of %u streams at depth %.0f "
                          "is compute bound: below that more streams share one read of the "
                          "weights, above it each adds its arithmetic.", s->batch_turn, depth);
  } else {
    bench_finding_brief(f, "ceiling: memory bound up to 4096 streams at depth %.0f", depth);
    bench_finding_text(f, "On this machine's figures the decode step stays memory bound up to "
                          "4096 streams at depth %.0f (each stream's KV cache grows the bytes "
                          "with the batch), or no compute rate is known.", depth);
  }
}

/* Runs one level (concurrency, or rate when concurrency is 0) as
 * s->levels[s->n_levels], records it; false when interrupted or full. */
static bool one_level(struct run *c, uint32_t concurrency, double rate) {
  struct load_state *s = c->s;
  const struct load_opts *o = s->o;
  if (s->n_levels == LOAD_MAX_LEVELS || backend_interrupted()) return false;
  struct load_level *lv = &s->levels[s->n_levels];
  memset(lv, 0, sizeof *lv);
  lv->concurrency = concurrency;
  lv->request_rate = concurrency ? NAN : rate;
  /* a shard's share: the streams split as evenly as they go (the first
   * shards one more), the rate divided */
  const uint32_t n = o->shard_count > 1 ? o->shard_count : 1, i = n > 1 ? o->shard_index : 0;
  lv->shard_concurrency = concurrency / n + (i < concurrency % n);
  lv->shard_rate = concurrency ? NAN : rate / n;
  c->rate = concurrency ? 0 : lv->shard_rate;
  c->level_index = s->n_levels;
  const uint64_t slot = wait_for_slot(c);
  if (backend_interrupted()) {
    s->interrupted = true;
    return false;
  }
  struct server_counters before, after;
  struct tm_err err = {{0}};
  struct server_slots slots_before = {0}, slots_after = {0};
  if (backend_server_slots(c->b, &slots_before, &err) != 0) slots_before.total = 0;
  if (backend_server_counters(c->b, &before, &err) != 0) before.source[0] = 0;
  run_level(c, lv, concurrency > 0, lv->shard_concurrency, slot);
  if (slots_before.total && backend_server_slots(c->b, &slots_after, &err) == 0 &&
      slots_after.total == slots_before.total) {
    lv->slots_total = slots_before.total;
    lv->slots_busy_before = slots_before.busy;
    lv->slots_busy_after = slots_after.busy;
  }
  if (before.source[0] && backend_server_counters(c->b, &after, &err) == 0 &&
      !strcmp(after.source, before.source))
    counters_check(c, lv, &before, &after);
  drop_samples(c);
  load_level_ceiling(c->s, lv);
  if (backend_interrupted()) {
    s->interrupted = true; /* a level cut short is no level */
    return false;
  }
  s->n_levels++;
  json_t *rec = load_level_json(s, lv);
  if (rec && s->hooks.level) s->hooks.level(lv, rec, s->hooks.ctx);
  load_level_findings(s, lv);
  bench_session_write(&s->session, rec);
  return true;
}

/* --find-capacity: the largest load in the given range that meets the SLOs,
 * by bisection (concurrency to one stream; rate to 5%). */
static void find_capacity(struct run *c) {
  struct load_state *s = c->s;
  const struct load_opts *o = s->o;
  const bool closed = o->n_concurrency > 0;
  double lo = INFINITY, hi = 0;
  for (size_t i = 0; i < (closed ? o->n_concurrency : o->n_rate); i++) {
    double v = closed ? o->concurrency[i] : o->rate[i];
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (lo == hi) lo = closed ? 1 : hi / 16;
#define PROBE(x) (one_level(c, closed ? (uint32_t)(x) : 0, closed ? 0 : (x)) \
                      ? (int)s->levels[s->n_levels - 1].f.slo_met : -1)
  int top = PROBE(hi);
  if (top < 0) return;
  if (top) {
    s->capacity_found = s->capacity_at_top = true;
  } else {
    int bottom = PROBE(lo);
    if (bottom < 0) return;
    if (bottom) {
      s->capacity_found = true;
      while (closed ? hi - lo > 1 : hi / lo > 1.05) {
        double mid = closed ? floor((lo + hi) / 2) : sqrt(lo * hi);
        int met = PROBE(mid);
        if (met < 0) return;
        if (met) lo = mid;
        else hi = mid;
      }
    }
  }
#undef PROBE
  if (closed) s->capacity_concurrency = s->capacity_found ? (uint32_t)(s->capacity_at_top ? hi : lo) : 0;
  else s->capacity_rate = s->capacity_found ? (s->capacity_at_top ? hi : lo) : NAN;
  struct bench_finding *f = bench_findings_add(&s->findings, "capacity", BENCH_INFO);
  char what[48], next[48];
  if (closed) snprintf(what, sizeof what, "c=%u", s->capacity_concurrency);
  else snprintf(what, sizeof what, "rate=%.3g/s", s->capacity_rate);
  if (closed) snprintf(next, sizeof next, "c=%.0f", hi);
  else snprintf(next, sizeof next, "rate=%.3g/s", hi);
  if (!s->capacity_found) {
    bench_finding_brief(f, "capacity: not even %s%.3g meets the SLOs", closed ? "c=" : "rate=", lo);
    bench_finding_text(f, "No load in the range meets the SLOs: the lowest tried (%s%.3g) "
                          "misses them.", closed ? "c=" : "rate=", lo);
  } else if (s->capacity_at_top) {
    bench_finding_brief(f, "capacity: at least %s (the top of the range meets the SLOs)", what);
    bench_finding_text(f, "The top of the range, %s, meets the SLOs: the capacity is at least "
                          "that; give a higher range to find it.", what);
  } else {
    bench_finding_brief(f, "capacity: %s meets the SLOs, %s does not", what, next);
    bench_finding_text(f, "The largest load that meets the SLOs is %s; %s misses them.", what,
                       next);
  }
  if (closed) bench_finding_figure(f, "capacity_concurrency", s->capacity_concurrency);
  else bench_finding_figure(f, "capacity_request_rate", s->capacity_rate);
}

/* ------------------------------------------------------------------ run */

void load_state_init(struct load_state *s, const struct load_opts *o, const struct load_hooks *h) {
  memset(s, 0, sizeof *s);
  s->o = o;
  if (h) s->hooks = *h;
  s->api = o->api;
  record_redact_url(o->url, s->url_shown, sizeof s->url_shown);
}

void load_state_free(struct load_state *s) {
  bench_session_end(&s->session, 0, NULL, false, NAN, NULL); /* only when still open */
  free(s->cost);
  s->cost = NULL;
  bench_findings_free(&s->findings);
}

void load_read_unix_offset(struct load_state *s) {
  struct timespec rt;
  clock_gettime(CLOCK_REALTIME, &rt);
  s->unix_offset = (double)rt.tv_sec + (double)rt.tv_nsec / 1e9 - (double)tm_now_ns() / 1e9;
}

int load_fail(struct load_state *s, int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s->err.msg, sizeof s->err.msg, fmt, ap);
  va_end(ap);
  tm_redact(s->err.msg, sizeof s->err.msg, s->o->api_key);
  tm_clean_control(s->err.msg);
  return status;
}

static json_t *slo_json(const struct load_slo *slo) {
  if (!load_slo_any(slo)) return json_null();
  json_t *o = json_object();
  for (int k = 0; k < LOAD_SLO_COUNT; k++)
    if (slo->set[k])
      json_object_set_new(o, load_slo_name((enum load_slo_metric)k),
                          json_pack("{s:f, s:f}", "limit_ms", slo->limit_ms[k], "percentile",
                                    slo->percentile[k]));
  return o;
}

/* The clock's own error estimate (adjtimex; read only, never set). */
static void read_clock(struct load_state *s) {
  struct timex tx = {0};
  const int state = ntp_adjtime(&tx);
  s->clock_est_error_ms = s->clock_max_error_ms = NAN;
  s->clock_synced = false;
  if (state == -1) return;
  s->clock_est_error_ms = (double)tx.esterror / 1e3;
  s->clock_max_error_ms = (double)tx.maxerror / 1e3;
  s->clock_synced = state != TIME_ERROR && !(tx.status & STA_UNSYNC);
}

static int open_session(struct load_state *s, const struct server_info *si) {
  const struct load_opts *o = s->o;
  json_t *levels = json_array();
  for (size_t i = 0; i < o->n_concurrency; i++)
    json_array_append_new(levels, json_integer(o->concurrency[i]));
  json_t *rates = json_array();
  for (size_t i = 0; i < o->n_rate; i++) json_array_append_new(rates, json_real(o->rate[i]));
  json_t *settings = json_pack(
      "{s:s, s:s, s:s?, s:o, s:o, s:s, s:f, s:f, s:f, s:i, s:i, s:i, s:i, s:i, s:f, s:f}", "url",
      s->url_shown, "api", api_family_name(s->api), "model", o->model, "concurrency", levels,
      "rate", rates, "arrivals", load_arrivals_name(o->arrivals), "burstiness", o->burstiness,
      "ramp_s", o->ramp_s, "duration_s", o->requests ? 0.0 : o->duration_s, "requests",
      (int)o->requests, "prompt_tokens", (int)o->prompt_tokens, "prompt_tokens_sd",
      (int)o->prompt_sd, "max_tokens", (int)o->max_tokens, "max_tokens_sd", (int)o->max_tokens_sd,
      "idle_timeout_s", o->idle_timeout_s, "timeout_s", o->timeout_s);
  json_object_set_new(settings, "gguf", o->gguf ? json_string(o->gguf) : json_null());
  json_t *wl = json_array();
  for (size_t i = 0; i < o->n_workloads; i++) json_array_append_new(wl, json_string(o->workloads[i]));
  for (size_t i = 0; o->file && i < o->file->n_jobs; i++)
    json_array_append_new(wl, json_string(o->file->jobs[i].name));
  json_object_set_new(settings, "workloads", wl);
  json_object_set_new(settings, "workload_file", o->file ? json_string(o->file->path) : json_null());
  json_object_set_new(settings, "seed", json_integer(o->seed));
  json_object_set_new(settings, "slo", slo_json(&o->slo));
  json_object_set_new(settings, "start_at_unix", record_json_num(o->start_at_unix));
  json_object_set_new(settings, "drain_s", isfinite(o->start_at_unix) ? json_real(o->drain_s)
                                                                       : json_null());
  json_object_set_new(settings, "shard", json_null());
  if (isfinite(o->start_at_unix)) {
    /* the run's id: what every shard of it shares (the settings above, the
     * shard count), hashed; then this shard's own index and clock */
    json_object_set_new(settings, "shard", json_pack("{s:i}", "count", (int)(o->shard_count ? o->shard_count : 1)));
    char *dump = json_dumps(settings, JSON_COMPACT | JSON_SORT_KEYS);
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *p = dump; p && *p; p++) h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
    free(dump);
    snprintf(s->run_id, sizeof s->run_id, "%016llx", (unsigned long long)h);
    json_t *sh = json_object_get(settings, "shard");
    json_object_set_new(sh, "index", json_integer(o->shard_count > 1 ? o->shard_index : 0));
    json_object_set_new(sh, "source", o->shard_source ? json_string(o->shard_source) : json_null());
    json_object_set_new(sh, "run", json_string(s->run_id));
    json_object_set_new(settings, "clock",
                        json_pack("{s:o, s:o, s:b}", "est_error_ms",
                                  record_json_num(s->clock_est_error_ms), "max_error_ms",
                                  record_json_num(s->clock_max_error_ms), "synced",
                                  s->clock_synced));
  }
  return load_session_open(s, settings, si, o->model ? o->model : si->model,
                           api_family_name(s->api), o->url);
}

int load_session_open(struct load_state *s, json_t *settings, const struct server_info *si,
                      const char *model_name, const char *backend, const char *target) {
  const struct load_opts *o = s->o;
  struct machine_info mi;
  struct machine_thermal th;
  struct tm_err err = {{0}};
  if (machine_info_read(&mi, &err) != 0) memset(&mi, 0, sizeof mi);
  machine_thermal_read(&th);
  struct record_model rm = {.name = model_name,
                            .file = o->gguf,
                            .arch = s->have_model ? s->cost->arch : NULL,
                            .bytes_per_token = s->have_model ? s->cost->weight_bytes_per_token : NAN};
  struct record_identity_in in = {.tokmeter_version = TOKMETER_VERSION,
                                  .settings = settings,
                                  .machine = &mi,
                                  .thermal_before = &th,
                                  .server = si,
                                  .model = &rm,
                                  .backend = backend,
                                  .target = target,
                                  .command = o->command};
  int rc = bench_session_open(&s->session, o->out, &in, &err);
  json_decref(settings);
  if (rc != 0) return load_fail(s, rc == -1 ? BENCH_BAD_INPUT : BENCH_RUNTIME, "%s", err.msg);
  return 0;
}

/* The calibration's requests: run records (calibration: true), as bench
 * writes them, so the cache baseline and the prompt line can be checked. */
static void calibration_sink(const struct runner_event *ev, void *ctx) {
  struct load_state *s = ctx;
  json_t *settings = json_pack("{s:I, s:b, s:b}", "max_tokens", (json_int_t)ev->request->max_tokens,
                               "exact_length", ev->request->exact_length, "nonce", 1);
  struct record_run_in in = {.identity = s->session.identity,
                             .workload = ev->workload ? ev->workload->name : NULL,
                             .index = ev->index,
                             .calibration = ev->calibration,
                             .warmup = ev->warmup,
                             .backend = api_family_name(s->api),
                             .target = s->o->url,
                             .model = s->o->model,
                             .settings = settings,
                             .max_tokens = ev->request->max_tokens};
  bench_session_write(&s->session, record_run_build(&in, ev->result, ev->metrics));
  json_decref(settings);
}

static void calibration_progress(const char *msg, void *ctx) {
  const struct load_state *s = ctx;
  s->hooks.progress(msg, s->hooks.ctx);
}

int load_run(struct load_state *s) {
  const struct load_opts *o = s->o;
  struct tm_err err = {{0}};
  if (!o->url) return load_engine_run(s);
  if ((o->n_concurrency == 0) == (o->n_rate == 0)) {
    s->err_is_usage = true;
    return load_fail(s, BENCH_BAD_INPUT, "give -c LIST or --rate LIST (one of them)");
  }
  if (o->find_capacity && !load_slo_any(&o->slo)) {
    s->err_is_usage = true;
    return load_fail(s, BENCH_BAD_INPUT, "--find-capacity needs --slo (the objectives to meet)");
  }
  if (o->shard_count > 1 || isfinite(o->start_at_unix)) {
    const char *why = NULL;
    if (o->shard_count > 1 && o->shard_index >= o->shard_count) why = "the shard index is not below the shard count";
    else if (o->shard_count > 1 && !isfinite(o->start_at_unix))
      why = "a sharded run needs --start-at TIME, the common start of every shard";
    else if (o->requests) why = "a scheduled run (--start-at, shards) needs --duration: --requests ends windows at different times";
    else if (o->find_capacity) why = "--find-capacity cannot be scheduled or sharded (each probe depends on the last)";
    if (why) {
      s->err_is_usage = true;
      if (o->shard_count > 1)
        return load_fail(s, BENCH_BAD_INPUT, "shard %u of %u (%s): %s", o->shard_index, o->shard_count,
                    o->shard_source ? o->shard_source : "flag", why);
      return load_fail(s, BENCH_BAD_INPUT, "%s", why);
    }
  }
  load_read_unix_offset(s);
  if (isfinite(o->start_at_unix)) {
    const double late = s->unix_offset + (double)tm_now_ns() / 1e9 - o->start_at_unix;
    if (late > 0) {
      s->err_is_usage = true;
      return load_fail(s, BENCH_BAD_INPUT,
                  "--start-at was %.1f s ago: give a time every shard reaches before it starts",
                  late);
    }
    read_clock(s);
  }
  if (o->gguf) {
    const int mrc = load_model_ceiling_setup(s, &err);
    if (mrc == -1) return load_fail(s, BENCH_RUNTIME, "out of memory");
    if (mrc == -2) {
      s->err_is_usage = true;
      return load_fail(s, BENCH_BAD_INPUT, "%s", err.msg);
    }
  }
  const double info_timeout_s = o->idle_timeout_s < 10 ? o->idle_timeout_s : 10;
  enum api_family api = o->api;
  struct server_info si;
  memset(&si, 0, sizeof si);
  if (api == API_AUTO && backend_detect_within(o->url, o->api_key, info_timeout_s, &api, &err) != 0) {
    /* nothing usable: the invocation still leaves its identity and end */
    int rc = load_fail(s, BENCH_RUNTIME, "%s", err.msg);
    if (open_session(s, &si) == 0) {
      struct bench_finding *f = bench_findings_add(&s->findings, "server_not_identified",
                                                   BENCH_PROBLEM);
      bench_finding_brief(f, "the server could not be used: nothing measured");
      bench_finding_text(f, "%s", s->err.msg);
      uint32_t failed[RUN_ERR_COUNT] = {0};
      failed[strstr(err.msg, "cannot reach") ? RUN_ERR_CONNECT : RUN_ERR_OTHER] = 1;
      bench_session_end(&s->session, 0, failed, false, NAN, &s->findings);
    }
    return rc;
  }
  s->api = api;
  struct backend_config cfg = {.base_url = o->url,
                               .api = api,
                               .endpoint = o->endpoint,
                               .api_key = o->api_key,
                               .connect_timeout_s = info_timeout_s};
  struct backend *b = backend_new(&cfg, &err);
  if (!b) {
    s->err_is_usage = true;
    return load_fail(s, BENCH_BAD_INPUT, "--url %s: %s", s->url_shown, err.msg);
  }
  if (backend_server_info(b, &si, &err) != 0) memset(&si, 0, sizeof si);
  snprintf(s->server_kind, sizeof s->server_kind, "%s", si.kind);
  int rc = open_session(s, &si);
  if (rc != 0) {
    backend_free(b);
    return rc;
  }

  /* each shard draws its own arrivals and lengths */
  struct run c = {.s = s, .b = b,
                  .rng = 0x9e3779b97f4a7c15ull ^ o->seed ^ ((uint64_t)o->shard_index * 0x2545f4914f6cdd1dull)};
  metrics_options_init(&c.mopt);
  /* the shared calibration: the cache baseline and the prompt-length line */
  struct runner_options ro;
  runner_options_init(&ro);
  ro.backend = b;
  ro.model = o->model;
  ro.idle_timeout_s = o->idle_timeout_s;
  ro.total_timeout_s = o->timeout_s;
  /* the tokenizer places the nonce for the cache check (runner.c); lengths,
   * which vary per request, come from the calibrated line */
  ro.skip_tokenize = !si.has_tokenize && si.tokenize_error[0];
  ro.progress = s->hooks.progress ? calibration_progress : NULL;
  ro.sink = calibration_sink;
  ro.ctx = s;
  struct runner_result *cal = calloc(1, sizeof *cal);
  if (!cal) {
    backend_free(b);
    return load_fail(s, BENCH_RUNTIME, "out of memory");
  }
  if (runner_calibrate(&ro, cal, &c.line, &err) != 0) {
    rc = load_fail(s, BENCH_RUNTIME, "%s", err.msg);
    struct bench_finding *f = bench_findings_add(&s->findings, "calibration_failed", BENCH_PROBLEM);
    bench_finding_brief(f, "the calibration failed: nothing measured");
    bench_finding_text(f, "%s", s->err.msg);
    bench_session_end(&s->session, 0, cal->failed_by_kind, backend_interrupted(), NAN,
                      &s->findings);
    free(cal);
    backend_free(b);
    return rc;
  }
  c.mopt.cache_baseline_tokens = cal->cache_baseline_tokens;
  free(cal);

  /* the levels as given, or (--find-capacity) a bisection of their range */
  const size_t n_given = o->n_concurrency ? o->n_concurrency : o->n_rate;
  size_t cap = 0;
  for (size_t i = 0; i < o->n_concurrency; i++)
    if (o->concurrency[i] > cap) cap = o->concurrency[i];
  if (o->shard_count > 1) cap = (cap + o->shard_count - 1) / o->shard_count; /* a shard's share */
  if (o->n_rate) cap = OPEN_LOOP_STREAMS;
  if (!cap) cap = 1;
  c.pool = backend_pool_new(b, cap, &err);
  c.fl = calloc(cap, sizeof *c.fl);
  c.n_fl = cap;
  if (!c.pool || !c.fl) {
    rc = load_fail(s, BENCH_RUNTIME, "%s", c.pool ? "out of memory" : err.msg);
    goto done;
  }
  if (o->file && load_jobs_prepare(&c, &err) != 0) {
    rc = load_fail(s, BENCH_RUNTIME, "%s", err.msg);
    goto done;
  }
  s->n_levels = 0;
  c.n_planned = o->find_capacity ? 0 : n_given;
  if (!o->find_capacity) {
    for (size_t i = 0; i < n_given && !backend_interrupted(); i++)
      one_level(&c, o->n_concurrency ? o->concurrency[i] : 0, o->n_rate ? o->rate[i] : 0);
    if (!s->interrupted) load_knee_finding(s);
  } else {
    find_capacity(&c);
  }
  if (s->have_model && s->n_levels) load_batch_turn_finding(s);
  rc = BENCH_OK;
  if (s->interrupted) rc = load_fail(s, BENCH_RUNTIME, "interrupted: the levels finished are recorded");
  else if (s->oom)
    rc = load_fail(s, BENCH_RUNTIME, "out of memory computing a level's figures (the requests are in %s)",
              s->session.path);
  else if (s->session.write_failures)
    rc = load_fail(s, BENCH_RUNTIME, "results not safely kept: %llu records missing from %s",
              (unsigned long long)s->session.write_failures, s->session.path);
  else if (s->failed_total)
    rc = load_fail(s, BENCH_RUNTIME, "%u requests failed (kinds in %s)", s->failed_total,
              s->session.path);
done: {
  uint32_t failed[RUN_ERR_COUNT] = {0};
  uint32_t runs = 0;
  for (size_t i = 0; i < s->n_levels; i++) {
    runs += s->levels[i].f.requests_ok + s->levels[i].f.requests_failed;
    for (int k = 0; k < RUN_ERR_COUNT; k++) failed[k] += s->levels[i].f.failed_by_kind[k];
  }
  bench_session_end(&s->session, runs, failed, s->interrupted, NAN, &s->findings);
}
  backend_pool_free(c.pool);
  load_jobs_free(&c);
  for (size_t i = 0; c.fl && i < c.n_fl; i++) free(c.fl[i].prompt);
  free(c.fl);
  free(c.samples);
  backend_free(b);
  return rc;
}
