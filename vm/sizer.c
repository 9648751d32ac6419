/* sizer.c: the adstack sizer, once for every backend. A stack whose capacity depends on the
 * launch (DVM_SZ_PROGRAM) has a size program (design.md: a post-order program over the
 * arguments); this file finds each program's top-level max-over-range nodes and runs, per
 * program, the range pass, the max-reducer over those ranges and the final pass through the
 * backend's primitives (vm/backend.h, size_*), then reads every capacity back at once. */
#include "vm/sizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char *err, size_t errlen, const char *msg) {
    if (err && errlen) snprintf(err, errlen, "%s", msg);
    return -1;
}

/* The plan's programs and ranges (arrays owned by the caller, freed with free()). */
static int make_plan(const dvm_size_job *job, dvm_size_plan *pl, dvm_size_prog **progs, dvm_size_range **ranges) {
    const dvm_program *p = job->prog;
    const dvm_variant_desc *var = job->var;
    uint32_t np = 0, nr = 0;
    for (uint32_t i = 0; i < var->nstacks; i++) {
        const dvm_stack_desc *sd = &p->stacks[var->stack_begin + i];
        if (sd->sizing != DVM_SZ_PROGRAM) continue;
        np++;
        for (uint32_t k = 0; k < sd->size_len;) {
            const dvm_node *n = &p->nodes[sd->size_begin + k];
            if (n->op == DVM_OP_SZ_RANGE && n->c > k && n->c <= sd->size_len) {
                nr++;
                k = n->c;
            } else {
                k++;
            }
        }
    }
    memset(pl, 0, sizeof *pl);
    *progs = (dvm_size_prog *)calloc(np ? np : 1, sizeof **progs);
    *ranges = (dvm_size_range *)calloc(nr ? nr : 1, sizeof **ranges);
    if (!*progs || !*ranges) return -1;
    np = nr = 0;
    for (uint32_t i = 0; i < var->nstacks; i++) {
        const dvm_stack_desc *sd = &p->stacks[var->stack_begin + i];
        if (sd->sizing != DVM_SZ_PROGRAM) continue;
        dvm_size_prog *g = &(*progs)[np];
        g->stack = i;
        g->begin = sd->size_begin;
        g->len = sd->size_len;
        g->range_first = nr;
        if (sd->size_len > pl->maxlen) pl->maxlen = sd->size_len;
        for (uint32_t k = 0; k < sd->size_len;) {
            const dvm_node *n = &p->nodes[sd->size_begin + k];
            if (n->op == DVM_OP_SZ_RANGE && n->c > k && n->c <= sd->size_len) {
                dvm_size_range *r = &(*ranges)[nr++];
                r->prog = np;
                r->node = k;
                r->end = n->c;
                if ((uint32_t)n->c - k - 1 > pl->maxbody) pl->maxbody = (uint32_t)n->c - k - 1;
                k = n->c;
            } else {
                k++;
            }
        }
        g->nranges = nr - g->range_first;
        np++;
    }
    pl->job = job;
    pl->progs = *progs;
    pl->nprogs = np;
    pl->ranges = *ranges;
    pl->nranges = nr;
    pl->walk_cap = job->walk_cap > 0 ? job->walk_cap : INT64_MAX;
    pl->reduce_budget = pl->walk_cap > INT64_MAX / DVM_SIZER_REDUCE_FACTOR ? INT64_MAX : pl->walk_cap * DVM_SIZER_REDUCE_FACTOR;
    return 0;
}

int dvm_sizer_run(const dvm_backend_vtbl *vt, dvm_backend *be, const dvm_size_job *job, int64_t *caps,
                  dvm_rt_error *rt, char *err, size_t errlen) {
    memset(rt, 0, sizeof *rt);
    dvm_size_plan pl;
    dvm_size_prog *progs = NULL;
    dvm_size_range *ranges = NULL;
    int64_t *got = NULL;
    int rc = make_plan(job, &pl, &progs, &ranges);
    if (rc == 0 && pl.nprogs && !(got = (int64_t *)calloc(pl.nprogs, sizeof *got))) rc = -1;
    if (rc != 0) {
        free(progs);
        free(ranges);
        return fail(err, errlen, "sizer: out of memory");
    }
    if (pl.nprogs == 0) goto done;
    dvm_sizing *s = NULL;
    rc = vt->size_begin(be, &pl, &s, err, errlen);
    if (rc != 0) goto done;
    /* the backend may queue these: a runtime error shows in size_read */
    for (uint32_t g = 0; g < pl.nprogs && rc == 0; g++) {
        rc = vt->size_pass(be, s, g, 0, err, errlen);
        if (rc == 0 && progs[g].nranges) rc = vt->size_reduce(be, s, g, err, errlen);
        if (rc == 0) rc = vt->size_pass(be, s, g, 1, err, errlen);
    }
    if (rc == 0) rc = vt->size_read(be, s, got, rt, err, errlen);
    vt->size_end(be, s);
    if (rc == 0)
        for (uint32_t g = 0; g < pl.nprogs; g++) caps[progs[g].stack] = got[g];
done:
    free(got);
    free(progs);
    free(ranges);
    return rc;
}

int dvm_size_cache_scan(dvm_size_cache *c, const dvm_program *p, const dvm_variant_desc *var) {
    c->load_slot = (uint8_t *)calloc(var->nslots ? var->nslots : 1, 1);
    if (!c->load_slot) return -1;
    for (uint32_t i = 0; i < var->nstacks; i++) {
        const dvm_stack_desc *sd = &p->stacks[var->stack_begin + i];
        if (sd->sizing != DVM_SZ_PROGRAM) continue;
        for (uint32_t n = sd->size_begin; n < sd->size_begin + sd->size_len && n < p->nnodes; n++)
            if (p->nodes[n].op == DVM_OP_SZ_LOAD && p->nodes[n].x < var->nslots) c->load_slot[p->nodes[n].x] = 1;
    }
    c->scanned = 1;
    return 0;
}

void dvm_size_cache_free(dvm_size_cache *c) {
    free(c->key);
    free(c->caps);
    free(c->learned);
    free(c->load_slot);
    memset(c, 0, sizeof *c);
}
