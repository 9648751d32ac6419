/* springs.c: the gradient of a mass-spring simulation written with vec3 and mat3
 * (examples/springs.dvk) with respect to the initial positions and the rotation matrix, by
 * one adjoint launch, checked against central finite differences of forward launches.
 * Exits 1 if they disagree.
 *
 * usage: springs [PATH/TO/springs.dvk] [BACKEND] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "dvm.h"

#define N 12
#define STEPS 25
#define CHECK(call)                                                                           \
    do {                                                                                      \
        dvm_status st_ = (call);                                                              \
        if (st_ != DVM_OK) {                                                                  \
            fprintf(stderr, "springs: %s failed (%d):\n%s\n", #call, (int)st_, dvm_errmsg(ctx)); \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

static dvm_context *ctx;
static dvm_array *x, *v, *f, *rot, *target, *loss, *energy;
static float x0[N * 3], rot0[9];

/* The loss after a forward launch from positions xs and rotation rs. */
static double run_loss(const dvm_kernel *k, dvm_args *a, const float *xs, const float *rs) {
    static const float zeros[N * 3];
    const float zero = 0;
    CHECK(dvm_array_write(ctx, x, xs, N * 3));
    CHECK(dvm_array_write(ctx, v, zeros, N * 3));
    CHECK(dvm_array_write(ctx, rot, rs, 9));
    CHECK(dvm_array_write(ctx, loss, &zero, 1));
    CHECK(dvm_array_write(ctx, energy, &zero, 1));
    dvm_launch_opts o = {DVM_FORWARD, 0, 0, 0};
    CHECK(dvm_launch(ctx, k, a, &o, NULL));
    float l;
    CHECK(dvm_array_read(ctx, loss, &l, 1));
    return l;
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "examples/springs.dvk";
    dvm_context_opts co = {.backend = argc > 2 ? argv[2] : "auto"};
    if (dvm_context_create(&co, &ctx) != DVM_OK) {
        fprintf(stderr, "springs: %s\n", ctx ? dvm_errmsg(ctx) : "out of memory");
        dvm_context_destroy(ctx);
        return 1;
    }
    dvm_module *mod;
    const dvm_kernel *k;
    CHECK(dvm_load_file(ctx, path, &mod));
    CHECK(dvm_kernel_find(ctx, mod, "simulate", &k));
    int64_t sv[2] = {N, 3}, sm[3] = {1, 3, 3}, st[2] = {1, 3}, one[1] = {1};
    CHECK(dvm_array_create(ctx, DVM_F32, 2, sv, &x));
    CHECK(dvm_array_create(ctx, DVM_F32, 2, sv, &v));
    CHECK(dvm_array_create(ctx, DVM_F32, 2, sv, &f));
    CHECK(dvm_array_create(ctx, DVM_F32, 3, sm, &rot));
    CHECK(dvm_array_create(ctx, DVM_F32, 2, st, &target));
    CHECK(dvm_array_create(ctx, DVM_F32, 1, one, &loss));
    CHECK(dvm_array_create(ctx, DVM_F32, 1, one, &energy));
    for (int i = 0; i < N; i++) { /* a slightly bent chain along x */
        x0[i * 3 + 0] = 0.12f * (float)i;
        x0[i * 3 + 1] = 0.02f * (float)sin(i * 0.7);
        x0[i * 3 + 2] = 0.01f * (float)(i % 3);
    }
    const double a = 0.3; /* gravity turned by 0.3 rad about z */
    const float r[9] = {(float)cos(a), (float)-sin(a), 0, (float)sin(a), (float)cos(a), 0, 0, 0, 1};
    for (int i = 0; i < 9; i++) rot0[i] = r[i];
    const float tg[3] = {0.5f, -0.4f, 0.1f};
    CHECK(dvm_array_write(ctx, target, tg, 3));
    dvm_args *args;
    CHECK(dvm_args_create(ctx, k, &args));
    CHECK(dvm_args_array(ctx, args, "x", x));
    CHECK(dvm_args_array(ctx, args, "v", v));
    CHECK(dvm_args_array(ctx, args, "f", f));
    CHECK(dvm_args_array(ctx, args, "rot", rot));
    CHECK(dvm_args_array(ctx, args, "target", target));
    CHECK(dvm_args_array(ctx, args, "loss", loss));
    CHECK(dvm_args_array(ctx, args, "energy", energy));
    CHECK(dvm_args_f32(ctx, args, "dt", 0.01f));
    CHECK(dvm_args_i32(ctx, args, "steps", STEPS));

    /* the adjoint: dL/dx0 and dL/drot, seeded by loss.grad = 1 */
    dvm_array *xg, *rg, *lg;
    CHECK(dvm_array_create(ctx, DVM_F32, 2, sv, &xg));
    CHECK(dvm_array_create(ctx, DVM_F32, 3, sm, &rg));
    CHECK(dvm_array_create(ctx, DVM_F32, 1, one, &lg));
    static const float zeros[N * 3];
    const float seed = 1;
    CHECK(dvm_array_write(ctx, xg, zeros, N * 3));
    CHECK(dvm_array_write(ctx, rg, zeros, 9));
    CHECK(dvm_array_write(ctx, lg, &seed, 1));
    CHECK(dvm_args_grad(ctx, args, "x", xg));
    CHECK(dvm_args_grad(ctx, args, "rot", rg));
    CHECK(dvm_args_grad(ctx, args, "loss", lg));
    CHECK(dvm_array_write(ctx, x, x0, N * 3));
    CHECK(dvm_array_write(ctx, v, zeros, N * 3));
    CHECK(dvm_array_write(ctx, rot, rot0, 9));
    const float zero = 0;
    CHECK(dvm_array_write(ctx, loss, &zero, 1));
    CHECK(dvm_array_write(ctx, energy, &zero, 1));
    dvm_launch_opts adj = {DVM_ADJOINT, 0, 0, 0};
    CHECK(dvm_launch(ctx, k, args, &adj, NULL));
    float gx[N * 3], gr[9], l0, e0;
    CHECK(dvm_array_read(ctx, xg, gx, N * 3));
    CHECK(dvm_array_read(ctx, rg, gr, 9));
    CHECK(dvm_array_read(ctx, loss, &l0, 1));
    CHECK(dvm_array_read(ctx, energy, &e0, 1));
    printf("backend %s: %d particles, %d steps; loss %.6g, spring energy summed over the steps %.6g\n", dvm_context_backend(ctx), N, STEPS,
           (double)l0, (double)e0);

    /* central differences of forward launches (f32, so a step of 1e-2 and a loose tolerance) */
    const double h = 1e-2;
    int bad = 0, nchk = 0;
    double worst = 0;
    float xs[N * 3], rs[9];
    for (int q = 0; q < N * 3 + 9; q++) {
        int is_rot = q >= N * 3, j = is_rot ? q - N * 3 : q;
        for (int i = 0; i < N * 3; i++) xs[i] = x0[i];
        for (int i = 0; i < 9; i++) rs[i] = rot0[i];
        float *p = is_rot ? &rs[j] : &xs[j];
        const float base = *p;
        *p = (float)(base + h);
        double up = run_loss(k, args, xs, rs);
        *p = (float)(base - h);
        double dn = run_loss(k, args, xs, rs);
        double fd = (up - dn) / (2 * h), ad = is_rot ? gr[j] : gx[j];
        double err = fabs(fd - ad) / (fabs(fd) > 1 ? fabs(fd) : 1);
        if (err > worst) worst = err;
        nchk++;
        if (err > 2e-2) {
            bad++;
            fprintf(stderr, "springs: d loss / d %s[%d]: adjoint %.6g, finite differences %.6g\n", is_rot ? "rot" : "x", j, ad, fd);
        }
    }
    printf("dL/dx0[0] = (%.5g, %.5g, %.5g), dL/drot[0, 1] = %.5g; %d derivatives against finite differences, worst relative error %.2g\n",
           (double)gx[0], (double)gx[1], (double)gx[2], (double)gr[1], nchk, worst);
    dvm_args_destroy(args);
    dvm_array *all[] = {x, v, f, rot, target, loss, energy, xg, rg, lg};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) dvm_array_destroy(all[i]);
    dvm_module_destroy(mod);
    dvm_context_destroy(ctx);
    if (bad) {
        fprintf(stderr, "springs: %d derivatives disagree\n", bad);
        return 1;
    }
    printf("ok\n");
    return 0;
}
