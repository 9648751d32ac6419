/* autodiff.c: derives the adjoint variant (reverse mode) of every kernel from its forward
 * variant, and calls ad_tangent.c for the tangent variant. docs/autodiff.md explains the
 * method: break/continue become flags, then each parallel body (and the serial code) runs a
 * forward sweep that pushes every overwritten value the reverse sweep needs, then a reverse
 * sweep that pops them back ("restore on pop") while it accumulates adjoints. */
#include "compiler/ad_internal.h"
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- building IR */
void *ad_alloc(ad_ctx *c, size_t n) {
    void *p = dvm_arena_alloc(c->A, n);
    if (!p) {
        /* out of memory: keep going on scratch so no caller needs a check; the pass fails */
        static _Alignas(16) unsigned char scratch[4096];
        c->oom = 1;
        memset(scratch, 0, sizeof scratch);
        return n <= sizeof scratch ? scratch : NULL;
    }
    return p;
}

int ad_newvar(ad_ctx *c, const char *name, int type, int storage, int line, int primal) {
    int id = ir_var_new(c->A, c->k, name, type, storage, line, 0);
    if (id < 0) {
        c->oom = 1;
        return 0;
    }
    c->k->vars[id].primal = primal;
    return id;
}

ir_expr *ad_ex(ad_ctx *c, int kind, int type, int line, int col) {
    ir_expr *e = ad_alloc(c, sizeof *e);
    e->kind = (uint8_t)kind;
    e->type = (uint8_t)type;
    e->line = line;
    e->col = col;
    return e;
}
ir_expr *ad_kf(ad_ctx *c, float f) {
    ir_expr *e = ad_ex(c, IR_CONST, DVM_T_F32, 0, 0);
    e->k.f = f;
    return e;
}
ir_expr *ad_ki(ad_ctx *c, int32_t i) {
    ir_expr *e = ad_ex(c, IR_CONST, DVM_T_I32, 0, 0);
    e->k.i = i;
    return e;
}
ir_expr *ad_kb(ad_ctx *c, int b) {
    ir_expr *e = ad_ex(c, IR_CONST, DVM_T_BOOL, 0, 0);
    e->k.i = b != 0;
    return e;
}
ir_expr *ad_var(ad_ctx *c, int var) {
    ir_expr *e = ad_ex(c, IR_VAR, c->k->vars[var].type, 0, 0);
    e->var = var;
    return e;
}
ir_expr *ad_un(ad_ctx *c, int op, ir_expr *a) {
    ir_expr *e = ad_ex(c, IR_UN, dvm_op_result_type((uint32_t)op), a->line, a->col);
    e->op = (uint16_t)op;
    e->a = a;
    return e;
}
ir_expr *ad_bin(ad_ctx *c, int op, ir_expr *a, ir_expr *b) {
    ir_expr *e = ad_ex(c, IR_BIN, dvm_op_result_type((uint32_t)op), a->line, a->col);
    e->op = (uint16_t)op;
    e->a = a;
    e->b = b;
    return e;
}
ir_expr *ad_sel(ad_ctx *c, ir_expr *cond, ir_expr *a, ir_expr *b) {
    ir_expr *e = ad_ex(c, IR_SELECT, a->type, a->line, a->col);
    e->a = cond;
    e->b = a;
    e->c = b;
    return e;
}
/* a load of `slot` at the same indices as ld (the index trees are shared) */
ir_expr *ad_load_like(ad_ctx *c, const ir_expr *ld, int slot) {
    ir_expr *e = ad_ex(c, IR_LOAD, DVM_T_F32, ld->line, ld->col);
    e->slot = slot;
    e->nidx = ld->nidx;
    for (int i = 0; i < ld->nidx; i++) e->idx[i] = ld->idx[i];
    return e;
}
ir_stmt *ad_st(ad_ctx *c, int kind, int line, int col) {
    ir_stmt *s = ad_alloc(c, sizeof *s);
    s->kind = (uint8_t)kind;
    s->line = line;
    s->col = col;
    return s;
}
ir_stmt *ad_assign(ad_ctx *c, int var, ir_expr *e) {
    ir_stmt *s = ad_st(c, IR_ASSIGN, e->line, e->col);
    s->var = var;
    s->e = e;
    return s;
}
void ad_push_stmt(ad_ctx *c, ir_block *b, ir_stmt *s) {
    if (b->n == b->cap) {
        int cap = b->cap ? 2 * b->cap : 8;
        ir_stmt **n = dvm_arena_grow(c->A, b->s, sizeof(ir_stmt *) * (size_t)b->cap, sizeof(ir_stmt *) * (size_t)cap);
        if (!n) {
            c->oom = 1;
            return;
        }
        b->s = n;
        b->cap = cap;
    }
    b->s[b->n++] = s;
}
void ad_append(ad_ctx *c, ir_block *dst, const ir_block *src) {
    for (int i = 0; i < src->n; i++) ad_push_stmt(c, dst, src->s[i]);
}
static ir_stmt *st_push(ad_ctx *c, int stack, ir_expr *e, int line) {
    ir_stmt *s = ad_st(c, IR_PUSH, line, 0);
    s->stack = stack;
    s->e = e;
    return s;
}
static ir_stmt *st_pop(ad_ctx *c, int stack, int var, int line) {
    ir_stmt *s = ad_st(c, IR_POP, line, 0);
    s->stack = stack;
    s->var = var;
    return s;
}
static ir_stmt *st_for(ad_ctx *c, int var, ir_expr *start, ir_expr *stop, int line, int col) {
    ir_stmt *s = ad_st(c, IR_FOR, line, col);
    s->var = var;
    s->e = start;
    s->e2 = stop;
    return s;
}

static int new_stack(ad_ctx *c, int type, int var, const char *name, int line) {
    if (c->nstacks == c->capstacks) {
        int cap = c->capstacks ? 2 * c->capstacks : 16;
        ir_stack *s = dvm_arena_grow(c->A, c->stacks, sizeof(ir_stack) * (size_t)c->capstacks, sizeof(ir_stack) * (size_t)cap);
        int *o = dvm_arena_grow(c->A, c->stack_top, sizeof(int) * (size_t)c->capstacks, sizeof(int) * (size_t)cap);
        if (!s || !o) {
            c->oom = 1;
            return 0;
        }
        c->stacks = s;
        c->stack_top = o;
        c->capstacks = cap;
    }
    ir_stack *s = &c->stacks[c->nstacks];
    memset(s, 0, sizeof *s);
    s->type = (uint8_t)type;
    s->var = var;
    s->name = name;
    s->line = line;
    s->serial = !c->par;
    c->stack_top[c->nstacks] = c->par ? c->cur_top : -1;
    return c->nstacks++;
}

static int hidden(ad_ctx *c, const char *name, int type, int line) {
    return ad_newvar(c, name, type, c->par ? IR_LOCAL : IR_GLOBAL, line, -1);
}

static void reg_loop(ad_ctx *c, ad_loop **arr, int *n, int *cap, const ir_stmt *s, int isfor, int var,
                     const ir_expr *start, const ir_expr *stop) {
    if (*n == *cap) {
        int nc = *cap ? 2 * *cap : 16;
        ad_loop *a = dvm_arena_grow(c->A, *arr, sizeof(ad_loop) * (size_t)*cap, sizeof(ad_loop) * (size_t)nc);
        if (!a) {
            c->oom = 1;
            return;
        }
        *arr = a;
        *cap = nc;
    }
    (*arr)[(*n)++] = (ad_loop){s, isfor, var, start, stop};
}

/* ---------------------------------------------------------------- reads after stores within a statement */
/* Each top-level statement's reverse sweep sees the arrays as they were before that statement
 * ran (vm/launch.c versions them between statements). A value that one statement stores (or
 * accumulates into) and then reads back itself is not among them: the reverse restores each
 * such element as it passes its store (replay_store, c->restore, set here per statement and
 * slot). */
typedef struct rchk {
    ad_ctx *c;
    const ir_stmt **stored; /* per forward slot: the first store or atomic of this statement */
    unsigned char *restore; /* per slot: read after a store of this statement */
} rchk;

/* Calls f(arg, slot) for each load in e, in evaluation order (a load's index expressions
   first): the walk that reads_after_stores and the fusion's slot use share. */
static void each_load(const ir_expr *e, void (*f)(void *, int), void *arg) {
    if (!e) return;
    if (e->kind == IR_LOAD) {
        for (int i = 0; i < e->nidx; i++) each_load(e->idx[i], f, arg);
        f(arg, e->slot);
        return;
    }
    each_load(e->a, f, arg);
    each_load(e->b, f, arg);
    each_load(e->c, f, arg);
}
static void rchk_load(void *arg, int slot) {
    rchk *r = arg;
    if (slot >= 0 && slot < r->c->nfslots && r->stored[slot]) r->restore[slot] = 1;
}
static void rchk_expr(rchk *r, const ir_expr *e) { each_load(e, rchk_load, r); }
static void rchk_block(rchk *r, const ir_block *b);
/* every store and atomic of b, nested ones included */
static void rchk_mark(rchk *r, const ir_block *b) {
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->s[i];
        if ((s->kind == IR_STORE || s->kind == IR_ATOMIC) && s->slot >= 0 && s->slot < r->c->nfslots && !r->stored[s->slot])
            r->stored[s->slot] = s;
        rchk_mark(r, &s->body);
        rchk_mark(r, &s->orelse);
    }
}
static void rchk_stmt(rchk *r, const ir_stmt *s) {
    for (int i = 0; i < s->nidx; i++) rchk_expr(r, s->idx[i]);
    rchk_expr(r, s->e);
    rchk_expr(r, s->e2);
    switch (s->kind) {
    case IR_STORE:
    case IR_ATOMIC:
        if (s->slot >= 0 && s->slot < r->c->nfslots && !r->stored[s->slot]) r->stored[s->slot] = s;
        break;
    case IR_IF:
        rchk_block(r, &s->body);
        rchk_block(r, &s->orelse);
        break;
    case IR_WHILE:
    case IR_FOR:
        /* a read in a later iteration follows the stores of an earlier one: the body's stores
           count from its start (marked first, so each body is walked once per level) */
        rchk_mark(r, &s->body);
        rchk_block(r, &s->body);
        break;
    default:
        break;
    }
}
static void rchk_block(rchk *r, const ir_block *b) {
    for (int i = 0; i < b->n; i++) rchk_stmt(r, b->s[i]);
}
static void reads_after_stores(ad_ctx *c) {
    const ir_variant *f = &c->k->v[DVM_V_FORWARD];
    rchk r = {c, ad_alloc(c, sizeof(ir_stmt *) * (size_t)(f->nslots + 1)), NULL};
    c->restore = ad_alloc(c, (size_t)f->ntops * (size_t)f->nslots + 1);
    if (c->oom) return;
    for (int t = 0; t < f->ntops; t++) {
        const ir_top *tp = &f->tops[t];
        memset(r.stored, 0, sizeof(ir_stmt *) * (size_t)(f->nslots + 1));
        /* in a parallel loop each iteration owns what it reads back (anything else is a race) */
        r.restore = c->restore + (size_t)t * (size_t)f->nslots;
        if (tp->parallel) {
            for (int d = 0; d < tp->ndim; d++) rchk_expr(&r, tp->stop[d]);
            for (int d = 0; d < tp->ndim; d++) rchk_expr(&r, tp->start[d]);
            rchk_block(&r, &tp->body);
        } else if (tp->stmt) {
            rchk_stmt(&r, tp->stmt);
        }
    }
}

/* ---------------------------------------------------------------- the last stage's fusion */
/* Which forward slots a top reads (loads, in any expression) and writes (stores, atomics). */
typedef struct suse {
    int nf;
    unsigned char *rd, *wr;
    int ifs; /* if statements */
} suse;
static void su_load(void *arg, int slot) {
    suse *u = arg;
    if (slot >= 0 && slot < u->nf) u->rd[slot] = 1;
}
static void su_expr(suse *u, const ir_expr *e) { each_load(e, su_load, u); }
static void su_block(suse *u, const ir_block *b);
static void su_stmt(suse *u, const ir_stmt *s) {
    for (int i = 0; i < s->nidx; i++) su_expr(u, s->idx[i]);
    su_expr(u, s->e);
    su_expr(u, s->e2);
    if ((s->kind == IR_STORE || s->kind == IR_ATOMIC) && s->slot >= 0 && s->slot < u->nf) u->wr[s->slot] = 1;
    if (s->kind == IR_IF) u->ifs++;
    su_block(u, &s->body);
    su_block(u, &s->orelse);
}
static void su_block(suse *u, const ir_block *b) {
    for (int i = 0; i < b->n; i++) su_stmt(u, b->s[i]);
}
static void su_top(suse *u, const ir_top *t) {
    if (t->parallel) {
        for (int d = 0; d < t->ndim; d++) su_expr(u, t->stop[d]);
        for (int d = 0; d < t->ndim; d++) su_expr(u, t->start[d]);
        su_block(u, &t->body);
    } else if (t->stmt) {
        su_stmt(u, t->stmt);
    }
}
/* The last stage may run forward inside its reverse sweep (adjoint()), whose forward sweep
   recomputes the stage anyway, when it is a parallel loop outside a serial loop and nothing
   reads what it writes: neither the stage itself (so its reverse sees the arrays as they were
   before it, and no value needs restoring) nor another stage (so no stage's reverse needs a
   copy from before it, and the host's versions never involve it). A stage with an if stays
   unfused: both sweeps would test its condition, kept in a register or on a stack, where the
   unfused reverse's bounds tests fold into a few jumps (the stencil's JOUTIs). Returns its
   index or -1. */
static int fused_stage(ad_ctx *c) {
    const ir_variant *f = &c->k->v[DVM_V_FORWARD];
    const int t = f->ntops - 1;
    if (t < 0 || !f->tops[t].parallel || f->tops[t].loop) return -1;
    const int nf = f->nslots;
    suse me = {nf, ad_alloc(c, (size_t)nf + 1), ad_alloc(c, (size_t)nf + 1), 0};
    suse rest = {nf, ad_alloc(c, (size_t)nf + 1), ad_alloc(c, (size_t)nf + 1), 0};
    if (c->oom) return -1;
    su_top(&me, &f->tops[t]);
    if (me.ifs) return -1;
    for (int u = 0; u < t; u++) su_top(&rest, &f->tops[u]);
    for (int q = 0; q < nf; q++)
        if (me.wr[q] && (me.rd[q] || rest.rd[q] || rest.wr[q])) return -1;
    return t;
}

/* ---------------------------------------------------------------- break/continue elimination */
/* Does s contain a break (what=IR_BREAK) or continue of the loop being processed? Nested
 * loops own theirs. */
static int has_jump(const ir_stmt *s, int what) {
    if (s->kind == what) return 1;
    if (s->kind != IR_IF) return 0;
    for (int i = 0; i < s->body.n; i++)
        if (has_jump(s->body.s[i], what)) return 1;
    for (int i = 0; i < s->orelse.n; i++)
        if (has_jump(s->orelse.s[i], what)) return 1;
    return 0;
}
static int block_has_jump(const ir_block *b, int what) {
    for (int i = 0; i < b->n; i++)
        if (has_jump(b->s[i], what)) return 1;
    return 0;
}

static ir_stmt *pre_stmt(ad_ctx *c, const ir_stmt *s, int brk, int cont);
/* The statements of b from `from` on. After a statement that may break or continue, the rest
 * runs only while neither flag is set. */
static void pre_block(ad_ctx *c, const ir_block *b, int from, ir_block *out, int brk, int cont) {
    for (int i = from; i < b->n; i++) {
        const ir_stmt *s = b->s[i];
        ad_push_stmt(c, out, pre_stmt(c, s, brk, cont));
        int jumps = (brk >= 0 && has_jump(s, IR_BREAK)) || (cont >= 0 && has_jump(s, IR_CONTINUE));
        if (jumps && i + 1 < b->n) {
            ir_expr *go = NULL;
            if (brk >= 0) go = ad_un(c, DVM_OP_NOT, ad_var(c, brk));
            if (cont >= 0) {
                ir_expr *nc = ad_un(c, DVM_OP_NOT, ad_var(c, cont));
                if (go) {
                    ir_expr *a = ad_ex(c, IR_AND, DVM_T_BOOL, s->line, s->col);
                    a->a = go;
                    a->b = nc;
                    go = a;
                } else {
                    go = nc;
                }
            }
            ir_stmt *g = ad_st(c, IR_IF, b->s[i + 1]->line, b->s[i + 1]->col);
            g->e = go;
            pre_block(c, b, i + 1, &g->body, brk, cont);
            ad_push_stmt(c, out, g);
            return;
        }
    }
}

static ir_stmt *pre_loop(ad_ctx *c, const ir_stmt *s) {
    int hb = block_has_jump(&s->body, IR_BREAK), hc = block_has_jump(&s->body, IR_CONTINUE);
    ir_stmt *n = ad_st(c, s->kind, s->line, s->col);
    *n = *s;
    memset(&n->body, 0, sizeof n->body);
    if (!hb && !hc) {
        pre_block(c, &s->body, 0, &n->body, -1, -1);
        return n;
    }
    int brk = hb ? hidden(c, dvm_arena_printf(c->A, "break flag of the loop at line %d", s->line), DVM_T_BOOL, s->line) : -1;
    int cont = hc ? hidden(c, dvm_arena_printf(c->A, "continue flag of the loop at line %d", s->line), DVM_T_BOOL, s->line) : -1;
    ir_block body = {0};
    if (cont >= 0) ad_push_stmt(c, &body, ad_assign(c, cont, ad_kb(c, 0)));
    if (s->kind == IR_FOR && hb) {
        /* for with break -> c = start; e = stop; while not brk and c < e: v = c; body; c += 1 */
        ir_stmt *out = ad_st(c, IR_IF, s->line, s->col); /* a block holder: if True */
        out->e = ad_kb(c, 1);
        int cv = hidden(c, dvm_arena_printf(c->A, "counter of the loop at line %d", s->line), DVM_T_I32, s->line);
        int ev = hidden(c, dvm_arena_printf(c->A, "stop of the loop at line %d", s->line), DVM_T_I32, s->line);
        ad_push_stmt(c, &out->body, ad_assign(c, cv, s->e ? s->e : ad_ki(c, 0)));
        ad_push_stmt(c, &out->body, ad_assign(c, ev, s->e2));
        ad_push_stmt(c, &out->body, ad_assign(c, brk, ad_kb(c, 0)));
        ir_stmt *w = ad_st(c, IR_WHILE, s->line, s->col);
        ir_expr *a = ad_ex(c, IR_AND, DVM_T_BOOL, s->line, s->col);
        a->a = ad_un(c, DVM_OP_NOT, ad_var(c, brk));
        a->b = ad_bin(c, DVM_OP_LTI, ad_var(c, cv), ad_var(c, ev));
        w->e = a;
        ad_push_stmt(c, &w->body, ad_assign(c, s->var, ad_var(c, cv)));
        ad_append(c, &w->body, &body);
        pre_block(c, &s->body, 0, &w->body, brk, cont);
        ad_push_stmt(c, &w->body, ad_assign(c, cv, ad_bin(c, DVM_OP_ADDI, ad_var(c, cv), ad_ki(c, 1))));
        ad_push_stmt(c, &out->body, w);
        reg_loop(c, &c->conv, &c->nconv, &c->capconv, w, 1, s->var, s->e, s->e2);
        return out;
    }
    if (s->kind == IR_WHILE && hb) {
        ir_stmt *out = ad_st(c, IR_IF, s->line, s->col);
        out->e = ad_kb(c, 1);
        ad_push_stmt(c, &out->body, ad_assign(c, brk, ad_kb(c, 0)));
        ir_expr *a = ad_ex(c, IR_AND, DVM_T_BOOL, s->line, s->col); /* the flag first: no read after break */
        a->a = ad_un(c, DVM_OP_NOT, ad_var(c, brk));
        a->b = s->e;
        n->e = a;
        ad_append(c, &n->body, &body);
        pre_block(c, &s->body, 0, &n->body, brk, cont);
        ad_push_stmt(c, &out->body, n);
        return out;
    }
    ad_append(c, &n->body, &body); /* continue only */
    pre_block(c, &s->body, 0, &n->body, brk, cont);
    return n;
}

static ir_stmt *pre_stmt(ad_ctx *c, const ir_stmt *s, int brk, int cont) {
    switch (s->kind) {
    case IR_BREAK:
    case IR_CONTINUE: {
        int f = s->kind == IR_BREAK ? brk : cont;
        if (f < 0) { /* the checker lets no jump outside a loop through; keep the IR sane anyway */
            dvm_diag(c->d, s->line, s->col, "kernel '%s': %s outside a loop", c->k->name,
                     s->kind == IR_BREAK ? "break" : "continue");
            f = hidden(c, "stray jump", DVM_T_BOOL, s->line);
        }
        ir_stmt *a = ad_assign(c, f, ad_kb(c, 1));
        a->line = s->line;
        a->col = s->col;
        return a;
    }
    case IR_IF: {
        ir_stmt *n = ad_st(c, IR_IF, s->line, s->col);
        *n = *s;
        memset(&n->body, 0, sizeof n->body);
        memset(&n->orelse, 0, sizeof n->orelse);
        pre_block(c, &s->body, 0, &n->body, brk, cont);
        pre_block(c, &s->orelse, 0, &n->orelse, brk, cont);
        return n;
    }
    case IR_WHILE:
    case IR_FOR:
        return pre_loop(c, s);
    default:
        return (ir_stmt *)s; /* leaves are shared, never mutated */
    }
}

/* ---------------------------------------------------------------- analysis */
static int adjointable(const ad_ctx *c, int var) {
    const ir_var *v = &c->k->vars[var];
    return v->type == DVM_T_F32 && (v->storage == IR_LOCAL || v->storage == IR_GLOBAL);
}

int ad_active(const ad_ctx *c, const ir_expr *e) {
    if (!e || e->type != DVM_T_F32) return 0;
    switch (e->kind) {
    case IR_VAR: return adjointable(c, e->var);
    case IR_LOAD: return e->slot >= 0 && e->slot < c->nfslots && c->dslot[e->slot] >= 0;
    case IR_CONST: case IR_SHAPE: return 0;
    case IR_SELECT: case IR_COND: return ad_active(c, e->b) || ad_active(c, e->c);
    default: return ad_active(c, e->a) || ad_active(c, e->b);
    }
}

/* ---------------------------------------------------------------- useful assignments */
/* An assignment `v = e` (v adjointable) is useful when the value it gives may reach a
 * gradient: read, on some path, by an f32 store or += to an f32 array, or by another useful
 * assignment (backward liveness of the adjointable variables, to a fixed point over loops).
 * Only useful ones reset v's adjoint and propagate it into e, and only their reads keep
 * stacks. A useless one's adjoint is zero (no use of its value adds to it, and each use's
 * reaching definitions are useful, so they reset it), but its partial derivatives are
 * evaluated at its own primal values, which may be inf or NaN where nothing reads them (a
 * variable that overflows and feeds no output): -0.0 * inf is NaN, and it would flow on into
 * its operands' adjoints and from there into the gradients. */
static size_t stab_slot(const ir_stmt *const *key, size_t cap, const ir_stmt *s) {
    size_t h = (size_t)(((uint64_t)(uintptr_t)s >> 4) * 0x9E3779B97F4A7C15ull >> 17) & (cap - 1);
    while (key[h] && key[h] != s) h = (h + 1) & (cap - 1);
    return h;
}
/* grows a table (keys, and values when val is not NULL) to hold one more, at most half full */
static int stab_grow(ad_ctx *c, const ir_stmt ***key, uint64_t ***val, size_t n, size_t *cap) {
    if (2 * (n + 1) <= *cap) return 0;
    size_t nc = *cap ? 2 * *cap : 64;
    const ir_stmt **k = ad_alloc(c, sizeof *k * nc);
    uint64_t **v = val ? ad_alloc(c, sizeof *v * nc) : NULL;
    if (c->oom) return -1;
    for (size_t i = 0; i < *cap; i++) {
        if (!(*key)[i]) continue;
        size_t h = stab_slot(k, nc, (*key)[i]);
        k[h] = (*key)[i];
        if (val) v[h] = (*val)[i];
    }
    *key = k;
    if (val) *val = v;
    *cap = nc;
    return 0;
}
static int useful(const ad_ctx *c, const ir_stmt *s) {
    return c->capuseful && c->useful[stab_slot(c->useful, c->capuseful, s)] == s;
}
static void set_useful(ad_ctx *c, const ir_stmt *s) {
    if (useful(c, s) || stab_grow(c, &c->useful, NULL, c->nuseful, &c->capuseful)) return;
    c->useful[stab_slot(c->useful, c->capuseful, s)] = s;
    c->nuseful++;
}
/* the live-in set a loop reached at its last visit (zero at the first): the fixed point of
 * the next visit, whose live-out only grows, starts there, so nested loops cost no more
 * passes than their sets grow */
static uint64_t *loop_set(ad_ctx *c, const ir_stmt *s) {
    size_t h = c->caploops ? stab_slot(c->lkey, c->caploops, s) : 0;
    if (c->caploops && c->lkey[h] == s) return c->lset[h];
    uint64_t *set = ad_alloc(c, sizeof(uint64_t) * (size_t)c->nwords);
    if (c->oom || stab_grow(c, &c->lkey, &c->lset, c->nloops, &c->caploops)) return NULL;
    h = stab_slot(c->lkey, c->caploops, s);
    c->lkey[h] = s;
    c->lset[h] = set;
    c->nloops++;
    return set;
}
/* adds to L the variables whose adjoints ad_prop(e) would reach */
static void use_vars(const ad_ctx *c, const ir_expr *e, uint64_t *L) {
    if (!e || e->type != DVM_T_F32) return;
    switch (e->kind) {
    case IR_VAR:
        if (e->var >= 0 && e->var < c->nv1 && adjointable(c, e->var)) L[e->var >> 6] |= 1ull << (e->var & 63);
        return;
    case IR_LOAD: case IR_CONST: case IR_SHAPE: return;
    case IR_SELECT: case IR_COND: use_vars(c, e->b, L); use_vars(c, e->c, L); return;
    default: use_vars(c, e->a, L); use_vars(c, e->b, L); return;
    }
}
static int is_f32_slot(const ad_ctx *c, int slot);
static void live_block(ad_ctx *c, const ir_block *b, uint64_t *L);
/* L: the variables live after s (their value may reach a gradient); becomes those live before */
static void live_stmt(ad_ctx *c, const ir_stmt *s, uint64_t *L) {
    int nw = c->nwords;
    switch (s->kind) {
    case IR_ASSIGN: {
        int v = s->var;
        if (v < 0 || v >= c->nv1 || !adjointable(c, v)) return;
        int live = (L[v >> 6] >> (v & 63)) & 1;
        L[v >> 6] &= ~(1ull << (v & 63));
        if (live) {
            set_useful(c, s);
            use_vars(c, s->e, L);
        }
        return;
    }
    case IR_STORE:
    case IR_ATOMIC:
        if (is_f32_slot(c, s->slot) && (s->kind == IR_STORE || s->op == DVM_OP_ATOMADDF)) use_vars(c, s->e, L);
        return;
    case IR_IF: {
        uint64_t *o = malloc(sizeof(uint64_t) * (size_t)nw);
        if (!o) {
            c->oom = 1;
            return;
        }
        memcpy(o, L, sizeof(uint64_t) * (size_t)nw);
        live_block(c, &s->body, L);
        live_block(c, &s->orelse, o);
        for (int w = 0; w < nw; w++) L[w] |= o[w];
        free(o);
        return;
    }
    case IR_WHILE:
    case IR_FOR: { /* head = out | live-in(body, head): the body may run 0 or more times */
        uint64_t *head = loop_set(c, s), *t = malloc(sizeof(uint64_t) * (size_t)nw);
        if (!head || !t) {
            free(t);
            c->oom = 1;
            return;
        }
        for (int w = 0; w < nw; w++) head[w] |= L[w];
        for (int changed = 1; changed && !c->oom;) {
            memcpy(t, head, sizeof(uint64_t) * (size_t)nw);
            live_block(c, &s->body, t);
            changed = 0;
            for (int w = 0; w < nw; w++) {
                changed |= (t[w] & ~head[w]) != 0;
                head[w] |= t[w];
            }
        }
        memcpy(L, head, sizeof(uint64_t) * (size_t)nw);
        free(t);
        return;
    }
    default:
        return;
    }
}
static void live_block(ad_ctx *c, const ir_block *b, uint64_t *L) {
    for (int i = b->n - 1; i >= 0 && !c->oom; i--) live_stmt(c, b->s[i], L);
}
/* the tops in reverse order from the end, where nothing is live (globals are no outputs);
 * a parallel body runs 0 or more times, each iteration with its own locals */
static void find_useful(ad_ctx *c, const ir_top *pre, int nt) {
    c->nwords = c->nv1 / 64 + 1;
    uint64_t *L = ad_alloc(c, sizeof(uint64_t) * (size_t)c->nwords);
    uint64_t *b = ad_alloc(c, sizeof(uint64_t) * (size_t)c->nwords);
    if (c->oom) return;
    for (int t = nt - 1; t >= 0 && !c->oom; t--) {
        if (pre[t].parallel) {
            memcpy(b, L, sizeof(uint64_t) * (size_t)c->nwords);
            live_block(c, &pre[t].body, b);
            for (int w = 0; w < c->nwords; w++) L[w] |= b[w];
        } else if (pre[t].stmt) {
            live_stmt(c, pre[t].stmt, L);
        }
    }
}

static void mark_reads(ad_ctx *c, const ir_expr *e) {
    if (!e) return;
    if (e->kind == IR_VAR && e->var >= 0 && e->var < c->nv1) c->rread[e->var] = 1;
    for (int i = 0; i < e->nidx && e->kind == IR_LOAD; i++) mark_reads(c, e->idx[i]);
    mark_reads(c, e->a);
    mark_reads(c, e->b);
    mark_reads(c, e->c);
}
static int is_f32_slot(const ad_ctx *c, int slot) { return slot >= 0 && slot < c->nfslots && c->dslot[slot] >= 0; }

static void analyse_block(ad_ctx *c, const ir_block *b, int loop, int par);
static void site(ad_ctx *c, int var, int loop, const ir_expr *e, const ir_stmt *s) {
    if (var < 0 || var >= c->nv1) return;
    if (!c->nsites[var] && !loop) c->first[var] = s;
    c->nsites[var]++;
    if (loop) c->inloop[var] = 1;
    c->def[var] = c->nsites[var] == 1 && !loop ? e : NULL;
}
static void analyse_stmt(ad_ctx *c, const ir_stmt *s, int loop, int par) {
    switch (s->kind) {
    case IR_ASSIGN:
        site(c, s->var, loop, s->e, s);
        if (useful(c, s) && ad_active(c, s->e)) mark_reads(c, s->e);
        break;
    case IR_STORE:
    case IR_ATOMIC:
        if (is_f32_slot(c, s->slot) && (s->kind == IR_STORE || s->op == DVM_OP_ATOMADDF)) {
            for (int i = 0; i < s->nidx; i++) mark_reads(c, s->idx[i]);
            if (ad_active(c, s->e)) mark_reads(c, s->e);
        }
        break;
    case IR_IF:
        analyse_block(c, &s->body, loop, par);
        analyse_block(c, &s->orelse, loop, par);
        break;
    case IR_FOR:
        site(c, s->var, loop, NULL, s);
        analyse_block(c, &s->body, 1, par);
        break;
    case IR_WHILE:
        analyse_block(c, &s->body, 1, par);
        break;
    default:
        break;
    }
}
static void analyse_block(ad_ctx *c, const ir_block *b, int loop, int par) {
    for (int i = 0; i < b->n; i++) analyse_stmt(c, b->s[i], loop, par);
}
/* globals read by a parallel body must hold, when that body is reversed, the value they had
 * when it ran forward */
static void mark_global_reads(ad_ctx *c, const ir_expr *e) {
    if (!e) return;
    if (e->kind == IR_VAR && e->var >= 0 && e->var < c->nv1 && c->k->vars[e->var].storage == IR_GLOBAL) c->rread[e->var] = 1;
    for (int i = 0; i < e->nidx && e->kind == IR_LOAD; i++) mark_global_reads(c, e->idx[i]);
    mark_global_reads(c, e->a);
    mark_global_reads(c, e->b);
    mark_global_reads(c, e->c);
}
static void mark_global_reads_block(ad_ctx *c, const ir_block *b) {
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->s[i];
        for (int j = 0; j < s->nidx; j++) mark_global_reads(c, s->idx[j]);
        mark_global_reads(c, s->e);
        mark_global_reads(c, s->e2);
        mark_global_reads_block(c, &s->body);
        mark_global_reads_block(c, &s->orelse);
    }
}

/* the reverse sweep reads v after an assignment that may overwrite a value it still needs */
static int needs_stack(const ad_ctx *c, int var) {
    if (var < 0 || var >= c->nv1 || !c->rread[var]) return 0;
    int st = c->k->vars[var].storage;
    if (st != IR_LOCAL && st != IR_GLOBAL) return 0;
    return c->nsites[var] > 1 || c->inloop[var];
}
static int var_stack(ad_ctx *c, int var) {
    if (c->stk[var] < 0) {
        const ir_var *v = &c->k->vars[var];
        c->stk[var] = new_stack(c, v->type, var, v->name, v->line);
    }
    return c->stk[var];
}
static int adj_of(ad_ctx *c, int var) {
    if (c->deriv[var] < 0) {
        const ir_var *v = &c->k->vars[var];
        const char *name = dvm_arena_printf(c->A, "%s.grad", v->name ? v->name : "?");
        c->deriv[var] = ad_newvar(c, name, DVM_T_F32, v->storage, v->line, var);
    }
    return c->deriv[var];
}

/* ---------------------------------------------------------------- reverse sweep */
static ir_expr *hold(ad_ctx *c, ir_block *out, ir_expr *g, int force) {
    if (!force && (g->kind == IR_VAR || g->kind == IR_CONST)) return g;
    int p = c->par ? 1 : 0;
    if (c->tmptop == c->ntmps[p]) {
        if (c->ntmps[p] == c->captmps[p]) {
            int cap = c->captmps[p] ? 2 * c->captmps[p] : 16;
            int *t = dvm_arena_grow(c->A, c->tmps[p], sizeof(int) * (size_t)c->captmps[p], sizeof(int) * (size_t)cap);
            if (!t) {
                c->oom = 1;
                return g;
            }
            c->tmps[p] = t;
            c->captmps[p] = cap;
        }
        c->tmps[p][c->ntmps[p]++] = ad_newvar(c, "adjoint temporary", DVM_T_F32, p ? IR_LOCAL : IR_GLOBAL, 0, -1);
    }
    int t = c->tmps[p][c->tmptop++];
    ad_push_stmt(c, out, ad_assign(c, t, g));
    return ad_var(c, t);
}
ir_expr *ad_hold(ad_ctx *c, ir_block *out, ir_expr *g) { return hold(c, out, g, 0); }

void ad_prop(ad_ctx *c, ir_block *out, const ir_expr *e, ir_expr *g) {
    if (!ad_active(c, e)) return;
    switch (e->kind) {
    case IR_VAR: {
        int a = adj_of(c, e->var);
        if (c->k->vars[e->var].storage == IR_GLOBAL && c->par) {
            ir_stmt *s = ad_st(c, IR_UATOMIC_ADD, e->line, e->col);
            s->var = a;
            s->e = g;
            ad_push_stmt(c, out, s);
        } else {
            ad_push_stmt(c, out, ad_assign(c, a, ad_bin(c, DVM_OP_ADDF, ad_var(c, a), g)));
        }
        return;
    }
    case IR_LOAD: { /* parallel iterations may hit the same element */
        ir_stmt *s = ad_st(c, IR_ATOMIC, e->line, e->col);
        s->op = DVM_OP_ATOMADDF;
        s->slot = c->dslot[e->slot];
        s->nidx = e->nidx;
        for (int i = 0; i < e->nidx; i++) s->idx[i] = e->idx[i];
        s->e = g;
        ad_push_stmt(c, out, s);
        return;
    }
    case IR_UN:
    case IR_BIN:
    case IR_SELECT:
    case IR_COND: {
        int top = c->tmptop;
        g = ad_hold(c, out, g);
        if (e->kind == IR_COND) {
            ir_stmt *s = ad_st(c, IR_IF, e->line, e->col);
            s->e = e->a;
            ad_prop(c, &s->body, e->b, g);
            ad_prop(c, &s->orelse, e->c, g);
            ad_push_stmt(c, out, s);
        } else {
            ad_rev_fn f = ad_rev_table[e->kind == IR_SELECT ? DVM_OP_SEL : e->op];
            if (f) f(c, out, e, g); /* no rule: a non-differentiable op (//, %, ...): zero */
        }
        c->tmptop = top;
        return;
    }
    default:
        return;
    }
}

static ir_block rev_concat(ad_ctx *c, ir_block *revs, int n) {
    ir_block r = {0};
    for (int i = n - 1; i >= 0; i--) ad_append(c, &r, &revs[i]);
    return r;
}

static void gen_block(ad_ctx *c, const ir_block *src, ir_block *fwd, ir_block *rev);

static const ad_loop *find_loop(const ad_loop *arr, int n, const ir_stmt *s) {
    for (int i = 0; i < n; i++)
        if (arr[i].s == s) return &arr[i];
    return NULL;
}

/* A store or atomic of a top into a slot that the top reads back (c->restore): the forward
   sweep saves the element's value and stores (again, in a parallel top), so that later reads
   see what the forward saw; the reverse, first thing at this statement, puts the saved value
   back, so that the rules of this statement and of those before it read the element as it
   was then. The arrays the reverse writes are host copies (vm/launch.c): a parallel top's
   reverse replays its forward sweep on the copy from before the statement, and each
   iteration leaves it as it found it; serial code's reverse starts from a copy of what its
   forward left and walks it back. Returns whether it emitted the store. */
static int replay_store(ad_ctx *c, const ir_stmt *s, ir_block *fwd, ir_block *rev) {
    if (c->cur_top < 0 || !c->restore || s->slot < 0 || s->slot >= c->nfslots ||
        !c->restore[(size_t)c->cur_top * (size_t)c->nfslots + (size_t)s->slot])
        return 0;
    const ir_kernel *k = c->k;
    const int type = k->params[k->v[DVM_V_FORWARD].slots[s->slot].param].type;
    const char *aname = k->params[k->v[DVM_V_FORWARD].slots[s->slot].param].name;
    ir_expr *old = ad_ex(c, IR_LOAD, type, s->line, s->col);
    old->slot = s->slot;
    old->nidx = s->nidx;
    for (int i = 0; i < s->nidx; i++) old->idx[i] = s->idx[i];
    int st = new_stack(c, type, -1, dvm_arena_printf(c->A, "element of '%s' stored at line %d", aname, s->line), s->line);
    int v = hidden(c, dvm_arena_printf(c->A, "element of '%s' stored at line %d", aname, s->line), type, s->line);
    ad_push_stmt(c, fwd, st_push(c, st, old, s->line));
    ad_push_stmt(c, fwd, (ir_stmt *)s);
    ad_push_stmt(c, rev, st_pop(c, st, v, s->line));
    ir_stmt *put = ad_st(c, IR_STORE, s->line, s->col);
    put->slot = s->slot;
    put->nidx = s->nidx;
    for (int i = 0; i < s->nidx; i++) put->idx[i] = s->idx[i];
    put->e = ad_var(c, v);
    ad_push_stmt(c, rev, put);
    return 1;
}

/* One statement: its forward-sweep code goes to fwd, its reverse-sweep code to rev. */
static void gen_stmt(ad_ctx *c, const ir_stmt *s, ir_block *fwd, ir_block *rev) {
    switch (s->kind) {
    case IR_ASSIGN: {
        int st = needs_stack(c, s->var) && c->first[s->var] != s ? var_stack(c, s->var) : -1;
        if (st >= 0) ad_push_stmt(c, fwd, st_push(c, st, ad_var(c, s->var), s->line));
        ad_push_stmt(c, fwd, (ir_stmt *)s);
        if (useful(c, s)) { /* a useless one only restores v (no adjoint: find_useful) */
            int a = adj_of(c, s->var);
            int top = c->tmptop;
            ir_expr *t = NULL;
            if (ad_active(c, s->e)) t = hold(c, rev, ad_var(c, a), 1); /* the adjoint, before it is reset */
            /* reset to -0.0, the exact identity of f32 addition: the optimizer (opt.c) then
               turns the first contribution after it into a product or a copy */
            ad_push_stmt(c, rev, ad_assign(c, a, ad_kf(c, -0.0f)));
            if (st >= 0) ad_push_stmt(c, rev, st_pop(c, st, s->var, s->line));
            if (t) ad_prop(c, rev, s->e, t);
            c->tmptop = top;
        } else if (st >= 0) {
            ad_push_stmt(c, rev, st_pop(c, st, s->var, s->line));
        }
        return;
    }
    case IR_STORE: /* the stage's forward stored; its seed moves into e */
        if (!replay_store(c, s, fwd, rev) && c->replay) ad_push_stmt(c, fwd, (ir_stmt *)s);
        if (is_f32_slot(c, s->slot)) {
            int top = c->tmptop;
            ir_expr *ld = ad_ex(c, IR_LOAD, DVM_T_F32, s->line, s->col);
            ld->slot = c->dslot[s->slot];
            ld->nidx = s->nidx;
            for (int i = 0; i < s->nidx; i++) ld->idx[i] = s->idx[i];
            ir_expr *t = ad_active(c, s->e) ? ad_hold(c, rev, ld) : NULL;
            ir_stmt *z = ad_st(c, IR_STORE, s->line, s->col);
            z->slot = c->dslot[s->slot];
            z->nidx = s->nidx;
            for (int i = 0; i < s->nidx; i++) z->idx[i] = s->idx[i];
            z->e = ad_kf(c, 0.0f);
            ad_push_stmt(c, rev, z);
            if (t) ad_prop(c, rev, s->e, t);
            c->tmptop = top;
        }
        return;
    case IR_ATOMIC:
        if (!replay_store(c, s, fwd, rev) && c->replay) ad_push_stmt(c, fwd, (ir_stmt *)s);
        if (s->op == DVM_OP_ATOMADDF && is_f32_slot(c, s->slot) && ad_active(c, s->e)) {
            int top = c->tmptop;
            ir_expr *ld = ad_ex(c, IR_LOAD, DVM_T_F32, s->line, s->col);
            ld->slot = c->dslot[s->slot];
            ld->nidx = s->nidx;
            for (int i = 0; i < s->nidx; i++) ld->idx[i] = s->idx[i];
            ad_prop(c, rev, s->e, ad_hold(c, rev, ld));
            c->tmptop = top;
        }
        return; /* atomic max/min and i32 atomics: no derivative */
    case IR_IF: {
        ir_block fb = {0}, fo = {0}, rb = {0}, ro = {0};
        gen_block(c, &s->body, &fb, &rb);
        gen_block(c, &s->orelse, &fo, &ro);
        if (!rb.n && !ro.n) { /* nothing to reverse: no condition to keep */
            if (fb.n || fo.n) {
                ir_stmt *n = ad_st(c, IR_IF, s->line, s->col);
                n->e = s->e;
                n->body = fb;
                n->orelse = fo;
                ad_push_stmt(c, fwd, n);
            }
            return;
        }
        int cv = hidden(c, dvm_arena_printf(c->A, "condition of the if at line %d", s->line), DVM_T_BOOL, s->line);
        int cs = new_stack(c, DVM_T_BOOL, -1, c->k->vars[cv].name, s->line);
        ad_push_stmt(c, fwd, ad_assign(c, cv, s->e));
        ad_push_stmt(c, fwd, st_push(c, cs, ad_var(c, cv), s->line));
        ir_stmt *n = ad_st(c, IR_IF, s->line, s->col);
        n->e = ad_var(c, cv);
        n->body = fb;
        n->orelse = fo;
        ad_push_stmt(c, fwd, n);
        ad_push_stmt(c, rev, st_pop(c, cs, cv, s->line));
        ir_stmt *r = ad_st(c, IR_IF, s->line, s->col);
        r->e = ad_var(c, cv);
        r->body = rb;
        r->orelse = ro;
        ad_push_stmt(c, rev, r);
        return;
    }
    case IR_WHILE: {
        ir_block fb = {0}, rb = {0};
        gen_block(c, &s->body, &fb, &rb);
        const ad_loop *cf = find_loop(c->conv, c->nconv, s);
        ir_stmt *w = ad_st(c, IR_WHILE, s->line, s->col);
        w->e = s->e;
        w->body = fb;
        if (cf) reg_loop(c, &c->gloops, &c->ngloops, &c->capgloops, w, 1, cf->var, cf->start, cf->stop);
        else reg_loop(c, &c->gloops, &c->ngloops, &c->capgloops, w, 0, -1, NULL, NULL);
        if (!rb.n) {
            ad_push_stmt(c, fwd, w);
            return;
        }
        int nv = hidden(c, dvm_arena_printf(c->A, "trip count of the loop at line %d", s->line), DVM_T_I32, s->line);
        int ns = new_stack(c, DVM_T_I32, -1, c->k->vars[nv].name, s->line);
        ad_push_stmt(c, fwd, ad_assign(c, nv, ad_ki(c, 0)));
        ad_push_stmt(c, &w->body, ad_assign(c, nv, ad_bin(c, DVM_OP_ADDI, ad_var(c, nv), ad_ki(c, 1))));
        ad_push_stmt(c, fwd, w);
        ad_push_stmt(c, fwd, st_push(c, ns, ad_var(c, nv), s->line));
        ad_push_stmt(c, rev, st_pop(c, ns, nv, s->line));
        int kv = hidden(c, "reverse counter", DVM_T_I32, s->line);
        ir_stmt *r = st_for(c, kv, ad_ki(c, 0), ad_var(c, nv), s->line, s->col);
        r->body = rb;
        ad_push_stmt(c, rev, r);
        return;
    }
    case IR_FOR: {
        int v = s->var;
        int recompute = v >= 0 && v < c->nv1 && c->nsites[v] == 1; /* only the loop sets v */
        ir_block fb = {0}, rb = {0};
        int vst = !recompute && needs_stack(c, v) ? var_stack(c, v) : -1;
        int cvar = -1;
        if (!recompute) { /* v is also assigned in the body: count with a hidden counter */
            cvar = hidden(c, dvm_arena_printf(c->A, "counter of the loop at line %d", s->line), DVM_T_I32, s->line);
            if (vst >= 0) ad_push_stmt(c, &fb, st_push(c, vst, ad_var(c, v), s->line));
            ad_push_stmt(c, &fb, ad_assign(c, v, ad_var(c, cvar)));
        }
        gen_block(c, &s->body, &fb, &rb);
        if (!recompute && vst >= 0) ad_push_stmt(c, &rb, st_pop(c, vst, v, s->line));
        ir_expr *start = s->e ? s->e : ad_ki(c, 0);
        if (!rb.n) {
            ir_stmt *f = st_for(c, recompute ? v : cvar, start, s->e2, s->line, s->col);
            f->body = fb;
            reg_loop(c, &c->gloops, &c->ngloops, &c->capgloops, f, 1, recompute ? v : -1, s->e, s->e2);
            ad_push_stmt(c, fwd, f);
            return;
        }
        int need_start = recompute && c->rread[v] && start->kind != IR_CONST;
        int sv = -1, ss = -1;
        ir_expr *S = start;
        if (need_start) {
            sv = hidden(c, dvm_arena_printf(c->A, "start of the loop at line %d", s->line), DVM_T_I32, s->line);
            ss = new_stack(c, DVM_T_I32, -1, c->k->vars[sv].name, s->line);
            ad_push_stmt(c, fwd, ad_assign(c, sv, start));
            S = ad_var(c, sv);
        } else if (start->kind != IR_CONST) {
            sv = hidden(c, dvm_arena_printf(c->A, "start of the loop at line %d", s->line), DVM_T_I32, s->line);
            ad_push_stmt(c, fwd, ad_assign(c, sv, start));
            S = ad_var(c, sv);
        }
        int ev = hidden(c, dvm_arena_printf(c->A, "stop of the loop at line %d", s->line), DVM_T_I32, s->line);
        ad_push_stmt(c, fwd, ad_assign(c, ev, s->e2));
        ir_stmt *f = st_for(c, recompute ? v : cvar, S, ad_var(c, ev), s->line, s->col);
        f->body = fb;
        reg_loop(c, &c->gloops, &c->ngloops, &c->capgloops, f, 1, recompute ? v : -1, s->e, s->e2);
        ad_push_stmt(c, fwd, f);
        int nv = hidden(c, dvm_arena_printf(c->A, "trip count of the loop at line %d", s->line), DVM_T_I32, s->line);
        int ns = new_stack(c, DVM_T_I32, -1, c->k->vars[nv].name, s->line);
        ad_push_stmt(c, fwd, st_push(c, ns, ad_bin(c, DVM_OP_MAXI, ad_bin(c, DVM_OP_SUBI, ad_var(c, ev), S), ad_ki(c, 0)), s->line));
        if (ss >= 0) ad_push_stmt(c, fwd, st_push(c, ss, ad_var(c, sv), s->line));
        if (ss >= 0) ad_push_stmt(c, rev, st_pop(c, ss, sv, s->line));
        ad_push_stmt(c, rev, st_pop(c, ns, nv, s->line));
        int kv = hidden(c, "reverse counter", DVM_T_I32, s->line);
        ir_stmt *r = st_for(c, kv, ad_ki(c, 0), ad_var(c, nv), s->line, s->col);
        if (recompute && c->rread[v]) { /* v = start + (n - 1 - k): cheaper than a stack */
            ir_expr *off = ad_bin(c, DVM_OP_SUBI, ad_bin(c, DVM_OP_SUBI, ad_var(c, nv), ad_ki(c, 1)), ad_var(c, kv));
            ad_push_stmt(c, &r->body, ad_assign(c, v, ad_bin(c, DVM_OP_ADDI, need_start ? ad_var(c, sv) : start, off)));
        }
        ad_append(c, &r->body, &rb);
        ad_push_stmt(c, rev, r);
        return;
    }
    case IR_ASSERT:
        if (c->replay) ad_push_stmt(c, fwd, (ir_stmt *)s);
        return; /* otherwise the stage's forward checked it */
    default:
        return;
    }
}

static void gen_block(ad_ctx *c, const ir_block *src, ir_block *fwd, ir_block *rev) {
    ir_block *revs = ad_alloc(c, sizeof(ir_block) * (size_t)(src->n + 1));
    if (c->oom) return;
    for (int i = 0; i < src->n; i++) gen_stmt(c, src->s[i], fwd, &revs[i]);
    ir_block r = rev_concat(c, revs, src->n);
    ad_append(c, rev, &r);
}

/* ---------------------------------------------------------------- driver */
static void add_top(ad_ctx *c, ir_top **tops, int *n, int *cap, const ir_top *t) {
    if (*n == *cap) {
        int nc = *cap ? 2 * *cap : 8;
        ir_top *a = dvm_arena_grow(c->A, *tops, sizeof(ir_top) * (size_t)*cap, sizeof(ir_top) * (size_t)nc);
        if (!a) {
            c->oom = 1;
            return;
        }
        *tops = a;
        *cap = nc;
    }
    (*tops)[(*n)++] = *t;
}
static void add_serial(ad_ctx *c, ir_top **tops, int *n, int *cap, const ir_block *b, const ir_top *of, int phase) {
    for (int i = 0; i < b->n; i++) {
        ir_top t = {0};
        t.stmt = b->s[i];
        t.line = of->line;
        t.stage = (int)(of - c->k->v[DVM_V_FORWARD].tops);
        t.phase = phase;
        t.loop = of->loop;
        add_top(c, tops, n, cap, &t);
    }
}

static int adjoint(ad_ctx *c) {
    ir_kernel *k = c->k;
    const ir_variant *f = &k->v[DVM_V_FORWARD];
    int nt = f->ntops;
    /* preprocessed copy of each top */
    ir_top *pre = ad_alloc(c, sizeof(ir_top) * (size_t)(nt + 1));
    if (c->oom) return -1;
    for (int t = 0; t < nt; t++) {
        pre[t] = f->tops[t];
        c->par = f->tops[t].parallel; /* hidden flags and counters are registers there */
        if (f->tops[t].parallel) {
            memset(&pre[t].body, 0, sizeof pre[t].body);
            pre_block(c, &f->tops[t].body, 0, &pre[t].body, -1, -1);
        } else if (f->tops[t].stmt) {
            pre[t].stmt = pre_stmt(c, f->tops[t].stmt, -1, -1);
        }
    }
    c->par = 0;
    /* analysis over the preprocessed code */
    c->nv1 = k->nvars;
    size_t nv = (size_t)c->nv1 + 1;
    c->nsites = ad_alloc(c, sizeof(int) * nv);
    c->inloop = ad_alloc(c, nv);
    c->rread = ad_alloc(c, nv);
    c->def = ad_alloc(c, sizeof(ir_expr *) * nv);
    c->first = ad_alloc(c, sizeof(ir_stmt *) * nv);
    c->deriv = ad_alloc(c, sizeof(int) * nv);
    c->stk = ad_alloc(c, sizeof(int) * nv);
    if (c->oom) return -1;
    for (int i = 0; i < c->nv1; i++) c->deriv[i] = c->stk[i] = -1;
    find_useful(c, pre, nt);
    if (c->oom) return -1;
    for (int t = 0; t < nt; t++) {
        if (pre[t].parallel) {
            analyse_block(c, &pre[t].body, 0, 1);
            mark_global_reads_block(c, &pre[t].body);
            for (int d = 0; d < pre[t].ndim; d++) mark_global_reads(c, pre[t].stop[d]);
            for (int d = 0; d < pre[t].ndim; d++) mark_global_reads(c, pre[t].start[d]);
        } else if (pre[t].stmt) {
            analyse_stmt(c, pre[t].stmt, pre[t].loop != 0, 0); /* a serial loop's statements repeat */
        }
    }
    /* Stage t is top-level statement t. Phase 0 runs every stage forward: a parallel loop as
       the forward variant does, serial code with its forward sweep (the pushes the reverse
       needs) and its stores. Phase 1 runs the stages' reverse sweeps, the last one first; the
       host binds each stage's array reads to the arrays as they were before it ran. */
    ir_top *tops = NULL;
    int ntops = 0, captops = 0;
    ir_block sfwd = {0}; /* every serial forward sweep, in order: for the serial stacks' sizes */
    ir_block *srev = ad_alloc(c, sizeof(ir_block) * (size_t)(nt + 1));
    ir_block *pfwd = ad_alloc(c, sizeof(ir_block) * (size_t)(nt + 1));
    if (c->oom) return -1;
    c->par = 0;
    c->cur_top = -1;
    ir_block *sdst = &sfwd; /* a serial loop's sweeps go in a for over its trips, for the sizes */
    int sloop = 0;
    /* The fused stage (fused_stage) has no phase-0 run: its reverse sweep's forward part also
       runs its stores, atomics and asserts, one forward pass less for the launch. */
    const int fused = fused_stage(c);
    if (c->oom) return -1;
    for (int t = 0; t < nt; t++) {
        if (pre[t].loop != sloop) {
            sloop = pre[t].loop;
            sdst = &sfwd;
            if (sloop) {
                const ir_loop *L = &f->loops[sloop - 1];
                ir_stmt *lf = st_for(c, L->var, L->start ? L->start : ad_ki(c, 0), L->stop, L->line, L->col);
                ad_push_stmt(c, &sfwd, lf);
                sdst = &lf->body;
            }
        }
        if (f->tops[t].parallel) {
            if (t == fused) continue;
            ir_top p = f->tops[t];
            p.stage = t;
            p.phase = 0;
            add_top(c, &tops, &ntops, &captops, &p);
        } else if (pre[t].stmt) {
            ir_block one = {0};
            c->replay = 1;
            c->cur_top = t; /* its restore slots (the stacks stay serial: c->par is 0) */
            gen_stmt(c, pre[t].stmt, &one, &srev[t]);
            c->cur_top = -1;
            c->replay = 0;
            ad_append(c, sdst, &one);
            add_serial(c, &tops, &ntops, &captops, &one, &f->tops[t], 0);
        }
    }
    for (int t = nt - 1; t >= 0; t--) {
        if (!pre[t].parallel) {
            add_serial(c, &tops, &ntops, &captops, &srev[t], &f->tops[t], 1);
            continue;
        }
        c->par = 1;
        c->cur_top = t;
        c->replay = t == fused;
        ir_block rev = {0};
        const int nv0 = k->nvars;
        gen_block(c, &pre[t].body, &pfwd[t], &rev);
        c->par = 0;
        c->replay = 0;
        if (!rev.n && t == fused) { /* nothing flows back: the stage runs forward as unfused */
            ir_top p = f->tops[t];
            p.stage = t;
            p.phase = 0;
            add_top(c, &tops, &ntops, &captops, &p);
            continue;
        }
        if (!rev.n) continue; /* nothing flows back through this loop */
        ir_top p = pre[t];
        memset(&p.body, 0, sizeof p.body);
        ad_append(c, &p.body, &pfwd[t]);
        /* The adjoints of the loop's locals (registers, made by this sweep) start every
           iteration at -0.0, the exact identity of f32 addition: no register is read before
           it is written (the verifier requires it), whatever a backend's registers held
           before. The resets after each use (gen_stmt) then end dead at END and go. */
        for (int a = nv0; a < k->nvars; a++) {
            const int pv = k->vars[a].primal;
            if (pv >= 0 && pv < c->nv1 && c->deriv[pv] == a && k->vars[a].storage == IR_LOCAL)
                ad_push_stmt(c, &p.body, ad_assign(c, a, ad_kf(c, -0.0f)));
        }
        ad_append(c, &p.body, &rev);
        p.stage = t;
        p.phase = 1;
        add_top(c, &tops, &ntops, &captops, &p);
    }
    /* capacities */
    ad_stack_sizes(c, &sfwd, pfwd, pre, nt);
    if (c->oom) return -1;
    ir_variant *v = &k->v[DVM_V_ADJOINT];
    v->present = 1;
    v->tops = tops;
    v->ntops = ntops;
    v->stacks = c->stacks;
    v->nstacks = c->nstacks;
    v->loops = f->loops;
    v->nloops = f->nloops;
    return ad_derived_slots(c, v, f, DVM_ROLE_GRAD);
}

/* The derived variant's array slots: the forward ones, then a `role` (GRAD or DUAL) slot per
   f32 array parameter, at c->dslot[i] for forward slot i. */
int ad_derived_slots(ad_ctx *c, ir_variant *v, const ir_variant *f, int role) {
    v->nslots = f->nslots;
    for (int i = 0; i < f->nslots; i++)
        if (c->dslot[i] >= 0) v->nslots++;
    v->slots = ad_alloc(c, sizeof(ir_slot) * (size_t)(v->nslots + 1));
    if (c->oom) return -1;
    for (int i = 0; i < f->nslots; i++) {
        v->slots[i] = f->slots[i];
        if (c->dslot[i] >= 0) v->slots[c->dslot[i]] = (ir_slot){f->slots[i].param, (uint8_t)role};
    }
    return 0;
}

/* forward slot -> derivative slot: forward slots first, then one per f32 array parameter in
 * declaration order (the slots of a forward variant follow the array parameters' order) */
static int map_slots(ad_ctx *c) {
    const ir_variant *f = &c->k->v[DVM_V_FORWARD];
    c->nfslots = f->nslots;
    c->dslot = ad_alloc(c, sizeof(int) * (size_t)(f->nslots + 1));
    if (c->oom) return -1;
    int next = f->nslots;
    for (int i = 0; i < f->nslots; i++) {
        int p = f->slots[i].param;
        int f32 = p >= 0 && p < c->k->nparams && c->k->params[p].type == DVM_T_F32;
        c->dslot[i] = f32 ? next++ : -1;
    }
    return 0;
}

static void ctx_init(ad_ctx *c, ir_module *m, ir_kernel *k, dvm_diags *d) {
    memset(c, 0, sizeof *c);
    c->A = m->arena;
    c->k = k;
    c->d = d;
    c->cur_top = -1;
}

int dvm_autodiff(ir_module *m, dvm_diags *d) {
    int errors = d->nerrors;
    for (int i = 0; i < m->nkernels; i++) {
        ir_kernel *k = m->kernels[i];
        if (!k || !k->v[DVM_V_FORWARD].present) continue;
        ad_ctx c;
        ctx_init(&c, m, k, d);
        if (map_slots(&c)) goto oom;
        if (k->v[DVM_V_FORWARD].ntops > UINT16_MAX) /* dvm_task_desc.stage */
            k->no_adjoint = dvm_arena_printf(m->arena, "%d:%d: error: kernel '%s' has no gradient: more than %d top-level "
                                             "statements", k->line, k->col, k->name, UINT16_MAX);
        else
            reads_after_stores(&c);
        if (c.oom) goto oom;
        if (!k->no_adjoint && (adjoint(&c) || c.oom)) goto oom;
        ad_ctx t;
        ctx_init(&t, m, k, d);
        if (map_slots(&t) || ad_tangent(&t) || t.oom) goto oom;
        continue;
    oom:
        dvm_diag(d, k->line, k->col, "kernel '%s': out of memory while differentiating", k->name);
        return -1;
    }
    return d->nerrors != errors ? -1 : 0;
}
