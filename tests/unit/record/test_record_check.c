/* Tests of record_check_writable (src/record/record.h): the one check every
 * writer of results files (bench, bench --url, import) makes before it
 * measures or reads anything. It must let through a new file, an empty one,
 * a tokmeter results file and a character device, and refuse what the next
 * record must not be appended to: a model file, a text file, JSON that is
 * not a tokmeter record, a file whose last line was cut, a directory. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "record/record.h"
#include "tm_test.h"

static const char *write_file(const char *name, const char *text, size_t n) {
  const char *path = tm_tmpfile(name);
  FILE *f = fopen(path, "wb");
  if (!f) return path;
  fwrite(text, 1, n, f);
  fclose(f);
  return path;
}

static void expect_ok(const char *path) {
  struct tm_err err = {{0}};
  CHECK_MSG(record_check_writable(path, &err) == 0, "%s: %s", path, err.msg);
}

static void expect_refused(const char *path, const char *why) {
  struct tm_err err = {{0}};
  CHECK_EQ_INT(record_check_writable(path, &err), -1);
  CHECK_CONTAINS(err.msg, path);
  CHECK_CONTAINS(err.msg, why);
  CHECK(strchr(err.msg, '\n') == NULL); /* one line */
}

static void test_accepted(void) {
  expect_ok(tm_tmpfile("new.jsonl")); /* not there yet: created later */
  expect_ok(write_file("empty.jsonl", "", 0));
  expect_ok(write_file("blank.jsonl", "\n \n", 3));
  const char *rec = "\n{\"record\":\"identity\",\"schema\":1,\"id\":\"x\"}\n{\"record\":\"end\"}\n";
  expect_ok(write_file("good.jsonl", rec, strlen(rec)));
  expect_ok("/dev/null"); /* a character device is never read */
}

static void test_refused(void) {
  /* A GGUF given as --out by mistake: its magic, then binary. */
  static const char gguf[] = "GGUF\3\0\0\0\1\0\0\0\0\0\0\0\n{\"record\":\"run\"}\n";
  const char *g = write_file("model.gguf", gguf, sizeof gguf - 1);
  expect_refused(g, "not a tokmeter results file (its first line is not a JSON object): "
                    "refusing to append");
  expect_refused(write_file("notes.txt", "hello\n", 6), "its first line is not a JSON object");
  expect_refused(write_file("nolf.txt", "hello", 5), "its first line is not a JSON object");
  expect_refused(write_file("array.jsonl", "[1,2]\n", 6), "its first line is not a JSON object");
  expect_refused(write_file("other.jsonl", "{\"a\":1}\n", 8),
                 "its first line is not a tokmeter record");
  expect_refused(write_file("num.jsonl", "{\"record\":1}\n", 13),
                 "its first line is not a tokmeter record");
  const char *cut = "{\"record\":\"identity\",\"id\":\"x\"}\n{\"record\":\"ru";
  expect_refused(write_file("cut.jsonl", cut, strlen(cut)), "its last line is cut");
  const char *d = tm_tmpfile("adir");
  mkdir(d, 0755);
  expect_refused(d, "is a directory");
  expect_refused("/nonexistent-dir-tokmeter/x.jsonl", "no directory");
}

void tm_run_tests(void) {
  TM_RUN(test_accepted);
  TM_RUN(test_refused);
}
