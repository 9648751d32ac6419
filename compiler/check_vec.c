/* check_vec.c: vectors, matrices and tuples, lowered to their scalar components. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "compiler/check_internal.h"

/* ---- vectors, matrices and tuples ----
 * A vector or matrix value is an IRX_VEC node that holds its f32 components (row-major); a
 * tuple (the values a helper returns) one that holds its values. Both live only while an
 * expression is lowered here: every consumer takes the parts apart, so the IR, autodiff, the
 * optimizer and every backend see scalars only. A local of type vec3 is three f32 variables. */

ir_expr *chk_mk_vec(ctx *c, int type, int n, int line, int col) {
    vexpr *v = dvm_arena_alloc(c->a, sizeof *v);
    if (!v) {
        c->oom = 1;
        return NULL;
    }
    v->h.kind = IRX_VEC;
    v->h.type = (uint8_t)type;
    v->h.nidx = n;
    v->h.line = line;
    v->h.col = col;
    v->h.var = v->h.slot = -1;
    return &v->h;
}
/* NULL when a part is missing (out of memory or an error inside) */
ir_expr *chk_vdone(ir_expr *v) {
    if (!v) return NULL;
    for (int i = 0; i < v->nidx; i++)
        if (!parts(v)[i]) return NULL;
    return v;
}
/* A part for one more use: a leaf is copied (no node appears twice in the IR). */
ir_expr *chk_use(ctx *c, ir_expr *x) { return x && chk_is_leaf(x) ? chk_clone_leaf(c, x, x->line, x->col) : x; }

/* Every part that is not a leaf (force: not a constant) goes into a temporary, so that it can
 * be used several times and is computed once. */
ir_expr *chk_settle_f(ctx *c, ir_expr *e, ir_block *pre, int force) {
    if (!e) return NULL;
    if (is_vval(e)) {
        ir_expr *r = chk_mk_vec(c, e->type, e->nidx, e->line, e->col);
        if (!r) return NULL;
        for (int i = 0; i < e->nidx; i++) parts(r)[i] = chk_settle_f(c, parts(e)[i], pre, force);
        return chk_vdone(r);
    }
    if (e->kind == IR_CONST || (!force && chk_is_leaf(e))) return e;
    int t = chk_new_var(c, "tmp", e->type, e->line, e->col);
    if (t < 0) return NULL;
    chk_push(c, pre, chk_mk_assign(c, t, e, e->line, e->col));
    return chk_mk_var(c, t, e->line, e->col);
}
ir_expr *chk_settle(ctx *c, ir_expr *e, ir_block *pre) { return chk_settle_f(c, e, pre, 0); }

static const char *comp_name(ctx *c, const char *name, int type, int i) {
    int n = vdim(type);
    const char *s = is_vec(type) ? dvm_arena_printf(c->a, "%s.%c", name, "xyzw"[i]) : dvm_arena_printf(c->a, "%s[%d,%d]", name, i / n, i % n);
    return s ? s : name;
}

/* Variables for a value of `type` (consecutive: one per component; a tuple's values in
 * order); the first one's id, or -1. */
int chk_new_vvar(ctx *c, const char *name, int type, const uint8_t *rets, int nrets, int line, int col) {
    if (type == DVM_T_TUPLE) {
        int first = -1;
        for (int i = 0; i < nrets; i++) {
            int v = chk_new_vvar(c, dvm_arena_printf(c->a, "%s.%d", name, i), rets[i], NULL, 0, line, col);
            if (v < 0) return -1;
            if (i == 0) first = v;
        }
        return first;
    }
    if (!is_vt(type)) return chk_new_var(c, name, type, line, col);
    int first = -1;
    for (int i = 0; i < ncomp(type); i++) {
        int v = chk_new_var(c, comp_name(c, name, type, i), DVM_T_F32, line, col);
        if (v < 0) return -1;
        if (i == 0) first = v;
    }
    return first;
}
ir_expr *chk_vvar_val(ctx *c, int var0, int type, const uint8_t *rets, int nrets, int line, int col) {
    if (type == DVM_T_TUPLE) {
        ir_expr *r = chk_mk_vec(c, DVM_T_TUPLE, nrets, line, col);
        if (!r) return NULL;
        for (int i = 0; i < nrets; i++) {
            parts(r)[i] = chk_vvar_val(c, var0, rets[i], NULL, 0, line, col);
            var0 += ncomp(rets[i]);
        }
        return chk_vdone(r);
    }
    if (!is_vt(type)) return chk_mk_var(c, var0, line, col);
    ir_expr *r = chk_mk_vec(c, type, ncomp(type), line, col);
    if (!r) return NULL;
    for (int i = 0; i < ncomp(type); i++) parts(r)[i] = chk_mk_var(c, var0 + i, line, col);
    return chk_vdone(r);
}

void chk_flatten(ir_expr *e, ir_expr **out, int *n) {
    if (!is_vval(e)) {
        out[(*n)++] = e;
        return;
    }
    for (int i = 0; i < e->nidx; i++) chk_flatten(parts(e)[i], out, n);
}
static int refs_range(const ir_expr *e, int lo, int hi) {
    if (!e) return 0;
    if (e->kind == IR_VAR) return e->var >= lo && e->var < hi;
    if (e->kind == IR_LOAD)
        for (int i = 0; i < e->nidx; i++)
            if (refs_range(e->idx[i], lo, hi)) return 1;
    return refs_range(e->a, lo, hi) || refs_range(e->b, lo, hi) || refs_range(e->c, lo, hi);
}
/* var0.. = v, component by component; a component that reads a variable assigned before it
 * (v = vec2(v.y, v.x)) makes every component go through a temporary first. */
void chk_vassign(ctx *c, int var0, ir_expr *v, ir_block *out, int line, int col) {
    if (!v) return;
    if (!is_vval(v)) {
        chk_push(c, out, chk_mk_assign(c, var0, v, line, col));
        return;
    }
    ir_expr *fl[DVM_MAX_TUPLE * 16];
    int n = 0;
    chk_flatten(v, fl, &n);
    for (int i = 1; i < n; i++)
        if (refs_range(fl[i], var0, var0 + i)) {
            for (int j = 0; j < n; j++) fl[j] = chk_settle_f(c, fl[j], out, 1);
            break;
        }
    for (int i = 0; i < n; i++)
        if (fl[i]) chk_push(c, out, chk_mk_assign(c, var0 + i, chk_use(c, fl[i]), line, col));
}

/* An assignment's conversion, for every type: vectors and matrices only to their own type. */
ir_expr *chk_vconvert(ctx *c, ir_expr *e, int want) {
    if (!e) return NULL;
    if (is_vval(e) || is_vt(want) || want == DVM_T_TUPLE) return e->type == want && e->type != DVM_T_TUPLE ? e : NULL;
    return chk_convert(c, e, want);
}

static const char *verb(int tk) {
    return tk == TK_PLUS ? "add" : tk == TK_MINUS ? "subtract" : tk == TK_STAR ? "multiply" : "divide";
}

int chk_no_tuple(ctx *c, const ir_expr *e, int line, int col) {
    if (!e || e->type != DVM_T_TUPLE) return 0;
    chk_err(c, line, col, "this helper returns %d values: unpack them first (a, b = f(...))", e->nidx);
    return 1;
}

static ir_expr *sum_products(ctx *c, ir_expr **x, ir_expr **y, int n, int line, int col) {
    ir_expr *r = NULL;
    for (int k = 0; k < n; k++) {
        ir_expr *p = chk_mk_bin(c, DVM_OP_MULF, DVM_T_F32, chk_use(c, x[k]), chk_use(c, y[k]), line, col);
        r = r ? chk_mk_bin(c, DVM_OP_ADDF, DVM_T_F32, r, p, line, col) : p;
    }
    return r;
}

static ir_expr *matmul(ctx *c, ir_expr *a, ir_expr *b, ir_block *pre, int line, int col) {
    if (!is_vt(a->type) || !is_vt(b->type)) {
        chk_err(c, line, col, "'@' multiplies matrices and vectors, got %s and %s (use * with a scalar)", chk_tname(a->type), chk_tname(b->type));
        return NULL;
    }
    if (is_vec(a->type) && is_vec(b->type)) {
        chk_err(c, line, col, "'@' of two vectors (%s and %s) is not defined: use dot(a, b) or outer(a, b)", chk_tname(a->type), chk_tname(b->type));
        return NULL;
    }
    int n = vdim(a->type);
    if (vdim(b->type) != n) {
        chk_err(c, line, col, "cannot multiply %s by %s with '@': their sizes differ", chk_tname(a->type), chk_tname(b->type));
        return NULL;
    }
    a = chk_settle(c, a, pre);
    b = chk_settle(c, b, pre);
    if (!a || !b) return NULL;
    ir_expr **A = parts(a), **B = parts(b);
    ir_expr *x[4], *y[4];
    if (is_mat(a->type) && is_mat(b->type)) {
        ir_expr *r = chk_mk_vec(c, a->type, n * n, line, col);
        if (!r) return NULL;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                for (int k = 0; k < n; k++) x[k] = A[i * n + k], y[k] = B[k * n + j];
                parts(r)[i * n + j] = sum_products(c, x, y, n, line, col);
            }
        return chk_vdone(r);
    }
    ir_expr *r = chk_mk_vec(c, DVM_T_VEC2 + n - 2, n, line, col);
    if (!r) return NULL;
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < n; k++) {
            if (is_mat(a->type)) x[k] = A[i * n + k], y[k] = B[k]; /* (m @ v)[i] = sum_k m[i, k] v[k] */
            else x[k] = A[k], y[k] = B[k * n + i];                  /* (v @ m)[i] = sum_k v[k] m[k, i] */
        }
        parts(r)[i] = sum_products(c, x, y, n, line, col);
    }
    return chk_vdone(r);
}


/* a op b where a or b is a vector or matrix (or op is @). */
static ir_expr *varith(ctx *c, int tk, ir_expr *a, ir_expr *b, ir_block *pre, int line, int col) {
    if (!a || !b) return NULL;
    if (chk_no_tuple(c, a, line, col) || chk_no_tuple(c, b, line, col)) return NULL;
    if (tk == TK_AT) return matmul(c, a, b, pre, line, col);
    if (tk != TK_PLUS && tk != TK_MINUS && tk != TK_STAR && tk != TK_SLASH) {
        chk_err(c, line, col, "operator '%s' is not defined on %s and %s (vectors and matrices take + - * / componentwise and @)", chk_op_text(tk),
            chk_tname(a->type), chk_tname(b->type));
        return NULL;
    }
    int va = is_vt(a->type), vb = is_vt(b->type);
    if (va && vb && a->type != b->type) {
        chk_err(c, line, col, "cannot %s %s and %s%s", verb(tk), chk_tname(a->type), chk_tname(b->type),
            tk == TK_STAR && (is_mat(a->type) || is_mat(b->type)) ? " (use @ for the matrix product)" : "");
        return NULL;
    }
    if ((!va && !is_num(a->type)) || (!vb && !is_num(b->type))) {
        chk_err(c, line, col, "cannot %s %s and %s", verb(tk), chk_tname(a->type), chk_tname(b->type));
        return NULL;
    }
    int t = va ? a->type : b->type;
    if (!va) a = chk_settle(c, chk_to_f32(c, a), pre);
    if (!vb) b = chk_settle(c, chk_to_f32(c, b), pre);
    if (!a || !b) return NULL;
    ir_expr *r = chk_mk_vec(c, t, ncomp(t), line, col);
    if (!r) return NULL;
    for (int i = 0; i < ncomp(t); i++)
        parts(r)[i] = chk_arith(c, tk, va ? chk_use(c, parts(a)[i]) : chk_use(c, a), vb ? chk_use(c, parts(b)[i]) : chk_use(c, b), line, col);
    return chk_vdone(r);
}

/* Arithmetic of any types: the scalar rules, or componentwise. */
ir_expr *chk_arith2(ctx *c, int tk, ir_expr *a, ir_expr *b, ir_block *pre, int line, int col) {
    if (!a || !b) return NULL;
    if (is_vval(a) || is_vval(b) || tk == TK_AT) return varith(c, tk, a, b, pre, line, col);
    return chk_arith(c, tk, a, b, line, col);
}

ir_expr *chk_vneg(ctx *c, ir_expr *a, int line, int col) {
    ir_expr *r = chk_mk_vec(c, a->type, a->nidx, line, col);
    if (!r) return NULL;
    for (int i = 0; i < a->nidx; i++) parts(r)[i] = chk_mk_un(c, DVM_OP_NEGF, DVM_T_F32, parts(a)[i]);
    return chk_vdone(r);
}

/* Part k of a vector (a component) or of a matrix (a row). */
ir_expr *chk_vpart(ctx *c, ir_expr *v, int k, int line, int col) {
    if (is_vec(v->type)) return chk_use(c, parts(v)[k]);
    int n = vdim(v->type);
    ir_expr *r = chk_mk_vec(c, DVM_T_VEC2 + n - 2, n, line, col);
    if (!r) return NULL;
    for (int j = 0; j < n; j++) parts(r)[j] = chk_use(c, parts(v)[k * n + j]);
    return chk_vdone(r);
}

/* determinant of the k x k submatrix rows[] x cols[] of the n x n matrix m (leaves) */
static ir_expr *det_rec(ctx *c, ir_expr **m, int n, const int *rows, const int *cols, int k, int line, int col) {
    if (k == 1) return chk_use(c, m[rows[0] * n + cols[0]]);
    if (k == 2)
        return chk_mk_bin(c, DVM_OP_SUBF, DVM_T_F32,
                      chk_mk_bin(c, DVM_OP_MULF, DVM_T_F32, chk_use(c, m[rows[0] * n + cols[0]]), chk_use(c, m[rows[1] * n + cols[1]]), line, col),
                      chk_mk_bin(c, DVM_OP_MULF, DVM_T_F32, chk_use(c, m[rows[0] * n + cols[1]]), chk_use(c, m[rows[1] * n + cols[0]]), line, col), line, col);
    ir_expr *r = NULL;
    for (int j = 0; j < k; j++) {
        int sub[4], ns = 0;
        for (int q = 0; q < k; q++)
            if (q != j) sub[ns++] = cols[q];
        ir_expr *t = chk_mk_bin(c, DVM_OP_MULF, DVM_T_F32, chk_use(c, m[rows[0] * n + cols[j]]), det_rec(c, m, n, rows + 1, sub, k - 1, line, col), line, col);
        r = !r ? t : chk_mk_bin(c, j % 2 ? DVM_OP_SUBF : DVM_OP_ADDF, DVM_T_F32, r, t, line, col);
    }
    return r;
}

enum { VB_DOT, VB_CROSS, VB_LENGTH, VB_NORMALIZE, VB_OUTER, VB_TRANSPOSE, VB_DET, VB_INVERSE, VB_TRACE };

/* dot cross length normalize outer transpose determinant inverse trace */
ir_expr *chk_vbuiltin(ctx *c, const char *name, int which, ir_expr **args, int nargs, ir_block *pre, int line, int col) {
    static const int want_args[] = {2, 2, 1, 1, 2, 1, 1, 1, 1};
    if (nargs != want_args[which]) {
        chk_err(c, line, col, "%s takes %d argument%s but %d %s given", name, want_args[which], want_args[which] == 1 ? "" : "s", nargs,
            nargs == 1 ? "was" : "were");
        return NULL;
    }
    for (int i = 0; i < nargs; i++)
        if (chk_no_tuple(c, args[i], line, col)) return NULL;
    int t = args[0]->type;
    int on_vec = which <= VB_OUTER;
    int ok = on_vec ? is_vec(t) : is_mat(t);
    if (ok && nargs == 2 && args[1]->type != t) ok = 0;
    if (ok && which == VB_CROSS && t != DVM_T_VEC3) ok = 0;
    if (!ok) {
        const char *need = which == VB_CROSS ? "two vec3" : nargs == 2 ? "two vectors of the same size" : on_vec ? "a vector" : "a matrix";
        if (nargs == 2) chk_err(c, line, col, "%s takes %s, got %s and %s", name, need, chk_tname(t), chk_tname(args[1]->type));
        else chk_err(c, line, col, "%s takes %s, got %s", name, need, chk_tname(t));
        return NULL;
    }
    int n = vdim(t);
    ir_expr *a = chk_settle(c, args[0], pre), *b = nargs == 2 ? chk_settle(c, args[1], pre) : NULL;
    if (!a || (nargs == 2 && !b)) return NULL;
    ir_expr **A = parts(a), **B = b ? parts(b) : NULL;
    ir_expr *r = NULL;
    switch (which) {
    case VB_DOT: return sum_products(c, A, B, n, line, col);
    case VB_LENGTH: return chk_mk_un(c, DVM_OP_SQRT, DVM_T_F32, sum_products(c, A, A, n, line, col));
    case VB_NORMALIZE: {
        ir_expr *len = chk_settle(c, chk_mk_un(c, DVM_OP_SQRT, DVM_T_F32, sum_products(c, A, A, n, line, col)), pre);
        if (!len) return NULL;
        r = chk_mk_vec(c, t, n, line, col);
        if (!r) return NULL;
        for (int i = 0; i < n; i++) parts(r)[i] = chk_mk_bin(c, DVM_OP_DIVF, DVM_T_F32, chk_use(c, A[i]), chk_use(c, len), line, col);
        return chk_vdone(r);
    }
    case VB_CROSS: {
        r = chk_mk_vec(c, t, 3, line, col);
        if (!r) return NULL;
        for (int i = 0; i < 3; i++) {
            int j = (i + 1) % 3, k = (i + 2) % 3; /* (a x b)_i = a_j b_k - a_k b_j */
            parts(r)[i] = chk_mk_bin(c, DVM_OP_SUBF, DVM_T_F32, chk_mk_bin(c, DVM_OP_MULF, DVM_T_F32, chk_use(c, A[j]), chk_use(c, B[k]), line, col),
                                 chk_mk_bin(c, DVM_OP_MULF, DVM_T_F32, chk_use(c, A[k]), chk_use(c, B[j]), line, col), line, col);
        }
        return chk_vdone(r);
    }
    case VB_OUTER:
        r = chk_mk_vec(c, DVM_T_MAT2 + n - 2, n * n, line, col);
        if (!r) return NULL;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) parts(r)[i * n + j] = chk_mk_bin(c, DVM_OP_MULF, DVM_T_F32, chk_use(c, A[i]), chk_use(c, B[j]), line, col);
        return chk_vdone(r);
    case VB_TRANSPOSE:
        r = chk_mk_vec(c, t, n * n, line, col);
        if (!r) return NULL;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) parts(r)[i * n + j] = chk_use(c, A[j * n + i]);
        return chk_vdone(r);
    case VB_TRACE:
        for (int i = 0; i < n; i++) r = r ? chk_mk_bin(c, DVM_OP_ADDF, DVM_T_F32, r, chk_use(c, A[i * n + i]), line, col) : chk_use(c, A[0]);
        return r;
    case VB_DET: {
        static const int idx[4] = {0, 1, 2, 3};
        return det_rec(c, A, n, idx, idx, n, line, col);
    }
    case VB_INVERSE: { /* the adjugate over the determinant: inv[i, j] = cofactor(j, i) / det */
        static const int idx[4] = {0, 1, 2, 3};
        ir_expr *det = chk_settle(c, det_rec(c, A, n, idx, idx, n, line, col), pre);
        ir_expr *inv = chk_settle(c, chk_mk_bin(c, DVM_OP_DIVF, DVM_T_F32, chk_mk_const_f(c, 1.0f, line, col), det, line, col), pre);
        if (!inv) return NULL;
        r = chk_mk_vec(c, t, n * n, line, col);
        if (!r) return NULL;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                int rows[3], cols[3], nr = 0, nc = 0;
                for (int q = 0; q < n; q++) {
                    if (q != j) rows[nr++] = q;
                    if (q != i) cols[nc++] = q;
                }
                ir_expr *m = det_rec(c, A, n, rows, cols, n - 1, line, col);
                if ((i + j) % 2) m = chk_mk_un(c, DVM_OP_NEGF, DVM_T_F32, m);
                parts(r)[i * n + j] = chk_mk_bin(c, DVM_OP_MULF, DVM_T_F32, m, chk_use(c, inv), line, col);
            }
        return chk_vdone(r);
    }
    }
    return NULL;
}

/* vec3(a, b, c), vec3(s), mat3(row0, row1, row2), mat2(a, b, c, d): the arguments' components
 * in order (a vector counts as its components). */
ir_expr *chk_vconstruct(ctx *c, const char *name, int t, ir_expr **args, int nargs, const ast_expr *e, ir_block *pre) {
    int need = ncomp(t);
    ir_expr *fl[DVM_MAX_TUPLE * 16];
    int n = 0;
    for (int i = 0; i < nargs; i++) {
        ir_expr *x = args[i];
        if (chk_no_tuple(c, x, e->args[i]->line, e->args[i]->col)) return NULL;
        if (!is_vt(x->type) && !is_num(x->type)) {
            chk_err(c, e->args[i]->line, e->args[i]->col, "argument %d of %s must be f32, i32 or a vector, got %s", i + 1, name, chk_tname(x->type));
            return NULL;
        }
        if (n + ncomp(x->type) > need) {
            n = need + 1;
            break;
        }
        if (is_vval(x)) for (int j = 0; j < x->nidx; j++) fl[n++] = parts(x)[j];
        else fl[n++] = chk_to_f32(c, x);
    }
    if (n == 1 && nargs == 1 && is_vec(t)) { /* vec3(s): every component s */
        ir_expr *s = chk_settle(c, fl[0], pre);
        for (int i = 1; i < need; i++) fl[i] = s;
        fl[0] = s;
        n = need;
    }
    if (n != need) {
        int d = vdim(t);
        if (is_vec(t)) chk_err(c, e->line, e->col, "%s(...) takes %d components (or one value for all of them), got %s", name, need, n > need ? "more" : "fewer");
        else chk_err(c, e->line, e->col, "%s(...) takes %d rows (vec%d) or %d values, row by row; got %s", name, d, d, need, n > need ? "more" : "fewer");
        return NULL;
    }
    ir_expr *r = chk_mk_vec(c, t, need, e->line, e->col);
    if (!r) return NULL;
    for (int i = 0; i < need; i++) parts(r)[i] = chk_use(c, fl[i]);
    return chk_vdone(r);
}

/* abs min max clamp select with a vector or matrix among the arguments: componentwise, a
 * scalar broadcast. */
ir_expr *chk_velementwise(ctx *c, const char *name, int kind, int op, ir_expr **args, int nargs, ir_block *pre, int line, int col) {
    int t = 0;
    for (int i = 0; i < nargs; i++) {
        if (chk_no_tuple(c, args[i], line, col)) return NULL;
        int at = args[i]->type;
        if (kind == BI_SELECT && i == 0) {
            if (at != DVM_T_BOOL) {
                chk_err(c, line, col, "the condition of select must be bool, got %s (select is componentwise only in its values)", chk_tname(at));
                return NULL;
            }
            continue;
        }
        if (is_vt(at)) {
            if (t && t != at) {
                chk_err(c, line, col, "%s of %s and %s: the vector and matrix arguments must have the same type", name, chk_tname(t), chk_tname(at));
                return NULL;
            }
            t = at;
        } else if (!is_num(at)) {
            chk_err(c, line, col, "argument %d of %s must be f32, i32 or a vector, got %s", i + 1, name, chk_tname(at));
            return NULL;
        }
    }
    if (kind != BI_ABS && kind != BI_MINMAX && kind != BI_CLAMP && kind != BI_SELECT) {
        chk_err(c, line, col, "%s takes f32 or i32, got %s (only abs, min, max, clamp and select work componentwise)", name, chk_tname(t));
        return NULL;
    }
    ir_expr *s[16];
    for (int i = 0; i < nargs && i < 16; i++)
        s[i] = is_vt(args[i]->type) ? args[i] : chk_settle(c, (kind == BI_SELECT && i == 0) ? args[i] : chk_to_f32(c, args[i]), pre);
    ir_expr *r = chk_mk_vec(c, t, ncomp(t), line, col);
    if (!r) return NULL;
    for (int k = 0; k < ncomp(t); k++) {
        ir_expr *x[16] = {0};
        for (int i = 0; i < nargs && i < 16; i++) x[i] = is_vval(s[i]) ? chk_use(c, parts(s[i])[k]) : chk_use(c, s[i]);
        ir_expr *v = NULL;
        if (kind == BI_ABS) v = chk_mk_un(c, DVM_OP_ABSF, DVM_T_F32, x[0]);
        else if (kind == BI_CLAMP) v = chk_mk_bin(c, DVM_OP_MINF, DVM_T_F32, chk_mk_bin(c, DVM_OP_MAXF, DVM_T_F32, x[0], x[1], line, col), x[2], line, col);
        else if (kind == BI_MINMAX) {
            v = x[0];
            for (int i = 1; i < nargs && i < 16; i++) v = chk_mk_bin(c, op ? DVM_OP_MAXF : DVM_OP_MINF, DVM_T_F32, v, x[i], line, col);
        } else {
            v = chk_mk(c, IR_SELECT, DVM_T_F32, line, col);
            if (v) v->a = x[0], v->b = x[1], v->c = x[2];
        }
        parts(r)[k] = v;
    }
    return chk_vdone(r);
}
