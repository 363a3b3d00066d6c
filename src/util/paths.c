/* paths: see paths.h. */
#include "util/paths.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int tm_mkdirs(const char *path, struct tm_err *err) {
  char buf[4096];
  if (strlen(path) >= sizeof buf) return tm_errf(err, "path too long: %s", path);
  strcpy(buf, path);
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(buf, 0755) != 0 && errno != EEXIST)
      return tm_errf(err, "cannot create directory %s: %s", buf, strerror(errno));
    *p = '/';
  }
  if (mkdir(buf, 0755) != 0 && errno != EEXIST)
    return tm_errf(err, "cannot create directory %s: %s", buf, strerror(errno));
  struct stat st;
  if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode))
    return tm_errf(err, "%s exists and is not a directory", buf);
  return 0;
}

int tm_cache_dir(char *buf, size_t n, struct tm_err *err) {
  const char *dir = getenv("TOKMETER_CACHE_DIR");
  const char *xdg = getenv("XDG_CACHE_HOME");
  const char *home = getenv("HOME");
  int len;
  if (dir && *dir)
    len = snprintf(buf, n, "%s", dir);
  else if (xdg && *xdg)
    len = snprintf(buf, n, "%s/tokmeter", xdg);
  else if (home && *home)
    len = snprintf(buf, n, "%s/.cache/tokmeter", home);
  else
    return tm_errf(err, "no cache directory: set TOKMETER_CACHE_DIR or HOME");
  if (len < 0 || (size_t)len >= n) return tm_errf(err, "cache directory path too long");
  return tm_mkdirs(buf, err);
}

int tm_write_file_atomic(const char *path, const void *data, size_t len, struct tm_err *err) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return tm_errf(err, "cannot write %s: %s", tmp, strerror(errno));
  const char *p = data;
  size_t left = len;
  while (left) {
    ssize_t w = write(fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      int e = errno;
      close(fd);
      unlink(tmp);
      return tm_errf(err, "cannot write %s: %s", tmp, strerror(e));
    }
    p += w;
    left -= (size_t)w;
  }
  if (close(fd) != 0 || rename(tmp, path) != 0) {
    int e = errno;
    unlink(tmp);
    return tm_errf(err, "cannot write %s: %s", path, strerror(e));
  }
  return 0;
}

bool tm_parent_dir_exists(const char *path, char *dir, size_t n) {
  const char *slash = strrchr(path, '/');
  if (!slash) snprintf(dir, n, ".");
  else if (slash == path) snprintf(dir, n, "/");
  else snprintf(dir, n, "%.*s", (int)(slash - path), path);
  struct stat st;
  return stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}
