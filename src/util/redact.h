/* redact: the one scrub for text that leaves tokmeter (stderr, stdout, records)
 * and may hold a secret: anything a server sent (error bodies, model names,
 * stream error events, detection messages), the command line, URLs.
 *
 * tm_redact removes, in this order:
 *   1. the API key itself (when given) and, for a key of at least
 *      TM_REDACT_FRAGMENT_MIN characters, any run of that many or more
 *      characters copied from it (a key cut short by a truncation anywhere),
 *      and a prefix of it of TM_REDACT_CUT_MIN or more characters that ends
 *      the text (the cut of a message truncated just after the key began);
 *   2. "user:password@" after a "scheme://";
 *   3. the word after "Bearer ", words starting with "sk-" (12+ characters)
 *      and "key=" values (the generic last line of defence);
 * every removal of 1 and 3 becoming "[redacted]"; and replaces bytes that are
 * not UTF-8 by '?', so the result can always go into a JSON string.
 * Scrub BEFORE truncating whenever the whole text is at hand: the fragment
 * rules are a second line of defence for text that was already cut. */
#ifndef TM_REDACT_H
#define TM_REDACT_H

#include <stdbool.h>
#include <stddef.h>

#define TM_REDACT_FRAGMENT_MIN 8
#define TM_REDACT_CUT_MIN 4
#define TM_REDACT_MARK "[redacted]"

/* The scrubbed copy of text[0..len) (malloc'd, NUL-terminated; *out_len its
 * length when out_len is not NULL). key NULL or "" = no key known. NULL only
 * when out of memory. */
char *tm_redact_dup(const char *text, size_t len, const char *key, size_t *out_len);
/* In place on a NUL-terminated msg in a buffer of cap bytes (the result is cut
 * to fit, at a UTF-8 boundary). When out of memory, msg is emptied rather than
 * left unscrubbed. */
void tm_redact(char *msg, size_t cap, const char *key);
/* Terminal hygiene, in place: every control byte of s (below 0x20, and
 * 0x7f: ESC sequences, carriage returns, bells from a server's text, a
 * results file or a JSON library's "near '...'") becomes '?', so a message
 * cannot rewrite the terminal; UTF-8 and printable ASCII are kept. */
void tm_clean_control(char *s);
/* Whether s[0..len) is well-formed UTF-8 (no overlongs, surrogates or code
 * points above U+10FFFF). */
bool tm_utf8_valid(const char *s, size_t len);

#endif
