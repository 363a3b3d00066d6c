/* normalize: the one text normalization answer checks compare through
 * (expect.h), on utf8proc (Unicode's own tables, no locale):
 *
 *   answer_normalize: compatibility decomposition (fullwidth digits and
 *   letters, ligatures, superscripts become their plain forms), full case
 *   folding (ß -> ss, ISTANBUL -> istanbul), combining marks removed (so the
 *   folded İ, an i plus a combining dot above, becomes a plain i: full case
 *   folding alone leaves that dot, the trap a naive lower() falls into),
 *   default-ignorable characters (soft hyphen, zero-width space) removed,
 *   look-alike dashes and spaces lumped to ASCII, every run of whitespace
 *   one space, trimmed, then recomposed (NFC) for display.
 *
 *   answer_nfc: canonical composition only, the string otherwise as it is
 *   (an expectation with "exact": true).
 *
 * Both return a malloc'd NUL-terminated string, or NULL on invalid UTF-8
 * (the caller says so; nothing is guessed). */
#ifndef TM_WORKLOAD_NORMALIZE_H
#define TM_WORKLOAD_NORMALIZE_H

char *answer_normalize(const char *s);
char *answer_nfc(const char *s);

/* answer_normalize and then leading and trailing punctuation and symbols
 * removed (".", "!", "*", quotes, brackets: "**Yes.**" -> "yes"), for
 * comparisons of a whole short answer (equals, one_of). */
char *answer_normalize_word(const char *s);

#endif
