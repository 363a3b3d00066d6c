/* whatif: Amdahl for token jobs; see whatif.h for the model and contracts. */
#include "analysis/whatif.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/units.h"

/* ----------------------------------------------------------------- model */

int whatif_check(const struct whatif_job *job, struct tm_err *err) {
  if (!(job->items >= 1) || !isfinite(job->items))
    return tm_errf(err, "items must be at least 1");
  if (!(job->concurrency >= 1) || !isfinite(job->concurrency))
    return tm_errf(err, "concurrency must be at least 1");
  if (!(job->gen_tokens >= 0) || !isfinite(job->gen_tokens))
    return tm_errf(err, "tokens to generate must be >= 0");
  if (!(job->read_tokens >= 0) || !isfinite(job->read_tokens))
    return tm_errf(err, "tokens to read must be >= 0");
  if (job->read_tokens > 0 && !(job->prefill_ratio > 0) &&
      !(job->prefill_tok_s > 0 && isfinite(job->prefill_tok_s)))
    return tm_errf(err, "%.0f tokens to read per item but no prefill rate: give --prefill-rate "
                        "(or --prefill-ratio)", job->read_tokens);
  for (size_t i = 0; i < job->n_steps; i++)
    if (!(job->steps[i].seconds >= 0) || !isfinite(job->steps[i].seconds))
      return tm_errf(err, "step '%s': seconds must be >= 0", job->steps[i].name);
  return 0;
}

static double waves_of(const struct whatif_job *job) {
  return ceil(job->items / job->concurrency - 1e-12);
}

static void step_sums(const struct whatif_job *job, double *per_item_s, double *per_job_s) {
  *per_item_s = 0;
  *per_job_s = 0;
  for (size_t i = 0; i < job->n_steps; i++) {
    if (job->steps[i].per_item)
      *per_item_s += job->steps[i].seconds;
    else
      *per_job_s += job->steps[i].seconds;
  }
}

int whatif_eval(const struct whatif_job *job, double rate_tok_s, double baseline_total_s,
                struct whatif_row *row, struct tm_err *err) {
  if (whatif_check(job, err) != 0) return -1;
  if (!(rate_tok_s > 0) || !isfinite(rate_tok_s))
    return tm_errf(err, "generation rate must be a positive number of tok/s");
  memset(row, 0, sizeof *row);
  double item_s, job_s;
  step_sums(job, &item_s, &job_s);
  row->rate_tok_s = rate_tok_s;
  row->waves = waves_of(job);
  /* Streams actually busy: never more than there are items. */
  double busy = job->concurrency < job->items ? job->concurrency : job->items;
  row->aggregate_tok_s = rate_tok_s * busy;
  row->prefill_tok_s = NAN;
  if (job->read_tokens > 0) {
    row->prefill_tok_s = job->prefill_ratio > 0 ? job->prefill_ratio * rate_tok_s
                                                : job->prefill_tok_s;
    row->read_s = row->waves * job->read_tokens / row->prefill_tok_s;
  }
  row->generate_s = row->waves * job->gen_tokens / rate_tok_s;
  row->item_steps_s = row->waves * item_s;
  row->job_steps_s = job_s;
  row->total_s = row->read_s + row->generate_s + row->item_steps_s + row->job_steps_s;
  row->speedup = (baseline_total_s > 0 && row->total_s > 0) ? baseline_total_s / row->total_s
                                                            : NAN;
  row->fixed_share = row->total_s > 0 ? (row->item_steps_s + row->job_steps_s) / row->total_s
                                      : NAN;
  row->generate_share = row->total_s > 0 ? row->generate_s / row->total_s : NAN;
  return 0;
}

double whatif_limit_s(const struct whatif_job *job) {
  double item_s, job_s;
  step_sums(job, &item_s, &job_s);
  double waves = waves_of(job);
  double read_s = 0;
  if (job->read_tokens > 0 && !(job->prefill_ratio > 0) && job->prefill_tok_s > 0)
    read_s = waves * job->read_tokens / job->prefill_tok_s;
  return read_s + waves * item_s + job_s;
}

/* ---------------------------------------------------------------- parsing */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int parse_rate(const char *s, double *v, struct tm_err *err) {
  if (tm_parse_tokens(s, v, err) != 0) return tm_err_prefix(err, "rate");
  if (!(*v > 0)) return tm_errf(err, "rate '%s' must be above 0 tok/s", s);
  return 0;
}

static int push(double *out, size_t max, size_t *k, double v, struct tm_err *err) {
  if (*k == max) return tm_errf(err, "rate: at most %zu values", max);
  out[(*k)++] = v;
  return 0;
}

int whatif_parse_rates(const char *s, double *out, size_t max, size_t *n, struct tm_err *err) {
  char buf[512];
  if (!s || !*s) return tm_errf(err, "rate: empty");
  if (strlen(s) >= sizeof buf) return tm_errf(err, "rate: too long");
  strcpy(buf, s);
  size_t k = 0;
  char *dots = strstr(buf, "..");
  if (dots) {
    *dots = 0;
    char *hi = dots + 2, *colon = strchr(hi, ':');
    long points = 0;
    if (colon) {
      *colon = 0;
      char *end;
      errno = 0;
      points = strtol(colon + 1, &end, 10);
      if (*end || errno || points < 2 || (size_t)points > max)
        return tm_errf(err, "rate: '%s': the number of points after ':' must be 2..%zu", s, max);
    }
    double a, b;
    if (parse_rate(buf, &a, err) != 0 || parse_rate(hi, &b, err) != 0) return -1;
    if (!(b > a)) return tm_errf(err, "rate: '%s': the sweep must go up (A..B with A < B)", s);
    if (points) {
      for (long i = 0; i < points; i++)
        out[k++] = i == points - 1 ? b : a * pow(b / a, (double)i / (double)(points - 1));
    } else {
      /* A, every 1-2-5 value strictly between, B: values people read. */
      if (push(out, max, &k, a, err) != 0) return -1;
      static const double mant[] = {1, 2, 5};
      for (int e = (int)floor(log10(a)); e <= (int)ceil(log10(b)); e++)
        for (int m = 0; m < 3; m++) {
          double v = mant[m] * pow(10, e);
          if (v > a * (1 + 1e-9) && v < b * (1 - 1e-9) && push(out, max, &k, v, err) != 0)
            return -1;
        }
      if (push(out, max, &k, b, err) != 0) return -1;
    }
  } else {
    if (tm_list_check(buf, "rate", err) != 0) return -1;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
      double v;
      while (*tok == ' ') tok++;
      if (parse_rate(tok, &v, err) != 0 || push(out, max, &k, v, err) != 0) return -1;
    }
    if (k == 0) return tm_errf(err, "rate: empty list");
  }
  qsort(out, k, sizeof *out, cmp_double);
  size_t w = 0;
  for (size_t i = 0; i < k; i++)
    if (w == 0 || out[i] > out[w - 1] * (1 + 1e-12)) out[w++] = out[i];
  *n = w;
  return 0;
}

int whatif_parse_seconds(const char *s, double *out, struct tm_err *err) {
  static const struct { const char *unit; double mult; } units[] = {
      {"", 1},      {"s", 1},       {"sec", 1},  {"ns", 1e-9}, {"us", 1e-6},
      {"\xc2\xb5s", 1e-6}, {"ms", 1e-3}, {"m", 60}, {"min", 60}, {"h", 3600},
      {"d", 86400},
  };
  char *end;
  if (!s || !*s) return tm_errf(err, "'' is not a duration; expected e.g. 600, 1.5s, 10m, 2h");
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || errno == ERANGE || !isfinite(v))
    return tm_errf(err, "'%s' is not a duration; expected e.g. 600, 1.5s, 350ms, 10m, 2h", s);
  while (*end == ' ') end++;
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    if (strcasecmp(end, units[i].unit) == 0 && !(units[i].mult == 60 && strcmp(end, "M") == 0)) {
      if (v < 0) return tm_errf(err, "'%s': a duration cannot be negative", s);
      *out = v * units[i].mult;
      return 0;
    }
  }
  return tm_errf(err, "'%s': unknown time unit '%s'; expected ns, us, ms, s, m, h or d", s, end);
}

int whatif_parse_step(const char *s, struct whatif_step *out, struct tm_err *err) {
  const char *eq = s ? strchr(s, '=') : NULL;
  if (!eq || eq == s)
    return tm_errf(err, "step '%s': expected NAME=SECONDS, e.g. review=600 or test=30/item",
                   s ? s : "");
  size_t len = (size_t)(eq - s);
  if (len >= sizeof out->name) return tm_errf(err, "step '%s': name too long", s);
  struct whatif_step st;
  memset(&st, 0, sizeof st);
  memcpy(st.name, s, len);
  char val[64];
  if (strlen(eq + 1) >= sizeof val) return tm_errf(err, "step '%s': value too long", s);
  strcpy(val, eq + 1);
  char *slash = strrchr(val, '/');
  if (slash) {
    if (strcasecmp(slash + 1, "item") != 0 && strcasecmp(slash + 1, "job") != 0)
      return tm_errf(err, "step '%s': '/%s' is neither /item nor /job", s, slash + 1);
    st.per_item = strcasecmp(slash + 1, "item") == 0;
    *slash = 0;
  }
  if (whatif_parse_seconds(val, &st.seconds, err) != 0)
    return tm_err_prefix(err, "step '%s'", s);
  *out = st;
  return 0;
}

/* ------------------------------------------------------------------ claim */

int whatif_claim(const struct whatif_claim_in *in, struct whatif_claim_out *out,
                 struct tm_err *err) {
  if (!(in->value > 0) || !isfinite(in->value))
    return tm_errf(err, "claim: the figure must be a positive number");
  if (!(in->prompt_tokens > 0) || !(in->answer_tokens > 0))
    return tm_errf(err, "claim: prompt and answer lengths must be above 0 tokens");
  if (in->n_streams > WHATIF_MAX_RATES)
    return tm_errf(err, "claim: at most %d stream counts", WHATIF_MAX_RATES);
  memset(out, 0, sizeof *out);
  double v = in->value;
  out->context_tokens = v;
  out->context_prompts = v / in->prompt_tokens;
  out->context_fill_s = (in->prefill_tok_s > 0 && isfinite(in->prefill_tok_s))
                            ? v / in->prefill_tok_s : NAN;
  out->prefill_prompt_s = in->prompt_tokens / v;
  out->decode_answer_s = in->answer_tokens / v;
  out->decode_token_s = 1.0 / v;
  out->decode_bandwidth_bytes_s = (in->bytes_per_token > 0 && isfinite(in->bytes_per_token))
                                      ? v * in->bytes_per_token : NAN;
  for (size_t i = 0; i < in->n_streams; i++) {
    if (!(in->streams[i] >= 1)) return tm_errf(err, "claim: stream counts must be >= 1");
    struct whatif_claim_stream *a = &out->at[out->n_at++];
    a->streams = in->streams[i];
    a->per_stream_tok_s = v / in->streams[i];
    a->answer_s = in->answer_tokens / a->per_stream_tok_s;
  }
  return 0;
}
