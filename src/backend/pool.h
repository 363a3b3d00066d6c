/* pool: many streamed requests in flight at once to one backend's server.
 *
 * One thread, one libcurl multi handle driven by its socket API over one
 * epoll set, one easy handle per stream slot (its connection kept alive for
 * the slot's next request): no thread per stream, and a wake-up costs the
 * sockets that are ready. The process's descriptor limit is raised to fit
 * the streams (or the pool is refused, naming the limit).
 * Each request follows backend_run's rules exactly (the same dialect, the
 * same framing, arrival stamps taken in curl's callbacks, the same idle and
 * total timeouts, the same failure kinds and messages, the key scrubbed from
 * every string): backend_run is the one-slot case of this.
 *
 * Use: backend_pool_start a request into a free slot; call backend_pool_drive
 * in a loop; each request that ended (done, failed, timed out) is handed to
 * the callback with its tag, its run_result filled. The pool's connections
 * are its own (not the backend's). */
#ifndef TM_BACKEND_POOL_H
#define TM_BACKEND_POOL_H

#include <stddef.h>

#include "backend/backend.h"
#include "util/err.h"

struct backend_pool;

/* max_streams: the most requests in flight (1..65536). NULL with err. */
struct backend_pool *backend_pool_new(struct backend *b, size_t max_streams, struct tm_err *err);
/* Requests still in flight are cut (their results are not filled). */
void backend_pool_free(struct backend_pool *p);

size_t backend_pool_active(const struct backend_pool *p);
size_t backend_pool_capacity(const struct backend_pool *p);

/* Starts req now in a free slot; `out` is filled when it ends (it must live
 * until then; req need not: the request is built here). 0 when started; -1
 * when no slot is free or the request failed before it was sent (then out
 * holds the error and no callback follows). */
int backend_pool_start(struct backend_pool *p, const struct backend_request *req,
                       struct run_result *out, void *tag);

typedef void (*backend_pool_done_fn)(void *tag, struct run_result *out, void *ctx);
/* Waits up to wait_ms for activity (0: none), moves every transfer on, and
 * hands each request that ended to done. Returns how many ended, -1 when the
 * multi handle itself failed (every request in flight is then ended as
 * failed and handed to done). Ctrl-C (backend_interrupt) ends every request
 * in flight as interrupted. */
int backend_pool_drive(struct backend_pool *p, int wait_ms, backend_pool_done_fn done, void *ctx);

#endif
