/* launch.c: dvm_launch, following the protocol at the top of vm/backend.h: bind and check
 * the arguments, fill the uniforms, size the adstacks (cached), lay out the heap, snapshot
 * every array the launch may write, run, and on a runtime error restore the snapshots and
 * turn the error record into a message with the source location; an adstack with no formula
 * that overflows grows instead, and the launch runs again (run_variant). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "vm/runtime.h"
#include "vm/launch.h"

#define DVM_DEFAULT_AD_STACK 256
/* An adstack with no formula that overflows grows by this factor and the launch reruns
   (unless the user set a capacity), while the adstack heap stays within DVM_AUTO_HEAP_MAX
   bytes: a slot per worker thread on the CPU, a slot per resident lane on a GPU (about 2^18
   on an H100: 8192 entries a thread for one stack) */
#define DVM_AUTO_GROWTH 4
#define DVM_AUTO_HEAP_MAX ((int64_t)1 << 33)
/* serial steps one size-program evaluation may take before it is an error, not a hang */
#define DVM_SIZER_WALK_CAP ((int64_t)1 << 26)

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static const char *pstr(const dvm_program *p, uint32_t off) { return off < p->nstrings_bytes ? p->strings + off : "?"; }

/* A scratch buffer of at least `bytes` from the context's pool, position i. */
static int scratch_buf(dvm_context *ctx, uint32_t i, size_t bytes, dvm_buffer **out, char *err, size_t errlen) {
    dvm_launch_scratch *s = &ctx->scratch;
    if (i >= s->nsnap) {
        uint32_t n = i + 8;
        dvm_buffer **nb = (dvm_buffer **)realloc(s->snap, n * sizeof *nb);
        if (nb) s->snap = nb;
        size_t *nz = (size_t *)realloc(s->snap_bytes, n * sizeof *nz);
        if (nz) s->snap_bytes = nz;
        if (!nb || !nz) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        for (uint32_t j = s->nsnap; j < n; j++) {
            s->snap[j] = NULL;
            s->snap_bytes[j] = 0;
        }
        s->nsnap = n;
    }
    if (s->snap_bytes[i] < bytes) {
        if (s->snap[i]) ctx->vt->free(ctx->be, s->snap[i]);
        s->snap[i] = NULL;
        s->snap_bytes[i] = 0;
        if (ctx->vt->alloc(ctx->be, bytes, &s->snap[i], err, errlen) != 0) return -1;
        s->snap_bytes[i] = bytes;
    }
    *out = s->snap[i];
    return 0;
}

/* ---- per-launch state ---- */

typedef struct snap_entry {
    dvm_array *a;
    dvm_buffer *buf; /* its contents before the launch */
} snap_entry;

typedef struct launch {
    dvm_context *ctx;
    struct dvm_kernel *k;
    const dvm_program *p;
    dvm_args *args;
    const dvm_launch_opts *o;
    int64_t *sym;           /* per shape symbol: its extent */
    snap_entry *snaps;
    uint32_t nsnaps;
    uint32_t nscratch;      /* scratch buffers in use (ctx->scratch): snapshots, then versions */
    int in_forward;         /* an adjoint launch is running its forward stages (messages) */
    dvm_launch_stats st;
    int sized, cached;
    /* per variant of this launch (index: the variant kind): its uniforms after the host
       tasks, which of them the host knows, how many leading tasks the host ran
       (prepare_uniforms), and whether it may fail (variant_may_fail) */
    uint32_t *uni[DVM_V_COUNT];
    uint8_t *known[DVM_V_COUNT];
    uint32_t host_tasks[DVM_V_COUNT];
    int may_fail[DVM_V_COUNT];
    dvm_rt_error rt; /* the last runtime error record (rt_fail): run_variant grows the stack it names */
} launch;

static const char *variant_label(uint32_t vk) {
    return vk == DVM_V_ADJOINT ? " (adjoint)" : vk == DVM_V_TANGENT ? " (tangent)" : "";
}
/* an adjoint launch's forward stages fail as the forward would */
static const char *run_label(const launch *L, uint32_t vk) { return L->in_forward ? "" : variant_label(vk); }

static dvm_array *slot_array(const launch *L, const dvm_slot_desc *sd) {
    if (sd->role == DVM_ROLE_GRAD) return L->args->grad[sd->param] ? L->args->grad[sd->param] : L->args->scratch[sd->param];
    if (sd->role == DVM_ROLE_DUAL) return L->args->dual[sd->param] ? L->args->dual[sd->param] : L->args->scratch[sd->param];
    return L->args->arr[sd->param];
}

static int is_scratch(const launch *L, const dvm_array *a) {
    for (uint32_t i = 0; i < L->args->nparams; i++)
        if (L->args->scratch[i] == a) return 1;
    return 0;
}

/* Checks that every parameter is bound and that shapes agree; fills L->sym. */
static dvm_status check_bindings(launch *L, dvm_mode mode) {
    dvm_context *ctx = L->ctx;
    const dvm_kernel_desc *kd = L->k->kd;
    const dvm_program *p = L->p;
    const char *kname = pstr(p, kd->name);
    char missing[1024] = "", decl[256];
    size_t mn = 0;
    int nmissing = 0;
    for (uint32_t i = 0; i < kd->nparams; i++) {
        const dvm_param_desc *pd = &p->params[kd->param_begin + i];
        if (pd->is_array ? L->args->arr[i] != NULL : L->args->scalar_set[i]) continue;
        dvm_param_decl(L->k, i, decl, sizeof decl);
        if (mn < sizeof missing) mn += (size_t)snprintf(missing + mn, sizeof missing - mn, "%s'%s' (%s)", nmissing ? ", " : "", pstr(p, pd->name), decl);
        nmissing++;
    }
    if (nmissing)
        return dvm_fail(ctx, DVM_ERR_ARG, 0, "kernel '%s': missing argument%s %s", kname, nmissing > 1 ? "s" : "", missing);
    /* shape symbols: the first array that uses one sets it; every other must agree */
    uint32_t *src = (uint32_t *)calloc(kd->nsyms ? kd->nsyms : 1, sizeof *src);
    L->sym = (int64_t *)calloc(kd->nsyms ? kd->nsyms : 1, sizeof *L->sym);
    if (!src || !L->sym) {
        free(src);
        return dvm_fail(ctx, DVM_ERR_NOMEM, 0, "kernel '%s': out of memory", kname);
    }
    for (uint32_t s = 0; s < kd->nsyms; s++) L->sym[s] = -1;
    dvm_status st = DVM_OK;
    for (uint32_t i = 0; i < kd->nparams && st == DVM_OK; i++) {
        const dvm_param_desc *pd = &p->params[kd->param_begin + i];
        if (!pd->is_array) continue;
        const dvm_array *a = L->args->arr[i];
        for (int ax = 0; ax < pd->rank; ax++) {
            if (pd->dim[ax] >= 0) continue; /* literal extents were checked when bound */
            uint32_t s = (uint32_t)(-(pd->dim[ax] + 1));
            if (s >= kd->nsyms) continue;
            if (L->sym[s] < 0) {
                L->sym[s] = a->shape[ax];
                src[s] = i;
            } else if (L->sym[s] != a->shape[ax]) {
                st = dvm_fail(ctx, DVM_ERR_ARG, 0, "kernel '%s': shape symbol '%s' is %lld from '%s' but %lld from '%s'", kname,
                              pstr(p, p->syms[kd->sym_begin + s].name), (long long)L->sym[s],
                              pstr(p, p->params[kd->param_begin + src[s]].name), (long long)a->shape[ax], pstr(p, pd->name));
                break;
            }
        }
    }
    free(src);
    if (st != DVM_OK) return st;
    /* gradients / tangents: the primal's shape; unbound ones become zeroed scratch arrays */
    if (mode == DVM_FORWARD) return DVM_OK;
    dvm_array **bound = mode == DVM_ADJOINT ? L->args->grad : L->args->dual;
    const char *what = mode == DVM_ADJOINT ? "grad" : "dual";
    for (uint32_t i = 0; i < kd->nparams; i++) {
        const dvm_param_desc *pd = &p->params[kd->param_begin + i];
        if (!pd->is_array || pd->type != DVM_T_F32) continue;
        const dvm_array *a = L->args->arr[i];
        if (bound[i]) {
            if (bound[i] == a)
                return dvm_fail(ctx, DVM_ERR_ARG, 0, "kernel '%s': argument '%s.%s' is the same array as '%s'", kname,
                                pstr(p, pd->name), what, pstr(p, pd->name));
            int same = bound[i]->rank == a->rank;
            for (int ax = 0; same && ax < a->rank; ax++) same = bound[i]->shape[ax] == a->shape[ax];
            if (!same) {
                char s1[128], s2[128];
                dvm_shape_str(a->shape, a->rank, s1, sizeof s1);
                dvm_shape_str(bound[i]->shape, bound[i]->rank, s2, sizeof s2);
                return dvm_fail(ctx, DVM_ERR_ARG, 0, "kernel '%s': argument '%s.%s' must have the shape of '%s' %s, got %s", kname,
                                pstr(p, pd->name), what, pstr(p, pd->name), s1, s2);
            }
            continue;
        }
        dvm_array *sc = L->args->scratch[i];
        int same = sc && sc->rank == a->rank;
        for (int ax = 0; same && ax < a->rank; ax++) same = sc->shape[ax] == a->shape[ax];
        if (!same) {
            dvm_array_destroy(sc);
            L->args->scratch[i] = NULL;
            st = dvm_array_create(ctx, DVM_F32, a->rank, a->shape, &L->args->scratch[i]);
            if (st != DVM_OK) return st; /* created zeroed */
        } else if (sc->count) {
            float *z = (float *)calloc((size_t)sc->count, 4);
            if (!z) return dvm_fail(ctx, DVM_ERR_NOMEM, 0, "kernel '%s': out of memory", kname);
            st = dvm_array_write(ctx, sc, z, sc->count);
            free(z);
            if (st != DVM_OK) return st;
        }
    }
    return DVM_OK;
}

static snap_entry *find_snap(const launch *L, const dvm_array *a) {
    for (uint32_t i = 0; i < L->nsnaps; i++)
        if (L->snaps[i].a == a) return &L->snaps[i];
    return NULL;
}

/* Lists every user array that the variant of this launch may write (step 4), and copies
   those that a failure could have to restore: what a variant that may fail writes
   (L->may_fail). An entry without a copy has buf NULL. */
static dvm_status take_snapshots(launch *L, uint32_t vk) {
    dvm_context *ctx = L->ctx;
    const dvm_kernel_desc *kd = L->k->kd;
    uint32_t vks[1] = {vk}, nv = 1;
    uint32_t cap = 0;
    for (uint32_t v = 0; v < nv; v++) cap += kd->v[vks[v]].nslots;
    L->snaps = (snap_entry *)calloc(cap ? cap : 1, sizeof *L->snaps);
    if (!L->snaps) return dvm_fail(ctx, DVM_ERR_NOMEM, 0, "out of memory");
    char err[512] = "";
    for (uint32_t v = 0; v < nv; v++) {
        const dvm_variant_desc *var = &kd->v[vks[v]];
        for (uint32_t j = 0; j < var->nslots; j++) {
            const dvm_slot_desc *sd = &L->p->slots[var->slot_begin + j];
            dvm_array *a = slot_array(L, sd);
            if (!sd->writes || !a || is_scratch(L, a)) continue;
            snap_entry *e = find_snap(L, a);
            if (!e) {
                e = &L->snaps[L->nsnaps++];
                e->a = a;
            }
            if (e->buf || !L->may_fail[vks[v]]) continue;
            size_t bytes = (size_t)(a->count ? a->count : 1) * 4;
            if (scratch_buf(ctx, (uint32_t)(e - L->snaps), bytes, &e->buf, err, sizeof err) != 0 ||
                (ctx->vt->copy_lazy ? ctx->vt->copy_lazy : ctx->vt->copy)(ctx->be, e->buf, a->buf, bytes, err, sizeof err) != 0) {
                e->buf = NULL;
                return dvm_fail(ctx, DVM_ERR_BACKEND, 0, "kernel '%s': cannot snapshot '%s': %s", dvm_kernel_name(L->k),
                                pstr(L->p, L->p->params[kd->param_begin + sd->param].name), err);
            }
            L->st.snapshot_bytes += (int64_t)bytes;
        }
    }
    return DVM_OK;
}

/* Step 6: puts every snapshot back. */
static int restore_snapshots(launch *L, char *err, size_t errlen) {
    int rc = 0;
    for (uint32_t i = 0; i < L->nsnaps; i++) {
        snap_entry *e = &L->snaps[i];
        if (!e->buf) continue; /* no variant could fail after writing it (take_snapshots) */
        size_t bytes = (size_t)(e->a->count ? e->a->count : 1) * 4;
        if (L->ctx->vt->copy(L->ctx->be, e->a->buf, e->buf, bytes, err, errlen) != 0) rc = -1;
    }
    return rc;
}

/* The message for a runtime error record, with the source location of its node. */
static dvm_status rt_fail(launch *L, uint32_t vk, const dvm_exec *x, const dvm_rt_error *rt) {
    const dvm_program *p = L->p;
    const dvm_kernel_desc *kd = L->k->kd;
    const dvm_variant_desc *var = &kd->v[vk];
    L->rt = *rt;
    char loc[512] = "", msg[2048];
    uint32_t line = 0, col = 0;
    if (rt->node < p->nnodes) {
        line = p->lines ? p->lines[rt->node] : 0;
        col = p->cols ? p->cols[rt->node] : 0;
    }
    const dvm_stack_desc *sd = NULL;
    if ((rt->code == DVM_RT_ADSTACK_OVERFLOW || rt->code == DVM_RT_SIZER_CAP || rt->code == DVM_RT_ADSTACK_UNDERFLOW) &&
        rt->p[0] >= 0 && (uint64_t)rt->p[0] < var->nstacks)
        sd = &p->stacks[var->stack_begin + (uint32_t)rt->p[0]];
    if (!line && sd) line = sd->line; /* size-program nodes may carry no line: use the stack's */
    const char *file = pstr(p, p->source_name);
    if (line) {
        if (col) snprintf(loc, sizeof loc, "%s:%u:%u: error: ", file, line, col);
        else snprintf(loc, sizeof loc, "%s:%u: error: ", file, line);
    }
    const char *kname = pstr(p, kd->name), *vl = run_label(L, vk);
    char sname[256] = "a hidden value";
    if (sd && sd->name && *pstr(p, sd->name)) snprintf(sname, sizeof sname, "'%s'", pstr(p, sd->name));
    switch (rt->code) {
    case DVM_RT_OOB: {
        char aname[300] = "?", sh[160] = "?";
        if (rt->p[0] >= 0 && (uint64_t)rt->p[0] < x->nslots) {
            const dvm_slot_desc *sl = &p->slots[var->slot_begin + (uint32_t)rt->p[0]];
            const dvm_param_desc *pd = &p->params[kd->param_begin + sl->param];
            snprintf(aname, sizeof aname, "%s%s", pstr(p, pd->name),
                     sl->role == DVM_ROLE_GRAD ? ".grad" : sl->role == DVM_ROLE_DUAL ? ".dual" : "");
            int64_t shp[DVM_MAX_RANK];
            for (int a = 0; a < pd->rank && a < DVM_MAX_RANK; a++) shp[a] = x->arr_shape[(size_t)rt->p[0] * DVM_MAX_RANK + (size_t)a];
            dvm_shape_str(shp, pd->rank, sh, sizeof sh);
        }
        if (rt->p[1] < 0)
            snprintf(msg, sizeof msg, "kernel '%s'%s: index %lld is out of bounds for '%s' with shape %s (%lld elements)", kname, vl,
                     (long long)rt->p[2], aname, sh, (long long)rt->p[3]);
        else
            snprintf(msg, sizeof msg, "kernel '%s'%s: index %lld is out of bounds for axis %lld of '%s' with shape %s", kname, vl,
                     (long long)rt->p[2], (long long)rt->p[1], aname, sh);
        break;
    }
    case DVM_RT_ASSERT:
        if ((uint64_t)rt->p[0] == 0xFFFFFFFFu || rt->p[0] < 0 || (uint64_t)rt->p[0] >= p->nstrings_bytes || !p->strings[rt->p[0]])
            snprintf(msg, sizeof msg, "kernel '%s'%s: assertion failed", kname, vl);
        else
            snprintf(msg, sizeof msg, "kernel '%s'%s: assertion failed: %s", kname, vl, p->strings + rt->p[0]);
        break;
    case DVM_RT_ADSTACK_OVERFLOW: {
        /* The record says which stack and its capacity, not how deep it would go (the thread
           stops at the first push too many), so the remedy names what is known to be enough:
           the stack's own capacity (a constant or its exact formula) where the user overrode
           it, and dvm's automatic growth for a stack with no formula. */
        const int cli = L->ctx->cli_remedies;
        const long long capn = (long long)rt->p[1];
        const char *forced = cli ? "--ad-stack-size" : "opts.ad_stack_size";
        const char *deflt = cli ? "--default-ad-stack-size" : "opts.default_ad_stack_size";
        char remedy[512];
        if (sd && sd->sizing == DVM_SZ_DEFAULT && (L->o->ad_stack_size > 0 || L->o->default_ad_stack_size > 0))
            snprintf(remedy, sizeof remedy,
                     "its depth is known only when it runs: launch without %s, and dvm grows it until it fits",
                     L->o->ad_stack_size > 0 ? forced : deflt);
        else if (sd && sd->sizing == DVM_SZ_DEFAULT)
            snprintf(remedy, sizeof remedy, "set %s to more than %lld", forced, capn);
        else if (sd && L->o->ad_stack_size > 0 && sd->sizing == DVM_SZ_CONSTANT)
            snprintf(remedy, sizeof remedy, "it needs at most %u: launch without %s, or with %s %s%u", sd->const_cap,
                     forced, forced, cli ? "" : "= ", sd->const_cap);
        else if (sd && L->o->ad_stack_size > 0)
            snprintf(remedy, sizeof remedy,
                     "launch without %s: its size formula gives this launch exactly the capacity it needs", forced);
        else
            snprintf(remedy, sizeof remedy,
                     "internal error: its size formula gave too little (please report it); %s above %lld works around it",
                     forced, capn);
        char where[64] = "";
        if (sd && sd->line) snprintf(where, sizeof where, " (line %u)", sd->line);
        snprintf(msg, sizeof msg, "kernel '%s'%s: adstack overflow: %s%s needs more than its capacity of %lld entries; %s",
                 kname, vl, sname, where, capn, remedy);
        break;
    }
    case DVM_RT_DIVZERO:
        snprintf(msg, sizeof msg, "kernel '%s'%s: integer division by zero", kname, vl);
        break;
    case DVM_RT_NEGPOW:
        snprintf(msg, sizeof msg, "kernel '%s'%s: negative exponent in an i32 power", kname, vl);
        break;
    case DVM_RT_SIZER_CAP:
        snprintf(msg, sizeof msg,
                 "kernel '%s'%s: sizing adstack %s took more than %lld steps; set its capacity with %s",
                 kname, vl, sname, (long long)rt->p[1], L->ctx->cli_remedies ? "--ad-stack-size N" : "opts.ad_stack_size");
        break;
    case DVM_RT_ADSTACK_UNDERFLOW:
        snprintf(msg, sizeof msg, "kernel '%s'%s: internal error: adstack %s popped while empty", kname, vl, sname);
        break;
    case DVM_RT_CANCELLED:
        if (L->ctx->timed_out)
            snprintf(msg, sizeof msg, "kernel '%s'%s: timed out after %g %s (%s)", kname, vl,
                     L->ctx->cli_remedies ? L->ctx->timeout_ms / 1e3 : L->ctx->timeout_ms, L->ctx->cli_remedies ? "s" : "ms",
                     L->ctx->cli_remedies ? "--timeout" : "opts.timeout_ms");
        else
            snprintf(msg, sizeof msg, "kernel '%s'%s: cancelled%s", kname, vl, L->ctx->cli_remedies ? "" : " (dvm_context_cancel)");
        break;
    case DVM_RT_BAD_OP:
        if (rt->p[1] == 1) /* engine_lanes.h: a conditional branch reached the branch-free lanes */
            snprintf(msg, sizeof msg,
                     "kernel '%s'%s: internal error: the branch-free lane interpreter met a conditional branch at node %u",
                     kname, vl, rt->node);
        else
            snprintf(msg, sizeof msg, "kernel '%s'%s: internal error: the interpreter met an unknown opcode at node %u", kname,
                     vl, rt->node);
        break;
    default:
        snprintf(msg, sizeof msg, "kernel '%s'%s: runtime error code %d at node %u", kname, vl, (int)rt->code, rt->node);
        break;
    }
    const dvm_status code = rt->code == DVM_RT_CANCELLED ? DVM_ERR_CANCELLED : DVM_ERR_RUNTIME;
    if (!L->may_fail[vk]) /* variant_may_fail was wrong: say so, not pass it off as the kernel's */
        return dvm_fail(L->ctx, code, line != 0,
                        "%s%s (internal error: the host had proven that this launch cannot fail and took no "
                        "snapshot, so arrays may be partly written)", loc, msg);
    return dvm_fail(L->ctx, code, line != 0, "%s%s", loc, msg);
}

/* A parallel task's iteration count where the host knows its extents and starts (known),
   else -1; saturated at 2^40, beyond any grid (dvm_exec.total). */
static int64_t known_total(const uint32_t *uni, const uint8_t *known, uint32_t nu, const dvm_task_desc *td) {
    int64_t total = 1;
    for (uint32_t d = 0; d < td->ndim && d < DVM_MAX_PAR_DIMS; d++) {
        const uint32_t ss = td->start_u[d], es = td->ext_u[d];
        if (es >= nu || !known[es] || (ss != DVM_NO_SLOT && (ss >= nu || !known[ss]))) return -1;
        const int64_t e = (int64_t)(int32_t)uni[es] - (ss != DVM_NO_SLOT ? (int32_t)uni[ss] : 0);
        if (e <= 0) return 0;
        total = total > ((int64_t)1 << 40) / e ? ((int64_t)1 << 40) : total * e;
    }
    return total;
}

/* Each slot's element count and shape (DVM_MAX_RANK a slot, 1 past its rank); check_bindings
   has bound every slot. */
static void slot_extents(const launch *L, const dvm_variant_desc *var, int64_t *len, int32_t *shape) {
    for (uint32_t j = 0; j < var->nslots; j++) {
        const dvm_array *a = slot_array(L, &L->p->slots[var->slot_begin + j]);
        len[j] = a->count;
        for (int ax = 0; ax < DVM_MAX_RANK; ax++)
            shape[(size_t)j * DVM_MAX_RANK + (size_t)ax] = ax < a->rank ? (int32_t)a->shape[ax] : 1;
    }
}

/* Steps 1 and 3 for one variant, before any variant of the launch runs (they depend on the
   arguments alone): its uniforms into L->uni[vk], the scalars, then the shape symbols (every
   other word zero); then the serial tasks at its start that compute on uniforms alone (a
   partitioned loop's bounds, a range's computed stop: dvm_task_uniform_only) run here, on the
   host, once: the backend gets their results with the other uniforms and skips them (one that
   stores to a uniform it read would not give the same values twice, and variant_may_fail
   judges the launch by these values), and a GPU knows every extent they compute (its grids
   sized to them, before slots()). One that fails is left to the backend, which reports the
   error as it would have.
   L->known[vk] marks the uniforms the host knows for the whole launch. */
static dvm_status prepare_uniforms(launch *L, uint32_t vk) {
    const dvm_program *p = L->p;
    const dvm_kernel_desc *kd = L->k->kd;
    const dvm_variant_desc *var = &kd->v[vk];
    const uint32_t nu = var->nuniforms;
    uint32_t *uni = L->uni[vk] = (uint32_t *)calloc(nu ? nu : 1, sizeof *uni);
    uint8_t *known = L->known[vk] = (uint8_t *)calloc(nu ? nu : 1, 1);
    uint32_t *save = (uint32_t *)calloc(nu ? nu : 1, sizeof *save);
    if (!uni || !known || !save) {
        free(save);
        return dvm_fail(L->ctx, DVM_ERR_NOMEM, 0, "kernel '%s'%s: out of memory", pstr(p, kd->name), variant_label(vk));
    }
    for (uint32_t i = 0; i < kd->nparams; i++) {
        const dvm_param_desc *pd = &p->params[kd->param_begin + i];
        if (!pd->is_array && pd->uslot < nu) {
            uni[pd->uslot] = L->args->scalar[i];
            known[pd->uslot] = 1;
        }
    }
    for (uint32_t s = 0; s < kd->nsyms; s++) {
        const dvm_sym_desc *sy = &p->syms[kd->sym_begin + s];
        if (sy->uslot < nu) {
            uni[sy->uslot] = (uint32_t)(int32_t)L->sym[s];
            known[sy->uslot] = 1;
        }
    }
    uint32_t ht = 0;
    while (ht < var->ntasks) {
        const dvm_task_desc *td = &p->tasks[var->task_begin + ht];
        if (!dvm_task_uniform_only(p->nodes, td, known, nu)) break;
        memcpy(save, uni, nu * sizeof *uni);
        if (dvm_cpu_run_uniform_task(p, ht, td, uni)) {
            memcpy(uni, save, nu * sizeof *uni);
            break;
        }
        for (uint32_t j = 0; j < td->code_len; j++) {
            const dvm_node *n = &p->nodes[td->code_begin + j];
            if (dvm_op_uniform_write(n->op) == 'V' && n->a < nu) known[n->a] = 1;
        }
        ht++;
    }
    /* known means known for the whole launch: not a slot a later task writes, nor a serial
       loop's variable (run_stages sets it per trip) */
    for (uint32_t t = ht; t < var->ntasks; t++) {
        const dvm_task_desc *td = &p->tasks[var->task_begin + t];
        if (td->kind == DVM_TASK_REPEAT && td->ext_u[1] < nu) known[td->ext_u[1]] = 0;
        for (uint32_t j = 0; j < td->code_len; j++) {
            const dvm_node *n = &p->nodes[td->code_begin + j];
            if (dvm_op_uniform_write(n->op) && n->a < nu) known[n->a] = 0;
        }
    }
    L->host_tasks[vk] = ht;
    free(save);
    return DVM_OK;
}

/* Whether a run of task t can reach a cancel point: a backward jump (interp_core.h JUMP,
   interp.comp), or the host's walk over the trips of a serial loop (a REPEAT, run_stages). */
static int task_has_cancel_point(const dvm_program *p, const dvm_task_desc *td) {
    if (td->kind == DVM_TASK_REPEAT) return 1;
    for (uint32_t i = 0; i < td->code_len; i++) {
        const dvm_node *n = &p->nodes[td->code_begin + i];
        const dvm_op_info *o = &dvm_op_table[n->op];
        if (!o->name) return 1;
        if (!(o->flags & DVM_F_BRANCH)) continue;
        const char *j = strchr(o->fmt, 'J');
        const uint32_t tgt = !j ? 0 : j - o->fmt == 1 ? n->a : j - o->fmt == 2 ? n->b : n->c;
        if (tgt <= i) return 1;
    }
    return 0;
}

/* Whether the variant may record a runtime error in this launch (dvm_task_may_fail, with the
   uniforms prepare_uniforms computed and the arrays' shapes), or a backend stop it
   (may_stop): a variant with adstacks always may (they are sized and may overflow), and so
   does one whose iteration space the host does not know. */
static int variant_may_fail(const launch *L, uint32_t vk) {
    const dvm_program *p = L->p;
    const dvm_variant_desc *var = &L->k->kd->v[vk];
    const uint32_t ns = var->nslots;
    if (var->nstacks) return 1;
    /* a cancel point (a loop: dvm_context_cancel, opts.timeout_ms) can stop any task after
       earlier ones wrote */
    for (uint32_t t = L->host_tasks[vk]; t < var->ntasks; t++)
        if (task_has_cancel_point(p, &p->tasks[var->task_begin + t])) return 1;
    int64_t *len = (int64_t *)calloc(ns ? ns : 1, sizeof *len);
    int32_t *shape = (int32_t *)calloc((size_t)(ns ? ns : 1) * DVM_MAX_RANK, sizeof *shape);
    int may = 1;
    if (len && shape) {
        slot_extents(L, var, len, shape);
        dvm_exec x;
        memset(&x, 0, sizeof x);
        x.uniforms = L->uni[vk];
        x.nuniforms = var->nuniforms;
        x.known = L->known[vk];
        may = 0;
        for (uint32_t t = L->host_tasks[vk]; t < var->ntasks && !may; t++) {
            const dvm_task_desc *td = &p->tasks[var->task_begin + t];
            int64_t lo[DVM_MAX_PAR_DIMS] = {0, 0, 0}, hi[DVM_MAX_PAR_DIMS] = {0, 0, 0};
            for (uint32_t d = 0; td->kind == DVM_TASK_PARALLEL && d < td->ndim && d < DVM_MAX_PAR_DIMS; d++) {
                int32_t stop = 0, start = 0;
                if (!dvm_exec_known_i32(&x, td->ext_u[d], &stop) ||
                    (td->start_u[d] != DVM_NO_SLOT && !dvm_exec_known_i32(&x, td->start_u[d], &start)))
                    may = 1;
                lo[d] = start;
                hi[d] = stop;
            }
            if (!may) may = dvm_task_may_fail(p->nodes, td, lo, hi, len, shape, ns);
            const int64_t total = td->kind == DVM_TASK_PARALLEL ? known_total(x.uniforms, x.known, x.nuniforms, td) : 1;
            if (!may && L->ctx->vt->may_stop) may = L->ctx->vt->may_stop(L->ctx->be, p->nodes, td, total);
        }
    }
    free(len);
    free(shape);
    return may;
}

/* Runs tasks [first, first + count) of x's variant with the arrays `arrays`: one window of
   run_stages. Windows after the first keep the serial stacks and the uniforms that the
   earlier ones left (dvm_exec.resume). */
static dvm_status exec_window(launch *L, uint32_t vk, dvm_exec *x, uint32_t first, uint32_t count, int more,
                              dvm_buffer *const *arrays) {
    dvm_context *ctx = L->ctx;
    const dvm_variant_desc *var = x->var;
    dvm_variant_desc win = *var;
    win.task_begin = var->task_begin + first;
    win.ntasks = count;
    uint32_t ht = L->host_tasks[vk];
    dvm_exec w = *x;
    w.var = &win;
    w.arrays = arrays;
    w.host_tasks = ht > first ? (ht - first < count ? ht - first : count) : 0;
    w.total = x->total ? x->total + first : NULL;
    w.resume = first > 0;
    w.more = more;
    dvm_rt_error rt;
    memset(&rt, 0, sizeof rt);
    char err[1024] = "";
    double t0 = now_ms();
    int rc = ctx->vt->exec(ctx->be, &w, &rt, err, sizeof err);
    L->st.exec_ms += now_ms() - t0;
    if (rc == 1) {
        rt.task += first; /* the record counts tasks within the window */
        w.var = var;
        return rt_fail(L, vk, &w, &rt);
    }
    if (rc != 0)
        return dvm_fail(ctx, DVM_ERR_BACKEND, 0, "kernel '%s'%s: %s backend: %s", pstr(L->p, L->k->kd->name), run_label(L, vk),
                        ctx->vt->name, err);
    return DVM_OK;
}

/* Step 5, the ordered stages (docs/autodiff.md). A variant with neither reverse (phase-1) nor
   REPEAT tasks runs in one window. Otherwise the host walks its tasks: a REPEAT runs the tasks
   of its body once per trip of its serial loop (the last trip first in phase 1), setting the
   loop variable's uniform; every other run of consecutive tasks of one stage is a window.
   An adjoint runs its stages forward (phase 0), then their reverse sweeps, and the reverse of
   each stage instance (a stage, and a trip where it is in a loop) must read every primal array
   as it was before that instance ran forward. Instances are ordered by a key (stage in the high
   bits; in a loop, the loop's first stage, then trip and stage) that both phases compute alike.
   Forward, before an instance that writes an array, the host copies the array if some instance
   since the previous writer (this one included) reads it in reverse: one copy, shared by all
   of them. Backward, at each instance the array is bound to the copy taken before the first
   writer at or after it, or to the array itself when none follows. */
typedef struct vstack {
    uint64_t *key;
    dvm_buffer **buf;
    uint32_t n, cap;
} vstack;

typedef struct loop_info {
    uint16_t var_u;                /* the loop variable's uniform (identifies the loop) */
    int32_t start, stop;           /* trips, read when the loop first runs */
    uint32_t first_stage, nstages; /* the stages of its body, over both phases */
    int have_trips;
} loop_info;

typedef struct stages {
    launch *L;
    uint32_t vk;
    dvm_exec *x;
    dvm_buffer *const *bufs;
    uint32_t ns, nstage, ntasks;
    uint8_t *W, *R;       /* per (stage, slot): the forward writes it, the reverse reads it */
    uint8_t *RS;          /* per (stage, slot): a serial reverse task writes it (restores) */
    uint8_t *read_since;  /* per slot: some instance since the last writer reads it in reverse */
    vstack *vs;           /* per slot: the copies kept, by key */
    vstack *post;         /* per slot: copies of what a serial stage's forward left, by key */
    dvm_buffer **cur;     /* per slot: what the reverse reads now */
    dvm_buffer **win;     /* per slot: what one reverse window runs on */
    loop_info *loops;
    uint32_t nloops;
    int windows;          /* more than one window: uniforms come back after each */
} stages;

static const dvm_task_desc *task_at(const stages *S, uint32_t t) { return &S->L->p->tasks[S->x->var->task_begin + t]; }

static loop_info *loop_of(stages *S, uint16_t var_u) {
    for (uint32_t i = 0; i < S->nloops; i++)
        if (S->loops[i].var_u == var_u) return &S->loops[i];
    return NULL;
}

static uint64_t inst_key(uint32_t stage, const loop_info *lp, int64_t trip_index) {
    if (!lp) return (uint64_t)stage << 32;
    return ((uint64_t)lp->first_stage << 32) + (uint64_t)trip_index * lp->nstages + (stage - lp->first_stage);
}

/* Pushes a copy of slot q's array (as it is now) on v under key. */
static dvm_status keep_copy(stages *S, vstack *v, uint32_t q, uint64_t key) {
    launch *L = S->L;
    dvm_context *ctx = L->ctx;
    const dvm_program *p = L->p;
    char err[512] = "";
    if (v->n == v->cap) {
        uint32_t nc = v->cap ? 2 * v->cap : 8;
        uint64_t *nk = (uint64_t *)realloc(v->key, nc * sizeof *nk);
        if (nk) v->key = nk;
        dvm_buffer **nb = (dvm_buffer **)realloc(v->buf, nc * sizeof *nb);
        if (nb) v->buf = nb;
        if (!nk || !nb) return dvm_fail(ctx, DVM_ERR_NOMEM, 0, "kernel '%s': out of memory", pstr(p, L->k->kd->name));
        v->cap = nc;
    }
    dvm_array *arr = slot_array(L, &p->slots[S->x->var->slot_begin + q]);
    size_t bytes = (size_t)(arr->count ? arr->count : 1) * 4;
    dvm_buffer *buf = NULL;
    if (scratch_buf(ctx, L->nscratch++, bytes, &buf, err, sizeof err) != 0 ||
        ctx->vt->copy(ctx->be, buf, S->bufs[q], bytes, err, sizeof err) != 0)
        return dvm_fail(ctx, DVM_ERR_BACKEND, 0, "kernel '%s': cannot keep a copy of '%s' for the adjoint: %s",
                        pstr(p, L->k->kd->name),
                        pstr(p, p->params[L->k->kd->param_begin + p->slots[S->x->var->slot_begin + q].param].name), err);
    v->key[v->n] = key;
    v->buf[v->n++] = buf;
    L->st.version_bytes += (int64_t)bytes;
    return DVM_OK;
}

/* Runs tasks [a, b) (no REPEAT among them) as windows of one stage each, inside loop lp at
   trip_index (lp NULL: outside loops). */
static dvm_status run_range(stages *S, uint32_t a, uint32_t b, const loop_info *lp, int64_t trip_index) {
    launch *L = S->L;
    const uint32_t ns = S->ns;
    dvm_status st = DVM_OK;
    uint32_t t = a;
    while (st == DVM_OK && t < b) {
        const dvm_task_desc *td = task_at(S, t);
        uint32_t e = t + 1;
        while (e < b && task_at(S, e)->stage == td->stage && task_at(S, e)->phase == td->phase) e++;
        const uint32_t s = td->stage;
        const uint64_t key = inst_key(s, lp, trip_index);
        const int more = S->windows;
        if (td->phase == 0) {
            for (uint32_t q = 0; q < ns && st == DVM_OK && S->W; q++) {
                size_t c = (size_t)s * ns + q;
                if (S->R[c]) S->read_since[q] = 1;
                if (!S->W[c]) continue;
                if (S->read_since[q]) st = keep_copy(S, &S->vs[q], q, key);
                S->read_since[q] = 0;
            }
            L->in_forward = S->nstage > 0 && S->W != NULL;
            if (st == DVM_OK) st = exec_window(L, S->vk, S->x, t, e - t, more, S->bufs);
            L->in_forward = 0;
            /* serial code that reads back what it stored: its reverse walks a copy of what this
               forward left back to the state before it (autodiff.c replay_store) */
            for (uint32_t q = 0; q < ns && st == DVM_OK && S->RS; q++)
                if (S->RS[(size_t)s * ns + q]) st = keep_copy(S, &S->post[q], q, key);
        } else {
            for (uint32_t q = 0; q < ns; q++) {
                vstack *v = &S->vs[q];
                while (v->n && v->key[v->n - 1] >= key) S->cur[q] = v->buf[--v->n];
                S->win[q] = S->cur[q];
                vstack *pv = &S->post[q];
                if (S->RS && S->RS[(size_t)s * ns + q] && pv->n && pv->key[pv->n - 1] == key) S->win[q] = pv->buf[--pv->n];
            }
            st = exec_window(L, S->vk, S->x, t, e - t, more, S->win);
        }
        t = e;
    }
    return st;
}

static dvm_status run_stages(launch *L, uint32_t vk, dvm_exec *x, dvm_buffer *const *bufs) {
    dvm_context *ctx = L->ctx;
    const dvm_program *p = L->p;
    const dvm_variant_desc *var = x->var;
    const uint32_t nt = var->ntasks, ns = var->nslots;
    stages S;
    memset(&S, 0, sizeof S);
    S.L = L;
    S.vk = vk;
    S.x = x;
    S.bufs = bufs;
    S.ns = ns;
    S.ntasks = nt;
    int reverse = 0;
    for (uint32_t t = 0; t < nt; t++) {
        const dvm_task_desc *td = task_at(&S, t);
        if (td->kind == DVM_TASK_REPEAT) S.nloops++;
        if (td->phase) reverse = 1;
        if (td->stage >= S.nstage) S.nstage = td->stage + 1u;
    }
    if (!reverse && !S.nloops) return exec_window(L, vk, x, 0, nt, 0, bufs);
    S.windows = 1;
    dvm_status st = DVM_OK;
    size_t cells = (size_t)S.nstage * ns;
    S.loops = (loop_info *)calloc(S.nloops + 1, sizeof *S.loops);
    S.read_since = (uint8_t *)calloc(ns + 1, 1);
    S.vs = (vstack *)calloc(ns + 1, sizeof *S.vs);
    S.post = (vstack *)calloc(ns + 1, sizeof *S.post);
    S.cur = (dvm_buffer **)calloc(ns + 1, sizeof *S.cur);
    S.win = (dvm_buffer **)calloc(ns + 1, sizeof *S.win);
    if (reverse) {
        S.W = (uint8_t *)calloc(cells + 1, 1);
        S.R = (uint8_t *)calloc(cells + 1, 1);
        S.RS = (uint8_t *)calloc(cells + 1, 1);
    }
    if (!S.loops || !S.read_since || !S.vs || !S.post || !S.cur || !S.win || (reverse && (!S.W || !S.R || !S.RS))) {
        st = dvm_fail(ctx, DVM_ERR_NOMEM, 0, "kernel '%s': out of memory", pstr(p, L->k->kd->name));
        goto done;
    }
    for (uint32_t q = 0; q < ns; q++) S.cur[q] = bufs[q];
    /* what each stage writes forward and reads in reverse, from the nodes; the loops' stages */
    uint32_t nl = 0;
    for (uint32_t t = 0; t < nt; t++) {
        const dvm_task_desc *td = task_at(&S, t);
        if (td->kind == DVM_TASK_REPEAT) {
            loop_info *lp = loop_of(&S, td->ext_u[1]);
            if (!lp) {
                lp = &S.loops[nl++];
                lp->var_u = td->ext_u[1];
                lp->first_stage = UINT32_MAX;
            }
            for (uint32_t j = t + 1; j <= t + td->body && j < nt; j++) {
                uint32_t sg = task_at(&S, j)->stage;
                if (sg < lp->first_stage) {
                    if (lp->first_stage != UINT32_MAX) lp->nstages += lp->first_stage - sg;
                    else lp->nstages = 1;
                    lp->first_stage = sg;
                }
                if (sg >= lp->first_stage + lp->nstages) lp->nstages = sg - lp->first_stage + 1;
            }
            continue;
        }
        if (!reverse) continue;
        for (uint32_t j = 0; j < td->code_len; j++) {
            int wr, rd, a = dvm_node_array(&p->nodes[td->code_begin + j], &wr, &rd);
            if (a < 0 || (uint32_t)a >= ns || p->slots[var->slot_begin + (uint32_t)a].role != DVM_ROLE_PRIMAL) continue;
            if (td->phase == 0 && wr) S.W[(size_t)td->stage * ns + (uint32_t)a] = 1;
            if (td->phase == 1 && rd) S.R[(size_t)td->stage * ns + (uint32_t)a] = 1;
            if (td->phase == 1 && wr && td->kind == DVM_TASK_SERIAL) S.RS[(size_t)td->stage * ns + (uint32_t)a] = 1;
        }
    }
    S.nloops = nl;
    uint32_t t = 0;
    while (st == DVM_OK && t < nt) {
        const dvm_task_desc *td = task_at(&S, t);
        if (td->kind != DVM_TASK_REPEAT) {
            uint32_t e = t + 1;
            while (e < nt && task_at(&S, e)->kind != DVM_TASK_REPEAT) e++;
            st = run_range(&S, t, e, NULL, 0);
            t = e;
            continue;
        }
        loop_info *lp = loop_of(&S, td->ext_u[1]);
        const uint32_t *U = x->uniforms;
        if (!lp->have_trips) { /* the bounds as the loop's first run found them */
            lp->stop = (int32_t)U[td->ext_u[0]];
            lp->start = td->start_u[0] != DVM_NO_SLOT ? (int32_t)U[td->start_u[0]] : 0;
            lp->have_trips = 1;
        }
        const int64_t trips = lp->stop > lp->start ? (int64_t)lp->stop - lp->start : 0;
        if (trips * (int64_t)(lp->nstages ? lp->nstages : 1) >= ((int64_t)1 << 32)) {
            st = dvm_fail(ctx, DVM_ERR_RUNTIME, 0, "kernel '%s': a serial loop of %lld trips over %u statements is too long",
                          pstr(p, L->k->kd->name), (long long)trips, lp->nstages);
            break;
        }
        const uint32_t a = t + 1, b = t + 1 + td->body;
        for (int64_t k = 0; k < trips && st == DVM_OK; k++) {
            const int64_t ti = td->phase ? trips - 1 - k : k;
            if (__atomic_load_n(ctx->cancel, __ATOMIC_RELAXED)) { /* a cancel point (task_has_cancel_point) */
                dvm_rt_error rt;
                memset(&rt, 0, sizeof rt);
                rt.code = DVM_RT_CANCELLED;
                rt.node = UINT32_MAX;
                rt.p[0] = -1;
                st = rt_fail(L, vk, x, &rt);
                break;
            }
            x->uniforms[td->ext_u[1]] = (uint32_t)(int32_t)(lp->start + ti);
            st = run_range(&S, a, b, lp, ti);
        }
        t = b;
    }
done:
    for (uint32_t q = 0; q < ns; q++) {
        if (S.vs) free(S.vs[q].key), free(S.vs[q].buf);
        if (S.post) free(S.post[q].key), free(S.post[q].buf);
    }
    free(S.vs);
    free(S.post);
    free(S.win);
    free(S.RS);
    free(S.W);
    free(S.R);
    free(S.read_since);
    free(S.cur);
    free(S.loops);
    return st;
}

/* Steps 2, 4 and 5 for one variant (1 and 3: prepare_uniforms). */
static dvm_status run_variant(launch *L, uint32_t vk) {
    dvm_context *ctx = L->ctx;
    const dvm_program *p = L->p;
    const dvm_kernel_desc *kd = L->k->kd;
    const dvm_variant_desc *var = &kd->v[vk];
    const char *kname = pstr(p, kd->name), *vl = variant_label(vk);
    uint32_t ns = var->nslots, nst = var->nstacks, nu = var->nuniforms;
    uint32_t *uni = L->uni[vk];
    dvm_buffer **bufs = (dvm_buffer **)calloc(ns ? ns : 1, sizeof *bufs);
    int64_t *len = (int64_t *)calloc(ns ? ns : 1, sizeof *len);
    int32_t *shape = (int32_t *)calloc((size_t)(ns ? ns : 1) * DVM_MAX_RANK, sizeof *shape);
    int64_t *caps = (int64_t *)calloc(nst ? nst : 1, sizeof *caps);
    int64_t *off = (int64_t *)calloc(nst ? nst : 1, sizeof *off);
    int64_t *total = (int64_t *)calloc(var->ntasks ? var->ntasks : 1, sizeof *total);
    dvm_status st = DVM_OK;
    char err[1024] = "";
    if (!bufs || !len || !shape || !caps || !off || !total) {
        st = dvm_fail(ctx, DVM_ERR_NOMEM, 0, "kernel '%s'%s: out of memory", kname, vl);
        goto done;
    }
    for (uint32_t j = 0; j < ns; j++) {
        const dvm_slot_desc *sd = &p->slots[var->slot_begin + j];
        bufs[j] = slot_array(L, sd)->buf;
    }
    slot_extents(L, var, len, shape);
    dvm_exec x;
    memset(&x, 0, sizeof x);
    x.prog = p;
    x.loaded = L->k->m->loaded;
    x.kernel = L->k->index;
    x.variant = vk;
    x.var = var;
    x.nslots = ns;
    x.arrays = bufs;
    x.arr_len = len;
    x.arr_shape = shape;
    x.uniforms = uni;
    x.nuniforms = nu;
    x.known = L->known[vk];
    for (uint32_t t = 0; t < var->ntasks; t++) {
        const dvm_task_desc *td = &p->tasks[var->task_begin + t];
        total[t] = td->kind == DVM_TASK_PARALLEL ? known_total(uni, x.known, nu, td) : -1;
    }
    x.total = total;
    x.host_tasks = L->host_tasks[vk];
    x.stack_off = off;
    x.stack_cap = caps;
    x.nstacks = nst;
    x.cancel = ctx->cancel;
    /* 2. sizes. A stack with no formula (DVM_SZ_DEFAULT) starts at the default capacity, or at
       what an earlier launch with the same key grew it to. When the user set neither
       capacity (grow), such a stack that overflows grows and the launch reruns (5). */
    const int grow = L->o->ad_stack_size == 0 && L->o->default_ad_stack_size == 0;
    int64_t def = L->o->default_ad_stack_size > 0 ? L->o->default_ad_stack_size : DVM_DEFAULT_AD_STACK;
    int need_sizer = 0, has_default = 0;
    for (uint32_t i = 0; i < nst; i++) {
        const dvm_stack_desc *sd = &p->stacks[var->stack_begin + i];
        if (L->o->ad_stack_size > 0) caps[i] = L->o->ad_stack_size;
        else if (sd->sizing == DVM_SZ_CONSTANT) caps[i] = sd->const_cap;
        else if (sd->sizing == DVM_SZ_DEFAULT) {
            caps[i] = def;
            has_default = 1;
        } else need_sizer = 1;
    }
    dvm_size_cache *c = &L->k->cache[vk];
    int keyed = 0; /* c holds this launch's key */
    if (need_sizer || (grow && has_default)) {
        if (!c->scanned && dvm_size_cache_scan(c, p, var) != 0) {
            st = dvm_fail(ctx, DVM_ERR_NOMEM, 0, "kernel '%s'%s: out of memory", kname, vl);
            goto done;
        }
        size_t keylen = nu + 3;
        for (uint32_t j = 0; j < ns; j++) keylen += c->load_slot[j] ? 4 : 0;
        uint32_t *key = (uint32_t *)malloc(keylen * sizeof *key);
        if (!key) {
            st = dvm_fail(ctx, DVM_ERR_NOMEM, 0, "kernel '%s'%s: out of memory", kname, vl);
            goto done;
        }
        size_t q = 0;
        int host_owned = 0; /* a size read from wrapped host memory: its owner may have changed it */
        memcpy(key, uni, nu * sizeof *uni);
        q = nu;
        key[q++] = (uint32_t)def;
        key[q++] = (uint32_t)((uint64_t)def >> 32);
        key[q++] = (uint32_t)grow; /* a default the user gave is an override: nothing learned applies */
        for (uint32_t j = 0; j < ns; j++) {
            if (!c->load_slot[j]) continue;
            const dvm_array *a = slot_array(L, &p->slots[var->slot_begin + j]);
            /* versions are bumped after the whole launch, so this is the content the sizer reads */
            key[q++] = (uint32_t)a->id;
            key[q++] = (uint32_t)(a->id >> 32);
            key[q++] = (uint32_t)a->version;
            key[q++] = (uint32_t)(a->version >> 32);
            host_owned |= a->host_owned;
        }
        if (!host_owned && c->valid && c->keylen == keylen && c->ncaps == nst && !memcmp(c->key, key, keylen * sizeof *key)) {
            for (uint32_t i = 0; i < nst; i++) {
                const uint8_t sz = p->stacks[var->stack_begin + i].sizing;
                if (sz == DVM_SZ_PROGRAM) caps[i] = c->caps[i];
                else if (sz == DVM_SZ_DEFAULT && grow && c->learned && c->learned[i] > caps[i]) caps[i] = c->learned[i];
            }
            free(key);
            L->cached = need_sizer;
            keyed = 1;
        } else {
            if (need_sizer) {
                dvm_size_job job = {p, x.loaded, var, ns, bufs, len, shape, uni, nu, DVM_SIZER_WALK_CAP, ctx->cancel};
                dvm_rt_error rt;
                memset(&rt, 0, sizeof rt);
                double t0 = now_ms();
                int rc = dvm_sizer_run(ctx->vt, ctx->be, &job, caps, &rt, err, sizeof err);
                L->st.size_ms += now_ms() - t0;
                L->sized = 1;
                if (rc != 0) {
                    free(key);
                    st = rc == 1 ? rt_fail(L, vk, &x, &rt)
                                 : dvm_fail(ctx, DVM_ERR_BACKEND, 0, "kernel '%s'%s: sizing the adstacks failed: %s", kname, vl, err);
                    goto done;
                }
            }
            int64_t *nc = (int64_t *)realloc(c->caps, (nst ? nst : 1) * sizeof *nc);
            free(c->learned);
            c->learned = NULL;
            if (!nc) {
                free(key);
                c->valid = 0;
            } else {
                c->caps = nc;
                memcpy(c->caps, caps, nst * sizeof *caps);
                free(c->key);
                c->key = key;
                c->keylen = keylen;
                c->ncaps = nst;
                c->valid = 1;
                keyed = 1;
            }
        }
    }
    /* what a rerun starts from: the uniforms before any task, the versions kept so far */
    uint32_t *uni0 = NULL;
    int64_t *grown = NULL;
    const int64_t version_bytes0 = L->st.version_bytes;
    if (grow && has_default) {
        uni0 = (uint32_t *)malloc((nu ? nu : 1) * sizeof *uni0);
        grown = (int64_t *)malloc((nst ? nst : 1) * sizeof *grown);
        if (!uni0 || !grown) {
            free(uni0);
            free(grown);
            st = dvm_fail(ctx, DVM_ERR_NOMEM, 0, "kernel '%s'%s: out of memory", kname, vl);
            goto done;
        }
        memcpy(uni0, uni, nu * sizeof *uni);
    }
    x.nthread_slots = ctx->vt->slots(ctx->be, &x);
    for (;;) {
        for (uint32_t i = 0; i < nst; i++)
            if (caps[i] < 0 || caps[i] > DVM_SIZE_SAT) {
                const dvm_stack_desc *sd = &p->stacks[var->stack_begin + i];
                st = dvm_fail(ctx, DVM_ERR_RUNTIME, 0, "kernel '%s'%s: adstack '%s' (line %u) would need %lld entries, more than the limit of %lld",
                              kname, vl, pstr(p, sd->name), sd->line, (long long)caps[i], (long long)DVM_SIZE_SAT);
                goto run_done;
            }
        /* 4. heap (heap/heap.h owns the layout and its growth) */
        dvm_heap_layout hl;
        if (dvm_heap_layout_compute(caps, nst, x.nthread_slots, off, &hl, err, sizeof err) != 0) {
            st = dvm_fail(ctx, DVM_ERR_RUNTIME, 0, "kernel '%s'%s: adstack heap: %s; lower the adstack sizes or the thread count",
                          kname, vl, err);
            goto run_done;
        }
        x.stride = hl.stride;
        size_t hbytes = (size_t)hl.total_words * 4;
        /* every exec gets a real buffer, even one with no stacks */
        if (dvm_heap_reserve(&ctx->scratch.heap, &ctx->scratch.heap_mem, hbytes > 64 ? hbytes : 64, err, sizeof err) != 0) {
            st = dvm_fail(ctx, DVM_ERR_BACKEND, 0,
                          "kernel '%s'%s: cannot allocate the adstack heap of %zu bytes (%lld thread slots of %lld words): %s; "
                          "lower the adstack sizes or the thread count",
                          kname, vl, hbytes, (long long)x.nthread_slots, (long long)hl.stride, err);
            goto run_done;
        }
        x.heap = (dvm_buffer *)ctx->scratch.heap.buf;
        if ((int64_t)ctx->scratch.heap.bytes > L->st.heap_bytes) L->st.heap_bytes = (int64_t)ctx->scratch.heap.bytes;
        if (hl.min_words * 4 > L->st.heap_min_bytes) L->st.heap_min_bytes = hl.min_words * 4;
        /* 5. run */
        memset(&L->rt, 0, sizeof L->rt);
        st = run_stages(L, vk, &x, bufs);
        if (st == DVM_OK || !grow || !has_default) break;
        /* An overflow of a stack with no formula: grow it, undo the attempt, run again. The
           error record says which stack, not how many entries it needs (the thread stops at
           the first push too many), so capacities grow geometrically. Every stack with no
           formula at the same capacity grows with it: stacks pushed in one while loop need the
           same count, and each rerun costs up to a launch. */
        const dvm_rt_error *rt = &L->rt;
        if (st != DVM_ERR_RUNTIME || rt->code != DVM_RT_ADSTACK_OVERFLOW || rt->p[0] < 0 || (uint64_t)rt->p[0] >= nst ||
            p->stacks[var->stack_begin + (uint32_t)rt->p[0]].sizing != DVM_SZ_DEFAULT)
            break;
        const int64_t from = caps[(uint32_t)rt->p[0]], to = from * DVM_AUTO_GROWTH;
        for (uint32_t i = 0; i < nst; i++)
            grown[i] = p->stacks[var->stack_begin + i].sizing == DVM_SZ_DEFAULT && caps[i] == from ? to : caps[i];
        dvm_heap_layout gl;
        if (to > DVM_SIZE_SAT || dvm_heap_layout_compute(grown, nst, x.nthread_slots, off, &gl, err, sizeof err) != 0 ||
            gl.total_words * 4 > DVM_AUTO_HEAP_MAX) {
            size_t n = strlen(ctx->err);
            snprintf(ctx->err + n, sizeof ctx->err - n,
                     " (grown automatically over %d reruns; %lld entries would take an adstack heap over the %lld bytes "
                     "that automatic growth allows)",
                     L->st.retries, (long long)to, (long long)DVM_AUTO_HEAP_MAX);
            break;
        }
        /* allocated before anything is undone, so that a device without the memory keeps this message */
        if (dvm_heap_reserve(&ctx->scratch.heap, &ctx->scratch.heap_mem, (size_t)gl.total_words * 4, err, sizeof err) != 0) {
            size_t n = strlen(ctx->err);
            snprintf(ctx->err + n, sizeof ctx->err - n,
                     " (grown automatically over %d reruns; the adstack heap of %lld bytes for %lld entries cannot be "
                     "allocated: %s)",
                     L->st.retries, (long long)gl.total_words * 4, (long long)to, err);
            break;
        }
        char rerr[512] = "";
        if (restore_snapshots(L, rerr, sizeof rerr) != 0) break; /* dvm_launch restores again and says so */
        memcpy(uni, uni0, nu * sizeof *uni);
        /* the unbound gradients (scratch arrays) start at zero again, as check_bindings left them */
        for (uint32_t j = 0; j < ns; j++) {
            dvm_array *a = slot_array(L, &p->slots[var->slot_begin + j]);
            if (!is_scratch(L, a) || !a->count) continue;
            float *z = (float *)calloc((size_t)a->count, 4);
            st = z ? dvm_array_write(ctx, a, z, a->count) : dvm_fail(ctx, DVM_ERR_NOMEM, 0, "kernel '%s'%s: out of memory", kname, vl);
            free(z);
            if (st != DVM_OK) goto run_done;
        }
        L->nscratch = L->nsnaps;
        L->st.version_bytes = version_bytes0;
        memcpy(caps, grown, nst * sizeof *caps);
        L->st.retries++;
        dvm_clear_err(ctx);
    }
    /* the next launch with this key starts at the capacities that were enough */
    if (st == DVM_OK && L->st.retries && keyed && c->valid && c->ncaps == nst) {
        if (!c->learned) c->learned = (int64_t *)calloc(nst ? nst : 1, sizeof *c->learned);
        for (uint32_t i = 0; c->learned && i < nst; i++)
            if (p->stacks[var->stack_begin + i].sizing == DVM_SZ_DEFAULT) c->learned[i] = caps[i];
    }
run_done:
    free(uni0);
    free(grown);
done:
    free(bufs);
    free(len);
    free(shape);
    free(caps);
    free(off);
    free(total);
    return st;
}

/* Sets the cancel word. It may be device memory the host writes through a PCIe BAR (Vulkan),
   where a sequentially consistent store is a locked exchange that waits on the bus: about 0.2 ms
   a launch on an H100. A release store is a plain write; the fence drains it from the
   write-combining buffer. Both are lock-free, so async-signal-safe. */
static void set_cancel(volatile uint32_t *w, uint32_t v) {
    __atomic_store_n(w, v, __ATOMIC_RELEASE);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

void dvm_run_begin(dvm_context *ctx) {
    if (ctx->run_depth++ == 0) {
        set_cancel(ctx->cancel, 0u);
        ctx->timed_out = 0;
    }
}
void dvm_run_end(dvm_context *ctx) { ctx->run_depth--; }

dvm_status dvm_context_cancel(dvm_context *ctx) {
    if (!dvm_handle_live(ctx, DVM_HK_CONTEXT)) return DVM_ERR_USAGE; /* a destroyed one's memory stays (handle.c) */
    set_cancel(ctx->cancel, 1u); /* async-signal-safe */
    return DVM_OK;
}

/* opts.timeout_ms: a thread that sleeps until the deadline and then sets the cancel word,
   unless the launch ended first; the polls are those of dvm_context_cancel. */
typedef struct watchdog {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct timespec deadline; /* CLOCK_MONOTONIC */
    int done, fired;
    dvm_context *ctx;
    pthread_t th;
} watchdog;

static void *watchdog_main(void *arg) {
    watchdog *w = (watchdog *)arg;
    pthread_mutex_lock(&w->mu);
    while (!w->done) {
        int rc = pthread_cond_timedwait(&w->cv, &w->mu, &w->deadline);
        if (rc == ETIMEDOUT && !w->done) {
            w->fired = 1;
            w->ctx->timed_out = 1;
            set_cancel(w->ctx->cancel, 1u);
            break;
        }
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static int watchdog_start(watchdog *w, dvm_context *ctx, double ms) {
    memset(w, 0, sizeof *w);
    w->ctx = ctx;
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca) != 0) return -1;
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (rc != 0) return -1;
    if (pthread_mutex_init(&w->mu, NULL) != 0) {
        pthread_cond_destroy(&w->cv);
        return -1;
    }
    clock_gettime(CLOCK_MONOTONIC, &w->deadline);
    double ns = (double)w->deadline.tv_nsec + ms * 1e6;
    double sec = ns / 1e9 > 1e9 ? 1e9 : (double)(int64_t)(ns / 1e9); /* far beyond any launch */
    w->deadline.tv_sec += (time_t)sec;
    w->deadline.tv_nsec = (long)(ns - sec * 1e9);
    if (w->deadline.tv_nsec < 0 || w->deadline.tv_nsec >= 1000000000L) w->deadline.tv_nsec = 0;
    if (pthread_create(&w->th, NULL, watchdog_main, w) != 0) {
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->cv);
        return -1;
    }
    return 0;
}

static void watchdog_stop(watchdog *w) {
    pthread_mutex_lock(&w->mu);
    w->done = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->th, NULL);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
}

static dvm_status launch_run(dvm_context *ctx, const dvm_kernel *kc, dvm_args *args, const dvm_launch_opts *opts,
                             dvm_launch_stats *stats);

/* Every handle a launch reads is alive: the kernel's module, the argument set and each array
   bound in it (a destroyed one is a dead handle, handle.c). */
static dvm_status check_live(dvm_context *ctx, const dvm_kernel *kc, const dvm_args *args) {
    if (!kc || !args) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_launch: NULL argument");
    if (!dvm_kernel_live(kc)) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_launch: the kernel's module was destroyed");
    if (!dvm_handle_live(args, DVM_HK_ARGS)) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_launch: the argument set was destroyed");
    for (uint32_t i = 0; i < args->nparams; i++) {
        const dvm_array *bound[3] = {args->arr[i], args->grad[i], args->dual[i]};
        for (int r = 0; r < 3; r++)
            if (bound[r] && !dvm_handle_live(bound[r], DVM_HK_ARRAY))
                return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_launch: the array bound to '%s%s' was destroyed",
                                pstr(kc->m->prog, kc->m->prog->params[kc->kd->param_begin + i].name),
                                r == 1 ? ".grad" : r == 2 ? ".dual" : "");
    }
    return DVM_OK;
}

dvm_status dvm_launch(dvm_context *ctx, const dvm_kernel *kc, dvm_args *args, const dvm_launch_opts *opts, dvm_launch_stats *stats) {
    if (stats) memset(stats, 0, sizeof *stats);
    if (!dvm_handle_live(ctx, DVM_HK_CONTEXT)) return DVM_ERR_USAGE;
    if (dvm_ctx_enter(ctx) != 0) return DVM_ERR_USAGE; /* another thread is inside: dvm_errmsg says so */
    dvm_status st0 = check_live(ctx, kc, args);
    if (st0 != DVM_OK) {
        dvm_ctx_leave(ctx);
        return st0;
    }
    const double tmo = opts ? opts->timeout_ms : 0;
    if (!(tmo >= 0) || tmo > 1e15) { /* NaN too */
        dvm_ctx_leave(ctx);
        return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_launch: opts.timeout_ms must be 0 (no limit) or a positive number of milliseconds");
    }
    dvm_run_begin(ctx);
    watchdog w;
    int watched = 0;
    dvm_status st;
    if (tmo > 0 && ctx->run_depth == 1) {
        ctx->timeout_ms = tmo;
        if (watchdog_start(&w, ctx, tmo) != 0) {
            st = dvm_fail(ctx, DVM_ERR_BACKEND, 0, "dvm_launch: cannot start the thread that enforces opts.timeout_ms");
            goto out;
        }
        watched = 1;
    }
    st = launch_run(ctx, kc, args, opts, stats);
    if (watched) watchdog_stop(&w);
out:
    dvm_run_end(ctx);
    dvm_ctx_leave(ctx);
    return st;
}

static dvm_status launch_run(dvm_context *ctx, const dvm_kernel *kc, dvm_args *args, const dvm_launch_opts *opts,
                             dvm_launch_stats *stats) {
    if (stats) memset(stats, 0, sizeof *stats);
    if (!ctx) return DVM_ERR_USAGE;
    if (!ctx->be) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_launch: the context has no backend (its creation failed)");
    dvm_clear_err(ctx);
    if (!kc || !args) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_launch: NULL argument");
    if (args->k != kc) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_launch: the arguments were created for kernel '%s', not '%s'",
                                       dvm_kernel_name(args->k), dvm_kernel_name(kc));
    if (kc->m->ctx != ctx) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_launch: the kernel belongs to another context");
    dvm_launch_opts o = {DVM_FORWARD, 0, 0, 0};
    if (opts) o = *opts;
    if (o.mode != DVM_FORWARD && o.mode != DVM_ADJOINT && o.mode != DVM_TANGENT)
        return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_launch: unknown mode %d", (int)o.mode);
    if (o.ad_stack_size < 0 || o.ad_stack_size > INT32_MAX || o.default_ad_stack_size < 0 || o.default_ad_stack_size > INT32_MAX)
        return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_launch: adstack sizes must be in 0..%d", INT32_MAX);
    double t0 = now_ms();
    launch L;
    memset(&L, 0, sizeof L);
    L.ctx = ctx;
    L.k = (struct dvm_kernel *)kc; /* the size cache is launch state behind the borrowed handle */
    L.p = kc->m->prog;
    L.args = args;
    L.o = &o;
    const char *kname = pstr(L.p, kc->kd->name);
    /* an adjoint launch runs the adjoint variant alone: its phase 0 is the forward */
    const uint32_t vk = o.mode == DVM_ADJOINT ? DVM_V_ADJOINT : o.mode == DVM_TANGENT ? DVM_V_TANGENT : DVM_V_FORWARD;
    /* no_adjoint says why the adjoint (and, when it is absent too, the tangent) is missing */
    if (vk != DVM_V_FORWARD && !kc->kd->v[vk].present && kc->kd->no_adjoint)
        return dvm_fail(ctx, DVM_ERR_COMPILE, 1, "%s:%s", pstr(L.p, L.p->source_name), pstr(L.p, kc->kd->no_adjoint));
    if (!kc->kd->v[vk].present)
        return dvm_fail(ctx, DVM_ERR_ARG, 0, "kernel '%s' has no %s variant in this program", kname,
                        vk == DVM_V_ADJOINT ? "adjoint" : vk == DVM_V_TANGENT ? "tangent" : "forward");
    char err[1024] = "";
    dvm_status st = check_bindings(&L, o.mode);
    /* What no runtime error can stop (variant_may_fail) needs no copy to be undone: a
       backend acquires everything a variant needs before its first task writes. */
    if (st == DVM_OK && (st = prepare_uniforms(&L, vk)) == DVM_OK) L.may_fail[vk] = variant_may_fail(&L, vk);
    if (st == DVM_OK) st = take_snapshots(&L, vk);
    L.nscratch = L.nsnaps;
    int ran = 0;
    if (st == DVM_OK) {
        ran = 1;
        st = run_variant(&L, vk);
    }
    if (st != DVM_OK && ran) {
        /* a failed launch leaves every array as it was */
        if (restore_snapshots(&L, err, sizeof err) != 0) {
            size_t n = strlen(ctx->err);
            snprintf(ctx->err + n, sizeof ctx->err - n, " (and restoring the arrays failed: %s)", err);
        }
    } else if (st == DVM_OK) {
        for (uint32_t i = 0; i < L.nsnaps; i++) L.snaps[i].a->version++;
    }
    L.st.total_ms = now_ms() - t0;
    L.st.sizes_cached = L.cached && !L.sized;
    if (stats) *stats = L.st;
    free(L.sym);
    free(L.snaps);
    for (int v = 0; v < DVM_V_COUNT; v++) {
        free(L.uni[v]);
        free(L.known[v]);
    }
    return st;
}
