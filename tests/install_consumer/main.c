/* main.c: a program built against an installed dvm (tests/install_consumer.sh): compiles a
 * one-statement kernel on the CPU backend, runs it and checks the result. */
#include <stdio.h>
#include "dvm.h"

static const char src[] = "kernel scale(x: f32[n], y: f32[n], a: f32):\n"
                          "    for i in range(n):\n"
                          "        y[i] = a * x[i]\n";

int main(void) {
    dvm_context_opts co = {.backend = "cpu", .threads = 1};
    dvm_context *ctx = NULL;
    dvm_module *m = NULL;
    const dvm_kernel *k = NULL;
    dvm_array *x = NULL, *y = NULL;
    dvm_args *args = NULL;
    int64_t shape[1] = {4};
    const float x0[4] = {1.0f, 2.0f, 3.0f, -4.0f};
    float y0[4] = {0};
    dvm_launch_opts lo = {DVM_FORWARD, 0, 0, 0};
    int bad = 1;
    if (dvm_context_create(&co, &ctx) != DVM_OK || dvm_compile(ctx, src, sizeof src - 1, "scale.dvk", &m) != DVM_OK ||
        dvm_kernel_find(ctx, m, "scale", &k) != DVM_OK ||
        dvm_array_create(ctx, DVM_F32, 1, shape, &x) != DVM_OK ||
        dvm_array_create(ctx, DVM_F32, 1, shape, &y) != DVM_OK || dvm_array_write(ctx, x, x0, 4) != DVM_OK ||
        dvm_args_create(ctx, k, &args) != DVM_OK || dvm_args_array(ctx, args, "x", x) != DVM_OK ||
        dvm_args_array(ctx, args, "y", y) != DVM_OK || dvm_args_f32(ctx, args, "a", 2.5f) != DVM_OK ||
        dvm_launch(ctx, k, args, &lo, NULL) != DVM_OK || dvm_array_read(ctx, y, y0, 4) != DVM_OK) {
        fprintf(stderr, "install consumer: %s\n", ctx ? dvm_errmsg(ctx) : "no context");
    } else {
        bad = 0;
        for (int i = 0; i < 4; i++)
            if (y0[i] != 2.5f * x0[i]) {
                fprintf(stderr, "install consumer: y[%d] = %g, expected %g\n", i, (double)y0[i], 2.5 * x0[i]);
                bad = 1;
            }
        if (!bad) printf("install consumer: dvm %s, y = 2.5 * x on %s\n", DVM_VERSION_STRING, dvm_context_backend(ctx));
    }
    dvm_args_destroy(args);
    dvm_array_destroy(x);
    dvm_array_destroy(y);
    dvm_module_destroy(m);
    dvm_context_destroy(ctx);
    return bad;
}
