/* test_wrap.c BACKEND: arrays over caller-owned memory and dvm_array_data, per backend.
 *  - cpu: dvm_array_data is the host address (of created and of wrapped arrays); device
 *    memory cannot be wrapped.
 *  - vulkan: no address to hand out; neither host nor device memory can be wrapped.
 *  - cuda, hip: a device address (here one dvm allocated, as torch or cupy would) is adopted
 *    in place: launches read and write it, offsets into an allocation work, a range that runs
 *    past its allocation, a host pointer and a misaligned one are refused, and destroying
 *    the wrapper leaves the memory to its owner.
 * Exit 77 (skipped) when the backend or its device is missing. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "tests/check.h"
#include "dvm.h"

static const char *SRC = "kernel scale(x: f32[n], y: f32[n], a: f32):\n"
                         "    for i in range(n):\n"
                         "        y[i] = a * x[i] + y[i]\n";

/* y += a * x over n elements at the given arrays; 0 on success */
static dvm_status scale(dvm_context *ctx, const dvm_kernel *k, dvm_array *x, dvm_array *y, float a) {
    dvm_args *args = NULL;
    dvm_launch_opts fwd = {DVM_FORWARD, 0, 0, 0};
    dvm_status st = dvm_args_create(ctx, k, &args);
    if (st == DVM_OK) st = dvm_args_array(ctx, args, "x", x);
    if (st == DVM_OK) st = dvm_args_array(ctx, args, "y", y);
    if (st == DVM_OK) st = dvm_args_f32(ctx, args, "a", a);
    if (st == DVM_OK) st = dvm_launch(ctx, k, args, &fwd, NULL);
    dvm_args_destroy(args);
    return st;
}

int main(int argc, char **argv) {
    const char *be = argc > 1 ? argv[1] : "cpu";
    dvm_context_opts o = {.backend = be};
    dvm_context *ctx = NULL;
    if (dvm_context_create(&o, &ctx) != DVM_OK) {
        printf("test_wrap: SKIP: no %s backend: %s\n", be, dvm_errmsg(ctx));
        dvm_context_destroy(ctx);
        return 77;
    }
    printf("test_wrap: %s (%s)\n", be, dvm_context_device(ctx));
    dvm_module *m = NULL;
    const dvm_kernel *k = NULL;
    CHECK(dvm_compile(ctx, SRC, strlen(SRC), "wrap.dvk", &m) == DVM_OK && dvm_kernel_find(ctx, m, "scale", &k) == DVM_OK,
          "compile: %s", dvm_errmsg(ctx));
    const int64_t n8[1] = {8}, n6[1] = {6}, n9[1] = {9};
    float hx[8], hy[8];
    for (int i = 0; i < 8; i++) hx[i] = (float)(i + 1), hy[i] = 0.5f;
    dvm_array *x = NULL, *y = NULL, *w = NULL, *w2 = NULL, *bad = NULL;
    CHECK(dvm_array_create(ctx, DVM_F32, 1, n8, &x) == DVM_OK && dvm_array_create(ctx, DVM_F32, 1, n8, &y) == DVM_OK &&
              dvm_array_write(ctx, x, hx, 8) == DVM_OK && dvm_array_write(ctx, y, hy, 8) == DVM_OK,
          "arrays: %s", dvm_errmsg(ctx));
    void *dx = dvm_array_data(x), *dy = dvm_array_data(y);
    CHECK(dvm_array_data(NULL) == NULL, "dvm_array_data(NULL) is not NULL");

    if (!strcmp(be, "cpu")) {
        CHECK(dx && dy && !memcmp(dx, hx, sizeof hx), "cpu: dvm_array_data is not the array's host memory");
        CHECK(dvm_array_wrap_host(ctx, DVM_F32, 1, n8, hy, &w) == DVM_OK && dvm_array_data(w) == (void *)hy,
              "cpu: a wrapped array's data is not the caller's memory: %s", dvm_errmsg(ctx));
        CHECK(dvm_array_wrap_device(ctx, DVM_F32, 1, n8, hy, &bad) == DVM_ERR_USAGE && !bad &&
                  strstr(dvm_errmsg(ctx), "dvm_array_wrap_device") && strstr(dvm_errmsg(ctx), "cuda or hip"),
              "cpu: wrap_device: %s", dvm_errmsg(ctx));
    } else if (!strcmp(be, "vulkan")) {
        CHECK(!dx && !dy, "vulkan: dvm_array_data is not NULL");
        CHECK(dvm_array_wrap_device(ctx, DVM_F32, 1, n8, hy, &bad) == DVM_ERR_USAGE && !bad &&
                  strstr(dvm_errmsg(ctx), "vulkan cannot adopt"),
              "vulkan: wrap_device: %s", dvm_errmsg(ctx));
        CHECK(dvm_array_wrap_host(ctx, DVM_F32, 1, n8, hy, &bad) == DVM_ERR_USAGE && !bad,
              "vulkan: wrap_host: %s", dvm_errmsg(ctx));
    } else {
        /* cuda, hip: dy is device memory the caller holds; the wrapper works on it in place */
        CHECK(dx && dy, "%s: dvm_array_data is NULL", be);
        CHECK(dvm_array_wrap_device(ctx, DVM_F32, 1, n8, dy, &w) == DVM_OK && dvm_array_data(w) == dy,
              "%s: wrap: %s", be, dvm_errmsg(ctx));
        CHECK(scale(ctx, k, x, w, 2.0f) == DVM_OK, "%s: launch on the wrapper: %s", be, dvm_errmsg(ctx));
        float out[8];
        CHECK(dvm_array_read(ctx, y, out, 8) == DVM_OK, "read: %s", dvm_errmsg(ctx));
        for (int i = 0; i < 8; i++)
            CHECK(out[i] == 0.5f + 2.0f * (float)(i + 1), "%s: y[%d] = %g after a launch on its wrapper, expected %g", be,
                  i, (double)out[i], (double)(0.5f + 2.0f * (float)(i + 1)));
        /* elements 1..6 of x, 2..7 of y: an offset into an allocation */
        CHECK(dvm_array_wrap_device(ctx, DVM_F32, 1, n6, (char *)dx + 4, &w2) == DVM_OK, "%s: offset wrap: %s", be,
              dvm_errmsg(ctx));
        dvm_array *w3 = NULL;
        CHECK(dvm_array_wrap_device(ctx, DVM_F32, 1, n6, (char *)dy + 8, &w3) == DVM_OK, "%s: offset wrap: %s", be,
              dvm_errmsg(ctx));
        CHECK(scale(ctx, k, w2, w3, 1.0f) == DVM_OK, "%s: launch on offset wrappers: %s", be, dvm_errmsg(ctx));
        CHECK(dvm_array_read(ctx, y, out, 8) == DVM_OK, "read: %s", dvm_errmsg(ctx));
        for (int i = 0; i < 8; i++) {
            float want = 0.5f + 2.0f * (float)(i + 1) + (i >= 2 ? (float)i : 0.0f);
            CHECK(out[i] == want, "%s: y[%d] = %g after the offset launch, expected %g", be, i, (double)out[i],
                  (double)want);
        }
        dvm_array_destroy(w3);
        CHECK(dvm_array_wrap_device(ctx, DVM_F32, 1, n8, (char *)dy + 4, &bad) == DVM_ERR_BACKEND && !bad &&
                  strstr(dvm_errmsg(ctx), "past the end"),
              "%s: a range past its allocation: %s", be, dvm_errmsg(ctx));
        CHECK(dvm_array_wrap_device(ctx, DVM_F32, 1, n9, dy, &bad) == DVM_ERR_BACKEND && !bad,
              "%s: 9 elements over 8: %s", be, dvm_errmsg(ctx));
        float *host = malloc(8 * sizeof *host);
        CHECK(dvm_array_wrap_device(ctx, DVM_F32, 1, n8, host, &bad) == DVM_ERR_BACKEND && !bad &&
                  strstr(dvm_errmsg(ctx), "not memory of"),
              "%s: a host pointer: %s", be, dvm_errmsg(ctx));
        free(host);
        CHECK(dvm_array_wrap_device(ctx, DVM_F32, 1, n6, (char *)dy + 2, &bad) == DVM_ERR_USAGE && !bad &&
                  strstr(dvm_errmsg(ctx), "aligned"),
              "%s: misaligned: %s", be, dvm_errmsg(ctx));
        CHECK(dvm_array_wrap_host(ctx, DVM_F32, 1, n8, hy, &bad) == DVM_ERR_USAGE && !bad,
              "%s: wrap_host: %s", be, dvm_errmsg(ctx));
        /* the wrapper's destroy leaves the memory to y */
        dvm_array_destroy(w);
        w = NULL;
        CHECK(dvm_array_read(ctx, y, out, 8) == DVM_OK && out[7] == 0.5f + 16.0f + 7.0f,
              "%s: y after its wrapper was destroyed: %s", be, dvm_errmsg(ctx));
    }
    CHECK(dvm_array_wrap_device(ctx, DVM_F32, 1, n8, NULL, &bad) == DVM_ERR_USAGE && !bad, "wrap NULL");
    dvm_array_destroy(w);
    dvm_array_destroy(w2);
    dvm_array_destroy(x);
    dvm_array_destroy(y);
    dvm_module_destroy(m);
    dvm_context_destroy(ctx);
    printf("test_wrap %s: %s\n", be, fails ? "FAILED" : "ok");
    return fails != 0;
}
