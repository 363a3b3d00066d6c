/* server_bench: `tokmeter bench --url URL` for one invocation, on the
 * shared lifecycle (session.h): the API detected (or given), the server's
 * own information (/props, build flags), the model file's cost and this
 * machine's probe for ceilings (-m), the identity line, the runner's method
 * (runner.h: calibration, warm-ups, nonces, timed runs, each run line on
 * disk as it ends), the summaries with their ceilings and findings, the end
 * line. The caller owns what only a command line knows: flags, the API key's
 * environment variable, the prompt file's reading, Ctrl-C (backend_interrupt),
 * and the rendering of the result.
 *
 * Library code: nothing printed, no exit. Progress, warnings and notes go to
 * the hooks; sb_run returns BENCH_OK, BENCH_RUNTIME (with s->err: the server
 * could not be used, records were lost, or timed runs failed) or
 * BENCH_BAD_INPUT (s->err; err_is_usage when a flag's value). s->measured:
 * the runs ran and s holds what to show, whatever sb_run returned. */
#ifndef TM_BENCH_SERVER_BENCH_H
#define TM_BENCH_SERVER_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "bench/findings.h"
#include "bench/runner.h"
#include "bench/session.h"
#include "bench/summary.h"
#include "machine/probe.h"
#include "model/analysis.h"
#include "model/ceiling.h"
#include "record/record.h"

struct sb_opts {
  const char *url;        /* as given; recorded and shown without credentials */
  int api;                /* enum api_family; API_AUTO: detected */
  int endpoint;           /* enum api_endpoint */
  const char *model;      /* the served model; NULL: the server's */
  const char *api_key;    /* the key itself (from the environment); NULL: none.
                             Sent as a header, never recorded or shown */
  const char *gguf;       /* the file the server serves: ceilings; NULL: none */
  const char *prompt_file;/* for the settings record only (the text is in the
                             workload) */
  struct workload workloads[RUNNER_MAX_WORKLOADS];
  size_t n_workloads;
  uint32_t reps;          /* 0: 3 */
  bool allow_cache, cold;
  const char *out;        /* results file; NULL: RECORD_DEFAULT_FILE */
  double idle_timeout_s, timeout_s, cooldown_s;
  double max_wait_s;          /* the invocation's budget (runner.h); 0 = none */
  const char *command;
};

struct sb_hooks {
  void (*progress)(const char *message, void *ctx);
  void (*step)(const char *message, void *ctx); /* each workload as it begins */
  void (*progress_done)(void *ctx);
  void (*warn)(const char *message, void *ctx);
  void (*note)(const char *message, void *ctx);
  /* each summary record as written (--json prints them) */
  void (*summary)(const void *record, void *ctx);
  void *ctx;
};

/* The model file behind the server, for ceilings. */
struct sb_model {
  bool have;
  struct model_cost cost;
  char arch[64], type[32], name[256];
  struct ceiling_rates rates;  /* this machine's best per path; NAN when not probed */
  double bandwidth;            /* rates.read_bw_bytes_s */
};

struct sb_state {
  const struct sb_opts *o;
  struct sb_hooks hooks;
  struct tm_err err;
  bool err_is_usage;
  bool measured;
  char url_shown[512];   /* the URL without user:password@ and ?query */
  enum api_family api;
  const char *model_name;/* --model, else the server's */
  struct server_info si;
  struct machine_info mi;
  struct sb_model model;
  struct bench_session session;
  struct runner_result *res;
  struct bench_summary summaries[RUNNER_MAX_WORKLOADS];
  struct record_ceiling ceilings[RUNNER_MAX_WORKLOADS];
  double steal_share;    /* over the runs, 0..1; NAN unknown */
  int run_rc;            /* runner_run's */
  char run_err[400];     /* runner_run's error when run_rc < 0 */
  char place[64];        /* the running workload's place in the plan, "[2/3]" */
  /* Findings: per workload (config.workload set; also in its summary
   * record) and of the invocation (in the end record). */
  struct bench_findings findings;
};

void sb_state_init(struct sb_state *s, const struct sb_opts *o, const struct sb_hooks *hooks);
int sb_run(struct sb_state *s);
void sb_state_free(struct sb_state *s);

/* The served models' names into names (cap entries), redacted of the key;
 * the count, or -1 with err. */
int sb_list_models(const struct sb_opts *o, char (*names)[256], int cap, struct tm_err *err);

/* How the synthesized prompts were aimed at their target lengths and, when
 * not with the server's tokenizer, why not and what stood in (the -v line
 * under the table); "" when every prompt came from --prompt-file. A missing
 * /tokenize is normal (OpenAI-compatible servers): said, not warned. */
const char *sb_prompt_sizing_text(const struct sb_state *s, char *out, size_t cap);

/* Whether url names this machine (127.x, localhost, [::1]). */
bool sb_url_is_local(const char *url);

#endif
