/* bench_vulkan.c: dvm's Vulkan backend against its CPU backend (all cores) on the same kernels
 * and data, in one process; and the cost of opening the backend (pipeline creation, cold or
 * from the on-disk pipeline cache). Not a test. Run:
 *   build/bench_vulkan [--quick]     (bench/RESULTS.md, section "Vulkan", records its output)
 * Times are the best of `reps` whole dvm_launch calls (upload of tables, the tasks, the one
 * readback) after a warm-up; "exec" is the backend's part (dvm_launch_stats.exec_ms). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dvm.h"

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

#define CHECK(call)                                                                      \
    do {                                                                                 \
        if ((call) != DVM_OK) {                                                          \
            fprintf(stderr, "bench_vulkan:%d: %s\n", __LINE__, dvm_errmsg(ctx));         \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

#include "bench/bench_kernels.h"


static int reps = 5;

typedef struct side {
    dvm_context *ctx;
    dvm_module *mod;
    double ms, exec_ms;
    float *out; /* the first output array, read back */
} side;

/* Binds and runs kernel `kk` on one context; keeps the best time and the output. */
static int run_one(side *s, int kk, int mode, long N, long SN, const float *x, const float *y, const int *steps,
                   const int *keys, const float *u) {
    dvm_context *ctx = s->ctx;
    static const char *names[6] = {"saxpy", "trans", "dynloop", "stencil", "hist", "dynsin"};
    const dvm_kernel *k;
    if (dvm_kernel_find(ctx, s->mod, names[kk], &k) != DVM_OK) return -1;
    dvm_args *args;
    CHECK(dvm_args_create(ctx, k, &args));
    dvm_array *arr[4] = {0};
    int64_t n1[1] = {N}, n2[2] = {SN, SN}, hb[1] = {256};
    long cnt = N;
    dvm_array *outa = NULL, *grad = NULL;
    if (kk == 0) {
        CHECK(dvm_array_create(ctx, DVM_F32, 1, n1, &arr[0]));
        CHECK(dvm_array_create(ctx, DVM_F32, 1, n1, &arr[1]));
        CHECK(dvm_array_write(ctx, arr[0], x, N));
        CHECK(dvm_array_write(ctx, arr[1], y, N));
        CHECK(dvm_args_f32(ctx, args, "a", 1.5f));
        CHECK(dvm_args_array(ctx, args, "x", arr[0]));
        CHECK(dvm_args_array(ctx, args, "y", arr[1]));
        outa = arr[1];
    } else if (kk == 1 || kk == 2 || kk == 5) {
        CHECK(dvm_array_create(ctx, DVM_F32, 1, n1, &arr[0]));
        CHECK(dvm_array_create(ctx, DVM_F32, 1, n1, &arr[1]));
        CHECK(dvm_array_write(ctx, arr[0], x, N));
        CHECK(dvm_args_array(ctx, args, "x", arr[0]));
        CHECK(dvm_args_array(ctx, args, "y", arr[1]));
        if (kk == 2 || kk == 5) {
            CHECK(dvm_array_create(ctx, DVM_I32, 1, n1, &arr[2]));
            CHECK(dvm_array_write(ctx, arr[2], steps, N));
            CHECK(dvm_args_array(ctx, args, "steps", arr[2]));
            CHECK(dvm_args_f32(ctx, args, "rate", 0.97f));
        }
        outa = arr[1];
        if (mode == DVM_ADJOINT) { /* gradient of x, seeded with dL/dy = 1 */
            float *ones = malloc(sizeof(float) * N);
            for (long i = 0; i < N; i++) ones[i] = 1.0f;
            CHECK(dvm_array_create(ctx, DVM_F32, 1, n1, &arr[3]));
            CHECK(dvm_array_create(ctx, DVM_F32, 1, n1, &grad));
            CHECK(dvm_array_write(ctx, arr[3], ones, N));
            free(ones);
            CHECK(dvm_args_grad(ctx, args, "y", arr[3]));
            CHECK(dvm_args_grad(ctx, args, "x", grad));
            outa = grad;
        }
    } else if (kk == 3) {
        CHECK(dvm_array_create(ctx, DVM_F32, 2, n2, &arr[0]));
        CHECK(dvm_array_create(ctx, DVM_F32, 2, n2, &arr[1]));
        CHECK(dvm_array_write(ctx, arr[0], u, SN * SN));
        CHECK(dvm_args_array(ctx, args, "u", arr[0]));
        CHECK(dvm_args_array(ctx, args, "v", arr[1]));
        outa = arr[1];
        cnt = SN * SN;
    } else {
        CHECK(dvm_array_create(ctx, DVM_I32, 1, n1, &arr[0]));
        CHECK(dvm_array_create(ctx, DVM_I32, 1, hb, &arr[1]));
        CHECK(dvm_array_write(ctx, arr[0], keys, N));
        CHECK(dvm_args_array(ctx, args, "k", arr[0]));
        CHECK(dvm_args_array(ctx, args, "h", arr[1]));
        outa = arr[1];
        cnt = 256;
    }
    dvm_launch_opts o = {(dvm_mode)mode, 0, 0, 0};
    dvm_launch_stats st;
    s->ms = s->exec_ms = 1e30;
    int rc = 0;
    for (int r = 0; r <= reps && rc == 0; r++) {
        double t0 = now_ms();
        if (dvm_launch(ctx, k, args, &o, &st) != DVM_OK) {
            fprintf(stderr, "bench_vulkan: %s on %s: %s\n", names[kk], dvm_context_backend(ctx), dvm_errmsg(ctx));
            rc = -1;
            break;
        }
        double t = now_ms() - t0;
        if (r && t < s->ms) s->ms = t;
        if (r && st.exec_ms < s->exec_ms) s->exec_ms = st.exec_ms;
    }
    /* a fresh launch for the output: the repeated ones accumulate (saxpy, histogram) */
    free(s->out);
    s->out = calloc((size_t)cnt, 4);
    if (rc == 0) CHECK(dvm_array_read(ctx, outa, s->out, cnt));
    for (int i = 0; i < 4; i++) if (arr[i]) dvm_array_destroy(arr[i]);
    if (grad) dvm_array_destroy(grad);
    dvm_args_destroy(args);
    return rc;
}

int main(int argc, char **argv) {
    int quick = argc > 1 && !strcmp(argv[1], "--quick");
    long N = quick ? (1L << 18) : (1L << 24);
    long SN = quick ? 256 : 4096;
    if (quick) reps = 2;

    /* opening: instance, device, the interpreter's pipeline (cold or from the cache) */
    double t0 = now_ms();
    dvm_context_opts vo = {.backend = "vulkan"};
    dvm_context *ctx = NULL;
    if (dvm_context_create(&vo, &ctx) != DVM_OK) {
        fprintf(stderr, "bench_vulkan: %s\n", ctx ? dvm_errmsg(ctx) : "no context");
        return 1;
    }
    double open_ms = now_ms() - t0;
    side V = {ctx, NULL, 0, 0, NULL};
    printf("vulkan device: %s\nopen (context create, pipeline included): %.1f ms\n", dvm_context_device(ctx), open_ms);
    dvm_context_opts co = {.backend = "cpu"};
    dvm_context *cctx = NULL;
    if (dvm_context_create(&co, &cctx) != DVM_OK) { fprintf(stderr, "bench_vulkan: no cpu context\n"); return 1; }
    side C = {cctx, NULL, 0, 0, NULL};
    printf("cpu device: %s\n", dvm_context_device(cctx));
    CHECK(dvm_compile(ctx, SRC, strlen(SRC), "bench.dvk", &V.mod));
    ctx = cctx;
    CHECK(dvm_compile(ctx, SRC, strlen(SRC), "bench.dvk", &C.mod));

    float *x = malloc(sizeof(float) * N), *y = malloc(sizeof(float) * N), *u = malloc(sizeof(float) * SN * SN);
    int *steps = malloc(sizeof(int) * N), *keys = malloc(sizeof(int) * N);
    for (long i = 0; i < N; i++) {
        x[i] = (float)(urand() * 2 - 1);
        y[i] = (float)(urand() * 2 - 1);
        keys[i] = (int)(urand() * 100000);
        steps[i] = (int)(urand() * 64);
    }
    for (long i = 0; i < SN * SN; i++) u[i] = (float)urand();

    printf("\n| kernel | size | cpu ms | vulkan ms | vulkan exec ms | vulkan/cpu speed-up | max rel. diff |\n");
    printf("| --- | --- | --- | --- | --- | --- | --- |\n");
    static const struct { int k, mode; const char *label; } rows[] = {
        {0, DVM_FORWARD, "saxpy"}, {1, DVM_FORWARD, "trans (sin cos exp log tanh)"},
        {1, DVM_ADJOINT, "trans adjoint"}, {2, DVM_FORWARD, "dynloop (U[0,64) steps)"},
        {2, DVM_ADJOINT, "dynloop adjoint (no stack)"}, {5, DVM_FORWARD, "dynsin (U[0,64) steps)"},
        {5, DVM_ADJOINT, "dynsin adjoint (adstack, sizer)"}, {3, DVM_FORWARD, "stencil 5-point (ndrange)"},
        {4, DVM_FORWARD, "histogram (i32 atomics, 256 bins)"}};
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        long cnt = rows[r].k == 3 ? SN * SN : rows[r].k == 4 ? 256 : N;
        char size[32];
        if (rows[r].k == 3) snprintf(size, sizeof size, "%ldx%ld", SN, SN);
        else snprintf(size, sizeof size, "2^%d", (int)round(log2((double)N)));
        int a = run_one(&C, rows[r].k, rows[r].mode, N, SN, x, y, steps, keys, u);
        int b = run_one(&V, rows[r].k, rows[r].mode, N, SN, x, y, steps, keys, u);
        if (a || b) {
            printf("| %s | %s | %s | %s | - | - | - |\n", rows[r].label, size, a ? "failed" : "ok", b ? "failed" : "ok");
            continue;
        }
        double md = 0;
        for (long i = 0; i < cnt; i++) {
            double p, q;
            if (rows[r].k == 4) { int32_t ip, iq; memcpy(&ip, &C.out[i], 4); memcpy(&iq, &V.out[i], 4); p = ip; q = iq; }
            else { p = C.out[i]; q = V.out[i]; }
            double d = fabs(p - q) / (fabs(p) > 1e-3 ? fabs(p) : 1e-3);
            if (d > md) md = d;
        }
        printf("| %s | %s | %.3f | %.3f | %.3f | %.2fx | %.1e |\n", rows[r].label, size, C.ms, V.ms, V.exec_ms, C.ms / V.ms, md);
        fflush(stdout);
    }
    dvm_module_destroy(V.mod);
    dvm_module_destroy(C.mod);
    dvm_context_destroy(V.ctx);
    dvm_context_destroy(C.ctx);
    return 0;
}
