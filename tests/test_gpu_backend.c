/* test_gpu_backend.c: the CUDA/HIP backend driven directly through its vtbl with
 * hand-assembled bytecode (no compiler needed): a grid-stride parallel task (saxpy over
 * more elements than threads), a serial task writing a uniform that the next parallel
 * task reads as its extent, i32 atomics (histogram), an out-of-bounds runtime error, and
 * the sizer (vm/sizer.c) over the device primitives + max-reducer (max over a range of array values). Results are checked
 * against plain C. Exits 77 (skipped) when the backend finds no device.
 *   test_gpu_backend cuda|hip */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm/backend.h"
#include "vm/sizer.h"

static int fails = 0;
#define EXPECT(cond, ...)                                                                 \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "test_gpu_backend: FAIL: " __VA_ARGS__);                       \
            fputc('\n', stderr);                                                          \
            fails++;                                                                      \
        }                                                                                 \
    } while (0)

static dvm_node N(int op, int x, int a, int b, int c) {
    dvm_node n = {(uint8_t)op, (uint8_t)x, (uint16_t)a, (uint16_t)b, (uint16_t)c};
    return n;
}

int main(int argc, char **argv) {
    const char *which = argc > 1 ? argv[1] : "cuda";
    const dvm_backend_vtbl *vt = NULL;
#ifdef DVM_HAVE_CUDA
    if (!strcmp(which, "cuda")) vt = &dvm_backend_cuda;
#endif
#ifdef DVM_HAVE_HIP
    if (!strcmp(which, "hip")) vt = &dvm_backend_hip;
#endif
    if (!vt) {
        printf("test_gpu_backend: SKIP: the %s backend is not in this build\n", which);
        return 77;
    }
    char err[512] = "";
    dvm_backend_opts o = {0};
    dvm_backend *be = vt->open(&o, err, sizeof err);
    if (!be) {
        printf("test_gpu_backend: SKIP: no %s device: %s\n", which, err);
        return 77;
    }
    printf("test_gpu_backend: %s\n", vt->device_name(be));

    /* slots: 0 x (f32), 1 y (f32), 2 steps (i32), 3 hist (i32[256]); uniforms: 0 a, 1 n, 2 m */
    dvm_node nodes[] = {
        /* task 0 (serial): U[2] = U[1] - 5 */
        N(DVM_OP_LDU, 0, 0, 1, 0), N(DVM_OP_ADDIK, 0, 0, 0, (uint16_t)(int16_t)-5), N(DVM_OP_STU, 0, 2, 0, 0),
        N(DVM_OP_END, 0, 0, 0, 0),
        /* task 1 (parallel over [0, U[1])): y[i] = a * x[i] + y[i]; hist[steps[i] % 255] += 1 */
        N(DVM_OP_LDU, 0, 1, 0, 0), N(DVM_OP_LD, 0, 2, 0, 0), N(DVM_OP_LD, 1, 3, 0, 0),
        N(DVM_OP_FMAF, 0, 3, 1, 2), N(DVM_OP_ST, 1, 0, 3, 0), N(DVM_OP_LD, 2, 4, 0, 0),
        N(DVM_OP_CONST, 0, 5, 255, 0), N(DVM_OP_CONST, 0, 6, 1, 0), N(DVM_OP_MODI, 0, 4, 4, 5),
        N(DVM_OP_ATOMADDI, 3, 4, 6, 0), N(DVM_OP_END, 0, 0, 0, 0),
        /* task 2 (parallel over [0, U[2]) = n - 5): x[i + 6] read: out of bounds at i = n - 6 */
        N(DVM_OP_ADDIK, 0, 1, 0, 6), N(DVM_OP_LD, 0, 2, 1, 0), N(DVM_OP_END, 0, 0, 0, 0),
        /* size program (nodes 18..24): max over v in [0, n) of steps[v], plus 7 */
        N(DVM_OP_SZ_CONST, 0, 0, 0, 0), N(DVM_OP_SZ_PARAM, 0, 1, 0, 0), N(DVM_OP_SZ_RANGE, 0, 0, 1, 5),
        N(DVM_OP_SZ_VAR, 0, 0, 0, 0), N(DVM_OP_SZ_LOAD, 2, 3, 0, 0), N(DVM_OP_SZ_CONST, 0, 7, 0, 0),
        N(DVM_OP_SZ_ADD, 0, 2, 5, 0),
    };
    dvm_task_desc tasks[3];
    memset(tasks, 0, sizeof tasks);
    for (int i = 0; i < 3; i++) tasks[i].start_u[0] = tasks[i].start_u[1] = tasks[i].start_u[2] = DVM_NO_SLOT;
    tasks[0].kind = DVM_TASK_SERIAL; tasks[0].nregs = 1; tasks[0].code_begin = 0; tasks[0].code_len = 4;
    tasks[1].kind = DVM_TASK_PARALLEL; tasks[1].ndim = 1; tasks[1].nregs = 7; tasks[1].code_begin = 4;
    tasks[1].code_len = 11; tasks[1].ext_u[0] = 1;
    tasks[2] = tasks[1]; tasks[2].nregs = 3; tasks[2].code_begin = 15; tasks[2].code_len = 3; tasks[2].ext_u[0] = 2;
    dvm_stack_desc stack;
    memset(&stack, 0, sizeof stack);
    stack.type = DVM_T_F32; stack.sizing = DVM_SZ_PROGRAM; stack.size_begin = 18; stack.size_len = 7;
    dvm_program prog;
    memset(&prog, 0, sizeof prog);
    prog.nodes = nodes; prog.nnodes = sizeof nodes / sizeof nodes[0];
    prog.tasks = tasks; prog.ntasks = 3;
    prog.stacks = &stack; prog.nstacks = 1;
    uint32_t konst = 0; prog.consts = &konst; prog.nconsts = 1;

    const int64_t n = 3000017; /* many times the grid: grid-stride */
    float *x = malloc(n * 4), *y = malloc(n * 4), *yr = malloc(n * 4);
    int32_t *steps = malloc(n * 4), hist[256], hr[256];
    int32_t smax = 0;
    memset(hr, 0, sizeof hr);
    srand(7);
    for (int64_t i = 0; i < n; i++) {
        x[i] = (float)rand() / RAND_MAX - 0.5f;
        y[i] = (float)rand() / RAND_MAX;
        steps[i] = rand() % 100000;
        if (steps[i] > smax) smax = steps[i];
        float a = 1.25f;
        yr[i] = __builtin_fmaf(a, x[i], y[i]);
        hr[steps[i] % 255]++;
    }
    dvm_buffer *bx, *by, *bs, *bh, *heap;
    int rc = vt->alloc(be, n * 4, &bx, err, sizeof err) || vt->alloc(be, n * 4, &by, err, sizeof err) ||
             vt->alloc(be, n * 4, &bs, err, sizeof err) || vt->alloc(be, 1024, &bh, err, sizeof err) ||
             vt->alloc(be, 1024, &heap, err, sizeof err) || vt->write(be, bx, 0, x, n * 4, err, sizeof err) ||
             vt->write(be, by, 0, y, n * 4, err, sizeof err) || vt->write(be, bs, 0, steps, n * 4, err, sizeof err);
    EXPECT(rc == 0, "buffers: %s", err);
    dvm_loaded *ld = NULL;
    EXPECT(vt->load(be, &prog, &ld, err, sizeof err) == 0, "load: %s", err);
    if (fails) return 1;

    dvm_buffer *arrays[4] = {bx, by, bs, bh};
    int64_t arr_len[4] = {n, n, n, 256};
    int32_t shape[16] = {(int32_t)n, 1, 1, 1, (int32_t)n, 1, 1, 1, (int32_t)n, 1, 1, 1, 256, 1, 1, 1};
    float a = 1.25f;
    uint32_t uni[3];
    memcpy(&uni[0], &a, 4);
    uni[1] = (uint32_t)n;
    uni[2] = 0;

    /* sizer: capacity = max(steps) + 7, computed by the max-reducer */
    dvm_variant_desc var = {0, 2, 0, 1, 0, 4, 3, 1};
    dvm_size_job job = {&prog, ld, &var, 4, arrays, arr_len, shape, uni, 3, 1000000, NULL};
    int64_t cap = -1;
    dvm_rt_error rt;
    memset(&rt, 0, sizeof rt);
    rc = dvm_sizer_run(vt, be, &job, &cap, &rt, err, sizeof err);
    EXPECT(rc == 0, "size returned %d (%s, rt code %d)", rc, err, rt.code);
    EXPECT(cap == (int64_t)smax + 7, "sizer: expected capacity %lld, got %lld", (long long)smax + 7, (long long)cap);

    /* tasks 0 and 1: serial then parallel */
    int64_t soff = 0, scap = 1;
    dvm_exec ex;
    memset(&ex, 0, sizeof ex);
    ex.prog = &prog; ex.loaded = ld; ex.var = &var; ex.nslots = 4; ex.arrays = arrays; ex.arr_len = arr_len;
    ex.arr_shape = shape; ex.uniforms = uni; ex.nuniforms = 3; ex.heap = heap; ex.stride = 0;
    ex.stack_off = &soff; ex.stack_cap = &scap; ex.nstacks = 0;
    ex.nthread_slots = vt->slots(be, &ex);
    EXPECT(ex.nthread_slots > 0 && ex.nthread_slots < n, "slots: %lld threads for %lld iterations",
           (long long)ex.nthread_slots, (long long)n);
    rc = vt->exec(be, &ex, &rt, err, sizeof err);
    EXPECT(rc == 0, "exec returned %d (%s, rt code %d)", rc, err, rt.code);
    EXPECT(uni[2] == (uint32_t)(n - 5), "serial task: expected U[2] = %lld, got %u", (long long)n - 5, uni[2]);
    vt->read(be, by, 0, y, n * 4, err, sizeof err);
    vt->read(be, bh, 0, hist, sizeof hist, err, sizeof err);
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) bad += y[i] != yr[i];
    EXPECT(bad == 0, "saxpy: %lld of %lld elements differ from C", (long long)bad, (long long)n);
    bad = 0;
    for (int i = 0; i < 256; i++) bad += hist[i] != hr[i];
    EXPECT(bad == 0, "histogram: %lld bins differ from C", (long long)bad);

    /* task 2 alone: out of bounds, first error wins, reported with its node */
    dvm_variant_desc var2 = {2, 1, 0, 0, 0, 4, 3, 1};
    ex.var = &var2;
    ex.nthread_slots = vt->slots(be, &ex);
    memset(&rt, 0, sizeof rt);
    rc = vt->exec(be, &ex, &rt, err, sizeof err);
    EXPECT(rc == 1 && rt.code == DVM_RT_OOB && rt.node == 16 && rt.p[0] == 0 && rt.p[2] >= n,
           "out of bounds: expected rc 1, code %d at node 16 slot 0 index >= %lld; got rc %d code %d node %u p0 %lld p2 %lld (%s)",
           DVM_RT_OOB, (long long)n, rc, rt.code, rt.node, (long long)rt.p[0], (long long)rt.p[2], err);

    /* an exec after an error starts clean */
    ex.var = &var;
    rc = vt->exec(be, &ex, &rt, err, sizeof err);
    EXPECT(rc == 0, "exec after an error returned %d (%s)", rc, err);

    /* starts on both dimensions: [-3, 700) x [5, 1029) writes out[i + 3, j] = i * 10000 + j in
       a 703 x 1100 array (index registers 0 and 1, never written: the lanes' row path) */
    {
        static const dvm_node n2[] = {
            {DVM_OP_CONST, 0, 2, 10000, 0}, {DVM_OP_MULI, 0, 3, 0, 2}, {DVM_OP_ADDI, 0, 3, 3, 1},
            {DVM_OP_ADDIK, 0, 4, 0, 3},     {DVM_OP_IDX, 0, 5, 4, 0},   {DVM_OP_IDXM, 0, 5, 1, 1},
            {DVM_OP_ST, 0, 5, 3, 0},        {DVM_OP_END, 0, 0, 0, 0},
        };
        dvm_task_desc t2;
        memset(&t2, 0, sizeof t2);
        t2.kind = DVM_TASK_PARALLEL; t2.ndim = 2; t2.nregs = 6; t2.code_len = 8;
        t2.ext_u[0] = 0; t2.ext_u[1] = 1; t2.start_u[0] = 2; t2.start_u[1] = 3; t2.start_u[2] = DVM_NO_SLOT;
        t2.idx_reg[0] = 0; t2.idx_reg[1] = 1;
        dvm_program p2;
        memset(&p2, 0, sizeof p2);
        p2.nodes = (dvm_node *)n2; p2.nnodes = 8; p2.tasks = &t2; p2.ntasks = 1; p2.consts = &konst; p2.nconsts = 1;
        const int64_t r0 = 703, r1 = 1100, m = r0 * r1;
        uint32_t *ob = malloc(m * 4);
        dvm_buffer *bo = NULL;
        dvm_loaded *l2 = NULL;
        for (int64_t i = 0; i < m; i++) ob[i] = 0xFFFFFFFFu;
        EXPECT(vt->alloc(be, m * 4, &bo, err, sizeof err) == 0 && vt->write(be, bo, 0, ob, m * 4, err, sizeof err) == 0 &&
                   vt->load(be, &p2, &l2, err, sizeof err) == 0, "2-D with starts: setup: %s", err);
        if (!fails) {
            dvm_buffer *arr2[1] = {bo};
            int64_t len2[1] = {m};
            int32_t shape2[4] = {(int32_t)r0, (int32_t)r1, 1, 1};
            uint32_t u2[4] = {700, 1029, (uint32_t)-3, 5};
            dvm_variant_desc var3 = {0, 1, 0, 0, 0, 1, 4, 1};
            dvm_exec e2 = ex;
            e2.prog = &p2; e2.loaded = l2; e2.var = &var3; e2.nslots = 1; e2.arrays = arr2; e2.arr_len = len2;
            e2.arr_shape = shape2; e2.uniforms = u2; e2.nuniforms = 4;
            e2.nthread_slots = vt->slots(be, &e2);
            /* twice: the starts and extents read on the device, then known to the host (as
               vm/launch.c marks them: by value, the grid sized to the 703 x 1024 iterations) */
            static const uint8_t known[4] = {1, 1, 1, 1};
            for (int k = 0; k < 2 && !fails; k++) {
                e2.known = k ? known : NULL;
                if (k) {
                    for (int64_t i = 0; i < m; i++) ob[i] = 0xFFFFFFFFu;
                    vt->write(be, bo, 0, ob, m * 4, err, sizeof err);
                }
                memset(&rt, 0, sizeof rt);
                rc = vt->exec(be, &e2, &rt, err, sizeof err);
                EXPECT(rc == 0, "2-D with starts (%s): exec returned %d (%s, rt code %d)", k ? "known" : "device", rc, err,
                       rt.code);
                vt->read(be, bo, 0, ob, m * 4, err, sizeof err);
                bad = 0;
                for (int64_t i = 0; i < r0; i++)
                    for (int64_t j = 0; j < r1; j++) {
                        uint32_t want = j >= 5 && j < 1029 ? (uint32_t)((i - 3) * 10000 + j) : 0xFFFFFFFFu;
                        bad += ob[i * r1 + j] != want;
                    }
                EXPECT(bad == 0, "2-D with starts (%s): %lld of %lld elements differ", k ? "known" : "device",
                       (long long)bad, (long long)m);
            }
            vt->unload(be, l2);
        }
        if (bo) vt->free(be, bo);
        free(ob);
    }

    vt->unload(be, ld);
    vt->free(be, bx); vt->free(be, by); vt->free(be, bs); vt->free(be, bh); vt->free(be, heap);
    vt->close(be);
    free(x); free(y); free(yr); free(steps);
    if (fails) return 1;
    printf("test_gpu_backend: OK (%s: saxpy, serial->parallel extent, atomics, OOB record, sizer max-reducer, "
           "2-D starts)\n", which);
    return 0;
}
