// cuda_native.cu: dvm's CUDA backend against native nvcc kernels of the same math, timed
// with CUDA events in the same process (dvm launches on the legacy default stream of the
// same primary context, so events bracket them exactly; the dvm figure is the whole
// dvm_launch: table upload, tasks, the one error readback; another backend than CUDA is timed
// with the host clock, see time_host). Prints a markdown table.
//   bench_cuda [--quick]
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <vector>
#include <algorithm>
#include <string>

#include "dvm.h"

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)
#define DV(x) do { dvm_status s_ = (x); if (s_ != DVM_OK) { fprintf(stderr, "%s: %s\n", #x, dvm_errmsg(ctx)); exit(1); } } while (0)

#include "bench/bench_kernels.h"

// ---- native kernels ----
__global__ void k_saxpy(float a, const float *x, float *y, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) y[i] = a * x[i] + y[i];
}
__device__ float f_trans(float v) { return sinf(v) * cosf(v) + expf(-v * v) + logf(1.0f + v * v) + tanhf(v); }
__global__ void k_trans(const float *x, float *y, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) y[i] = f_trans(x[i]);
}
__global__ void k_trans_adj(const float *x, const float *gy, float *gx, float *y, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        float v = x[i], s = sinf(v), c = cosf(v), t = tanhf(v), e = expf(-v * v);
        y[i] = s * c + e + logf(1.0f + v * v) + t;  // the forward, as dvm's adjoint launch runs it
        float d = c * c - s * s - 2.0f * v * e + 2.0f * v / (1.0f + v * v) + (1.0f - t * t);
        gx[i] += gy[i] * d;
    }
}
__global__ void k_dynloop(const float *x, const int *steps, float *y, float rate, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        float v = x[i];
        for (int s = 0; s < steps[i]; s++) v = v * rate + 0.01f;
        y[i] = v;
    }
}
// hand-written adjoint: the forward, then gx += gy * rate^steps (dv_out/dv_in of the loop)
__global__ void k_dynloop_adj(const float *x, const int *steps, float *y, const float *gy, float *gx, float rate, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        float v = x[i], g = gy[i];
        int k = steps[i];
        for (int s = 0; s < k; s++) v = v * rate + 0.01f;
        y[i] = v;
        for (int s = 0; s < k; s++) g *= rate;
        gx[i] += g;
    }
}
__global__ void k_dynsin(const float *x, const int *steps, float *y, float rate, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        float v = x[i];
        for (int s = 0; s < steps[i]; s++) v = sinf(v) * rate + 0.01f;
        y[i] = v;
    }
}
// hand-written adjoint with a tape, as an adstack holds it: the forward stores each step's
// v at tape[s * n + i] (consecutive threads, consecutive words), the reverse reads them back
__global__ void k_dynsin_adj(const float *x, const int *steps, float *y, const float *gy, float *gx, float *tape,
                             float rate, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        float v = x[i];
        int k = steps[i];
        for (int s = 0; s < k; s++) {
            tape[s * n + i] = v;
            v = sinf(v) * rate + 0.01f;
        }
        y[i] = v;
        float g = gy[i];
        for (int s = k - 1; s >= 0; s--) g *= cosf(tape[s * n + i]) * rate;
        gx[i] += g;
    }
}
__device__ bool interior(long i, long j, long n, long m) { return i > 0 && i < n - 1 && j > 0 && j < m - 1; }
__global__ void k_stencil(const float *u, float *v, long n, long m) {
    for (long p = blockIdx.x * (long)blockDim.x + threadIdx.x; p < n * m; p += (long)gridDim.x * blockDim.x) {
        long i = p / m, j = p % m;
        v[p] = interior(i, j, n, m) ? 0.25f * (u[p - m] + u[p + m] + u[p - 1] + u[p + 1]) - u[p] : u[p];
    }
}
// adjoint as a gather (no atomics): forward first, as dvm's adjoint launch does
__global__ void k_stencil_adj(const float *u, float *v, const float *gv, float *gu, long n, long m) {
    for (long p = blockIdx.x * (long)blockDim.x + threadIdx.x; p < n * m; p += (long)gridDim.x * blockDim.x) {
        long i = p / m, j = p % m;
        bool in = interior(i, j, n, m);
        v[p] = in ? 0.25f * (u[p - m] + u[p + m] + u[p - 1] + u[p + 1]) - u[p] : u[p];
        float acc = in ? -gv[p] : gv[p];
        if (i > 0 && interior(i - 1, j, n, m)) acc += 0.25f * gv[p - m];
        if (i < n - 1 && interior(i + 1, j, n, m)) acc += 0.25f * gv[p + m];
        if (j > 0 && interior(i, j - 1, n, m)) acc += 0.25f * gv[p - 1];
        if (j < m - 1 && interior(i, j + 1, n, m)) acc += 0.25f * gv[p + 1];
        gu[p] += acc;
    }
}
__global__ void k_hist(const int *k, int *h, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        int b = k[i] % 256;
        if (b < 0) b += 256;
        atomicAdd(&h[b], 1);
    }
}

static cudaEvent_t e0, e1;
static int REPS = 20;
static int grid_blocks;
static double median(std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }

template <class F> static double time_it(F f) {
    f();
    CK(cudaDeviceSynchronize());
    std::vector<double> t;
    for (int r = 0; r < REPS; r++) {
        CK(cudaEventRecord(e0));
        f();
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        t.push_back(ms);
    }
    CK(cudaGetLastError());
    return median(t);
}

/* Another backend than CUDA (DVM_BENCH_BACKEND=vulkan) is timed with the host clock: CUDA
   events around a call that submits no CUDA work measure the two APIs' interplay (0.15-0.35 ms
   more than the same launch in a process without CUDA), not the launch. dvm_launch returns
   when the launch has finished, so the host clock times all of it. */
static bool host_clock;
static double host_ms() {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
template <class F> static double time_host(F f) {
    f();
    std::vector<double> t;
    for (int r = 0; r < REPS; r++) {
        double t0 = host_ms();
        f();
        t.push_back(host_ms() - t0);
    }
    return median(t);
}

static double relerr(const float *a, const float *b, long n) {
    double num = 0, den = 0;
    for (long i = 0; i < n; i++) {
        double d = (double)a[i] - b[i];
        if (a[i] != a[i] || b[i] != b[i]) return INFINITY;
        num += d * d;
        den += (double)b[i] * b[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

static dvm_context *ctx;
static dvm_module *mod; /* the module of the kernel being measured */
/* Each kernel is compiled on its own, so that a compiler failure costs only its row. */
static bool use_kernel(const char *name) {
    /* DVM_BENCH_ONLY=name: measure that kernel alone (for profiling one launch) */
    const char *only = getenv("DVM_BENCH_ONLY");
    if (only && strcmp(only, name)) return false;
    char head[64];
    snprintf(head, sizeof head, "kernel %s(", name);
    const char *b = strstr(SRC, head);
    const char *e = b ? strstr(b + 1, "\nkernel ") : NULL;
    std::string src = b ? std::string(b, e ? (size_t)(e - b + 1) : strlen(b)) : std::string();
    if (mod) dvm_module_destroy(mod);
    mod = NULL;
    if (dvm_compile(ctx, src.c_str(), src.size(), "bench.dvk", &mod) != DVM_OK) {
        printf("| %s | - | - | - | - | compile failed: %s | - | - |\n", name, dvm_errmsg(ctx));
        mod = NULL;
        return false;
    }
    return true;
}
static dvm_array *mk(dvm_dtype t, int rank, long d0, long d1, const void *host) {
    int64_t shape[2] = {d0, d1};
    dvm_array *a;
    DV(dvm_array_create(ctx, t, rank, shape, &a));
    if (host) DV(dvm_array_write(ctx, a, host, rank == 1 ? d0 : d0 * d1));
    return a;
}
static double time_dvm(const char *kname, dvm_args *args, dvm_mode mode, double *exec_ms) {
    const dvm_kernel *k;
    DV(dvm_kernel_find(ctx, mod, kname, &k));
    dvm_launch_opts o;
    memset(&o, 0, sizeof o);
    o.mode = mode;
    dvm_launch_stats st;
    std::vector<double> ex; /* each launch's exec_ms: the column is their median too */
    auto f = [&] {
        DV(dvm_launch(ctx, k, args, &o, &st));
        ex.push_back(st.exec_ms);
    };
    double t = host_clock ? time_host(f) : time_it(f);
    if (exec_ms) *exec_ms = median(ex);
    return t;
}
static dvm_args *args_for(const char *kname) {
    const dvm_kernel *k;
    DV(dvm_kernel_find(ctx, mod, kname, &k));
    dvm_args *a;
    DV(dvm_args_create(ctx, k, &a));
    return a;
}

int main(int argc, char **argv) {
    int quick = argc > 1 && !strcmp(argv[1], "--quick");
    const long N = quick ? (1L << 20) : (1L << 26), ND = quick ? (1L << 16) : (1L << 22);
    const long SN = quick ? 512 : 8192;
    if (quick) REPS = 3;
    /* DVM_BENCH_REPS=k: k timed launches a row (default 20), for comparing builds */
    if (getenv("DVM_BENCH_REPS") && atoi(getenv("DVM_BENCH_REPS")) > 0) REPS = atoi(getenv("DVM_BENCH_REPS"));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    CK(cudaFree(0));  // the primary context, shared with dvm's driver-API backend
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    int nb;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, k_saxpy, 256, 0));
    grid_blocks = nb * prop.multiProcessorCount;
    dvm_context_opts co;
    memset(&co, 0, sizeof co);
    /* DVM_BENCH_BACKEND=vulkan times dvm's Vulkan backend against the same native kernels */
    co.backend = getenv("DVM_BENCH_BACKEND") ? getenv("DVM_BENCH_BACKEND") : "cuda";
    host_clock = strcmp(co.backend, "cuda") != 0;
    if (dvm_context_create(&co, &ctx) != DVM_OK) { fprintf(stderr, "bench_cuda: %s\n", ctx ? dvm_errmsg(ctx) : "no context"); return 1; }
    printf("device: %s; dvm backend %s: %s\n", prop.name, co.backend, dvm_context_device(ctx));

    // device copy bandwidth: bytes read + written
    float *d0, *d1, *d2, *d3;
    CK(cudaMalloc(&d0, N * 4)); CK(cudaMalloc(&d1, N * 4)); CK(cudaMalloc(&d2, N * 4)); CK(cudaMalloc(&d3, N * 4));
    double tcopy = time_it([&] { CK(cudaMemcpy(d1, d0, N * 4, cudaMemcpyDeviceToDevice)); });
    double copy_bw = 2.0 * N * 4 / (tcopy * 1e-3) / 1e9;
    printf("device copy bandwidth: %.0f GB/s (cudaMemcpy D2D, %ld MiB, read+write)\n\n", copy_bw, N * 4 >> 20);

    std::vector<float> x(N), y(N), gy(N), out(N), ref(N);
    std::vector<int> steps(ND), keys(N);
    unsigned s = 12345;
    auto rnd = [&] { s = s * 1664525u + 1013904223u; return (s >> 8) / 16777216.0f; };
    for (long i = 0; i < N; i++) { x[i] = rnd() * 2 - 1; y[i] = rnd(); gy[i] = rnd() - 0.5f; keys[i] = (int)(rnd() * 100000) - 5000; }
    /* DVM_BENCH_STEPS=k: every trip count k (no divergence between threads; for measuring) */
    const char *fixed = getenv("DVM_BENCH_STEPS");
    for (long i = 0; i < ND; i++) steps[i] = fixed ? atoi(fixed) : (int)(rnd() * 64);
    if (fixed) printf("dynloop: every trip count %d (DVM_BENCH_STEPS)\n", atoi(fixed));

    printf("| kernel | size | native ms | dvm ms (launch) | dvm exec ms | dvm/native speed | dvm GB/s (%% of copy) | rel. err |\n");
    printf("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
    auto row = [&](const char *name, const char *size, double tn, double td, double te, double bytes, double err) {
        printf("| %s | %s | %.3f | %.3f | %.3f | %.2fx | %s | %.1e |\n", name, size, tn, td, te, tn / td,
               bytes > 0 ? (std::to_string((int)(bytes / (td * 1e-3) / 1e9)) + " (" + std::to_string((int)(100 * bytes / (td * 1e-3) / 1e9 / copy_bw)) + "%)").c_str() : "-",
               err);
        fflush(stdout);
    };
    char sz[64];
    double te;
    // saxpy, and its other spellings (bench_kernels.h: the same math, a = 1.5)
    for (const char *kname : {"saxpy", "saxpy_comm", "saxpy_lit"}) {
        if (!use_kernel(kname)) continue;
        CK(cudaMemcpy(d0, x.data(), N * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(d1, y.data(), N * 4, cudaMemcpyHostToDevice));
        k_saxpy<<<grid_blocks, 256>>>(1.5f, d0, d1, N);
        CK(cudaMemcpy(ref.data(), d1, N * 4, cudaMemcpyDeviceToHost));
        double tn = time_it([&] { k_saxpy<<<grid_blocks, 256>>>(1.5f, d0, d1, N); });
        dvm_array *X = mk(DVM_F32, 1, N, 0, x.data()), *Y = mk(DVM_F32, 1, N, 0, y.data());
        dvm_args *a = args_for(kname);
        DV(dvm_args_f32(ctx, a, "a", 1.5f)); DV(dvm_args_array(ctx, a, "x", X)); DV(dvm_args_array(ctx, a, "y", Y));
        const dvm_kernel *k; DV(dvm_kernel_find(ctx, mod, kname, &k));
        dvm_launch_opts o; memset(&o, 0, sizeof o);
        DV(dvm_launch(ctx, k, a, &o, NULL));
        DV(dvm_array_read(ctx, Y, out.data(), N));
        double err = relerr(out.data(), ref.data(), N);
        double td = time_dvm(kname, a, DVM_FORWARD, &te);
        snprintf(sz, sizeof sz, "2^%d", (int)log2((double)N));
        row(!strcmp(kname, "saxpy") ? "saxpy" : !strcmp(kname, "saxpy_comm") ? "saxpy as y[i] + x[i] * a" : "saxpy as 1.5 * x[i] + y[i]",
            sz, tn, td, te, 12.0 * N, err);
        dvm_args_destroy(a); dvm_array_destroy(X); dvm_array_destroy(Y);
    }
    // trans + its adjoint
    snprintf(sz, sizeof sz, "2^%d", (int)log2((double)N));
    if (use_kernel("trans")) {
        CK(cudaMemcpy(d0, x.data(), N * 4, cudaMemcpyHostToDevice));
        k_trans<<<grid_blocks, 256>>>(d0, d1, N);
        CK(cudaMemcpy(ref.data(), d1, N * 4, cudaMemcpyDeviceToHost));
        double tn = time_it([&] { k_trans<<<grid_blocks, 256>>>(d0, d1, N); });
        dvm_array *X = mk(DVM_F32, 1, N, 0, x.data()), *Y = mk(DVM_F32, 1, N, 0, NULL);
        dvm_args *a = args_for("trans");
        DV(dvm_args_array(ctx, a, "x", X)); DV(dvm_args_array(ctx, a, "y", Y));
        double td = time_dvm("trans", a, DVM_FORWARD, &te);
        DV(dvm_array_read(ctx, Y, out.data(), N));
        row("trans (5 transcendentals)", sz, tn, td, te, 8.0 * N, relerr(out.data(), ref.data(), N));
        // adjoint: gx += gy * f'(x)
        CK(cudaMemcpy(d2, gy.data(), N * 4, cudaMemcpyHostToDevice));
        CK(cudaMemset(d3, 0, N * 4));
        k_trans_adj<<<grid_blocks, 256>>>(d0, d2, d3, d1, N);
        CK(cudaMemcpy(ref.data(), d3, N * 4, cudaMemcpyDeviceToHost));
        double tna = time_it([&] { k_trans_adj<<<grid_blocks, 256>>>(d0, d2, d3, d1, N); });
        dvm_array *GX = mk(DVM_F32, 1, N, 0, NULL), *GY = mk(DVM_F32, 1, N, 0, gy.data());
        DV(dvm_args_grad(ctx, a, "x", GX)); DV(dvm_args_grad(ctx, a, "y", GY));
        const dvm_kernel *k; DV(dvm_kernel_find(ctx, mod, "trans", &k));
        dvm_launch_opts o; memset(&o, 0, sizeof o); o.mode = DVM_ADJOINT;
        DV(dvm_launch(ctx, k, a, &o, NULL));
        DV(dvm_array_read(ctx, GX, out.data(), N));
        double err = relerr(out.data(), ref.data(), N);
        double tda = time_dvm("trans", a, DVM_ADJOINT, &te);
        row("trans adjoint (fwd+rev)", sz, tna, tda, te, 16.0 * N, err);
        dvm_args_destroy(a); dvm_array_destroy(X); dvm_array_destroy(Y); dvm_array_destroy(GX); dvm_array_destroy(GY);
    }
    // the two data-dependent loops and their adjoints: the same arrays and trip counts; the
    // native launches come in as lambdas (dynsin's adjoint also gets a tape of 64 steps); rate
    // is the loop's (the dynloop spellings with a literal have 0.97, and dynloop_par's c is 0.01)
    auto loop_rows = [&](const char *kname, const char *flabel, const char *alabel, float rate, auto native_fwd, auto native_adj) {
        int *ds; CK(cudaMalloc(&ds, ND * 4));
        CK(cudaMemcpy(d0, x.data(), ND * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(ds, steps.data(), ND * 4, cudaMemcpyHostToDevice));
        native_fwd(ds);
        CK(cudaMemcpy(ref.data(), d1, ND * 4, cudaMemcpyDeviceToHost));
        double tn = time_it([&] { native_fwd(ds); });
        dvm_array *X = mk(DVM_F32, 1, ND, 0, x.data()), *S = mk(DVM_I32, 1, ND, 0, steps.data()), *Y = mk(DVM_F32, 1, ND, 0, NULL);
        dvm_args *a = args_for(kname);
        DV(dvm_args_array(ctx, a, "x", X)); DV(dvm_args_array(ctx, a, "steps", S)); DV(dvm_args_array(ctx, a, "y", Y));
        DV(dvm_args_f32(ctx, a, "rate", rate));
        if (!strcmp(kname, "dynloop_par")) DV(dvm_args_f32(ctx, a, "c", 0.01f));
        double td = time_dvm(kname, a, DVM_FORWARD, &te);
        DV(dvm_array_read(ctx, Y, out.data(), ND));
        snprintf(sz, sizeof sz, "2^%d, 0..63 steps", (int)log2((double)ND));
        row(flabel, sz, tn, td, te, 0, relerr(out.data(), ref.data(), ND));
        CK(cudaMemcpy(d2, gy.data(), ND * 4, cudaMemcpyHostToDevice));
        CK(cudaMemset(d3, 0, ND * 4));
        native_adj(ds);
        CK(cudaMemcpy(ref.data(), d3, ND * 4, cudaMemcpyDeviceToHost));
        double tna = time_it([&] { native_adj(ds); });
        dvm_array *GX = mk(DVM_F32, 1, ND, 0, NULL), *GY = mk(DVM_F32, 1, ND, 0, gy.data());
        DV(dvm_args_grad(ctx, a, "x", GX)); DV(dvm_args_grad(ctx, a, "y", GY));
        const dvm_kernel *k; DV(dvm_kernel_find(ctx, mod, kname, &k));
        dvm_launch_opts o; memset(&o, 0, sizeof o); o.mode = DVM_ADJOINT;
        DV(dvm_launch(ctx, k, a, &o, NULL));
        DV(dvm_array_read(ctx, GX, out.data(), ND));
        double erra = relerr(out.data(), ref.data(), ND);
        double tda = time_dvm(kname, a, DVM_ADJOINT, &te);
        row(alabel, sz, tna, tda, te, 0, erra);
        dvm_args_destroy(a); dvm_array_destroy(X); dvm_array_destroy(S); dvm_array_destroy(Y);
        dvm_array_destroy(GX); dvm_array_destroy(GY);
        CK(cudaFree(ds));
    };
    if (use_kernel("dynloop"))
        loop_rows("dynloop", "dynloop (v = v*rate + 0.01)", "dynloop adjoint (fwd+rev, no stack)", 0.99f,
                  [&](int *ds) { k_dynloop<<<grid_blocks, 256>>>(d0, ds, d1, 0.99f, ND); },
                  [&](int *ds) { k_dynloop_adj<<<grid_blocks, 256>>>(d0, ds, d1, d2, d3, 0.99f, ND); });
    // dynloop's other spellings (bench_kernels.h), each against the same native kernel
    {
        const char *spell[][3] = {{"dynloop_lit", "dynloop as v = v*0.97 + 0.01", "dynloop_lit adjoint"},
                                  {"dynloop_par", "dynloop as v = v*rate + c", "dynloop_par adjoint"},
                                  {"dynloop_while", "dynloop as a while with a counter", "dynloop_while adjoint"},
                                  {"dynloop_comm", "dynloop as v = 0.01 + rate*v", "dynloop_comm adjoint"}};
        for (auto &sp : spell) {
            if (!use_kernel(sp[0])) continue;
            const float r = !strcmp(sp[0], "dynloop_lit") ? 0.97f : 0.99f;
            loop_rows(sp[0], sp[1], sp[2], r,
                      [&](int *ds) { k_dynloop<<<grid_blocks, 256>>>(d0, ds, d1, r, ND); },
                      [&](int *ds) { k_dynloop_adj<<<grid_blocks, 256>>>(d0, ds, d1, d2, d3, r, ND); });
        }
    }
    if (use_kernel("dynsin")) {
        float *tape; CK(cudaMalloc(&tape, 64L * ND * 4));
        loop_rows("dynsin", "dynsin (v = sin(v)*rate + 0.01)", "dynsin adjoint (fwd+rev, adstack)", 0.99f,
                  [&](int *ds) { k_dynsin<<<grid_blocks, 256>>>(d0, ds, d1, 0.99f, ND); },
                  [&](int *ds) { k_dynsin_adj<<<grid_blocks, 256>>>(d0, ds, d1, d2, d3, tape, 0.99f, ND); });
        CK(cudaFree(tape));
    }
    // stencil + its adjoint
    if (use_kernel("stencil")) {
        long NN = SN * SN;
        CK(cudaMemcpy(d0, x.data(), NN * 4, cudaMemcpyHostToDevice));
        k_stencil<<<grid_blocks, 256>>>(d0, d1, SN, SN);
        CK(cudaMemcpy(ref.data(), d1, NN * 4, cudaMemcpyDeviceToHost));
        double tn = time_it([&] { k_stencil<<<grid_blocks, 256>>>(d0, d1, SN, SN); });
        dvm_array *U = mk(DVM_F32, 2, SN, SN, x.data()), *V = mk(DVM_F32, 2, SN, SN, NULL);
        dvm_args *a = args_for("stencil");
        DV(dvm_args_array(ctx, a, "u", U)); DV(dvm_args_array(ctx, a, "v", V));
        double td = time_dvm("stencil", a, DVM_FORWARD, &te);
        DV(dvm_array_read(ctx, V, out.data(), NN));
        snprintf(sz, sizeof sz, "%ldx%ld", SN, SN);
        row("stencil 5-point", sz, tn, td, te, 8.0 * NN, relerr(out.data(), ref.data(), NN));
        CK(cudaMemcpy(d2, gy.data(), NN * 4, cudaMemcpyHostToDevice));
        CK(cudaMemset(d3, 0, NN * 4));
        k_stencil_adj<<<grid_blocks, 256>>>(d0, d1, d2, d3, SN, SN);
        CK(cudaMemcpy(ref.data(), d3, NN * 4, cudaMemcpyDeviceToHost));
        double tna = time_it([&] { k_stencil_adj<<<grid_blocks, 256>>>(d0, d1, d2, d3, SN, SN); });
        dvm_array *GU = mk(DVM_F32, 2, SN, SN, NULL), *GV = mk(DVM_F32, 2, SN, SN, gy.data());
        DV(dvm_args_grad(ctx, a, "u", GU)); DV(dvm_args_grad(ctx, a, "v", GV));
        const dvm_kernel *k; DV(dvm_kernel_find(ctx, mod, "stencil", &k));
        dvm_launch_opts o; memset(&o, 0, sizeof o); o.mode = DVM_ADJOINT;
        DV(dvm_launch(ctx, k, a, &o, NULL));
        DV(dvm_array_read(ctx, GU, out.data(), NN));
        double err = relerr(out.data(), ref.data(), NN);
        double tda = time_dvm("stencil", a, DVM_ADJOINT, &te);
        row("stencil adjoint (fwd+rev)", sz, tna, tda, te, 16.0 * NN, err);
        dvm_args_destroy(a); dvm_array_destroy(U); dvm_array_destroy(V); dvm_array_destroy(GU); dvm_array_destroy(GV);
    }
    // histogram: atomics
    if (use_kernel("hist")) {
        int *dk, *dh; CK(cudaMalloc(&dk, N * 4)); CK(cudaMalloc(&dh, 256 * 4));
        CK(cudaMemcpy(dk, keys.data(), N * 4, cudaMemcpyHostToDevice));
        CK(cudaMemset(dh, 0, 1024));
        k_hist<<<grid_blocks, 256>>>(dk, dh, N);
        std::vector<int> hr(256), hd(256);
        CK(cudaMemcpy(hr.data(), dh, 1024, cudaMemcpyDeviceToHost));
        double tn = time_it([&] { k_hist<<<grid_blocks, 256>>>(dk, dh, N); });
        dvm_array *K = mk(DVM_I32, 1, N, 0, keys.data()), *H = mk(DVM_I32, 1, 256, 0, NULL);
        dvm_args *a = args_for("hist");
        DV(dvm_args_array(ctx, a, "k", K)); DV(dvm_args_array(ctx, a, "h", H));
        const dvm_kernel *k; DV(dvm_kernel_find(ctx, mod, "hist", &k));
        dvm_launch_opts o; memset(&o, 0, sizeof o);
        DV(dvm_launch(ctx, k, a, &o, NULL));
        DV(dvm_array_read(ctx, H, hd.data(), 256));
        long bad = 0;
        for (int i = 0; i < 256; i++) bad += hd[i] != hr[i];
        double td = time_dvm("hist", a, DVM_FORWARD, &te);
        snprintf(sz, sizeof sz, "2^%d", (int)log2((double)N));
        row("histogram (atomics)", sz, tn, td, te, 4.0 * N, (double)bad);
        dvm_args_destroy(a); dvm_array_destroy(K); dvm_array_destroy(H);
    }
    if (mod) dvm_module_destroy(mod);
    dvm_context_destroy(ctx);
    return 0;
}
