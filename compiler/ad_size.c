/* ad_size.c: adstack capacities as size expressions (ir_size, evaluated at launch by the
 * sizer). A stack needs, per thread-iteration, the number of pushes of the worst case:
 * 1 per push site, times the trip count of every enclosing `for`, summed over sites, the max
 * of exclusive if/else branches. A bound that depends on an enclosing loop's variable (or the
 * parallel index) becomes a max over that variable's range: max-over-range times the trip
 * count is an upper bound, never an under-estimate. No formula (while loops, bounds read from
 * f32 values, top-level variables or locals assigned in loops) gives IRS_DEFAULT. */
#include "ad_internal.h"

static ir_size *mk(ad_ctx *c, int kind) {
    ir_size *s = ad_alloc(c, sizeof *s);
    s->kind = (uint8_t)kind;
    s->depth = -1;
    s->var = -1;
    return s;
}
static ir_size *k_(ad_ctx *c, int64_t v) {
    ir_size *s = mk(c, IRS_CONST);
    s->value = v;
    return s;
}
static int isdef(const ir_size *s) { return s && s->kind == IRS_DEFAULT; }
static int64_t sat(int64_t v) { return v > DVM_SIZE_SAT ? DVM_SIZE_SAT : v < -DVM_SIZE_SAT ? -DVM_SIZE_SAT : v; }
/* NULL is zero throughout; IRS_DEFAULT absorbs everything */
static ir_size *op2(ad_ctx *c, int kind, ir_size *a, ir_size *b) {
    if (isdef(a)) return a;
    if (isdef(b)) return b;
    if (kind == IRS_ADD && !a) return b;
    if ((kind == IRS_ADD || kind == IRS_SUB) && !b) return a;
    if (kind == IRS_MUL && (!a || !b)) return NULL;
    if (kind == IRS_MAX && !a) return b;
    if (kind == IRS_MAX && !b) return a;
    if (!a) a = k_(c, 0);
    if (!b) b = k_(c, 0);
    if (a->kind == IRS_CONST && b->kind == IRS_CONST) {
        int64_t x = a->value, y = b->value;
        switch (kind) {
        case IRS_ADD: return k_(c, sat(x + y));
        case IRS_SUB: return k_(c, x - y > 0 ? x - y : 0);
        case IRS_MUL: return k_(c, (x != 0 && (y > DVM_SIZE_SAT / (x < 0 ? -x : x) || y < -DVM_SIZE_SAT / (x < 0 ? -x : x))) ? DVM_SIZE_SAT : sat(x * y));
        default: return k_(c, x > y ? x : y);
        }
    }
    if (kind == IRS_MUL && a->kind == IRS_CONST && a->value == 1) return b;
    if (kind == IRS_MUL && b->kind == IRS_CONST && b->value == 1) return a;
    ir_size *s = mk(c, kind);
    s->a = a;
    s->b = b;
    return s;
}

static int mentions(const ir_size *s, int var) {
    if (!s) return 0;
    if (s->kind == IRS_VAR && s->var == var) return 1;
    return mentions(s->a, var) || mentions(s->b, var) || mentions(s->body, var);
}

/* the exact value of an i32 expression as a size expression, or NULL */
static ir_size *exact(ad_ctx *c, const ir_expr *e) {
    if (!e || e->type != DVM_T_I32) return NULL;
    switch (e->kind) {
    case IR_CONST:
        return k_(c, e->k.i);
    case IR_VAR: {
        const ir_var *v = &c->k->vars[e->var];
        if (v->storage == IR_PARAM || v->storage == IR_SHAPESYM) {
            ir_size *s = mk(c, IRS_PARAM);
            s->var = e->var;
            return s;
        }
        int bound = v->storage == IR_PINDEX;
        for (int i = 0; i < c->nsenc && !bound; i++) bound = c->senc[i]->var == e->var;
        if (bound) {
            ir_size *s = mk(c, IRS_VAR);
            s->var = e->var;
            return s;
        }
        /* a local assigned once, outside loops: its value is its definition */
        if (v->storage == IR_LOCAL && e->var < c->nv1 && c->def[e->var] && c->subst_depth < 16) {
            c->subst_depth++;
            ir_size *s = exact(c, c->def[e->var]);
            c->subst_depth--;
            return s;
        }
        return NULL;
    }
    case IR_SHAPE: {
        ir_size *s = mk(c, IRS_SHAPE);
        s->slot = e->slot;
        s->axis = e->axis;
        return s;
    }
    case IR_LOAD: {
        if (e->slot < 0 || e->slot >= c->nfslots || e->nidx < 1) return NULL;
        ir_size *flat = exact(c, e->idx[0]);
        for (int d = 1; d < e->nidx && flat; d++) {
            ir_size *sh = mk(c, IRS_SHAPE);
            sh->slot = e->slot;
            sh->axis = d;
            ir_size *i = exact(c, e->idx[d]);
            if (!i) return NULL;
            flat = op2(c, IRS_ADD, op2(c, IRS_MUL, flat, sh), i);
        }
        if (!flat) return NULL;
        ir_size *s = mk(c, IRS_LOAD);
        s->slot = e->slot;
        s->a = flat;
        return s;
    }
    case IR_BIN:
        if (e->op == DVM_OP_ADDI || e->op == DVM_OP_MULI) {
            ir_size *a = exact(c, e->a), *b = a ? exact(c, e->b) : NULL;
            if (!a || !b) return NULL;
            ir_size *r = op2(c, e->op == DVM_OP_ADDI ? IRS_ADD : IRS_MUL, a, b);
            return r ? r : k_(c, 0);
        }
        return NULL;
    default:
        return NULL;
    }
}

static ir_size *upper(ad_ctx *c, const ir_expr *e);
/* Linear form of sign*e: positive terms (upper bounds) into *p, negative ones (exact) into *n,
 * constants into *kk. 0 when some term has no usable bound. */
static int lin(ad_ctx *c, const ir_expr *e, int sign, ir_size **p, ir_size **n, int64_t *kk) {
    if (e->type != DVM_T_I32) return 0;
    if (e->kind == IR_CONST) {
        *kk += sign * (int64_t)e->k.i;
        return 1;
    }
    if (e->kind == IR_BIN && (e->op == DVM_OP_ADDI || e->op == DVM_OP_SUBI))
        return lin(c, e->a, sign, p, n, kk) && lin(c, e->b, e->op == DVM_OP_ADDI ? sign : -sign, p, n, kk);
    if (e->kind == IR_UN && e->op == DVM_OP_NEGI) return lin(c, e->a, -sign, p, n, kk);
    ir_size *x = exact(c, e);
    if (sign > 0 && !x && e->kind == IR_BIN && (e->op == DVM_OP_MAXI || e->op == DVM_OP_MINI)) {
        ir_size *a = upper(c, e->a), *b = upper(c, e->b);
        if (e->op == DVM_OP_MAXI) x = a && b ? op2(c, IRS_MAX, a, b) : NULL;
        else x = a ? a : b; /* min(a, b) <= either */
    }
    if (!x) return 0;
    if (sign > 0) *p = op2(c, IRS_ADD, *p, x);
    else *n = op2(c, IRS_ADD, *n, x);
    return 1;
}
static ir_size *from_lin(ad_ctx *c, ir_size *p, ir_size *n, int64_t kk) {
    if (kk > 0) p = op2(c, IRS_ADD, p, k_(c, kk));
    if (kk < 0) n = op2(c, IRS_ADD, n, k_(c, -kk));
    ir_size *r = op2(c, IRS_SUB, p, n);
    return r ? r : k_(c, 0);
}
/* an upper bound of max(e, 0) */
static ir_size *upper(ad_ctx *c, const ir_expr *e) {
    ir_size *p = NULL, *n = NULL;
    int64_t kk = 0;
    if (!lin(c, e, 1, &p, &n, &kk)) return NULL;
    return from_lin(c, p, n, kk);
}
/* an upper bound of the trip count max(stop - start, 0) */
static ir_size *trip(ad_ctx *c, const ir_expr *start, const ir_expr *stop) {
    ir_size *p = NULL, *n = NULL;
    int64_t kk = 0;
    if (!lin(c, stop, 1, &p, &n, &kk)) return NULL;
    if (start && !lin(c, start, -1, &p, &n, &kk)) return NULL;
    return from_lin(c, p, n, kk);
}
/* max over var in [lo(start), upper(stop)) of body: a superset of the values var takes */
static ir_size *range(ad_ctx *c, int var, const ir_expr *start, const ir_expr *stop, ir_size *body) {
    ir_size *lo = start ? exact(c, start) : k_(c, 0);
    ir_size *hi = upper(c, stop);
    if (!lo || !hi) return mk(c, IRS_DEFAULT);
    ir_size *r = mk(c, IRS_RANGE);
    r->var = var;
    r->a = lo;
    r->b = hi;
    r->body = body;
    return r;
}

static const ad_loop *find(const ad_ctx *c, const ir_stmt *s) {
    for (int i = 0; i < c->ngloops; i++)
        if (c->gloops[i].s == s) return &c->gloops[i];
    return NULL;
}

static ir_size *blk(ad_ctx *c, int st, const ir_block *b);
static ir_size *stmt(ad_ctx *c, int st, const ir_stmt *s) {
    switch (s->kind) {
    case IR_PUSH:
        return s->stack == st ? k_(c, 1) : NULL;
    case IR_IF:
        return op2(c, IRS_MAX, blk(c, st, &s->body), blk(c, st, &s->orelse));
    case IR_FOR:
    case IR_WHILE: {
        const ad_loop *L = find(c, s);
        int bind = L && L->isfor && L->var >= 0 && c->nsenc < 64;
        if (bind) c->senc[c->nsenc++] = L;
        ir_size *in = blk(c, st, &s->body);
        if (bind) c->nsenc--;
        if (!in || isdef(in)) return in;
        if (!L || !L->isfor) return mk(c, IRS_DEFAULT);
        ir_size *t = trip(c, L->start, L->stop);
        if (!t) return mk(c, IRS_DEFAULT);
        if (L->var >= 0 && mentions(in, L->var)) in = range(c, L->var, L->start, L->stop, in);
        return op2(c, IRS_MUL, t, in);
    }
    default:
        return NULL;
    }
}
static ir_size *blk(ad_ctx *c, int st, const ir_block *b) {
    ir_size *r = NULL;
    for (int i = 0; i < b->n && !isdef(r); i++) r = op2(c, IRS_ADD, r, stmt(c, st, b->s[i]));
    return r;
}

/* IRS_VAR depth = position of its binder among the enclosing ranges; 0 if some var is unbound */
static int fix_depth(ir_size *s, int *binders, int nb) {
    if (!s) return 1;
    if (s->kind == IRS_VAR) {
        for (int i = nb - 1; i >= 0; i--)
            if (binders[i] == s->var) {
                s->depth = i;
                return 1;
            }
        return 0;
    }
    if (s->kind == IRS_RANGE) {
        if (nb >= DVM_MAX_SIZE_DEPTH || !fix_depth(s->a, binders, nb) || !fix_depth(s->b, binders, nb)) return 0;
        binders[nb] = s->var;
        s->depth = nb;
        return fix_depth(s->body, binders, nb + 1);
    }
    return fix_depth(s->a, binders, nb) && fix_depth(s->b, binders, nb) && fix_depth(s->body, binders, nb);
}

ir_size *ad_stack_size(ad_ctx *c, int st, const ir_block *fwd, const ir_top *par) {
    c->nsenc = 0;
    ir_size *s = blk(c, st, fwd);
    if (!s) return k_(c, 0);
    if (par && !isdef(s))
        for (int d = par->ndim - 1; d >= 0 && !isdef(s); d--)
            if (mentions(s, par->idx_var[d])) s = range(c, par->idx_var[d], par->start[d], par->stop[d], s);
    int binders[DVM_MAX_SIZE_DEPTH + 1];
    if (!isdef(s) && !fix_depth(s, binders, 0)) s = mk(c, IRS_DEFAULT);
    return s;
}
