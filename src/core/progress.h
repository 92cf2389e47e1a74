/* Progress of one engine call (fr_engine.progress, flashref.h): every thread counts the work units it finishes; the
 * caller's function is called only on OpenMP thread 0, which is the thread that called fr_fwd / fr_bwd, so it never
 * runs concurrently with itself and may print. Engines:
 *
 *     fr_progress pr;
 *     fr_progress_start(&pr, e, total_units);       // reports 0 of total
 *     #pragma omp parallel for ...  { ...; fr_progress_add(&pr, 1); }
 *     fr_progress_end(&pr);                         // reports total of total
 *
 * With no function set (the default) each call is one test of a NULL pointer. */
#ifndef FR_CORE_PROGRESS_H
#define FR_CORE_PROGRESS_H

#include "flashref.h"

#include <stdint.h>

#ifdef _OPENMP
#include <omp.h>
#endif

typedef struct fr_progress {
    fr_progress_fn fn;
    void *ud;
    int64_t total;
    int64_t done; /* updated atomically by every thread */
} fr_progress;

static inline void fr_progress_start(fr_progress *p, const fr_engine *e, int64_t total) {
    p->fn = e ? e->progress : NULL;
    p->ud = e ? e->progress_ud : NULL;
    p->total = total > 0 ? total : 0;
    p->done = 0;
    if (p->fn) p->fn(p->ud, 0, p->total);
}

/* n more units done (any thread); reported when called on thread 0. */
static inline void fr_progress_add(fr_progress *p, int64_t n) {
    if (!p || !p->fn) return;
    int64_t d;
#pragma omp atomic capture
    d = p->done += n;
#ifdef _OPENMP
    if (omp_get_thread_num() != 0) return;
#endif
    p->fn(p->ud, d < p->total ? d : p->total, p->total);
}

static inline void fr_progress_end(fr_progress *p) {
    if (p && p->fn) p->fn(p->ud, p->total, p->total);
}

#endif
