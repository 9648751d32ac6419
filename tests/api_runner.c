/* api_runner.c: runs a kernel through the public C API alone (dvm.h), with the same
 * arguments as `dvm run|grad|jvp`, so that the kernel corpus (tests/suite) checks the C API
 * path as well as the command:
 *   api_runner run|grad|jvp SRC.dvk KERNEL NAME=FILE.npy|NAME=VALUE|NAME.grad=F|NAME.dual=F ...
 *              --out DIR [--backend B]
 * Writes DIR/NAME.npy for every array and DIR/NAME.grad.npy / NAME.dual.npy (grad/jvp) after
 * a successful launch. Exit 0 on success, 1 on any failure (message on stderr). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dvm.h"
#include "cli/npy.h"

#define MAXP 64

static int fail(dvm_context *ctx, const char *what) {
    fprintf(stderr, "api_runner: %s: %s\n", what, ctx ? dvm_errmsg(ctx) : "");
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: api_runner run|grad|jvp SRC KERNEL ARGS... --out DIR [--backend B]\n");
        return 2;
    }
    const char *cmd = argv[1], *src = argv[2], *kname = argv[3], *out = NULL, *backend = "cpu";
    dvm_mode mode = !strcmp(cmd, "grad") ? DVM_ADJOINT : !strcmp(cmd, "jvp") ? DVM_TANGENT : DVM_FORWARD;
    for (int i = 4; i < argc; i++) {
        if (!strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
        else if (!strcmp(argv[i], "--backend") && i + 1 < argc) backend = argv[++i];
    }
    dvm_context_opts co = {.backend = backend};
    dvm_context *ctx = NULL;
    if (dvm_context_create(&co, &ctx) != DVM_OK) return fail(ctx, "context");
    dvm_module *m = NULL;
    const dvm_kernel *k = NULL;
    dvm_args *args = NULL;
    if (dvm_load_file(ctx, src, &m) != DVM_OK) return fail(ctx, src);
    if (dvm_kernel_find(ctx, m, kname, &k) != DVM_OK) return fail(ctx, kname);
    if (dvm_args_create(ctx, k, &args) != DVM_OK) return fail(ctx, "args");

    /* arrays[p][role]: role 0 primal, 1 grad/dual */
    dvm_array *arrays[MAXP][2];
    memset(arrays, 0, sizeof arrays);
    int np = dvm_kernel_param_count(k);
    if (np > MAXP) return fail(ctx, "too many parameters");
    for (int i = 4; i < argc; i++) {
        if (!strcmp(argv[i], "--out") || !strcmp(argv[i], "--backend")) {
            i++;
            continue;
        }
        char name[256];
        const char *eq = strchr(argv[i], '=');
        if (!eq || (size_t)(eq - argv[i]) >= sizeof name) return fail(ctx, argv[i]);
        memcpy(name, argv[i], (size_t)(eq - argv[i]));
        name[eq - argv[i]] = 0;
        int role = 0;
        char *dot = strchr(name, '.');
        if (dot) {
            role = 1;
            *dot = 0;
        }
        int p = -1;
        dvm_param_info pi;
        for (int j = 0; j < np; j++) {
            dvm_kernel_param(k, j, &pi);
            if (!strcmp(pi.name, name)) {
                p = j;
                break;
            }
        }
        if (p < 0) return fail(ctx, name);
        if (!pi.is_array) {
            dvm_status st = pi.dtype == DVM_F32 ? dvm_args_f32(ctx, args, name, strtof(eq + 1, NULL))
                                                : dvm_args_i32(ctx, args, name, (int32_t)strtol(eq + 1, NULL, 10));
            if (st != DVM_OK) return fail(ctx, name);
            continue;
        }
        dvm_npy a;
        char err[512];
        if (dvm_npy_read(eq + 1, &a, err, sizeof err)) {
            fprintf(stderr, "api_runner: %s\n", err);
            return 1;
        }
        dvm_array *arr;
        if (dvm_array_create(ctx, a.dtype, a.rank, a.shape, &arr) != DVM_OK) return fail(ctx, name);
        if (dvm_array_write(ctx, arr, a.data, a.count) != DVM_OK) return fail(ctx, name);
        dvm_npy_free(&a);
        arrays[p][role] = arr;
        dvm_status st = role == 0 ? dvm_args_array(ctx, args, name, arr)
                        : mode == DVM_TANGENT ? dvm_args_dual(ctx, args, name, arr)
                                              : dvm_args_grad(ctx, args, name, arr);
        if (st != DVM_OK) return fail(ctx, name);
    }
    /* grads/duals not given start at zero; create them so that they can be written out */
    for (int p = 0; p < np && mode != DVM_FORWARD; p++) {
        dvm_param_info pi;
        dvm_kernel_param(k, p, &pi);
        if (!pi.is_array || pi.dtype != DVM_F32 || arrays[p][1] || !arrays[p][0]) continue;
        dvm_array *a0 = arrays[p][0], *arr;
        int64_t shape[4];
        for (int d = 0; d < dvm_array_rank(a0); d++) shape[d] = dvm_array_dim(a0, d);
        if (dvm_array_create(ctx, DVM_F32, dvm_array_rank(a0), shape, &arr) != DVM_OK) return fail(ctx, pi.name);
        arrays[p][1] = arr;
        if ((mode == DVM_TANGENT ? dvm_args_dual : dvm_args_grad)(ctx, args, pi.name, arr) != DVM_OK)
            return fail(ctx, pi.name);
    }
    dvm_launch_opts lo = {mode, 0, 0, 0};
    if (dvm_launch(ctx, k, args, &lo, NULL) != DVM_OK) return fail(ctx, "launch");
    if (out) {
        mkdir(out, 0777);
        for (int p = 0; p < np; p++)
            for (int role = 0; role < 2; role++) {
                dvm_array *a = arrays[p][role];
                if (!a) continue;
                dvm_param_info pi;
                dvm_kernel_param(k, p, &pi);
                int64_t n = dvm_array_count(a), shape[4];
                for (int d = 0; d < dvm_array_rank(a); d++) shape[d] = dvm_array_dim(a, d);
                void *buf = malloc((size_t)(n ? n : 1) * 4);
                if (!buf || dvm_array_read(ctx, a, buf, n) != DVM_OK) return fail(ctx, pi.name);
                char path[1024], err[512];
                snprintf(path, sizeof path, "%s/%s%s.npy", out, pi.name,
                         role == 0 ? "" : mode == DVM_TANGENT ? ".dual" : ".grad");
                if (dvm_npy_write(path, dvm_array_dtype(a), dvm_array_rank(a), shape, buf, err, sizeof err)) {
                    fprintf(stderr, "api_runner: %s\n", err);
                    return 1;
                }
                free(buf);
            }
    }
    for (int p = 0; p < np; p++) {
        dvm_array_destroy(arrays[p][0]);
        dvm_array_destroy(arrays[p][1]);
    }
    dvm_args_destroy(args);
    dvm_module_destroy(m);
    dvm_context_destroy(ctx);
    return 0;
}
