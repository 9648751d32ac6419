/* hip_backend.c: the HIP runtime behind gpu_driver.h. libamdhip64.so is opened at run time
 * (nothing links against it); the interpreter is the offload bundle of code objects
 * embedded at build time (hip.cmake), loaded with hipModuleLoadData. */
#include "vm/cuda_hip/gpu_driver.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* The few HIP runtime types and entry points we use (hip_runtime_api.h). */
typedef int hipError_t;
typedef int hipDevice_t;
typedef struct ihipModule_t *hipModule_t;
typedef struct ihipModuleSymbol_t *hipFunction_t;
typedef struct ihipStream_t *hipStream_t;

/* hipDeviceAttribute_t values (stable since ROCm 5.0) */
#define HIP_ATTR_MULTIPROCESSOR_COUNT 63
#define HIP_ATTR_CC_MAJOR 23
#define HIP_ATTR_CC_MINOR 61
#define HIP_ATTR_MAX_SHARED_PER_BLOCK 74
#define HIP_ERROR_NO_BINARY_FOR_GPU 209

extern const unsigned char dvm_hip_image[];
extern const char dvm_hip_targets[];

static struct {
    int tried, ok;
    char why[400];
    void *lib;
    hipError_t (*Init)(unsigned);
    hipError_t (*GetDeviceCount)(int *);
    hipError_t (*DeviceGetName)(char *, int, hipDevice_t);
    hipError_t (*DeviceGetAttribute)(int *, int, int);
    hipError_t (*SetDevice)(int);
    hipError_t (*DeviceSynchronize)(void);
    hipError_t (*ModuleLoadData)(hipModule_t *, const void *);
    hipError_t (*ModuleUnload)(hipModule_t);
    hipError_t (*ModuleGetFunction)(hipFunction_t *, hipModule_t, const char *);
    hipError_t (*ModuleGetGlobal)(void **, size_t *, hipModule_t, const char *);
    hipError_t (*Malloc)(void **, size_t);
    hipError_t (*Free)(void *);
    hipError_t (*Memset)(void *, int, size_t);
    hipError_t (*MemcpyHtoD)(void *, void *, size_t);
    hipError_t (*MemcpyDtoH)(void *, void *, size_t);
    hipError_t (*MemcpyDtoD)(void *, void *, size_t);
    hipError_t (*ModuleLaunchKernel)(hipFunction_t, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                     unsigned, hipStream_t, void **, void **);
    hipError_t (*Occupancy)(int *, hipFunction_t, int, size_t);
    const char *(*GetErrorName)(hipError_t);
    const char *(*GetErrorString)(hipError_t);
    hipError_t (*PointerGetAttribute)(void *, int, void *); /* optional: wrapping device memory */
    hipError_t (*HostMalloc)(void **, size_t, unsigned);
    hipError_t (*HostGetDevicePointer)(void **, void *, unsigned);
    hipError_t (*HostFree)(void *);
} hp;

static int hip_load(char *err, size_t errlen) {
    if (!hp.tried) {
        hp.tried = 1;
        static const char *const libs[] = {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"};
        const char *e = NULL;
        for (size_t i = 0; i < 3 && !hp.lib; i++) {
            hp.lib = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
            if (!hp.lib) e = dlerror();
        }
        if (!hp.lib) {
            snprintf(hp.why, sizeof hp.why, "hip backend: the HIP runtime libamdhip64.so was not found (%s)",
                     e ? e : "dlopen failed");
        } else {
            struct { void **fn; const char *name; } syms[] = {
#define SYM(f, n) {(void **)&hp.f, n}
                SYM(Init, "hipInit"), SYM(GetDeviceCount, "hipGetDeviceCount"), SYM(DeviceGetName, "hipDeviceGetName"),
                SYM(DeviceGetAttribute, "hipDeviceGetAttribute"), SYM(SetDevice, "hipSetDevice"),
                SYM(DeviceSynchronize, "hipDeviceSynchronize"), SYM(ModuleLoadData, "hipModuleLoadData"),
                SYM(ModuleUnload, "hipModuleUnload"), SYM(ModuleGetFunction, "hipModuleGetFunction"),
                SYM(ModuleGetGlobal, "hipModuleGetGlobal"), SYM(Malloc, "hipMalloc"), SYM(Free, "hipFree"),
                SYM(Memset, "hipMemset"), SYM(MemcpyHtoD, "hipMemcpyHtoD"), SYM(MemcpyDtoH, "hipMemcpyDtoH"),
                SYM(MemcpyDtoD, "hipMemcpyDtoD"), SYM(ModuleLaunchKernel, "hipModuleLaunchKernel"),
                SYM(Occupancy, "hipModuleOccupancyMaxActiveBlocksPerMultiprocessor"),
                SYM(GetErrorName, "hipGetErrorName"), SYM(GetErrorString, "hipGetErrorString"),
                SYM(HostMalloc, "hipHostMalloc"), SYM(HostGetDevicePointer, "hipHostGetDevicePointer"),
                SYM(HostFree, "hipHostFree"),
#undef SYM
            };
            int ok = 1;
            for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
                *syms[i].fn = dlsym(hp.lib, syms[i].name);
                if (!*syms[i].fn) {
                    snprintf(hp.why, sizeof hp.why, "hip backend: the HIP runtime lacks %s (too old)", syms[i].name);
                    ok = 0;
                    break;
                }
            }
            *(void **)&hp.PointerGetAttribute = dlsym(hp.lib, "hipPointerGetAttribute");
            if (ok) {
                hipError_t rc = hp.Init(0);
                if (rc != 0)
                    snprintf(hp.why, sizeof hp.why, "hip backend: hipInit failed: %s (no usable AMD GPU or driver)",
                             hp.GetErrorName(rc));
                else
                    hp.ok = 1;
            }
        }
    }
    if (!hp.ok) {
        snprintf(err, errlen, "%s", hp.why);
        return -1;
    }
    return 0;
}

static int hip_count(int *n) { return hp.GetDeviceCount(n); }
static int hip_dev_name(int ord, char *buf, int len) { return hp.DeviceGetName(buf, len, ord); }
static int hip_attr(int ord, int which, int *v) {
    static const int map[] = {HIP_ATTR_MULTIPROCESSOR_COUNT, HIP_ATTR_CC_MAJOR, HIP_ATTR_CC_MINOR,
                              HIP_ATTR_MAX_SHARED_PER_BLOCK};
    return hp.DeviceGetAttribute(v, map[which], ord);
}
static int hip_ctx_open(int ord, void **ctx) {
    *ctx = (void *)1; /* HIP has no explicit context: the device is selected per thread */
    return hp.SetDevice(ord);
}
static void hip_ctx_close(int ord, void *ctx) {
    (void)ord;
    (void)ctx;
}
static int hip_bind(int ord, void *ctx) {
    (void)ctx;
    return hp.SetDevice(ord);
}
static int hip_mod_load(const void *image, void **mod) { return hp.ModuleLoadData((hipModule_t *)mod, image); }
static void hip_mod_unload(void *mod) { hp.ModuleUnload((hipModule_t)mod); }
static int hip_func(void *mod, const char *name, void **fn) {
    return hp.ModuleGetFunction((hipFunction_t *)fn, (hipModule_t)mod, name);
}
static int hip_global(void *mod, const char *name, uint64_t *p, size_t *bytes) {
    void *d = NULL;
    int rc = hp.ModuleGetGlobal(&d, bytes, (hipModule_t)mod, name);
    *p = (uint64_t)(uintptr_t)d;
    return rc;
}
static int hip_alloc(uint64_t *p, size_t n) {
    void *d = NULL;
    int rc = hp.Malloc(&d, n);
    *p = (uint64_t)(uintptr_t)d;
    return rc;
}
static void *P(uint64_t p) { return (void *)(uintptr_t)p; }
static void hip_free(uint64_t p) { hp.Free(P(p)); }
static int hip_zero(uint64_t p, size_t n) { return hp.Memset(P(p), 0, n); }
static int hip_h2d(uint64_t d, const void *s, size_t n) { return hp.MemcpyHtoD(P(d), (void *)(uintptr_t)s, n); }
static int hip_d2h(void *d, uint64_t s, size_t n) { return hp.MemcpyDtoH(d, P(s), n); }
static int hip_d2d(uint64_t d, uint64_t s, size_t n) { return hp.MemcpyDtoD(P(d), P(s), n); }
static int hip_launch(void *fn, unsigned grid, unsigned block, unsigned smem, void **params) {
    return hp.ModuleLaunchKernel((hipFunction_t)fn, grid, 1, 1, block, 1, 1, smem, NULL, params, NULL);
}
static int hip_sync(void) { return hp.DeviceSynchronize(); }
static int hip_occupancy(int *nb, void *fn, int block, size_t smem) {
    return hp.Occupancy(nb, (hipFunction_t)fn, block, smem);
}
static int hip_set_max_smem(void *fn, int bytes) {
    (void)fn;
    (void)bytes;
    return 1; /* AMD GPUs have no opt-in beyond the per-block LDS limit */
}
#define HIP_HOST_MALLOC_PORTABLE 0x1
#define HIP_HOST_MALLOC_MAPPED 0x2
static int hip_host_alloc_mapped(size_t n, void **host, uint64_t *dev) {
    void *d = NULL;
    int rc = hp.HostMalloc(host, n, HIP_HOST_MALLOC_PORTABLE | HIP_HOST_MALLOC_MAPPED);
    if (rc == 0) rc = hp.HostGetDevicePointer(&d, *host, 0);
    *dev = (uint64_t)(uintptr_t)d;
    return rc;
}
static void hip_host_free(void *host) { hp.HostFree(host); }
static const char *hip_errstr(int code) {
    static char buf[256];
    snprintf(buf, sizeof buf, "%s (%d: %s)", hp.GetErrorName ? hp.GetErrorName(code) : "unknown", code,
             hp.GetErrorString ? hp.GetErrorString(code) : "");
    return buf;
}

/* hipPointer_attribute values (the same numbers as CUDA's) */
#define HIP_POINTER_ATTRIBUTE_DEVICE_ORDINAL 9
#define HIP_POINTER_ATTRIBUTE_RANGE_START_ADDR 11
#define HIP_POINTER_ATTRIBUTE_RANGE_SIZE 12
static int hip_ptr_range(uint64_t p, int *ordinal, uint64_t *start, size_t *size) {
    if (!hp.PointerGetAttribute) return -1;
    void *s = NULL;
    int rc = hp.PointerGetAttribute(ordinal, HIP_POINTER_ATTRIBUTE_DEVICE_ORDINAL, P(p));
    if (!rc) rc = hp.PointerGetAttribute(&s, HIP_POINTER_ATTRIBUTE_RANGE_START_ADDR, P(p));
    if (!rc) rc = hp.PointerGetAttribute(size, HIP_POINTER_ATTRIBUTE_RANGE_SIZE, P(p));
    *start = (uint64_t)(uintptr_t)s;
    return rc;
}

static const dvm_gpu_driver hip_driver = {
    .name = "hip", .api = "HIP runtime", .load = hip_load, .count = hip_count, .dev_name = hip_dev_name,
    .attr = hip_attr, .ctx_open = hip_ctx_open, .ctx_close = hip_ctx_close, .bind = hip_bind,
    .mod_load = hip_mod_load, .mod_unload = hip_mod_unload, .func = hip_func, .global = hip_global,
    .alloc = hip_alloc, .free = hip_free, .zero = hip_zero, .h2d = hip_h2d, .d2h = hip_d2h, .d2d = hip_d2d,
    .launch = hip_launch, .sync = hip_sync, .occupancy = hip_occupancy, .set_max_smem = hip_set_max_smem,
    .errstr = hip_errstr, .no_binary_code = HIP_ERROR_NO_BINARY_FOR_GPU, .image = dvm_hip_image,
    .image_len = 0, .targets = dvm_hip_targets, .warp_vote_cc = 0 /* no vote in the HIP build */,
    .ptr_range = hip_ptr_range, .host_alloc_mapped = hip_host_alloc_mapped, .host_free = hip_host_free};

static dvm_backend *hip_open(const dvm_backend_opts *opts, char *err, size_t errlen) {
    return dvm_gpu_open(&hip_driver, opts, err, errlen);
}
static int hip_probe(char *out, size_t outlen) { return dvm_gpu_probe(&hip_driver, out, outlen); }

const dvm_backend_vtbl dvm_backend_hip = DVM_GPU_VTBL("hip", hip_open, hip_probe);
