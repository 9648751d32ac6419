/* test_blob.c: the blob writer/reader, the verifier and the disassembler.
 * - round trip: write -> read gives the same program, and writing it again the same bytes;
 * - each class of malformation is rejected with a message naming it;
 * - corruption: hundreds of seeded flips, truncations and overwrites of valid blobs are
 *   rejected or, if accepted, verify and rewrite to the same bytes; a second pass
 *   recomputes the checksum after corrupting so that the verifier itself is exercised.
 *   Run under ASan+UBSan in CI: no corruption may crash.
 * - real kernels from dvm_compile_source when the compiler is in the build. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bytecode/bc.h"
#include "bytecode/blob.h"
#include "bytecode/hash.h"
#ifdef DVM_TEST_HAVE_COMPILER
#include "compiler/compile.h"
#endif

#ifdef DVM_TEST_DEFINE_OPS
/* Until bytecode/ops.c lands: the same table and hash, in this test only. */
const dvm_op_info dvm_op_table[256] = {
#define DVM_OP(name, num, fmt, flags, props, doc) [num] = {#name, fmt, flags, props, doc},
#define DVM_DOP(name, num, fmt, flags, props, doc) [num] = {#name, fmt, (flags) | DVM_F_DIFF, props, doc},
#include "bytecode/ops.def"
#undef DVM_OP
#undef DVM_DOP
};
uint64_t dvm_ops_hash(void) {
    uint64_t h = 14695981039346656037ull;
    for (int i = 0; i < 256; i++) {
        const dvm_op_info *o = &dvm_op_table[i];
        if (!o->name) continue;
        char row[128];
        int n = snprintf(row, sizeof row, "%d %s %s %u;", i, o->name, o->fmt, o->flags);
        for (int j = 0; j < n; j++) { h ^= (uint8_t)row[j]; h *= 1099511628211ull; }
    }
    return h;
}
#endif
#ifdef DVM_TEST_DEFINE_PROGRAM_FREE
void dvm_program_free(dvm_program *p) {
    if (!p) return;
    free(p->kernels); free(p->params); free(p->syms); free(p->slots); free(p->tasks); free(p->stacks);
    free(p->nodes); free(p->lines); free(p->cols); free(p->consts); free(p->strings);
    free(p);
}
#endif

#include "tests/check.h"

/* ---- hand-built programs ---- */
#define N(op_, x_, a_, b_, c_) {DVM_OP_##op_, x_, a_, b_, c_}
#define NS DVM_NO_SLOT /* no start on a dimension (start_u) */

static void *dup_mem(const void *src, size_t n) {
    if (!n) return NULL;
    void *d = malloc(n);
    if (!d) { fprintf(stderr, "out of memory\n"); exit(2); }
    memcpy(d, src, n);
    return d;
}

static dvm_program *clone_program(const dvm_program *t) {
    dvm_program *p = calloc(1, sizeof *p);
    *p = *t;
    p->kernels = dup_mem(t->kernels, t->nkernels * sizeof *t->kernels);
    p->params = dup_mem(t->params, t->nparams * sizeof *t->params);
    p->syms = dup_mem(t->syms, t->nsyms * sizeof *t->syms);
    p->slots = dup_mem(t->slots, t->nslots * sizeof *t->slots);
    p->tasks = dup_mem(t->tasks, t->ntasks * sizeof *t->tasks);
    p->stacks = dup_mem(t->stacks, t->nstacks * sizeof *t->stacks);
    p->nodes = dup_mem(t->nodes, t->nnodes * sizeof *t->nodes);
    p->lines = dup_mem(t->lines, t->nnodes * sizeof *t->lines);
    p->cols = dup_mem(t->cols, t->nnodes * sizeof *t->cols);
    p->consts = dup_mem(t->consts, t->nconsts * sizeof *t->consts);
    p->strings = dup_mem(t->strings, t->nstrings_bytes);
    return p;
}

/* String offsets in the sample's table. */
static const char sample_strings[] = "\0saxpy.dvk\0saxpy\0x\0y\0a\0n\0steps\0m\0v\0w\0index out\0k2";
enum { S_FILE = 1, S_SAXPY = 11, S_X = 17, S_Y = 19, S_A = 21, S_N = 23, S_STEPS = 25, S_M = 31, S_V = 33,
       S_W = 35, S_MSG = 37, S_K2 = 47 };

/* Node layout of the sample (absolute indices). */
enum { FWD_T0 = 0, FWD_T0_LEN = 6, ADJ_T0 = 6, ADJ_T0_LEN = 9, ADJ_T1 = 15, ADJ_T1_LEN = 8, SZ0 = 23,
       SZ0_LEN = 7, TAN_T0 = 30, TAN_T0_LEN = 5, K2_T0 = 35, K2_T0_LEN = 2, NNODES = 37 };

/* Kernel 'saxpy'(x: f32[n], y: f32[n], a: f32, steps: i32[n], m: f32[n, 4]) with all three
 * variants, a size program with a range, every operand letter; kernel 'k2' forward only. */
static dvm_program *sample_program(void) {
    static dvm_node nodes[NNODES] = {
        /* forward task 0: parallel over n */
        N(LDU, 0, 2, 0, 0), N(LD, 0, 1, 0, 0), N(LD, 1, 3, 0, 0), N(FMAF, 0, 3, 1, 2), N(ST, 1, 0, 3, 0),
        N(END, 0, 0, 0, 0),
        /* adjoint task 0: serial loop with push/pop, assert, uniform store */
        N(CONST, 0, 0, 0, 0), N(CONSTK, 0, 1, 0, 0), N(JGEI, 0, 0, 1, 6), N(PUSH, 0, 0, 1, 0),
        N(POP, 0, 2, 0, 0), N(INCLT, 0, 0, 1, 3), N(ASSERT, 0, 0, S_MSG, 0), N(STU, 0, 2, 1, 0),
        N(END, 0, 0, 0, 0),
        /* adjoint task 1: parallel over (n, n) on m */
        N(IDX, 3, 2, 0, 0), N(IDXM, 3, 2, 1, 1), N(LD, 3, 3, 2, 0), N(MULFK, 0, 3, 3, 1), N(ATOMADDF, 6, 2, 3, 0),
        N(SHAPE, 3, 4, 1, 0), N(ATOMADDU, 0, 0, 3, 0), N(END, 0, 0, 0, 0),
        /* size program of stack 0: 2 + max over i in [0, n) of steps[i] */
        N(SZ_PARAM, 0, 1, 0, 0), N(SZ_CONST, 0, 0, 0, 0), N(SZ_RANGE, 0, 1, 0, 5), N(SZ_VAR, 0, 0, 0, 0),
        N(SZ_LOAD, 2, 3, 0, 0), N(SZ_CONST, 0, 2, 0, 0), N(SZ_ADD, 0, 2, 5, 0),
        /* tangent task 0: 1-D with a start */
        N(LD, 0, 1, 0, 0), N(LD, 4, 2, 0, 0), N(ADDF, 0, 3, 1, 2), N(ST, 5, 0, 3, 0), N(END, 0, 0, 0, 0),
        /* k2 */
        N(NOP, 0, 0, 0, 0), N(END, 0, 0, 0, 0),
    };
    static uint32_t lines[NNODES];
    static uint16_t cols[NNODES];
    for (int i = 0; i < NNODES; i++) {
        lines[i] = 2 + (uint32_t)i / 3;
        cols[i] = (uint16_t)(5 + i % 7);
    }
    static dvm_param_desc params[] = {
        {S_X, 1, DVM_T_F32, 1, 0, 0, 0, {-1, 0, 0, 0}},
        {S_Y, 1, DVM_T_F32, 1, 0, 0, 0, {-1, 0, 0, 0}},
        {S_A, 0, DVM_T_F32, 0, 0, 0, 0, {0, 0, 0, 0}},
        {S_STEPS, 1, DVM_T_I32, 1, 0, 0, 0, {-1, 0, 0, 0}},
        {S_M, 1, DVM_T_F32, 2, 0, 0, 0, {-1, 4, 0, 0}},
    };
    static dvm_sym_desc syms[] = {{S_N, 1, 0}};
    static dvm_slot_desc slots[] = {
        /* forward 0..3 */ {0, 0, 0}, {1, 0, 1}, {3, 0, 0}, {4, 0, 0},
        /* adjoint 4..10 */ {0, 0, 0}, {1, 0, 0}, {3, 0, 0}, {4, 0, 0}, {0, 1, 1}, {1, 1, 1}, {4, 1, 1},
        /* tangent 11..17 */ {0, 0, 0}, {1, 0, 0}, {3, 0, 0}, {4, 0, 0}, {0, 2, 0}, {1, 2, 1}, {4, 2, 0},
    };
    static dvm_task_desc tasks[] = {
        /* the forward task has a prologue: node 0 (the LDU below) runs once per thread */
        {DVM_TASK_PARALLEL, 1, 4, FWD_T0, FWD_T0_LEN, {1, 0, 0}, {NS, NS, NS}, {0, 0, 0}, 1, 3, 0, 0},
        {DVM_TASK_SERIAL, 0, 3, ADJ_T0, ADJ_T0_LEN, {0, 0, 0}, {NS, NS, NS}, {0, 0, 0}, 0, 4, 0, 0},
        /* a start on dimension 1 only: [0, n) x [U2, n) */
        {DVM_TASK_PARALLEL, 2, 5, ADJ_T1, ADJ_T1_LEN, {1, 1, 0}, {NS, 2, NS}, {0, 1, 0}, 0, 5, 0, 1},
        {DVM_TASK_PARALLEL, 1, 4, TAN_T0, TAN_T0_LEN, {1, 0, 0}, {2, NS, NS}, {0, 0, 0}, 0, 6, 0, 0},
        {DVM_TASK_SERIAL, 0, 1, K2_T0, K2_T0_LEN, {0, 0, 0}, {NS, NS, NS}, {0, 0, 0}, 0, 9, 0, 0},
    };
    static dvm_stack_desc stacks[] = {
        {DVM_T_F32, DVM_SZ_PROGRAM, 1, 0, S_V, 4, SZ0, SZ0_LEN, 0},
        {DVM_T_I32, DVM_SZ_CONSTANT, 0, 0, S_W, 5, 0, 0, 4},
        {DVM_T_BOOL, DVM_SZ_DEFAULT, 0, 0, 0, 5, 0, 0, 0},
    };
    static dvm_kernel_desc kernels[2];
    memset(kernels, 0, sizeof kernels);
    kernels[0] = (dvm_kernel_desc){S_SAXPY, 1, 0, 5, 0, 1, 0,
                                   {{0, 1, 0, 0, 0, 4, 2, 1}, {1, 2, 0, 3, 4, 7, 3, 1}, {3, 1, 3, 0, 11, 7, 3, 1}}};
    kernels[1] = (dvm_kernel_desc){S_K2, 9, 5, 0, 1, 0, 0, {{4, 1, 3, 0, 18, 0, 0, 1}, {0}, {0}}};
    static uint32_t consts[2];
    float f = 1.5f;
    consts[0] = 3;
    memcpy(&consts[1], &f, 4);
    dvm_program t = {S_FILE, 2, 5, 1, 18, 5, 3, NNODES, 2, sizeof sample_strings,
                     kernels, params, syms, slots, tasks, stacks, nodes, lines, cols, consts, (char *)sample_strings, 0};
    return clone_program(&t);
}

/* The smallest valid program: one kernel, one serial task that ends. */
static dvm_program *tiny_program(void) {
    static dvm_node nodes[] = {N(END, 0, 0, 0, 0)};
    static uint32_t lines[1] = {1};
    static uint16_t cols[1] = {1};
    static const char strs[] = "\0t";
    static dvm_task_desc tasks[] = {{DVM_TASK_SERIAL, 0, 1, 0, 1, {0, 0, 0}, {NS, NS, NS}, {0, 0, 0}, 0, 1, 0, 0}};
    static dvm_kernel_desc kernels[1];
    kernels[0] = (dvm_kernel_desc){1, 1, 0, 0, 0, 0, 0, {{0, 1, 0, 0, 0, 0, 0, 1}, {0}, {0}}};
    dvm_program t = {0, 1, 0, 0, 0, 1, 0, 1, 0, sizeof strs, kernels, NULL, NULL, NULL, tasks, NULL, nodes,
                     lines, cols, NULL, (char *)strs, 0};
    return clone_program(&t);
}

/* ---- helpers ---- */
static int programs_equal(const dvm_program *a, const dvm_program *b, char *why, size_t n) {
#define SAME_COUNT(f) if (a->f != b->f) { snprintf(why, n, #f " %u != %u", a->f, b->f); return 0; }
    SAME_COUNT(source_name) SAME_COUNT(nkernels) SAME_COUNT(nparams) SAME_COUNT(nsyms) SAME_COUNT(nslots)
    SAME_COUNT(ntasks) SAME_COUNT(nstacks) SAME_COUNT(nnodes) SAME_COUNT(nconsts) SAME_COUNT(nstrings_bytes)
    SAME_COUNT(options)
#define SAME_ARR(f, cnt) if ((cnt) && memcmp(a->f, b->f, (cnt) * sizeof *a->f)) { snprintf(why, n, "array " #f " differs"); return 0; }
    SAME_ARR(kernels, a->nkernels) SAME_ARR(params, a->nparams) SAME_ARR(syms, a->nsyms)
    SAME_ARR(slots, a->nslots) SAME_ARR(tasks, a->ntasks) SAME_ARR(stacks, a->nstacks)
    SAME_ARR(nodes, a->nnodes) SAME_ARR(lines, a->nnodes) SAME_ARR(cols, a->nnodes)
    SAME_ARR(consts, a->nconsts) SAME_ARR(strings, a->nstrings_bytes)
    return 1;
}

typedef struct textbuf { char *s; size_t n, cap; } textbuf;
static void collect(void *ctx, const char *line) {
    textbuf *t = ctx;
    size_t l = strlen(line);
    if (t->n + l + 2 > t->cap) {
        t->cap = (t->n + l + 2) * 2;
        t->s = realloc(t->s, t->cap);
    }
    memcpy(t->s + t->n, line, l);
    t->n += l;
    t->s[t->n++] = '\n';
    t->s[t->n] = 0;
}

static void roundtrip(const char *what, dvm_program *p) {
    char err[512];
    void *blob = NULL, *blob2 = NULL;
    size_t len = 0, len2 = 0;
    dvm_program *q = NULL;
    int rc = dvm_verify(p, err, sizeof err);
    CHECK(rc == 0, "%s: verify failed: %s", what, err);
    rc = dvm_blob_write(p, &blob, &len, err, sizeof err);
    CHECK(rc == 0, "%s: write failed: %s", what, err);
    if (rc) return;
    CHECK(dvm_blob_is_blob(blob, len), "%s: written blob has no magic", what);
    rc = dvm_blob_read(blob, len, &q, err, sizeof err);
    CHECK(rc == 0 && q, "%s: read failed: %s", what, err);
    if (!rc) {
        char why[128] = "";
        CHECK(programs_equal(p, q, why, sizeof why), "%s: read-back program differs: %s", what, why);
        rc = dvm_blob_write(q, &blob2, &len2, err, sizeof err);
        CHECK(rc == 0 && len2 == len && !memcmp(blob, blob2, len), "%s: rewriting gave different bytes (%zu vs %zu)",
              what, len2, len);
    }
    free(blob);
    free(blob2);
    dvm_program_free(q);
}

/* ---- malformations: each must fail dvm_verify with the given substring ---- */
typedef struct malform { const char *name; void (*mutate)(dvm_program *); const char *expect; } malform;

#define M(fn, body) static void fn(dvm_program *p) { body; }
M(m_str_nonul, p->strings[p->nstrings_bytes - 1] = 'z')
M(m_str_start, p->strings[0] = 'z')
M(m_source, p->source_name = 9999)
M(m_kname, p->kernels[0].name = 0)
M(m_kparams, p->kernels[0].nparams = 6)
M(m_ksyms, p->kernels[0].sym_begin = 1)
M(m_nofwd, p->kernels[1].v[0].present = 0)
M(m_present2, p->kernels[0].v[1].present = 2)
M(m_ptype, p->params[0].type = DVM_T_BOOL)
M(m_prank, p->params[4].rank = 5)
M(m_prank0, p->params[0].rank = 0)
M(m_pdim, p->params[4].dim[0] = -2)
M(m_pname, p->params[1].name = 0)
M(m_pisarr, p->params[1].is_array = 7)
M(m_puslot, p->params[2].uslot = 2)
M(m_symuslot, p->syms[0].uslot = 5)
M(m_symname, p->syms[0].name = 0)
M(m_vtasks, p->kernels[0].v[0].ntasks = 99)
M(m_vstacks, p->kernels[0].v[1].stack_begin = 2)
M(m_vslots, p->kernels[0].v[2].slot_begin = 12)
M(m_vunis, p->kernels[0].v[0].nuniforms = 70000)
M(m_slot_param, p->slots[0].param = 5)
M(m_slot_scalar, p->slots[0].param = 2)
M(m_slot_gradfwd, p->slots[0].role = DVM_ROLE_GRAD)
M(m_slot_dualadj, p->slots[8].role = DVM_ROLE_DUAL)
M(m_slot_gradi32, p->slots[8].param = 3)
M(m_slot_role, p->slots[2].role = 3)
M(m_slot_write0, p->slots[1].writes = 0)
M(m_slot_write2, p->slots[1].writes = 2)
M(m_st2_rank1, p->nodes[4].op = DVM_OP_ST2; p->nodes[4].c = p->nodes[4].b)
M(m_at2_rank1, p->nodes[4].op = DVM_OP_ATOMADDF2; p->nodes[4].c = p->nodes[4].b)
M(m_ld2o_rank1, p->nodes[4].op = DVM_OP_ATOMADDF2O; p->nodes[4].c = p->nodes[4].b)
M(m_o_reg, p->nodes[4].op = DVM_OP_ATOMADDF2O; p->nodes[4].c = p->nodes[4].b; p->nodes[4].b = DVM_OFS_MAKE(900, -3))
M(m_task_kind, p->tasks[0].kind = 3)
M(m_repeat_code, p->tasks[1].kind = DVM_TASK_REPEAT)
M(m_repeat_body, p->tasks[4].kind = DVM_TASK_REPEAT; p->tasks[4].body = 1; p->tasks[4].code_len = 1; p->kernels[1].v[0].nuniforms = 1; p->nodes[K2_T0] = (dvm_node)N(END, 0, 0, 0, 0))
M(m_task_ndim, p->tasks[0].ndim = 4)
M(m_task_ndim0, p->tasks[0].ndim = 0)
M(m_task_nregs0, p->tasks[0].nregs = 0)
M(m_task_nregs, p->tasks[0].nregs = DVM_MAX_REGS + 1)
M(m_task_ext, p->tasks[0].ext_u[0] = 2)
M(m_task_start_dim, p->tasks[3].start_u[1] = 0)
M(m_task_start_serial, p->tasks[1].start_u[0] = 0)
M(m_task_start, p->tasks[3].start_u[0] = 3)
M(m_task_start1, p->tasks[2].start_u[1] = 3)
M(m_task_idx, p->tasks[2].idx_reg[1] = 5)
M(m_task_range, p->tasks[4].code_len = 3)
M(m_task_len0, p->tasks[4].code_len = 0)
M(m_task_end, p->tasks[4].code_len = 1)
M(m_body_serial, p->tasks[1].body = 1)
M(m_body_len, p->tasks[0].body = FWD_T0_LEN)
M(m_body_branch, p->tasks[0].body = 2; p->nodes[FWD_T0 + 1] = (dvm_node)N(JMP, 0, 2, 0, 0))
M(m_body_jump_in, p->nodes[FWD_T0 + 4] = (dvm_node)N(JMP, 0, 0, 0, 0))
M(m_op_unknown, p->nodes[FWD_T0 + 1].op = 7)
M(m_op_size, p->nodes[FWD_T0 + 1].op = DVM_OP_SZ_CONST)
M(m_op_reg_w, p->nodes[FWD_T0].a = 4)
M(m_op_reg_r, p->nodes[FWD_T0 + 3].c = 100)
M(m_op_const, p->nodes[ADJ_T0 + 1].b = 2)
M(m_op_slot, p->nodes[FWD_T0 + 1].x = 4)
M(m_op_axis, p->nodes[ADJ_T1 + 1].c = 2)
M(m_op_uni, p->nodes[FWD_T0].b = 2)
M(m_op_stu_par, p->nodes[FWD_T0 + 1] = (dvm_node)N(STU, 0, 0, 1, 0))
M(m_op_atomu, p->nodes[ADJ_T1 + 6].a = 3)
M(m_op_stack, p->nodes[ADJ_T0 + 3].a = 3)
M(m_op_jump, p->nodes[ADJ_T0 + 2].c = ADJ_T0_LEN)
M(m_op_str, p->nodes[ADJ_T0 + 6].b = sizeof sample_strings)
M(m_op_unused, p->nodes[FWD_T0 + 5].a = 1)
M(m_op_unused_x, p->nodes[FWD_T0].x = 1)
M(m_op_atom_type, p->nodes[ADJ_T1 + 4].op = DVM_OP_ATOMADDI)
M(m_last_node, p->nodes[K2_T0 + 1].op = DVM_OP_NOP)
M(m_stk_type, p->stacks[0].type = DVM_T_VOID)
M(m_stk_sizing, p->stacks[1].sizing = 3)
M(m_stk_serial, p->stacks[1].serial = 2)
M(m_stk_name, p->stacks[1].name = 1000)
M(m_sz_range, p->stacks[0].size_begin = NNODES - 3)
M(m_sz_len0, p->stacks[0].size_len = 0)
M(m_sz_notsize, p->stacks[0].size_begin = FWD_T0)
M(m_sz_fwdref, p->nodes[SZ0 + 6].b = 6)
M(m_sz_finished, p->nodes[SZ0 + 6].b = 4)
M(m_sz_outer, p->nodes[SZ0 + 4].a = 0)
M(m_sz_end_short, p->nodes[SZ0 + 2].c = 3)
M(m_sz_end_long, p->nodes[SZ0 + 2].c = 8)
M(m_sz_lastdepth, p->nodes[SZ0 + 2].c = 7; p->nodes[SZ0 + 6] = (dvm_node)N(SZ_CONST, 0, 0, 0, 0))
M(m_sz_var, p->nodes[SZ0 + 3].a = 1)
M(m_sz_var_top, p->nodes[SZ0 + 5] = (dvm_node)N(SZ_VAR, 0, 0, 0, 0))
M(m_sz_load_grad, p->nodes[SZ0 + 4].x = 4)
M(m_sz_load_slot, p->nodes[SZ0 + 4].x = 7)
M(m_sz_param, p->nodes[SZ0].a = 3)
M(m_sz_shape_axis, p->nodes[SZ0 + 5] = (dvm_node)N(SZ_SHAPE, 2, 2, 0, 0))
M(m_dup_kernel, p->kernels[1].name = S_SAXPY)
M(m_no_nodes, free(p->nodes); p->nodes = NULL)
M(m_phase_fwd, p->tasks[0].phase = 1)
M(m_share_code, p->tasks[3].code_begin = p->tasks[0].code_begin; p->tasks[3].code_len = p->tasks[0].code_len)
M(m_share_tasks, p->kernels[1].v[0].task_begin = 0)
M(m_share_params, p->kernels[1].param_begin = 0; p->kernels[1].nparams = 5)
M(m_phase_order, p->tasks[1].phase = 1; p->tasks[2].phase = 0)
M(m_stage_order, p->tasks[1].phase = 1; p->tasks[2].stage = 1)
M(m_noadj_both, p->kernels[0].no_adjoint = S_SAXPY)
M(m_noadj_off, p->kernels[0].no_adjoint = 9999)
M(m_unwritten_serial, p->nodes[ADJ_T0 + 7].b = 2)
M(m_unwritten_par, p->nodes[FWD_T0 + 2].a = 1)
M(m_pro_load, p->tasks[0].body = 2)
M(m_pro_idx_read, p->nodes[FWD_T0] = (dvm_node)N(ADDIK, 0, 2, 0, 1))
M(m_pro_idx_write, p->nodes[FWD_T0] = (dvm_node)N(CONST, 0, 0, 1, 0))
M(m_pro_rewritten, p->nodes[FWD_T0 + 4] = (dvm_node)N(ADDF, 0, 2, 2, 3))
M(m_u_ext, p->nodes[ADJ_T1 + 6].a = 1)
M(m_u_start, p->nodes[ADJ_T1 + 6].a = 2)
M(m_u_read_add, p->nodes[ADJ_T1 + 5] = (dvm_node)N(LDU, 0, 4, 0, 0))

/* Gives kernel 'k2' the task code[0..n) with nregs registers (appended nodes). */
static void k2_code(dvm_program *p, const dvm_node *code, uint32_t n, uint16_t nregs) {
    uint32_t base = p->nnodes;
    p->nodes = realloc(p->nodes, (base + n) * sizeof *p->nodes);
    p->lines = realloc(p->lines, (base + n) * sizeof *p->lines);
    p->cols = realloc(p->cols, (base + n) * sizeof *p->cols);
    memcpy(p->nodes + base, code, n * sizeof *code);
    memset(p->lines + base, 0, n * sizeof *p->lines);
    memset(p->cols + base, 0, n * sizeof *p->cols);
    p->nnodes = base + n;
    p->tasks[4].code_begin = base;
    p->tasks[4].code_len = n;
    p->tasks[4].nregs = nregs;
}
/* A loop entered at two places: node 3 after r1 is written, node 4 also without. */
static void m_two_entries(dvm_program *p) {
    static const dvm_node code[] = {N(CONST, 0, 0, 0, 0), N(JNZ, 0, 0, 4, 0), N(CONST, 0, 1, 1, 0), N(MOV, 0, 2, 0, 0),
                                    N(MOV, 0, 3, 0, 0),   N(JNZ, 0, 0, 3, 0), N(END, 0, 0, 0, 0)};
    k2_code(p, code, 7, 4);
}
/* A loop laid out test last (the compiler's while loops): entered by a jump to its test, its
 * body only by the back edge. Valid. */
static void rotated_loop(dvm_program *p) {
    static const dvm_node code[] = {N(CONST, 0, 0, 3, 0), N(JMP, 0, 4, 0, 0), N(ADDIK, 0, 0, 0, 0xFFFF),
                                    N(MOV, 0, 1, 0, 0),   N(JNZ, 0, 0, 2, 0), N(END, 0, 0, 0, 0)};
    k2_code(p, code, 6, 2);
}
/* The forward task's prologue register r2 reused by the body, written before it is read: valid. */
M(prologue_reg_reused, p->nodes[FWD_T0 + 1] = (dvm_node)N(LD, 0, 2, 0, 0); p->nodes[FWD_T0 + 3] = (dvm_node)N(FMAF, 0, 3, 2, 2))

/* Replaces stack 0's size program by `depth` nested SZ_RANGEs (appended nodes): each level
 * is lo, hi, RANGE, the child level, then a root node in the level's own scope. */
static void build_deep(dvm_program *p, uint32_t depth) {
    uint32_t len = 4 * depth + 1, base = p->nnodes;
    p->nodes = realloc(p->nodes, (base + len) * sizeof *p->nodes);
    p->lines = realloc(p->lines, (base + len) * sizeof *p->lines);
    p->cols = realloc(p->cols, (base + len) * sizeof *p->cols);
    memset(p->lines + base, 0, len * sizeof *p->lines);
    memset(p->cols + base, 0, len * sizeof *p->cols);
    dvm_node *n = p->nodes + base;
    uint32_t j = 0;
    for (uint32_t d = 0; d < depth; d++, j += 3) {
        n[j] = (dvm_node)N(SZ_CONST, 0, 0, 0, 0);
        n[j + 1] = (dvm_node)N(SZ_CONST, 0, 3, 0, 0);
        n[j + 2] = (dvm_node)N(SZ_RANGE, 0, (uint16_t)j, (uint16_t)(j + 1), (uint16_t)(len - 1 - d));
    }
    n[j++] = (dvm_node)N(SZ_VAR, 0, (uint16_t)(depth - 1), 0, 0);
    for (uint32_t d = 1; d < depth; d++) n[j++] = (dvm_node)N(SZ_VAR, 0, 0, 0, 0);
    n[j] = (dvm_node)N(SZ_CONST, 0, 1, 0, 0);
    p->nnodes = base + len;
    p->stacks[0].size_begin = base;
    p->stacks[0].size_len = len;
}
static void m_sz_deep(dvm_program *p) { build_deep(p, DVM_MAX_SIZE_DEPTH + 1); }
M(m_sz_root, p->nodes[SZ0 + 2].c = 6; p->nodes[SZ0 + 4] = (dvm_node)N(SZ_RANGE, 0, 3, 3, 6);
  p->nodes[SZ0 + 5] = (dvm_node)N(SZ_VAR, 0, 1, 0, 0); p->nodes[SZ0 + 6] = (dvm_node)N(SZ_CONST, 0, 0, 0, 0))

static const malform malforms[] = {
    {"string table without final NUL", m_str_nonul, "does not end with a NUL"},
    {"string table not starting with empty", m_str_start, "must start with the empty string"},
    {"source name", m_source, "source_name offset 9999"},
    {"empty kernel name", m_kname, "kernel 0: name offset 0 is not a non-empty string"},
    {"phase 1 in a forward", m_phase_fwd, "kernel 'saxpy' (forward) task 0: phase 1 is not 0"},
    {"phase 0 after phase 1", m_phase_order, "(adjoint) task 1: a phase-0 task after a phase-1 task"},
    {"reverse stages ascending", m_stage_order, "(adjoint) task 1: stage 1 after stage 0 in phase 1"},
    {"adjoint and a reason", m_noadj_both, "kernel 'saxpy': an adjoint variant and a reason why there is none"},
    {"no_adjoint offset", m_noadj_off, "kernel 'saxpy': no_adjoint offset 9999"},
    {"kernel params range", m_kparams, "kernel 'saxpy': parameters 0..+6 are outside the 5 parameters"},
    {"kernel syms range", m_ksyms, "shape symbols 1..+1 are outside the 1 symbols"},
    {"no forward variant", m_nofwd, "kernel 'k2': the forward variant is absent"},
    {"present flag", m_present2, "(adjoint): present flag 2"},
    {"param type", m_ptype, "parameter 0: type 3 is neither f32"},
    {"param rank", m_prank, "parameter 4: rank 5 is not in 1..4"},
    {"param rank 0", m_prank0, "parameter 0: rank 0 is not in 1..4"},
    {"param dim symbol", m_pdim, "dim[0] = -2 names shape symbol 1, not < the kernel's 1 symbols"},
    {"param name", m_pname, "parameter 1: name offset 0 is not a non-empty string"},
    {"param is_array", m_pisarr, "is_array 7"},
    {"param uslot", m_puslot, "(forward): scalar parameter 'a' has uniform slot 2, not < the variant's 2 uniforms"},
    {"sym uslot", m_symuslot, "shape symbol 'n' has uniform slot 5"},
    {"sym name", m_symname, "shape symbol 0: name offset 0"},
    {"variant tasks", m_vtasks, "(forward): tasks 0..+99 are outside the 5 tasks"},
    {"variant stacks", m_vstacks, "(adjoint): stacks 2..+3 are outside the 3 stacks"},
    {"variant slots", m_vslots, "(tangent): slots 12..+7 are outside the 18 slots"},
    {"variant uniforms", m_vunis, "nuniforms 70000 exceeds 65535"},
    {"slot param", m_slot_param, "(forward): slot 0: parameter 5 is not < the kernel's 5 parameters"},
    {"slot scalar", m_slot_scalar, "slot 0: parameter 'a' is not an array"},
    {"grad slot in forward", m_slot_gradfwd, "(forward): slot 0: a grad slot outside the adjoint variant"},
    {"dual slot in adjoint", m_slot_dualadj, "(adjoint): slot 4: a dual slot outside the tangent variant"},
    {"grad of i32", m_slot_gradi32, "slot 4: a grad slot of the non-f32 parameter 'steps'"},
    {"slot role", m_slot_role, "slot 2: role 3"},
    {"write to read-only slot", m_slot_write0, "(forward) task 0: node 4 (ST): writes array slot 1 ('y') whose writes flag is 0"},
    {"writes flag", m_slot_write2, "slot 1: writes flag 2"},
    {"ST2 on a rank-1 slot", m_st2_rank1, "node 4 (ST2): array slot 1 ('y') has rank 1, expected 2"},
    {"ATOMADDF2 on a rank-1 slot", m_at2_rank1, "node 4 (ATOMADDF2): array slot 1 ('y') has rank 1, expected 2"},
    {"ATOMADDF2O on a rank-1 slot", m_ld2o_rank1, "node 4 (ATOMADDF2O): array slot 1 ('y') has rank 1, expected 2"},
    {"o operand register", m_o_reg, "node 4 (ATOMADDF2O): operand b: register 900 (with offset -3) is not < nregs"},
    {"task kind", m_task_kind, "(forward) task 0: kind 3"},
    {"repeat code", m_repeat_code, "(adjoint) task 0: a repeat task's code is one END"},
    {"repeat body", m_repeat_body, "a repeat task's body of 1 tasks runs past the variant's 1 tasks"},
    {"task ndim", m_task_ndim, "task 0: ndim 4 is not in 1..3"},
    {"task ndim 0", m_task_ndim0, "task 0: ndim 0 is not in 1..3"},
    {"task nregs 0", m_task_nregs0, "nregs 0 is not in 1..1024"},
    {"task nregs", m_task_nregs, "nregs 1025 is not in 1..1024"},
    {"task extent uniform", m_task_ext, "ext_u[0] = 2 is not < the variant's 2 uniforms"},
    {"task start past ndim", m_task_start_dim, "(tangent) task 0: start_u[1] = 0 is set on a 1-D task (dimension 1 does not exist)"},
    {"task start on serial", m_task_start_serial, "(adjoint) task 0: start_u[0] = 0 is set on a serial task"},
    {"task start uniform", m_task_start, "(tangent) task 0: start_u[0] = 3 is not < the variant's 3 uniforms"},
    {"task start uniform dim 1", m_task_start1, "(adjoint) task 1: start_u[1] = 3 is not < the variant's 3 uniforms"},
    {"task idx reg", m_task_idx, "idx_reg[1] = 5 is not < nregs 5"},
    {"task code range", m_task_range, "kernel 'k2' (forward) task 0: code nodes 35..37 are outside the 37 nodes"},
    {"task code len 0", m_task_len0, "code_len 0 is not in 1..65535"},
    {"task runs off the end", m_task_end, "the last node 0 is NOP, expected END or JMP"},
    {"prologue on a serial task", m_body_serial, "body 1 on a serial task"},
    {"prologue past the code", m_body_len, "body 6 is not < code_len 6"},
    {"branch in the prologue", m_body_branch, "node 1 (JMP) is in the prologue (nodes before body 2)"},
    {"jump into the prologue", m_body_jump_in, "node 4 (JMP): operand a: jump target 0 is inside the prologue (nodes 0..0)"},
    {"unknown opcode", m_op_unknown, "task 0: node 1: unknown opcode 7"},
    {"size op in task", m_op_size, "node 1 (SZ_CONST): a size-program opcode inside a task"},
    {"written register", m_op_reg_w, "node 0 (LDU): operand a: register 4 is not < nregs 4"},
    {"read register", m_op_reg_r, "node 3 (FMAF): operand c: register 100 is not < nregs 4"},
    {"constant index", m_op_const, "node 1 (CONSTK): operand b: constant 2 is not < nconsts 2"},
    {"array slot", m_op_slot, "node 1 (LD): operand x: array slot 4 is not < the variant's 4 slots"},
    {"axis", m_op_axis, "node 1 (IDXM): operand c: axis 2 is not < rank 2 of 'm'"},
    {"uniform read", m_op_uni, "node 0 (LDU): operand b: uniform slot 2 is not < the variant's 2 uniforms"},
    {"uniform write in parallel task", m_op_stu_par, "node 1 (STU): writes uniform 0 outside a serial task"},
    {"uniform atomic", m_op_atomu, "node 6 (ATOMADDU): operand a: uniform slot 3 is not < the variant's 3 uniforms"},
    {"stack id", m_op_stack, "node 3 (PUSH): operand a: stack 3 is not < the variant's 3 stacks"},
    {"jump target", m_op_jump, "node 2 (JGEI): operand c: jump target 9 is not < the task's 9 nodes"},
    {"string operand", m_op_str, "node 6 (ASSERT): operand b: string offset 50 is not < 50"},
    {"unused operand", m_op_unused, "node 5 (END): unused operand a must be 0, got 1"},
    {"unused x", m_op_unused_x, "node 0 (LDU): unused operand x must be 0, got 1"},
    {"atomic type", m_op_atom_type, "node 4 (ATOMADDI): array slot 6 ('m') has element type f32, expected i32"},
    {"last node", m_last_node, "the last node 1 is NOP"},
    {"stack type", m_stk_type, "(adjoint) stack 0: type 0 is not f32, i32 or bool"},
    {"stack sizing", m_stk_sizing, "stack 1: sizing 3"},
    {"stack serial", m_stk_serial, "stack 1: serial flag 2"},
    {"stack name", m_stk_name, "stack 1: name offset 1000"},
    {"size program range", m_sz_range, "stack 0: size program nodes 34..40 are outside the 37 nodes"},
    {"size program empty", m_sz_len0, "size program length 0 is not in 1..65535"},
    {"size program of task nodes", m_sz_notsize, "stack 0: size program nodes 0..6 overlap(s) another owner's (record 0)"},
    {"shared code", m_share_code, "(tangent) task 0: code nodes"},
    {"shared tasks", m_share_tasks, "kernel 'k2' (forward): tasks 0..0 overlap(s) another owner's"},
    {"shared parameters", m_share_params, "kernel 'k2': parameters 0..4 overlap(s) another owner's"},
    {"size forward reference", m_sz_fwdref, "size node 6 (SZ_ADD): operand b: slot 6 is not < the node's own index"},
    {"size ref into finished body", m_sz_finished, "size node 6 (SZ_ADD): operand b: slot 4 lies outside the node's scope"},
    {"size ref out of body", m_sz_outer, "size node 4 (SZ_LOAD): operand a: slot 0 lies outside the node's scope"},
    {"size range end too short", m_sz_end_short, "size node 2 (SZ_RANGE): operand c: range end 3 must be in 4..7"},
    {"size range end too long", m_sz_end_long, "range end 8 must be in 4..7"},
    {"size last node in body", m_sz_lastdepth, "the last node 6 is inside a range body"},
    {"size var depth", m_sz_var, "size node 3 (SZ_VAR): operand a: bound-variable depth 1 is not < the nesting 1"},
    {"size var at top", m_sz_var_top, "size node 5 (SZ_VAR): operand a: bound-variable depth 0 is not < the nesting 0"},
    {"size load of a grad", m_sz_load_grad, "size node 4 (SZ_LOAD): array slot 4 is not a primal slot"},
    {"size load slot", m_sz_load_slot, "size node 4 (SZ_LOAD): operand x: array slot 7 is not < the variant's 7 slots"},
    {"size param", m_sz_param, "size node 0 (SZ_PARAM): operand a: uniform slot 3 is not < the variant's 3 uniforms"},
    {"size shape axis", m_sz_shape_axis, "size node 5 (SZ_SHAPE): operand a: axis 2 is not < rank 1 of 'steps'"},
    {"size nesting", m_sz_deep, "SZ_RANGE): nesting deeper than 8"},
    {"size body root in a nested body", m_sz_root, "size node 2 (SZ_RANGE): the body's last node 5 (its value) lies in a nested body"},
    {"duplicate kernel", m_dup_kernel, "two kernels are named 'saxpy'"},
    /* what a task computes: registers, prologues, uniforms */
    {"register read before written (serial)", m_unwritten_serial,
     "(adjoint) task 0: node 7 (STU): operand b reads register 2, which is not written on every path from the task's start"},
    {"register read before written (parallel)", m_unwritten_par,
     "(forward) task 0: node 3 (FMAF): operand a reads register 3, which is not written on every path from the task's "
     "start (an iteration starts with its index registers"},
    {"loop entered at two places", m_two_entries,
     "kernel 'k2' (forward) task 0: node 5 (JNZ): jumps back to node 3 without register 1, which every other way into node 3 writes"},
    {"load in the prologue", m_pro_load, "node 1 (LD) is in the prologue (nodes before body 2), which may only compute registers"},
    {"prologue reads an index", m_pro_idx_read, "node 0 (ADDIK): operand b reads index register 0 in the prologue"},
    {"prologue writes an index", m_pro_idx_write, "node 0 (CONST): operand a writes index register 0 in the prologue"},
    {"prologue register rewritten by the body", m_pro_rewritten,
     "(forward) task 0: node 3 (FMAF): operand c reads register 2, which is not written on every path from the task's start "
     "(an iteration starts with its index registers, and with what the prologue computed and no later node writes)"},
    {"task adds to its own stop", m_u_ext, "(adjoint) task 1: node 6 (ATOMADDU): adds to uniform 1, the task's own stop (ext_u[0])"},
    {"task adds to its own start", m_u_start, "(adjoint) task 1: node 6 (ATOMADDU): adds to uniform 2, the task's own start (start_u[1])"},
    {"task reads what it adds to", m_u_read_add, "(adjoint) task 1: node 6 (ATOMADDU): adds to uniform 0, which the task reads"},
    {"missing array", m_no_nodes, "nodes: 37 entries but no array"},
};

static void test_malformations(void) {
    char err[512];
    for (size_t i = 0; i < sizeof malforms / sizeof malforms[0]; i++) {
        dvm_program *p = sample_program();
        malforms[i].mutate(p);
        int rc = dvm_verify(p, err, sizeof err);
        CHECK(rc == -1, "%s: expected the verifier to reject it, it accepted", malforms[i].name);
        CHECK(rc == 0 || strstr(err, malforms[i].expect), "%s: expected a message containing \"%s\", got \"%s\"",
              malforms[i].name, malforms[i].expect, err);
        /* The writer refuses what the verifier rejects. */
        void *blob = (void *)1;
        size_t len = 1;
        rc = dvm_blob_write(p, &blob, &len, err, sizeof err);
        CHECK(rc == -1 && blob == NULL && strstr(err, "refusing to write an invalid program"),
              "%s: expected the writer to refuse, rc %d, \"%s\"", malforms[i].name, rc, err);
        dvm_program_free(p);
    }
    CHECK(dvm_verify(NULL, err, sizeof err) == -1 && strstr(err, "no program"), "NULL program: got \"%s\"", err);
}

/* ---- header and section malformations of a blob ---- */
static void put32(uint8_t *b, size_t off, uint32_t v) {
    for (int i = 0; i < 4; i++) b[off + (size_t)i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *b, size_t off, uint64_t v) {
    put32(b, off, (uint32_t)v);
    put32(b, off + 4, (uint32_t)(v >> 32));
}
static void reseal(uint8_t *b, size_t len) {
    if (len >= 8) put64(b, len - 8, dvm_blob_checksum(b, len - 8));
}

static void expect_read_fail(const char *what, const uint8_t *b, size_t len, const char *expect) {
    char err[512] = "";
    dvm_program *q = (dvm_program *)1;
    int rc = dvm_blob_read(b, len, &q, err, sizeof err);
    CHECK(rc == -1 && q == NULL, "%s: expected the reader to reject it, rc %d", what, rc);
    CHECK(strstr(err, expect) != NULL, "%s: expected a message containing \"%s\", got \"%s\"", what, expect, err);
    if (rc == 0) dvm_program_free(q);
}

/* bytecode/hash.h is FNV-1a 64 (published test values), and the blob checksum is that hash. */
static void test_hash(void) {
    static const struct { const char *s; uint64_t h; } v[] = {
        {"", 0xcbf29ce484222325ull}, {"a", 0xaf63dc4c8601ec8cull}, {"foobar", 0x85944171f73967e8ull}};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        uint64_t h = dvm_fnv1a(DVM_FNV_BASIS, v[i].s, strlen(v[i].s)), c = dvm_blob_checksum(v[i].s, strlen(v[i].s));
        CHECK(h == v[i].h && c == v[i].h, "FNV-1a 64 of \"%s\": expected %016llx, got %016llx (checksum %016llx)", v[i].s,
              (unsigned long long)v[i].h, (unsigned long long)h, (unsigned long long)c);
    }
}

static void test_header(void) {
    dvm_program *p = sample_program();
    char err[512];
    void *blob;
    size_t len;
    if (dvm_blob_write(p, &blob, &len, err, sizeof err)) {
        CHECK(0, "write failed: %s", err);
        dvm_program_free(p);
        return;
    }
    uint8_t *b = malloc(len + 16);
    const uint8_t *orig = blob;
#define FRESH() memcpy(b, orig, len)
    FRESH(); b[0] = 'X';
    expect_read_fail("magic", b, len, "not a dvm blob");
    expect_read_fail("empty", b, 0, "not a dvm blob");
    FRESH();
    expect_read_fail("short", b, 100, "truncated: 100 bytes, a blob has at least 136");
    FRESH(); put32(b, 4, 3); /* version 3: the word at offset 36 was reserved */
    expect_read_fail("version", b, len, "format version 3, this build reads version 4");
    FRESH(); put32(b, 8, 16);
    expect_read_fail("node size", b, len, "node size 16, this build uses 8");
    FRESH(); b[16] ^= 1;
    expect_read_fail("ops hash", b, len, "blob built for a different opcode table");
    FRESH();
    expect_read_fail("truncated", b, len - 1, "length mismatch: the header says");
    FRESH(); memset(b + len, 0, 16);
    expect_read_fail("extended", b, len + 16, "length mismatch");
    FRESH(); b[DVM_BLOB_HEADER_SIZE + 3] ^= 0x40;
    expect_read_fail("checksum", b, len, "checksum mismatch");
    FRESH(); b[len - 1] ^= 0x40;
    expect_read_fail("checksum itself", b, len, "checksum mismatch");
    FRESH(); put32(b, 12, 12); reseal(b, len);
    expect_read_fail("section count", b, len, "header: 12 sections");
    /* the compiler options word at offset 36 (bc.h, DVM_OPTS_*) */
    FRESH(); put32(b, 36, 0x80000000u); reseal(b, len);
    expect_read_fail("options: an unknown bit", b, len, "compiler options 0x80000000: unknown bits 0x80000000");
    FRESH(); put32(b, 36, 4u << DVM_OPTS_UNROLL_SHIFT); reseal(b, len);
    expect_read_fail("options: the default unroll", b, len, "unroll 4 is not 1 to 256");
    FRESH(); put32(b, 36, 300u << DVM_OPTS_UNROLL_SHIFT); reseal(b, len);
    expect_read_fail("options: unroll 300", b, len, "unroll 300 is not 1 to 256");
    FRESH(); put32(b, 36, DVM_OPTS_NO_OPT | DVM_OPTS_NO_PARTITION); reseal(b, len);
    expect_read_fail("options: no-opt and more", b, len, "no-opt with other options");
    {
        FRESH(); put32(b, 36, DVM_OPTS_NO_PARTITION | 256u << DVM_OPTS_UNROLL_SHIFT); reseal(b, len);
        dvm_program *q = NULL;
        int rc = dvm_blob_read(b, len, &q, err, sizeof err);
        CHECK(rc == 0 && q->options == (DVM_OPTS_NO_PARTITION | 256u << DVM_OPTS_UNROLL_SHIFT),
              "options: no-partition, unroll 256: %s (read 0x%x)", rc ? err : "read", q ? q->options : 0u);
        dvm_program_free(q);
    }
    FRESH(); put32(b, 40 + 8 * 4 + 4, 33); reseal(b, len);
    expect_read_fail("record size", b, len, "section 'tasks': record size 33, expected 40");
    FRESH(); put32(b, 40 + 8 * 0, 0xFFFFFFFFu); reseal(b, len);
    expect_read_fail("huge count", b, len, "the sections hold");
    FRESH(); put32(b, 40 + 8 * 7, 5); reseal(b, len);
    expect_read_fail("lines count", b, len, "must have one entry per node");
    FRESH(); put32(b, 40 + 8 * 10, 0); reseal(b, len);
    expect_read_fail("no strings", b, len, "section 'strings' is empty");
    /* A count moved from one section to another keeps the total: the layout shifts and
     * the verifier (or the reserved fields) must catch it. */
    FRESH(); put32(b, 40 + 8 * 2, 2); put32(b, 40 + 8 * 3, p->nslots - 2); reseal(b, len);
    expect_read_fail("shifted sections", b, len, "blob: ");
    /* The reserved byte of param 0 (kernels are 2 x 124 bytes, then params). */
    FRESH(); b[DVM_BLOB_HEADER_SIZE + 2 * 124 + 7] = 1; reseal(b, len);
    expect_read_fail("reserved param byte", b, len, "section 'params' record 0: a reserved field is not 0");
    /* A verifier failure through the reader: the first node's opcode. */
    size_t nodes_off = DVM_BLOB_HEADER_SIZE + 2 * 124 + 5 * 28 + 1 * 8 + 18 * 4 + 5 * 40 + 3 * 24;
    FRESH(); b[nodes_off] = 7; reseal(b, len);
    expect_read_fail("bad opcode", b, len, "blob: invalid program: kernel 'saxpy' (forward) task 0: node 0: unknown opcode 7");
    FRESH();
    dvm_program *q = NULL;
    CHECK(dvm_blob_read(b, len, &q, err, sizeof err) == 0, "pristine copy rejected: %s", err);
    dvm_program_free(q);
    free(b);
    free(blob);
    dvm_program_free(p);
}

/* ---- corruption: nothing may crash; what is accepted must be valid ---- */
static uint64_t rng_state;
static uint32_t rnd(void) { /* xorshift64*: deterministic across platforms */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 2685821657736338717ull) >> 32);
}
static uint32_t rndn(uint32_t n) { return n ? rnd() % n : 0; }

static void discard(void *ctx, const char *line) {
    (void)ctx;
    (void)line;
}

/* Corrupts b (length *len, capacity cap) in one of several ways; `inplace` keeps the
 * length and the section table (those corruptions always fail the length checks). */
static void corrupt(uint8_t *b, size_t *len, size_t cap, int inplace) {
    static const uint32_t interesting[] = {0, 1, 2, 7, 8, 0x7F, 0x80, 0xFF, 0xFFFF, 0x7FFF, 0x8000, 0xFFFFFFFFu,
                                           0x80000000u, 0x10000, 36, 37, 255, 256, 1024, 1025, 65535};
    static const uint32_t inplace_kinds[] = {0, 1, 3, 4, 4};
    uint32_t kind = inplace ? inplace_kinds[rndn(5)] : rndn(7), n = (uint32_t)*len;
    switch (kind) {
    case 0: /* one bit */
        b[rndn(n)] ^= (uint8_t)(1u << rndn(8));
        break;
    case 1: /* several bytes */
        for (uint32_t i = 0, k = 1 + rndn(8); i < k; i++) b[rndn(n)] = (uint8_t)rnd();
        break;
    case 2: /* truncation */
        *len = rndn(n);
        break;
    case 3: /* overwrite a range with random bytes */
    {
        uint32_t at = rndn(n), l = 1 + rndn(32);
        for (uint32_t i = 0; i < l && at + i < n; i++) b[at + i] = (uint8_t)rnd();
        break;
    }
    case 4: /* an interesting 16- or 32-bit value at a random place, past the header */
    {
        uint32_t v = interesting[rndn(sizeof interesting / sizeof interesting[0])];
        uint32_t at = DVM_BLOB_HEADER_SIZE + rndn(n - DVM_BLOB_HEADER_SIZE), w = rndn(2) ? 2 : 4;
        for (uint32_t i = 0; i < w && at + i < n; i++) b[at + i] = (uint8_t)(v >> (8 * i));
        break;
    }
    case 5: /* a count in the section table */
    {
        uint32_t s = rndn(DVM_BLOB_NSECTIONS);
        put32(b, 40 + 8 * s, interesting[rndn(sizeof interesting / sizeof interesting[0])]);
        break;
    }
    default: /* extend with garbage */
    {
        uint32_t extra = 1 + rndn(16);
        if (*len + extra <= cap) {
            for (uint32_t i = 0; i < extra; i++) b[*len + i] = (uint8_t)rnd();
            *len += extra;
        }
        break;
    }
    }
}

static void test_corruption(const char *what, dvm_program *p, uint64_t seed, int iters, int min_verifier_rejects) {
    char err[512];
    void *blob;
    size_t len;
    if (dvm_blob_write(p, &blob, &len, err, sizeof err)) {
        CHECK(0, "%s: write failed: %s", what, err);
        return;
    }
    size_t cap = len + 64;
    uint8_t *b = malloc(cap);
    int accepted[2] = {0, 0}, verifier_rejects = 0;
    rng_state = seed;
    for (int pass = 0; pass < 2; pass++) {
        for (int it = 0; it < iters; it++) {
            size_t l = len;
            memcpy(b, blob, len);
            int rounds = 1 + (int)rndn(3);
            for (int r = 0; r < rounds; r++) corrupt(b, &l, cap, pass == 1);
            if (pass == 1) { /* make the header and checksum agree, so the checks behind them run */
                if (l >= 32) put64(b, 24, l);
                reseal(b, l);
            }
            /* Exactly l bytes on the heap, so ASan sees any read past the end. */
            uint8_t *exact = malloc(l ? l : 1);
            memcpy(exact, b, l);
            dvm_program *q = NULL;
            int rc = dvm_blob_read(exact, l, &q, err, sizeof err);
            if (rc == 0) {
                accepted[pass]++;
                char verr[512];
                CHECK(dvm_verify(q, verr, sizeof verr) == 0, "%s pass %d iteration %d: accepted a program that "
                      "does not verify: %s", what, pass, it, verr);
                void *again;
                size_t alen;
                CHECK(dvm_blob_write(q, &again, &alen, verr, sizeof verr) == 0 && alen == l && !memcmp(again, exact, l),
                      "%s pass %d iteration %d: an accepted blob does not rewrite to the same bytes", what, pass, it);
                free(again);
                dvm_disasm(q, discard, NULL);
                dvm_program_free(q);
            } else {
                CHECK(q == NULL && strncmp(err, "blob: ", 6) == 0, "%s pass %d iteration %d: bad failure: \"%s\"",
                      what, pass, it, err);
                if (strstr(err, "invalid program")) verifier_rejects++;
                if (getenv("DVM_TEST_SHOW_REJECTS")) printf("pass %d: %s\n", pass, err);
            }
            free(exact);
        }
    }
    /* Without resealing, only a corruption that leaves the bytes unchanged gets through. */
    printf("corruption %s: %d iterations x 2 passes; accepted %d unsealed, %d resealed; verifier rejected %d\n", what,
           iters, accepted[0], accepted[1], verifier_rejects);
    CHECK(verifier_rejects >= min_verifier_rejects, "%s: expected the verifier to reject at least %d resealed "
          "corruptions, got %d of %d", what, min_verifier_rejects, verifier_rejects, iters);
    free(b);
    free(blob);
}

/* ---- verification cost ----
 * A blob built to make the verifier work hardest per byte: tasks of 65535 nodes with 1024
 * registers, every node a conditional jump (two edges, a loop back edge each), each register
 * set the largest there is. Verification must stay linear: well under a second per megabyte. */
static void test_verify_cost(void) {
    enum { NTASKS = 6, LEN = DVM_MAX_TASK_NODES };
    dvm_program *p = tiny_program();
    uint32_t total = NTASKS * LEN;
    free(p->nodes);
    free(p->lines);
    free(p->cols);
    free(p->tasks);
    p->nodes = calloc(total, sizeof *p->nodes);
    p->lines = calloc(total, sizeof *p->lines);
    p->cols = calloc(total, sizeof *p->cols);
    p->tasks = calloc(NTASKS, sizeof *p->tasks);
    p->nnodes = total;
    p->ntasks = NTASKS;
    for (uint32_t t = 0; t < NTASKS; t++) {
        dvm_task_desc *td = &p->tasks[t];
        td->kind = DVM_TASK_SERIAL;
        td->nregs = DVM_MAX_REGS;
        td->code_begin = t * LEN;
        td->code_len = LEN;
        for (int d = 0; d < DVM_MAX_PAR_DIMS; d++) td->start_u[d] = NS;
        dvm_node *c = p->nodes + td->code_begin;
        c[0] = (dvm_node)N(CONST, 0, DVM_MAX_REGS - 1, 1, 0);
        for (uint32_t j = 1; j + 1 < LEN; j++) /* back to an earlier node, or on to a later one */
            c[j] = (dvm_node)N(JNZ, 0, DVM_MAX_REGS - 1, (uint16_t)(j % 2 ? j / 2 + 1 : (j + LEN) / 2), 0);
        c[LEN - 1] = (dvm_node)N(END, 0, 0, 0, 0);
    }
    p->kernels[0].v[0].ntasks = NTASKS;
    char err[512];
    void *blob = NULL;
    size_t len = 0;
    CHECK(dvm_blob_write(p, &blob, &len, err, sizeof err) == 0, "verify cost: write failed: %s", err);
    dvm_program_free(p);
    if (!blob) return;
    dvm_program *q = NULL;
    clock_t t0 = clock();
    int rc = dvm_blob_read(blob, len, &q, err, sizeof err);
    double s = (double)(clock() - t0) / CLOCKS_PER_SEC, mb = (double)len / (1 << 20);
    CHECK(rc == 0, "verify cost: read failed: %s", err);
    CHECK(s / mb < 1.0, "verify cost: %.3f s for %.2f MB (%.3f s per MB), expected well under a second per MB", s, mb, s / mb);
    printf("verify cost: %.2f MB read and verified in %.3f s CPU (%.3f s per MB)\n", mb, s, s / mb);
    dvm_program_free(q);
    free(blob);
}

/* ---- disassembly ---- */
static void test_disasm(void) {
    dvm_program *p = sample_program();
    textbuf t = {NULL, 0, 0};
    CHECK(dvm_disasm(p, collect, &t) == 0, "disasm failed");
    static const char *const expect[] = {
        "program 'saxpy.dvk': 2 kernels, 37 nodes",
        "kernel 'saxpy' (line 1): 5 parameters, 1 shape symbols",
        "param 4 'm': f32[n, 4]",
        "param 2 'a': f32 scalar in U0",
        "shape symbol 0 'n' in U1",
        "variant forward: 1 tasks, 0 stacks, 4 array slots, 2 uniforms",
        "slot A1: A1 'y' primal (written)",
        "slot A4: A4 'x'.grad grad (written)",
        "task 0: parallel over ([0, U1 'n') -> r0), 4 regs, nodes 0..5 (line 3)",
        "0: LD        A0 'x', r1, r0",
        "3: FMAF      r3, r1, r2",
        "4: ST        A1 'y', r0, r3",
        "; line 2:5",
        "1: CONSTK    r1, K0=i3",
        "2: JGEI      r0, r1, ->6",
        "3: PUSH      stack 0 'v', r1",
        "6: ASSERT    r0, \"index out\"",
        "7: STU       U2, r1",
        "0: CONST     r0, #0, #0  ; 0",
        "task 1: parallel over ([0, U1 'n') -> r0, [U2, U1 'n') -> r1), stage 0 reverse, 5 regs",
        "1: IDXM      A3 'm', r2, r1, axis 1",
        "3: MULFK     r3, r3, K1=1.5",
        "4: ATOMADDF  A6 'm'.grad, r2, r3",
        "6: ATOMADDU  U0 'a', r3",
        "stack 0 'v' f32 serial (line 4): size program, nodes 23..29",
        "2: SZ_RANGE  s1, s0, end 5",
        "3: SZ_VAR    depth 0",
        "4: SZ_LOAD   A2 'steps', s3",
        "5: SZ_CONST  #2, #0  ; 2",
        "stack 1 'w' i32 (line 5): capacity 4",
        "stack 2 '' bool (line 5): default capacity",
        "task 0: parallel over ([U2, U1 'n') -> r0)",
        "1: LD        A4 'x'.dual, r2, r0",
        "kernel 'k2' (line 9): 0 parameters",
    };
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++)
        CHECK(t.s && strstr(t.s, expect[i]), "disasm: expected a line containing \"%s\"; the listing:\n%s", expect[i],
              t.s ? t.s : "(none)");
    if (getenv("DVM_TEST_SHOW_DISASM")) fputs(t.s, stdout);
    free(t.s);
    dvm_program_free(p);
}

#ifdef DVM_TEST_HAVE_COMPILER
/* ---- real kernels: compile, verify, round trip, corrupt ---- */
static const char *const kernel_sources[] = {
    "kernel saxpy(x: f32[n], y: f32[n], a: f32):\n"
    "    for i in range(n):\n"
    "        y[i] = a * x[i] + y[i]\n",
    "kernel loss(x: f32[n], out: f32[1], steps: i32[n]):\n"
    "    for i in range(n):\n"
    "        v = x[i]\n"
    "        for j in range(steps[i]):\n"
    "            v = sin(v) * 0.5 + v\n"
    "        out[0] += v * v\n",
};

static void test_compiled(void) {
    for (size_t i = 0; i < sizeof kernel_sources / sizeof kernel_sources[0]; i++) {
        dvm_program *p = NULL;
        char *msg = NULL;
        char name[32];
        snprintf(name, sizeof name, "compiled %zu", i);
        int rc = dvm_compile_source(kernel_sources[i], strlen(kernel_sources[i]), "test.dvk", &p, &msg);
        CHECK(rc == 0 && p, "%s: compile failed:\n%s", name, msg ? msg : "(no message)");
        free(msg);
        if (rc) continue;
        roundtrip(name, p);
        test_corruption(name, p, 1000 + i, 200, 20);
        dvm_disasm(p, discard, NULL);
        dvm_program_free(p);
    }
}
#endif

/* Writes the hand-built programs as blobs: the fuzz corpus (tests/fuzz/corpus_blob). */
static int write_corpus(const char *dir) {
    dvm_program *progs[3] = {sample_program(), tiny_program(), sample_program()};
    static const char *const names[3] = {"sample.dvb", "tiny.dvb", "deep.dvb"};
    build_deep(progs[2], DVM_MAX_SIZE_DEPTH);
    int rc = 0;
    for (int i = 0; i < 3; i++) {
        char path[4096], err[512];
        void *blob;
        size_t len;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (dvm_blob_write(progs[i], &blob, &len, err, sizeof err)) {
            fprintf(stderr, "%s: %s\n", names[i], err);
            rc = 1;
        } else {
            FILE *fp = fopen(path, "wb");
            if (!fp || fwrite(blob, 1, len, fp) != len) {
                fprintf(stderr, "cannot write %s\n", path);
                rc = 1;
            }
            if (fp) fclose(fp);
            free(blob);
        }
        dvm_program_free(progs[i]);
    }
    return rc;
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "--write-corpus")) return write_corpus(argv[2]);
    if (argc == 2 && !strcmp(argv[1], "--compiled")) { /* ctest blob_compiled: the compiler's output */
#ifdef DVM_TEST_HAVE_COMPILER
        test_compiled();
        if (fails) {
            fprintf(stderr, "test_blob --compiled: %d failure(s)\n", fails);
            return 1;
        }
        printf("test_blob --compiled: all passed\n");
        return 0;
#else
        printf("test_blob --compiled: the compiler is not in this tree\n");
        return 0;
#endif
    }
    dvm_program *p = sample_program();
    roundtrip("sample", p);
    test_corruption("sample", p, 12345, 400, 100);
    dvm_program_free(p);
    p = tiny_program();
    roundtrip("tiny", p);
    test_corruption("tiny", p, 777, 200, 5);
    dvm_program_free(p);
    test_malformations();
    p = sample_program();
    build_deep(p, DVM_MAX_SIZE_DEPTH);
    roundtrip("size program nested to the limit", p);
    dvm_program_free(p);
    p = sample_program();
    rotated_loop(p);
    roundtrip("a loop entered at its test", p);
    dvm_program_free(p);
    p = sample_program();
    prologue_reg_reused(p);
    roundtrip("a prologue's register written again before the body reads it", p);
    dvm_program_free(p);
    test_hash();
    test_header();
    test_disasm();
    test_verify_cost();
    if (fails) {
        fprintf(stderr, "test_blob: %d failure(s)\n", fails);
        return 1;
    }
    printf("test_blob: all passed\n");
    return 0;
}
