/* test_api.c: the C API's contracts: binding errors name the parameter, a failed launch
 * leaves every array as it was, adjoint sizes are cached and invalidated by writes, a while
 * loop's adstack grows to the trips it makes without adding gradients twice, wrapped host
 * memory is used in place. */
#include <stdio.h>
#include <string.h>
#include "dvm.h"
#include "tests/check.h"


static const char *SRC =
    "kernel damp(x: f32[n], steps: i32[n], y: f32[1], rate: f32):\n"
    "    for i in range(n):\n"
    "        v = x[i]\n"
    "        for _ in range(steps[i]):\n"
    "            v = v * rate + 0.01\n"
    "        y[0] += v\n"
    "kernel fail(y: f32[n], z: f32[n], k: i32):\n"
    "    y[0] = 5.0\n"
    "    for i in range(n):\n"
    "        y[i] = z[i + k]\n"
    /* damp's reverse pass never reads v (its adjoint needs only rate), so the optimizer drops
     * v's adstack; sin makes the reverse pass read v: a stack with a size program */
    "kernel dampsin(x: f32[n], steps: i32[n], y: f32[1], rate: f32):\n"
    "    for i in range(n):\n"
    "        v = x[i]\n"
    "        for _ in range(steps[i]):\n"
    "            v = sin(v) * rate + 0.01\n"
    "        y[0] += v\n"
    "kernel copy(x: f32[n], y: f32[m]):\n"
    "    for i in range(1, n):\n"
    "        y[i] = x[i - 1] + x[i]\n"
    /* v's stack has no formula (a while loop): its capacity comes from the trips the loop
     * makes; the second statement's reverse runs first and adds 3 * z.grad into x.grad */
    "kernel wsin(x: f32[n], c: i32[n], y: f32[n], z: f32[n]):\n"
    "    for i in range(n):\n"
    "        v = x[i]\n"
    "        j = 0\n"
    "        while j < c[i]:\n"
    "            v = sin(v)\n"
    "            j += 1\n"
    "        y[i] = v\n"
    "    for i in range(n):\n"
    "        z[i] += x[i] * 3.0\n";

int main(void) {
    dvm_context_opts co = {.backend = "cpu"};
    dvm_context *ctx = NULL;
    if (dvm_context_create(&co, &ctx) != DVM_OK) {
        printf("FAIL: no cpu context: %s\n", dvm_errmsg(ctx));
        return 1;
    }
    /* absurd thread counts are refused before OpenMP sees them (it exited or crashed) */
    for (int t = 0; t < 3; t++) {
        static const int counts[3] = {1025, 32768, 65536};
        dvm_context_opts bad = {.backend = "cpu", .threads = counts[t]};
        dvm_context *c2 = NULL;
        dvm_status st = dvm_context_create(&bad, &c2);
        CHECK(st == DVM_ERR_USAGE && strstr(dvm_errmsg(c2), "thread count") && strstr(dvm_errmsg(c2), "more than the limit"),
               "threads %d: status %d, message '%s'", counts[t], (int)st, dvm_errmsg(c2));
        dvm_context_destroy(c2);
    }
    /* a switch out of its range (docs/c-api.md, "Context options") names itself */
    for (int t = 0; t < 11; t++) {
        dvm_context_opts bad = {.backend = "cpu"};
        static const char *const name[11] = {"no_opt", "no_partition", "unroll", "unroll", "cpu_lanes", "gpu_threads",
                                             "vk_no_int64", "vk_no_float_atomics", "vk_max_alloc", "vk_lanes", "vk_lanes"};
        switch (t) {
        case 0: bad.no_opt = 2; break;
        case 1: bad.no_partition = -1; break;
        case 2: bad.unroll = 257; break;
        case 3: bad.unroll = -4; break;
        case 4: bad.cpu_lanes = 3; break;
        case 5: bad.gpu_threads = -1; break;
        case 6: bad.vk_no_int64 = 2; break;
        case 7: bad.vk_no_float_atomics = -1; break;
        case 8: bad.vk_max_alloc = -1; break;
        case 9: bad.vk_lanes = 2; break;
        default: bad.vk_lanes = -1; break;
        }
        dvm_context *c2 = NULL;
        dvm_status st = dvm_context_create(&bad, &c2);
        CHECK(st == DVM_ERR_USAGE && strstr(dvm_errmsg(c2), name[t]) &&
                  strstr(dvm_errmsg(c2), t >= 9 ? "expected 0, 1 or 4" : "expected 0 to"),
               "bad %s: status %d, message '%s'", name[t], (int)st, dvm_errmsg(c2));
        dvm_context_destroy(c2);
    }
    dvm_module *m = NULL;
    if (dvm_compile(ctx, SRC, strlen(SRC), "t.dvk", &m) != DVM_OK) {
        printf("FAIL: compile: %s\n", dvm_errmsg(ctx));
        return 1;
    }
    const dvm_kernel *k, *kf, *ks;
    CHECK(dvm_kernel_find(ctx, m, "nope", &k) == DVM_ERR_ARG && strstr(dvm_errmsg(ctx), "'nope'"), "find: %s", dvm_errmsg(ctx));
    if (dvm_kernel_find(ctx, m, "damp", &k) || dvm_kernel_find(ctx, m, "fail", &kf) ||
        dvm_kernel_find(ctx, m, "dampsin", &ks))
        return 1;

    int64_t n4[1] = {4}, n3[1] = {3}, n1[1] = {1};
    dvm_array *x, *s, *s3, *y, *yg, *xg;
    dvm_array_create(ctx, DVM_F32, 1, n4, &x);
    dvm_array_create(ctx, DVM_I32, 1, n4, &s);
    dvm_array_create(ctx, DVM_I32, 1, n3, &s3);
    dvm_array_create(ctx, DVM_F32, 1, n1, &y);
    dvm_array_create(ctx, DVM_F32, 1, n1, &yg);
    dvm_array_create(ctx, DVM_F32, 1, n4, &xg);
    float xv[4] = {0.5f, 1, -2, 0.25f}, one = 1, zero = 0;
    int32_t sv[4] = {0, 1, 3, 2};
    dvm_array_write(ctx, x, xv, 4);
    dvm_array_write(ctx, s, sv, 4);
    dvm_array_write(ctx, yg, &one, 1);
    dvm_args *a;
    dvm_args_create(ctx, k, &a);

    /* arrays of 2^31 elements or more are refused (flat indices are 32-bit), before any allocation */
    int64_t big[2] = {65536, 32768};
    dvm_array *huge = NULL;
    CHECK(dvm_array_create(ctx, DVM_F32, 2, big, &huge) == DVM_ERR_USAGE && !huge && strstr(dvm_errmsg(ctx), "2^31 - 1"),
           "2^31 elements: %s", dvm_errmsg(ctx));

    /* binding errors */
    CHECK(dvm_args_array(ctx, a, "x", s) == DVM_ERR_ARG && strstr(dvm_errmsg(ctx), "'x'"), "mistyped: %s", dvm_errmsg(ctx));
    CHECK(dvm_args_array(ctx, a, "zz", x) == DVM_ERR_ARG && strstr(dvm_errmsg(ctx), "'zz'"), "unknown: %s", dvm_errmsg(ctx));
    CHECK(dvm_args_array(ctx, a, "y", x) == DVM_ERR_ARG && strstr(dvm_errmsg(ctx), "extent 1"), "literal: %s", dvm_errmsg(ctx));
    CHECK(dvm_args_grad(ctx, a, "steps", s) == DVM_ERR_ARG, "grad of i32: %s", dvm_errmsg(ctx));
    dvm_args_array(ctx, a, "x", x);
    dvm_args_array(ctx, a, "steps", s3);
    dvm_args_array(ctx, a, "y", y);
    dvm_launch_opts fwd = {DVM_FORWARD, 0, 0, 0}, adj = {DVM_ADJOINT, 0, 0, 0};
    CHECK(dvm_launch(ctx, k, a, &fwd, NULL) == DVM_ERR_ARG && strstr(dvm_errmsg(ctx), "'rate'"), "missing: %s", dvm_errmsg(ctx));
    dvm_args_f32(ctx, a, "rate", 0.9f);
    CHECK(dvm_launch(ctx, k, a, &fwd, NULL) == DVM_ERR_ARG &&
               strstr(dvm_errmsg(ctx), "shape symbol 'n' is 4 from 'x' but 3 from 'steps'"),
           "symbol: %s", dvm_errmsg(ctx));
    dvm_args_array(ctx, a, "steps", s);

    /* forward, then adjoint twice: the second reuses the sizes; a write invalidates them */
    float yv = 0;
    CHECK(dvm_launch(ctx, k, a, &fwd, NULL) == DVM_OK, "forward: %s", dvm_errmsg(ctx));
    dvm_array_read(ctx, y, &yv, 1);
    CHECK(yv > 0.2005f && yv < 0.2007f, "y = %g, expected 0.2006", (double)yv);
    dvm_args_grad(ctx, a, "y", yg);
    dvm_args_grad(ctx, a, "x", xg);
    dvm_launch_stats st;
    CHECK(dvm_launch(ctx, k, a, &adj, &st) == DVM_OK, "adjoint: %s", dvm_errmsg(ctx));
    float g[4];
    dvm_array_read(ctx, xg, g, 4);
    CHECK(g[2] > 0.7289f && g[2] < 0.7291f, "x.grad[2] = %g, expected 0.729", (double)g[2]);
    /* size caching and overflow need an adstack sized by a program: dampsin has one */
    dvm_args *as;
    dvm_args_create(ctx, ks, &as);
    dvm_args_array(ctx, as, "x", x);
    dvm_args_array(ctx, as, "steps", s);
    dvm_args_array(ctx, as, "y", y);
    dvm_args_f32(ctx, as, "rate", 0.9f);
    dvm_args_grad(ctx, as, "y", yg);
    dvm_args_grad(ctx, as, "x", xg);
    CHECK(dvm_launch(ctx, ks, as, &adj, &st) == DVM_OK, "dampsin adjoint: %s", dvm_errmsg(ctx));
    dvm_array_write(ctx, y, &zero, 1);
    CHECK(dvm_launch(ctx, ks, as, &adj, &st) == DVM_OK && st.sizes_cached == 1, "second adjoint: cached %d %s", st.sizes_cached,
           dvm_errmsg(ctx));
    sv[2] = 7;
    dvm_array_write(ctx, s, sv, 4);
    CHECK(dvm_launch(ctx, ks, as, &adj, &st) == DVM_OK && st.sizes_cached == 0, "after a write: cached %d %s", st.sizes_cached,
           dvm_errmsg(ctx));
    /* an adjoint launch always copies what its forward writes (the adjoint reads it as it was) */
    CHECK(st.snapshot_bytes >= 4, "adjoint launch: %lld snapshot bytes", (long long)st.snapshot_bytes);
    dvm_launch_opts small = {DVM_ADJOINT, 1, 0, 0};
    float before[4], after[4];
    dvm_array_read(ctx, xg, before, 4);
    CHECK(dvm_launch(ctx, ks, as, &small, &st) == DVM_ERR_RUNTIME && strstr(dvm_errmsg(ctx), "adstack overflow") &&
               strstr(dvm_errmsg(ctx), "ad_stack_size"),
           "overflow: %s", dvm_errmsg(ctx));
    dvm_array_read(ctx, xg, after, 4);
    CHECK(!memcmp(before, after, sizeof before), "a failed adjoint changed x.grad");
    /* the next launch starts clean: fresh gradients equal rate^steps (steps = 0 1 7 2) */
    float zeros[4] = {0, 0, 0, 0}, want[4] = {1.0f, 0.9f, 0.4782969f, 0.81f};
    dvm_array_write(ctx, xg, zeros, 4);
    dvm_array_write(ctx, yg, &one, 1);
    CHECK(dvm_launch(ctx, k, a, &adj, &st) == DVM_OK, "adjoint after an overflow: %s", dvm_errmsg(ctx));
    dvm_array_read(ctx, xg, after, 4);
    for (int i = 0; i < 4; i++)
        CHECK(after[i] > want[i] - 1e-5f && after[i] < want[i] + 1e-5f, "after an overflow x.grad[%d] = %g, expected %g", i,
               (double)after[i], (double)want[i]);

    /* a failed launch restores what its earlier task wrote */
    dvm_args *af;
    dvm_args_create(ctx, kf, &af);
    dvm_args_array(ctx, af, "y", x);
    dvm_args_array(ctx, af, "z", xg);
    dvm_args_i32(ctx, af, "k", 1);
    CHECK(dvm_launch(ctx, kf, af, &fwd, NULL) == DVM_ERR_RUNTIME && strstr(dvm_errmsg(ctx), "t.dvk:10:") &&
               strstr(dvm_errmsg(ctx), "out of bounds"),
           "oob: %s", dvm_errmsg(ctx));
    float xa[4];
    dvm_array_read(ctx, x, xa, 4);
    CHECK(!memcmp(xa, xv, sizeof xa), "failed launch left x[0] = %g, expected %g", (double)xa[0], (double)xv[0]);
    CHECK(dvm_args_f32(ctx, af, "k", 1.5f) == DVM_ERR_ARG && strstr(dvm_errmsg(ctx), "'k'"), "i32 took f32: %s", dvm_errmsg(ctx));

    /* a launch whose every index the host proves in bounds copies nothing first; the same
       kernel with a shorter y may fail, so it snapshots y, fails and leaves y as it was */
    const dvm_kernel *kc;
    dvm_args *ac;
    dvm_launch_stats cs;
    CHECK(dvm_kernel_find(ctx, m, "copy", &kc) == DVM_OK && dvm_args_create(ctx, kc, &ac) == DVM_OK, "copy: %s",
           dvm_errmsg(ctx));
    dvm_args_array(ctx, ac, "x", x);
    dvm_args_array(ctx, ac, "y", xg);
    float cin[4] = {1, 2, 4, 8}, cout[4] = {9, 9, 9, 9}, cwant[4] = {9, 3, 6, 12};
    dvm_array_write(ctx, x, cin, 4);
    dvm_array_write(ctx, xg, cout, 4);
    CHECK(dvm_launch(ctx, kc, ac, &fwd, &cs) == DVM_OK && cs.snapshot_bytes == 0, "copy: %s, %lld snapshot bytes",
           dvm_errmsg(ctx), (long long)cs.snapshot_bytes);
    dvm_array_read(ctx, xg, cout, 4);
    CHECK(!memcmp(cout, cwant, sizeof cout), "copy: y = %g %g %g %g", (double)cout[0], (double)cout[1], (double)cout[2],
           (double)cout[3]);
    /* its adjoint is one task: the stage's forward (the store of y) runs inside its reverse
       sweep (compiler/autodiff.c, fused_stage), whose iteration space the host knows, so the
       host proves the launch safe and copies nothing */
    dvm_array *cxg, *cyg;
    dvm_array_create(ctx, DVM_F32, 1, n4, &cxg);
    dvm_array_create(ctx, DVM_F32, 1, n4, &cyg);
    float gzero[4] = {0, 0, 0, 0}, gone[4] = {1, 1, 1, 1}, gx[4], gxwant[4] = {1, 2, 2, 1};
    dvm_array_write(ctx, cxg, gzero, 4);
    dvm_array_write(ctx, cyg, gone, 4);
    dvm_args_grad(ctx, ac, "x", cxg);
    dvm_args_grad(ctx, ac, "y", cyg);
    CHECK(dvm_launch(ctx, kc, ac, &adj, &cs) == DVM_OK && cs.snapshot_bytes == 0 && cs.version_bytes == 0, "copy adjoint: %s, %lld snapshot bytes",
           dvm_errmsg(ctx), (long long)cs.snapshot_bytes);
    dvm_array_read(ctx, cxg, gx, 4);
    CHECK(!memcmp(gx, gxwant, sizeof gx), "copy adjoint: x.grad = %g %g %g %g", (double)gx[0], (double)gx[1], (double)gx[2],
           (double)gx[3]);
    float c3[3] = {7, 7, 7}, c3after[3];
    dvm_array *y3;
    dvm_array_create(ctx, DVM_F32, 1, n3, &y3);
    dvm_array_write(ctx, y3, c3, 3);
    dvm_args_array(ctx, ac, "y", y3);
    CHECK(dvm_launch(ctx, kc, ac, &fwd, &cs) == DVM_ERR_RUNTIME && strstr(dvm_errmsg(ctx), "out of bounds") &&
               cs.snapshot_bytes == 12,
           "copy into 3: %s, %lld snapshot bytes", dvm_errmsg(ctx), (long long)cs.snapshot_bytes);
    dvm_array_read(ctx, y3, c3after, 3);
    CHECK(!memcmp(c3, c3after, sizeof c3), "a failed copy changed y: %g %g %g", (double)c3after[0], (double)c3after[1],
           (double)c3after[2]);
    dvm_array_destroy(y3);
    dvm_args_destroy(ac);
    dvm_array_destroy(cxg);
    dvm_array_destroy(cyg);

    /* a while loop of 1000 trips overflows the default capacity (256): the launch grows the
       stack and reruns, and adds each gradient once (x.grad[0]: c = 0, so 1 from y and 3
       from z); the next launch starts at the learned size; a default the user gives is an
       override, so it fails as before and writes nothing */
    const dvm_kernel *kw;
    dvm_args *aw;
    CHECK(dvm_kernel_find(ctx, m, "wsin", &kw) == DVM_OK && dvm_args_create(ctx, kw, &aw) == DVM_OK, "wsin: %s",
           dvm_errmsg(ctx));
    dvm_array *wc, *wy, *wz, *wxg, *wyg, *wzg;
    dvm_array_create(ctx, DVM_I32, 1, n4, &wc);
    dvm_array_create(ctx, DVM_F32, 1, n4, &wy);
    dvm_array_create(ctx, DVM_F32, 1, n4, &wz);
    dvm_array_create(ctx, DVM_F32, 1, n4, &wxg);
    dvm_array_create(ctx, DVM_F32, 1, n4, &wyg);
    dvm_array_create(ctx, DVM_F32, 1, n4, &wzg);
    int32_t wcv[4] = {0, 1000, 5, 700};
    float wx[4] = {0.5f, 1, -2, 0.25f}, wauto[4], wforced[4], wseed[4] = {1, 1, 1, 1}, wbefore[4], wafter[4];
    dvm_array_write(ctx, x, wx, 4);
    dvm_array_write(ctx, wc, wcv, 4);
    dvm_args_array(ctx, aw, "x", x);
    dvm_args_array(ctx, aw, "c", wc);
    dvm_args_array(ctx, aw, "y", wy);
    dvm_args_array(ctx, aw, "z", wz);
    dvm_args_grad(ctx, aw, "x", wxg);
    dvm_args_grad(ctx, aw, "y", wyg);
    dvm_args_grad(ctx, aw, "z", wzg);
    dvm_launch_stats ws;
    for (int run = 0; run < 3; run++) {
        /* run 0: grown from 256 (retries); 1: from the learned size; 2: forced, never grown */
        dvm_launch_opts wo = {DVM_ADJOINT, run == 2 ? 1000 : 0, 0, 0};
        dvm_array_write(ctx, wxg, gzero, 4);
        dvm_array_write(ctx, wyg, wseed, 4);
        dvm_array_write(ctx, wzg, wseed, 4);
        CHECK(dvm_launch(ctx, kw, aw, &wo, &ws) == DVM_OK, "wsin adjoint %d: %s", run, dvm_errmsg(ctx));
        CHECK(run == 0 ? ws.retries > 0 : ws.retries == 0, "wsin adjoint %d: %d retries", run, ws.retries);
        dvm_array_read(ctx, wxg, run == 2 ? wforced : wauto, 4);
        CHECK(wauto[0] == 4.0f, "wsin adjoint %d: x.grad[0] = %g, expected 4 (1 + 3: added once)", run, (double)wauto[0]);
    }
    CHECK(!memcmp(wauto, wforced, sizeof wauto), "wsin: grown x.grad %g %g %g %g, forced %g %g %g %g", (double)wauto[0],
           (double)wauto[1], (double)wauto[2], (double)wauto[3], (double)wforced[0], (double)wforced[1], (double)wforced[2],
           (double)wforced[3]);
    dvm_launch_opts wdef = {DVM_ADJOINT, 0, 256, 0};
    dvm_array_write(ctx, wyg, wseed, 4);
    dvm_array_read(ctx, wxg, wbefore, 4);
    CHECK(dvm_launch(ctx, kw, aw, &wdef, &ws) == DVM_ERR_RUNTIME && strstr(dvm_errmsg(ctx), "adstack overflow") &&
               strstr(dvm_errmsg(ctx), "'v'") && strstr(dvm_errmsg(ctx), "capacity of 256") && ws.retries == 0,
           "wsin with default_ad_stack_size 256: %s, %d retries", dvm_errmsg(ctx), ws.retries);
    dvm_array_read(ctx, wxg, wafter, 4);
    CHECK(!memcmp(wbefore, wafter, sizeof wbefore), "a failed wsin adjoint changed x.grad");
    dvm_args_destroy(aw);
    dvm_array_destroy(wc);
    dvm_array_destroy(wy);
    dvm_array_destroy(wz);
    dvm_array_destroy(wxg);
    dvm_array_destroy(wyg);
    dvm_array_destroy(wzg);

    /* host memory wrapped on the CPU backend: launches read and write the caller's arrays in
       place; changing them directly is seen by the next launch, sizes included; a failed
       launch leaves them as they were; destroying the array leaves the memory alone */
    {
        float hx[4] = {1, 2, 3, 4}, hy[4] = {0, 0, 0, 0};
        int32_t hs[4] = {0, 1, 3, 2};
        float hyv[1] = {0}, hxg[4] = {0, 0, 0, 0}, hyg[1] = {1};
        dvm_array *hwx = NULL, *hwy = NULL, *hws = NULL, *hwyv = NULL, *hwxg = NULL, *hwyg = NULL, *hbad = NULL;
        CHECK(dvm_array_wrap_host(ctx, DVM_F32, 1, n4, NULL, &hbad) == DVM_ERR_USAGE && !hbad &&
                   strstr(dvm_errmsg(ctx), "dvm_array_wrap_host"),
               "wrap NULL: %s", dvm_errmsg(ctx));
        CHECK(dvm_array_wrap_host(ctx, DVM_F32, 1, n4, (char *)hx + 1, &hbad) == DVM_ERR_USAGE && !hbad &&
                   strstr(dvm_errmsg(ctx), "aligned"),
               "wrap misaligned: %s", dvm_errmsg(ctx));
        CHECK(dvm_array_wrap_host(ctx, DVM_F32, 1, n4, hx, &hwx) == DVM_OK && dvm_array_wrap_host(ctx, DVM_F32, 1, n4, hy, &hwy) == DVM_OK &&
                   dvm_array_count(hwx) == 4,
               "wrap: %s", dvm_errmsg(ctx));
        const dvm_kernel *kh;
        dvm_args *ah = NULL;
        dvm_launch_stats hst;
        CHECK(dvm_kernel_find(ctx, m, "copy", &kh) == DVM_OK && dvm_args_create(ctx, kh, &ah) == DVM_OK &&
                   dvm_args_array(ctx, ah, "x", hwx) == DVM_OK && dvm_args_array(ctx, ah, "y", hwy) == DVM_OK &&
                   dvm_launch(ctx, kh, ah, &fwd, NULL) == DVM_OK,
               "wrapped copy: %s", dvm_errmsg(ctx));
        CHECK(hy[0] == 0 && hy[1] == 3 && hy[2] == 5 && hy[3] == 7, "wrapped copy wrote y = %g %g %g %g, expected 0 3 5 7",
               (double)hy[0], (double)hy[1], (double)hy[2], (double)hy[3]);
        hx[0] = 10; /* the caller's own write: the next launch reads it */
        CHECK(dvm_launch(ctx, kh, ah, &fwd, NULL) == DVM_OK && hy[1] == 12, "after x[0] = 10: y[1] = %g, expected 12 (%s)",
               (double)hy[1], dvm_errmsg(ctx));
        dvm_args_destroy(ah);
        /* a failed launch restores the caller's memory */
        const dvm_kernel *khf;
        float hz[4] = {1, 1, 1, 1}, hybefore[4];
        dvm_array *hwz = NULL;
        memcpy(hybefore, hy, sizeof hy);
        CHECK(dvm_array_wrap_host(ctx, DVM_F32, 1, n4, hz, &hwz) == DVM_OK && dvm_kernel_find(ctx, m, "fail", &khf) == DVM_OK &&
                   dvm_args_create(ctx, khf, &ah) == DVM_OK && dvm_args_array(ctx, ah, "y", hwy) == DVM_OK &&
                   dvm_args_array(ctx, ah, "z", hwz) == DVM_OK && dvm_args_i32(ctx, ah, "k", 1) == DVM_OK,
               "wrapped fail: %s", dvm_errmsg(ctx));
        CHECK(dvm_launch(ctx, khf, ah, &fwd, NULL) == DVM_ERR_RUNTIME && !memcmp(hy, hybefore, sizeof hy),
               "a failed launch on wrapped y: y = %g %g %g %g (%s)", (double)hy[0], (double)hy[1], (double)hy[2], (double)hy[3],
               dvm_errmsg(ctx));
        dvm_args_destroy(ah);
        dvm_array_destroy(hwz);
        /* sizes read from a wrapped array are never reused: the caller may have changed it */
        CHECK(dvm_array_wrap_host(ctx, DVM_I32, 1, n4, hs, &hws) == DVM_OK && dvm_array_wrap_host(ctx, DVM_F32, 1, n1, hyv, &hwyv) == DVM_OK &&
                   dvm_array_wrap_host(ctx, DVM_F32, 1, n4, hxg, &hwxg) == DVM_OK && dvm_array_wrap_host(ctx, DVM_F32, 1, n1, hyg, &hwyg) == DVM_OK &&
                   dvm_args_create(ctx, ks, &ah) == DVM_OK && dvm_args_array(ctx, ah, "x", hwx) == DVM_OK &&
                   dvm_args_array(ctx, ah, "steps", hws) == DVM_OK && dvm_args_array(ctx, ah, "y", hwyv) == DVM_OK &&
                   dvm_args_grad(ctx, ah, "x", hwxg) == DVM_OK && dvm_args_grad(ctx, ah, "y", hwyg) == DVM_OK &&
                   dvm_args_f32(ctx, ah, "rate", 0.9f) == DVM_OK && dvm_launch(ctx, ks, ah, &adj, &hst) == DVM_OK,
               "wrapped dampsin adjoint: %s", dvm_errmsg(ctx));
        hs[1] = 40; /* a stack 40 deep now: a reused size (3) would overflow */
        CHECK(dvm_launch(ctx, ks, ah, &adj, &hst) == DVM_OK && !hst.sizes_cached && hxg[1] != 0,
               "wrapped dampsin adjoint after steps[1] = 40: %s, sizes_cached %d", dvm_errmsg(ctx), hst.sizes_cached);
        dvm_args_destroy(ah);
        dvm_array_destroy(hws);
        dvm_array_destroy(hwyv);
        dvm_array_destroy(hwxg);
        dvm_array_destroy(hwyg);
        dvm_array_destroy(hwx);
        dvm_array_destroy(hwy);
        hy[0] = 1; /* still the caller's: destroy freed nothing */
        /* other backends' memory is not the host's */
        dvm_context_opts vko = {.backend = "vulkan"};
        dvm_context *vk = NULL;
        if (dvm_context_create(&vko, &vk) == DVM_OK) {
            CHECK(dvm_array_wrap_host(vk, DVM_F32, 1, n4, hx, &hbad) == DVM_ERR_USAGE && !hbad && strstr(dvm_errmsg(vk), "cpu backend"),
                   "wrap on vulkan: %s", dvm_errmsg(vk));
        }
        dvm_context_destroy(vk);
    }

    dvm_args_destroy(af);
    dvm_args_destroy(as);
    dvm_args_destroy(a);
    dvm_array_destroy(x);
    dvm_array_destroy(s);
    dvm_array_destroy(s3);
    dvm_array_destroy(y);
    dvm_array_destroy(yg);
    dvm_array_destroy(xg);
    dvm_module_destroy(m);
    dvm_context_destroy(ctx);
    if (fails) {
        printf("%d api check(s) failed\n", fails);
        return 1;
    }
    printf("all api checks passed\n");
    return 0;
}
