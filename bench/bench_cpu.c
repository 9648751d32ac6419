/* bench_cpu.c: dvm's CPU backend against native C (gcc -O2, the same math), measured in the
 * same run, on 1 thread and on all threads. Also: compile time per kernel, blob load+verify
 * time, adjoint/forward time, the sizer's share of adjoint time, heap bytes vs the minimum.
 * Each kernel with a gradient also runs its adjoint against a hand-written C adjoint of the same
 * math (forward included, as in dvm's adjoint launch), and dvm's gradient is checked against
 * it (exit status 1 beyond a relative 1e-3). Prints a markdown report to stdout.
 * Usage: bench_cpu [--quick] [--spellings] [--kernels LIST] [--reps N] (--help says more)
 * --spellings: only saxpy, dynloop and their other spellings (bench_kernels.h), launched in
 * turn, round after round (30), the best round of each: on a loaded machine the spellings
 * then see the same load, which separate best-of-5 runs do not. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dvm.h"

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

#define CHECK(call)                                                                      \
    do {                                                                                 \
        dvm_status st_ = (call);                                                         \
        if (st_ != DVM_OK) {                                                             \
            fprintf(stderr, "bench: %s failed (%d): %s\n", #call, (int)st_, dvm_errmsg(ctx)); \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

/* ---- the kernels, in .dvk and in C ---- */
#include "bench/bench_kernels.h"

static void c_saxpy(int nt, float a, const float *x, float *y, long n) {
#pragma omp parallel for num_threads(nt) schedule(static)
    for (long i = 0; i < n; i++) y[i] = a * x[i] + y[i];
}
static void c_trans(int nt, const float *x, float *y, long n) {
#pragma omp parallel for num_threads(nt) schedule(static)
    for (long i = 0; i < n; i++) {
        float v = x[i];
        y[i] = sinf(v) * cosf(v) + expf(-v * v) + logf(1.0f + v * v) + tanhf(v);
    }
}
static void c_dynloop(int nt, const float *x, const int *steps, float *y, float rate, long n) {
#pragma omp parallel for num_threads(nt) schedule(static)
    for (long i = 0; i < n; i++) {
        float v = x[i];
        for (int s = 0; s < steps[i]; s++) v = v * rate + 0.01f;
        y[i] = v;
    }
}
static void c_dynsin(int nt, const float *x, const int *steps, float *y, float rate, long n) {
#pragma omp parallel for num_threads(nt) schedule(static)
    for (long i = 0; i < n; i++) {
        float v = x[i];
        for (int s = 0; s < steps[i]; s++) v = sinf(v) * rate + 0.01f;
        y[i] = v;
    }
}
static void c_stencil(int nt, const float *u, float *v, long n, long m) {
#pragma omp parallel for num_threads(nt) schedule(static)
    for (long i = 0; i < n; i++)
        for (long j = 0; j < m; j++) {
            if (i > 0 && i < n - 1 && j > 0 && j < m - 1)
                v[i * m + j] = 0.25f * (u[(i - 1) * m + j] + u[(i + 1) * m + j] + u[i * m + j - 1] + u[i * m + j + 1]) - u[i * m + j];
            else
                v[i * m + j] = u[i * m + j];
        }
}
/* The adjoints, hand-written: each runs the forward first, as dvm's adjoint launch does, then
 * adds dL/dinput into the input's gradient from the output's gradient (the seed); an output
 * that the kernel overwrites without reading it gets gradient 0 (dL/dy before the launch), as
 * dvm leaves it. saxpy reads y too: y's gradient passes through unchanged. */
static void c_saxpy_adj(int nt, float a, const float *x, float *y, float *gx, const float *gy, long n) {
#pragma omp parallel for num_threads(nt) schedule(static)
    for (long i = 0; i < n; i++) {
        y[i] = a * x[i] + y[i];
        gx[i] += a * gy[i];
    }
}
static void c_trans_adj(int nt, const float *x, float *y, float *gx, float *gy, long n) {
#pragma omp parallel for num_threads(nt) schedule(static)
    for (long i = 0; i < n; i++) {
        float v = x[i], s = sinf(v), c = cosf(v), t = tanhf(v), e = expf(-v * v);
        y[i] = s * c + e + logf(1.0f + v * v) + t;
        float d = c * c - s * s - 2.0f * v * e + 2.0f * v / (1.0f + v * v) + (1.0f - t * t);
        gx[i] += gy[i] * d;
        gy[i] = 0.0f;
    }
}
/* d(v * rate + 0.01)/dv = rate: the gradient is the seed times rate^steps, no tape */
static void c_dynloop_adj(int nt, const float *x, const int *steps, float *y, float *gx, float *gy, float rate, long n) {
#pragma omp parallel for num_threads(nt) schedule(static)
    for (long i = 0; i < n; i++) {
        float v = x[i], g = gy[i];
        const int k = steps[i];
        for (int s = 0; s < k; s++) v = v * rate + 0.01f;
        y[i] = v;
        for (int s = 0; s < k; s++) g *= rate;
        gx[i] += g;
        gy[i] = 0.0f;
    }
}
/* d(sin(v) * rate + 0.01)/dv = cos(v) * rate: every step's v on a tape (a thread's own, of
 * the largest trip count), read back last first */
static void c_dynsin_adj(int nt, const float *x, const int *steps, float *y, float *gx, float *gy, float rate, long n,
                         int kmax) {
#pragma omp parallel num_threads(nt)
    {
        float *tape = malloc(sizeof(float) * (size_t)(kmax > 0 ? kmax : 1));
#pragma omp for schedule(static)
        for (long i = 0; i < n; i++) {
            float v = x[i];
            const int k = steps[i];
            for (int s = 0; s < k; s++) {
                tape[s] = v;
                v = sinf(v) * rate + 0.01f;
            }
            y[i] = v;
            float g = gy[i];
            for (int s = k - 1; s >= 0; s--) g *= cosf(tape[s]) * rate;
            gx[i] += g;
            gy[i] = 0.0f;
        }
        free(tape);
    }
}
/* the stencil's adjoint as a gather (no atomics): element p's gradient from its own output and
 * its four neighbours' interior outputs; then v's gradient is zeroed */
static inline int c_interior(long i, long j, long n, long m) { return i > 0 && i < n - 1 && j > 0 && j < m - 1; }
static void c_stencil_adj(int nt, const float *u, float *v, float *gu, float *gv, long n, long m) {
#pragma omp parallel num_threads(nt)
    {
#pragma omp for schedule(static)
        for (long i = 0; i < n; i++)
            for (long j = 0; j < m; j++) {
                const long p = i * m + j;
                const int in = c_interior(i, j, n, m);
                v[p] = in ? 0.25f * (u[p - m] + u[p + m] + u[p - 1] + u[p + 1]) - u[p] : u[p];
                float acc = in ? -gv[p] : gv[p];
                if (c_interior(i - 1, j, n, m)) acc += 0.25f * gv[p - m];
                if (c_interior(i + 1, j, n, m)) acc += 0.25f * gv[p + m];
                if (c_interior(i, j - 1, n, m)) acc += 0.25f * gv[p - 1];
                if (c_interior(i, j + 1, n, m)) acc += 0.25f * gv[p + 1];
                gu[p] += acc;
            }
#pragma omp for schedule(static)
        for (long p = 0; p < n * m; p++) gv[p] = 0.0f;
    }
}
static void c_hist(int nt, const int *k, int *h, long n) {
#pragma omp parallel for num_threads(nt) schedule(static)
    for (long i = 0; i < n; i++) {
        int b = ((k[i] % 256) + 256) % 256;
#pragma omp atomic
        h[b] += 1;
    }
}


static int reps = 5;

/* --spellings: saxpy's and dynloop's spellings on ctx, each launched once a round, the best
 * of `rounds` rounds (the first is a warm-up) into best[] (in the order of names[]) */
#define NSPELL 8
static const char *spell_names[NSPELL] = {"saxpy", "saxpy_comm", "saxpy_lit", "dynloop",
                                          "dynloop_lit", "dynloop_par", "dynloop_while", "dynloop_comm"};
static void spellings_round_robin(dvm_context *ctx, dvm_module *mod, int rounds, const float *x, const float *y,
                                  const int *steps, long N, long ND, double best[NSPELL]) {
    const dvm_kernel *k[NSPELL];
    dvm_args *args[NSPELL];
    dvm_array *arr[NSPELL][3];
    for (int q = 0; q < NSPELL; q++) {
        const int sax = q < 3;
        const long n = sax ? N : ND;
        CHECK(dvm_kernel_find(ctx, mod, spell_names[q], &k[q]));
        CHECK(dvm_args_create(ctx, k[q], &args[q]));
        int64_t shape[1] = {n};
        CHECK(dvm_array_create(ctx, DVM_F32, 1, shape, &arr[q][0]));
        CHECK(dvm_array_write(ctx, arr[q][0], x, n));
        CHECK(dvm_array_create(ctx, sax ? DVM_F32 : DVM_I32, 1, shape, &arr[q][1]));
        CHECK(dvm_array_write(ctx, arr[q][1], sax ? (const void *)y : (const void *)steps, n));
        CHECK(dvm_array_create(ctx, DVM_F32, 1, shape, &arr[q][2]));
        CHECK(dvm_args_array(ctx, args[q], "x", arr[q][0]));
        if (sax) {
            CHECK(dvm_args_array(ctx, args[q], "y", arr[q][1]));
            CHECK(dvm_args_f32(ctx, args[q], "a", 1.5f));
        } else {
            CHECK(dvm_args_array(ctx, args[q], "steps", arr[q][1]));
            CHECK(dvm_args_array(ctx, args[q], "y", arr[q][2]));
            CHECK(dvm_args_f32(ctx, args[q], "rate", 0.97f));
            if (!strcmp(spell_names[q], "dynloop_par")) CHECK(dvm_args_f32(ctx, args[q], "c", 0.01f));
        }
        best[q] = 1e30;
    }
    dvm_launch_opts o = {DVM_FORWARD, 0, 0, 0};
    for (int r = 0; r < rounds; r++)
        for (int q = 0; q < NSPELL; q++) {
            double t0 = now_ms();
            CHECK(dvm_launch(ctx, k[q], args[q], &o, NULL));
            double t = now_ms() - t0;
            if (r && t < best[q]) best[q] = t;
        }
    for (int q = 0; q < NSPELL; q++) {
        dvm_args_destroy(args[q]);
        for (int i = 0; i < 3; i++) dvm_array_destroy(arr[q][i]);
    }
}

/* best-of-reps time of a dvm launch */
static double time_dvm(dvm_context *ctx, const dvm_kernel *k, dvm_args *args, dvm_mode mode, dvm_launch_stats *last) {
    dvm_launch_opts o = {mode, 0, 0, 0};
    double best = 1e30;
    CHECK(dvm_launch(ctx, k, args, &o, last)); /* warm-up */
    for (int r = 0; r < reps; r++) {
        double t0 = now_ms();
        CHECK(dvm_launch(ctx, k, args, &o, last));
        double t = now_ms() - t0;
        if (t < best) best = t;
    }
    return best;
}

typedef struct {
    const char *name;
    double native[2], vm[2]; /* [0] 1 thread, [1] all threads */
    double adj_over_fwd;
    double maxerr;
    double adj_native[2], adj_vm[2]; /* the adjoint launch (forward + reverse); 0: not run */
    double adj_err;                  /* dvm's input gradient against the native adjoint's */
    int ran;
} row;

static dvm_array *mk(dvm_context *ctx, dvm_dtype t, int rank, int64_t d0, int64_t d1, const void *data) {
    int64_t shape[2] = {d0, d1};
    dvm_array *a;
    CHECK(dvm_array_create(ctx, t, rank, shape, &a));
    if (data) CHECK(dvm_array_write(ctx, a, data, rank == 1 ? d0 : d0 * d1));
    return a;
}

/* --kernels LIST: whether kernel `name` is in the comma-separated LIST (NULL: every kernel) */
static int wanted(const char *list, const char *name) {
    if (!list) return 1;
    const size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *c = strchr(p, ',');
        const size_t l = c ? (size_t)(c - p) : strlen(p);
        if (l == n && !strncmp(p, name, n)) return 1;
        if (!c) break;
        p = c + 1;
    }
    return 0;
}

static const char *USAGE =
    "usage: bench_cpu [--quick] [--spellings] [--kernels LIST] [--reps N]\n"
    "  --quick         small sizes (a smoke run), best of 2\n"
    "  --spellings     only saxpy, dynloop and their other spellings, launched in turn\n"
    "  --kernels LIST  only these kernels (comma-separated: saxpy, trans, dynloop, stencil, hist,\n"
    "                  dynsin, saxpy_comm, saxpy_lit, dynloop_lit, dynloop_par, dynloop_while,\n"
    "                  dynloop_comm), each with its adjoint\n"
    "  --reps N        best of N timed runs after a warm-up (default 5; 2 with --quick)\n";

int main(int argc, char **argv) {
    int quick = 0, spellings = 0, set_reps = 0;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--spellings")) spellings = 1;
        else if (!strcmp(argv[i], "--kernels") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc && atoi(argv[i + 1]) > 0) set_reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(USAGE, stdout);
            return 0;
        } else {
            fprintf(stderr, "bench_cpu: unknown or incomplete argument '%s'\n%s", argv[i], USAGE);
            return 2;
        }
    }
    long N = quick ? (1L << 20) : (1L << 24);
    long NT = quick ? (1L << 18) : (1L << 22);
    long ND = quick ? (1L << 16) : (1L << 20);
    long SN = quick ? 512 : 2048;
    if (quick) reps = 2;
    if (set_reps) reps = set_reps;
    int all = omp_get_max_threads();

    dvm_context *ctxs[2];
    for (int t = 0; t < 2; t++) {
        dvm_context_opts co = {.backend = "cpu", .threads = t == 0 ? 1 : all};
        dvm_context *ctx = NULL;
        if (dvm_context_create(&co, &ctx) != DVM_OK) {
            fprintf(stderr, "bench: %s\n", ctx ? dvm_errmsg(ctx) : "no context");
            return 1;
        }
        ctxs[t] = ctx;
    }
    dvm_context *ctx = ctxs[0];

    /* compile time: the bench kernels, and load+verify of the blob */
    dvm_module *mods[2];
    double t0 = now_ms();
    int ncomp = 200;
    for (int i = 0; i < ncomp; i++) {
        dvm_module *m;
        CHECK(dvm_compile(ctx, SRC, strlen(SRC), "bench.dvk", &m));
        dvm_module_destroy(m);
    }
    double compile_ms = (now_ms() - t0) / ncomp;
    for (int t = 0; t < 2; t++) {
        ctx = ctxs[t];
        CHECK(dvm_compile(ctx, SRC, strlen(SRC), "bench.dvk", &mods[t]));
    }
    ctx = ctxs[0];
    int nkern = dvm_module_kernel_count(mods[0]);
    void *blob;
    size_t blen;
    CHECK(dvm_module_save(ctx, mods[0], &blob, &blen));
    t0 = now_ms();
    int nload = 2000;
    for (int i = 0; i < nload; i++) {
        dvm_module *m;
        CHECK(dvm_load_blob(ctx, blob, blen, "bench.dvb", &m));
        dvm_module_destroy(m);
    }
    double load_us = (now_ms() - t0) / nload * 1e3;
    dvm_free(blob);

    /* data */
    float *x = malloc(sizeof(float) * N), *y = malloc(sizeof(float) * N), *yr = malloc(sizeof(float) * N);
    int *steps = malloc(sizeof(int) * ND), *keys = malloc(sizeof(int) * N);
    float *u = malloc(sizeof(float) * SN * SN);
    for (long i = 0; i < N; i++) {
        x[i] = (float)(urand() * 2 - 1);
        y[i] = (float)(urand() * 2 - 1);
        keys[i] = (int)(urand() * 100000);
    }
    for (long i = 0; i < ND; i++) steps[i] = (int)(urand() * 64);
    for (long i = 0; i < SN * SN; i++) u[i] = (float)urand();

    if (spellings) {
        double best[2][NSPELL];
        for (int t = 0; t < 2; t++) spellings_round_robin(ctxs[t], mods[t], quick ? 3 : 30, x, y, steps, N, ND, best[t]);
        printf("| spelling (%s) | dvm 1T ms | / benchmark spelling 1T | dvm %dT ms | / benchmark spelling %dT |\n",
               quick ? "quick sizes" : "saxpy 2^24, dynloop 2^20 x U[0,64) steps", all, all);
        printf("| --- | --- | --- | --- | --- |\n");
        for (int q = 0; q < NSPELL; q++) {
            const int b = q < 3 ? 0 : 3;
            printf("| %s | %.2f | %.2fx | %.2f | %.2fx |\n", spell_names[q], best[0][q], best[0][q] / best[0][b], best[1][q],
                   best[1][q] / best[1][b]);
        }
        printf("\n(each launched in turn, best of %d rounds; / benchmark spelling: against saxpy or dynloop, 1.00x = as fast)\n",
               quick ? 2 : 29);
        for (int t = 0; t < 2; t++) {
            dvm_module_destroy(mods[t]);
            dvm_context_destroy(ctxs[t]);
        }
        free(x); free(y); free(yr); free(steps); free(keys); free(u);
        return 0;
    }

    /* the six benchmark kernels, then other spellings of saxpy and dynloop: kind[] is the
       benchmark kernel whose data, native reference and checks a row uses */
    enum { NK = 12, NBENCH = 6 };
    row rows[NK];
    memset(rows, 0, sizeof rows);
    const char *names[NK] = {"saxpy", "trans", "dynloop", "stencil", "hist", "dynsin",
                             "saxpy_comm", "saxpy_lit", "dynloop_lit", "dynloop_par", "dynloop_while", "dynloop_comm"};
    const int kinds[NK] = {0, 1, 2, 3, 4, 5, 0, 0, 2, 2, 2, 2};
    const char *labels[NK] = {"saxpy (2^24, memory-bound)", "transcendental (2^22: sin cos exp log tanh)",
                              "dynamic loop (2^20 x U[0,64) steps)", "2-D stencil (2048^2, ndrange)",
                              "atomic histogram (2^24 -> 256 bins)", "dynamic sin loop (2^20 x U[0,64) steps, adstack)",
                              "`y[i] = y[i] + x[i] * a`", "`y[i] = 1.5 * x[i] + y[i]`",
                              "`v = v * 0.97 + 0.01`", "`v = v * rate + c`",
                              "`j = 0` / `while j < steps[i]:` ... `j += 1`", "`v = 0.01 + rate * v`"};
    if (quick) {
        labels[0] = "saxpy (2^20)";
        labels[1] = "transcendental (2^18)";
        labels[2] = "dynamic loop (2^16)";
        labels[3] = "2-D stencil (512^2)";
        labels[4] = "atomic histogram (2^20)";
        labels[5] = "dynamic sin loop (2^16)";
    }
    dvm_launch_stats st;
    double size_share = 0, heap_b = 0, heap_min = 0, size_ms = 0, adj_first = 0;
    int kmax = 0, bad = 0;
    for (long i = 0; i < ND; i++) kmax = steps[i] > kmax ? steps[i] : kmax;
    const long NG = N > SN * SN ? N : SN * SN;
    /* the adjoints' buffers: the input's gradient (native gi, dvm's read back into got) and
       the output's seed (gs: y's random numbers, copied into go for each native run) */
    float *gi = malloc(sizeof(float) * NG), *go = malloc(sizeof(float) * NG), *got = malloc(sizeof(float) * NG);
    float *gs = malloc(sizeof(float) * NG);
    for (long i = 0; i < NG; i++) gs[i] = (float)(urand() * 2 - 1);
    for (int kk = 0; kk < NK; kk++) {
        rows[kk].name = labels[kk];
        if (!wanted(only, names[kk])) continue;
        rows[kk].ran = 1;
        const int kind = kinds[kk];
        for (int t = 0; t < 2; t++) {
            ctx = ctxs[t];
            int nt = t == 0 ? 1 : all;
            const dvm_kernel *k;
            CHECK(dvm_kernel_find(ctx, mods[t], names[kk], &k));
            dvm_args *args;
            CHECK(dvm_args_create(ctx, k, &args));
            dvm_array *A = NULL, *B = NULL, *Cc = NULL;
            double best = 1e30;
            if (kind == 0) {
                A = mk(ctx, DVM_F32, 1, N, 0, x);
                B = mk(ctx, DVM_F32, 1, N, 0, y);
                CHECK(dvm_args_f32(ctx, args, "a", 1.5f));
                CHECK(dvm_args_array(ctx, args, "x", A));
                CHECK(dvm_args_array(ctx, args, "y", B));
                for (int r = 0; r < reps + 1; r++) {
                    memcpy(yr, y, sizeof(float) * N);
                    double s = now_ms();
                    c_saxpy(nt, 1.5f, x, yr, N);
                    if (r && now_ms() - s < best) best = now_ms() - s;
                }
            } else if (kind == 1) {
                A = mk(ctx, DVM_F32, 1, NT, 0, x);
                B = mk(ctx, DVM_F32, 1, NT, 0, NULL);
                CHECK(dvm_args_array(ctx, args, "x", A));
                CHECK(dvm_args_array(ctx, args, "y", B));
                for (int r = 0; r < reps + 1; r++) {
                    double s = now_ms();
                    c_trans(nt, x, yr, NT);
                    if (r && now_ms() - s < best) best = now_ms() - s;
                }
            } else if (kind == 2 || kind == 5) {
                A = mk(ctx, DVM_F32, 1, ND, 0, x);
                B = mk(ctx, DVM_I32, 1, ND, 0, steps);
                Cc = mk(ctx, DVM_F32, 1, ND, 0, NULL);
                CHECK(dvm_args_array(ctx, args, "x", A));
                CHECK(dvm_args_array(ctx, args, "steps", B));
                CHECK(dvm_args_array(ctx, args, "y", Cc));
                CHECK(dvm_args_f32(ctx, args, "rate", 0.97f));
                if (kk == 9) CHECK(dvm_args_f32(ctx, args, "c", 0.01f));
                for (int r = 0; r < reps + 1; r++) {
                    double s = now_ms();
                    if (kind == 2)
                        c_dynloop(nt, x, steps, yr, 0.97f, ND);
                    else
                        c_dynsin(nt, x, steps, yr, 0.97f, ND);
                    if (r && now_ms() - s < best) best = now_ms() - s;
                }
            } else if (kind == 3) {
                A = mk(ctx, DVM_F32, 2, SN, SN, u);
                B = mk(ctx, DVM_F32, 2, SN, SN, NULL);
                CHECK(dvm_args_array(ctx, args, "u", A));
                CHECK(dvm_args_array(ctx, args, "v", B));
                for (int r = 0; r < reps + 1; r++) {
                    double s = now_ms();
                    c_stencil(nt, u, yr, SN, SN);
                    if (r && now_ms() - s < best) best = now_ms() - s;
                }
            } else {
                A = mk(ctx, DVM_I32, 1, N, 0, keys);
                B = mk(ctx, DVM_I32, 1, 256, 0, NULL);
                CHECK(dvm_args_array(ctx, args, "k", A));
                CHECK(dvm_args_array(ctx, args, "h", B));
                int *h = calloc(256, sizeof(int));
                for (int r = 0; r < reps + 1; r++) {
                    double s = now_ms();
                    c_hist(nt, keys, h, N);
                    if (r && now_ms() - s < best) best = now_ms() - s;
                }
                free(h);
            }
            rows[kk].native[t] = best;
            rows[kk].vm[t] = time_dvm(ctx, k, args, DVM_FORWARD, &st);
            /* correctness of the timed launch (single-thread context, saxpy excluded since
               repeated launches accumulate into y) */
            const int loop = kind == 2 || kind == 5, checked = kind == 1 || kind == 3 || loop;
            if (t == 1 && checked) {
                long cnt = kind == 1 ? NT : loop ? ND : SN * SN;
                CHECK(dvm_array_read(ctx, loop ? Cc : B, got, cnt));
                double me = 0;
                for (long i = 0; i < cnt; i++) {
                    double e = fabs((double)got[i] - yr[i]) / (fabs(yr[i]) + 1e-3);
                    if (e > me) me = e;
                }
                rows[kk].maxerr = me;
            }
            if (kind != 4) {
                /* the adjoint (hist has none: i32 arrays carry no gradient). Its first launch,
                   the gradient from zero with the seed in the output's gradient, is checked
                   against the native adjoint's; then both are timed (the gradients accumulate,
                   and the seeds are 0 after the first run, in both) */
                const long cnt = kind == 0 ? N : kind == 1 ? NT : loop ? ND : SN * SN;
                const char *in = kind == 3 ? "u" : "x", *out = kind == 3 ? "v" : "y";
                dvm_array *GI = mk(ctx, DVM_F32, kind == 3 ? 2 : 1, kind == 3 ? SN : cnt, kind == 3 ? SN : 0, NULL);
                dvm_array *GO = mk(ctx, DVM_F32, kind == 3 ? 2 : 1, kind == 3 ? SN : cnt, kind == 3 ? SN : 0, gs);
                CHECK(dvm_args_grad(ctx, args, in, GI));
                CHECK(dvm_args_grad(ctx, args, out, GO));
                dvm_launch_opts o = {DVM_ADJOINT, 0, 0, 0};
                double s = now_ms();
                CHECK(dvm_launch(ctx, k, args, &o, &st));
                if (kk == 5 && t == 1) {
                    /* for the sin loop (its v on an adstack): the sizer's share of the first
                       (uncached) adjoint launch, and the heap against its minimum */
                    adj_first = now_ms() - s;
                    size_ms = st.size_ms;
                    size_share = st.size_ms / adj_first;
                    heap_b = (double)st.heap_bytes;
                    heap_min = (double)st.heap_min_bytes;
                }
                CHECK(dvm_array_read(ctx, GI, got, cnt));
                const float rate = 0.97f;
                best = 1e30;
                for (int r = 0; r < (kk < NBENCH ? reps + 1 : 1); r++) {
                    if (r == 0) {
                        memset(gi, 0, sizeof(float) * cnt);
                        memcpy(go, gs, sizeof(float) * cnt);
                        if (kind == 0) memcpy(yr, y, sizeof(float) * N);
                    }
                    double s1 = now_ms();
                    switch (kind) {
                    case 0: c_saxpy_adj(nt, 1.5f, x, yr, gi, go, cnt); break;
                    case 1: c_trans_adj(nt, x, yr, gi, go, cnt); break;
                    case 2: c_dynloop_adj(nt, x, steps, yr, gi, go, rate, cnt); break;
                    case 3: c_stencil_adj(nt, u, yr, gi, go, SN, SN); break;
                    default: c_dynsin_adj(nt, x, steps, yr, gi, go, rate, cnt, kmax); break;
                    }
                    const double el = now_ms() - s1;
                    if (r == 0) {
                        double me = 0;
                        for (long i = 0; i < cnt; i++) {
                            double e = fabs((double)got[i] - gi[i]) / (fabs(gi[i]) + 1e-3);
                            if (e > me) me = e;
                        }
                        if (me > rows[kk].adj_err) rows[kk].adj_err = me;
                    } else if (el < best)
                        best = el;
                }
                rows[kk].adj_native[t] = kk < NBENCH ? best : 0;
                rows[kk].adj_vm[t] = time_dvm(ctx, k, args, DVM_ADJOINT, &st);
                if (t == 1) rows[kk].adj_over_fwd = rows[kk].adj_vm[t] / rows[kk].vm[t];
                dvm_array_destroy(GI);
                dvm_array_destroy(GO);
            }
            dvm_args_destroy(args);
            dvm_array_destroy(A);
            dvm_array_destroy(B);
            dvm_array_destroy(Cc);
        }
    }
    /* dvm's gradients against the native adjoints': float rounding in another order only */
    const double adj_tol = 1e-3;
    for (int kk = 0; kk < NK; kk++)
        if (rows[kk].ran && rows[kk].adj_err > adj_tol) {
            fprintf(stderr, "bench_cpu: %s: dvm's adjoint differs from the native one by %.2e (relative), over %.0e\n",
                    names[kk], rows[kk].adj_err, adj_tol);
            bad = 1;
        }

    printf("| kernel | native 1T ms | dvm 1T ms | native/dvm 1T | native %dT ms | dvm %dT ms | native/dvm %dT | adjoint/forward | max rel err |\n",
           all, all, all);
    printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (int kk = 0; kk < NBENCH; kk++) {
        row *r = &rows[kk];
        if (!r->ran) continue;
        printf("| %s | %.2f | %.2f | %.2fx | %.2f | %.2f | %.2fx | ", r->name, r->native[0], r->vm[0],
               r->native[0] / r->vm[0], r->native[1], r->vm[1], r->native[1] / r->vm[1]);
        if (r->adj_over_fwd > 0) printf("%.2f | ", r->adj_over_fwd); else printf("- | ");
        if (r->maxerr > 0 || kk == 1 || kk == 2 || kk == 3 || kk == 5) printf("%.1e |\n", r->maxerr); else printf("- |\n");
        if (r->adj_vm[0] > 0)
            printf("| %s adjoint (forward + reverse) | %.2f | %.2f | %.2fx | %.2f | %.2f | %.2fx | - | %.1e |\n", names[kk],
                   r->adj_native[0], r->adj_vm[0], r->adj_native[0] / r->adj_vm[0], r->adj_native[1], r->adj_vm[1],
                   r->adj_native[1] / r->adj_vm[1], r->adj_err);
    }
    printf("\n(native/dvm: 1.00x = as fast as gcc -O2; 0.25x = 4 times slower. The adjoint rows: hand-written C\n"
           "adjoints of the same math, forward included as in dvm's adjoint launch; adjoint/forward: dvm's, %d threads;\n"
           "an adjoint row's max rel err: dvm's input gradient against the native one)\n\n", all);
    /* the same math spelled otherwise: each row against the benchmark's spelling (its kind) */
    int any_other = 0;
    for (int kk = NBENCH; kk < NK; kk++) any_other |= rows[kk].ran && rows[kinds[kk]].ran;
    if (any_other) {
        printf("| other spelling | of | dvm 1T ms | / benchmark spelling 1T | dvm %dT ms | / benchmark spelling %dT | adjoint/forward | max rel err |\n", all, all);
        printf("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
        for (int kk = NBENCH; kk < NK; kk++) {
            row *r = &rows[kk], *b = &rows[kinds[kk]];
            if (!r->ran || !b->ran) continue;
            printf("| %s | %s | %.2f | %.2fx | %.2f | %.2fx | ", r->name, names[kinds[kk]], r->vm[0], r->vm[0] / b->vm[0],
                   r->vm[1], r->vm[1] / b->vm[1]);
            if (r->adj_over_fwd > 0) printf("%.2f | ", r->adj_over_fwd); else printf("- | ");
            if (kinds[kk] == 2) printf("%.1e |\n", r->maxerr); else printf("- |\n");
        }
        printf("\n(/ benchmark spelling: the time against the benchmark kernel's; 1.00x = as fast)\n\n");
    }
    printf("| figure | value |\n| --- | --- |\n");
    printf("| compile, %d kernels in one source (mean of %d) | %.3f ms (%.3f ms per kernel) |\n", nkern, ncomp, compile_ms, compile_ms / nkern);
    printf("| blob load + verify (mean of %d) | %.1f us |\n", nload, load_us);
    if (rows[5].ran) {
        printf("| sizer + max-reducer, first adjoint of the dynamic sin loop (%ld elements) | %.3f ms of %.3f ms = %.2f%% |\n", ND, size_ms, adj_first, 100 * size_share);
        printf("| adstack heap for that launch | %.0f bytes (exact per-thread minimum %.0f bytes) |\n", heap_b, heap_min);
    }
    free(gi); free(go); free(got); free(gs);

    for (int t = 0; t < 2; t++) {
        dvm_module_destroy(mods[t]);
        dvm_context_destroy(ctxs[t]);
    }
    free(x); free(y); free(yr); free(steps); free(keys); free(u);
    return bad;
}
