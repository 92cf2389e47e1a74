/* One case across the ranks through its files (src/dist/dist_io.c fr_dist_run_to_dir, dist_digest.c
 * fr_dist_same_case, with dist_read.c's fr_dist_case_load), called directly as a plain process and under mpirun -n 1,
 * 2, 3 (tests/dist/mpi_ranks.sh): the files are byte-identical to one process's and each rank reports the bytes it
 * wrote; and every refusal the CLI test (dist_bit_identical.sh) cannot reach gives the same status on every rank, the
 * failing rank's message on it and "dist: rank K of R failed" elsewhere, with no output file left behind: NULL
 * arguments, outputs of the other operation, invalid params or outputs on one rank, a negative thread count, outputs
 * that are not contiguous, an output folder that cannot be made, a rank whose output folder holds no file, a FIFO, a
 * file of another size or header than rank 0 laid out (the folder not shared), a rank with no case or another
 * case.json, an input that cannot be read whole; with the allocation hook, every allocation and write of one rank
 * failing in turn. Every rank runs the same collectives whatever its checks find. */
#define _XOPEN_SOURCE 700
#include "dist/dist.h"

#include "common/check.h"
#include "common/kit.h"
#include "core/core.h"
#include "io/casedir.h"
#include "verify/cases/casegen.h"
#ifdef FR_TEST_ALLOC_HOOK
#include "core/alloc_hook.h"
#endif

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static fr_dist g_d;
static char g_root[512];
enum { SEED = 20261203 };

static const char *other_msg(int first) {
    static char m[96];
    snprintf(m, sizeof m, "dist: rank %d of %d failed", first, g_d.size);
    return m;
}

static void path_of(char *buf, size_t n, const char *a, const char *b) {
    snprintf(buf, n, "%s/%s%s%s", g_root, a, b ? "/" : "", b ? b : "");
}

static bool exists(const char *dir, const char *name) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    struct stat sb;
    return lstat(p, &sb) == 0;
}

static long file_size(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 ? (long)sb.st_size : -1;
}

/* Whether files dir_a/name and dir_b/name hold the same bytes. */
static bool same_file(const char *dir_a, const char *dir_b, const char *name) {
    char pa[1024], pb[1024];
    snprintf(pa, sizeof pa, "%s/%s", dir_a, name);
    snprintf(pb, sizeof pb, "%s/%s", dir_b, name);
    FILE *fa = fopen(pa, "rb"), *fb = fopen(pb, "rb");
    bool same = fa && fb;
    while (same) {
        int a = fgetc(fa), b = fgetc(fb);
        if (a != b) same = false;
        if (a == EOF || b == EOF) break;
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return same;
}

static void copy_file(const char *from, const char *to, long keep, long flip) {
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    long n = 0;
    int ch;
    while (a && b && (ch = fgetc(a)) != EOF && (keep < 0 || n < keep)) {
        fputc(n == flip ? ch ^ 1 : ch, b);
        n++;
    }
    if (a) fclose(a);
    if (b) fclose(b);
}

/* A loaded case and its NaN-filled outputs, on every rank. */
typedef struct loaded {
    fr_case c;
    fr_case_outputs o;
    bool ok;
} loaded;

static void load(const char *dir, bool fp64, loaded *l) {
    memset(l, 0, sizeof *l);
    fr_error err = {0};
    fr_engine e = fr_engine_default(FR_ENGINE_GOLDEN);
    fr_status st = fr_dist_case_load(&g_d, dir, &e, &l->c, NULL, NULL, &err);
    if (st == FR_OK) st = fr_case_alloc_outputs(&l->c, fp64, &l->o, &err);
    l->ok = CHECKED(st == FR_OK, "load %s: %s", dir, err.msg);
}

static void unload(loaded *l) {
    fr_case_outputs_free(&l->o);
    fr_case_free(&l->c);
}

/* Every rank got want; the first failing rank (first) its own message msg (a prefix when prefix), the others
 * "dist: rank first of R failed". */
static void expect(const char *what, fr_status st, const fr_error *err, fr_status want, int first, const char *msg,
                   bool prefix) {
    CHECK(st == want && err->status == want, "%s: rank %d of %d: %s, want %s (%s)", what, g_d.rank, g_d.size,
          fr_status_name(st), fr_status_name(want), err->msg);
    if (g_d.rank == first)
        CHECK(prefix ? !strncmp(err->msg, msg, strlen(msg)) : !strcmp(err->msg, msg),
              "%s: rank %d: \"%s\", want \"%s\"", what, g_d.rank, err->msg, msg);
    else
        CHECK(!strcmp(err->msg, other_msg(first)), "%s: rank %d: \"%s\"", what, g_d.rank, err->msg);
}

/* The happy path: the files of one process (fr_fwd / fr_bwd then fr_case_write_outputs, made on rank 0) and of the
 * ranks are byte-identical, and the ranks' written bytes add up to the files' sizes. */
static void test_identical(const char *cdir, const char *name, const char *const *outs) {
    loaded l;
    load(cdir, false, &l);
    if (!l.ok) return;
    char ref[600], got[600];
    path_of(ref, sizeof ref, name, "ref");
    path_of(got, sizeof got, name, "got");
    fr_error err = {0};
    fr_engine e = fr_engine_default(FR_ENGINE_GOLDEN);
    e.num_threads = 1;
    if (g_d.rank == 0) { /* the whole case (fr_dist_case_load read only this rank's query rows) */
        fr_case c;
        fr_case_outputs o;
        fr_status st = fr_case_load(cdir, &c, &err);
        if (st == FR_OK) st = fr_case_alloc_outputs(&c, false, &o, &err);
        if (st == FR_OK)
            st = c.op == FR_CASE_FWD ? fr_fwd(&c.params, &c.in.fwd, &o.fwd, &e, &err)
                                     : fr_bwd(&c.params, &c.in, &o.bwd, &e, &err);
        if (st == FR_OK) st = fr_case_write_outputs(ref, &o, &err);
        CHECK(st == FR_OK, "%s: one process: %s", name, err.msg);
        fr_case_outputs_free(&o);
        fr_case_free(&c);
    }
    int64_t written = -1;
    fr_status st = fr_dist_run_to_dir(&g_d, &l.c, &l.o, &e, got, &written, &err);
    CHECK(st == FR_OK, "%s: rank %d of %d: %s", name, g_d.rank, g_d.size, err.msg);
    int64_t all = fr_dist_sum(&g_d, written);
    if (g_d.rank == 0) {
        long want = 0;
        for (int k = 0; outs[k]; k++) {
            char p[1024];
            snprintf(p, sizeof p, "%s/%s", ref, outs[k]);
            want += file_size(p);
            CHECK(same_file(ref, got, outs[k]), "%s: %d ranks: %s differs from one process's", name, g_d.size,
                  outs[k]);
        }
        CHECK(all == want && written > 0, "%s: the ranks wrote %lld bytes, the files hold %ld", name, (long long)all,
              want);
    }
    /* again without asking for the bytes, over the same files (rank 0 lays them out anew) */
    st = fr_dist_run_to_dir(&g_d, &l.c, &l.o, &e, got, NULL, &err);
    CHECK(st == FR_OK, "%s: written NULL: %s", name, err.msg);
    if (g_d.rank == 0)
        for (int k = 0; outs[k]; k++) CHECK(same_file(ref, got, outs[k]), "%s: second run: %s differs", name, outs[k]);
    fr_dist_barrier(&g_d);
    unload(&l);
    printf("rank %d of %d: %s: files identical to one process's\n", g_d.rank, g_d.size, name);
}

/* Arguments and problems refused before anything is written. */
static void test_refusals(const char *fwd_dir, const char *bwd_dir) {
    loaded f, b;
    load(fwd_dir, false, &f);
    load(bwd_dir, false, &b);
    if (!f.ok || !b.ok) {
        /* a load that failed fails its check on every rank alike (the cases are one folder) */
        unload(&f);
        unload(&b);
        return;
    }
    fr_error err = {0};
    fr_engine e = fr_engine_default(FR_ENGINE_GOLDEN);
    e.num_threads = 1;
    const int last = g_d.size - 1;
    char out[600];
    path_of(out, sizeof out, "refused", NULL);
    int64_t written = 7;
    /* no fr_dist: no collective (nothing to agree with) */
    fr_status st = fr_dist_run_to_dir(NULL, &f.c, &f.o, &e, out, &written, &err);
    CHECK(st == FR_E_NULL && !strcmp(err.msg, "dist: NULL argument") && written == 0, "NULL dist: %s", err.msg);
    /* the last rank has no case / no outputs / no engine / no folder: every rank stops */
    for (int k = 0; k < 4; k++) {
        bool me = g_d.rank == last;
        st = fr_dist_run_to_dir(&g_d, me && k == 0 ? NULL : &f.c, me && k == 1 ? NULL : &f.o,
                                me && k == 2 ? NULL : &e, me && k == 3 ? NULL : out, &written, &err);
        char what[64];
        snprintf(what, sizeof what, "NULL argument %d on the last rank", k);
        expect(what, st, &err, FR_E_NULL, last, "dist: NULL argument", false);
    }
    /* a backward's outputs for a forward case, on every rank */
    st = fr_dist_run_to_dir(&g_d, &f.c, &b.o, &e, out, NULL, &err);
    expect("outputs of the other operation", st, &err, FR_E_INVALID_ARG, 0,
           "dist: the outputs are not the case's operation", false);
    /* a negative thread count: refused as one process refuses it */
    fr_engine neg = e;
    neg.num_threads = -2;
    st = fr_dist_run_to_dir(&g_d, &f.c, &f.o, &neg, out, NULL, &err);
    expect("num_threads -2", st, &err, FR_E_INVALID_ARG, 0, "engine.num_threads: -2 < 0", false);
    /* invalid params on the last rank (fwd, bwd), a wrong output shape there: the status and message of one
     * process */
    for (int op = 0; op < 2; op++) {
        loaded *l = op ? &b : &f;
        fr_error want = {0};
        fr_params keep = l->c.params;
        fr_params bad = keep;
        bad.head_num = keep.head_num - 1; /* not a divisor of the heads */
        l->c.params = bad;
        fr_status wst = op ? fr_validate_bwd(&bad, &l->c.in, NULL, &want)
                           : fr_validate_fwd(&bad, &l->c.in.fwd, NULL, &want);
        if (g_d.rank != last) l->c.params = keep;
        st = fr_dist_run_to_dir(&g_d, &l->c, &l->o, &e, out, NULL, &err);
        l->c.params = keep;
        CHECK(wst == FR_E_HEADS, "head_num %lld: %s", (long long)bad.head_num, want.msg);
        expect(op ? "bwd: invalid params on the last rank" : "fwd: invalid params on the last rank", st, &err,
               FR_E_HEADS, last, want.msg, false);
        fr_tensor *t = fr_case_output_slot(&l->o, op ? FR_CO_DQ : FR_CO_ATTENTION_OUT);
        if (g_d.rank == last) t->shape[t->ndim - 1]++;
        st = fr_dist_run_to_dir(&g_d, &l->c, &l->o, &e, out, NULL, &err);
        if (g_d.rank == last) t->shape[t->ndim - 1]--;
        expect(op ? "bwd: a wrong dq shape on the last rank" : "fwd: a wrong attention_out shape on the last rank",
               st, &err, FR_E_OUTPUT, last, op ? "dq: " : "attention_out: ", true);
    }
    CHECK(!exists(g_root, "refused"), "a refused run made its output folder");
    /* outputs that are not contiguous: one process writes them (strides are gathered), the split refuses them
     * (a rank writes its elements at their place in the file) */
    for (int who = 0; who < 2; who++) { /* every rank; the last rank only (its failure after the first agreement
                                            once reached the others as rank 0's, and itself as well) */
        fr_tensor *t = &f.o.fwd.attention_out;
        fr_tensor keep = *t;
        size_t es = fr_dtype_size(t->dtype);
        void *wide = NULL;
        if (who == 0 || g_d.rank == last) {
            wide = calloc((size_t)fr_tensor_numel(t) * 2, es);
            if (CHECKED(wide != NULL)) {
                t->data = wide;
                for (int k = 0; k < t->ndim - 1; k++) t->strides[k] *= 2; /* every row padded to twice its width */
            }
        }
        char sout[600];
        path_of(sout, sizeof sout, "strided", NULL);
        st = fr_dist_run_to_dir(&g_d, &f.c, &f.o, &e, sout, NULL, &err);
        *t = keep;
        free(wide);
        if (g_d.size == 1) {
            CHECK(st == FR_OK, "strided outputs, one process: %s", err.msg);
        } else {
            char msg[700];
            snprintf(msg, sizeof msg, "dist: %s/attention_out.npy: the output tensor is not contiguous", sout);
            expect(who ? "strided outputs on the last rank" : "strided outputs", st, &err, FR_E_INVALID_ARG,
                   who ? last : 0, msg, false);
            if (g_d.rank == 0) /* rank 0 removes what it laid out before it returns */
                CHECK(!exists(sout, "attention_out.npy"), "strided outputs: a file was left");
        }
    }
    /* the output folder cannot be made (a regular file stands there): rank 0's message */
    char afile[600];
    path_of(afile, sizeof afile, "afile", NULL);
    if (g_d.rank == 0) fclose(fopen(afile, "w"));
    fr_dist_barrier(&g_d);
    st = fr_dist_run_to_dir(&g_d, &f.c, &f.o, &e, afile, NULL, &err);
    char msg[700];
    snprintf(msg, sizeof msg, "%s: exists and is not a directory", afile);
    expect("output folder is a file", st, &err, FR_E_IO, 0, msg, false);
    /* the fast engine runs on rank 0, which writes every file; its refusal of a negative thread count stops all */
    fr_engine fast = fr_engine_default(FR_ENGINE_FAST);
    fast.num_threads = -1;
    st = fr_dist_run_to_dir(&g_d, &b.c, &b.o, &fast, out, NULL, &err);
    expect("fast, num_threads -1", st, &err, FR_E_INVALID_ARG, 0, "engine.num_threads: -1 < 0", false);
    fast.num_threads = 1;
    char fout[600];
    path_of(fout, sizeof fout, "fast_bwd", NULL);
    int64_t fw = -1;
    st = fr_dist_run_to_dir(&g_d, &b.c, &b.o, &fast, fout, &fw, &err);
    CHECK(st == FR_OK, "fast bwd: %s", err.msg);
    fr_dist_barrier(&g_d);
    if (g_d.rank == 0) {
        long want = 0;
        const char *names[] = {"dq.npy", "dk.npy", "dv.npy", "dq_rope.npy", "dk_rope.npy", "dsink.npy"};
        for (int k = 0; k < 6; k++) {
            char p[1024];
            snprintf(p, sizeof p, "%s/%s", fout, names[k]);
            want += file_size(p);
        }
        CHECK(fw == want, "fast bwd on rank 0: %lld bytes written, the files hold %ld", (long long)fw, want);
    } else {
        CHECK(fw == 0, "fast bwd: rank %d wrote %lld bytes", g_d.rank, (long long)fw);
    }
    unload(&f);
    unload(&b);
    printf("rank %d of %d: refusals\n", g_d.rank, g_d.size);
}

/* A rank whose output folder is not the one rank 0 laid out (not shared): no file there, a FIFO, a file of
 * another size, a file of the right size with another header. Every rank stops, rank 0 removes the files it made. */
static void test_not_shared(const char *fwd_dir) {
    if (g_d.size == 1) return; /* one process lays out and writes alone */
    loaded f;
    load(fwd_dir, false, &f);
    if (!f.ok) return;
    fr_error err = {0};
    fr_engine e = fr_engine_default(FR_ENGINE_GOLDEN);
    e.num_threads = 1;
    const int last = g_d.size - 1;
    char shared[600], ref[600];
    path_of(shared, sizeof shared, "shared", NULL);
    path_of(ref, sizeof ref, "fwd", "ref"); /* test_identical's one-process files */
    char refq[700];
    snprintf(refq, sizeof refq, "%s/attention_out.npy", ref);
    const long size = file_size(refq);
    static const char *what[] = {"no file", "a FIFO", "another size", "another header"};
    for (int k = 0; k < 4; k++) {
        char own[600], p[700], msg[900];
        snprintf(own, sizeof own, "%s/own%d", g_root, k);
        snprintf(p, sizeof p, "%s/attention_out.npy", own);
        if (g_d.rank == last) {
            mkdir(own, 0777);
            if (k == 1) mkfifo(p, 0666);
            if (k == 2) copy_file(refq, p, 10, -1);
            if (k == 3) copy_file(refq, p, -1, 20); /* a byte of the header's dict changed */
        }
        fr_dist_barrier(&g_d);
        fr_status st = fr_dist_run_to_dir(&g_d, &f.c, &f.o, &e, g_d.rank == last ? own : shared, NULL, &err);
        if (k == 0)
            snprintf(msg, sizeof msg, "%s: cannot open: No such file or directory (the output directory must be "
                                      "shared by the ranks)", p);
        else if (k == 1)
            snprintf(msg, sizeof msg, "%s: not a regular file", p);
        else if (k == 2)
            snprintf(msg, sizeof msg, "%s: 10 bytes, expected %ld (not the file rank 0 laid out)", p, size);
        else
            snprintf(msg, sizeof msg, "%s: header is not the one expected (not the file rank 0 laid out)", p);
        char w[96];
        snprintf(w, sizeof w, "the last rank's folder holds %s", what[k]);
        expect(w, st, &err, FR_E_IO, last, msg, false);
        if (g_d.rank == 0)
            CHECK(!exists(shared, "attention_out.npy") && !exists(shared, "softmax_max.npy"),
                  "%s: rank 0 left its files", w);
    }
    unload(&f);
    printf("rank %d of %d: a folder not shared refused\n", g_d.rank, g_d.size);
}

/* fr_dist_same_case: its refusals. */
static void test_same_case(const char *fwd_dir) {
    loaded f;
    load(fwd_dir, false, &f);
    if (!f.ok) return;
    fr_error err = {0};
    const int last = g_d.size - 1;
    CHECK(fr_dist_same_case(NULL, fwd_dir, &f.c, &err) == FR_E_NULL && !strcmp(err.msg, "dist: NULL argument"));
    CHECK(fr_dist_same_case(&g_d, NULL, &f.c, &err) == FR_E_NULL && !strcmp(err.msg, "dist: NULL argument"));
    fr_status st = fr_dist_same_case(&g_d, fwd_dir, &f.c, &err);
    CHECK(st == FR_OK, "the same case: %s", err.msg);
    /* the last rank has no case */
    st = fr_dist_same_case(&g_d, fwd_dir, g_d.rank == last ? NULL : &f.c, &err);
    expect("no case on the last rank", st, &err, FR_E_NULL, last,
           g_d.size == 1 ? "dist: no case" : "dist: this rank has no case", false);
    if (g_d.size > 1) {
        /* the last rank's folder: case.json differs (a space more), then its query cannot be opened, then its
         * query cannot be read whole (a file whose size says 0 and that holds more) */
        char dir[600], src[700], dst[700];
        for (int k = 0; k < 3; k++) {
            snprintf(dir, sizeof dir, "%s/other%d", g_root, k);
            if (g_d.rank == last) {
                mkdir(dir, 0777);
                snprintf(src, sizeof src, "%s/case.json", fwd_dir);
                snprintf(dst, sizeof dst, "%s/case.json", dir);
                copy_file(src, dst, -1, -1);
                if (k == 0) {
                    FILE *a = fopen(dst, "a");
                    if (a) fputc(' ', a), fclose(a);
                }
                for (int i = 0; i < FR_CASE_NUM_INPUTS; i++) {
                    if (!f.c.files[i] || (k > 0 && i == FR_CI_QUERY)) continue;
                    snprintf(src, sizeof src, "%s/%s", fwd_dir, f.c.files[i]);
                    snprintf(dst, sizeof dst, "%s/%s", dir, f.c.files[i]);
                    copy_file(src, dst, -1, -1);
                }
                snprintf(dst, sizeof dst, "%s/%s", dir, f.c.files[FR_CI_QUERY]);
                if (k == 2 && symlink("/proc/self/status", dst) != 0) perror("symlink");
            }
            fr_dist_barrier(&g_d);
            st = fr_dist_same_case(&g_d, g_d.rank == last ? dir : fwd_dir, &f.c, &err);
            char msg[900];
            if (k == 0) {
                snprintf(msg, sizeof msg, "dist: rank %d read a different case.json than rank 0 under %s (digests ",
                         last, g_d.rank == last ? dir : fwd_dir);
                CHECK(st == FR_E_FORMAT && !strncmp(err.msg, msg, strlen(msg)), "another case.json: %s: \"%s\"",
                      fr_status_name(st), err.msg);
            } else {
                snprintf(dst, sizeof dst, "%s/%s", dir, f.c.files[FR_CI_QUERY]);
                if (k == 1)
                    snprintf(msg, sizeof msg, "%s: cannot open: No such file or directory", dst);
                else
                    snprintf(msg, sizeof msg, "%s: read error while comparing the ranks' inputs", dst);
                expect(k == 1 ? "no query on the last rank" : "a query that is not read whole", st, &err, FR_E_IO,
                       last, msg, false);
            }
        }
    }
    unload(&f);
    printf("rank %d of %d: same case\n", g_d.rank, g_d.size);
}

#ifdef FR_TEST_ALLOC_HOOK
/* The last rank's (then rank 0's) k-th allocation (then its k-th write to a file: k = 1 .. 4 and every doubling)
 * fails, for every k of one fr_dist_same_case and fr_dist_run_to_dir: every rank stops with the same status, the
 * failing rank with its own message, and no output file is left; the ranks go on together while the injected
 * failure was hit. */
static void test_faults(const char *fwd_dir, const char *bwd_dir) {
    for (int op = 0; op < 2; op++) {
        loaded l;
        load(op ? bwd_dir : fwd_dir, false, &l);
        if (!l.ok) return;
        fr_engine e = fr_engine_default(FR_ENGINE_GOLDEN);
        e.num_threads = 1;
        char out[600];
        snprintf(out, sizeof out, "%s/faults%d", g_root, op);
        /* the last rank, then (several ranks) rank 0, which lays the files out */
        for (int wi = 0; wi < (g_d.size > 1 ? 2 : 1); wi++) {
            const int who = wi ? 0 : g_d.size - 1;
            for (int kind = 0; kind < 3; kind++) { /* allocations in same_case, allocations in the run, writes */
                int hit = 1, runs = 0;
                /* writes: the first few, then every doubling (a layout whose rows are apart writes each row alone:
                 * thousands of writes, each k a whole run) */
                for (long k = 1; hit && k < 100000; k = kind == 2 && k >= 4 ? 2 * k : k + 1) {
                    fr_error err = {0};
                    if (kind > 0 && g_d.rank == 0) fr_test_rm_rf(out); /* the last good run's files are not ours */
                    long at = g_d.rank == who ? k : 0;
                    if (kind < 2) fr_alloc_hook_set(at);
                    else fr_fault_write_set(at);
                    fr_status st = kind == 0 ? fr_dist_same_case(&g_d, op ? bwd_dir : fwd_dir, &l.c, &err)
                                             : fr_dist_run_to_dir(&g_d, &l.c, &l.o, &e, out, NULL, &err);
                    int mine = kind < 2 ? fr_alloc_hook_failed() != FR_ALLOC_NONE : fr_fault_write_hit();
                    int stream = kind < 2 && fr_alloc_hook_failed() == FR_ALLOC_STREAM;
                    fr_alloc_hook_set(0);
                    fr_fault_write_set(0);
                    hit = fr_dist_any(&g_d, mine);
                    runs++;
                    if (!hit) {
                        CHECK(st == FR_OK, "fault kind %d: no failure: %s", kind, err.msg);
                        continue;
                    }
                    fr_status want = kind == 2 || stream ? FR_E_IO : FR_E_NOMEM;
                    CHECK(st == want || (stream && st == FR_E_NOMEM),
                          "fault kind %d at %ld on rank %d: rank %d: %s (%s)", kind, k, who, g_d.rank,
                          fr_status_name(st), err.msg);
                    if (g_d.rank == who) /* its own reason, never another rank's */
                        CHECK(strncmp(err.msg, "dist: rank ", 11) != 0,
                              "fault kind %d at %ld: the failing rank says \"%s\"", kind, k, err.msg);
                    else
                        CHECK(!strcmp(err.msg, other_msg(who)) ||
                                  !strcmp(err.msg, "dist: cannot gather the ranks' input digests"),
                              "fault kind %d at %ld: \"%s\"", kind, k, err.msg);
                    /* one process writes each file whole and renamed into place: those before the failure stay */
                    if (kind > 0 && g_d.rank == 0 && g_d.size > 1)
                        CHECK(!exists(out, "attention_out.npy") && !exists(out, "dq.npy"),
                              "fault kind %d at %ld: an output file was left", kind, k);
                }
                /* one process compares no digests: nothing to fail there */
                CHECK((runs > 1 || (kind == 0 && g_d.size == 1)) && !hit, "fault kind %d: %d runs", kind, runs);
                printf("rank %d of %d: %s: %d runs with rank %d's %s failing\n", g_d.rank, g_d.size,
                       op ? "bwd" : "fwd", runs - 1, who,
                       kind == 0 ? "digest allocations" : kind == 1 ? "allocations" : "writes");
            }
        }
        unload(&l);
    }
}
#endif

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    fr_dist_init(&argc, &argv, &g_d);
    /* rank 0 makes the scratch folder and the cases; the others learn its name */
    int ok = 1;
    if (g_d.rank == 0) {
        snprintf(g_root, sizeof g_root, "%s/flashref-dist-io-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        ok = mkdtemp(g_root) != NULL;
    }
    if (g_d.size > 1) MPI_Bcast(g_root, sizeof g_root, MPI_CHAR, 0, MPI_COMM_WORLD);
    static const fr_gen_spec fwd = {.name = "fwd", .layout = FR_BNSD, .B = 2, .N1 = 4, .N2 = 2, .S1 = 200, .S2 = 150,
                                    .D = 16, .Drope = 8, .sparse_mode = 2, .mask = FR_GEN_MASK_CANONICAL};
    static const fr_gen_spec bwd = {.name = "bwd", .bwd = true, .layout = FR_BSND, .B = 2, .N1 = 4, .N2 = 2,
                                    .S1 = 260, .S2 = 150, .D = 16, .Drope = 8, .sink = true, .sparse_mode = 3,
                                    .mask = FR_GEN_MASK_CANONICAL};
    char fwd_dir[600], bwd_dir[600];
    path_of(fwd_dir, sizeof fwd_dir, "fwd", "case");
    path_of(bwd_dir, sizeof bwd_dir, "bwd", "case");
    if (g_d.rank == 0 && ok) {
        const fr_gen_spec *specs[2] = {&fwd, &bwd};
        const char *dirs[2] = {fwd_dir, bwd_dir};
        for (int k = 0; k < 2 && ok; k++) {
            fr_gen_case g;
            fr_error err = {0};
            fr_status st = fr_gen_build(specs[k], SEED, &g, &err);
            if (st == FR_OK) st = fr_gen_case_write(&g, dirs[k], true, &err);
            ok = CHECKED(st == FR_OK, "case %s: %s", specs[k]->name, err.msg);
            fr_gen_case_free(&g);
        }
    }
    if (fr_dist_any(&g_d, !ok)) { /* every rank stops alike */
        fr_dist_finalize(&g_d);
        return fr_test_exit("test_dist_io");
    }
    printf("rank %d of %d: cases under %s\n", g_d.rank, g_d.size, g_root);
    static const char *fwd_outs[] = {"attention_out.npy", "softmax_max.npy", "softmax_sum.npy", NULL};
    static const char *bwd_outs[] = {"dq.npy",      "dk.npy",      "dv.npy",    "dq_rope.npy",
                                     "dk_rope.npy", "dsink.npy",   NULL};
    test_identical(fwd_dir, "fwd", fwd_outs);
    test_identical(bwd_dir, "bwd", bwd_outs);
    test_refusals(fwd_dir, bwd_dir);
    test_not_shared(fwd_dir);
    test_same_case(fwd_dir);
#ifdef FR_TEST_ALLOC_HOOK
    test_faults(fwd_dir, bwd_dir);
#endif
    fr_dist_barrier(&g_d);
    if (g_d.rank == 0) fr_test_rm_rf(g_root);
    char name[64];
    snprintf(name, sizeof name, "test_dist_io (rank %d of %d)", g_d.rank, g_d.size);
    int rc = fr_test_exit(name);
    fr_dist_finalize(&g_d);
    return rc;
}
