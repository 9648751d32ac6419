/* partition.c: a parallel loop whose body is one `if` that tests its indices against bounds
 * that do not change during the loop, split into the box where the test holds and the boxes
 * around it (loop partitioning, index-set splitting).
 *
 *     for i, j in ndrange(n, m):
 *         if i > 0 and i < n - 1 and j > 0 and j < m - 1:   # the box [1, n-1) x [1, m-1)
 *             A
 *         else:
 *             B
 *
 * becomes a serial step that computes the box's bounds into uniform words, the loop over
 * the box running A with no test, and loops over the rest of the space (up to two boxes per
 * tested dimension: below and above the box in that dimension, within the box's range in
 * the dimensions before it) running B with no test. Without an `else` only the box runs.
 * Each point runs the same statements as before: the test is a conjunction of comparisons
 * `index OP bound` (`<`, `<=`, `>`, `>=`, either side, chained or joined by `and`), each bound
 * an i32 expression of constants, scalar parameters, shape symbols, globals of the serial
 * code and array extents with + - * min max abs (nothing that can fail or that the loop can
 * change), so evaluating it once before the loop gives every point's answer. The loops'
 * iterations run in no defined order (docs/language.md), so running them as several loops
 * one after the other is one of the allowed orders.
 *
 * What it buys: a loop with no branch runs the GPU's plain lanes with no bounds-test nodes
 * and fewer registers (the 5-point stencil 0.660 -> 0.519 ms on an H200), and the CPU
 * interpreter skips the tests. What it costs: a serial task and up to 2 x dims more tasks per
 * partitioned loop (a launch each on a GPU, a few microseconds).
 *
 * Runs on the forward code before autodiff, so the adjoint and the tangent of each piece are
 * branch-free too (autodiff's check of reads after stores sees the same statements in the same
 * order: the if's, then the else's). Not for a body with a loop inside: an adstack's size
 * formula over the loop's index range would then be over the pieces' computed bounds, which
 * the sizer does not read. Only with the optimizer (the no_opt option turns both off). */
#include "compiler/compile.h"
#include <stdlib.h>
#include <string.h>

#define MAX_ATOMS 16

typedef struct atom {
    int dim;       /* which index */
    int upper;     /* 1: index < e (or <= e), 0: e < index (or e <= index) */
    int inclusive; /* <= rather than < */
    ir_expr *e;
} atom;

typedef struct pctx {
    dvm_arena *a;
    ir_kernel *k;
    int line, col;
    int oom;
} pctx;

/* An i32 expression the loop cannot change and whose evaluation cannot fail. */
static int invariant(const ir_kernel *k, const ir_expr *e) {
    if (!e || e->type != DVM_T_I32) return 0;
    switch (e->kind) {
    case IR_CONST:
    case IR_SHAPE:
        return 1;
    case IR_VAR: {
        if (e->var < 0 || e->var >= k->nvars) return 0;
        const int st = k->vars[e->var].storage;
        return st == IR_PARAM || st == IR_SHAPESYM || st == IR_GLOBAL;
    }
    case IR_UN:
        return (e->op == DVM_OP_NEGI || e->op == DVM_OP_ABSI) && invariant(k, e->a);
    case IR_BIN:
        return (e->op == DVM_OP_ADDI || e->op == DVM_OP_SUBI || e->op == DVM_OP_MULI || e->op == DVM_OP_MINI ||
                e->op == DVM_OP_MAXI) &&
               invariant(k, e->a) && invariant(k, e->b);
    default:
        return 0;
    }
}

/* Whether a block has a loop in it (at any depth). */
static int has_loop(const ir_block *b) {
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->s[i];
        if (s->kind == IR_FOR || s->kind == IR_WHILE) return 1;
        if (s->kind == IR_IF && (has_loop(&s->body) || has_loop(&s->orelse))) return 1;
    }
    return 0;
}

/* The dimension whose index e is, or -1. */
static int index_dim(const ir_top *top, const ir_expr *e) {
    if (!e || e->kind != IR_VAR) return -1;
    for (int d = 0; d < top->ndim; d++)
        if (top->idx_var[d] == e->var) return d;
    return -1;
}

/* Collects the atoms of a conjunction; 0 when e is not one of the form above. */
static int atoms_of(const ir_kernel *k, const ir_top *top, const ir_expr *e, atom *at, int *n) {
    if (!e) return 0;
    if (e->kind == IR_AND) return atoms_of(k, top, e->a, at, n) && atoms_of(k, top, e->b, at, n);
    if (e->kind != IR_BIN || (e->op != DVM_OP_LTI && e->op != DVM_OP_LEI) || *n >= MAX_ATOMS) return 0;
    const int da = index_dim(top, e->a), db = index_dim(top, e->b);
    atom x = {.inclusive = e->op == DVM_OP_LEI};
    if (da >= 0 && db < 0 && invariant(k, e->b)) /* index < e */
        x.dim = da, x.upper = 1, x.e = e->b;
    else if (db >= 0 && da < 0 && invariant(k, e->a)) /* e < index */
        x.dim = db, x.upper = 0, x.e = e->a;
    else
        return 0;
    at[(*n)++] = x;
    return 1;
}

/* ---- building expressions and statements ---- */

static ir_expr *ex(pctx *c, int kind, int type) {
    ir_expr *e = ir_expr_new(c->a, kind, type, c->line, c->col);
    if (!e) c->oom = 1;
    return e;
}
static ir_expr *konst(pctx *c, int32_t v) {
    ir_expr *e = ex(c, IR_CONST, DVM_T_I32);
    if (e) e->k.i = v;
    return e;
}
static ir_expr *var(pctx *c, int v) {
    ir_expr *e = ex(c, IR_VAR, c->k->vars[v].type);
    if (e) e->var = v;
    return e;
}
/* op(a, b), folded when both are constants (the bounds' common case: `i > 0`) */
static ir_expr *bin(pctx *c, int op, int type, ir_expr *a, ir_expr *b) {
    if (!a || !b) return NULL;
    if (a->kind == IR_CONST && b->kind == IR_CONST) {
        const int32_t x = a->k.i, y = b->k.i;
        int32_t v;
        switch (op) {
        case DVM_OP_LTI: v = x < y; break;
        case DVM_OP_LEI: v = x <= y; break;
        case DVM_OP_ADDI: v = (int32_t)((uint32_t)x + (uint32_t)y); break;
        case DVM_OP_MINI: v = x < y ? x : y; break;
        case DVM_OP_MAXI: v = x > y ? x : y; break;
        default: goto keep;
        }
        ir_expr *k = ex(c, IR_CONST, type);
        if (k) k->k.i = v;
        return k;
    }
keep:;
    ir_expr *e = ex(c, IR_BIN, type);
    if (e) e->op = (uint16_t)op, e->a = a, e->b = b;
    return e;
}
static ir_expr *sel(pctx *c, ir_expr *cond, ir_expr *a, ir_expr *b) {
    if (!cond || !a || !b) return NULL;
    if (cond->kind == IR_CONST) return cond->k.i ? a : b;
    ir_expr *e = ex(c, IR_SELECT, DVM_T_I32);
    if (e) e->a = cond, e->b = a, e->c = b;
    return e;
}

/* A new i32 global of the serial code set to e (a serial top appended to *out); returns it,
 * or -1. */
static int global(pctx *c, ir_top **out, int *nout, const char *name, ir_expr *e) {
    if (!e) return -1;
    int v = ir_var_new(c->a, c->k, name, DVM_T_I32, IR_GLOBAL, c->line, c->col);
    ir_stmt *s = ir_stmt_new(c->a, IR_ASSIGN, c->line, c->col);
    if (v < 0 || !s) {
        c->oom = 1;
        return -1;
    }
    s->var = v;
    s->e = e;
    ir_top *t = &(*out)[(*nout)++];
    memset(t, 0, sizeof *t);
    t->stmt = s;
    t->line = c->line;
    t->col = c->col;
    return v;
}

/* A bound that needs no global: a constant or a uniform variable (copied, so that no two
 * tasks share an expression node). */
static int is_leaf(const ir_expr *e) { return e && (e->kind == IR_CONST || e->kind == IR_VAR); }
static ir_expr *leaf_copy(pctx *c, const ir_expr *e) {
    ir_expr *x = ex(c, e->kind, e->type);
    if (x) x->k = e->k, x->var = e->var;
    return x;
}
/* e as a leaf: itself copied, or a new global set to it */
static ir_expr *as_leaf(pctx *c, ir_top **out, int *nout, const char *name, ir_expr *e) {
    if (!e) return NULL;
    if (is_leaf(e)) return leaf_copy(c, e);
    int v = global(c, out, nout, name, e);
    return v < 0 ? NULL : var(c, v);
}
static ir_expr *copy(pctx *c, const ir_expr *leaf) { return leaf ? leaf_copy(c, leaf) : NULL; }

/* The first value of [lo, hi] (lo <= hi) that is above e, or hi: e < lo ? lo : e < hi ? e + 1
 * : hi (no overflow: e + 1 only when e < hi). */
static ir_expr *above(pctx *c, const ir_expr *e, const ir_expr *lo, const ir_expr *hi) {
    return sel(c, bin(c, DVM_OP_LTI, DVM_T_BOOL, copy(c, e), copy(c, lo)), copy(c, lo),
               sel(c, bin(c, DVM_OP_LTI, DVM_T_BOOL, copy(c, e), copy(c, hi)),
                   bin(c, DVM_OP_ADDI, DVM_T_I32, copy(c, e), konst(c, 1)), copy(c, hi)));
}
/* e clamped to [lo, hi] (lo <= hi) */
static ir_expr *clamp(pctx *c, const ir_expr *e, const ir_expr *lo, const ir_expr *hi) {
    return bin(c, DVM_OP_MINI, DVM_T_I32, bin(c, DVM_OP_MAXI, DVM_T_I32, copy(c, e), copy(c, lo)), copy(c, hi));
}

/* A parallel top over the box given per dimension (start leaf or NULL, stop leaf) running
 * body. */
static void piece(pctx *c, const ir_top *orig, ir_top **out, int *nout, ir_expr *const *start, ir_expr *const *stop,
                  const ir_block *body) {
    ir_top *t = &(*out)[(*nout)++];
    *t = *orig;
    for (int d = 0; d < orig->ndim; d++) {
        t->start[d] = copy(c, start[d]);
        t->stop[d] = copy(c, stop[d]);
    }
    t->body = *body;
}

/* The tops that replace top (at most 1 + 3 x MAX_ATOMS + 1 + 2 x dims: the bounds' serial
 * steps, the box, the boxes around it), or 0 tops when it stays as it is. */
static int partition_top(pctx *c, const ir_top *top, ir_top *out) {
    if (!top->parallel || top->ndim < 1 || top->ndim > DVM_MAX_PAR_DIMS || top->body.n != 1) return 0;
    const ir_stmt *s = top->body.s[0];
    if (!s || s->kind != IR_IF || has_loop(&s->body) || has_loop(&s->orelse)) return 0;
    atom at[MAX_ATOMS];
    int na = 0;
    if (!atoms_of(c->k, top, s->e, at, &na) || na == 0) return 0;
    c->line = top->line;
    c->col = top->col;
    int n = 0;
    ir_expr *B[DVM_MAX_PAR_DIMS], *S[DVM_MAX_PAR_DIMS], *H[DVM_MAX_PAR_DIMS], *L[DVM_MAX_PAR_DIMS],
        *U[DVM_MAX_PAR_DIMS];
    int tested[DVM_MAX_PAR_DIMS] = {0}, has_lo[DVM_MAX_PAR_DIMS] = {0}, has_hi[DVM_MAX_PAR_DIMS] = {0};
    for (int i = 0; i < na; i++) {
        tested[at[i].dim] = 1;
        if (at[i].upper) has_hi[at[i].dim] = 1;
        else has_lo[at[i].dim] = 1;
    }
    for (int d = 0; d < top->ndim; d++) {
        /* the loop's own range [B, S), and H = max(B, S): the tested dimension's boxes stay in
           [B, H] whatever the bounds, so an empty range gives empty boxes */
        B[d] = top->start[d] ? as_leaf(c, &out, &n, "partition start", top->start[d]) : konst(c, 0);
        S[d] = as_leaf(c, &out, &n, "partition stop", top->stop[d]);
        H[d] = L[d] = U[d] = NULL;
        if (!tested[d]) continue;
        int h = global(c, &out, &n, "partition end", bin(c, DVM_OP_MAXI, DVM_T_I32, copy(c, B[d]), copy(c, S[d])));
        if (h < 0) return -1;
        H[d] = var(c, h);
        ir_expr *lo = NULL, *hi = NULL;
        for (int i = 0; i < na; i++) {
            if (at[i].dim != d) continue;
            ir_expr *e = as_leaf(c, &out, &n, "partition bound", at[i].e);
            if (!e) return -1;
            /* the first index that passes: above e for e < i, e itself for e <= i; the first
               that fails: e for i < e, above e for i <= e; each clamped to [B, H] */
            const int past = at[i].upper ? at[i].inclusive : !at[i].inclusive;
            ir_expr *b = past ? above(c, e, B[d], H[d]) : clamp(c, e, B[d], H[d]);
            if (at[i].upper) hi = hi ? bin(c, DVM_OP_MINI, DVM_T_I32, hi, b) : b;
            else lo = lo ? bin(c, DVM_OP_MAXI, DVM_T_I32, lo, b) : b;
        }
        int l = global(c, &out, &n, "partition low", lo ? lo : copy(c, B[d]));
        if (l < 0) return -1;
        L[d] = var(c, l);
        /* U >= L: an empty box leaves [B, L) and [L, H) around it, the whole range */
        int u = global(c, &out, &n, "partition high",
                       bin(c, DVM_OP_MAXI, DVM_T_I32, hi ? hi : copy(c, H[d]), copy(c, L[d])));
        if (u < 0) return -1;
        U[d] = var(c, u);
    }
    if (c->oom) return -1;
    ir_expr *st[DVM_MAX_PAR_DIMS], *sp[DVM_MAX_PAR_DIMS];
    /* the box: the test's statements, no test */
    for (int d = 0; d < top->ndim; d++) st[d] = tested[d] ? L[d] : B[d], sp[d] = tested[d] ? U[d] : S[d];
    if (s->body.n) piece(c, top, &out, &n, st, sp, &s->body);
    /* around it: dimension by dimension, below and above the box, within the box's range in
       the dimensions before and over the whole range in those after */
    if (s->orelse.n)
        for (int d = 0; d < top->ndim; d++) {
            if (!tested[d]) continue;
            for (int e = 0; e < top->ndim; e++)
                st[e] = e < d && tested[e] ? L[e] : B[e], sp[e] = e < d && tested[e] ? U[e] : S[e];
            if (has_lo[d]) {
                st[d] = B[d], sp[d] = L[d];
                piece(c, top, &out, &n, st, sp, &s->orelse);
            }
            if (has_hi[d]) {
                st[d] = U[d], sp[d] = H[d];
                piece(c, top, &out, &n, st, sp, &s->orelse);
            }
        }
    /* the start 0 needs no slot: leave it NULL */
    for (int i = 0; i < n; i++)
        if (out[i].parallel)
            for (int d = 0; d < out[i].ndim; d++)
                if (out[i].start[d] && out[i].start[d]->kind == IR_CONST && out[i].start[d]->k.i == 0)
                    out[i].start[d] = NULL;
    return c->oom ? -1 : n;
}

#define MAX_OUT (5 * DVM_MAX_PAR_DIMS + MAX_ATOMS + 1 + 2 * DVM_MAX_PAR_DIMS)

static int partition_variant(pctx *c, ir_variant *v) {
    if (!v->present) return 0;
    int grow = 0;
    for (int t = 0; t < v->ntops; t++)
        if (v->tops[t].parallel) grow++;
    if (!grow) return 0;
    ir_top *nt = dvm_arena_alloc(c->a, sizeof *nt * ((size_t)v->ntops + (size_t)grow * MAX_OUT));
    if (!nt) return -1;
    int n = 0;
    for (int t = 0; t < v->ntops; t++) {
        int m = partition_top(c, &v->tops[t], nt + n);
        if (m < 0) return -1;
        if (m == 0) nt[n++] = v->tops[t];
        else n += m;
    }
    v->tops = nt;
    v->ntops = n;
    return 0;
}

int dvm_partition(ir_module *m, dvm_diags *d) {
    for (int i = 0; i < m->nkernels; i++) {
        pctx c = {.a = m->arena, .k = m->kernels[i]};
        if (partition_variant(&c, &m->kernels[i]->v[DVM_V_FORWARD])) {
            dvm_diag(d, 0, 0, "out of memory");
            return -1;
        }
    }
    return 0;
}
