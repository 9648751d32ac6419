/* test_hostrun.c: the serial tasks that the host runs before a launch (vm/launch.c,
 * prepare_uniforms) run exactly once, whatever the backend. A hand-built blob: task 0, serial
 * and on uniforms alone, adds 1 to the scalar parameter m's uniform; task 1 stores y[i] = i for
 * i in [0, m). With m = 3 and y of 4 elements the host finds the loop over [0, 4) in bounds, so
 * the launch takes no snapshot (it cannot fail); a backend that ran task 0 again would loop over
 * [0, 5) and fail after writing. Run on the CPU backend (scalar and lanes) and on Vulkan when
 * a device is there. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytecode/bc.h"
#include "bytecode/blob.h"
#include "dvm.h"
#include "tests/check.h"

#define N(op_, x_, a_, b_, c_) {DVM_OP_##op_, x_, a_, b_, c_}

static const char strs[] = "\0k\0y\0m\0n";
enum { S_K = 1, S_Y = 3, S_M = 5, S_N = 7 };

static void *make_blob(size_t *len) {
    static dvm_node nodes[] = {
        /* task 0 (serial): U0 = U0 + 1 */
        N(LDU, 0, 0, 0, 0), N(ADDIK, 0, 0, 0, 1), N(STU, 0, 0, 0, 0), N(END, 0, 0, 0, 0),
        /* task 1 (parallel over [0, U0)): y[i] = i */
        N(ST, 0, 0, 0, 0), N(END, 0, 0, 0, 0),
    };
    static uint32_t lines[6] = {1, 1, 1, 1, 2, 2};
    static uint16_t cols[6];
    static dvm_param_desc params[] = {
        {S_Y, 1, DVM_T_I32, 1, 0, 0, 0, {-1, 0, 0, 0}},
        {S_M, 0, DVM_T_I32, 0, 0, 0, 0, {0, 0, 0, 0}},
    };
    static dvm_sym_desc syms[] = {{S_N, 1, 0}};
    static dvm_slot_desc slots[] = {{0, DVM_ROLE_PRIMAL, 1}};
    static dvm_task_desc tasks[] = {
        {DVM_TASK_SERIAL, 0, 1, 0, 4, {0, 0, 0}, {DVM_NO_SLOT, DVM_NO_SLOT, DVM_NO_SLOT}, {0, 0, 0}, 0, 1, 0, 0},
        {DVM_TASK_PARALLEL, 1, 1, 4, 2, {0, 0, 0}, {DVM_NO_SLOT, DVM_NO_SLOT, DVM_NO_SLOT}, {0, 0, 0}, 0, 2, 1, 0},
    };
    static dvm_kernel_desc kernels[1];
    kernels[0] = (dvm_kernel_desc){S_K, 1, 0, 2, 0, 1, 0, {{0, 2, 0, 0, 0, 1, 2, 1}, {0}, {0}}};
    dvm_program p = {0, 1, 2, 1, 1, 2, 0, 6, 0, sizeof strs, kernels, params, syms, slots, tasks, NULL, nodes,
                     lines, cols, NULL, (char *)strs, 0};
    void *blob = NULL;
    char err[512];
    if (dvm_blob_write(&p, &blob, len, err, sizeof err)) {
        CHECK(0, "the blob does not verify: %s", err);
        return NULL;
    }
    return blob;
}

/* Returns 0 if it ran, 1 if the backend is not there. */
static int run(const char *backend, int cpu_lanes, const char *label, const void *blob, size_t len) {
    dvm_context_opts co = {.backend = backend, .cpu_lanes = cpu_lanes};
    dvm_context *ctx = NULL;
    if (dvm_context_create(&co, &ctx) != DVM_OK) {
        printf("%s: skipped (%s)\n", label, dvm_errmsg(ctx));
        dvm_context_destroy(ctx);
        return 1;
    }
    if (cpu_lanes) /* the backend took the option */
        CHECK(strstr(dvm_context_device(ctx), "lanes") != NULL, "%s: the device '%s' does not say lanes", label,
              dvm_context_device(ctx));
    dvm_module *m = NULL;
    const dvm_kernel *k = NULL;
    dvm_args *a = NULL;
    dvm_array *y = NULL;
    const int64_t shape[1] = {4};
    int32_t out[4] = {-7, -7, -7, -7};
    dvm_status st = dvm_load_blob(ctx, blob, len, "hostrun.dvb", &m);
    if (st == DVM_OK) st = dvm_kernel_find(ctx, m, "k", &k);
    if (st == DVM_OK) st = dvm_args_create(ctx, k, &a);
    if (st == DVM_OK) st = dvm_array_create(ctx, DVM_I32, 1, shape, &y);
    if (st == DVM_OK) st = dvm_array_write(ctx, y, out, 4);
    if (st == DVM_OK) st = dvm_args_array(ctx, a, "y", y);
    if (st == DVM_OK) st = dvm_args_i32(ctx, a, "m", 3);
    CHECK(st == DVM_OK, "%s: setting up: %s", label, dvm_errmsg(ctx));
    if (st == DVM_OK) {
        dvm_launch_stats ls;
        st = dvm_launch(ctx, k, a, NULL, &ls);
        CHECK(st == DVM_OK, "%s: the launch failed (the host's serial task ran twice?): %s", label, dvm_errmsg(ctx));
        CHECK(ls.snapshot_bytes == 0, "%s: the launch took a snapshot of %lld bytes; the host proves it cannot fail",
              label, (long long)ls.snapshot_bytes);
        dvm_array_read(ctx, y, out, 4);
        for (int i = 0; i < 4; i++) CHECK(out[i] == i, "%s: y[%d] = %d, expected %d", label, i, out[i], i);
        printf("%s: y = [%d, %d, %d, %d]\n", label, out[0], out[1], out[2], out[3]);
    }
    dvm_array_destroy(y);
    dvm_args_destroy(a);
    dvm_module_destroy(m);
    dvm_context_destroy(ctx);
    return 0;
}

int main(void) {
    size_t len = 0;
    void *blob = make_blob(&len);
    if (blob) {
        run("cpu", 0, "cpu", blob, len);
        run("cpu", 1, "cpu lanes", blob, len);
        run("vulkan", 0, "vulkan", blob, len);
    }
    free(blob);
    if (fails) {
        printf("test_hostrun: %d failure(s)\n", fails);
        return 1;
    }
    printf("test_hostrun: all passed\n");
    return 0;
}
