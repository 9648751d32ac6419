/* diffusion.c: the gradient of a T-step simulation (examples/diffusion.dvk) with respect to
 * its initial field, two ways: one launch of `simulate` (a serial loop of top-level
 * statements), and a tape of T launches of `step` and one of `loss` with a memory budget of a
 * few states (checkpoints, recomputation). Prints both gradients' agreement, times and memory.
 *
 * usage: diffusion [PATH/TO/diffusion.dvk] [BACKEND] [T] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "dvm.h"

#define N 32
#define M 32
#define CHECK(call)                                                                             \
    do {                                                                                        \
        dvm_status st_ = (call);                                                                \
        if (st_ != DVM_OK) {                                                                    \
            fprintf(stderr, "diffusion: %s failed (%d):\n%s\n", #call, (int)st_, dvm_errmsg(ctx)); \
            exit(1);                                                                            \
        }                                                                                       \
    } while (0)

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "examples/diffusion.dvk";
    dvm_context_opts co = {.backend = argc > 2 ? argv[2] : "auto"};
    const int T = argc > 3 ? atoi(argv[3]) : 200;
    dvm_context *ctx = NULL;
    if (dvm_context_create(&co, &ctx) != DVM_OK) {
        fprintf(stderr, "diffusion: %s\n", ctx ? dvm_errmsg(ctx) : "out of memory");
        dvm_context_destroy(ctx);
        return 1;
    }
    printf("backend %s: %s; a %dx%d field, %d steps\n", dvm_context_backend(ctx), dvm_context_device(ctx), N, M, T);
    dvm_module *mod;
    CHECK(dvm_load_file(ctx, path, &mod));
    const dvm_kernel *ksim, *kstep, *kloss;
    CHECK(dvm_kernel_find(ctx, mod, "simulate", &ksim));
    CHECK(dvm_kernel_find(ctx, mod, "step", &kstep));
    CHECK(dvm_kernel_find(ctx, mod, "loss", &kloss));

    static float u0[N * M], target[N * M], g1[N * M], g2[N * M];
    for (int i = 0; i < N; i++)
        for (int j = 0; j < M; j++) {
            u0[i * M + j] = (float)(exp(-((i - 10) * (i - 10) + (j - 12) * (j - 12)) / 20.0));
            target[i * M + j] = (float)(0.3 * exp(-((i - 20) * (i - 20) + (j - 18) * (j - 18)) / 60.0));
        }
    int64_t shape[2] = {N, M}, one[1] = {1};
    dvm_array *u, *tmp, *tg, *L, *ug, *Lg;
    CHECK(dvm_array_create(ctx, DVM_F32, 2, shape, &u));
    CHECK(dvm_array_create(ctx, DVM_F32, 2, shape, &tmp));
    CHECK(dvm_array_create(ctx, DVM_F32, 2, shape, &tg));
    CHECK(dvm_array_create(ctx, DVM_F32, 1, one, &L));
    CHECK(dvm_array_create(ctx, DVM_F32, 2, shape, &ug));
    CHECK(dvm_array_create(ctx, DVM_F32, 1, one, &Lg));
    CHECK(dvm_array_write(ctx, tg, target, N * M));
    const float seed = 1, zero = 0;
    static float zeros[N * M];

    /* 1. one launch: the serial loop, forward then its adjoint */
    CHECK(dvm_array_write(ctx, u, u0, N * M));
    CHECK(dvm_array_write(ctx, L, &zero, 1));
    CHECK(dvm_array_write(ctx, ug, zeros, N * M));
    CHECK(dvm_array_write(ctx, Lg, &seed, 1));
    dvm_args *sa;
    CHECK(dvm_args_create(ctx, ksim, &sa));
    CHECK(dvm_args_array(ctx, sa, "u", u));
    CHECK(dvm_args_array(ctx, sa, "tmp", tmp));
    CHECK(dvm_args_array(ctx, sa, "target", tg));
    CHECK(dvm_args_array(ctx, sa, "L", L));
    CHECK(dvm_args_f32(ctx, sa, "k", 0.2f));
    CHECK(dvm_args_i32(ctx, sa, "T", T));
    CHECK(dvm_args_grad(ctx, sa, "u", ug));
    CHECK(dvm_args_grad(ctx, sa, "L", Lg));
    dvm_launch_opts adj = {DVM_ADJOINT, 0, 0, 0};
    dvm_launch_stats ls;
    double t0 = now_ms();
    CHECK(dvm_launch(ctx, ksim, sa, &adj, &ls));
    double ms1 = now_ms() - t0;
    float L1;
    CHECK(dvm_array_read(ctx, L, &L1, 1));
    CHECK(dvm_array_read(ctx, ug, g1, N * M));

    /* 2. a tape of T + 1 launches with room for the initial field and 4 more states */
    CHECK(dvm_array_write(ctx, u, u0, N * M));
    CHECK(dvm_array_write(ctx, L, &zero, 1));
    CHECK(dvm_array_write(ctx, ug, zeros, N * M));
    CHECK(dvm_array_write(ctx, Lg, &seed, 1));
    const int64_t state = (2 * N * M + 1) * 4; /* what the launches write: u, tmp, L */
    dvm_tape *tape;
    CHECK(dvm_tape_create(ctx, 5 * state, &tape));
    CHECK(dvm_tape_grad(tape, u, ug));
    CHECK(dvm_tape_grad(tape, L, Lg));
    dvm_args *st, *la;
    CHECK(dvm_args_create(ctx, kstep, &st));
    CHECK(dvm_args_array(ctx, st, "u", u));
    CHECK(dvm_args_array(ctx, st, "tmp", tmp));
    CHECK(dvm_args_f32(ctx, st, "k", 0.2f));
    CHECK(dvm_args_create(ctx, kloss, &la));
    CHECK(dvm_args_array(ctx, la, "u", u));
    CHECK(dvm_args_array(ctx, la, "target", tg));
    CHECK(dvm_args_array(ctx, la, "L", L));
    t0 = now_ms();
    for (int t = 0; t < T; t++) CHECK(dvm_tape_launch(tape, kstep, st));
    CHECK(dvm_tape_launch(tape, kloss, la));
    dvm_tape_stats ts;
    CHECK(dvm_tape_backward(tape, &ts));
    double ms2 = now_ms() - t0;
    float L2;
    CHECK(dvm_array_read(ctx, L, &L2, 1));
    CHECK(dvm_array_read(ctx, ug, g2, N * M));

    /* 3. forward only: one launch of the serial loop against T + 1 launches */
    dvm_launch_opts fwd = {DVM_FORWARD, 0, 0, 0};
    CHECK(dvm_array_write(ctx, u, u0, N * M));
    t0 = now_ms();
    CHECK(dvm_launch(ctx, ksim, sa, &fwd, NULL));
    double ms3 = now_ms() - t0;
    CHECK(dvm_array_write(ctx, u, u0, N * M));
    t0 = now_ms();
    for (int t = 0; t < T; t++) CHECK(dvm_launch(ctx, kstep, st, &fwd, NULL));
    CHECK(dvm_launch(ctx, kloss, la, &fwd, NULL));
    double ms4 = now_ms() - t0;

    double worst = 0, norm = 0;
    for (int i = 0; i < N * M; i++) {
        double d = fabs((double)g1[i] - g2[i]);
        if (d > worst) worst = d;
        if (fabs(g1[i]) > norm) norm = fabs(g1[i]);
    }
    printf("loss: one kernel %.6g, tape %.6g\n", (double)L1, (double)L2);
    printf("dL/du0 at the initial peak (10, 12): %.6g and %.6g; max |difference| %.3g (max |dL/du0| %.3g)\n",
           (double)g1[10 * M + 12], (double)g2[10 * M + 12], worst, norm);
    printf("one kernel with a serial loop: %.1f ms, %lld bytes of array versions\n", ms1, (long long)ls.version_bytes);
    printf("tape of %d launches, budget %lld bytes: %.1f ms, %d launches recomputed, %d checkpoints\n", T + 1,
           (long long)(5 * state), ms2, ts.forward_launches, ts.checkpoints);
    printf("forward: one launch with a serial loop %.1f ms (%.3f ms a step), %d launches %.1f ms (%.3f ms a step)\n", ms3,
           ms3 / T, T + 1, ms4, ms4 / T);
    int ok = fabs((double)L1 - L2) <= 1e-5 * (1 + fabs((double)L1)) && worst <= 1e-4 * (1 + norm);
    printf("%s\n", ok ? "the two gradients agree" : "the two gradients DISAGREE");
    dvm_tape_destroy(tape);
    dvm_args_destroy(sa);
    dvm_args_destroy(st);
    dvm_args_destroy(la);
    dvm_array_destroy(u);
    dvm_array_destroy(tmp);
    dvm_array_destroy(tg);
    dvm_array_destroy(L);
    dvm_array_destroy(ug);
    dvm_array_destroy(Lg);
    dvm_module_destroy(mod);
    dvm_context_destroy(ctx);
    return ok ? 0 : 1;
}
