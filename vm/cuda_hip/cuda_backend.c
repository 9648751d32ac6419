/* cuda_backend.c: the CUDA driver API behind gpu_driver.h. libcuda.so.1 is opened at run
 * time (nothing links against it), so one build runs on machines with or without NVIDIA
 * GPUs; the interpreter is the fatbin embedded at build time (cuda.cmake). */
#include "vm/cuda_hip/gpu_driver.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* The few driver API types and entry points we use (cuda.h, stable ABI). */
typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef unsigned long long CUdeviceptr;

#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN 97
#define CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES 8
#define CUDA_ERROR_NO_BINARY_FOR_GPU 209
#define CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL 9
#define CU_POINTER_ATTRIBUTE_RANGE_START_ADDR 11
#define CU_POINTER_ATTRIBUTE_RANGE_SIZE 12

extern const unsigned char dvm_cuda_image[];
extern const size_t dvm_cuda_image_len;
extern const char dvm_cuda_targets[];

static struct {
    int tried, ok;
    char why[400];
    void *lib;
    CUresult (*Init)(unsigned);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxSynchronize)(void);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleUnload)(CUmodule);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*ModuleGetGlobal)(CUdeviceptr *, size_t *, CUmodule, const char *);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemsetD8)(CUdeviceptr, unsigned char, size_t);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void **, void **);
    CUresult (*OccupancyMaxActiveBlocksPerMultiprocessor)(int *, CUfunction, int, size_t);
    CUresult (*FuncSetAttribute)(CUfunction, int, int);
    CUresult (*GetErrorName)(CUresult, const char **);
    CUresult (*GetErrorString)(CUresult, const char **);
    CUresult (*PointerGetAttribute)(void *, int, CUdeviceptr); /* optional: wrapping device memory */
    CUresult (*MemHostAlloc)(void **, size_t, unsigned);
    CUresult (*MemHostGetDevicePointer)(CUdeviceptr *, void *, unsigned);
    CUresult (*MemFreeHost)(void *);
} cu;

static int cu_load(char *err, size_t errlen) {
    if (!cu.tried) {
        cu.tried = 1;
        cu.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!cu.lib) {
            const char *e = dlerror();
            snprintf(cu.why, sizeof cu.why, "cuda backend: the NVIDIA driver library libcuda.so.1 was not found (%s)",
                     e ? e : "dlopen failed");
        } else {
            struct { void **fn; const char *name; } syms[] = {
#define SYM(f, n) {(void **)&cu.f, n}
                SYM(Init, "cuInit"), SYM(DeviceGetCount, "cuDeviceGetCount"), SYM(DeviceGet, "cuDeviceGet"),
                SYM(DeviceGetName, "cuDeviceGetName"), SYM(DeviceGetAttribute, "cuDeviceGetAttribute"),
                SYM(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
                SYM(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
                SYM(CtxSetCurrent, "cuCtxSetCurrent"), SYM(CtxSynchronize, "cuCtxSynchronize"),
                SYM(ModuleLoadData, "cuModuleLoadData"), SYM(ModuleUnload, "cuModuleUnload"),
                SYM(ModuleGetFunction, "cuModuleGetFunction"), SYM(ModuleGetGlobal, "cuModuleGetGlobal_v2"),
                SYM(MemAlloc, "cuMemAlloc_v2"), SYM(MemFree, "cuMemFree_v2"), SYM(MemsetD8, "cuMemsetD8_v2"),
                SYM(MemcpyHtoD, "cuMemcpyHtoD_v2"), SYM(MemcpyDtoH, "cuMemcpyDtoH_v2"),
                SYM(MemcpyDtoD, "cuMemcpyDtoD_v2"), SYM(LaunchKernel, "cuLaunchKernel"),
                SYM(OccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor"),
                SYM(FuncSetAttribute, "cuFuncSetAttribute"), SYM(GetErrorName, "cuGetErrorName"),
                SYM(GetErrorString, "cuGetErrorString"), SYM(MemHostAlloc, "cuMemHostAlloc"),
                SYM(MemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2"), SYM(MemFreeHost, "cuMemFreeHost"),
#undef SYM
            };
            int ok = 1;
            for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
                *syms[i].fn = dlsym(cu.lib, syms[i].name);
                if (!*syms[i].fn) {
                    snprintf(cu.why, sizeof cu.why, "cuda backend: libcuda.so.1 lacks %s (driver too old)", syms[i].name);
                    ok = 0;
                    break;
                }
            }
            *(void **)&cu.PointerGetAttribute = dlsym(cu.lib, "cuPointerGetAttribute");
            if (ok) {
                CUresult rc = cu.Init(0);
                if (rc != 0) {
                    const char *n = "?";
                    cu.GetErrorName(rc, &n);
                    snprintf(cu.why, sizeof cu.why, "cuda backend: cuInit failed: %s (no usable NVIDIA GPU or driver)", n);
                } else {
                    cu.ok = 1;
                }
            }
        }
    }
    if (!cu.ok) {
        snprintf(err, errlen, "%s", cu.why);
        return -1;
    }
    return 0;
}

static int cu_count(int *n) { return cu.DeviceGetCount(n); }
static int cu_dev_name(int ord, char *buf, int len) {
    CUdevice d;
    int rc = cu.DeviceGet(&d, ord);
    return rc ? rc : cu.DeviceGetName(buf, len, d);
}
static int cu_attr(int ord, int which, int *v) {
    static const int map[] = {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                              CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                              CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN};
    CUdevice d;
    int rc = cu.DeviceGet(&d, ord);
    return rc ? rc : cu.DeviceGetAttribute(v, map[which], d);
}
static int cu_ctx_open(int ord, void **ctx) {
    CUdevice d;
    CUcontext c = NULL;
    int rc = cu.DeviceGet(&d, ord);
    if (!rc) rc = cu.DevicePrimaryCtxRetain(&c, d);
    if (!rc) rc = cu.CtxSetCurrent(c);
    *ctx = c;
    return rc;
}
static void cu_ctx_close(int ord, void *ctx) {
    CUdevice d;
    (void)ctx;
    if (cu.DeviceGet(&d, ord) == 0) cu.DevicePrimaryCtxRelease(d);
}
static int cu_bind(int ord, void *ctx) {
    (void)ord;
    return cu.CtxSetCurrent((CUcontext)ctx);
}
static int cu_mod_load(const void *image, void **mod) { return cu.ModuleLoadData((CUmodule *)mod, image); }
static void cu_mod_unload(void *mod) { cu.ModuleUnload((CUmodule)mod); }
static int cu_func(void *mod, const char *name, void **fn) {
    return cu.ModuleGetFunction((CUfunction *)fn, (CUmodule)mod, name);
}
static int cu_global(void *mod, const char *name, uint64_t *p, size_t *bytes) {
    CUdeviceptr d = 0;
    int rc = cu.ModuleGetGlobal(&d, bytes, (CUmodule)mod, name);
    *p = d;
    return rc;
}
static int cu_alloc(uint64_t *p, size_t n) {
    CUdeviceptr d = 0;
    int rc = cu.MemAlloc(&d, n);
    *p = d;
    return rc;
}
static void cu_free(uint64_t p) { cu.MemFree(p); }
static int cu_zero(uint64_t p, size_t n) { return cu.MemsetD8(p, 0, n); }
static int cu_h2d(uint64_t d, const void *s, size_t n) { return cu.MemcpyHtoD(d, s, n); }
static int cu_d2h(void *d, uint64_t s, size_t n) { return cu.MemcpyDtoH(d, s, n); }
static int cu_d2d(uint64_t d, uint64_t s, size_t n) { return cu.MemcpyDtoD(d, s, n); }
static int cu_launch(void *fn, unsigned grid, unsigned block, unsigned smem, void **params) {
    return cu.LaunchKernel((CUfunction)fn, grid, 1, 1, block, 1, 1, smem, NULL, params, NULL);
}
static int cu_sync(void) { return cu.CtxSynchronize(); }
static int cu_occupancy(int *nb, void *fn, int block, size_t smem) {
    return cu.OccupancyMaxActiveBlocksPerMultiprocessor(nb, (CUfunction)fn, block, smem);
}
static int cu_set_max_smem(void *fn, int bytes) {
    return cu.FuncSetAttribute((CUfunction)fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
}
#define CU_MEMHOSTALLOC_PORTABLE 0x01
#define CU_MEMHOSTALLOC_DEVICEMAP 0x02
static int cu_host_alloc_mapped(size_t n, void **host, uint64_t *dev) {
    CUdeviceptr d = 0;
    int rc = cu.MemHostAlloc(host, n, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
    if (rc == 0) rc = cu.MemHostGetDevicePointer(&d, *host, 0);
    *dev = d;
    return rc;
}
static void cu_host_free(void *host) { cu.MemFreeHost(host); }
static const char *cu_errstr(int code) {
    static char buf[256];
    const char *n = "unknown", *s = "";
    if (cu.GetErrorName) cu.GetErrorName(code, &n);
    if (cu.GetErrorString) cu.GetErrorString(code, &s);
    snprintf(buf, sizeof buf, "%s (%d: %s)", n ? n : "unknown", code, s ? s : "");
    return buf;
}

static int cu_ptr_range(uint64_t p, int *ordinal, uint64_t *start, size_t *size) {
    if (!cu.PointerGetAttribute) return -1;
    CUdeviceptr s = 0;
    int rc = cu.PointerGetAttribute(ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p);
    if (!rc) rc = cu.PointerGetAttribute(&s, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p);
    if (!rc) rc = cu.PointerGetAttribute(size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p);
    *start = s;
    return rc;
}

static const dvm_gpu_driver cuda_driver = {
    .name = "cuda", .api = "CUDA driver", .load = cu_load, .count = cu_count, .dev_name = cu_dev_name,
    .attr = cu_attr, .ctx_open = cu_ctx_open, .ctx_close = cu_ctx_close, .bind = cu_bind,
    .mod_load = cu_mod_load, .mod_unload = cu_mod_unload, .func = cu_func, .global = cu_global,
    .alloc = cu_alloc, .free = cu_free, .zero = cu_zero, .h2d = cu_h2d, .d2h = cu_d2h, .d2d = cu_d2d,
    .launch = cu_launch, .sync = cu_sync, .occupancy = cu_occupancy, .set_max_smem = cu_set_max_smem,
    .errstr = cu_errstr, .no_binary_code = CUDA_ERROR_NO_BINARY_FOR_GPU, .image = dvm_cuda_image,
    .image_len = 0, .targets = dvm_cuda_targets, .warp_vote_cc = 8 /* __reduce_min_sync: sm_80 */,
    .ptr_range = cu_ptr_range, .host_alloc_mapped = cu_host_alloc_mapped, .host_free = cu_host_free};

static dvm_backend *cuda_open(const dvm_backend_opts *opts, char *err, size_t errlen) {
    return dvm_gpu_open(&cuda_driver, opts, err, errlen);
}
static int cuda_probe(char *out, size_t outlen) { return dvm_gpu_probe(&cuda_driver, out, outlen); }

const dvm_backend_vtbl dvm_backend_cuda = DVM_GPU_VTBL("cuda", cuda_open, cuda_probe);
