/* bench_cpu.c: dvm's CPU backend against native C (gcc -O2, the same math), measured in the
 * same run, on 1 thread and on all threads. Also: compile time per kernel, blob load+verify
 * time, adjoint/forward time, the sizer's share of adjoint time, heap bytes vs the minimum.
 * Prints a markdown report to stdout. Usage: bench_cpu [--quick] [--spellings]
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
} row;

static dvm_array *mk(dvm_context *ctx, dvm_dtype t, int rank, int64_t d0, int64_t d1, const void *data) {
    int64_t shape[2] = {d0, d1};
    dvm_array *a;
    CHECK(dvm_array_create(ctx, t, rank, shape, &a));
    if (data) CHECK(dvm_array_write(ctx, a, data, rank == 1 ? d0 : d0 * d1));
    return a;
}

int main(int argc, char **argv) {
    int quick = 0, spellings = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--spellings")) spellings = 1;
        else {
            fprintf(stderr, "bench_cpu: unknown argument '%s' (usage: bench_cpu [--quick] [--spellings])\n", argv[i]);
            return 2;
        }
    }
    long N = quick ? (1L << 20) : (1L << 24);
    long NT = quick ? (1L << 18) : (1L << 22);
    long ND = quick ? (1L << 16) : (1L << 20);
    long SN = quick ? 512 : 2048;
    if (quick) reps = 2;
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
    for (int kk = 0; kk < NK; kk++) {
        rows[kk].name = labels[kk];
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
                float *got = malloc(sizeof(float) * cnt);
                CHECK(dvm_array_read(ctx, loop ? Cc : B, got, cnt));
                double me = 0;
                for (long i = 0; i < cnt; i++) {
                    double e = fabs((double)got[i] - yr[i]) / (fabs(yr[i]) + 1e-3);
                    if (e > me) me = e;
                }
                rows[kk].maxerr = me;
                free(got);
            }
            if (t == 1 && checked) {
                /* adjoint over forward; for the sin loop (its v on an adstack) also the sizer's
                   share of the first (uncached) adjoint launch and the heap against its minimum */
                dvm_launch_opts o = {DVM_ADJOINT, 0, 0, 0};
                if (kk == 5) {
                    double s = now_ms();
                    CHECK(dvm_launch(ctx, k, args, &o, &st));
                    adj_first = now_ms() - s;
                    size_ms = st.size_ms;
                    size_share = st.size_ms / adj_first;
                    heap_b = (double)st.heap_bytes;
                    heap_min = (double)st.heap_min_bytes;
                }
                rows[kk].adj_over_fwd = time_dvm(ctx, k, args, DVM_ADJOINT, &st) / rows[kk].vm[t];
            }
            dvm_args_destroy(args);
            dvm_array_destroy(A);
            dvm_array_destroy(B);
            dvm_array_destroy(Cc);
        }
    }

    printf("| kernel | native 1T ms | dvm 1T ms | native/dvm 1T | native %dT ms | dvm %dT ms | native/dvm %dT | adjoint/forward | max rel err |\n",
           all, all, all);
    printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (int kk = 0; kk < NBENCH; kk++) {
        row *r = &rows[kk];
        printf("| %s | %.2f | %.2f | %.2fx | %.2f | %.2f | %.2fx | ", r->name, r->native[0], r->vm[0],
               r->native[0] / r->vm[0], r->native[1], r->vm[1], r->native[1] / r->vm[1]);
        if (r->adj_over_fwd > 0) printf("%.2f | ", r->adj_over_fwd); else printf("- | ");
        if (r->maxerr > 0 || kk == 1 || kk == 2 || kk == 3 || kk == 5) printf("%.1e |\n", r->maxerr); else printf("- |\n");
    }
    printf("\n(native/dvm: 1.00x = as fast as gcc -O2; 0.25x = 4 times slower)\n\n");
    /* the same math spelled otherwise: each row against the benchmark's spelling (its kind) */
    printf("| other spelling | of | dvm 1T ms | / benchmark spelling 1T | dvm %dT ms | / benchmark spelling %dT | adjoint/forward | max rel err |\n", all, all);
    printf("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (int kk = NBENCH; kk < NK; kk++) {
        row *r = &rows[kk], *b = &rows[kinds[kk]];
        printf("| %s | %s | %.2f | %.2fx | %.2f | %.2fx | ", r->name, names[kinds[kk]], r->vm[0], r->vm[0] / b->vm[0],
               r->vm[1], r->vm[1] / b->vm[1]);
        if (r->adj_over_fwd > 0) printf("%.2f | ", r->adj_over_fwd); else printf("- | ");
        if (kinds[kk] == 2) printf("%.1e |\n", r->maxerr); else printf("- |\n");
    }
    printf("\n(/ benchmark spelling: the time against the benchmark kernel's; 1.00x = as fast)\n\n");
    printf("| figure | value |\n| --- | --- |\n");
    printf("| compile, %d kernels in one source (mean of %d) | %.3f ms (%.3f ms per kernel) |\n", nkern, ncomp, compile_ms, compile_ms / nkern);
    printf("| blob load + verify (mean of %d) | %.1f us |\n", nload, load_us);
    printf("| sizer + max-reducer, first adjoint of the dynamic sin loop (%ld elements) | %.3f ms of %.3f ms = %.2f%% |\n", ND, size_ms, adj_first, 100 * size_share);
    printf("| adstack heap for that launch | %.0f bytes (exact per-thread minimum %.0f bytes) |\n", heap_b, heap_min);

    for (int t = 0; t < 2; t++) {
        dvm_module_destroy(mods[t]);
        dvm_context_destroy(ctxs[t]);
    }
    free(x); free(y); free(yr); free(steps); free(keys); free(u);
    return 0;
}
