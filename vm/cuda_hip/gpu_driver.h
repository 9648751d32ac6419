/* gpu_driver.h: the few driver calls the CUDA and HIP backends need, behind one table
 * (VkFFT-style: what differs per API is confined to cuda_backend.c / hip_backend.c, each a
 * set of tiny functions over a dlopen'd runtime). gpu_backend.c implements the backend
 * once on top of it. Every call returns 0 or the API's own error code; errstr names it. */
#ifndef DVM_GPU_DRIVER_H
#define DVM_GPU_DRIVER_H

#include <stddef.h>
#include <stdint.h>
#include "vm/backend.h"

enum { DVM_GPU_A_SMS = 0, DVM_GPU_A_CC_MAJOR, DVM_GPU_A_CC_MINOR, DVM_GPU_A_SMEM_OPTIN };

typedef struct dvm_gpu_driver {
    const char *name;     /* "cuda", "hip" */
    const char *api;      /* "CUDA driver", "HIP runtime": for messages */
    /* dlopens the library and initialises it (once); 0, or -1 with why in err */
    int (*load)(char *err, size_t errlen);
    int (*count)(int *n);
    int (*dev_name)(int ordinal, char *buf, int len);
    int (*attr)(int ordinal, int which, int *v);
    int (*ctx_open)(int ordinal, void **ctx);
    void (*ctx_close)(int ordinal, void *ctx);
    int (*bind)(int ordinal, void *ctx); /* make the context current on this thread */
    int (*mod_load)(const void *image, void **mod);
    void (*mod_unload)(void *mod);
    int (*func)(void *mod, const char *name, void **fn);
    int (*global)(void *mod, const char *name, uint64_t *dptr, size_t *bytes);
    int (*alloc)(uint64_t *p, size_t n);
    void (*free)(uint64_t p);
    int (*zero)(uint64_t p, size_t n);
    int (*h2d)(uint64_t dst, const void *src, size_t n);
    int (*d2h)(void *dst, uint64_t src, size_t n);
    int (*d2d)(uint64_t dst, uint64_t src, size_t n);
    int (*launch)(void *fn, unsigned grid, unsigned block, unsigned smem, void **params);
    int (*sync)(void);
    int (*occupancy)(int *blocks, void *fn, int block, size_t smem);
    int (*set_max_smem)(void *fn, int bytes);
    const char *(*errstr)(int code);
    int no_binary_code;   /* the API's "no kernel image for this device" error */
    const unsigned char *image; /* the embedded interpreter (fatbin / offload bundle) */
    size_t image_len;
    const char *targets;  /* what the image was built for, for messages */
    int warp_vote_cc;     /* lowest compute-capability major whose image keeps a warp together
                             in an iteration (DVM_GPU_F_CONVERGE); 0: never (HIP) */
    /* The allocation the API knows p to lie in: its device ordinal, first address and size.
       0, or the API's error code where p is not memory it allocated or registered (a plain
       host pointer); -1 where the runtime lacks pointer queries. */
    int (*ptr_range)(uint64_t p, int *ordinal, uint64_t *start, size_t *size);
    /* page-locked host memory that kernels read through *dev while the host writes it (the
       cancel word); and its release */
    int (*host_alloc_mapped)(size_t n, void **host, uint64_t *dev);
    void (*host_free)(void *host);
} dvm_gpu_driver;

/* The backend functions shared by CUDA and HIP (gpu_backend.c). */
dvm_backend *dvm_gpu_open(const dvm_gpu_driver *drv, const dvm_backend_opts *opts, char *err, size_t errlen);
int dvm_gpu_probe(const dvm_gpu_driver *drv, char *out, size_t outlen);
void dvm_gpu_close(dvm_backend *be);
const char *dvm_gpu_device_name(dvm_backend *be);
int dvm_gpu_alloc(dvm_backend *be, size_t bytes, dvm_buffer **out, char *err, size_t errlen);
void dvm_gpu_free(dvm_backend *be, dvm_buffer *b);
int dvm_gpu_write(dvm_backend *be, dvm_buffer *b, size_t off, const void *src, size_t n, char *err, size_t errlen);
int dvm_gpu_read(dvm_backend *be, dvm_buffer *b, size_t off, void *dst, size_t n, char *err, size_t errlen);
int dvm_gpu_copy(dvm_backend *be, dvm_buffer *dst, dvm_buffer *src, size_t n, char *err, size_t errlen);
int dvm_gpu_wrap_device(dvm_backend *be, void *p, size_t bytes, dvm_buffer **out, char *err, size_t errlen);
void *dvm_gpu_data(dvm_backend *be, dvm_buffer *b);
int dvm_gpu_load(dvm_backend *be, const dvm_program *prog, dvm_loaded **out, char *err, size_t errlen);
void dvm_gpu_unload(dvm_backend *be, dvm_loaded *l);
int dvm_gpu_size_begin(dvm_backend *be, const dvm_size_plan *plan, dvm_sizing **out, char *err, size_t errlen);
int dvm_gpu_size_pass(dvm_backend *be, dvm_sizing *s, uint32_t prog, int final, char *err, size_t errlen);
int dvm_gpu_size_reduce(dvm_backend *be, dvm_sizing *s, uint32_t prog, char *err, size_t errlen);
int dvm_gpu_size_read(dvm_backend *be, dvm_sizing *s, int64_t *caps, dvm_rt_error *rt, char *err, size_t errlen);
void dvm_gpu_size_end(dvm_backend *be, dvm_sizing *s);
int64_t dvm_gpu_slots(dvm_backend *be, const dvm_exec *x);
int dvm_gpu_exec(dvm_backend *be, const dvm_exec *x, dvm_rt_error *rt, char *err, size_t errlen);
volatile uint32_t *dvm_gpu_cancel_word(dvm_backend *be);

/* designated: a field added to dvm_backend_vtbl is NULL here unless named */
#define DVM_GPU_VTBL(NAME, OPEN, PROBE)                                                        \
    {.name = NAME, .open = OPEN, .close = dvm_gpu_close, .probe = PROBE,                       \
     .device_name = dvm_gpu_device_name, .alloc = dvm_gpu_alloc, .free = dvm_gpu_free,         \
     .write = dvm_gpu_write, .read = dvm_gpu_read, .copy = dvm_gpu_copy,                       \
     .wrap_device = dvm_gpu_wrap_device, .data = dvm_gpu_data, .load = dvm_gpu_load,          \
     .unload = dvm_gpu_unload, .size_begin = dvm_gpu_size_begin, .size_pass = dvm_gpu_size_pass, \
     .size_reduce = dvm_gpu_size_reduce, .size_read = dvm_gpu_size_read,                      \
     .size_end = dvm_gpu_size_end, .slots = dvm_gpu_slots, .exec = dvm_gpu_exec,               \
     .may_stop = NULL, .cancel_word = dvm_gpu_cancel_word}

#endif
