/* flashref case check DIR: load a case directory, validate it, print what it describes. */
#include "cli.h"
#include "core/problem.h"
#include "core/validate.h"
#include "io/casedir.h"

#include <stdio.h>
#include <string.h>

static void case_usage(FILE *f) {
    fprintf(f,
            "usage: flashref case check DIR\n"
            "  Loads DIR/case.json and its input tensors (docs/case-format.md), validates the problem as fr_fwd /\n"
            "  fr_bwd would, and prints what it describes: op, dtype, layout, B N1 N2 S1 S2 Dk Dv, sparse mode,\n"
            "  pse, and which optional inputs are present.\n"
            "exit status: 0 valid, 2 invalid or unreadable (the message names the file and field).\n");
}

static void describe(const char *dir, const fr_case *c, const fr_problem *pb) {
    const fr_params *p = &c->params;
    printf("%s: valid %s case\n", dir, fr_case_op_name(c->op));
    printf("  op        %s\n", fr_case_op_name(c->op));
    printf("  dtype     %s (out %s)\n", fr_dtype_name(c->dtype), fr_dtype_name(pb->out_dtype));
    printf("  layout    %s", fr_layout_name(p->input_layout));
    if (p->input_layout == FR_TND)
        printf(" (softmax %s)", p->softmax_layout == FR_SOFTMAX_SAME_AS_INPUT ? "same_as_input [T,N1,8]"
                                                                             : "default [N1,T,8]");
    printf("\n");
    printf("  dims      B %lld N1 %lld N2 %lld S1 %lld S2 %lld Dk %lld Dv %lld", (long long)pb->B, (long long)pb->N1,
           (long long)pb->N2, (long long)pb->S1, (long long)pb->S2, (long long)pb->Dk, (long long)pb->Dv);
    if (pb->has_rope) printf(" Drope %lld", (long long)pb->Drope);
    if (p->input_layout == FR_TND) printf(" T1 %lld T2 %lld", (long long)pb->T1, (long long)pb->T2);
    if (pb->has_topk) printf(" W %lld", (long long)pb->W);
    printf("\n");
    printf("  scale     %.17g  keep_prob %.17g  inner_precise %d\n", p->scale_value, p->keep_prob, p->inner_precise);
    printf("  sparse    mode %d  pre_tokens %lld  next_tokens %lld", p->sparse_mode, (long long)p->pre_tokens,
           (long long)p->next_tokens);
    if (p->prefix) {
        printf("  prefix [");
        for (int64_t i = 0; i < p->prefix_len && i < 8; i++) printf("%s%lld", i ? ", " : "", (long long)p->prefix[i]);
        printf("%s]", p->prefix_len > 8 ? ", ..." : "");
    }
    printf("\n");
    if (pb->has_pse)
        printf("  pse       type %d (%s)  q_start_idx %lld  kv_start_idx %lld\n", p->pse_type,
               fr_pse_type_is_slopes(p->pse_type) ? "ALiBi slopes" : "external real_shift", (long long)p->q_start_idx,
               (long long)p->kv_start_idx);
    else
        printf("  pse       none\n");
    printf("  inputs   ");
    for (int k = 0; k < FR_CASE_NUM_INPUTS; k++) {
        const fr_tensor *t = fr_case_input_cslot(&c->in, (fr_case_input)k);
        if (!fr_tensor_present(t)) continue;
        printf(" %s[", fr_case_input_name((fr_case_input)k));
        for (int d = 0; d < t->ndim; d++) printf("%s%lld", d ? "," : "", (long long)t->shape[d]);
        printf("]:%s", fr_dtype_name(t->dtype));
    }
    printf("\n");
}

int cmd_case(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        case_usage(stdout);
        return 0;
    }
    if (argc != 3 || strcmp(argv[1], "check") != 0) {
        case_usage(stderr);
        return 2;
    }
    const char *dir = argv[2];
    fr_case c;
    fr_error err;
    memset(&err, 0, sizeof err);
    fr_status st = fr_case_load(dir, &c, &err);
    if (st != FR_OK) {
        fprintf(stderr, "flashref case check: %s: invalid: %s: %s\n", dir, fr_status_name(st), err.msg);
        return 2;
    }
    fr_problem pb;
    st = c.op == FR_CASE_FWD ? fr_validate_fwd(&c.params, &c.in.fwd, NULL, &err)
                             : fr_validate_bwd(&c.params, &c.in, NULL, &err);
    if (st == FR_OK)
        st = c.op == FR_CASE_FWD ? fr_problem_from_fwd(&c.params, &c.in.fwd, &pb, &err)
                                 : fr_problem_from_bwd(&c.params, &c.in, &pb, &err);
    if (st != FR_OK) {
        fprintf(stderr, "flashref case check: %s: invalid: %s: %s\n", dir, fr_status_name(st), err.msg);
        fr_case_free(&c);
        return 2;
    }
    describe(dir, &c, &pb);
    fr_case_free(&c);
    return 0;
}
