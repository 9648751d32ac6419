/* api_example.c: the C API end to end on the spec's first kernel (examples/damp.dvk):
 * compile, bind arguments, launch forward, then the adjoint (dL/dx for L = y[0]) and the
 * tangent, and print the results. Every call's status is checked; dvm_errmsg says why.
 *
 * usage: api_example [PATH/TO/damp.dvk] [BACKEND] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dvm.h"

#define CHECK(call)                                                                        \
    do {                                                                                   \
        dvm_status st_ = (call);                                                           \
        if (st_ != DVM_OK) {                                                               \
            fprintf(stderr, "api_example: %s failed (%d):\n%s\n", #call, (int)st_, dvm_errmsg(ctx)); \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

static void print_f32(const char *name, const float *v, int n) {
    printf("  %-7s = [", name);
    for (int i = 0; i < n; i++) printf("%s%.6g", i ? ", " : "", (double)v[i]);
    printf("]\n");
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "examples/damp.dvk";
    dvm_context_opts co = {.backend = argc > 2 ? argv[2] : "auto"};
    dvm_context *ctx = NULL;
    if (dvm_context_create(&co, &ctx) != DVM_OK) {
        fprintf(stderr, "api_example: %s\n", ctx ? dvm_errmsg(ctx) : "out of memory");
        dvm_context_destroy(ctx);
        return 1;
    }
    printf("backend %s: %s\n", dvm_context_backend(ctx), dvm_context_device(ctx));

    /* compile the source file in memory (a .dvb blob loads the same way) */
    dvm_module *m;
    CHECK(dvm_load_file(ctx, path, &m));
    const dvm_kernel *k;
    CHECK(dvm_kernel_find(ctx, m, "damp", &k));

    enum { N = 4 };
    const float x0[N] = {0.5f, 1.0f, -2.0f, 0.25f};
    const int32_t steps0[N] = {0, 1, 3, 2};
    const float zero1[1] = {0.0f}, one1[1] = {1.0f}, dx0[N] = {1.0f, 0.0f, 0.0f, 0.0f};
    int64_t n_shape[1] = {N}, one_shape[1] = {1};
    dvm_array *x, *steps, *y, *xg, *yg, *xd, *yd;
    CHECK(dvm_array_create(ctx, DVM_F32, 1, n_shape, &x));
    CHECK(dvm_array_create(ctx, DVM_I32, 1, n_shape, &steps));
    CHECK(dvm_array_create(ctx, DVM_F32, 1, one_shape, &y));
    CHECK(dvm_array_create(ctx, DVM_F32, 1, n_shape, &xg));
    CHECK(dvm_array_create(ctx, DVM_F32, 1, one_shape, &yg));
    CHECK(dvm_array_create(ctx, DVM_F32, 1, n_shape, &xd));
    CHECK(dvm_array_create(ctx, DVM_F32, 1, one_shape, &yd));
    CHECK(dvm_array_write(ctx, x, x0, N));
    CHECK(dvm_array_write(ctx, steps, steps0, N));

    dvm_args *args;
    CHECK(dvm_args_create(ctx, k, &args));
    CHECK(dvm_args_array(ctx, args, "x", x));
    CHECK(dvm_args_array(ctx, args, "steps", steps));
    CHECK(dvm_args_array(ctx, args, "y", y));
    CHECK(dvm_args_f32(ctx, args, "rate", 0.9f));

    /* forward: y[0] = sum over i of x[i] after steps[i] damping steps */
    float out[N];
    dvm_launch_opts fwd = {DVM_FORWARD, 0, 0, 0};
    dvm_launch_stats st;
    CHECK(dvm_launch(ctx, k, args, &fwd, &st));
    CHECK(dvm_array_read(ctx, y, out, 1));
    printf("forward (%.3f ms):\n", st.total_ms);
    print_f32("y", out, 1);

    /* adjoint: runs the kernel again from y = 0, then adds dL/dx into x.grad with seed
       y.grad = 1; dL/dx[i] = rate ** steps[i] */
    CHECK(dvm_array_write(ctx, y, zero1, 1));
    CHECK(dvm_array_write(ctx, yg, one1, 1));
    CHECK(dvm_args_grad(ctx, args, "x", xg));
    CHECK(dvm_args_grad(ctx, args, "y", yg));
    dvm_launch_opts adj = {DVM_ADJOINT, 0, 0, 0};
    CHECK(dvm_launch(ctx, k, args, &adj, &st));
    CHECK(dvm_array_read(ctx, xg, out, N));
    printf("adjoint (%.3f ms, adstack heap %lld bytes):\n", st.total_ms, (long long)st.heap_bytes);
    print_f32("x.grad", out, N);

    /* tangent: the derivative of y along x.dual = (1, 0, 0, 0) */
    CHECK(dvm_array_write(ctx, y, zero1, 1));
    CHECK(dvm_array_write(ctx, xd, dx0, N));
    CHECK(dvm_args_dual(ctx, args, "x", xd));
    CHECK(dvm_args_dual(ctx, args, "y", yd));
    dvm_launch_opts tan = {DVM_TANGENT, 0, 0, 0};
    CHECK(dvm_launch(ctx, k, args, &tan, &st));
    CHECK(dvm_array_read(ctx, yd, out, 1));
    printf("tangent:\n");
    print_f32("y.dual", out, 1);

    /* a bad binding is an error that names the parameter */
    if (dvm_args_array(ctx, args, "steps", x) != DVM_OK) printf("expected error: %s\n", dvm_errmsg(ctx));

    dvm_args_destroy(args);
    dvm_array_destroy(x);
    dvm_array_destroy(steps);
    dvm_array_destroy(y);
    dvm_array_destroy(xg);
    dvm_array_destroy(yg);
    dvm_array_destroy(xd);
    dvm_array_destroy(yd);
    dvm_module_destroy(m);
    dvm_context_destroy(ctx);
    return 0;
}
