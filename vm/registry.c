/* registry.c: the backends compiled into this build, in the order `auto` tries them
 * (the fastest first: cuda, hip, vulkan on a hardware device, then cpu, which always opens).
 * A software Vulkan device (lavapipe) is never auto's choice: it runs the bytecode on the
 * same cores as the cpu backend, through a shader compiler, 100x-500x slower. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vm/runtime.h"

static const dvm_backend_vtbl *const backend_list[] = {
#ifdef DVM_HAVE_CUDA
    &dvm_backend_cuda,
#endif
#ifdef DVM_HAVE_HIP
    &dvm_backend_hip,
#endif
#ifdef DVM_HAVE_VULKAN
    &dvm_backend_vulkan,
#endif
    &dvm_backend_cpu,
};

const dvm_backend_vtbl *const *dvm_backend_list(int *n) {
    *n = (int)(sizeof backend_list / sizeof backend_list[0]);
    return backend_list;
}

const dvm_backend_vtbl *dvm_backend_by_name(const char *name) {
    int n;
    const dvm_backend_vtbl *const *l = dvm_backend_list(&n);
    for (int i = 0; i < n; i++)
        if (!strcmp(l[i]->name, name)) return l[i];
    return NULL;
}

dvm_backend *dvm_backend_open_auto(const dvm_backend_opts *opts, const dvm_backend_vtbl **vt, char *why, size_t whylen) {
    int n;
    const dvm_backend_vtbl *const *list = dvm_backend_list(&n);
    size_t used = 0;
    *vt = NULL;
    if (whylen) why[0] = 0;
    for (int i = 0; i < n; i++) {
        char err[1024] = "", name[256] = "";
        dvm_backend *be = NULL;
        if (list[i]->software && list[i]->software(opts, name, sizeof name))
            snprintf(err, sizeof err, "device %d (%s) is a software device on the CPU, which auto passes over "
                     "(--backend %s uses it)", opts->device, name, list[i]->name);
        else
            be = list[i]->open(opts, err, sizeof err);
        if (be) {
            *vt = list[i];
            return be;
        }
        if (used < whylen) {
            int k = snprintf(why + used, whylen - used, "%s%s: %s", used ? "; " : "", list[i]->name, err);
            if (k > 0) used += (size_t)k;
        }
    }
    return NULL;
}

char *dvm_backends_report(void) {
    static const char *const all[] = {"cuda", "hip", "vulkan", "cpu"};
    static const char *const option[] = {"-DDVM_CUDA=ON", "-DDVM_HIP=ON", "-DDVM_VULKAN=ON", ""};
    size_t cap = 16384, n = 0;
    char *out = (char *)malloc(cap);
    if (!out) return NULL;
    out[0] = 0;
    n += (size_t)snprintf(out + n, cap - n, "dvm %s, bytecode opcode table hash %016llx\n", DVM_VERSION_STRING,
                          (unsigned long long)dvm_ops_hash());
    for (int i = 0; i < 4 && n < cap; i++) {
        const dvm_backend_vtbl *vt = dvm_backend_by_name(all[i]);
        if (!vt) {
            n += (size_t)snprintf(out + n, cap - n, "%s: not compiled into this build (configure with %s)\n", all[i], option[i]);
            continue;
        }
        char lines[4096] = "";
        int ndev = vt->probe ? vt->probe(lines, sizeof lines) : 0;
        n += (size_t)snprintf(out + n, cap - n, "%s: %d device%s\n", all[i], ndev, ndev == 1 ? "" : "s");
        /* indent each line the backend wrote (devices, or why it found none) */
        for (char *l = lines; *l && n < cap;) {
            char *e = strchr(l, '\n');
            size_t len = e ? (size_t)(e - l) : strlen(l);
            if (len) n += (size_t)snprintf(out + n, cap - n, "  %.*s\n", (int)len, l);
            l += len + (e ? 1 : 0);
        }
    }
    return out;
}
