/* textfile: a whole file read as text to send inside a request (a prompt):
 * non-empty, at most max_bytes, no NUL byte, valid UTF-8. */
#ifndef TM_TEXTFILE_H
#define TM_TEXTFILE_H

#include <stddef.h>

#include "util/err.h"

/* The file's text, malloc'd and NUL-terminated; NULL with err ("PATH: empty
 * file", "PATH: not UTF-8 text", ...) when it cannot be read or is not text. */
char *tm_read_text_file(const char *path, size_t max_bytes, struct tm_err *err);

#endif
