/* test_tape.c: dvm_tape (vm/tape.c) on a chain of masses and springs: 1000 recorded steps
 * (each one launch of two statements, updating v and then x in place) and a loss. The
 * gradients of an unbounded tape must equal those of a tape with a budget of a few states
 * (binomial checkpointing), and both must match central finite differences of forward
 * launches on a shorter run. Also: a budget too small for the initial state, and an unchanged
 * final state. Usage: test_tape [backend [steps]] (cpu, 1000). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "dvm.h"

static int fails = 0;
#define EXPECT(c, ...)                                          \
    do {                                                        \
        if (!(c)) {                                             \
            fails++;                                            \
            printf("FAIL line %d: ", __LINE__);                 \
            printf(__VA_ARGS__);                                \
            printf("\n");                                       \
        }                                                       \
    } while (0)

static const char *src =
    "kernel step(x: f32[n], v: f32[n], rest: f32, k: f32, dt: f32):\n"
    "    for i in range(n):\n"
    "        f = -0.5 * x[i] * x[i] * x[i]\n"
    "        if i > 0:\n"
    "            f = f - k * (x[i] - x[i - 1] - rest)\n"
    "        if i < n - 1:\n"
    "            f = f + k * (x[i + 1] - x[i] - rest)\n"
    "        v[i] = v[i] * 0.995 + dt * f\n"
    "    for i in range(n):\n"
    "        x[i] = x[i] + dt * v[i]\n"
    "kernel loss(x: f32[n], target: f32[n], L: f32[1]):\n"
    "    for i in range(n):\n"
    "        L[0] += (x[i] - target[i]) * (x[i] - target[i])\n"
    ;

#define N 16

typedef struct sim {
    dvm_context *ctx;
    const dvm_kernel *step, *loss;
    dvm_args *sa, *la;
    dvm_array *x, *v, *target, *L;
} sim;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static void set_state(sim *s, const float *x0, const float *v0) {
    float zero = 0;
    dvm_array_write(s->ctx, s->x, x0, N);
    dvm_array_write(s->ctx, s->v, v0, N);
    dvm_array_write(s->ctx, s->L, &zero, 1);
}

/* L after `steps` forward launches from (x0, v0): the finite-difference reference */
static double forward_loss(sim *s, const float *x0, const float *v0, int steps) {
    set_state(s, x0, v0);
    dvm_launch_opts o = {DVM_FORWARD, 0, 0, 0};
    for (int t = 0; t < steps; t++) dvm_launch(s->ctx, s->step, s->sa, &o, NULL);
    dvm_launch(s->ctx, s->loss, s->la, &o, NULL);
    float L;
    dvm_array_read(s->ctx, s->L, &L, 1);
    return L;
}

/* Records `steps` steps and the loss on a tape with `budget`, runs backward with L's seed 1;
   the gradients of x0 and v0 in gx, gv. Returns the backward's stats. */
static dvm_tape_stats tape_grads(sim *s, const float *x0, const float *v0, int steps, int64_t budget, float *gx, float *gv,
                                 double *ms) {
    dvm_tape_stats ts;
    memset(&ts, 0, sizeof ts);
    set_state(s, x0, v0);
    dvm_tape *t = NULL;
    EXPECT(dvm_tape_create(s->ctx, budget, &t) == DVM_OK, "tape_create: %s", dvm_errmsg(s->ctx));
    int64_t shape[1] = {N}, one[1] = {1};
    dvm_array *gxa, *gva, *gLa;
    dvm_array_create(s->ctx, DVM_F32, 1, shape, &gxa);
    dvm_array_create(s->ctx, DVM_F32, 1, shape, &gva);
    dvm_array_create(s->ctx, DVM_F32, 1, one, &gLa);
    float seed = 1;
    dvm_array_write(s->ctx, gLa, &seed, 1);
    dvm_tape_grad(t, s->x, gxa);
    dvm_tape_grad(t, s->v, gva);
    dvm_tape_grad(t, s->L, gLa);
    double t0 = now_ms();
    for (int q = 0; q < steps; q++) {
        dvm_status st = dvm_tape_launch(t, s->step, s->sa);
        EXPECT(st == DVM_OK, "record step %d: %s", q, dvm_errmsg(s->ctx));
        if (st != DVM_OK) break;
    }
    EXPECT(dvm_tape_launch(t, s->loss, s->la) == DVM_OK, "record loss: %s", dvm_errmsg(s->ctx));
    EXPECT(dvm_tape_count(t) == steps + 1, "tape holds %d launches, expected %d", dvm_tape_count(t), steps + 1);
    float xf[N], xf2[N];
    dvm_array_read(s->ctx, s->x, xf, N);
    EXPECT(dvm_tape_backward(t, &ts) == DVM_OK, "backward (budget %lld): %s", (long long)budget, dvm_errmsg(s->ctx));
    *ms = now_ms() - t0;
    dvm_array_read(s->ctx, s->x, xf2, N);
    EXPECT(!memcmp(xf, xf2, sizeof xf), "backward changed the final state of x");
    dvm_array_read(s->ctx, gxa, gx, N);
    dvm_array_read(s->ctx, gva, gv, N);
    dvm_tape_destroy(t);
    dvm_array_destroy(gxa);
    dvm_array_destroy(gva);
    dvm_array_destroy(gLa);
    return ts;
}

int main(int argc, char **argv) {
    /* one CPU thread: ctest runs tests side by side, and these arrays are tiny */
    dvm_context_opts co = {.backend = argc > 1 ? argv[1] : "cpu", .threads = 1};
    sim s;
    memset(&s, 0, sizeof s);
    if (dvm_context_create(&co, &s.ctx) != DVM_OK) {
        printf("test_tape: skipped: no %s backend: %s\n", co.backend, dvm_errmsg(s.ctx));
        dvm_context_destroy(s.ctx);
        return 77;
    }
    dvm_module *m = NULL;
    if (dvm_compile(s.ctx, src, strlen(src), "tape.dvk", &m) != DVM_OK) {
        printf("FAIL: compile: %s\n", dvm_errmsg(s.ctx));
        return 1;
    }
    dvm_kernel_find(s.ctx, m, "step", &s.step);
    dvm_kernel_find(s.ctx, m, "loss", &s.loss);
    int64_t shape[1] = {N}, one[1] = {1};
    dvm_array_create(s.ctx, DVM_F32, 1, shape, &s.x);
    dvm_array_create(s.ctx, DVM_F32, 1, shape, &s.v);
    dvm_array_create(s.ctx, DVM_F32, 1, shape, &s.target);
    dvm_array_create(s.ctx, DVM_F32, 1, one, &s.L);
    float x0[N], v0[N], tg[N];
    for (int i = 0; i < N; i++) {
        x0[i] = (float)i * 1.0f + 0.1f * (float)sin(i * 1.7);
        v0[i] = 0.05f * (float)cos(i * 0.9);
        tg[i] = (float)i * 1.05f;
    }
    dvm_array_write(s.ctx, s.target, tg, N);
    dvm_args_create(s.ctx, s.step, &s.sa);
    dvm_args_array(s.ctx, s.sa, "x", s.x);
    dvm_args_array(s.ctx, s.sa, "v", s.v);
    dvm_args_f32(s.ctx, s.sa, "rest", 1.0f);
    dvm_args_f32(s.ctx, s.sa, "k", 4.0f);
    dvm_args_f32(s.ctx, s.sa, "dt", 0.01f);
    dvm_args_create(s.ctx, s.loss, &s.la);
    dvm_args_array(s.ctx, s.la, "x", s.x);
    dvm_args_array(s.ctx, s.la, "target", s.target);
    dvm_args_array(s.ctx, s.la, "L", s.L);

    /* 1. 1000 steps: an unbounded tape and one with room for the initial state and 3 more */
    const int steps = argc > 2 ? atoi(argv[2]) : 1000;
    const int64_t state = (2 * N + 1) * 4;
    float gx[N], gv[N], bx[N], bv[N];
    double ms_u, ms_b;
    dvm_tape_stats su = tape_grads(&s, x0, v0, steps, 0, gx, gv, &ms_u);
    dvm_tape_stats sb = tape_grads(&s, x0, v0, steps, 4 * state, bx, bv, &ms_b);
    double worst = 0;
    for (int i = 0; i < N; i++) {
        double ex = fabs(gx[i] - bx[i]) / (1e-3 + fabs(gx[i])), ev = fabs(gv[i] - bv[i]) / (1e-3 + fabs(gv[i]));
        if (ex > worst) worst = ex;
        if (ev > worst) worst = ev;
    }
    /* the same launches on the same states: equal but for the order of atomic additions */
    EXPECT(worst < 1e-5, "budgeted tape differs from the unbounded one: relative %g", worst);
    EXPECT(su.forward_launches == 0 && su.adjoint_launches == steps + 1, "unbounded: %d forward, %d adjoint launches",
           su.forward_launches, su.adjoint_launches);
    EXPECT(sb.checkpoints == 3 && sb.saved_bytes <= 4 * state && sb.forward_launches > 0,
           "budget: %d checkpoints, %lld bytes saved, %d recomputed launches", sb.checkpoints, (long long)sb.saved_bytes,
           sb.forward_launches);
    printf("test_tape: %d steps of %d masses: unbounded tape %.1f ms, %lld bytes kept; budget %lld bytes: %.1f ms, "
           "%lld bytes kept, %d checkpoints, %d launches recomputed; max relative difference %.2g\n",
           steps, N, ms_u, (long long)su.saved_bytes, (long long)(4 * state), ms_b, (long long)sb.saved_bytes + 3 * state,
           sb.checkpoints, sb.forward_launches, worst);

    /* 2. finite differences of forward launches (60 steps; the cubic term makes it nonlinear) */
    const int fsteps = 60;
    tape_grads(&s, x0, v0, fsteps, 0, gx, gv, &ms_u);
    tape_grads(&s, x0, v0, fsteps, 3 * state, bx, bv, &ms_b);
    for (int i = 0; i < N; i += 5) {
        float xp[N], xm[N];
        memcpy(xp, x0, sizeof xp);
        memcpy(xm, x0, sizeof xm);
        const float h = 1e-2f;
        xp[i] += h;
        xm[i] -= h;
        double fd = (forward_loss(&s, xp, v0, fsteps) - forward_loss(&s, xm, v0, fsteps)) / (2.0 * h);
        EXPECT(fabs(fd - gx[i]) <= 2e-2 * (1 + fabs(fd)), "dL/dx0[%d]: tape %g, finite differences %g", i, gx[i], fd);
        EXPECT(fabs(bx[i] - gx[i]) <= 1e-5 * (1 + fabs(gx[i])), "dL/dx0[%d]: budget %g, unbounded %g", i, bx[i], gx[i]);
        float vp[N], vm[N];
        memcpy(vp, v0, sizeof vp);
        memcpy(vm, v0, sizeof vm);
        vp[i] += h;
        vm[i] -= h;
        fd = (forward_loss(&s, x0, vp, fsteps) - forward_loss(&s, x0, vm, fsteps)) / (2.0 * h);
        EXPECT(fabs(fd - gv[i]) <= 2e-2 * (1 + fabs(fd)), "dL/dv0[%d]: tape %g, finite differences %g", i, gv[i], fd);
    }

    /* 3. misuse: a budget below the initial state */
    dvm_tape *t = NULL;
    dvm_tape_create(s.ctx, 8, &t);
    set_state(&s, x0, v0);
    float xs[N];
    dvm_status st = dvm_tape_launch(t, s.step, s.sa);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", dvm_errmsg(s.ctx));
    dvm_array_read(s.ctx, s.x, xs, N);
    EXPECT(st == DVM_ERR_USAGE && strstr(msg, "memory_budget of 8 bytes") && !memcmp(xs, x0, sizeof xs) && dvm_tape_count(t) == 0,
           "tiny budget: status %d, %s", (int)st, msg);
    dvm_tape_destroy(t);

    dvm_args_destroy(s.sa);
    dvm_args_destroy(s.la);
    dvm_array_destroy(s.x);
    dvm_array_destroy(s.v);
    dvm_array_destroy(s.target);
    dvm_array_destroy(s.L);
    dvm_module_destroy(m);
    dvm_context_destroy(s.ctx);
    if (fails) {
        printf("%d tape check(s) failed\n", fails);
        return 1;
    }
    printf("test_tape: all checks passed\n");
    return 0;
}
