/* bench_kernels.h: the benchmark kernels in .dvk, one definition shared by bench_cpu,
 * bench_vulkan and bench_cuda (whose native C / CUDA references compute the same math).
 * dynloop's adjoint needs no stack (d(v*rate)/dv = rate); dynsin's keeps every v of its
 * loop on an adstack sized by the sizer (d(sin(v)*rate)/dv = cos(v)*rate). */
#ifndef DVM_BENCH_KERNELS_H
#define DVM_BENCH_KERNELS_H
static const char *SRC =
    "kernel saxpy(a: f32, x: f32[n], y: f32[n]):\n"
    "    for i in range(n):\n"
    "        y[i] = a * x[i] + y[i]\n"
    "\n"
    "kernel trans(x: f32[n], y: f32[n]):\n"
    "    for i in range(n):\n"
    "        v = x[i]\n"
    "        y[i] = sin(v) * cos(v) + exp(-v * v) + log(1.0 + v * v) + tanh(v)\n"
    "\n"
    "kernel dynloop(x: f32[n], steps: i32[n], y: f32[n], rate: f32):\n"
    "    for i in range(n):\n"
    "        v = x[i]\n"
    "        for _ in range(steps[i]):\n"
    "            v = v * rate + 0.01\n"
    "        y[i] = v\n"
    "\n"
    "kernel dynsin(x: f32[n], steps: i32[n], y: f32[n], rate: f32):\n"
    "    for i in range(n):\n"
    "        v = x[i]\n"
    "        for _ in range(steps[i]):\n"
    "            v = sin(v) * rate + 0.01\n"
    "        y[i] = v\n"
    "\n"
    "kernel stencil(u: f32[n, m], v: f32[n, m]):\n"
    "    for i, j in ndrange(n, m):\n"
    "        if i > 0 and i < n - 1 and j > 0 and j < m - 1:\n"
    "            v[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]) - u[i, j]\n"
    "        else:\n"
    "            v[i, j] = u[i, j]\n"
    "\n"
    "kernel hist(k: i32[n], h: i32[256]):\n"
    "    for i in range(n):\n"
    "        h[k[i] % 256] += 1\n"
    /* Other spellings of saxpy and dynloop (issue 26: no speed that only one spelling gets).
       Each takes its kernel's parameters (an unused one included), so the benchmarks pass
       the same arguments; the literals are the values they pass (a = 1.5, rate = 0.97,
       c = 0.01). */
    "\n"
    "kernel saxpy_comm(a: f32, x: f32[n], y: f32[n]):\n"
    "    for i in range(n):\n"
    "        y[i] = y[i] + x[i] * a\n"
    "\n"
    "kernel saxpy_lit(a: f32, x: f32[n], y: f32[n]):\n"
    "    for i in range(n):\n"
    "        y[i] = 1.5 * x[i] + y[i]\n"
    "\n"
    "kernel dynloop_lit(x: f32[n], steps: i32[n], y: f32[n], rate: f32):\n"
    "    for i in range(n):\n"
    "        v = x[i]\n"
    "        for _ in range(steps[i]):\n"
    "            v = v * 0.97 + 0.01\n"
    "        y[i] = v\n"
    "\n"
    "kernel dynloop_par(x: f32[n], steps: i32[n], y: f32[n], rate: f32, c: f32):\n"
    "    for i in range(n):\n"
    "        v = x[i]\n"
    "        for _ in range(steps[i]):\n"
    "            v = v * rate + c\n"
    "        y[i] = v\n"
    "\n"
    "kernel dynloop_while(x: f32[n], steps: i32[n], y: f32[n], rate: f32):\n"
    "    for i in range(n):\n"
    "        v = x[i]\n"
    "        j = 0\n"
    "        while j < steps[i]:\n"
    "            v = v * rate + 0.01\n"
    "            j += 1\n"
    "        y[i] = v\n"
    "\n"
    "kernel dynloop_comm(x: f32[n], steps: i32[n], y: f32[n], rate: f32):\n"
    "    for i in range(n):\n"
    "        v = x[i]\n"
    "        for _ in range(steps[i]):\n"
    "            v = 0.01 + rate * v\n"
    "        y[i] = v\n";

/* The inputs' random numbers (xorshift64, uniform in [0, 1)): bench_cpu and bench_vulkan draw
 * the same sequence. */
static unsigned long long rng = 88172645463325252ull;
static inline double urand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}
#endif
