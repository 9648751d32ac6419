/* test_emit.c: dvm_emit on small hand-built IR modules. Checks node sequences of the key
 * constructs, uniform/slot/task numbering, size programs, writes flags, the choice of
 * superinstructions, limits, and the structure of every program it emits (operand kinds,
 * jump targets, END at the end of each task). The IR is built with this file's own tiny
 * constructors so that it does not depend on the front end. */
#include "bytecode/bc.h"
#include "bytecode/blob.h"
#include "compiler/compile.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/check.h"

/* ---- IR constructors ---- */
static dvm_arena *A;
static int LINE = 1;

static void *zalloc(size_t n) {
    void *p = dvm_arena_alloc(A, n);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

static ir_expr *ex(int kind, int type) {
    ir_expr *e = zalloc(sizeof *e);
    e->kind = (uint8_t)kind;
    e->type = (uint8_t)type;
    e->line = LINE;
    e->col = 5;
    e->var = e->slot = -1;
    return e;
}
static ir_expr *kf(float f) {
    ir_expr *e = ex(IR_CONST, DVM_T_F32);
    e->k.f = f;
    return e;
}
static ir_expr *ki(int32_t i) {
    ir_expr *e = ex(IR_CONST, DVM_T_I32);
    e->k.i = i;
    return e;
}
static ir_kernel *K; /* the kernel being built */
static ir_expr *V(int var) {
    ir_expr *e = ex(IR_VAR, K->vars[var].type);
    e->var = var;
    return e;
}
static ir_expr *bin(int op, int type, ir_expr *a, ir_expr *b) {
    ir_expr *e = ex(IR_BIN, type);
    e->op = (uint16_t)op;
    e->a = a;
    e->b = b;
    return e;
}
static ir_expr *un(int op, int type, ir_expr *a) {
    ir_expr *e = ex(IR_UN, type);
    e->op = (uint16_t)op;
    e->a = a;
    return e;
}
static ir_expr *tern(int kind, int type, ir_expr *a, ir_expr *b, ir_expr *c) {
    ir_expr *e = ex(kind, type);
    e->a = a;
    e->b = b;
    e->c = c;
    return e;
}
static ir_expr *load(int slot, int type, ir_expr *i0, ir_expr *i1) {
    ir_expr *e = ex(IR_LOAD, type);
    e->slot = slot;
    e->idx[0] = i0;
    e->idx[1] = i1;
    e->nidx = i1 ? 2 : 1;
    return e;
}

static ir_stmt *st(int kind) {
    ir_stmt *s = zalloc(sizeof *s);
    s->kind = (uint8_t)kind;
    s->line = LINE;
    s->col = 1;
    s->var = s->slot = s->stack = -1;
    return s;
}
static void push(ir_block *b, ir_stmt *s) {
    if (b->n == b->cap) {
        int nc = b->cap ? b->cap * 2 : 4;
        b->s = dvm_arena_grow(A, b->s, sizeof(ir_stmt *) * (size_t)b->cap, sizeof(ir_stmt *) * (size_t)nc);
        b->cap = nc;
    }
    b->s[b->n++] = s;
}
static ir_stmt *assign(int var, ir_expr *e) {
    ir_stmt *s = st(IR_ASSIGN);
    s->var = var;
    s->e = e;
    return s;
}
static ir_stmt *store(int kind, int op, int slot, ir_expr *i0, ir_expr *e) {
    ir_stmt *s = st(kind);
    s->op = (uint16_t)op;
    s->slot = slot;
    s->idx[0] = i0;
    s->nidx = 1;
    s->e = e;
    return s;
}
static ir_stmt *for_(int var, ir_expr *lo, ir_expr *hi) {
    ir_stmt *s = st(IR_FOR);
    s->var = var;
    s->e = lo;
    s->e2 = hi;
    return s;
}

static int addvar(const char *name, int type, int storage, int param) {
    if (K->nvars == K->capvars) {
        int nc = K->capvars ? K->capvars * 2 : 16;
        K->vars = dvm_arena_grow(A, K->vars, sizeof(ir_var) * (size_t)K->capvars, sizeof(ir_var) * (size_t)nc);
        K->capvars = nc;
    }
    ir_var *v = &K->vars[K->nvars];
    v->name = name;
    v->type = (uint8_t)type;
    v->storage = (uint8_t)storage;
    v->line = LINE;
    v->param = param;
    v->primal = -1;
    return K->nvars++;
}

static ir_module *M;
static void module(void) {
    M = zalloc(sizeof *M);
    M->source_name = "t.dvk";
    M->kernels = zalloc(sizeof(ir_kernel *) * 8);
    M->arena = A;
}
static void kernel(const char *name) {
    K = zalloc(sizeof *K);
    K->name = name;
    K->line = LINE;
    K->params = zalloc(sizeof(ir_param) * 16);
    K->syms = zalloc(sizeof(ir_sym) * 8);
    for (int v = 0; v < DVM_V_COUNT; v++) {
        K->v[v].tops = zalloc(sizeof(ir_top) * 16);
        K->v[v].slots = zalloc(sizeof(ir_slot) * 16);
        K->v[v].stacks = zalloc(sizeof(ir_stack) * 16);
    }
    K->v[DVM_V_FORWARD].present = 1;
    M->kernels[M->nkernels++] = K;
}
static int sym(const char *name) {
    int v = addvar(name, DVM_T_I32, IR_SHAPESYM, K->nsyms);
    K->syms[K->nsyms].name = name;
    K->syms[K->nsyms].var = v;
    K->nsyms++;
    return v;
}
/* an array parameter; dims: >= 0 literal, < 0 symbol -(s+1). Returns its forward slot. */
static int arr(const char *name, int type, int rank, int d0, int d1) {
    ir_param *p = &K->params[K->nparams];
    p->name = name;
    p->is_array = 1;
    p->type = (uint8_t)type;
    p->rank = rank;
    p->dim[0] = d0;
    p->dim[1] = d1;
    p->var = -1;
    ir_variant *f = &K->v[DVM_V_FORWARD];
    f->slots[f->nslots].param = K->nparams++;
    f->slots[f->nslots].role = DVM_ROLE_PRIMAL;
    return f->nslots++;
}
static int scalar(const char *name, int type) {
    int v = addvar(name, type, IR_PARAM, K->nparams);
    ir_param *p = &K->params[K->nparams++];
    p->name = name;
    p->type = (uint8_t)type;
    p->var = v;
    return v;
}
static ir_top *partop(int vk, int idx, ir_expr *stop) {
    ir_variant *v = &K->v[vk];
    ir_top *t = &v->tops[v->ntops++];
    t->parallel = 1;
    t->ndim = 1;
    t->idx_var[0] = idx;
    t->stop[0] = stop;
    t->line = LINE;
    return t;
}
static void sertop(int vk, ir_stmt *s) {
    ir_variant *v = &K->v[vk];
    ir_top *t = &v->tops[v->ntops++];
    t->stmt = s;
    t->line = s->line;
}
static ir_size *sz(int kind, int64_t value, ir_size *a, ir_size *b) {
    ir_size *s = zalloc(sizeof *s);
    s->kind = (uint8_t)kind;
    s->value = value;
    s->a = a;
    s->b = b;
    s->slot = s->axis = s->var = -1;
    return s;
}

/* ---- looking at the result ---- */

/* One task's code as "OP x,a,b,c; ..." (operands as numbers, jump targets task-relative). */
static char *code_text(const dvm_program *p, uint32_t task) {
    static char buf[8192];
    size_t n = 0;
    buf[0] = 0;
    const dvm_task_desc *t = &p->tasks[task];
    for (uint32_t i = 0; i < t->code_len && n < sizeof buf - 64; i++) {
        const dvm_node *d = &p->nodes[t->code_begin + i];
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s %u,%u,%u,%u", i ? "; " : "",
                              dvm_op_table[d->op].name ? dvm_op_table[d->op].name : "?", d->x, d->a, d->b, d->c);
    }
    return buf;
}

static void expect_code(const dvm_program *p, uint32_t task, const char *want, int line) {
    const char *got = code_text(p, task);
    if (strcmp(got, want) != 0) {
        fails++;
        fprintf(stderr, "%s:%d: FAILED task %u code\n  expected: %s\n  got:      %s\n", __FILE__, line, task, want, got);
    }
}
#define EXPECT_CODE(p, task, want) expect_code(p, task, want, __LINE__)

static uint32_t kconst(const dvm_program *p, uint32_t i) { return i < p->nconsts ? p->consts[i] : 0xDEADBEEF; }
static float kf_at(const dvm_program *p, uint32_t i) {
    uint32_t w = kconst(p, i);
    float f;
    memcpy(&f, &w, 4);
    return f;
}

/* Structural checks every emitted program must pass (what the verifier will demand). */
static void check_structure(const dvm_program *p, const char *what) {
    CHECK(p->nstrings_bytes >= 1 && p->strings[0] == 0, "%s: string 0 is not \"\"", what);
    for (uint32_t t = 0; t < p->ntasks; t++) {
        const dvm_task_desc *td = &p->tasks[t];
        CHECK(td->code_len > 0 && td->code_begin + td->code_len <= p->nnodes, "%s: task %u range", what, t);
        if (!td->code_len || td->code_begin + td->code_len > p->nnodes) continue;
        CHECK(p->nodes[td->code_begin + td->code_len - 1].op == DVM_OP_END, "%s: task %u does not end with END", what, t);
        for (uint32_t i = 0; i < td->code_len; i++) {
            const dvm_node *d = &p->nodes[td->code_begin + i];
            const dvm_op_info *oi = &dvm_op_table[d->op];
            CHECK(oi->name != NULL, "%s: task %u node %u: opcode %u", what, t, i, d->op);
            if (!oi->name) continue;
            CHECK(!(oi->flags & DVM_F_SIZE), "%s: size op %s in a task", what, oi->name);
            uint16_t v[3] = {d->a, d->b, d->c};
            for (int j = 0; j < 3; j++) {
                char f = oi->fmt[j + 1];
                if (f == 'w' || f == 'r' || f == 'm')
                    CHECK(v[j] < td->nregs, "%s: task %u node %u (%s): register %u >= nregs %u", what, t, i, oi->name,
                          v[j], td->nregs);
                if (f == 'J') CHECK(v[j] < td->code_len, "%s: task %u node %u: jump to %u", what, t, i, v[j]);
                if (f == 'k') CHECK(v[j] < p->nconsts, "%s: constant %u", what, v[j]);
                if (f == 'E') CHECK(v[j] < p->nstrings_bytes, "%s: string %u", what, v[j]);
                if (f == '-') CHECK(v[j] == 0, "%s: task %u node %u: unused operand not 0", what, t, i);
                if (f == 'V') CHECK(td->kind == DVM_TASK_SERIAL, "%s: STU in a parallel task", what);
            }
        }
        if (td->kind == DVM_TASK_PARALLEL)
            for (int d = 0; d < td->ndim; d++) CHECK(td->idx_reg[d] < td->nregs, "%s: idx_reg", what);
    }
}

static dvm_program *emit_ok(const char *what) {
    dvm_diags d;
    dvm_diags_init(&d, "t.dvk", "", 0);
    dvm_program *p = NULL;
    int rc = dvm_emit(M, &p, &d);
    char *msg = dvm_diags_take(&d);
    CHECK(rc == 0 && p, "%s: dvm_emit failed: %s", what, msg ? msg : "");
    free(msg);
    dvm_diags_free(&d);
    if (p) {
        check_structure(p, what);
        char err[512];
        CHECK(dvm_verify(p, err, sizeof err) == 0, "%s: the verifier refuses the program: %s", what, err);
    }
    return p;
}

static char *emit_fail(const char *what) {
    dvm_diags d;
    dvm_diags_init(&d, "t.dvk", "", 0);
    dvm_program *p = NULL;
    int rc = dvm_emit(M, &p, &d);
    char *msg = dvm_diags_take(&d);
    CHECK(rc != 0 && !p, "%s: dvm_emit succeeded where it should fail", what);
    dvm_program_free(p);
    dvm_diags_free(&d);
    return msg;
}

/* ---- tests ---- */

/* y[i] = a * x[i] + y[i] over range(n): numbering, FMAF, writes flags. */
static void test_saxpy(void) {
    module();
    kernel("saxpy");
    int n = sym("n");
    int x = arr("x", DVM_T_F32, 1, -1, 0);
    int y = arr("y", DVM_T_F32, 1, -1, 0);
    int a = scalar("a", DVM_T_F32);
    int i = addvar("i", DVM_T_I32, IR_PINDEX, -1);
    ir_top *t = partop(DVM_V_FORWARD, i, V(n));
    push(&t->body, store(IR_STORE, 0, y, V(i),
                         bin(DVM_OP_ADDF, DVM_T_F32, bin(DVM_OP_MULF, DVM_T_F32, V(a), load(x, DVM_T_F32, V(i), NULL)),
                             load(y, DVM_T_F32, V(i), NULL))));
    dvm_program *p = emit_ok("saxpy");
    if (!p) return;
    CHECK(p->nkernels == 1 && p->nparams == 3 && p->nsyms == 1, "counts %u %u %u", p->nkernels, p->nparams, p->nsyms);
    CHECK(strcmp(p->strings + p->source_name, "t.dvk") == 0, "source name '%s'", p->strings + p->source_name);
    CHECK(strcmp(p->strings + p->kernels[0].name, "saxpy") == 0, "kernel name");
    CHECK(p->params[2].uslot == 0 && !p->params[2].is_array, "scalar a in uniform 0, got %u", p->params[2].uslot);
    CHECK(p->syms[0].uslot == 1, "symbol n in uniform 1, got %u", p->syms[0].uslot);
    CHECK(p->params[0].dim[0] == -1 && p->params[0].rank == 1, "x dims");
    const dvm_variant_desc *vd = &p->kernels[0].v[0];
    CHECK(vd->present && vd->ntasks == 1 && vd->nslots == 2 && vd->nuniforms == 2, "variant %u %u %u %u", vd->present,
          vd->ntasks, vd->nslots, vd->nuniforms);
    CHECK(!p->kernels[0].v[1].present && !p->kernels[0].v[2].present, "absent variants");
    CHECK(p->slots[0].writes == 0 && p->slots[1].writes == 1, "writes x=%u y=%u", p->slots[0].writes, p->slots[1].writes);
    const dvm_task_desc *td = &p->tasks[0];
    CHECK(td->kind == DVM_TASK_PARALLEL && td->ndim == 1 && td->ext_u[0] == 1 && td->start_u[0] == DVM_NO_SLOT &&
              td->start_u[1] == DVM_NO_SLOT && td->start_u[2] == DVM_NO_SLOT && td->idx_reg[0] == 0,
          "task kind %u ndim %u ext %u start %u %u %u idx %u", td->kind, td->ndim, td->ext_u[0], td->start_u[0],
          td->start_u[1], td->start_u[2], td->idx_reg[0]);
    CHECK(td->nregs == 4, "nregs %u", td->nregs);
    /* a -> r1 (loaded once), x[i] -> r2, accumulator y[i] -> r3, FMAF */
    EXPECT_CODE(p, 0, "LDU 0,1,0,0; LD 0,2,0,0; LD 1,3,0,0; FMAF 0,3,1,2; ST 1,0,3,0; END 0,0,0,0");
    dvm_program_free(p);
}

/* Serial code before a parallel loop whose stop is a top-level variable: one serial task
 * holding the statements and the hidden extent; the parallel task reads it. */
static void test_hidden_extent(void) {
    module();
    kernel("hid");
    int n = sym("n");
    int x = arr("x", DVM_T_I32, 1, -1, 0);
    int m = addvar("m", DVM_T_I32, IR_GLOBAL, -1);
    int i = addvar("i", DVM_T_I32, IR_PINDEX, -1);
    sertop(DVM_V_FORWARD, assign(m, bin(DVM_OP_MULI, DVM_T_I32, V(n), ki(2))));
    ir_top *t = partop(DVM_V_FORWARD, i, bin(DVM_OP_SUBI, DVM_T_I32, V(m), ki(1)));
    push(&t->body, store(IR_STORE, 0, x, V(i), V(m)));
    /* a second loop over n: no serial task in between */
    ir_top *t2 = partop(DVM_V_FORWARD, i, V(n));
    push(&t2->body, store(IR_ATOMIC, DVM_OP_ATOMADDI, x, ki(0), V(i)));
    dvm_program *p = emit_ok("hidden");
    if (!p) return;
    const dvm_variant_desc *vd = &p->kernels[0].v[0];
    CHECK(vd->ntasks == 3, "3 tasks, got %u", vd->ntasks);
    CHECK(vd->nuniforms == 3, "n, m, hidden: 3 uniforms, got %u", vd->nuniforms);
    if (vd->ntasks != 3) return;
    CHECK(p->tasks[0].kind == DVM_TASK_SERIAL && p->tasks[1].kind == DVM_TASK_PARALLEL &&
              p->tasks[2].kind == DVM_TASK_PARALLEL,
          "kinds");
    /* m -> uniform 1 (first use), hidden extent -> uniform 2 */
    CHECK(p->tasks[1].ext_u[0] == 2 && p->tasks[2].ext_u[0] == 0, "ext_u %u %u", p->tasks[1].ext_u[0],
          p->tasks[2].ext_u[0]);
    /* serial: r0 = m (assigned first), r1 = n, both loaded at the start (in variable order);
     * m = n*2 written through to U1; U2 = m - 1 (ADDIK -1) */
    EXPECT_CODE(p, 0,
                "LDU 0,1,0,0; LDU 0,0,1,0; CONST 0,2,2,0; MULI 0,0,1,2; STU 0,1,0,0; ADDIK 0,3,0,65535; "
                "STU 0,2,3,0; END 0,0,0,0");
    /* parallel: m loaded once into r1 */
    EXPECT_CODE(p, 1, "LDU 0,1,1,0; ST 0,0,1,0; END 0,0,0,0");
    EXPECT_CODE(p, 2, "CONST 0,1,0,0; ATOMADDI 0,1,0,0; END 0,0,0,0");
    CHECK(p->slots[0].writes == 1, "x written");
    dvm_program_free(p);
}

/* The damp example: a dynamic inner for loop with v = v * r + 0.01 and y[0] += v. */
static void test_for_loop(void) {
    module();
    kernel("damp");
    int n = sym("n");
    int x = arr("x", DVM_T_F32, 1, -1, 0);
    int steps = arr("steps", DVM_T_I32, 1, -1, 0);
    int y = arr("y", DVM_T_F32, 1, 1, 0);
    int rate = scalar("rate", DVM_T_F32);
    int i = addvar("i", DVM_T_I32, IR_PINDEX, -1);
    int v = addvar("v", DVM_T_F32, IR_LOCAL, -1);
    int j = addvar("_", DVM_T_I32, IR_LOCAL, -1);
    ir_top *t = partop(DVM_V_FORWARD, i, V(n));
    push(&t->body, assign(v, load(x, DVM_T_F32, V(i), NULL)));
    ir_stmt *f = for_(j, ki(0), load(steps, DVM_T_I32, V(i), NULL));
    push(&f->body, assign(v, bin(DVM_OP_ADDF, DVM_T_F32, bin(DVM_OP_MULF, DVM_T_F32, V(v), V(rate)), kf(0.01f))));
    push(&t->body, f);
    push(&t->body, store(IR_ATOMIC, DVM_OP_ATOMADDF, y, ki(0), V(v)));
    dvm_program *p = emit_ok("damp");
    if (!p) return;
    /* r0 i, r1 v, r2 _, r3 rate; temps r4 start, r5 stop. The body never writes _, so _ is
     * its own counter: 0 LDU rate; 1 LD v=x[i]; 2 CONST 0; 3 LD hi=steps[i];
     * 4 JGEI lo,hi -> 9; 5 MOV _=lo; 6 FMAFK v=v*rate+K0; 7 INCLT _,hi -> 6;
     * 8 ADDIK _ -= 1 (Python's last value); 9 CONST 0; 10 ATOMADDF; 11 END */
    EXPECT_CODE(p, 0,
                "LDU 0,3,0,0; LD 0,1,0,0; CONST 0,4,0,0; LD 1,5,0,0; JGEI 0,4,5,9; MOV 0,2,4,0; FMAFK 0,1,3,0; "
                "INCLT 0,2,5,6; ADDIK 0,2,2,65535; CONST 0,6,0,0; ATOMADDF 2,6,1,0; END 0,0,0,0");
    CHECK(p->nconsts == 1 && kf_at(p, 0) == 0.01f, "pool holds 0.01f");
    CHECK(p->slots[0].writes == 0 && p->slots[1].writes == 0 && p->slots[2].writes == 1, "writes flags");
    CHECK(p->lines[p->tasks[0].code_begin + 6] == (uint32_t)LINE, "line of the FMAFK");
    dvm_program_free(p);
}

/* while with a short-circuit and, if/else, break/continue, assert, select, conditional. */
static void test_control(void) {
    module();
    kernel("ctl");
    int n = sym("n");
    int x = arr("x", DVM_T_F32, 1, -1, 0);
    int i = addvar("i", DVM_T_I32, IR_PINDEX, -1);
    int k = addvar("k", DVM_T_I32, IR_LOCAL, -1);
    int s = addvar("s", DVM_T_F32, IR_LOCAL, -1);
    ir_top *t = partop(DVM_V_FORWARD, i, V(n));
    push(&t->body, assign(k, ki(0)));
    /* while k < 10 and x[k] < 1.0: if k == 3: break  else: k = k + 1; continue */
    ir_stmt *w = st(IR_WHILE);
    w->e = tern(IR_AND, DVM_T_BOOL, bin(DVM_OP_LTI, DVM_T_BOOL, V(k), ki(10)),
                bin(DVM_OP_LTF, DVM_T_BOOL, load(x, DVM_T_F32, V(k), NULL), kf(1.0f)), NULL);
    ir_stmt *iff = st(IR_IF);
    iff->e = bin(DVM_OP_EQI, DVM_T_BOOL, V(k), ki(3));
    push(&iff->body, st(IR_BREAK));
    push(&iff->orelse, assign(k, bin(DVM_OP_ADDI, DVM_T_I32, V(k), ki(1))));
    push(&iff->orelse, st(IR_CONTINUE));
    push(&w->body, iff);
    push(&t->body, w);
    ir_stmt *as = st(IR_ASSERT);
    as->e = bin(DVM_OP_LEI, DVM_T_BOOL, V(k), ki(3));
    as->msg = "k too big";
    push(&t->body, as);
    /* s = 2.0 if k < i else x[i]; s = select(k == 0, s, -s) */
    push(&t->body, assign(s, tern(IR_COND, DVM_T_F32, bin(DVM_OP_LTI, DVM_T_BOOL, V(k), V(i)), kf(2.0f),
                                  load(x, DVM_T_F32, V(i), NULL))));
    push(&t->body, assign(s, tern(IR_SELECT, DVM_T_F32, bin(DVM_OP_EQI, DVM_T_BOOL, V(k), ki(0)), V(s),
                                  un(DVM_OP_NEGF, DVM_T_F32, V(s)))));
    push(&t->body, store(IR_STORE, 0, x, V(i), V(s)));
    dvm_program *p = emit_ok("control");
    if (!p) return;
    /* regs: i0 k1, constants hoisted out of the loop r2=3 r3=10 r4=1.0f, s5, temps 6.. */
    EXPECT_CODE(p, 0,
                "CONST 0,2,3,0; CONST 0,3,10,0; CONST 0,4,0,16256; CONST 0,1,0,0; JMP 0,11,0,0; EQI 0,6,1,2; "
                "JZ 0,6,9,0; JMP 0,15,0,0; JMP 0,11,0,0; ADDIK 0,1,1,1; JMP 0,11,0,0; JGEI 0,1,3,15; LD 0,7,1,0; "
                "LTF 0,8,7,4; JNZ 0,8,5,0; LEI 0,9,1,2; ASSERT 0,9,1,0; JGEI 0,1,0,20; CONST 0,5,0,16384; "
                "JMP 0,21,0,0; LD 0,5,0,0; NEGF 0,10,5,0; CONST 0,12,0,0; EQI 0,11,1,12; SEL 0,11,5,10; "
                "MOV 0,5,11,0; ST 0,0,5,0; END 0,0,0,0");
    const dvm_node *c0 = &p->nodes[p->tasks[0].code_begin];
    CHECK(strcmp(p->strings + c0[16].b, "k too big") == 0, "assert message '%s'", p->strings + c0[16].b);
    CHECK(c0[16].b == 1, "assert messages come first in the string table (offset %u)", c0[16].b);
    CHECK(p->lines[p->tasks[0].code_begin + 16] == (uint32_t)LINE && p->cols[p->tasks[0].code_begin + 16] == 1,
          "assert line/col");
    dvm_program_free(p);
}

/* Fused forms: which ops are chosen, and the constants they carry. */
static void test_superinstructions(void) {
    module();
    kernel("fuse");
    int n = sym("n");
    int x = arr("x", DVM_T_F32, 1, -1, 0);
    int i = addvar("i", DVM_T_I32, IR_PINDEX, -1);
    int a = addvar("a", DVM_T_F32, IR_LOCAL, -1);
    int b = addvar("b", DVM_T_F32, IR_LOCAL, -1);
    ir_top *t = partop(DVM_V_FORWARD, i, V(n));
    push(&t->body, assign(a, bin(DVM_OP_ADDF, DVM_T_F32, load(x, DVM_T_F32, V(i), NULL), kf(1.0f)))); /* LD, ADDFK */
    push(&t->body, assign(b, bin(DVM_OP_SUBF, DVM_T_F32, V(a), kf(2.0f))));  /* ADDFK -2 */
    push(&t->body, assign(b, bin(DVM_OP_SUBF, DVM_T_F32, kf(3.0f), V(b))));  /* KSUBF */
    push(&t->body, assign(b, bin(DVM_OP_DIVF, DVM_T_F32, kf(4.0f), V(b))));  /* KDIVF */
    push(&t->body, assign(b, bin(DVM_OP_DIVF, DVM_T_F32, V(b), kf(4.0f))));  /* CONST, DIVF */
    push(&t->body, assign(a, bin(DVM_OP_MULF, DVM_T_F32, kf(3.0f), V(a))));  /* MULFK */
    push(&t->body, assign(a, bin(DVM_OP_ADDF, DVM_T_F32, V(a), load(x, DVM_T_F32, V(i), NULL)))); /* LDADDF */
    push(&t->body, assign(a, bin(DVM_OP_ADDF, DVM_T_F32, V(a), bin(DVM_OP_MULF, DVM_T_F32, V(b), V(b))))); /* FMAF */
    push(&t->body, assign(b, bin(DVM_OP_ADDF, DVM_T_F32, bin(DVM_OP_MULF, DVM_T_F32, V(a), V(a)), V(b)))); /* FMAF */
    /* accumulator is another variable: no copy, plain MULF + ADDF */
    push(&t->body, assign(b, bin(DVM_OP_ADDF, DVM_T_F32, bin(DVM_OP_MULF, DVM_T_F32, V(a), V(a)), V(a))));
    /* NaN constant: never fused */
    push(&t->body, assign(b, bin(DVM_OP_ADDF, DVM_T_F32, V(a), kf(NAN))));
    push(&t->body, store(IR_STORE, 0, x, V(i), V(b)));
    dvm_program *p = emit_ok("fuse");
    if (!p) return;
    /* regs: i0 a1 b2, temps 3.. */
    EXPECT_CODE(p, 0,
                "LD 0,3,0,0; ADDFK 0,1,3,0; ADDFK 0,2,1,1; KSUBF 0,2,2,2; KDIVF 0,2,2,3; CONST 0,4,0,16512; "
                "DIVF 0,2,2,4; MULFK 0,1,1,2; LDADDF 0,1,0,0; FMAF 0,1,2,2; FMAF 0,2,1,1; MULF 0,5,1,1; "
                "ADDF 0,2,5,1; CONST 0,6,0,32704; ADDF 0,2,1,6; ST 0,0,2,0; END 0,0,0,0");
    CHECK(kf_at(p, 0) == 1.0f && kf_at(p, 1) == -2.0f && kf_at(p, 2) == 3.0f && kf_at(p, 3) == 4.0f,
          "pool: 1, -2, 3, 4 (deduplicated), got %g %g %g %g", kf_at(p, 0), kf_at(p, 1), kf_at(p, 2), kf_at(p, 3));
    CHECK(p->nconsts == 4, "4 constants, got %u", p->nconsts);
    dvm_program_free(p);

    /* x - K and x + (-K) agree bit for bit, signed zeros included (why SUBF -> ADDFK is exact) */
    volatile float zs[4] = {0.0f, -0.0f, 1.5f, -1.5f};
    for (int u = 0; u < 4; u++)
        for (int w = 0; w < 4; w++) {
            float d1 = zs[u] - zs[w], d2 = zs[u] + (-zs[w]);
            uint32_t b1, b2;
            memcpy(&b1, &d1, 4);
            memcpy(&b2, &d2, 4);
            CHECK(b1 == b2, "%g - %g: %08x vs %08x", zs[u], zs[w], b1, b2);
        }
}

/* v = v * r + K with v the destination: FMAFK, no copy; expression multiplier into a temp. */
static void test_fmafk_forms(void) {
    module();
    kernel("fk");
    int n = sym("n");
    int x = arr("x", DVM_T_F32, 1, -1, 0);
    int i = addvar("i", DVM_T_I32, IR_PINDEX, -1);
    int v = addvar("v", DVM_T_F32, IR_LOCAL, -1);
    int w = addvar("w", DVM_T_F32, IR_LOCAL, -1);
    ir_top *t = partop(DVM_V_FORWARD, i, V(n));
    push(&t->body, assign(v, load(x, DVM_T_F32, V(i), NULL)));
    push(&t->body, assign(w, bin(DVM_OP_ADDF, DVM_T_F32, bin(DVM_OP_MULF, DVM_T_F32, V(v), V(w)), kf(0.5f))));
    push(&t->body,
         assign(w, bin(DVM_OP_ADDF, DVM_T_F32,
                       bin(DVM_OP_MULF, DVM_T_F32, un(DVM_OP_SIN, DVM_T_F32, V(v)), V(v)), kf(0.5f))));
    push(&t->body, assign(w, bin(DVM_OP_ADDF, DVM_T_F32, bin(DVM_OP_MULF, DVM_T_F32, V(v), V(v)), kf(0.5f))));
    push(&t->body, store(IR_STORE, 0, x, V(i), V(w)));
    dvm_program *p = emit_ok("fmafk");
    if (!p) return;
    /* regs i0 v1 w2; w is read before any assignment: the task zeroes it first */
    EXPECT_CODE(p, 0,
                "CONST 0,2,0,0; LD 0,1,0,0; "
                "FMAFK 0,2,1,0; "             /* w = w*v + K (w is the destination) */
                "SIN 0,2,1,0; FMAFK 0,2,1,0; " /* w = sin(v)*v + K: sin(v) straight into w */
                "MULF 0,3,1,1; ADDFK 0,2,3,0; " /* w = v*v + K: two variables, no copy: exact form */
                "ST 0,0,2,0; END 0,0,0,0");
    dvm_program_free(p);
}

/* A body that writes the loop variable: a hidden counter, var = counter each iteration. */
static void test_for_writes_var(void) {
    module();
    kernel("fw");
    int n = sym("n");
    int x = arr("x", DVM_T_I32, 1, -1, 0);
    int i = addvar("i", DVM_T_I32, IR_PINDEX, -1);
    int j = addvar("j", DVM_T_I32, IR_LOCAL, -1);
    ir_top *t = partop(DVM_V_FORWARD, i, V(n));
    ir_stmt *f = for_(j, V(i), V(n));
    push(&f->body, assign(j, bin(DVM_OP_MULI, DVM_T_I32, V(j), ki(2))));
    push(&f->body, store(IR_ATOMIC, DVM_OP_ATOMADDI, x, V(i), V(j)));
    push(&t->body, f);
    dvm_program *p = emit_ok("for writes var");
    if (!p) return;
    /* r0 i, r1 j, r2 n (loaded; a read-only stop is used in place), r3 constant 2, r4 counter */
    EXPECT_CODE(p, 0,
                "LDU 0,2,0,0; CONST 0,3,2,0; MOV 0,4,0,0; JGEI 0,4,2,8; MOV 0,1,4,0; MULI 0,1,1,3; ATOMADDI 0,0,1,0; "
                "INCLT 0,4,2,4; END 0,0,0,0");
    dvm_program_free(p);
}

/* Stacks: constant, default and program sizing; a nested dynamic loop's size program. */
static void test_stacks(void) {
    module();
    kernel("stk");
    int n = sym("n");
    int x = arr("x", DVM_T_F32, 2, 3, -1);
    int steps = arr("steps", DVM_T_I32, 1, -1, 0);
    int i = addvar("i", DVM_T_I32, IR_PINDEX, -1);
    int v = addvar("v", DVM_T_F32, IR_LOCAL, -1);
    ir_variant *a = &K->v[DVM_V_ADJOINT];
    a->present = 1;
    a->slots[0] = K->v[0].slots[0];
    a->slots[1] = K->v[0].slots[1];
    a->slots[2].param = 0;
    a->slots[2].role = DVM_ROLE_GRAD;
    a->nslots = 3;
    /* stack 0: 3 * 4 constant; stack 1: default inside; stack 2: max over j in [0, n) of
     * steps[j], plus 1; stack 3: shape of x axis 0 (literal 3) -> constant 3 */
    ir_stack *s0 = &a->stacks[a->nstacks++];
    s0->type = DVM_T_F32;
    s0->var = v;
    s0->name = "v";
    s0->line = 7;
    s0->size = sz(IRS_MUL, 0, sz(IRS_CONST, 3, NULL, NULL), sz(IRS_CONST, 4, NULL, NULL));
    ir_stack *s1 = &a->stacks[a->nstacks++];
    s1->type = DVM_T_I32;
    s1->var = -1;
    s1->name = "trip count of loop";
    s1->line = 8;
    s1->serial = 1;
    s1->size = sz(IRS_ADD, 0, sz(IRS_CONST, 1, NULL, NULL), sz(IRS_DEFAULT, 0, NULL, NULL));
    ir_stack *s2 = &a->stacks[a->nstacks++];
    s2->type = DVM_T_BOOL;
    s2->var = -1;
    s2->name = "";
    s2->line = 9;
    ir_size *par = sz(IRS_PARAM, 0, NULL, NULL);
    par->var = n;
    ir_size *ld = sz(IRS_LOAD, 0, sz(IRS_VAR, 0, NULL, NULL), NULL);
    ld->slot = steps;
    ir_size *rng = sz(IRS_RANGE, 0, sz(IRS_CONST, 0, NULL, NULL), par);
    rng->body = ld;
    s2->size = sz(IRS_ADD, 0, rng, sz(IRS_CONST, 1, NULL, NULL));
    /* stack 4: a range at the root whose body is a range: both values copied last */
    ir_stack *s4 = &a->stacks[4];
    s4->type = DVM_T_I32;
    s4->name = "k";
    ir_size *inner = sz(IRS_RANGE, 0, sz(IRS_CONST, 0, NULL, NULL), sz(IRS_VAR, 0, NULL, NULL));
    ir_size *v1 = sz(IRS_VAR, 0, NULL, NULL);
    v1->depth = 1;
    ir_size *ld2 = sz(IRS_LOAD, 0, v1, NULL);
    ld2->slot = steps;
    inner->body = ld2;
    ir_size *par2 = sz(IRS_PARAM, 0, NULL, NULL);
    par2->var = n;
    ir_size *outer = sz(IRS_RANGE, 0, sz(IRS_CONST, 0, NULL, NULL), par2);
    outer->body = inner;
    s4->size = outer;
    ir_stack *s3 = &a->stacks[a->nstacks++];
    s3->type = DVM_T_F32;
    s3->name = "w";
    ir_size *sh = sz(IRS_SHAPE, 0, NULL, NULL);
    sh->slot = x;
    sh->axis = 0;
    s3->size = sh;
    a->nstacks = 5;
    /* the adjoint pushes and pops v on stack 0 */
    ir_top *t = partop(DVM_V_ADJOINT, i, V(n));
    push(&t->body, assign(v, load(x, DVM_T_F32, ki(1), V(i))));
    ir_stmt *ps = st(IR_PUSH);
    ps->stack = 0;
    ps->e = V(v);
    push(&t->body, ps);
    ir_stmt *pp = st(IR_POP);
    pp->stack = 0;
    pp->var = v;
    push(&t->body, pp);
    ir_stmt *acc = store(IR_ATOMIC, DVM_OP_ATOMADDF, 2, ki(1), V(v));
    acc->idx[1] = V(i);
    acc->nidx = 2;
    push(&t->body, acc);
    dvm_program *p = emit_ok("stacks");
    if (!p) return;
    const dvm_variant_desc *vd = &p->kernels[0].v[DVM_V_ADJOINT];
    CHECK(vd->present && vd->nstacks == 5 && vd->nslots == 3, "adjoint variant: %u stacks, %u slots", vd->nstacks,
          vd->nslots);
    CHECK(p->slots[vd->slot_begin + 2].role == DVM_ROLE_GRAD && p->slots[vd->slot_begin + 2].writes == 1 &&
              p->slots[vd->slot_begin].writes == 0,
          "grad slot written, primal not");
    const dvm_stack_desc *sd = &p->stacks[vd->stack_begin];
    CHECK(sd[0].sizing == DVM_SZ_CONSTANT && sd[0].const_cap == 12 && sd[0].type == DVM_T_F32 &&
              strcmp(p->strings + sd[0].name, "v") == 0 && sd[0].line == 7,
          "stack 0: sizing %u cap %u", sd[0].sizing, sd[0].const_cap);
    CHECK(sd[1].sizing == DVM_SZ_DEFAULT && sd[1].serial == 1, "stack 1: sizing %u serial %u", sd[1].sizing,
          sd[1].serial);
    CHECK(sd[3].sizing == DVM_SZ_CONSTANT && sd[3].const_cap == 3, "stack 3: literal shape folds to 3 (%u, %u)",
          sd[3].sizing, sd[3].const_cap);
    CHECK(sd[2].sizing == DVM_SZ_PROGRAM && sd[2].size_len == 7, "stack 2: program of 7 nodes, got sizing %u len %u",
          sd[2].sizing, sd[2].size_len);
    if (sd[2].sizing == DVM_SZ_PROGRAM && sd[2].size_len == 7) {
        static const char *want =
            "SZ_CONST 0,0,0,0; SZ_PARAM 0,0,0,0; SZ_RANGE 0,0,1,5; SZ_VAR 0,0,0,0; SZ_LOAD 1,3,0,0; "
            "SZ_CONST 0,1,0,0; SZ_ADD 0,2,5,0";
        char got[512] = "";
        for (uint32_t q = 0; q < sd[2].size_len; q++) {
            const dvm_node *d = &p->nodes[sd[2].size_begin + q];
            char one[64];
            snprintf(one, sizeof one, "%s%s %u,%u,%u,%u", q ? "; " : "", dvm_op_table[d->op].name, d->x, d->a, d->b,
                     d->c);
            strcat(got, one);
        }
        CHECK(strcmp(got, want) == 0, "size program\n  expected: %s\n  got:      %s", want, got);
    }
    {
        /* 0 const 0; 1 param n; 2 range [0,1) body to 9; 3 const 0; 4 var 0; 5 range [3,4) body
         * to 8; 6 var 1; 7 load steps; 8 copy of 5 (body root last); 9 copy of 2 (capacity) */
        static const char *want =
            "SZ_CONST 0,0,0,0; SZ_PARAM 0,0,0,0; SZ_RANGE 0,0,1,9; SZ_CONST 0,0,0,0; SZ_VAR 0,0,0,0; "
            "SZ_RANGE 0,3,4,8; SZ_VAR 0,1,0,0; SZ_LOAD 1,6,0,0; SZ_MAX 0,5,5,0; SZ_MAX 0,2,2,0";
        char got[768] = "";
        for (uint32_t q = 0; q < sd[4].size_len && sd[4].sizing == DVM_SZ_PROGRAM; q++) {
            const dvm_node *d = &p->nodes[sd[4].size_begin + q];
            char one[64];
            snprintf(one, sizeof one, "%s%s %u,%u,%u,%u", q ? "; " : "", dvm_op_table[d->op].name, d->x, d->a, d->b,
                     d->c);
            strcat(got, one);
        }
        CHECK(strcmp(got, want) == 0, "nested size program\n  expected: %s\n  got:      %s", want, got);
    }
    /* adjoint task: x[1, i] is one LD2 (checks axis 0 and 1), PUSH/POP stack 0; the
       gradient's x.grad[1, i] += popped value is one ATOMADDF2 */
    EXPECT_CODE(p, vd->task_begin,
                "CONST 0,2,1,0; LD2 0,1,2,0; PUSH 0,0,1,0; POP 0,1,0,0; CONST 0,3,1,0; ATOMADDF2 2,3,0,1; "
                "END 0,0,0,0");
    dvm_program_free(p);
}

/* Rank-2 accesses: LD2/ST2 when neither index can fail; an index with a division (which can
 * fail) keeps the IDX/IDXM chain, so that an axis-0 error still comes before it. */
static void test_ld2(void) {
    module();
    kernel("two");
    int n = sym("n");
    int x = arr("x", DVM_T_F32, 2, -1, 4);
    int i = addvar("i", DVM_T_I32, IR_PINDEX, -1);
    int a = addvar("a", DVM_T_F32, IR_LOCAL, -1);
    ir_top *t = partop(DVM_V_FORWARD, i, V(n));
    /* a = x[i, i + 1] + x[i - 1, 2]: LD2 + ADDF (not LDADDF) */
    push(&t->body, assign(a, bin(DVM_OP_ADDF, DVM_T_F32,
                                 load(x, DVM_T_F32, V(i), bin(DVM_OP_ADDI, DVM_T_I32, V(i), ki(1))),
                                 load(x, DVM_T_F32, bin(DVM_OP_SUBI, DVM_T_I32, V(i), ki(1)), ki(2)))));
    ir_stmt *s2 = store(IR_STORE, 0, x, V(i), V(a)); /* x[i, 3] = a */
    s2->idx[1] = ki(3);
    s2->nidx = 2;
    push(&t->body, s2);
    /* a = x[i // 2, 0]: the division can fail: IDX/IDXM + LD */
    push(&t->body, assign(a, load(x, DVM_T_F32, bin(DVM_OP_DIVI, DVM_T_I32, V(i), ki(2)), ki(0))));
    /* x[i, 1] += a * 2: ATOMADDF2; x[i, 2] += x[i, 0]: the value is a load, which can fail
       after the indices are checked: IDX/IDXM + LD2 + ATOMADDF */
    ir_stmt *s3 = store(IR_ATOMIC, DVM_OP_ATOMADDF, x, V(i), bin(DVM_OP_MULF, DVM_T_F32, V(a), kf(2.0f)));
    s3->idx[1] = ki(1);
    s3->nidx = 2;
    push(&t->body, s3);
    ir_stmt *s4 = store(IR_ATOMIC, DVM_OP_ATOMADDF, x, V(i), load(x, DVM_T_F32, V(i), ki(0)));
    s4->idx[1] = ki(2);
    s4->nidx = 2;
    push(&t->body, s4);
    dvm_program *p = emit_ok("two");
    if (!p) return;
    int has_ld2 = 0, has_st2 = 0, has_idx = 0, has_ldaddf = 0, has_at2 = 0, has_at = 0;
    const dvm_task_desc *td = &p->tasks[0];
    for (uint32_t q = 0; q < td->code_len; q++) {
        uint8_t op = p->nodes[td->code_begin + q].op;
        has_ld2 += op == DVM_OP_LD2;
        has_st2 += op == DVM_OP_ST2;
        has_idx += op == DVM_OP_IDX;
        has_ldaddf += op == DVM_OP_LDADDF;
        has_at2 += op == DVM_OP_ATOMADDF2;
        has_at += op == DVM_OP_ATOMADDF;
    }
    CHECK(has_ld2 == 3 && has_st2 == 1 && has_idx == 2 && has_ldaddf == 0 && has_at2 == 1 && has_at == 1,
          "expected 3 LD2, 1 ST2, 2 IDX (the division, the loaded value), no LDADDF, 1 ATOMADDF2, 1 ATOMADDF; "
          "got %d, %d, %d, %d, %d, %d", has_ld2, has_st2, has_idx, has_ldaddf, has_at2, has_at);
    CHECK(p->slots[0].writes == 1, "ST2 marks x written");
    dvm_program_free(p);
}

/* Errors: limits name the kernel. */
static void test_limits(void) {
    /* a product chain 1500 deep needs more than 1024 registers */
    module();
    kernel("deep");
    int n = sym("n");
    int x = arr("x", DVM_T_F32, 1, -1, 0);
    int i = addvar("i", DVM_T_I32, IR_PINDEX, -1);
    ir_expr *e = load(x, DVM_T_F32, V(i), NULL);
    for (int q = 0; q < 1500; q++) e = bin(DVM_OP_MULF, DVM_T_F32, load(x, DVM_T_F32, V(i), NULL), e);
    ir_top *t = partop(DVM_V_FORWARD, i, V(n));
    push(&t->body, store(IR_STORE, 0, x, V(i), e));
    char *msg = emit_fail("registers");
    CHECK(msg && strstr(msg, "kernel 'deep'") && strstr(msg, "registers"), "message: %s", msg ? msg : "(none)");
    free(msg);

    /* 70000 stores of one node each: more nodes than a task may hold */
    module();
    kernel("long");
    n = sym("n");
    x = arr("x", DVM_T_F32, 1, -1, 0);
    i = addvar("i", DVM_T_I32, IR_PINDEX, -1);
    t = partop(DVM_V_FORWARD, i, V(n));
    for (int q = 0; q < 70000; q++) push(&t->body, store(IR_STORE, 0, x, V(i), V(i)));
    msg = emit_fail("nodes");
    CHECK(msg && strstr(msg, "kernel 'long'") && strstr(msg, "nodes"), "message: %s", msg ? msg : "(none)");
    free(msg);
}

/* Serial code: while loop in top-level code writes a global; for over a global var. */
static void test_serial(void) {
    module();
    kernel("ser");
    int x = arr("x", DVM_T_I32, 1, 4, 0);
    int s = addvar("s", DVM_T_I32, IR_GLOBAL, -1);
    int j = addvar("j", DVM_T_I32, IR_GLOBAL, -1);
    sertop(DVM_V_FORWARD, assign(s, ki(0)));
    ir_stmt *f = for_(j, ki(1), ki(4));
    push(&f->body, assign(s, bin(DVM_OP_ADDI, DVM_T_I32, V(s), V(j))));
    sertop(DVM_V_FORWARD, f);
    sertop(DVM_V_FORWARD, store(IR_STORE, 0, x, ki(0), V(s)));
    dvm_program *p = emit_ok("serial");
    if (!p) return;
    const dvm_variant_desc *vd = &p->kernels[0].v[0];
    CHECK(vd->ntasks == 1 && p->tasks[0].kind == DVM_TASK_SERIAL, "one serial task, got %u", vd->ntasks);
    CHECK(vd->nuniforms == 2, "s and j: 2 uniforms, got %u", vd->nuniforms);
    /* s -> r0/U0, j -> r1/U1; temps: cnt r2, hi r3 */
    EXPECT_CODE(p, 0,
                "LDU 0,0,0,0; LDU 0,1,1,0; CONST 0,0,0,0; STU 0,0,0,0; CONST 0,2,1,0; CONST 0,3,4,0; "
                "JGEI 0,2,3,12; MOV 0,1,2,0; STU 0,1,1,0; ADDI 0,0,0,1; STU 0,0,0,0; INCLT 0,2,3,7; "
                "CONST 0,4,0,0; ST 0,4,0,0; END 0,0,0,0");
    dvm_program_free(p);
}

int main(void) {
    A = dvm_arena_create();
    CHECK(dvm_op_table[DVM_OP_FMAF].name && strcmp(dvm_op_table[DVM_OP_FMAF].name, "FMAF") == 0, "table row");
    CHECK(dvm_op_table[DVM_OP_ADDF].flags & DVM_F_DIFF, "ADDF is differentiable");
    CHECK(!(dvm_op_table[DVM_OP_ADDI].flags & DVM_F_DIFF), "ADDI is not");
    CHECK(dvm_op_table[7].name == NULL, "7 is not an opcode");
    CHECK(dvm_ops_hash() == dvm_ops_hash() && dvm_ops_hash() != 0, "hash");
    test_saxpy();
    test_hidden_extent();
    test_for_loop();
    test_control();
    test_superinstructions();
    test_fmafk_forms();
    test_for_writes_var();
    test_stacks();
    test_ld2();
    test_serial();
    test_limits();
    dvm_arena_destroy(A);
    if (fails) {
        fprintf(stderr, "test_emit: %d failure(s)\n", fails);
        return 1;
    }
    printf("test_emit: ok\n");
    return 0;
}
