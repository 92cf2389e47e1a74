/* The IUT vtable: each kind of implementation lives in its own file (iut_open.c: engines and disk; iut_mutant.c:
 * mutants; iut_plugin.c: dlopen'd plugins; iut_exec.c: the exec protocol; iut_callback.c: a caller's function), on
 * top of the run path of iut.c. */
#ifndef FR_VERIFY_IUT_INTERNAL_H
#define FR_VERIFY_IUT_INTERNAL_H

#include "verify/iut/caps.h"
#include "verify/iut/iut.h"

typedef struct fr_iut_ops {
    /* Computes case c into o (already allocated by fr_iut_run in the operator's dtypes, NaN-prefilled, guarded). */
    fr_status (*run)(fr_iut *iut, const fr_case *c, int threads, fr_case_outputs *o, fr_error *err);
    void (*close)(fr_iut *iut);
    /* Sets the per-case timeout (seconds, checked > 0 by fr_iut_set_timeout); NULL: the kind has none. */
    fr_status (*set_timeout)(fr_iut *iut, double seconds, fr_error *err);
    /* Writes a standalone reproducer of the case directory case_dir to out (fr_iut_repro); NULL: no hook. */
    fr_status (*repro)(fr_iut *iut, const char *case_dir, const char *out, fr_error *err);
} fr_iut_ops;

struct fr_iut {
    fr_iut_kind kind;
    const fr_iut_ops *ops;
    char name[256];
    void *impl; /* owned by the kind's file */
    int same_errs;                 /* identical consecutive failures so far */
    bool gave_up;                  /* FR_IUT_GIVE_UP_AFTER of them: the suite stops */
    bool own_failure;              /* the last run failed on our side (temporary area, writing the case) */
    char last_err[FR_MSG_LEN];
    /* What the implementation declared it supports (caps.h; fr_iut_caps): NONE until a declaration arrives. */
    fr_caps_state caps_state;
    fr_caps caps;
    char *caps_json;               /* the declaration's text as received (malloc'd) */
    char refused[FR_MSG_LEN];      /* non-empty: its declaration was refused (the run stops: fr_iut_refused) */
};

/* Takes a declaration (text of len bytes) into iut: DECLARED, or refused (the message in iut->refused and err). */
fr_status fr_iut_take_caps(fr_iut *iut, const char *json, size_t len, fr_error *err);

/* Openers of the other files: spec is what follows "plugin:" / "exec:" / "persistent:". */
fr_status fr_iut_plugin_open(const char *path, fr_iut *iut, fr_error *err);
fr_status fr_iut_exec_open(const char *cmd, bool persistent, fr_iut *iut, fr_error *err);
/* The --impl spec of the runner iut in another of its declared variants (iut_exec.c; fr_iut_open_variant). */
fr_status fr_iut_exec_variant_spec(const fr_iut *iut, const char *variant, char *spec, size_t n, fr_error *err);
/* A contained worker speaking the persistent protocol (iut_exec.c), running fn(ud) in a forked child instead of a
 * command: fn first writes a status line of its own ("0 NAME" or why it cannot run), then serves case directories
 * from stdin; a failure's message starts with its fr_status name ("FR_E_OUTPUT: ..."). ud is malloc'd and owned
 * by the IUT from here on (freed at close; by the caller when this fails). */
fr_status fr_iut_worker_open(int (*fn)(void *ud), void *ud, const char *label, fr_iut *iut, fr_error *err);

/* The persistent protocol's status line (iut_exec.c; docs/exec-protocol.md): whether line (n bytes, NUL-terminated
 * at n) is one ("flashref-status: CODE MESSAGE"); if so *code is CODE (-1 when it is not a number) and msg its
 * message (sanitized UTF-8, cut to cap bytes with the NUL; for a malformed line, the whole line). */
bool fr_exec_status_parse(const char *line, size_t n, long *code, char *msg, size_t cap);
/* A worker reports a failure as "flashref-status: 1 FR_E_NAME: message": the status it had in the worker (FR_E_INTERNAL
 * when msg names none, and for FR_E_UNSUPPORTED / FR_E_NOT_AVAILABLE, which only the verifier itself may give);
 * *rest points into msg past the name. */
fr_status fr_exec_worker_status(const char *msg, const char **rest);

#endif
