/* ad_tangent.c: forward mode. The tangent variant runs the primal and, beside every f32
 * value, its directional derivative: a tangent variable per f32 local/global, reads of x[i]
 * give x.dual[i], stores and atomic adds write both. Atomic max/min get no tangent. */
#include "compiler/ad_internal.h"
#include <string.h>

static int tan_var(ad_ctx *c, int var) {
    if (c->deriv[var] < 0) {
        const ir_var *v = &c->k->vars[var];
        const char *name = dvm_arena_printf(c->A, "%s.dual", v->name ? v->name : "?");
        c->deriv[var] = ad_newvar(c, name, DVM_T_F32, v->storage, v->line, var);
    }
    return c->deriv[var];
}

ir_expr *ad_tan(ad_ctx *c, const ir_expr *e) {
    if (!e || e->type != DVM_T_F32) return NULL;
    switch (e->kind) {
    case IR_VAR: {
        const ir_var *v = &c->k->vars[e->var];
        if (v->storage != IR_LOCAL && v->storage != IR_GLOBAL) return NULL;
        return ad_var(c, tan_var(c, e->var));
    }
    case IR_LOAD:
        return e->slot >= 0 && e->slot < c->nfslots && c->dslot[e->slot] >= 0 ? ad_load_like(c, e, c->dslot[e->slot]) : NULL;
    case IR_UN:
    case IR_BIN: {
        ad_tan_fn f = ad_tan_table[e->op];
        return f ? f(c, e) : NULL; /* no rule: zero derivative (//, %, F2I, ...) */
    }
    case IR_SELECT:
        return ad_tan_table[DVM_OP_SEL](c, e);
    case IR_COND: {
        ir_expr *tb = ad_tan(c, e->b), *tc = ad_tan(c, e->c);
        if (!tb && !tc) return NULL;
        ir_expr *r = ad_ex(c, IR_COND, DVM_T_F32, e->line, e->col);
        r->a = e->a;
        r->b = tb ? tb : ad_kf(c, 0.0f);
        r->c = tc ? tc : ad_kf(c, 0.0f);
        return r;
    }
    default:
        return NULL;
    }
}

static void tan_block(ad_ctx *c, const ir_block *src, ir_block *out);
static void tan_stmt(ad_ctx *c, const ir_stmt *s, ir_block *out) {
    switch (s->kind) {
    case IR_ASSIGN: {
        const ir_var *v = &c->k->vars[s->var];
        if (v->type == DVM_T_F32 && (v->storage == IR_LOCAL || v->storage == IR_GLOBAL)) {
            ir_expr *t = ad_tan(c, s->e); /* before the primal: e may read the variable */
            ad_push_stmt(c, out, ad_assign(c, tan_var(c, s->var), t ? t : ad_kf(c, 0.0f)));
        }
        ad_push_stmt(c, out, (ir_stmt *)s);
        return;
    }
    case IR_STORE:
    case IR_ATOMIC: {
        int ds = s->slot >= 0 && s->slot < c->nfslots ? c->dslot[s->slot] : -1;
        if (ds >= 0 && (s->kind == IR_STORE || s->op == DVM_OP_ATOMADDF)) {
            ir_expr *t = ad_tan(c, s->e);
            if (t || s->kind == IR_STORE) {
                ir_stmt *n = ad_st(c, s->kind, s->line, s->col);
                *n = *s;
                n->slot = ds;
                n->e = t ? t : ad_kf(c, 0.0f);
                ad_push_stmt(c, out, n);
            }
        }
        ad_push_stmt(c, out, (ir_stmt *)s);
        return;
    }
    case IR_IF:
    case IR_WHILE:
    case IR_FOR: {
        ir_stmt *n = ad_st(c, s->kind, s->line, s->col);
        *n = *s;
        memset(&n->body, 0, sizeof n->body);
        memset(&n->orelse, 0, sizeof n->orelse);
        tan_block(c, &s->body, &n->body);
        tan_block(c, &s->orelse, &n->orelse);
        ad_push_stmt(c, out, n);
        return;
    }
    default:
        ad_push_stmt(c, out, (ir_stmt *)s);
        return;
    }
}
static void tan_block(ad_ctx *c, const ir_block *src, ir_block *out) {
    for (int i = 0; i < src->n; i++) tan_stmt(c, src->s[i], out);
}

int ad_tangent(ad_ctx *c) {
    ir_kernel *k = c->k;
    const ir_variant *f = &k->v[DVM_V_FORWARD];
    c->deriv = ad_alloc(c, sizeof(int) * (size_t)(k->nvars + 1));
    if (c->oom) return -1;
    int nv = k->nvars;
    for (int i = 0; i < nv; i++) c->deriv[i] = -1;
    /* a serial statement may become several: each is a serial top of its own (consecutive
     * serial tops form one task) */
    int cap = 8, n = 0;
    for (int t = 0; t < f->ntops; t++) cap += f->tops[t].parallel ? 1 : 4;
    ir_top *tops = NULL;
    for (int t = 0; t < f->ntops; t++) {
        const ir_top *src = &f->tops[t];
        ir_block b = {0};
        if (!src->parallel && src->stmt) tan_stmt(c, src->stmt, &b);
        for (int i = 0; i < (src->parallel ? 1 : b.n); i++) {
            if (!tops) tops = ad_alloc(c, sizeof(ir_top) * (size_t)cap);
            if (c->oom) return -1;
            if (n == cap) {
                tops = dvm_arena_grow(c->A, tops, sizeof(ir_top) * (size_t)cap, sizeof(ir_top) * (size_t)cap * 2);
                cap *= 2;
                if (!tops) return -1;
            }
            tops[n] = *src;
            if (src->parallel) {
                memset(&tops[n].body, 0, sizeof tops[n].body);
                tan_block(c, &src->body, &tops[n].body);
            } else {
                tops[n].stmt = b.s[i];
            }
            n++;
        }
    }
    ir_variant *v = &k->v[DVM_V_TANGENT];
    v->present = 1;
    v->tops = tops;
    v->ntops = n;
    v->loops = f->loops;
    v->nloops = f->nloops;
    v->nstacks = 0;
    v->stacks = NULL;
    return ad_derived_slots(c, v, f, DVM_ROLE_DUAL);
}
