/* tape.c: a tape of launches (dvm_tape_* in dvm.h; docs/autodiff.md, "Tapes"). Launches are
 * ordered stages over shared arrays, like a kernel's top-level statements (vm/launch.c
 * run_stages): backward runs each recorded launch's adjoint, the last first, on the arrays as
 * they were when it ran. A recorded launch's adjoint is an adjoint launch (DVM_ADJOINT) of its
 * kernel started from that state: it runs the kernel forward again on a working copy and then
 * its reverse, which adds into the gradient arrays; a gradient array is both the seed of the
 * array's value after a launch and, once that launch's adjoint ran, the gradient of its value
 * before it, so the adjoints chain through in-place updates.
 *
 * The state before each launch comes from one of two schedules:
 * - no budget: before a launch writes an array, the tape keeps a copy of it (a version); the
 *   state before launch j is, per array, the copy taken before the first launch at or after j
 *   that writes it, or the array itself when none does;
 * - a budget: the tape keeps only the arrays' contents before the first launch (checkpoint 0)
 *   and, during backward, at most as many further checkpoints of every written array as the
 *   budget holds, recomputing the launches between them (binomial checkpointing, as revolve:
 *   Griewank and Walther). Both give the same gradients. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vm/runtime.h"
#include "vm/launch.h"

typedef struct tape_rec {
    const dvm_kernel *k;
    dvm_args *args;      /* the tape's own copy of the launch's bindings */
    int *slot;           /* per parameter: index in tape->arrays, or -1 (a scalar) */
    uint8_t *writes;     /* per parameter: the kernel may write it */
    dvm_array **before;  /* no budget: per parameter it writes, its content before the launch */
} tape_rec;

struct dvm_tape {
    dvm_handle h; /* handle.c */
    dvm_context *ctx;
    int64_t budget;
    tape_rec *recs;
    int nrecs, caprecs;
    /* every distinct array the records bind */
    dvm_array **arrays;
    uint8_t *written;     /* some record writes it */
    dvm_array **initial;  /* budget: its content before the first record that wrote it */
    dvm_array **grads;    /* bound by dvm_tape_grad, or NULL */
    int narrays, caparrays;
    int64_t saved_bytes;  /* copies the tape holds now */
    dvm_tape_stats st;
};

static int64_t abytes(const dvm_array *a) { return (a->count ? a->count : 1) * 4; }

static dvm_status copy_array(dvm_context *ctx, dvm_array *dst, const dvm_array *src) {
    char err[512] = "";
    if (ctx->vt->copy(ctx->be, dst->buf, src->buf, (size_t)abytes(src), err, sizeof err) != 0)
        return dvm_fail(ctx, DVM_ERR_BACKEND, 0, "tape: copying an array failed: %s", err);
    return DVM_OK;
}

/* A new array with a's shape and contents. */
static dvm_status clone_array(dvm_context *ctx, const dvm_array *a, dvm_array **out) {
    dvm_status st = dvm_array_create(ctx, a->dtype, a->rank, a->shape, out);
    if (st == DVM_OK && (st = copy_array(ctx, *out, a)) != DVM_OK) {
        dvm_array_destroy(*out);
        *out = NULL;
    }
    return st;
}

dvm_status dvm_tape_create(dvm_context *ctx, int64_t memory_budget, dvm_tape **out) {
    if (out) *out = NULL;
    if (!dvm_handle_live(ctx, DVM_HK_CONTEXT)) return DVM_ERR_USAGE;
    if (!out) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_tape_create: NULL argument");
    if (memory_budget < 0) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_tape_create: memory_budget %lld is negative", (long long)memory_budget);
    dvm_tape *t = (dvm_tape *)dvm_handle_alloc(DVM_HK_TAPE, sizeof *t, NULL);
    if (!t) return dvm_fail(ctx, DVM_ERR_NOMEM, 0, "out of memory");
    t->ctx = ctx;
    dvm_ctx_adopt(ctx, t);
    t->budget = memory_budget;
    *out = t;
    return DVM_OK;
}

static void rec_free(tape_rec *r) {
    if (r->before)
        for (uint32_t p = 0; r->args && p < r->args->nparams; p++) dvm_array_destroy(r->before[p]);
    dvm_args_destroy(r->args);
    free(r->slot);
    free(r->writes);
    free(r->before);
    memset(r, 0, sizeof *r);
}

void dvm_tape_reset(dvm_tape *t) {
    if (!dvm_handle_live(t, DVM_HK_TAPE)) return;
    for (int i = 0; i < t->nrecs; i++) rec_free(&t->recs[i]);
    for (int i = 0; i < t->narrays; i++) dvm_array_destroy(t->initial[i]);
    t->nrecs = 0;
    t->narrays = 0; /* gradient bindings go with the arrays */
    t->saved_bytes = 0;
}

void dvm_tape_destroy(dvm_tape *t) {
    if (!dvm_handle_live(t, DVM_HK_TAPE)) return; /* NULL, or destroyed already */
    dvm_tape_reset(t);
    free(t->recs);
    free(t->arrays);
    free(t->written);
    free(t->initial);
    free(t->grads);
    dvm_ctx_disown(t->ctx, t);
    dvm_handle_release(t);
}

/* The index of a in t->arrays, added if new; -1 when out of memory. */
static int array_slot(dvm_tape *t, dvm_array *a) {
    for (int i = 0; i < t->narrays; i++)
        if (t->arrays[i] == a) return i;
    if (t->narrays == t->caparrays) {
        int cap = t->caparrays ? 2 * t->caparrays : 16;
        dvm_array **na = (dvm_array **)realloc(t->arrays, (size_t)cap * sizeof *na);
        if (na) t->arrays = na;
        uint8_t *nw = (uint8_t *)realloc(t->written, (size_t)cap);
        if (nw) t->written = nw;
        dvm_array **ni = (dvm_array **)realloc(t->initial, (size_t)cap * sizeof *ni);
        if (ni) t->initial = ni;
        dvm_array **ng = (dvm_array **)realloc(t->grads, (size_t)cap * sizeof *ng);
        if (ng) t->grads = ng;
        if (!na || !nw || !ni || !ng) return -1;
        t->caparrays = cap;
    }
    t->arrays[t->narrays] = a;
    t->written[t->narrays] = 0;
    t->initial[t->narrays] = NULL;
    t->grads[t->narrays] = NULL;
    return t->narrays++;
}

static const char *pname(const dvm_kernel *k, uint32_t p) {
    dvm_param_info info;
    dvm_kernel_param(k, (int)p, &info);
    return info.name;
}

dvm_status dvm_tape_grad(dvm_tape *t, dvm_array *a, dvm_array *grad) {
    if (!dvm_handle_live(t, DVM_HK_TAPE) || !dvm_handle_live(t->ctx, DVM_HK_CONTEXT)) return DVM_ERR_USAGE;
    if (!a) return dvm_fail(t->ctx, DVM_ERR_USAGE, 0, "dvm_tape_grad: NULL argument");
    dvm_context *ctx = t->ctx;
    if (!dvm_handle_live(a, DVM_HK_ARRAY) || (grad && !dvm_handle_live(grad, DVM_HK_ARRAY)))
        return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_tape_grad: the array or its gradient was destroyed");
    if (a->dtype != DVM_F32) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_tape_grad: only f32 arrays have gradients");
    if (grad && (grad->dtype != DVM_F32 || grad->count != a->count || grad->rank != a->rank ||
                 memcmp(grad->shape, a->shape, sizeof(int64_t) * (size_t)a->rank) != 0))
        return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_tape_grad: the gradient array must be f32 with the array's shape");
    int i = array_slot(t, a);
    if (i < 0) return dvm_fail(ctx, DVM_ERR_NOMEM, 0, "out of memory");
    t->grads[i] = grad;
    return DVM_OK;
}

static dvm_status tape_launch(dvm_tape *t, const dvm_kernel *k, dvm_args *args) {
    if (!t || !k || !args) return dvm_fail(t ? t->ctx : NULL, DVM_ERR_USAGE, 0, "dvm_tape_launch: NULL argument");
    dvm_context *ctx = t->ctx;
    if (args->k != k) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_tape_launch: the arguments were created for another kernel");
    if (!k->kd->v[DVM_V_ADJOINT].present) {
        if (k->kd->no_adjoint)
            return dvm_fail(ctx, DVM_ERR_COMPILE, 1, "%s:%s", k->m->prog->strings + k->m->prog->source_name,
                            k->m->prog->strings + k->kd->no_adjoint);
        return dvm_fail(ctx, DVM_ERR_ARG, 0, "tape: kernel '%s' has no adjoint", dvm_kernel_name(k));
    }
    if (t->nrecs == t->caprecs) {
        int cap = t->caprecs ? 2 * t->caprecs : 64;
        tape_rec *nr = (tape_rec *)realloc(t->recs, (size_t)cap * sizeof *nr);
        if (!nr) return dvm_fail(ctx, DVM_ERR_NOMEM, 0, "out of memory");
        t->recs = nr;
        t->caprecs = cap;
    }
    tape_rec r;
    memset(&r, 0, sizeof r);
    r.k = k;
    const uint32_t np = args->nparams;
    dvm_status st = dvm_args_create(ctx, k, &r.args);
    r.slot = (int *)calloc(np ? np : 1, sizeof *r.slot);
    r.writes = (uint8_t *)calloc(np ? np : 1, 1);
    r.before = (dvm_array **)calloc(np ? np : 1, sizeof *r.before);
    if (st == DVM_OK && (!r.slot || !r.writes || !r.before)) st = dvm_fail(ctx, DVM_ERR_NOMEM, 0, "out of memory");
    const dvm_program *p = k->m->prog;
    const dvm_variant_desc *fv = &k->kd->v[DVM_V_FORWARD];
    for (uint32_t j = 0; st == DVM_OK && j < fv->nslots; j++) {
        const dvm_slot_desc *sd = &p->slots[fv->slot_begin + j];
        if (sd->writes && sd->role == DVM_ROLE_PRIMAL && sd->param < np) r.writes[sd->param] = 1;
    }
    int64_t added = 0;
    dvm_array **first = (dvm_array **)calloc(np ? np : 1, sizeof *first); /* budget: initial copies taken here */
    if (st == DVM_OK && !first) st = dvm_fail(ctx, DVM_ERR_NOMEM, 0, "out of memory");
    for (uint32_t i = 0; st == DVM_OK && i < np; i++) {
        r.slot[i] = -1;
        const dvm_param_desc *pd = &p->params[k->kd->param_begin + i];
        const char *name = pname(k, i);
        if (!pd->is_array) {
            if (!args->scalar_set[i]) {
                st = dvm_fail(ctx, DVM_ERR_ARG, 0, "kernel '%s': scalar parameter '%s' is not bound", dvm_kernel_name(k), name);
                break;
            }
            r.args->scalar[i] = args->scalar[i];
            r.args->scalar_set[i] = 1;
            continue;
        }
        dvm_array *a = args->arr[i];
        if (!a) {
            st = dvm_fail(ctx, DVM_ERR_ARG, 0, "kernel '%s': array parameter '%s' is not bound", dvm_kernel_name(k), name);
            break;
        }
        if ((st = dvm_args_array(ctx, r.args, name, a)) != DVM_OK) break;
        int s = array_slot(t, a);
        if (s < 0) {
            st = dvm_fail(ctx, DVM_ERR_NOMEM, 0, "out of memory");
            break;
        }
        r.slot[i] = s;
        if (!r.writes[i]) continue;
        if (t->budget == 0) {
            if ((st = clone_array(ctx, a, &r.before[i])) == DVM_OK) added += abytes(a);
        } else if (!t->initial[s] && !t->written[s]) {
            if (t->saved_bytes + added + abytes(a) > t->budget)
                st = dvm_fail(ctx, DVM_ERR_USAGE, 0,
                              "tape: memory_budget of %lld bytes cannot hold the arrays' contents before the first launch "
                              "(%lld bytes with '%s'); raise it",
                              (long long)t->budget, (long long)(t->saved_bytes + added + abytes(a)), name);
            else if ((st = clone_array(ctx, a, &first[i])) == DVM_OK)
                added += abytes(a);
        }
    }
    if (st == DVM_OK) {
        dvm_launch_opts o = {DVM_FORWARD, 0, 0, 0};
        st = dvm_launch(ctx, k, args, &o, NULL);
    }
    if (st != DVM_OK) { /* nothing recorded; the failed launch wrote nothing */
        for (uint32_t i = 0; first && i < np; i++) dvm_array_destroy(first[i]);
        free(first);
        rec_free(&r);
        return st;
    }
    for (uint32_t i = 0; i < np; i++) {
        if (r.slot[i] < 0 || !r.writes[i]) continue;
        if (first[i]) t->initial[r.slot[i]] = first[i];
        t->written[r.slot[i]] = 1;
    }
    free(first);
    t->saved_bytes += added;
    t->recs[t->nrecs++] = r;
    return DVM_OK;
}

/* ---- backward ---- */

typedef struct bwd {
    dvm_tape *t;
    dvm_array **work;  /* per tape array that some record writes: the working state */
    dvm_array **grad;  /* per f32 tape array: its gradient (the user's, or zeroed scratch) */
    dvm_array ***ckpt; /* budget: checkpoints of the working state, by record index (NULL: none) */
    int nfree;         /* checkpoints the budget still holds */
} bwd;

/* Binds record j's arrays (the working state for written ones) and gradients. */
static dvm_status bind_rec(bwd *b, int j, dvm_array *const *state) {
    tape_rec *r = &b->t->recs[j];
    dvm_context *ctx = b->t->ctx;
    dvm_status st = DVM_OK;
    for (uint32_t i = 0; st == DVM_OK && i < r->args->nparams; i++) {
        int s = r->slot[i];
        if (s < 0) continue;
        const char *name = pname(r->k, i);
        st = dvm_args_array(ctx, r->args, name, state[s] ? state[s] : b->t->arrays[s]);
        if (st == DVM_OK && b->grad[s]) st = dvm_args_grad(ctx, r->args, name, b->grad[s]);
    }
    return st;
}

static dvm_status run_rec(bwd *b, int j, dvm_mode mode, dvm_array *const *state) {
    /* a cancel point between backward's launches (dvm_context_cancel) */
    if (__atomic_load_n(b->t->ctx->cancel, __ATOMIC_RELAXED))
        return dvm_fail(b->t->ctx, DVM_ERR_CANCELLED, 0, "tape backward: cancelled (dvm_context_cancel) before launch %d of %d",
                        j + 1, b->t->nrecs);
    dvm_status st = bind_rec(b, j, state);
    if (st != DVM_OK) return st;
    dvm_launch_opts o = {mode, 0, 0, 0};
    dvm_launch_stats ls;
    st = dvm_launch(b->t->ctx, b->t->recs[j].k, b->t->recs[j].args, &o, &ls);
    if (mode == DVM_ADJOINT) b->t->st.adjoint_launches++;
    else b->t->st.forward_launches++;
    return st;
}

/* The working state := src (per written array; NULL entries are left alone). */
static dvm_status restore(bwd *b, dvm_array *const *src) {
    dvm_status st = DVM_OK;
    for (int s = 0; st == DVM_OK && s < b->t->narrays; s++)
        if (b->work[s] && src[s]) st = copy_array(b->t->ctx, b->work[s], src[s]);
    return st;
}

/* No budget: record j's adjoint on the state before it, from the versions. */
static dvm_status reverse_versions(bwd *b, int j) {
    dvm_tape *t = b->t;
    for (int s = 0; s < t->narrays; s++) {
        if (!b->work[s]) continue;
        /* the copy taken before the first record at or after j that writes s, else the array */
        const dvm_array *v = t->arrays[s];
        for (int w = j; w < t->nrecs; w++) {
            const tape_rec *r = &t->recs[w];
            int found = 0;
            for (uint32_t i = 0; i < r->args->nparams && !found; i++)
                if (r->slot[i] == s && r->writes[i]) v = r->before[i], found = 1;
            if (found) break;
        }
        dvm_status st = copy_array(t->ctx, b->work[s], v);
        if (st != DVM_OK) return st;
    }
    return run_rec(b, j, DVM_ADJOINT, b->work);
}

static double binom(int n, int k) { /* C(n, k) as a double: it only gets compared */
    double r = 1;
    for (int i = 1; i <= k; i++) r = r * (n - k + i) / i;
    return r;
}

/* Budget: the adjoints of records [lo, hi), last first, with the state before lo in
   checkpoint ckpt[lo] and `free_` more checkpoints at hand. Binomial: with s free checkpoints
   and r sweeps over a record, at most C(s + r, s) records can be reversed; split where the
   right part needs one checkpoint less and the left part one sweep less. */
static dvm_status reverse_ckpt(bwd *b, int lo, int hi, int free_) {
    dvm_tape *t = b->t;
    dvm_status st = DVM_OK;
    if (hi - lo == 1) {
        if ((st = restore(b, b->ckpt[lo])) != DVM_OK) return st;
        return run_rec(b, lo, DVM_ADJOINT, b->work);
    }
    if (free_ == 0) { /* recompute from lo for every record */
        for (int j = hi - 1; j >= lo && st == DVM_OK; j--) {
            st = restore(b, b->ckpt[lo]);
            for (int q = lo; q < j && st == DVM_OK; q++) st = run_rec(b, q, DVM_FORWARD, b->work);
            if (st == DVM_OK) st = run_rec(b, j, DVM_ADJOINT, b->work);
        }
        return st;
    }
    const int l = hi - lo;
    int r = 1;
    while (binom(free_ + r, free_) < l) r++;
    int right = (int)binom(free_ - 1 + r, free_ - 1); /* C(s - 1 + r, s - 1) records with one checkpoint less */
    if (right > l - 1) right = l - 1;
    if (right < 1) right = 1;
    const int m = hi - right;
    if ((st = restore(b, b->ckpt[lo])) != DVM_OK) return st;
    for (int q = lo; q < m && st == DVM_OK; q++) st = run_rec(b, q, DVM_FORWARD, b->work);
    if (st != DVM_OK) return st;
    /* checkpoint m: a copy of every written array */
    dvm_array **c = (dvm_array **)calloc((size_t)t->narrays + 1, sizeof *c);
    if (!c) return dvm_fail(t->ctx, DVM_ERR_NOMEM, 0, "out of memory");
    for (int s = 0; s < t->narrays && st == DVM_OK; s++)
        if (b->work[s]) st = clone_array(t->ctx, b->work[s], &c[s]);
    b->ckpt[m] = c;
    if (st == DVM_OK) st = reverse_ckpt(b, m, hi, free_ - 1);
    for (int s = 0; s < t->narrays; s++) dvm_array_destroy(c[s]);
    free(c);
    b->ckpt[m] = NULL;
    if (st == DVM_OK) st = reverse_ckpt(b, lo, m, free_);
    return st;
}

static dvm_status tape_backward(dvm_tape *t, dvm_tape_stats *stats) {
    if (stats) memset(stats, 0, sizeof *stats);
    if (!t) return DVM_ERR_USAGE;
    dvm_context *ctx = t->ctx;
    memset(&t->st, 0, sizeof t->st);
    bwd b;
    memset(&b, 0, sizeof b);
    b.t = t;
    size_t na = (size_t)t->narrays + 1;
    b.work = (dvm_array **)calloc(na, sizeof *b.work);
    b.grad = (dvm_array **)calloc(na, sizeof *b.grad);
    dvm_array **own = (dvm_array **)calloc(na, sizeof *own); /* gradients the tape made */
    b.ckpt = (dvm_array ***)calloc((size_t)t->nrecs + 1, sizeof *b.ckpt);
    dvm_status st = b.work && b.grad && own && b.ckpt ? DVM_OK : dvm_fail(ctx, DVM_ERR_NOMEM, 0, "out of memory");
    int64_t state_bytes = 0;
    for (int s = 0; st == DVM_OK && s < t->narrays; s++) {
        dvm_array *a = t->arrays[s];
        if (t->written[s]) {
            st = dvm_array_create(ctx, a->dtype, a->rank, a->shape, &b.work[s]);
            state_bytes += abytes(a);
        }
        if (st == DVM_OK && a->dtype == DVM_F32) {
            if (t->grads[s]) b.grad[s] = t->grads[s];
            else if ((st = dvm_array_create(ctx, DVM_F32, a->rank, a->shape, &own[s])) == DVM_OK) b.grad[s] = own[s];
        }
    }
    if (st == DVM_OK && t->nrecs > 0) {
        if (t->budget == 0) {
            for (int j = t->nrecs - 1; j >= 0 && st == DVM_OK; j--) st = reverse_versions(&b, j);
        } else {
            int64_t spare = t->budget - t->saved_bytes;
            int64_t nfree = state_bytes > 0 ? spare / state_bytes : t->nrecs;
            if (nfree > t->nrecs) nfree = t->nrecs;
            b.ckpt[0] = t->initial;
            st = reverse_ckpt(&b, 0, t->nrecs, (int)nfree);
            t->st.checkpoints = (int)nfree;
        }
    }
    t->st.saved_bytes = t->saved_bytes;
    t->st.work_bytes = state_bytes;
    for (int s = 0; s < t->narrays; s++) {
        if (b.work) dvm_array_destroy(b.work[s]);
        if (own) dvm_array_destroy(own[s]);
    }
    /* the records' bindings go back to the user's arrays */
    for (int j = 0; j < t->nrecs; j++)
        for (uint32_t i = 0; i < t->recs[j].args->nparams; i++)
            if (t->recs[j].slot[i] >= 0) {
                dvm_args_array(ctx, t->recs[j].args, pname(t->recs[j].k, i), t->arrays[t->recs[j].slot[i]]);
                t->recs[j].args->grad[i] = NULL;
            }
    free(b.work);
    free(b.grad);
    free(own);
    free(b.ckpt);
    if (stats) *stats = t->st;
    return st;
}

/* Each a single call for dvm_context_cancel: the cancel word is cleared once, when it starts
   (dvm_run_begin), not by the launches inside it. */
/* A usable tape: alive, in a live context that no other thread is inside (then entered). */
static dvm_status tape_enter(dvm_tape *t) {
    if (!dvm_handle_live(t, DVM_HK_TAPE) || !dvm_handle_live(t->ctx, DVM_HK_CONTEXT)) return DVM_ERR_USAGE;
    return dvm_ctx_enter(t->ctx) == 0 ? DVM_OK : DVM_ERR_USAGE;
}

dvm_status dvm_tape_launch(dvm_tape *t, const dvm_kernel *k, dvm_args *args) {
    if (tape_enter(t) != DVM_OK) return DVM_ERR_USAGE;
    dvm_status st;
    if (k && args && (!dvm_kernel_live(k) || !dvm_handle_live(args, DVM_HK_ARGS)))
        st = dvm_fail(t->ctx, DVM_ERR_USAGE, 0, "dvm_tape_launch: the kernel's module or the argument set was destroyed");
    else {
        dvm_run_begin(t->ctx);
        st = tape_launch(t, k, args);
        dvm_run_end(t->ctx);
    }
    dvm_ctx_leave(t->ctx);
    return st;
}

dvm_status dvm_tape_backward(dvm_tape *t, dvm_tape_stats *stats) {
    if (tape_enter(t) != DVM_OK) {
        if (stats) memset(stats, 0, sizeof *stats);
        return DVM_ERR_USAGE;
    }
    dvm_status st = DVM_OK;
    for (int s = 0; s < t->narrays && st == DVM_OK; s++)
        if (!dvm_handle_live(t->arrays[s], DVM_HK_ARRAY) || (t->grads[s] && !dvm_handle_live(t->grads[s], DVM_HK_ARRAY)))
            st = dvm_fail(t->ctx, DVM_ERR_USAGE, 0, "dvm_tape_backward: an array the tape recorded (or its gradient) was destroyed");
    if (st != DVM_OK) {
        if (stats) memset(stats, 0, sizeof *stats);
    } else {
        dvm_run_begin(t->ctx);
        st = tape_backward(t, stats);
        dvm_run_end(t->ctx);
    }
    dvm_ctx_leave(t->ctx);
    return st;
}

int dvm_tape_count(const dvm_tape *t) { return dvm_handle_live(t, DVM_HK_TAPE) ? t->nrecs : 0; }
