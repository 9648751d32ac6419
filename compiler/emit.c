/* emit.c: dvm_emit, the last compiler stage. Lays out the program (kernels, parameters,
 * shape symbols, array slots, uniform slots, tasks, stacks, constant pool, strings) and
 * hands each task to emit_code.c and each stack's size to emit_size.c. */
#include "compiler/emit_internal.h"
#include "bytecode/hash.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- growable arrays, constant pool, string table ---- */

int emit_grow(emit_prog *ep, void **arr, uint32_t *cap, uint32_t need, size_t elem) {
    if (need <= *cap) return 1;
    if (ep->oom || need > 0x7fffffffu / 2) {
        ep->oom = 1;
        return 0;
    }
    uint32_t nc = *cap ? *cap : 16;
    while (nc < need) nc *= 2;
    void *p = realloc(*arr, (size_t)nc * elem);
    if (!p) {
        ep->oom = 1;
        return 0;
    }
    memset((char *)p + (size_t)*cap * elem, 0, (size_t)(nc - *cap) * elem);
    *arr = p;
    *cap = nc;
    return 1;
}

static uint32_t hash_bytes(const void *p, size_t n) { return (uint32_t)dvm_fnv1a(DVM_FNV_BASIS, p, n); }

/* Open-addressing tables hold index + 1 (0 = empty); rebuilt at half load. */
static int rehash(emit_prog *ep, uint32_t **tab, uint32_t *cap, uint32_t n,
                  uint32_t (*key)(const emit_prog *, uint32_t)) {
    if ((n + 1) * 2 <= *cap) return 1;
    uint32_t nc = *cap ? *cap * 2 : 64;
    uint32_t *t = calloc(nc, sizeof *t);
    if (!t) {
        ep->oom = 1;
        return 0;
    }
    for (uint32_t i = 0; i < *cap; i++) {
        uint32_t v = (*tab)[i];
        if (!v) continue;
        uint32_t h = key(ep, v - 1) & (nc - 1);
        while (t[h]) h = (h + 1) & (nc - 1);
        t[h] = v;
    }
    free(*tab);
    *tab = t;
    *cap = nc;
    return 1;
}

static uint32_t const_key(const emit_prog *ep, uint32_t i) { return hash_bytes(&ep->consts[i], 4); }
static uint32_t str_key(const emit_prog *ep, uint32_t off) {
    return hash_bytes(ep->strings + off, strlen(ep->strings + off));
}

uint32_t emit_const(emit_prog *ep, uint32_t word) {
    if (!rehash(ep, &ep->khash, &ep->khcap, ep->nconsts, const_key)) return 0;
    uint32_t h = hash_bytes(&word, 4) & (ep->khcap - 1);
    for (; ep->khash[h]; h = (h + 1) & (ep->khcap - 1))
        if (ep->consts[ep->khash[h] - 1] == word) return ep->khash[h] - 1;
    if (!GROW(ep, consts, cconsts, ep->nconsts + 1)) return 0;
    ep->consts[ep->nconsts] = word;
    ep->khash[h] = ++ep->nconsts;
    return ep->nconsts - 1;
}

uint32_t emit_string(emit_prog *ep, const char *s) {
    if (!s || !*s) return 0;
    size_t n = strlen(s);
    if (!rehash(ep, &ep->shash, &ep->shcap, ep->nstrings, str_key)) return 0;
    uint32_t h = hash_bytes(s, n) & (ep->shcap - 1);
    for (; ep->shash[h]; h = (h + 1) & (ep->shcap - 1))
        if (strcmp(ep->strings + ep->shash[h] - 1, s) == 0) return ep->shash[h] - 1;
    if (n > 0x10000000u || !GROW(ep, strings, cstrings, ep->nstrings + (uint32_t)n + 1)) {
        ep->oom = 1;
        return 0;
    }
    uint32_t off = ep->nstrings;
    memcpy(ep->strings + off, s, n + 1);
    ep->nstrings += (uint32_t)n + 1;
    ep->shash[h] = off + 1;
    return off;
}

uint32_t emit_node(emit_prog *ep, dvm_node n, int line, int col) {
    uint32_t i = ep->nnodes;
    if (!GROW(ep, nodes, cnodes, i + 1) || !GROW(ep, lines, clines, i + 1) ||
        !GROW(ep, cols, ccols, i + 1))
        return UINT32_MAX;
    ep->nodes[i] = n;
    ep->lines[i] = line > 0 ? (uint32_t)line : 0;
    ep->cols[i] = col > 0 && col <= 0xFFFF ? (uint16_t)col : 0;
    ep->nnodes++;
    return i;
}

/* ---- uniform slots ---- */

int emit_var_uslot(emit_variant *ev, int var) {
    const ir_var *v = &ev->k->vars[var];
    switch (v->storage) {
    case IR_PARAM:
        if (v->param < 0 || v->param >= ev->k->nparams || ev->param_uslot[v->param] < 0) break;
        return ev->param_uslot[v->param];
    case IR_SHAPESYM:
        if (v->param < 0 || v->param >= ev->k->nsyms) break;
        return ev->nscalars + v->param;
    case IR_GLOBAL:
        if (ev->uslot[var] < 0) {
            if (ev->nuniforms >= DVM_MAX_UNIFORMS) {
                dvm_diag(ev->ep->d, v->line, v->col, "kernel '%s': more than %d uniform words",
                         ev->k->name, DVM_MAX_UNIFORMS);
                ev->failed = 1;
                return -1;
            }
            ev->uslot[var] = (int)ev->nuniforms++;
        }
        return ev->uslot[var];
    default:
        break;
    }
    dvm_diag(ev->ep->d, v->line, v->col, "kernel '%s': internal error: variable '%s' has no uniform slot",
             ev->k->name, v->name ? v->name : "?");
    ev->failed = 1;
    return -1;
}

int emit_hidden_uslot(emit_variant *ev, int line, int col) {
    if (ev->nuniforms >= DVM_MAX_UNIFORMS) {
        dvm_diag(ev->ep->d, line, col, "kernel '%s': more than %d uniform words", ev->k->name,
                 DVM_MAX_UNIFORMS);
        ev->failed = 1;
        return -1;
    }
    return (int)ev->nuniforms++;
}

/* ---- one variant ---- */

/* A parallel loop bound read straight from its uniform slot: a scalar parameter or a shape
 * symbol (never written by any task); anything else needs a hidden slot. */
static int direct_uslot(emit_variant *ev, const ir_expr *e) {
    if (!e || e->kind != IR_VAR || e->var < 0 || e->var >= ev->k->nvars) return -1;
    int st = ev->k->vars[e->var].storage;
    /* a global (a uniform word of the serial code) holds what it held when the serial task
       before this loop ended: the same value as a copy made at that task's end */
    if (st != IR_PARAM && st != IR_SHAPESYM && !(st == IR_GLOBAL && e->type == DVM_T_I32)) return -1;
    return emit_var_uslot(ev, e->var);
}

/* A serial loop's REPEAT task (dvm_task_desc): its bounds in uniforms (computed once, by a
   serial task before the first REPEAT of the loop in this variant: an adjoint's reverse
   reuses the forward's), the loop variable's uniform; `body` is patched when the loop ends. */
static int emit_loop_begin(emit_variant *ev, const ir_top *top, int *bound_u, uint32_t *marker) {
    emit_prog *ep = ev->ep;
    const ir_loop *L = &ev->v->loops[top->loop - 1];
    int *u = &bound_u[2 * (top->loop - 1)];
    ev->stage = top->stage;
    ev->phase = top->phase;
    if (u[0] < 0) {
        ir_expr *hid[2];
        int hid_u[2], nhid = 0;
        const ir_expr *b[2] = {L->stop, L->start};
        for (int i = 0; i < 2; i++) {
            if (!b[i] || (i == 1 && b[i]->kind == IR_CONST && b[i]->k.i == 0)) {
                u[i] = DVM_NO_SLOT;
                continue;
            }
            u[i] = direct_uslot(ev, b[i]);
            if (u[i] < 0) {
                u[i] = emit_hidden_uslot(ev, L->line, L->col);
                hid[nhid] = (ir_expr *)b[i];
                hid_u[nhid++] = u[i];
            }
        }
        if (nhid && emit_task_serial(ev, NULL, 0, hid, hid_u, nhid, L->line)) return 1;
    }
    int tu = emit_var_uslot(ev, L->var);
    if (tu < 0 || u[0] < 0) return 1;
    *marker = ep->ntasks;
    if (emit_task_serial(ev, NULL, 0, NULL, NULL, 0, L->line)) return 1;
    dvm_task_desc *m = &ep->tasks[*marker];
    m->kind = DVM_TASK_REPEAT;
    m->ext_u[0] = (uint16_t)u[0];
    m->start_u[0] = (uint16_t)u[1];
    m->ext_u[1] = (uint16_t)tu;
    return 0;
}

static int emit_variant_tasks(emit_variant *ev) {
    const ir_variant *v = ev->v;
    emit_prog *ep = ev->ep;
    int ntops = v->ntops;
    ir_stmt **pend = calloc((size_t)ntops + 1, sizeof *pend);
    int *bound_u = malloc(sizeof(int) * 2 * (size_t)(v->nloops + 1));
    if ((!pend && ntops) || !bound_u) {
        free(pend);
        free(bound_u);
        ep->oom = 1;
        return 1;
    }
    for (int i = 0; i < 2 * v->nloops; i++) bound_u[i] = -1;
    int npend = 0, pend_line = 0, pend_stage = 0, pend_phase = 0, cur_loop = 0;
    uint32_t marker = 0;
    for (int t = 0; t <= ntops && !ev->failed && !ep->oom; t++) {
        const ir_top *top = t < ntops ? &v->tops[t] : NULL;
        /* serial statements share a task within one stage and phase only: the host may act
           between stages (vm/launch.c) */
        if (npend && (!top || top->stage != pend_stage || top->phase != pend_phase || top->loop != cur_loop)) {
            ev->stage = pend_stage;
            ev->phase = pend_phase;
            if (emit_task_serial(ev, pend, npend, NULL, NULL, 0, pend_line)) break;
            npend = 0;
        }
        if (cur_loop && (!top || top->loop != cur_loop || top->phase != ep->tasks[marker].phase)) {
            uint32_t body = ep->ntasks - marker - 1;
            if (body > UINT16_MAX) {
                dvm_diag(ep->d, v->loops[cur_loop - 1].line, v->loops[cur_loop - 1].col,
                         "kernel '%s': a serial loop of %u tasks, more than %d", ev->k->name, body, UINT16_MAX);
                ev->failed = 1;
                break;
            }
            ep->tasks[marker].body = (uint16_t)body;
            cur_loop = 0;
        }
        if (!top) break;
        if (top->loop && top->loop != cur_loop) {
            if (top->loop > v->nloops || emit_loop_begin(ev, top, bound_u, &marker)) {
                ev->failed = 1;
                break;
            }
            cur_loop = top->loop;
        }
        if (!top->parallel) {
            if (!top->stmt) continue;
            if (!npend) pend_line = top->stmt->line;
            pend_stage = top->stage;
            pend_phase = top->phase;
            pend[npend++] = top->stmt;
            continue;
        }
        ev->stage = top->stage;
        ev->phase = top->phase;
        if (top->ndim < 1 || top->ndim > DVM_MAX_PAR_DIMS) {
            dvm_diag(ep->d, top->line, top->col, "kernel '%s': internal error: bad parallel loop (%d dimensions)",
                     ev->k->name, top->ndim);
            ev->failed = 1;
            break;
        }
        uint16_t ext_u[DVM_MAX_PAR_DIMS] = {DVM_NO_SLOT, DVM_NO_SLOT, DVM_NO_SLOT};
        uint16_t start_u[DVM_MAX_PAR_DIMS] = {DVM_NO_SLOT, DVM_NO_SLOT, DVM_NO_SLOT};
        ir_expr *hid[2 * DVM_MAX_PAR_DIMS];
        int hid_u[2 * DVM_MAX_PAR_DIMS], nhid = 0;
        for (int d = 0; d < top->ndim; d++) {
            int u = direct_uslot(ev, top->stop[d]);
            if (u < 0) {
                if (!top->stop[d]) {
                    dvm_diag(ep->d, top->line, top->col, "kernel '%s': internal error: parallel loop without a stop",
                             ev->k->name);
                    ev->failed = 1;
                    break;
                }
                u = emit_hidden_uslot(ev, top->line, top->col);
                hid[nhid] = top->stop[d];
                hid_u[nhid++] = u;
            }
            ext_u[d] = (uint16_t)u;
        }
        /* A literal 0 start is the default: no slot, no code. */
        for (int d = 0; d < top->ndim; d++) {
            const ir_expr *st = top->start[d];
            if (!st || (st->kind == IR_CONST && st->k.i == 0)) continue;
            int u = direct_uslot(ev, st);
            if (u < 0) {
                u = emit_hidden_uslot(ev, top->line, top->col);
                hid[nhid] = top->start[d];
                hid_u[nhid++] = u;
            }
            start_u[d] = (uint16_t)u;
        }
        if (ev->failed) break;
        if (npend || nhid) {
            if (emit_task_serial(ev, pend, npend, hid, hid_u, nhid, npend ? pend_line : top->line)) break;
            npend = 0;
        }
        if (emit_task_parallel(ev, top, ext_u, start_u)) break;
    }
    free(pend);
    free(bound_u);
    return ev->failed || ep->oom;
}

static int emit_one_variant(emit_prog *ep, const ir_kernel *k, int vk, dvm_kernel_desc *kd, const int *param_uslot,
                        int nscalars) {
    const ir_variant *v = &k->v[vk];
    dvm_variant_desc *vd = &kd->v[vk];
    memset(vd, 0, sizeof *vd);
    if (!v->present) return 0;
    vd->present = 1;
    emit_variant ev = {.ep = ep, .k = k, .v = v, .vk = vk, .param_uslot = param_uslot, .nscalars = nscalars};
    ev.nuniforms = (uint32_t)(nscalars + k->nsyms);

    /* array slots */
    if (v->nslots < 0 || v->nslots > DVM_MAX_ARRAY_SLOTS) {
        dvm_diag(ep->d, k->line, k->col, "kernel '%s': %d array slots (limit %d)", k->name, v->nslots,
                 DVM_MAX_ARRAY_SLOTS);
        return 1;
    }
    ev.slot_begin = ep->nslots;
    if (!GROW(ep, slots, cslots, ep->nslots + (uint32_t)v->nslots)) return 1;
    for (int s = 0; s < v->nslots; s++) {
        const ir_slot *is = &v->slots[s];
        if (is->param < 0 || is->param >= k->nparams || !k->params[is->param].is_array || is->role > DVM_ROLE_DUAL) {
            dvm_diag(ep->d, k->line, k->col, "kernel '%s': internal error: array slot %d names no array parameter",
                     k->name, s);
            return 1;
        }
        dvm_slot_desc *sd = &ep->slots[ep->nslots++];
        sd->param = (uint16_t)is->param;
        sd->role = is->role;
        sd->writes = 0;
    }
    vd->slot_begin = ev.slot_begin;
    vd->nslots = (uint32_t)v->nslots;

    /* stacks: descriptors first (their ids are what PUSH/POP name) */
    if (v->nstacks < 0 || v->nstacks > DVM_MAX_STACKS) {
        dvm_diag(ep->d, k->line, k->col, "kernel '%s': %d adstacks (limit %d)", k->name, v->nstacks, DVM_MAX_STACKS);
        return 1;
    }
    uint32_t stack_begin = ep->nstacks;
    if (!GROW(ep, stacks, cstacks, ep->nstacks + (uint32_t)v->nstacks)) return 1;
    ep->nstacks += (uint32_t)v->nstacks;
    vd->stack_begin = stack_begin;
    vd->nstacks = (uint32_t)v->nstacks;

    ev.uslot = malloc(sizeof(int) * (size_t)(k->nvars > 0 ? k->nvars : 1));
    if (!ev.uslot) {
        ep->oom = 1;
        return 1;
    }
    /* Every top-level variable of the kernel has a word in every variant, in variable
     * order, ahead of the hidden extents: the same slot whichever variant runs. */
    for (int i = 0; i < k->nvars; i++) {
        ev.uslot[i] = -1;
        if (k->vars[i].storage == IR_GLOBAL && !ev.failed) emit_var_uslot(&ev, i);
    }

    for (int s = 0; s < v->nstacks && !ev.failed && !ep->oom; s++) {
        const ir_stack *st = &v->stacks[s];
        dvm_stack_desc sd;
        memset(&sd, 0, sizeof sd);
        sd.type = st->type;
        sd.serial = st->serial ? 1 : 0;
        sd.name = emit_string(ep, st->name);
        sd.line = st->line > 0 ? (uint32_t)st->line : 0;
        if (st->type != DVM_T_F32 && st->type != DVM_T_I32 && st->type != DVM_T_BOOL) {
            dvm_diag(ep->d, st->line, 0, "kernel '%s': internal error: adstack '%s' has no value type", k->name,
                     st->name ? st->name : "");
            ev.failed = 1;
            break;
        }
        if (emit_stack_size(&ev, st, &sd)) break;
        ep->stacks[stack_begin + (uint32_t)s] = sd;
    }

    vd->task_begin = ep->ntasks;
    if (!ev.failed && !ep->oom) emit_variant_tasks(&ev);
    vd->ntasks = ep->ntasks - vd->task_begin;
    vd->nuniforms = ev.nuniforms;
    free(ev.uslot);
    return ev.failed || ep->oom;
}

static int emit_kernel(emit_prog *ep, const ir_kernel *k) {
    if (!GROW(ep, kernels, ckernels, ep->nkernels + 1)) return 1;
    dvm_kernel_desc kd;
    memset(&kd, 0, sizeof kd);
    kd.name = emit_string(ep, k->name);
    if (k->no_adjoint) kd.no_adjoint = emit_string(ep, k->no_adjoint);
    kd.line = k->line > 0 ? (uint32_t)k->line : 0;

    int *param_uslot = malloc(sizeof(int) * (size_t)(k->nparams > 0 ? k->nparams : 1));
    if (!param_uslot) {
        ep->oom = 1;
        return 1;
    }
    int nscalars = 0;
    kd.param_begin = ep->nparams;
    kd.nparams = (uint32_t)k->nparams;
    int bad = 0;
    if (!GROW(ep, params, cparams, ep->nparams + (uint32_t)k->nparams)) bad = 1;
    for (int i = 0; i < k->nparams && !bad; i++) {
        const ir_param *ip = &k->params[i];
        dvm_param_desc *pd = &ep->params[ep->nparams++];
        memset(pd, 0, sizeof *pd);
        pd->name = emit_string(ep, ip->name);
        pd->is_array = ip->is_array ? 1 : 0;
        pd->type = ip->type;
        param_uslot[i] = -1;
        if (ip->is_array) {
            if (ip->rank < 1 || ip->rank > DVM_MAX_RANK) {
                dvm_diag(ep->d, ip->line, ip->col, "kernel '%s': parameter '%s' has rank %d (1..%d)", k->name,
                         ip->name, ip->rank, DVM_MAX_RANK);
                bad = 1;
                break;
            }
            pd->rank = (uint8_t)ip->rank;
            for (int a = 0; a < ip->rank; a++) {
                if (ip->dim[a] < 0 && -(ip->dim[a] + 1) >= k->nsyms) {
                    dvm_diag(ep->d, ip->line, ip->col, "kernel '%s': internal error: parameter '%s' names shape symbol %d",
                             k->name, ip->name, -(ip->dim[a] + 1));
                    bad = 1;
                }
                pd->dim[a] = ip->dim[a];
            }
        } else {
            param_uslot[i] = nscalars;
            pd->uslot = (uint16_t)nscalars++;
        }
    }
    if (!bad && nscalars + k->nsyms > DVM_MAX_UNIFORMS) {
        dvm_diag(ep->d, k->line, k->col, "kernel '%s': too many scalar parameters and shape symbols", k->name);
        bad = 1;
    }
    kd.sym_begin = ep->nsyms;
    kd.nsyms = (uint32_t)k->nsyms;
    if (!bad && !GROW(ep, syms, csyms, ep->nsyms + (uint32_t)k->nsyms)) bad = 1;
    for (int s = 0; s < k->nsyms && !bad; s++) {
        dvm_sym_desc *sd = &ep->syms[ep->nsyms++];
        sd->name = emit_string(ep, k->syms[s].name);
        sd->uslot = (uint16_t)(nscalars + s);
        sd->pad = 0;
    }
    for (int vk = 0; vk < DVM_V_COUNT && !bad; vk++) {
        /* an adjoint past a task's limits (registers, nodes) leaves the kernel without a
           gradient, not without a forward: the error is kept for the launch that asks for it.
           So does a tangent past them once the adjoint is gone (no_adjoint then says why
           both are missing; the tangent is the smaller, so it never fails alone in practice,
           and if it does the compile fails). */
        const size_t dn = ep->d->n;
        const int derr = ep->d->nerrors;
        const uint32_t nslots = ep->nslots, nstacks = ep->nstacks, ntasks = ep->ntasks, nnodes = ep->nnodes;
        if (!emit_one_variant(ep, k, vk, &kd, param_uslot, nscalars)) continue;
        const int demote = vk == DVM_V_ADJOINT ? !kd.no_adjoint : vk == DVM_V_TANGENT && kd.no_adjoint;
        if (!demote || ep->oom || !ep->d->buf || ep->d->n <= dn) {
            bad = 1;
            continue;
        }
        const char *why = ep->d->buf + dn;
        size_t flen = strlen(ep->d->file);
        if (!strncmp(why, ep->d->file, flen) && why[flen] == ':') why += flen + 1;
        const size_t wlen = strcspn(why, "\n");
        char *msg = malloc(wlen + 64);
        if (!msg) {
            ep->oom = 1;
            bad = 1;
            continue;
        }
        snprintf(msg, wlen + 64, "%.*s (the kernel has no %s)", (int)wlen, why,
                 vk == DVM_V_ADJOINT ? "gradient" : "gradient and no tangent");
        ep->d->n = dn;
        ep->d->buf[dn] = 0;
        ep->d->nerrors = derr;
        ep->nslots = nslots;
        ep->nstacks = nstacks;
        ep->ntasks = ntasks;
        ep->nnodes = nnodes;
        memset(&kd.v[vk], 0, sizeof kd.v[vk]);
        kd.no_adjoint = emit_string(ep, msg);
        free(msg);
    }
    free(param_uslot);
    ep->kernels[ep->nkernels++] = kd;
    return bad || ep->oom;
}

/* E operands are 16 bits: assert messages go first in the string table so they fit. */
static void add_assert_strings(emit_prog *ep, const ir_block *b, int depth) {
    if (depth > 10000) return; /* deeper nesting is reported by emit_code.c's checks */
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->s[i];
        if (!s) continue;
        if (s->kind == IR_ASSERT) emit_string(ep, s->msg);
        add_assert_strings(ep, &s->body, depth + 1);
        add_assert_strings(ep, &s->orelse, depth + 1);
    }
}

static void add_all_assert_strings(emit_prog *ep, const ir_module *m) {
    for (int i = 0; i < m->nkernels; i++)
        for (int vk = 0; vk < DVM_V_COUNT; vk++) {
            const ir_variant *v = &m->kernels[i]->v[vk];
            if (!v->present) continue;
            for (int t = 0; t < v->ntops; t++) {
                const ir_top *top = &v->tops[t];
                if (top->parallel) {
                    add_assert_strings(ep, &top->body, 0);
                } else if (top->stmt) {
                    ir_block one = {(ir_stmt **)&top->stmt, 1, 1};
                    add_assert_strings(ep, &one, 0);
                }
            }
        }
}

static void emit_prog_free(emit_prog *ep) {
    free(ep->kernels);
    free(ep->params);
    free(ep->syms);
    free(ep->slots);
    free(ep->tasks);
    free(ep->stacks);
    free(ep->nodes);
    free(ep->lines);
    free(ep->cols);
    free(ep->consts);
    free(ep->strings);
    free(ep->khash);
    free(ep->shash);
}

int dvm_emit(const ir_module *m, dvm_program **out, dvm_diags *d) {
    *out = NULL;
    emit_prog ep;
    memset(&ep, 0, sizeof ep);
    ep.d = d;
    int nerr0 = d->nerrors;
    /* offset 0 of the string table is "" */
    if (GROW(&ep, strings, cstrings, 1)) ep.nstrings = 1;
    add_all_assert_strings(&ep, m);
    uint32_t src = emit_string(&ep, m->source_name);
    for (int i = 0; i < m->nkernels && !ep.oom; i++)
        if (emit_kernel(&ep, m->kernels[i])) break;
    if (ep.oom) dvm_diag(d, 0, 0, "out of memory while emitting bytecode");
    if (ep.oom || d->nerrors != nerr0) {
        emit_prog_free(&ep);
        return 1;
    }
    dvm_program *p = calloc(1, sizeof *p);
    if (!p) {
        dvm_diag(d, 0, 0, "out of memory while emitting bytecode");
        emit_prog_free(&ep);
        return 1;
    }
    p->source_name = src;
    p->nkernels = ep.nkernels;
    p->nparams = ep.nparams;
    p->nsyms = ep.nsyms;
    p->nslots = ep.nslots;
    p->ntasks = ep.ntasks;
    p->nstacks = ep.nstacks;
    p->nnodes = ep.nnodes;
    p->nconsts = ep.nconsts;
    p->nstrings_bytes = ep.nstrings;
    p->kernels = ep.kernels;
    p->params = ep.params;
    p->syms = ep.syms;
    p->slots = ep.slots;
    p->tasks = ep.tasks;
    p->stacks = ep.stacks;
    p->nodes = ep.nodes;
    p->lines = ep.lines;
    p->cols = ep.cols;
    p->consts = ep.consts;
    p->strings = ep.strings;
    free(ep.khash);
    free(ep.shash);
    *out = p;
    return 0;
}
