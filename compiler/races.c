/* races.c: rejects the races the compiler can see (spec: an iteration of a parallel loop must
 * not read an element that another iteration of the same loop writes or accumulates into).
 * Seen: a store or atomic whose indices are the same in every iteration (built from constants,
 * parameters, shape symbols and top-level locals only: every iteration writes that one
 * element) and a read of the same array in the same loop. What it cannot see (indices that
 * differ between iterations but meet, through locals or array values) is documented in
 * docs/language.md. */
#include "compiler/compile.h"
#include <stdlib.h>

/* whether e has the same value in every iteration of a parallel loop */
static int uniform_expr(const ir_kernel *k, const ir_expr *e) {
    if (!e) return 1;
    switch (e->kind) {
    case IR_CONST:
    case IR_SHAPE:
        return 1;
    case IR_VAR: {
        if (e->var < 0 || e->var >= k->nvars) return 0;
        int st = k->vars[e->var].storage;
        return st == IR_PARAM || st == IR_SHAPESYM || st == IR_GLOBAL;
    }
    case IR_LOAD:
        return 0; /* an array's element may differ per iteration once written: not seen */
    default:
        return uniform_expr(k, e->a) && uniform_expr(k, e->b) && uniform_expr(k, e->c);
    }
}

typedef struct race_ctx {
    const ir_kernel *k;
    const ir_stmt **shared; /* per slot: the first write to one element by every iteration */
    dvm_diags *d;
    int reported;
} race_ctx;

static void find_shared(race_ctx *r, const ir_block *b) {
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->s[i];
        if ((s->kind == IR_STORE || s->kind == IR_ATOMIC) && s->slot >= 0 && !r->shared[s->slot]) {
            int uni = 1;
            for (int j = 0; j < s->nidx; j++) uni = uni && uniform_expr(r->k, s->idx[j]);
            if (uni) r->shared[s->slot] = s;
        }
        find_shared(r, &s->body);
        find_shared(r, &s->orelse);
    }
}

static void find_reads_expr(race_ctx *r, const ir_expr *e) {
    if (!e || r->reported) return;
    if (e->kind == IR_LOAD) {
        for (int i = 0; i < e->nidx; i++) find_reads_expr(r, e->idx[i]);
        const ir_stmt *w = e->slot >= 0 ? r->shared[e->slot] : NULL;
        if (w && !r->reported) {
            r->reported = 1;
            const ir_kernel *k = r->k;
            dvm_diag(r->d, e->line, e->col,
                     "kernel '%s': '%s' is read in a parallel loop whose every iteration %s its element at %d:%d: what "
                     "the read sees depends on the order of the iterations (a race); read it in a later top-level "
                     "statement",
                     k->name, k->params[k->v[DVM_V_FORWARD].slots[e->slot].param].name,
                     w->kind == IR_STORE ? "stores to" : "updates", w->line, w->col);
        }
        return;
    }
    find_reads_expr(r, e->a);
    find_reads_expr(r, e->b);
    find_reads_expr(r, e->c);
}
static void find_reads(race_ctx *r, const ir_block *b) {
    for (int i = 0; i < b->n && !r->reported; i++) {
        const ir_stmt *s = b->s[i];
        for (int j = 0; j < s->nidx; j++) find_reads_expr(r, s->idx[j]);
        find_reads_expr(r, s->e);
        find_reads_expr(r, s->e2);
        find_reads(r, &s->body);
        find_reads(r, &s->orelse);
    }
}

int dvm_check_races(ir_module *m, dvm_diags *d) {
    int errors = d->nerrors;
    for (int ki = 0; ki < m->nkernels; ki++) {
        const ir_kernel *k = m->kernels[ki];
        if (!k || !k->v[DVM_V_FORWARD].present) continue;
        const ir_variant *f = &k->v[DVM_V_FORWARD];
        race_ctx r = {k, calloc((size_t)f->nslots + 1, sizeof(ir_stmt *)), d, 0};
        if (!r.shared) {
            dvm_diag(d, k->line, k->col, "out of memory");
            return -1;
        }
        for (int t = 0; t < f->ntops && !r.reported; t++) {
            const ir_top *tp = &f->tops[t];
            if (!tp->parallel) continue;
            for (int s = 0; s < f->nslots; s++) r.shared[s] = NULL;
            find_shared(&r, &tp->body);
            find_reads(&r, &tp->body);
        }
        free(r.shared);
    }
    return d->nerrors != errors ? -1 : 0;
}
