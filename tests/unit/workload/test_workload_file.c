/* test_workload_file: workload files read whole and checked before anything
 * runs: every field, image files typed and sized from their headers
 * (written here: PNG, GIF, JPEG, WebP), URLs kept as given, data URLs built,
 * and every kind of bad file refused with FILE:LINE and what is wrong. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tm_test.h"
#include "workload/workload_file.h"

static char dir[256];

static void put(const char *name, const void *data, size_t n) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  FILE *f = fopen(p, "wb");
  CHECK_MSG(f != NULL, "cannot write %s", p);
  if (!f) return;
  fwrite(data, 1, n, f);
  fclose(f);
}
static void put_text(const char *name, const char *text) { put(name, text, strlen(text)); }

static const uint8_t png_3x2[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13,
                                  'I', 'H', 'D', 'R', 0, 0, 0, 3, 0, 0, 0, 2, 8, 2, 0, 0, 0};
static const uint8_t gif_5x4[] = {'G', 'I', 'F', '8', '9', 'a', 5, 0, 4, 0, 0, 0, 0};
/* SOI, an APP0 segment of 16 bytes, SOF0 with height 480 and width 640 */
static const uint8_t jpeg_640x480[] = {0xff, 0xd8, 0xff, 0xe0, 0, 16, 'J', 'F', 'I', 'F', 0, 1, 1,
                                       0,    0,    1,    0,    1, 0,  0,  0xff, 0xc0, 0, 17, 8,
                                       0x01, 0xe0, 0x02, 0x80, 3, 1,  0x22, 0};
static const uint8_t webp_7x9[] = {'R', 'I', 'F', 'F', 30, 0, 0, 0, 'W', 'E', 'B', 'P', 'V', 'P', '8',
                                   'X', 10, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 8, 0, 0};

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/tm_wl_XXXXXX");
  CHECK(mkdtemp(dir) != NULL);
  char sub[300];
  snprintf(sub, sizeof sub, "%s/img", dir);
  mkdir(sub, 0700);
  put("img/panel.png", png_3x2, sizeof png_3x2);
  put("a.gif", gif_5x4, sizeof gif_5x4);
  put("b.jpg", jpeg_640x480, sizeof jpeg_640x480);
  put("c.webp", webp_7x9, sizeof webp_7x9);
  put_text("not_image.png", "hello, I am text");
}

static void test_good_file(void) {
  put_text("good.jsonl",
           "{\"name\": \"panel\", \"prompt\": \"Is this an electrical panel?\", \"images\": "
           "[\"img/panel.png\", \"a.gif\", \"b.jpg\", \"c.webp\", \"https://example.com/x.png\"], "
           "\"max_tokens\": 8, \"expect\": {\"equals\": \"yes\"}, \"repeat\": 5}\n"
           "\n"
           "{\"name\": \"extract\", \"system\": \"Reply in JSON.\", \"messages\": [{\"role\": "
           "\"user\", \"content\": \"Hi\"}, {\"role\": \"assistant\", \"content\": \"Hello\"}, "
           "{\"role\": \"user\", \"content\": \"Where?\"}]}\r\n");
  char path[512], err[512] = "";
  snprintf(path, sizeof path, "%s/good.jsonl", dir);
  struct workload_file wf;
  CHECK_MSG(workload_file_load(path, &wf, err, sizeof err) == 0, "%s", err);
  CHECK_EQ_U64(wf.n_jobs, 2);
  if (wf.n_jobs != 2) return;
  const struct wl_job *a = &wf.jobs[0], *b = &wf.jobs[1];
  CHECK_STR(a->name, "panel");
  CHECK_EQ_INT(a->line, 1);
  CHECK(a->from_prompt);
  CHECK_EQ_U64(a->n_messages, 1);
  CHECK_STR(a->messages[0].role, "user");
  CHECK_EQ_INT(a->max_tokens, 8);
  CHECK_EQ_INT(a->repeat, 5);
  CHECK(a->has_expect && a->expect.kind == EXPECT_EQUALS);
  CHECK_EQ_U64(a->n_images, 5);
  if (a->n_images == 5) {
    CHECK_STR(a->images[0].mime, "image/png");
    CHECK_EQ_INT(a->images[0].width, 3);
    CHECK_EQ_INT(a->images[0].height, 2);
    CHECK_EQ_U64(a->images[0].bytes, sizeof png_3x2);
    CHECK_STR(a->images[1].mime, "image/gif");
    CHECK_EQ_INT(a->images[1].width, 5);
    CHECK_EQ_INT(a->images[1].height, 4);
    CHECK_STR(a->images[2].mime, "image/jpeg");
    CHECK_EQ_INT(a->images[2].width, 640);
    CHECK_EQ_INT(a->images[2].height, 480);
    CHECK_STR(a->images[3].mime, "image/webp");
    CHECK_EQ_INT(a->images[3].width, 7);
    CHECK_EQ_INT(a->images[3].height, 9);
    CHECK(a->images[4].path == NULL);
    CHECK_STR(a->images[4].url, "https://example.com/x.png");
    char e[256];
    char *u = wl_image_url(&a->images[1], e, sizeof e);
    /* GIF89a 05 00 04 00 00 00 00 -> base64 of those 13 bytes */
    CHECK_STR(u, "data:image/gif;base64,R0lGODlhBQAEAAAAAA==");
    free(u);
    u = wl_image_url(&a->images[4], e, sizeof e);
    CHECK_STR(u, "https://example.com/x.png");
    free(u);
  }
  CHECK_STR(b->name, "extract");
  CHECK_EQ_INT(b->line, 3);
  CHECK(!b->from_prompt);
  CHECK_EQ_U64(b->n_messages, 4);
  if (b->n_messages == 4) {
    CHECK_STR(b->messages[0].role, "system");
    CHECK_STR(b->messages[0].content, "Reply in JSON.");
    CHECK_STR(b->messages[3].content, "Where?");
  }
  CHECK_EQ_INT(b->max_tokens, 0);
  CHECK_EQ_INT(b->repeat, 0);
  CHECK(!b->has_expect);
  char *t = wl_job_text(b);
  CHECK_STR(t, "Reply in JSON.\n\nHi\n\nHello\n\nWhere?");
  free(t);
  workload_file_free(&wf);
}

/* A file of `lines` is refused with an error that names line `line` and
 * says `needle`. */
static void check_bad(const char *lines, int line, const char *needle) {
  put_text("bad.jsonl", lines);
  char path[512], err[512] = "", want[600];
  snprintf(path, sizeof path, "%s/bad.jsonl", dir);
  if (line > 0) snprintf(want, sizeof want, "%s:%d: ", path, line);
  else snprintf(want, sizeof want, "%s: ", path);
  struct workload_file wf;
  CHECK_MSG(workload_file_load(path, &wf, err, sizeof err) == -1, "accepted: %s", lines);
  CHECK_MSG(!strncmp(err, want, strlen(want)), "\"%s\" does not start with \"%s\"", err, want);
  CHECK_MSG(strstr(err, needle) != NULL, "\"%s\" does not say \"%s\"", err, needle);
  CHECK(strchr(err, '\n') == NULL);
  CHECK(wf.n_jobs == 0 && wf.jobs == NULL);
}

static void test_bad_files(void) {
  const char *ok = "{\"name\": \"a\", \"prompt\": \"hi\"}\n";
  char two[256];
  check_bad("", 0, "no jobs");
  check_bad("\n  \n", 0, "no jobs");
  check_bad("{\"name\": \"a\", \"prompt\": \"hi\"\n", 1, "invalid JSON");
  check_bad("[1, 2]\n", 1, "JSON object");
  snprintf(two, sizeof two, "%s{\"prompt\": \"hi\"}\n", ok);
  check_bad(two, 2, "missing \"name\"");
  snprintf(two, sizeof two, "%s%s", ok, ok);
  check_bad(two, 2, "already line 1");
  check_bad("{\"name\": 3, \"prompt\": \"hi\"}", 1, "\"name\" must be");
  check_bad("{\"name\": \"a\"}", 1, "exactly one");
  check_bad("{\"name\": \"a\", \"prompt\": \"x\", \"messages\": []}", 1, "exactly one");
  check_bad("{\"name\": \"a\", \"prompt\": 5}", 1, "\"prompt\" must be");
  check_bad("{\"name\": \"a\", \"prompt\": \"x\", \"maxtokens\": 5}", 1, "unknown field \"maxtokens\"");
  check_bad("{\"name\": \"a\", \"prompt\": \"x\", \"max_tokens\": 0}", 1, "\"max_tokens\" must be");
  check_bad("{\"name\": \"a\", \"prompt\": \"x\", \"max_tokens\": \"8\"}", 1, "\"max_tokens\" must be");
  check_bad("{\"name\": \"a\", \"prompt\": \"x\", \"repeat\": 2.5}", 1, "\"repeat\" must be");
  check_bad("{\"name\": \"a\", \"prompt\": \"x\", \"system\": [1]}", 1, "\"system\" must be");
  check_bad("{\"name\": \"a\", \"messages\": [{\"role\": \"bot\", \"content\": \"x\"}]}", 1,
            "role \"bot\"");
  check_bad("{\"name\": \"a\", \"messages\": [{\"role\": \"user\"}]}", 1, "messages[0] must be");
  check_bad("{\"name\": \"a\", \"messages\": [{\"role\": \"user\", \"content\": \"x\"}, "
            "{\"role\": \"assistant\", \"content\": \"y\"}]}",
            1, "last of \"messages\"");
  check_bad("{\"name\": \"a\", \"prompt\": \"x\", \"images\": \"p.png\"}", 1, "\"images\" must be");
  check_bad("{\"name\": \"a\", \"prompt\": \"x\", \"images\": [\"missing.png\"]}", 1,
            "image \"missing.png\": No such file");
  check_bad("{\"name\": \"a\", \"prompt\": \"x\", \"images\": [\"not_image.png\"]}", 1,
            "not a PNG, JPEG, GIF or WebP");
  check_bad("{\"name\": \"a\", \"prompt\": \"x\", \"images\": [\"img\"]}", 1, "not a regular file");
  check_bad("{\"name\": \"a\", \"prompt\": \"x\", \"images\": [\"data:image/png,abc\"]}", 1,
            "must be base64");
  check_bad("{\"name\": \"a\", \"prompt\": \"x\", \"expect\": {\"equal\": \"y\"}}", 1,
            "unknown key \"equal\"");
  check_bad("{\"name\": \"a\", \"prompt\": \"x\", \"expect\": \"yes\"}", 1, "must be an object");
  char p[512], err[512];
  struct workload_file wf;
  snprintf(p, sizeof p, "%s/absent.jsonl", dir);
  CHECK(workload_file_load(p, &wf, err, sizeof err) == -1 && strstr(err, "No such file"));
}

static void test_is_file(void) {
  CHECK(workload_is_file("x/jobs.jsonl"));
  CHECK(!workload_is_file("classify"));
  CHECK(!workload_is_file(".jsonl"));
  CHECK(!workload_is_file("jobs.json"));
  CHECK(!workload_is_file(NULL));
}

static void teardown(void) {
  const char *names[] = {"img/panel.png", "a.gif", "b.jpg", "c.webp", "not_image.png",
                         "good.jsonl", "bad.jsonl"};
  char p[512];
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, names[i]);
    unlink(p);
  }
  snprintf(p, sizeof p, "%s/img", dir);
  rmdir(p);
  rmdir(dir);
}

void tm_run_tests(void) {
  setup();
  TM_RUN(test_good_file);
  TM_RUN(test_bad_files);
  TM_RUN(test_is_file);
  teardown();
}
