/* bench_vec.c: the same particle step written with vec3 / mat3 and with scalars, forward and
 * adjoint on the CPU backend (one thread, then all), and the ratio of their times: the
 * vector types are lowered to scalars before anything else, so the ratio should be 1.
 * Prints a markdown table. Usage: bench_vec [--quick] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "dvm.h"

static const char *SRC =
    "kernel step_vec(x: vec3[n], v: vec3[n], w: vec3[n], m: mat3[1], y: vec3[n], dt: f32):\n"
    "    for i in range(n):\n"
    "        p = x[i]\n"
    "        u = v[i]\n"
    "        f = m[0] @ p - 0.5 * u + cross(w[i], u)\n"
    "        s = dt / (1.0 + length(f))\n"
    "        u = u + f * s\n"
    "        y[i] = p + u * dt\n"
    "\n"
    "kernel step_scalar(x: f32[n, 3], v: f32[n, 3], w: f32[n, 3], m: f32[1, 3, 3], y: f32[n, 3], dt: f32):\n"
    "    for i in range(n):\n"
    "        px = x[i, 0]\n"
    "        py = x[i, 1]\n"
    "        pz = x[i, 2]\n"
    "        ux = v[i, 0]\n"
    "        uy = v[i, 1]\n"
    "        uz = v[i, 2]\n"
    "        wx = w[i, 0]\n"
    "        wy = w[i, 1]\n"
    "        wz = w[i, 2]\n"
    "        fx = m[0, 0, 0] * px + m[0, 0, 1] * py + m[0, 0, 2] * pz - 0.5 * ux + (wy * uz - wz * uy)\n"
    "        fy = m[0, 1, 0] * px + m[0, 1, 1] * py + m[0, 1, 2] * pz - 0.5 * uy + (wz * ux - wx * uz)\n"
    "        fz = m[0, 2, 0] * px + m[0, 2, 1] * py + m[0, 2, 2] * pz - 0.5 * uz + (wx * uy - wy * ux)\n"
    "        s = dt / (1.0 + sqrt(fx * fx + fy * fy + fz * fz))\n"
    "        ux = ux + fx * s\n"
    "        uy = uy + fy * s\n"
    "        uz = uz + fz * s\n"
    "        y[i, 0] = px + ux * dt\n"
    "        y[i, 1] = py + uy * dt\n"
    "        y[i, 2] = pz + uz * dt\n";

#define CHECK(call)                                                                            \
    do {                                                                                       \
        dvm_status st_ = (call);                                                               \
        if (st_ != DVM_OK) {                                                                   \
            fprintf(stderr, "bench_vec: %s failed (%d):\n%s\n", #call, (int)st_, dvm_errmsg(ctx)); \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static dvm_context *ctx;
static int reps;

/* The best time of each kernel, launched in turns (a load that comes and goes on the machine
 * then slows both alike). */
static void time_pair(const dvm_kernel *k[2], dvm_args *a[2], dvm_mode mode, double best[2]) {
    dvm_launch_opts o = {mode, 0, 0, 0};
    for (int kv = 0; kv < 2; kv++) {
        CHECK(dvm_launch(ctx, k[kv], a[kv], &o, NULL)); /* warm-up */
        best[kv] = 1e30;
    }
    for (int r = 0; r < reps; r++)
        for (int kv = 0; kv < 2; kv++) {
            double t0 = now_ms();
            CHECK(dvm_launch(ctx, k[kv], a[kv], &o, NULL));
            double t = now_ms() - t0;
            if (t < best[kv]) best[kv] = t;
        }
}

int main(int argc, char **argv) {
    int quick = argc > 1 && !strcmp(argv[1], "--quick");
    /* many short launches: their best times are taken from moments the machine is quiet */
    const int64_t n = quick ? 4096 : 1 << 17;
    reps = quick ? 2 : 40;
    float *h = malloc(sizeof(float) * (size_t)n * 3 * 3), *out[2];
    out[0] = malloc(sizeof(float) * (size_t)n * 3);
    out[1] = malloc(sizeof(float) * (size_t)n * 3);
    if (!h || !out[0] || !out[1]) return 1;
    unsigned long long s = 88172645463325252ull;
    for (int64_t i = 0; i < n * 9; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        h[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 2 - 1);
    }
    const float mrot[9] = {0.9f, -0.2f, 0.1f, 0.2f, 0.9f, -0.1f, -0.1f, 0.1f, 0.95f};
    printf("| threads | mode | vec3 (ms) | scalars (ms) | vec3 / scalars |\n| --- | --- | --- | --- | --- |\n");
    for (int threads = 1; threads <= 2; threads++) {
        dvm_context_opts co = {.backend = "cpu", .threads = threads == 1 ? 1 : 0};
        if (dvm_context_create(&co, &ctx) != DVM_OK) {
            fprintf(stderr, "bench_vec: %s\n", ctx ? dvm_errmsg(ctx) : "out of memory");
            return 1;
        }
        dvm_module *mod;
        CHECK(dvm_compile(ctx, SRC, strlen(SRC), "bench_vec.dvk", &mod));
        const char *names[2] = {"step_vec", "step_scalar"};
        int64_t sv[2] = {n, 3}, sm[3] = {1, 3, 3};
        dvm_array *arr[5], *grad[5];
        const char *an[5] = {"x", "v", "w", "m", "y"};
        for (int q = 0; q < 5; q++) {
            CHECK(dvm_array_create(ctx, DVM_F32, q == 3 ? 3 : 2, q == 3 ? sm : sv, &arr[q]));
            CHECK(dvm_array_create(ctx, DVM_F32, q == 3 ? 3 : 2, q == 3 ? sm : sv, &grad[q]));
            if (q == 3) CHECK(dvm_array_write(ctx, arr[q], mrot, 9));
            else CHECK(dvm_array_write(ctx, arr[q], h + (q == 4 ? 0 : q) * n * 3, n * 3));
            CHECK(dvm_array_write(ctx, grad[q], h + (q == 3 ? 0 : (q + 1) % 3) * n * 3, q == 3 ? 9 : n * 3));
        }
        const dvm_kernel *k[2];
        dvm_args *a[2];
        for (int kv = 0; kv < 2; kv++) {
            CHECK(dvm_kernel_find(ctx, mod, names[kv], &k[kv]));
            CHECK(dvm_args_create(ctx, k[kv], &a[kv]));
            for (int q = 0; q < 5; q++) {
                CHECK(dvm_args_array(ctx, a[kv], an[q], arr[q]));
                CHECK(dvm_args_grad(ctx, a[kv], an[q], grad[q]));
            }
            CHECK(dvm_args_f32(ctx, a[kv], "dt", 0.01f));
            dvm_launch_opts o = {DVM_FORWARD, 0, 0, 0};
            CHECK(dvm_launch(ctx, k[kv], a[kv], &o, NULL));
            CHECK(dvm_array_read(ctx, arr[4], out[kv], n * 3));
        }
        double t[2][2], tf[2], ta[2];
        time_pair(k, a, DVM_FORWARD, tf);
        time_pair(k, a, DVM_ADJOINT, ta);
        for (int kv = 0; kv < 2; kv++) {
            t[kv][0] = tf[kv];
            t[kv][1] = ta[kv];
            dvm_args_destroy(a[kv]);
        }
        for (int64_t i = 0; i < n * 3; i++)
            if (out[0][i] != out[1][i]) {
                fprintf(stderr, "bench_vec: the two kernels disagree at %lld: %.9g and %.9g\n", (long long)i, (double)out[0][i], (double)out[1][i]);
                return 1;
            }
        for (int m = 0; m < 2; m++)
            printf("| %s | %s | %.3f | %.3f | %.3f |\n", threads == 1 ? "1" : "all", m ? "adjoint" : "forward", t[0][m], t[1][m], t[0][m] / t[1][m]);
        for (int q = 0; q < 5; q++) {
            dvm_array_destroy(arr[q]);
            dvm_array_destroy(grad[q]);
        }
        dvm_module_destroy(mod);
        dvm_context_destroy(ctx);
    }
    printf("\n%lld particles; the best of %d launches of each, in turns, after a warm-up; the two kernels' outputs are bitwise equal.\n", (long long)n, reps);
    free(h);
    free(out[0]);
    free(out[1]);
    return 0;
}
