/* ad_size.c: adstack capacities as size expressions (ir_size, evaluated at launch by the
 * sizer). A stack needs, per thread-iteration, the number of pushes of the worst case:
 * 1 per push site, times the trip count of every enclosing `for`, summed over sites, the max
 * of exclusive if/else branches. A bound that depends on an enclosing loop's variable (or the
 * parallel index) becomes a max over that variable's range: max-over-range times the trip
 * count is an upper bound, never an under-estimate. No formula (while loops, bounds read from
 * f32 values, top-level variables or locals assigned in loops) gives IRS_DEFAULT. */
#include <stdlib.h>
#include <string.h>
#include "compiler/ad_internal.h"

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

/* ---- which statements hold a stack's pushes ----
 * Walking every forward sweep once per stack costs stacks x program (a 10,000-branch elif
 * chain has 10,000 stacks). Instead one walk numbers the statements (parent, and which of its
 * blocks holds each) and lists the push sites of every stack; a stack's size then visits only
 * the statements on the paths from the root to its sites, linked into per-stack child lists:
 * the pushes times the depth in all, for all stacks. */
typedef struct sz_index {
    const ir_stmt **node;
    int *parent;           /* -1: in a root block */
    unsigned char *branch; /* 0: in the parent's body, 1: in its orelse */
    int *root;             /* the root block (0: serial sweeps, t + 1: parallel top t) */
    int *stamp;            /* the stack whose paths are linked now */
    int *first;            /* per node and branch: first child on the paths, -1 */
    int *next;             /* next sibling on the paths */
    const ad_loop **loop;  /* IR_FOR / IR_WHILE: its loop, or NULL */
    int n, cap;
    int *rfirst;           /* per root: first statement on the paths */
    int *rstamp;
    int *site_start, *sites; /* per stack: its IR_PUSH statements */
    int *site_stack;
    int nsites, capsites;
    const ad_loop **lhash; /* gloops by statement, open addressing */
    size_t lcap;
} sz_index;

static size_t ptr_hash(const void *p, size_t cap) {
    return (size_t)(((uint64_t)(uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull >> 17) & (cap - 1);
}

static int grow_ix(sz_index *x) {
    int cap = x->cap ? x->cap * 2 : 256;
    void *a[8] = {realloc(x->node, sizeof *x->node * (size_t)cap), realloc(x->parent, sizeof(int) * (size_t)cap),
                  realloc(x->branch, (size_t)cap), realloc(x->root, sizeof(int) * (size_t)cap),
                  realloc(x->stamp, sizeof(int) * (size_t)cap), realloc(x->first, sizeof(int) * 2 * (size_t)cap),
                  realloc(x->next, sizeof(int) * (size_t)cap), realloc(x->loop, sizeof *x->loop * (size_t)cap)};
    if (a[0]) x->node = a[0];
    if (a[1]) x->parent = a[1];
    if (a[2]) x->branch = a[2];
    if (a[3]) x->root = a[3];
    if (a[4]) x->stamp = a[4];
    if (a[5]) x->first = a[5];
    if (a[6]) x->next = a[6];
    if (a[7]) x->loop = (const ad_loop **)a[7];
    for (int i = 0; i < 8; i++)
        if (!a[i]) return 0;
    x->cap = cap;
    return 1;
}

static int index_block(ad_ctx *c, sz_index *x, const ir_block *b, int parent, int branch, int root) {
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->s[i];
        if (s->kind != IR_PUSH && s->kind != IR_IF && s->kind != IR_FOR && s->kind != IR_WHILE) continue;
        if (x->n == x->cap && !grow_ix(x)) return 0;
        int id = x->n++;
        x->node[id] = s;
        x->parent[id] = parent;
        x->branch[id] = (unsigned char)branch;
        x->root[id] = root;
        x->stamp[id] = -1;
        x->loop[id] = NULL;
        if (s->kind == IR_PUSH) {
            if (x->nsites == x->capsites) {
                int nc = x->capsites ? x->capsites * 2 : 256;
                int *a = realloc(x->sites, sizeof(int) * (size_t)nc), *b2 = realloc(x->site_stack, sizeof(int) * (size_t)nc);
                if (a) x->sites = a;
                if (b2) x->site_stack = b2;
                if (!a || !b2) return 0;
                x->capsites = nc;
            }
            x->sites[x->nsites] = id;
            x->site_stack[x->nsites++] = s->stack;
            continue;
        }
        if (s->kind != IR_IF) {
            for (size_t h = ptr_hash(s, x->lcap); x->lhash[h]; h = (h + 1) & (x->lcap - 1))
                if (x->lhash[h]->s == s) {
                    x->loop[id] = x->lhash[h];
                    break;
                }
        }
        if (!index_block(c, x, &s->body, id, 0, root)) return 0;
        if (s->kind == IR_IF && !index_block(c, x, &s->orelse, id, 1, root)) return 0;
    }
    return 1;
}

/* Links the paths from the root to stack st's sites. The sites are in program order and are
 * linked last first, each list growing at its head: every list ends up in program order. */
static void link_paths(sz_index *x, int st) {
    for (int k = x->site_start[st + 1] - 1; k >= x->site_start[st]; k--) {
        int id = x->sites[k];
        if (x->stamp[id] == st) continue;
        x->stamp[id] = st;
        for (;;) {
            int p = x->parent[id];
            if (p < 0) {
                int r = x->root[id];
                if (x->rstamp[r] != st) {
                    x->rstamp[r] = st;
                    x->rfirst[r] = -1;
                }
                x->next[id] = x->rfirst[r];
                x->rfirst[r] = id;
                break;
            }
            int fresh = x->stamp[p] != st;
            if (fresh) {
                x->stamp[p] = st;
                x->first[2 * p] = x->first[2 * p + 1] = -1;
            }
            x->next[id] = x->first[2 * p + x->branch[id]];
            x->first[2 * p + x->branch[id]] = id;
            if (!fresh) break;
            id = p;
        }
    }
}

static ir_size *blk(ad_ctx *c, const sz_index *x, int id);
static ir_size *stmt(ad_ctx *c, const sz_index *x, int id) {
    const ir_stmt *s = x->node[id];
    switch (s->kind) {
    case IR_PUSH:
        return k_(c, 1);
    case IR_IF:
        return op2(c, IRS_MAX, blk(c, x, x->first[2 * id]), blk(c, x, x->first[2 * id + 1]));
    case IR_FOR:
    case IR_WHILE: {
        const ad_loop *L = x->loop[id];
        int bind = L && L->isfor && L->var >= 0 && c->nsenc < 64;
        if (bind) c->senc[c->nsenc++] = L;
        ir_size *in = blk(c, x, x->first[2 * id]);
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
/* the statements of one block that lie on the paths (a list from link_paths) */
static ir_size *blk(ad_ctx *c, const sz_index *x, int id) {
    ir_size *r = NULL;
    for (; id >= 0 && !isdef(r); id = x->next[id]) r = op2(c, IRS_ADD, r, stmt(c, x, id));
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

static ir_size *stack_size(ad_ctx *c, sz_index *x, int st, const ir_top *par) {
    c->nsenc = 0;
    link_paths(x, st);
    const int r = c->stack_top[st] + 1;
    ir_size *s = x->rstamp[r] == st ? blk(c, x, x->rfirst[r]) : NULL;
    if (!s) return k_(c, 0);
    if (par && !isdef(s))
        for (int d = par->ndim - 1; d >= 0 && !isdef(s); d--)
            if (mentions(s, par->idx_var[d])) s = range(c, par->idx_var[d], par->start[d], par->stop[d], s);
    int binders[DVM_MAX_SIZE_DEPTH + 1];
    if (!isdef(s) && !fix_depth(s, binders, 0)) s = mk(c, IRS_DEFAULT);
    return s;
}

int ad_stack_sizes(ad_ctx *c, const ir_block *sfwd, const ir_block *pfwd, const ir_top *pre, int ntops) {
    sz_index x;
    memset(&x, 0, sizeof x);
    int ok = 0;
    x.lcap = 16;
    while (x.lcap < (size_t)c->ngloops * 2 + 2) x.lcap *= 2;
    x.lhash = calloc(x.lcap, sizeof *x.lhash);
    x.rfirst = malloc(sizeof(int) * (size_t)(ntops + 1));
    x.rstamp = malloc(sizeof(int) * (size_t)(ntops + 1));
    x.site_start = calloc((size_t)c->nstacks + 2, sizeof(int));
    if (!x.lhash || !x.rfirst || !x.rstamp || !x.site_start) goto done;
    for (int i = 0; i < c->ngloops; i++) {
        size_t h = ptr_hash(c->gloops[i].s, x.lcap);
        while (x.lhash[h] && x.lhash[h]->s != c->gloops[i].s) h = (h + 1) & (x.lcap - 1);
        if (!x.lhash[h]) x.lhash[h] = &c->gloops[i]; /* the first one, as a linear search finds */
    }
    for (int r = 0; r <= ntops; r++) x.rstamp[r] = -1;
    int used = 0;
    for (int s = 0; s < c->nstacks; s++) used |= c->stack_top[s] < 0;
    if (used && !index_block(c, &x, sfwd, -1, 0, 0)) goto done;
    unsigned char *want = calloc((size_t)ntops + 1, 1);
    if (!want) goto done;
    for (int s = 0; s < c->nstacks; s++)
        if (c->stack_top[s] >= 0 && c->stack_top[s] < ntops) want[c->stack_top[s]] = 1;
    for (int t = 0; t < ntops; t++)
        if (want[t] && !index_block(c, &x, &pfwd[t], -1, 0, t + 1)) {
            free(want);
            goto done;
        }
    free(want);
    /* the sites, grouped by stack (counting sort) */
    int *sorted = malloc(sizeof(int) * (size_t)(x.nsites + 1));
    if (!sorted) goto done;
    for (int i = 0; i < x.nsites; i++)
        if (x.site_stack[i] >= 0 && x.site_stack[i] < c->nstacks) x.site_start[x.site_stack[i] + 1]++;
    for (int s = 0; s < c->nstacks; s++) x.site_start[s + 1] += x.site_start[s];
    int *fill = calloc((size_t)c->nstacks + 1, sizeof(int));
    if (!fill) {
        free(sorted);
        goto done;
    }
    for (int i = 0; i < x.nsites; i++) {
        int st = x.site_stack[i];
        if (st >= 0 && st < c->nstacks) sorted[x.site_start[st] + fill[st]++] = x.sites[i];
    }
    free(fill);
    free(x.sites);
    x.sites = sorted;
    for (int s = 0; s < c->nstacks && !c->oom; s++) {
        int t = c->stack_top[s];
        c->stacks[s].size = stack_size(c, &x, s, t < 0 ? NULL : &pre[t]);
    }
    ok = 1;
done:
    free(x.node);
    free(x.parent);
    free(x.branch);
    free(x.root);
    free(x.stamp);
    free(x.first);
    free(x.next);
    free(x.loop);
    free(x.rfirst);
    free(x.rstamp);
    free(x.site_start);
    free(x.sites);
    free(x.site_stack);
    free(x.lhash);
    if (!ok) c->oom = 1;
    return ok ? 0 : -1;
}
