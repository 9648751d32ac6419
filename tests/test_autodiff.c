/* test_autodiff.c: checks the adjoint and tangent variants built by dvm_autodiff with a small
 * tree-walking evaluator of the IR (one thread, iterations in order), against central finite
 * differences of the forward variant computed in double precision. For every f32 array x:
 *   after the adjoint, x.grad == d(sum_y w_y . y_final) / d(x_initial)   (seeds w in every .grad)
 *   after the tangent, x.dual == d(x_final) / d(initial) . v              (directions v in every .dual)
 * The evaluator also checks every adstack push against the capacity its size expression gives,
 * and that parallel stacks are empty after each iteration. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "compiler/compile.h"

#include "tests/check.h"

/* ------------------------------------------------------------------ building IR by hand */
static dvm_arena *A;
static ir_kernel *K;
static ir_module *M;
static int line_no;

static int var_new(const char *name, int type, int storage) {
    if (K->nvars == K->capvars) {
        int cap = K->capvars ? K->capvars * 2 : 16;
        K->vars = dvm_arena_grow(A, K->vars, sizeof(ir_var) * (size_t)K->capvars, sizeof(ir_var) * (size_t)cap);
        K->capvars = cap;
    }
    ir_var *v = &K->vars[K->nvars];
    memset(v, 0, sizeof *v);
    v->name = name;
    v->type = (uint8_t)type;
    v->storage = (uint8_t)storage;
    v->primal = -1;
    v->param = -1;
    v->line = ++line_no;
    return K->nvars++;
}
static void kernel(const char *name) {
    if (!A) A = dvm_arena_create();
    M = dvm_arena_alloc(A, sizeof *M);
    M->arena = A;
    M->kernels = dvm_arena_alloc(A, sizeof(ir_kernel *));
    K = dvm_arena_alloc(A, sizeof *K);
    M->kernels[0] = K;
    M->nkernels = 1;
    K->name = name;
    K->params = dvm_arena_alloc(A, sizeof(ir_param) * 16);
    K->syms = dvm_arena_alloc(A, sizeof(ir_sym) * 8);
    K->v[0].present = 1;
    K->v[0].slots = dvm_arena_alloc(A, sizeof(ir_slot) * 16);
    K->v[0].tops = dvm_arena_alloc(A, sizeof(ir_top) * 16);
    line_no = 0;
}
static int sym(const char *name) { /* returns the var */
    int v = var_new(name, DVM_T_I32, IR_SHAPESYM);
    K->vars[v].param = K->nsyms;
    K->syms[K->nsyms].name = name;
    K->syms[K->nsyms++].var = v;
    return v;
}
/* an array parameter; dims: >= 0 literal, else the symbol var (as -(var+1)) */
static int arr(const char *name, int type, int rank, ...) {
    ir_param *p = &K->params[K->nparams];
    p->name = name;
    p->is_array = 1;
    p->type = (uint8_t)type;
    p->rank = rank;
    va_list ap;
    va_start(ap, rank);
    for (int d = 0; d < rank; d++) {
        int x = va_arg(ap, int);
        if (x >= 0) p->dim[d] = x;
        else {
            int var = -x - 1;
            p->dim[d] = -(K->vars[var].param + 1);
        }
    }
    va_end(ap);
    int slot = K->v[0].nslots++;
    K->v[0].slots[slot].param = K->nparams++;
    K->v[0].slots[slot].role = DVM_ROLE_PRIMAL;
    return slot;
}
static int scal(const char *name, int type) {
    ir_param *p = &K->params[K->nparams];
    p->name = name;
    p->type = (uint8_t)type;
    p->var = var_new(name, type, IR_PARAM);
    K->vars[p->var].param = K->nparams++;
    return p->var;
}
#define SYM(v) (-(v) - 1)
static ir_expr *ex(int kind, int type) {
    ir_expr *e = dvm_arena_alloc(A, sizeof *e);
    e->kind = (uint8_t)kind;
    e->type = (uint8_t)type;
    e->line = line_no;
    e->col = 5;
    return e;
}
static ir_expr *KF(float f) {
    ir_expr *e = ex(IR_CONST, DVM_T_F32);
    e->k.f = f;
    return e;
}
static ir_expr *KI(int i) {
    ir_expr *e = ex(IR_CONST, DVM_T_I32);
    e->k.i = i;
    return e;
}
static ir_expr *V(int var) {
    ir_expr *e = ex(IR_VAR, K->vars[var].type);
    e->var = var;
    return e;
}
static int optype(int op) {
    if ((op >= DVM_OP_LTF && op <= DVM_OP_NOT)) return DVM_T_BOOL;
    if ((op >= DVM_OP_ADDI && op <= DVM_OP_ADDIK) || op == DVM_OP_F2I || op == DVM_OP_POWI) return DVM_T_I32;
    return DVM_T_F32;
}
static ir_expr *U(int op, ir_expr *a) {
    ir_expr *e = ex(IR_UN, optype(op));
    e->op = (uint16_t)op;
    e->a = a;
    return e;
}
static ir_expr *B(int op, ir_expr *a, ir_expr *b) {
    ir_expr *e = ex(IR_BIN, optype(op));
    e->op = (uint16_t)op;
    e->a = a;
    e->b = b;
    return e;
}
static ir_expr *SELX(ir_expr *c, ir_expr *a, ir_expr *b) {
    ir_expr *e = ex(IR_SELECT, a->type);
    e->a = c, e->b = a, e->c = b;
    return e;
}
static ir_expr *CONDX(ir_expr *c, ir_expr *a, ir_expr *b) {
    ir_expr *e = ex(IR_COND, a->type);
    e->a = c, e->b = a, e->c = b;
    return e;
}
static ir_expr *LD(int slot, ir_expr *i0, ir_expr *i1) {
    const ir_param *p = &K->params[K->v[0].slots[slot].param];
    ir_expr *e = ex(IR_LOAD, p->type);
    e->slot = slot;
    e->nidx = i1 ? 2 : 1;
    e->idx[0] = i0;
    e->idx[1] = i1;
    return e;
}
static ir_expr *SHP(int slot, int axis) {
    ir_expr *e = ex(IR_SHAPE, DVM_T_I32);
    e->slot = slot;
    e->axis = axis;
    return e;
}
#define ADD(a, b) B(DVM_OP_ADDF, a, b)
#define SUB(a, b) B(DVM_OP_SUBF, a, b)
#define MUL(a, b) B(DVM_OP_MULF, a, b)
#define DIV(a, b) B(DVM_OP_DIVF, a, b)
#define ADDI(a, b) B(DVM_OP_ADDI, a, b)
#define SUBI(a, b) B(DVM_OP_SUBI, a, b)
static ir_stmt *st(int kind) {
    ir_stmt *s = dvm_arena_alloc(A, sizeof *s);
    s->kind = (uint8_t)kind;
    s->line = ++line_no;
    s->col = 5;
    return s;
}
static ir_block blk(int n, ...) {
    ir_block b = {0};
    b.s = dvm_arena_alloc(A, sizeof(ir_stmt *) * (size_t)(n + 1));
    b.n = b.cap = n;
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) b.s[i] = va_arg(ap, ir_stmt *);
    va_end(ap);
    return b;
}
static ir_stmt *ASG(int var, ir_expr *e) {
    ir_stmt *s = st(IR_ASSIGN);
    s->var = var;
    s->e = e;
    return s;
}
static ir_stmt *STO(int slot, ir_expr *i0, ir_expr *i1, ir_expr *e) {
    ir_stmt *s = st(IR_STORE);
    s->slot = slot;
    s->nidx = i1 ? 2 : 1;
    s->idx[0] = i0;
    s->idx[1] = i1;
    s->e = e;
    return s;
}
static ir_stmt *ATM(int op, int slot, ir_expr *i0, ir_expr *e) {
    ir_stmt *s = STO(slot, i0, NULL, e);
    s->kind = IR_ATOMIC;
    s->op = (uint16_t)op;
    return s;
}
static ir_stmt *IFS(ir_expr *c, ir_block t, ir_block f) {
    ir_stmt *s = st(IR_IF);
    s->e = c;
    s->body = t;
    s->orelse = f;
    return s;
}
static ir_stmt *FORS(int var, ir_expr *start, ir_expr *stop, ir_block b) {
    ir_stmt *s = st(IR_FOR);
    s->var = var;
    s->e = start;
    s->e2 = stop;
    s->body = b;
    return s;
}
static ir_stmt *WHL(ir_expr *c, ir_block b) {
    ir_stmt *s = st(IR_WHILE);
    s->e = c;
    s->body = b;
    return s;
}
static ir_stmt *JMP(int kind) { return st(kind); }
static ir_block NOB(void) { return (ir_block){0}; }
static void par(int idx, ir_expr *stop, ir_block body) {
    ir_top *t = &K->v[0].tops[K->v[0].ntops++];
    memset(t, 0, sizeof *t);
    t->parallel = 1;
    t->ndim = 1;
    t->idx_var[0] = idx;
    t->stop[0] = stop;
    t->body = body;
    t->line = ++line_no;
}
static void ser(ir_stmt *s) {
    ir_top *t = &K->v[0].tops[K->v[0].ntops++];
    memset(t, 0, sizeof *t);
    t->stmt = s;
    t->line = s->line;
}
static int L(const char *n, int type) { return var_new(n, type, IR_LOCAL); }
static int G(const char *n, int type) { return var_new(n, type, IR_GLOBAL); }
static int PIDX(const char *n) { return var_new(n, DVM_T_I32, IR_PINDEX); }

/* ------------------------------------------------------------------ the evaluator */
#define MAXA 16
typedef struct arrv {
    int rank, shape[4], n;
    double *d[3]; /* primal, grad, dual (f32 in double, or i32 values) */
} arrv;
typedef struct stackv {
    double *v;
    long n, cap, cap_used;
} stackv;
typedef struct env {
    arrv a[MAXA];      /* per parameter */
    double *var;       /* per variable */
    int nvar;
    int rnd;           /* round f32 results to float */
    const ir_variant *vt;
    stackv *stk;
    int err;
    char msg[256];
    long steps;
} env;

static double rf(env *E, double x) { return E->rnd ? (double)(float)x : x; }
static arrv *slot_arr(env *E, int slot, int *role) {
    const ir_slot *s = &E->vt->slots[slot];
    *role = s->role;
    return &E->a[s->param];
}
static void fail(env *E, const char *fmt, ...) {
    if (E->err) return;
    E->err = 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(E->msg, sizeof E->msg, fmt, ap);
    va_end(ap);
}
static long flat(env *E, arrv *a, ir_expr *const *idx, int nidx, double (*ev)(env *, const ir_expr *)) {
    long f = 0;
    for (int d = 0; d < nidx; d++) {
        long i = (long)ev(E, idx[d]);
        if (i < 0 || i >= a->shape[d]) {
            fail(E, "index %ld out of bounds (axis %d, extent %d)", i, d, a->shape[d]);
            return 0;
        }
        f = f * a->shape[d] + i;
    }
    return f;
}
static double floordiv(double a, double b) { return floor(a / b); }
static double eval(env *E, const ir_expr *e) {
    if (E->err) return 0;
    switch (e->kind) {
    case IR_CONST: return e->type == DVM_T_F32 ? e->k.f : e->k.i;
    case IR_VAR: return E->var[e->var];
    case IR_LOAD: {
        int role;
        arrv *a = slot_arr(E, e->slot, &role);
        long f = flat(E, a, e->idx, e->nidx, eval);
        return a->d[role][f];
    }
    case IR_SHAPE: {
        int role;
        return slot_arr(E, e->slot, &role)->shape[e->axis];
    }
    case IR_AND: return eval(E, e->a) != 0 && eval(E, e->b) != 0;
    case IR_OR: return eval(E, e->a) != 0 || eval(E, e->b) != 0;
    case IR_SELECT: {
        double c = eval(E, e->a), x = eval(E, e->b), y = eval(E, e->c);
        return c != 0 ? x : y;
    }
    case IR_COND: return eval(E, e->a) != 0 ? eval(E, e->b) : eval(E, e->c);
    case IR_UN: {
        double a = eval(E, e->a);
        switch (e->op) {
        case DVM_OP_MOV: return a;
        case DVM_OP_NEGF: return -a;
        case DVM_OP_ABSF: return fabs(a);
        case DVM_OP_SIN: return rf(E, sin(a));
        case DVM_OP_COS: return rf(E, cos(a));
        case DVM_OP_TAN: return rf(E, tan(a));
        case DVM_OP_ASIN: return rf(E, asin(a));
        case DVM_OP_ACOS: return rf(E, acos(a));
        case DVM_OP_ATAN: return rf(E, atan(a));
        case DVM_OP_EXP: return rf(E, exp(a));
        case DVM_OP_LOG: return rf(E, log(a));
        case DVM_OP_SQRT: return rf(E, sqrt(a));
        case DVM_OP_RSQRT: return rf(E, 1 / sqrt(a));
        case DVM_OP_TANH: return rf(E, tanh(a));
        case DVM_OP_FLOOR: return floor(a);
        case DVM_OP_CEIL: return ceil(a);
        case DVM_OP_I2F: return rf(E, a);
        case DVM_OP_F2I: return a != a ? 0 : trunc(a);
        case DVM_OP_NEGI: return -a;
        case DVM_OP_ABSI: return fabs(a);
        case DVM_OP_NOT: return a == 0;
        }
        fail(E, "unknown unary op %d", e->op);
        return 0;
    }
    case IR_BIN: {
        double a = eval(E, e->a), b = eval(E, e->b);
        switch (e->op) {
        case DVM_OP_ADDF: return rf(E, a + b);
        case DVM_OP_SUBF: return rf(E, a - b);
        case DVM_OP_MULF: return rf(E, a * b);
        case DVM_OP_DIVF: return rf(E, a / b);
        case DVM_OP_MINF: return b < a ? b : a;
        case DVM_OP_MAXF: return a < b ? b : a;
        case DVM_OP_POWF: return rf(E, pow(a, b));
        case DVM_OP_ATAN2F: return rf(E, atan2(a, b));
        case DVM_OP_FFLOORDIV: return floordiv(a, b);
        case DVM_OP_FMODF: return rf(E, a - b * floordiv(a, b));
        case DVM_OP_ADDI: return a + b;
        case DVM_OP_SUBI: return a - b;
        case DVM_OP_MULI: return a * b;
        case DVM_OP_DIVI: if (b == 0) fail(E, "div by zero"); return b ? floordiv(a, b) : 0;
        case DVM_OP_MODI: if (b == 0) fail(E, "div by zero"); return b ? a - b * floordiv(a, b) : 0;
        case DVM_OP_MINI: return b < a ? b : a;
        case DVM_OP_MAXI: return a < b ? b : a;
        case DVM_OP_LTF: case DVM_OP_LTI: return a < b;
        case DVM_OP_LEF: case DVM_OP_LEI: return a <= b;
        case DVM_OP_EQF: case DVM_OP_EQI: return a == b;
        case DVM_OP_NEF: case DVM_OP_NEI: return a != b;
        }
        fail(E, "unknown binary op %d", e->op);
        return 0;
    }
    }
    fail(E, "unknown expression kind %d", e->kind);
    return 0;
}

enum { GO, BRK, CONT };
static int exec_block(env *E, const ir_block *b);
static int exec(env *E, const ir_stmt *s) {
    if (E->err) return GO;
    if (++E->steps > 50000000) {
        fail(E, "runaway");
        return GO;
    }
    switch (s->kind) {
    case IR_ASSIGN: {
        double v = eval(E, s->e);
        if (K->vars[s->var].type == DVM_T_F32) v = rf(E, v);
        E->var[s->var] = v;
        return GO;
    }
    case IR_STORE:
    case IR_ATOMIC: {
        int role;
        arrv *a = slot_arr(E, s->slot, &role);
        long f = flat(E, a, s->idx, s->nidx, eval);
        double v = eval(E, s->e);
        if (E->err) return GO;
        double *p = &a->d[role][f];
        if (s->kind == IR_STORE) *p = v;
        else if (s->op == DVM_OP_ATOMADDF || s->op == DVM_OP_ATOMADDI) *p = rf(E, *p + v);
        else if (s->op == DVM_OP_ATOMMAXF || s->op == DVM_OP_ATOMMAXI) *p = *p < v ? v : *p;
        else *p = v < *p ? v : *p;
        return GO;
    }
    case IR_UATOMIC_ADD:
        E->var[s->var] = rf(E, E->var[s->var] + eval(E, s->e));
        return GO;
    case IR_IF: return eval(E, s->e) != 0 ? exec_block(E, &s->body) : exec_block(E, &s->orelse);
    case IR_WHILE:
        while (!E->err && eval(E, s->e) != 0) {
            int r = exec_block(E, &s->body);
            if (r == BRK) break;
        }
        return GO;
    case IR_FOR: {
        long a = s->e ? (long)eval(E, s->e) : 0, b = (long)eval(E, s->e2);
        for (long i = a; i < b && !E->err; i++) {
            E->var[s->var] = (double)i;
            if (exec_block(E, &s->body) == BRK) break;
        }
        return GO;
    }
    case IR_BREAK: return BRK;
    case IR_CONTINUE: return CONT;
    case IR_ASSERT: return GO;
    case IR_PUSH: {
        stackv *k = &E->stk[s->stack];
        if (k->n >= k->cap) {
            fail(E, "adstack overflow: '%s' capacity %ld", E->vt->stacks[s->stack].name, k->cap);
            return GO;
        }
        if (k->n % 1024 == 0) k->v = realloc(k->v, sizeof(double) * (size_t)(k->n + 1024));
        k->v[k->n++] = eval(E, s->e);
        if (k->n > k->cap_used) k->cap_used = k->n;
        return GO;
    }
    case IR_POP: {
        stackv *k = &E->stk[s->stack];
        if (k->n <= 0) {
            fail(E, "adstack underflow: '%s'", E->vt->stacks[s->stack].name);
            return GO;
        }
        E->var[s->var] = k->v[--k->n];
        return GO;
    }
    }
    fail(E, "unknown statement kind %d", s->kind);
    return GO;
}
static int exec_block(env *E, const ir_block *b) {
    for (int i = 0; i < b->n && !E->err; i++) {
        int r = exec(E, b->s[i]);
        if (r != GO) return r;
    }
    return GO;
}

/* size expressions, evaluated like the sizer does (signed, sub clamped) */
static long long size_eval(env *E, const ir_size *s, long long *bound, int depth) {
    switch (s->kind) {
    case IRS_CONST: return s->value;
    case IRS_ADD: return size_eval(E, s->a, bound, depth) + size_eval(E, s->b, bound, depth);
    case IRS_SUB: {
        long long r = size_eval(E, s->a, bound, depth) - size_eval(E, s->b, bound, depth);
        return r > 0 ? r : 0;
    }
    case IRS_MUL: return size_eval(E, s->a, bound, depth) * size_eval(E, s->b, bound, depth);
    case IRS_MAX: {
        long long a = size_eval(E, s->a, bound, depth), b = size_eval(E, s->b, bound, depth);
        return a > b ? a : b;
    }
    case IRS_RANGE: {
        long long lo = size_eval(E, s->a, bound, depth), hi = size_eval(E, s->b, bound, depth), m = 0;
        for (long long v = lo; v < hi; v++) {
            bound[depth] = v;
            long long x = size_eval(E, s->body, bound, depth + 1);
            if (x > m) m = x;
        }
        return m;
    }
    case IRS_VAR: return bound[s->depth];
    case IRS_LOAD: {
        arrv *a = &E->a[K->v[0].slots[s->slot].param];
        long long f = size_eval(E, s->a, bound, depth);
        return f >= 0 && f < a->n ? (long long)a->d[0][f] : 0;
    }
    case IRS_SHAPE: return E->a[K->v[0].slots[s->slot].param].shape[s->axis];
    case IRS_PARAM: return (long long)E->var[s->var];
    default: return 256;
    }
}

/* Runs variant vk of K on the arrays in E (already set up); 0 on success. */
/* whether s stores into (or updates) a primal slot of array parameter p */
static int writes_param(const ir_stmt *s, int p) {
    if (!s) return 0;
    if ((s->kind == IR_STORE || s->kind == IR_ATOMIC) && s->slot >= 0 && s->slot < K->v[DVM_V_ADJOINT].nslots &&
        K->v[DVM_V_ADJOINT].slots[s->slot].role == DVM_ROLE_PRIMAL && K->v[DVM_V_ADJOINT].slots[s->slot].param == p)
        return 1;
    for (int i = 0; i < s->body.n; i++)
        if (writes_param(s->body.s[i], p)) return 1;
    for (int i = 0; i < s->orelse.n; i++)
        if (writes_param(s->orelse.s[i], p)) return 1;
    return 0;
}

static int run(env *E, int vk) {
    E->vt = &K->v[vk];
    E->err = 0;
    if (E->nvar < K->nvars) {
        E->var = realloc(E->var, sizeof(double) * (size_t)K->nvars);
        for (int i = E->nvar; i < K->nvars; i++) E->var[i] = 0;
        E->nvar = K->nvars;
    }
    for (int i = 0; i < K->nvars; i++)
        if (K->vars[i].storage != IR_PARAM && K->vars[i].storage != IR_SHAPESYM) E->var[i] = 0;
    /* shape symbols from the arrays */
    for (int p = 0; p < K->nparams; p++)
        for (int d = 0; d < K->params[p].rank && K->params[p].is_array; d++)
            if (K->params[p].dim[d] < 0) E->var[K->syms[-K->params[p].dim[d] - 1].var] = E->a[p].shape[d];
    E->stk = calloc((size_t)E->vt->nstacks + 1, sizeof(stackv));
    long long bound[16];
    for (int s = 0; s < E->vt->nstacks; s++) E->stk[s].cap = size_eval(E, E->vt->stacks[s].size, bound, 0);
    /* an adjoint's stages (docs/autodiff.md): phase 1 of stage s reads every array as it was
       before phase 0 of stage s; this model copies every array before every stage */
    int nstage = 0;
    for (int t = 0; t < E->vt->ntops; t++)
        if (E->vt->tops[t].stage >= nstage) nstage = E->vt->tops[t].stage + 1;
    double **saved = calloc((size_t)nstage * MAXA + 1, sizeof *saved);
    double *live[MAXA] = {0};
    int have_stage = -1;
    double **post = calloc((size_t)nstage * MAXA + 1, sizeof *post); /* what each stage left */
    for (int t = 0; t < E->vt->ntops && !E->err; t++) {
        const ir_top *tp = &E->vt->tops[t];
        const int ends = have_stage >= 0 && (tp->phase == 1 || tp->stage != have_stage);
        for (int p = 0; p < K->nparams; p++) {
            if (!K->params[p].is_array) continue;
            if (ends && !post[have_stage * MAXA + p] && !live[p]) {
                post[have_stage * MAXA + p] = malloc(sizeof(double) * (size_t)E->a[p].n + 8);
                memcpy(post[have_stage * MAXA + p], E->a[p].d[0], sizeof(double) * (size_t)E->a[p].n);
            }
            if (tp->phase == 0 && tp->stage != have_stage) {
                saved[tp->stage * MAXA + p] = malloc(sizeof(double) * (size_t)E->a[p].n + 8);
                memcpy(saved[tp->stage * MAXA + p], E->a[p].d[0], sizeof(double) * (size_t)E->a[p].n);
            }
            if (tp->phase == 1) {
                if (!live[p]) live[p] = E->a[p].d[0];
                /* serial code's reverse restores what it stored: it walks what the stage left */
                if (!tp->parallel && writes_param(tp->stmt, p) && post[tp->stage * MAXA + p])
                    E->a[p].d[0] = post[tp->stage * MAXA + p];
                else if (saved[tp->stage * MAXA + p])
                    E->a[p].d[0] = saved[tp->stage * MAXA + p];
            }
        }
        if (tp->phase == 0) have_stage = tp->stage;
        if (!tp->parallel) {
            int r = exec(E, tp->stmt);
            if (r != GO) fail(E, "jump out of a serial top");
            continue;
        }
        long a = tp->start[0] ? (long)eval(E, tp->start[0]) : 0, b = (long)eval(E, tp->stop[0]);
        for (long i = a; i < b && !E->err; i++) {
            E->var[tp->idx_var[0]] = (double)i;
            exec_block(E, &tp->body);
            for (int s = 0; s < E->vt->nstacks; s++)
                if (!E->vt->stacks[s].serial && E->stk[s].n) fail(E, "stack '%s' not empty after an iteration", E->vt->stacks[s].name);
        }
    }
    for (int p = 0; p < K->nparams; p++)
        if (live[p]) E->a[p].d[0] = live[p];
    for (int i = 0; i < nstage * MAXA; i++) free(saved[i]), free(post[i]);
    free(saved);
    free(post);
    for (int s = 0; s < E->vt->nstacks && !E->err; s++)
        if (E->stk[s].n) fail(E, "stack '%s' not empty at the end", E->vt->stacks[s].name);
    for (int s = 0; s < E->vt->nstacks; s++) free(E->stk[s].v);
    free(E->stk);
    E->stk = NULL;
    return E->err;
}

/* ------------------------------------------------------------------ the derivative checks */
typedef struct init {
    int rank, shape[2];
    const double *vals; /* NULL: filled by the test's generator */
} init;
static unsigned rng = 12345;
static double urand(void) {
    rng = rng * 1103515245u + 12345u;
    return ((rng >> 8) & 0xFFFF) / 65536.0;
}

static void env_alloc(env *E, const init *in) {
    memset(E, 0, sizeof *E);
    for (int p = 0; p < K->nparams; p++) {
        if (!K->params[p].is_array) continue;
        arrv *a = &E->a[p];
        a->rank = in[p].rank;
        a->n = 1;
        for (int d = 0; d < a->rank; d++) a->shape[d] = in[p].shape[d], a->n *= in[p].shape[d];
        for (int r = 0; r < 3; r++) a->d[r] = calloc((size_t)a->n + 1, sizeof(double));
    }
}
static void env_copy_primal(env *dst, env *src) {
    for (int p = 0; p < K->nparams; p++)
        if (K->params[p].is_array) memcpy(dst->a[p].d[0], src->a[p].d[0], sizeof(double) * (size_t)src->a[p].n);
}
static void env_free(env *E) {
    for (int p = 0; p < K->nparams; p++)
        for (int r = 0; r < 3; r++) free(E->a[p].d[r]);
    free(E->var);
}
static int is_f32arr(int p) { return K->params[p].is_array && K->params[p].type == DVM_T_F32; }

/* sum over f32 arrays of w . final, forward variant from init state in X, in double */
static double loss(env *X, double **w, double *scalars) {
    env E;
    memset(&E, 0, sizeof E);
    for (int p = 0; p < K->nparams; p++) {
        E.a[p] = X->a[p];
        if (K->params[p].is_array) {
            E.a[p].d[0] = malloc(sizeof(double) * (size_t)X->a[p].n + 8);
            memcpy(E.a[p].d[0], X->a[p].d[0], sizeof(double) * (size_t)X->a[p].n);
        }
    }
    E.var = calloc((size_t)K->nvars + 1, sizeof(double));
    E.nvar = K->nvars;
    for (int p = 0; p < K->nparams; p++)
        if (!K->params[p].is_array) E.var[K->params[p].var] = scalars[p];
    if (run(&E, DVM_V_FORWARD)) printf("forward failed: %s\n", E.msg);
    double L = 0;
    for (int p = 0; p < K->nparams; p++) {
        if (is_f32arr(p))
            for (int i = 0; i < E.a[p].n; i++) L += w[p][i] * E.a[p].d[0][i];
        if (K->params[p].is_array) free(E.a[p].d[0]);
    }
    free(E.var);
    return L;
}

/* The full check of kernel K: FD gradient vs adjoint, FD directional derivative vs tangent,
 * and <J v, w> = <v, J^T w>. gen(p, i) gives the initial value of element i of array p. */
static void check_kernel(const char *what, const init *in, double *scalars, double (*gen)(int p, int i), double tol) {
    env X;
    env_alloc(&X, in);
    for (int p = 0; p < K->nparams; p++)
        if (K->params[p].is_array)
            for (int i = 0; i < X.a[p].n; i++) X.a[p].d[0][i] = in[p].vals ? in[p].vals[i] : gen(p, i);
    double *w[MAXA] = {0}, *v[MAXA] = {0};
    for (int p = 0; p < K->nparams; p++) {
        if (!is_f32arr(p)) continue;
        w[p] = malloc(sizeof(double) * (size_t)X.a[p].n + 8);
        v[p] = malloc(sizeof(double) * (size_t)X.a[p].n + 8);
        for (int i = 0; i < X.a[p].n; i++) w[p][i] = 0.5 + urand(), v[p][i] = urand() - 0.5;
    }
    /* adjoint: forward, then the adjoint with seeds w */
    env R;
    env_alloc(&R, in);
    env_copy_primal(&R, &X);
    R.var = calloc((size_t)K->nvars + 1, sizeof(double));
    R.nvar = K->nvars;
    for (int p = 0; p < K->nparams; p++)
        if (!K->params[p].is_array) R.var[K->params[p].var] = scalars[p];
    /* the adjoint variant runs the forward itself (its phase 0) */
    for (int p = 0; p < K->nparams; p++)
        if (is_f32arr(p)) memcpy(R.a[p].d[1], w[p], sizeof(double) * (size_t)R.a[p].n);
    int bad = run(&R, DVM_V_ADJOINT);
    CHECK(!bad, "%s: adjoint failed: %s", what, R.msg);
    /* tangent */
    env T;
    env_alloc(&T, in);
    env_copy_primal(&T, &X);
    T.var = calloc((size_t)K->nvars + 1, sizeof(double));
    T.nvar = K->nvars;
    for (int p = 0; p < K->nparams; p++)
        if (!K->params[p].is_array) T.var[K->params[p].var] = scalars[p];
    for (int p = 0; p < K->nparams; p++)
        if (is_f32arr(p)) memcpy(T.a[p].d[2], v[p], sizeof(double) * (size_t)T.a[p].n);
    bad = run(&T, DVM_V_TANGENT);
    CHECK(!bad, "%s: tangent failed: %s", what, T.msg);
    /* the tangent's primal equals the forward's */
    for (int p = 0; p < K->nparams; p++)
        for (int i = 0; K->params[p].is_array && i < X.a[p].n; i++)
            CHECK(fabs(T.a[p].d[0][i] - R.a[p].d[0][i]) <= 1e-12 * (1 + fabs(R.a[p].d[0][i])),
                  "%s: tangent primal %s[%d] = %g, forward gave %g", what, K->params[p].name, i, T.a[p].d[0][i], R.a[p].d[0][i]);
    /* finite differences, element by element */
    int nbad = 0;
    double jv_w = 0, v_jtw = 0;
    for (int p = 0; p < K->nparams; p++) {
        if (!is_f32arr(p)) continue;
        for (int i = 0; i < X.a[p].n; i++) {
            double x0 = X.a[p].d[0][i], h = 1e-6 * (1 + fabs(x0));
            X.a[p].d[0][i] = x0 + h;
            double lp = loss(&X, w, scalars);
            X.a[p].d[0][i] = x0 - h;
            double lm = loss(&X, w, scalars);
            X.a[p].d[0][i] = x0;
            double fd = (lp - lm) / (2 * h), ad = R.a[p].d[1][i];
            if (fabs(fd - ad) > tol * (1 + fabs(fd)) && nbad++ < 5)
                CHECK(0, "%s: d/d%s[%d]: adjoint %.9g, finite differences %.9g", what, K->params[p].name, i, ad, fd);
            v_jtw += v[p][i] * ad;
        }
    }
    /* directional derivative of each final f32 value vs the tangent */
    for (int q = 0; q < K->nparams; q++) {
        if (!is_f32arr(q)) continue;
        for (int j = 0; j < X.a[q].n; j++) {
            double *e1[MAXA] = {0};
            for (int p = 0; p < K->nparams; p++)
                if (is_f32arr(p)) e1[p] = calloc((size_t)X.a[p].n + 1, sizeof(double));
            e1[q][j] = 1;
            double h = 1e-6;
            for (int p = 0; p < K->nparams; p++)
                for (int i = 0; is_f32arr(p) && i < X.a[p].n; i++) X.a[p].d[0][i] += h * v[p][i];
            double lp = loss(&X, e1, scalars);
            for (int p = 0; p < K->nparams; p++)
                for (int i = 0; is_f32arr(p) && i < X.a[p].n; i++) X.a[p].d[0][i] -= 2 * h * v[p][i];
            double lm = loss(&X, e1, scalars);
            for (int p = 0; p < K->nparams; p++)
                for (int i = 0; is_f32arr(p) && i < X.a[p].n; i++) X.a[p].d[0][i] += h * v[p][i];
            double fd = (lp - lm) / (2 * h), td = T.a[q].d[2][j];
            if (fabs(fd - td) > tol * (1 + fabs(fd)) && nbad++ < 10)
                CHECK(0, "%s: tangent of %s[%d]: %.9g, finite differences %.9g", what, K->params[q].name, j, td, fd);
            jv_w += td * w[q][j];
            for (int p = 0; p < K->nparams; p++) free(e1[p]);
        }
    }
    CHECK(fabs(jv_w - v_jtw) <= 1e-9 * (1 + fabs(jv_w)), "%s: <Jv, w> = %.12g but <v, J^T w> = %.12g", what, jv_w, v_jtw);
    for (int p = 0; p < K->nparams; p++) free(w[p]), free(v[p]);
    env_free(&X);
    env_free(&R);
    env_free(&T);
}

/* ------------------------------------------------------------------ size expressions as text */
static void size_str(const ir_size *s, char *buf, size_t cap) {
    char a[512], b[512], c[512];
    switch (s->kind) {
    case IRS_CONST: snprintf(buf, cap, "%lld", (long long)s->value); return;
    case IRS_VAR: snprintf(buf, cap, "v%d", s->depth); return;
    case IRS_PARAM: snprintf(buf, cap, "%s", K->vars[s->var].name); return;
    case IRS_SHAPE: snprintf(buf, cap, "%s.shape[%d]", K->params[K->v[0].slots[s->slot].param].name, s->axis); return;
    case IRS_DEFAULT: snprintf(buf, cap, "default"); return;
    case IRS_LOAD:
        size_str(s->a, a, sizeof a);
        snprintf(buf, cap, "%s[%s]", K->params[K->v[0].slots[s->slot].param].name, a);
        return;
    case IRS_RANGE:
        size_str(s->a, a, sizeof a);
        size_str(s->b, b, sizeof b);
        size_str(s->body, c, sizeof c);
        snprintf(buf, cap, "max(v%d in [%s, %s): %s)", s->depth, a, b, c);
        return;
    default: {
        static const char *ops[] = {"", "+", "-", "*", "max"};
        size_str(s->a, a, sizeof a);
        size_str(s->b, b, sizeof b);
        if (s->kind == IRS_MAX) snprintf(buf, cap, "max(%s, %s)", a, b);
        else snprintf(buf, cap, "(%s %s %s)", a, ops[s->kind], b);
    }
    }
}
/* the size of the adjoint's stack named `name` (first match) */
static void check_size(const char *name, const char *expect) {
    const ir_variant *v = &K->v[DVM_V_ADJOINT];
    for (int s = 0; s < v->nstacks; s++) {
        if (strncmp(v->stacks[s].name, name, strlen(name))) continue;
        char buf[2048];
        size_str(v->stacks[s].size, buf, sizeof buf);
        CHECK(!strcmp(buf, expect), "kernel %s: size of stack '%s': expected %s, got %s", K->name, name, expect, buf);
        return;
    }
    CHECK(0, "kernel %s: no stack named '%s'", K->name, name);
}
static void check_no_stack(const char *name) {
    const ir_variant *v = &K->v[DVM_V_ADJOINT];
    for (int s = 0; s < v->nstacks; s++) CHECK(strcmp(v->stacks[s].name, name), "kernel %s: unexpected stack '%s'", K->name, name);
}
static void differentiate(void) {
    dvm_diags d;
    dvm_diags_init(&d, "t.dvk", "", 0);
    int rc = dvm_autodiff(M, &d);
    char *msg = dvm_diags_take(&d);
    CHECK(rc == 0 && !d.nerrors, "kernel %s: dvm_autodiff failed: %s", K->name, msg);
    dvm_diags_free(&d);
    free(msg);
}

/* ------------------------------------------------------------------ kernels */
static int steps_max = 5;
static double gen_default(int p, int i) {
    if (K->params[p].type == DVM_T_I32) return (double)((i * 7 + 3) % steps_max);
    return 0.3 + 0.5 * urand();
}

/* v = x[i]; for _ in range(steps[i]): v = sin(v) * a[i] + v * v * 0.25; y[0] += v */
static void test_dynamic_recurrence(void) {
    kernel("recurrence");
    int n = sym("n");
    int x = arr("x", DVM_T_F32, 1, SYM(n)), steps = arr("steps", DVM_T_I32, 1, SYM(n)), a = arr("a", DVM_T_F32, 1, SYM(n)),
        y = arr("y", DVM_T_F32, 1, 1);
    int i = PIDX("i"), v = L("v", DVM_T_F32), j = L("j", DVM_T_I32);
    par(i, V(n),
        blk(3, ASG(v, LD(x, V(i), NULL)),
            FORS(j, NULL, LD(steps, V(i), NULL),
                 blk(1, ASG(v, ADD(MUL(U(DVM_OP_SIN, V(v)), LD(a, V(i), NULL)), MUL(MUL(V(v), V(v)), KF(0.25f)))))),
            ATM(DVM_OP_ATOMADDF, y, KI(0), V(v))));
    differentiate();
    check_size("v", "max(v0 in [0, n): steps[v0])");
    check_size("trip count of the loop", "1");
    check_no_stack("j");
    init in[] = {{1, {6}, NULL}, {1, {6}, NULL}, {1, {6}, NULL}, {1, {1}, NULL}};
    double sc[8] = {0};
    check_kernel("recurrence", in, sc, gen_default, 1e-6);
}

/* nested dynamic loops, inner bound read at the outer index; a triangular loop; a value
 * defined before the loop and used after */
static void test_nested_triangular(void) {
    kernel("nested");
    int n = sym("n");
    int x = arr("x", DVM_T_F32, 1, SYM(n)), steps = arr("steps", DVM_T_I32, 1, SYM(n)),
        inner = arr("inner", DVM_T_I32, 2, SYM(n), 5), y = arr("y", DVM_T_F32, 1, SYM(n));
    int i = PIDX("i"), v = L("v", DVM_T_F32), j = L("j", DVM_T_I32), q = L("q", DVM_T_I32), w = L("w", DVM_T_F32),
        r = L("r", DVM_T_I32), base = L("base", DVM_T_F32);
    par(i, V(n),
        blk(5, ASG(base, MUL(LD(x, V(i), NULL), KF(0.5f))), ASG(v, LD(x, V(i), NULL)),
            FORS(j, NULL, LD(steps, V(i), NULL),
                 blk(2, FORS(q, NULL, LD(inner, V(i), V(j)),
                             blk(1, ASG(v, ADD(MUL(V(v), KF(0.9f)), MUL(U(DVM_OP_COS, V(v)), KF(0.1f)))))),
                     FORS(r, NULL, V(j), blk(1, ASG(v, ADD(V(v), MUL(V(base), MUL(V(v), KF(0.01f))))))))),
            ASG(w, MUL(V(v), V(base))), STO(y, V(i), NULL, V(w))));
    differentiate();
    /* base is read by the reverse sweep but assigned once: no stack */
    check_no_stack("base");
    init in[] = {{1, {5}, NULL}, {1, {5}, NULL}, {2, {5, 5}, NULL}, {1, {5}, NULL}};
    double sc[8] = {0};
    check_kernel("nested", in, sc, gen_default, 1e-6);
    /* sum over j < steps[i] of (inner[i, j] + j) <= steps[i] * max over j of (inner[i, j] + j) */
    check_size("v", "max(v0 in [0, n): (steps[v0] * max(v1 in [0, steps[v0]): (inner[((v0 * inner.shape[1]) + v1)] + v1))))");
}


/* Newton for the cube root to a tolerance: a while loop with a data-dependent exit */
static void test_while_newton(void) {
    kernel("newton");
    int n = sym("n");
    int x = arr("x", DVM_T_F32, 1, SYM(n)), y = arr("y", DVM_T_F32, 1, SYM(n));
    int i = PIDX("i"), z = L("z", DVM_T_F32), t = L("t", DVM_T_F32), it = L("it", DVM_T_I32);
    /* z = 1; it = 0; while abs(z*z*z - t) > 1e-13 and it < 60: z = z - (z*z*z - t) / (3*z*z); it += 1 */
    ir_expr *res = SUB(MUL(MUL(V(z), V(z)), V(z)), V(t));
    ir_expr *cond = ex(IR_AND, DVM_T_BOOL);
    cond->a = B(DVM_OP_LTF, KF(1e-13f), U(DVM_OP_ABSF, res));
    cond->b = B(DVM_OP_LTI, V(it), KI(60));
    par(i, V(n),
        blk(5, ASG(t, MUL(LD(x, V(i), NULL), KF(2.0f))), ASG(z, KF(1.0f)), ASG(it, KI(0)),
            WHL(cond, blk(2, ASG(z, SUB(V(z), DIV(SUB(MUL(MUL(V(z), V(z)), V(z)), V(t)), MUL(KF(3.0f), MUL(V(z), V(z)))))),
                          ASG(it, ADDI(V(it), KI(1))))),
            STO(y, V(i), NULL, MUL(V(z), V(t)))));
    differentiate();
    check_size("z", "default");
    check_size("trip count of the loop", "1");
    check_no_stack("it");
    init in[] = {{1, {4}, NULL}, {1, {4}, NULL}};
    double sc[8] = {0};
    check_kernel("newton", in, sc, gen_default, 1e-5);
}

/* break and continue in a dynamic loop; several carried accumulators with i32 and bool state;
 * if/else and min/max on carried values */
static void test_break_continue(void) {
    kernel("jumps");
    int n = sym("n");
    int x = arr("x", DVM_T_F32, 1, SYM(n)), steps = arr("steps", DVM_T_I32, 1, SYM(n)), y = arr("y", DVM_T_F32, 1, SYM(n)),
        z = arr("z", DVM_T_F32, 1, SYM(n));
    int i = PIDX("i"), v = L("v", DVM_T_F32), u = L("u", DVM_T_F32), j = L("j", DVM_T_I32), cnt = L("cnt", DVM_T_I32),
        flip = L("flip", DVM_T_BOOL), k = L("k", DVM_T_I32);
    ir_block body = blk(6,
        IFS(B(DVM_OP_EQI, B(DVM_OP_MODI, V(j), KI(3)), KI(1)), blk(2, ASG(u, ADD(V(u), KF(0.125f))), JMP(IR_CONTINUE)), NOB()),
        ASG(flip, U(DVM_OP_NOT, V(flip))),
        IFS(V(flip), blk(1, ASG(v, B(DVM_OP_MINF, MUL(V(v), KF(1.3f)), ADD(V(u), KF(0.7f))))),
            blk(1, ASG(u, B(DVM_OP_MAXF, MUL(V(u), V(v)), MUL(V(v), KF(0.2f)))))),
        ASG(cnt, ADDI(V(cnt), U(DVM_OP_F2I, MUL(V(v), KF(3.0f))))),
        IFS(B(DVM_OP_LTI, KI(7), V(cnt)), blk(1, JMP(IR_BREAK)), NOB()),
        FORS(k, NULL, V(cnt), blk(1, ASG(v, ADD(V(v), MUL(KF(0.01f), U(DVM_OP_SIN, V(u))))))));
    par(i, V(n),
        blk(6, ASG(v, LD(x, V(i), NULL)), ASG(u, MUL(LD(x, V(i), NULL), LD(x, V(i), NULL))), ASG(cnt, KI(0)),
            ASG(flip, ex(IR_CONST, DVM_T_BOOL)), FORS(j, NULL, LD(steps, V(i), NULL), body),
            STO(y, V(i), NULL, ADD(MUL(V(v), V(u)), U(DVM_OP_I2F, V(cnt))))));
    par(PIDX("i2"), V(n), blk(1, ATM(DVM_OP_ATOMADDF, z, KI(0), MUL(LD(x, KI(1), NULL), LD(x, KI(2), NULL)))));
    differentiate();
    init in[] = {{1, {5}, NULL}, {1, {5}, NULL}, {1, {5}, NULL}, {1, {5}, NULL}};
    double sc[8] = {0};
    steps_max = 9;
    check_kernel("break/continue", in, sc, gen_default, 1e-6);
    steps_max = 5;
}

/* every differentiable opcode (and the zero-derivative ones) once, on safe domains */
static void test_every_op(void) {
    kernel("ops");
    int x = arr("x", DVM_T_F32, 1, 4), y = arr("y", DVM_T_F32, 1, 40);
    int i = PIDX("i"), s = scal("s", DVM_T_F32), ki = scal("k", DVM_T_I32);
    ir_expr *a = LD(x, KI(0), NULL), *b = LD(x, KI(1), NULL), *c = LD(x, KI(2), NULL), *d = LD(x, KI(3), NULL);
    ir_expr *e[40];
    int ne = 0;
    e[ne++] = U(DVM_OP_MOV, a);
    e[ne++] = ADD(a, b);
    e[ne++] = SUB(a, b);
    e[ne++] = MUL(a, b);
    e[ne++] = DIV(a, b);
    e[ne++] = B(DVM_OP_MINF, a, b);
    e[ne++] = B(DVM_OP_MAXF, a, b);
    e[ne++] = B(DVM_OP_POWF, a, b);
    e[ne++] = B(DVM_OP_ATAN2F, a, b);
    e[ne++] = U(DVM_OP_NEGF, a);
    e[ne++] = U(DVM_OP_ABSF, SUB(a, KF(2.0f)));
    e[ne++] = U(DVM_OP_SIN, a);
    e[ne++] = U(DVM_OP_COS, a);
    e[ne++] = U(DVM_OP_TAN, a);
    e[ne++] = U(DVM_OP_ASIN, c);
    e[ne++] = U(DVM_OP_ACOS, c);
    e[ne++] = U(DVM_OP_ATAN, a);
    e[ne++] = U(DVM_OP_EXP, a);
    e[ne++] = U(DVM_OP_LOG, a);
    e[ne++] = U(DVM_OP_SQRT, a);
    e[ne++] = U(DVM_OP_RSQRT, a);
    e[ne++] = U(DVM_OP_TANH, a);
    e[ne++] = MUL(U(DVM_OP_FLOOR, MUL(a, KF(10.0f))), a);
    e[ne++] = MUL(U(DVM_OP_CEIL, MUL(b, KF(10.0f))), b);
    e[ne++] = MUL(U(DVM_OP_I2F, U(DVM_OP_F2I, MUL(a, KF(10.0f)))), b);
    e[ne++] = SELX(B(DVM_OP_LTF, a, b), MUL(a, c), MUL(b, d));
    e[ne++] = CONDX(B(DVM_OP_LTF, b, a), MUL(a, c), MUL(b, d));
    e[ne++] = MUL(B(DVM_OP_FFLOORDIV, a, KF(0.1f)), b);
    /* the language gives % zero derivative (spec), which finite differences do not see */
    e[ne++] = ADD(U(DVM_OP_FLOOR, B(DVM_OP_FMODF, a, KF(0.1f))), MUL(b, b));
    e[ne++] = MUL(V(s), MUL(a, U(DVM_OP_I2F, V(ki))));
    e[ne++] = MUL(U(DVM_OP_I2F, SHP(x, 0)), d);
    e[ne++] = B(DVM_OP_POWF, KF(2.0f), d);
    e[ne++] = B(DVM_OP_POWF, d, KF(3.0f));
    ir_block bl = {0};
    bl.s = dvm_arena_alloc(A, sizeof(ir_stmt *) * 64);
    for (int q = 0; q < ne; q++) bl.s[bl.n++] = STO(y, KI(q), NULL, e[q]);
    bl.cap = bl.n;
    par(i, KI(1), bl);
    differentiate();
    static const double xs[4] = {0.73, 1.37, 0.41, 0.93}; /* away from floor/ceil steps */
    init in[] = {{1, {4}, xs}, {1, {40}, NULL}};
    double sc[8] = {0};
    sc[2] = 1.5; /* s */
    sc[3] = 3;   /* k */
    check_kernel("every op", in, sc, gen_default, 1e-6);
}

/* top-level (IR_GLOBAL) variables: computed in serial code, read by parallel loops,
 * overwritten in between */
static void test_globals(void) {
    kernel("globals");
    int n = sym("n");
    int x = arr("x", DVM_T_F32, 1, SYM(n)), y = arr("y", DVM_T_F32, 1, SYM(n)), z = arr("z", DVM_T_F32, 1, 1);
    int g = G("g", DVM_T_F32), c = G("c", DVM_T_I32), i = PIDX("i"), i2 = PIDX("i2"), t = L("t", DVM_T_F32);
    ser(ASG(g, MUL(LD(x, KI(0), NULL), LD(x, KI(1), NULL))));
    ser(ASG(c, KI(0)));
    ser(WHL(B(DVM_OP_LTI, V(c), KI(3)), blk(2, ASG(g, ADD(U(DVM_OP_SIN, V(g)), MUL(V(g), KF(0.5f)))), ASG(c, ADDI(V(c), KI(1))))));
    par(i, V(n), blk(2, ASG(t, MUL(LD(x, V(i), NULL), V(g))), STO(y, V(i), NULL, MUL(V(t), V(t)))));
    ser(ASG(g, MUL(V(g), V(g))));
    par(i2, V(n), blk(1, ATM(DVM_OP_ATOMADDF, z, KI(0), MUL(V(g), LD(x, V(i2), NULL)))));
    ser(ATM(DVM_OP_ATOMADDF, z, KI(0), U(DVM_OP_EXP, MUL(V(g), KF(0.1f)))));
    differentiate();
    init in[] = {{1, {4}, NULL}, {1, {4}, NULL}, {1, {1}, NULL}};
    double sc[8] = {0};
    check_kernel("globals", in, sc, gen_default, 1e-6);
    for (int s = 0; s < K->v[DVM_V_ADJOINT].nstacks; s++)
        CHECK(K->v[DVM_V_ADJOINT].stacks[s].serial, "globals: stack '%s' should be serial", K->v[DVM_V_ADJOINT].stacks[s].name);
}

/* a for loop with break whose bound is read at the parallel index keeps its sizing */
static void test_break_sizing(void) {
    kernel("breaksize");
    int n = sym("n");
    int x = arr("x", DVM_T_F32, 1, SYM(n)), steps = arr("steps", DVM_T_I32, 1, SYM(n)), y = arr("y", DVM_T_F32, 1, SYM(n));
    int i = PIDX("i"), v = L("v", DVM_T_F32), j = L("j", DVM_T_I32);
    par(i, V(n),
        blk(3, ASG(v, LD(x, V(i), NULL)),
            FORS(j, KI(1), ADDI(LD(steps, V(i), NULL), KI(1)),
                 blk(2, ASG(v, MUL(V(v), ADD(V(v), KF(0.5f)))), IFS(B(DVM_OP_LTF, KF(3.0f), V(v)), blk(1, JMP(IR_BREAK)), NOB()))),
            STO(y, V(i), NULL, V(v))));
    differentiate();
    check_size("v", "max(v0 in [0, n): steps[v0])"); /* (steps + 1) - 1, folded */
    init in[] = {{1, {5}, NULL}, {1, {5}, NULL}, {1, {5}, NULL}};
    double sc[8] = {0};
    check_kernel("break sizing", in, sc, gen_default, 1e-6);
}

/* serial top-level code that reads back what it stored: the reverse restores each element
   from a copy of what the statement left (autodiff.c replay_store, vm/launch.c) */
static void test_serial_store_read(void) {
    kernel("serialrec");
    int n = sym("n");
    int x = arr("x", DVM_T_F32, 1, SYM(n)), y = arr("y", DVM_T_F32, 1, SYM(n));
    int c = G("c", DVM_T_I32);
    ser(ASG(c, KI(1)));
    ser(WHL(B(DVM_OP_LTI, V(c), V(n)),
            blk(2, STO(y, V(c), NULL, ADD(MUL(U(DVM_OP_SIN, LD(y, SUBI(V(c), KI(1)), NULL)), LD(x, V(c), NULL)), LD(y, V(c), NULL))),
                ASG(c, ADDI(V(c), KI(1))))));
    differentiate();
    CHECK(K->v[DVM_V_ADJOINT].present && !K->no_adjoint, "serial store-read: no adjoint");
    init in[] = {{1, {5}, NULL}, {1, {5}, NULL}};
    double sc[8] = {0};
    check_kernel("serial store-read", in, sc, gen_default, 1e-6);
}

/* ordered stages: an accumulator read by the next statement, a scratch array written by one
   loop and read by the next, an array updated in place twice and a serial statement between:
   each statement's reverse sees the arrays as they were before it (the model in run()) */
static void test_stages(void) {
    kernel("stages");
    int n = sym("n");
    int x = arr("x", DVM_T_F32, 1, SYM(n)), acc = arr("acc", DVM_T_F32, 1, 1), tmp = arr("tmp", DVM_T_F32, 1, SYM(n)),
        u = arr("u", DVM_T_F32, 1, SYM(n)), out = arr("out", DVM_T_F32, 1, SYM(n));
    int i1 = PIDX("i1"), i2 = PIDX("i2"), i3 = PIDX("i3"), i4 = PIDX("i4");
    par(i1, V(n), blk(1, ATM(DVM_OP_ATOMADDF, acc, KI(0), MUL(LD(x, V(i1), NULL), LD(u, V(i1), NULL)))));
    par(i2, V(n), blk(2, STO(tmp, V(i2), NULL, U(DVM_OP_SIN, MUL(LD(acc, KI(0), NULL), LD(x, V(i2), NULL)))),
                      STO(u, V(i2), NULL, ADD(MUL(U(DVM_OP_SIN, LD(u, V(i2), NULL)), KF(0.9f)), LD(x, V(i2), NULL)))));
    ser(STO(acc, KI(0), NULL, MUL(LD(acc, KI(0), NULL), LD(acc, KI(0), NULL))));
    par(i3, V(n), blk(1, STO(u, V(i3), NULL, ADD(MUL(U(DVM_OP_SIN, LD(u, V(i3), NULL)), LD(tmp, V(i3), NULL)), LD(x, V(i3), NULL)))));
    par(i4, V(n), blk(1, STO(out, V(i4), NULL, MUL(LD(acc, KI(0), NULL), LD(u, V(i4), NULL)))));
    differentiate();
    CHECK(K->v[DVM_V_ADJOINT].present && !K->no_adjoint, "stages: no adjoint: %s", K->no_adjoint ? K->no_adjoint : "?");
    init in[] = {{1, {4}, NULL}, {1, {1}, NULL}, {1, {4}, NULL}, {1, {4}, NULL}, {1, {4}, NULL}};
    double sc[8] = {0};
    check_kernel("stages", in, sc, gen_default, 1e-6);
}

/* a recurrence through an array within one parallel iteration: the reverse replays the
   stores and restores them (autodiff.c replay_store) */
static void test_recurrence_in_place(void) {
    kernel("rec");
    int n = sym("n"), m = sym("m");
    int x = arr("x", DVM_T_F32, 2, SYM(n), SYM(m)), y = arr("y", DVM_T_F32, 2, SYM(n), SYM(m));
    int i = PIDX("i"), j = L("j", DVM_T_I32);
    par(i, V(n), blk(1, FORS(j, KI(1), V(m), blk(1, STO(y, V(i), V(j), ADD(U(DVM_OP_SIN, MUL(LD(y, V(i), SUBI(V(j), KI(1))),
                                                                                         LD(x, V(i), V(j)))),
                                                                     LD(y, V(i), V(j))))))));
    differentiate();
    CHECK(K->v[DVM_V_ADJOINT].present && !K->no_adjoint, "rec: no adjoint: %s", K->no_adjoint ? K->no_adjoint : "?");
    init in[] = {{2, {3, 5}, NULL}, {2, {3, 5}, NULL}};
    double sc[8] = {0};
    check_kernel("recurrence in place", in, sc, gen_default, 1e-6);
}

int main(void) {
    test_dynamic_recurrence();
    test_nested_triangular();
    test_while_newton();
    test_break_continue();
    test_every_op();
    test_globals();
    test_break_sizing();
    test_serial_store_read();
    test_stages();
    test_recurrence_in_place();
    if (fails) {
        printf("%d check(s) failed\n", fails);
        return 1;
    }
    printf("autodiff: all checks passed\n");
    return 0;
}
