/* vulkan_backend.c: the Vulkan backend (vm/backend.h). libvulkan.so.1 is opened with dlopen
 * at run time; the interpreter is interp.comp, compiled to SPIR-V at build time in four
 * builds (64-bit or checked 32-bit arithmetic x f32 atomic add or CAS loops), one chosen per
 * device. Every buffer is reached by its device address (Vulkan 1.2 bufferDeviceAddress),
 * so there are no descriptor sets: per-dispatch parameters travel as push constants.
 *
 * Options (dvm_backend_opts): vk_no_int64 and vk_no_float_atomics force the fallback builds;
 * gpu_threads caps the threads of a parallel dispatch; vk_max_alloc lowers the largest
 * allocation (to test that limit); vk_lanes sets the iterations a thread runs at once
 * (vk_lanes()). The pipeline cache lives in $DVM_CACHE_DIR (else $XDG_CACHE_HOME/dvm, else
 * ~/.cache/dvm). */
#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <dlfcn.h>
#include <pthread.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bytecode/hash.h"
#include "vm/backend.h"
#include "vm/interp/gpu_abi.h"

#include "dvm_spv_i0_f0.h"
#include "dvm_spv_i0_f1.h"
#include "dvm_spv_i1_f0.h"
#include "dvm_spv_i1_f1.h"

_Static_assert(sizeof(dvm_node) == 8, "interp.comp reads nodes as 2 words");
_Static_assert(sizeof(dvm_task_desc) == 40, "interp.comp reads task descriptors as 10 words (tw)");
_Static_assert(sizeof(dvm_rt_error) == 48, "interp.comp writes the error record as 12 words");

/* The push constants: interp.comp's block is generated from the same fields (gpu_abi.h). */
typedef struct vk_push {
#define VK_PUSH_A_(name) uint64_t name;
#define VK_PUSH_W_(name) uint32_t name;
    DVM_VK_PUSH_FIELDS(VK_PUSH_A_, VK_PUSH_W_)
#undef VK_PUSH_A_
#undef VK_PUSH_W_
} vk_push;
_Static_assert(sizeof(vk_push) <= 128, "push constants: 128 bytes is the guaranteed minimum");
enum { MODE_SERIAL = DVM_VK_MODE_SERIAL, MODE_PARALLEL = DVM_VK_MODE_PARALLEL, MODE_SZ_RANGES = DVM_VK_MODE_SZ_RANGES,
       MODE_SZ_FINAL = DVM_VK_MODE_SZ_FINAL, MODE_SZ_BODY = DVM_VK_MODE_SZ_BODY };
enum { FLAG_ZERO_SERIAL = DVM_VK_FLAG_ZERO_SERIAL, FLAG_ROWS = DVM_VK_FLAG_ROWS };
enum { RT_VK_RANGE32 = DVM_VK_RT_RANGE32, RT_VK_STEPS = DVM_VK_RT_STEPS }; /* interp.comp's backend-private error codes */
enum { ERR_WORDS = DVM_VK_ERR_WORDS };
#define WG_SIZE DVM_VK_WG_SIZE /* local_size_x of interp.comp */
/* interp.comp reads a slot's address and length as one 16-byte load (slot_al) and a rank-2
   shape as one 8-byte load: the slot table starts at a multiple of 4 words of the params
   buffer (whose address is 16-byte aligned, as every buffer's). */
#define SLOTS_AT(w) (((w) + 3u) & ~(size_t)3)
_Static_assert(DVM_VK_SLOT_ADDR == 0 && DVM_VK_SLOT_LEN == 2 && DVM_VK_SLOT_WORDS % 4 == 0 && DVM_VK_SLOT_SHAPE % 2 == 0,
               "slot_al: address and length are a slot's first 4 words");
_Static_assert(ERR_WORDS % 4 == 0, "the params buffer's words before the uniforms");

/* ---- the loader ---- */
#define VK_GLOBAL_FNS(X) X(vkCreateInstance) X(vkEnumerateInstanceVersion)
#define VK_INSTANCE_FNS(X)                                                                       \
    X(vkEnumeratePhysicalDevices) X(vkGetPhysicalDeviceProperties)          \
    X(vkGetPhysicalDeviceProperties2) X(vkGetPhysicalDeviceFeatures2)                            \
    X(vkGetPhysicalDeviceQueueFamilyProperties) X(vkGetPhysicalDeviceMemoryProperties)           \
    X(vkEnumerateDeviceExtensionProperties) X(vkCreateDevice) X(vkGetDeviceProcAddr)
#define VK_DEVICE_FNS(X)                                                                         \
    X(vkDestroyDevice) X(vkGetDeviceQueue) X(vkCreateBuffer) X(vkDestroyBuffer)                  \
    X(vkGetBufferMemoryRequirements) X(vkAllocateMemory) X(vkFreeMemory) X(vkBindBufferMemory)   \
    X(vkMapMemory) X(vkUnmapMemory) X(vkGetBufferDeviceAddress) X(vkCreateShaderModule)          \
    X(vkDestroyShaderModule) X(vkCreatePipelineLayout) X(vkDestroyPipelineLayout)                \
    X(vkCreatePipelineCache) X(vkDestroyPipelineCache) X(vkGetPipelineCacheData)                 \
    X(vkCreateComputePipelines) X(vkDestroyPipeline) X(vkCreateCommandPool)                      \
    X(vkDestroyCommandPool) X(vkAllocateCommandBuffers) X(vkBeginCommandBuffer)                  \
    X(vkEndCommandBuffer) X(vkResetCommandBuffer) X(vkCmdBindPipeline) X(vkCmdPushConstants)     \
    X(vkCmdDispatch) X(vkCmdPipelineBarrier) X(vkCmdCopyBuffer) X(vkCmdFillBuffer)               \
    X(vkQueueSubmit) X(vkCreateFence) X(vkDestroyFence) X(vkWaitForFences) X(vkResetFences)      \
    X(vkGetFenceStatus)

#define VK_DECL(f) static PFN_##f p_##f;
VK_GLOBAL_FNS(VK_DECL)
VK_INSTANCE_FNS(VK_DECL)
#undef VK_DECL
static PFN_vkGetInstanceProcAddr p_vkGetInstanceProcAddr;
static void *vk_lib;

static void fmt(char *err, size_t errlen, const char *f, ...) {
    if (!err || !errlen) return;
    va_list ap;
    va_start(ap, f);
    vsnprintf(err, errlen, f, ap);
    va_end(ap);
}

static int vk_load_loader(char *err, size_t errlen) {
    if (vk_lib) return 0;
    void *h = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) h = dlopen("libvulkan.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fmt(err, errlen, "vulkan: cannot open libvulkan.so.1 (the Vulkan loader is not installed): %s", dlerror());
        return -1;
    }
    p_vkGetInstanceProcAddr = (PFN_vkGetInstanceProcAddr)dlsym(h, "vkGetInstanceProcAddr");
    if (!p_vkGetInstanceProcAddr) {
        fmt(err, errlen, "vulkan: libvulkan.so.1 has no vkGetInstanceProcAddr");
        dlclose(h);
        return -1;
    }
#define VK_LOAD(f) p_##f = (PFN_##f)p_vkGetInstanceProcAddr(NULL, #f);
    VK_GLOBAL_FNS(VK_LOAD)
#undef VK_LOAD
    if (!p_vkCreateInstance) {
        fmt(err, errlen, "vulkan: the loader exports no vkCreateInstance");
        dlclose(h);
        return -1;
    }
    vk_lib = h;
    return 0;
}

static int vk_create_instance(VkInstance *out, char *err, size_t errlen) {
    if (vk_load_loader(err, errlen)) return -1;
    uint32_t ver = VK_API_VERSION_1_0;
    if (p_vkEnumerateInstanceVersion) p_vkEnumerateInstanceVersion(&ver);
    if (ver < VK_API_VERSION_1_2) {
        fmt(err, errlen, "vulkan: the loader supports Vulkan %u.%u; dvm needs 1.2", VK_API_VERSION_MAJOR(ver), VK_API_VERSION_MINOR(ver));
        return -1;
    }
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .pApplicationName = "dvm",
                             .pEngineName = "dvm", .apiVersion = VK_API_VERSION_1_2};
    VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
    VkResult r = p_vkCreateInstance(&ci, NULL, out);
    if (r != VK_SUCCESS) {
        fmt(err, errlen, "vulkan: vkCreateInstance failed (VkResult %d)", (int)r);
        return -1;
    }
#define VK_LOAD(f) p_##f = (PFN_##f)p_vkGetInstanceProcAddr(*out, #f);
    VK_INSTANCE_FNS(VK_LOAD)
#undef VK_LOAD
    return 0;
}

/* One VkInstance for the process, created on first use and never destroyed: creating one
 * costs tens of milliseconds (the loader reads every driver manifest), and destroying it
 * makes the loader unload the driver, whose one-time allocations then show up as leaks
 * under LeakSanitizer. Every backend instance borrows it. */
static pthread_mutex_t vk_instance_lock = PTHREAD_MUTEX_INITIALIZER;
static VkInstance vk_the_instance;

static int vk_instance(VkInstance *out, char *err, size_t errlen) {
    pthread_mutex_lock(&vk_instance_lock);
    int rc = 0;
    if (!vk_the_instance) rc = vk_create_instance(&vk_the_instance, err, errlen);
    *out = vk_the_instance;
    pthread_mutex_unlock(&vk_instance_lock);
    return rc;
}

/* ---- device capabilities ---- */
typedef struct vk_caps {
    VkPhysicalDeviceProperties props;
    uint32_t max_alloc_mb_unused;
    VkDeviceSize max_alloc;
    int bda, int64, int64_atomics, fatomic_add;
} vk_caps;

static int has_ext(VkPhysicalDevice pd, const char *name) {
    uint32_t n = 0;
    if (p_vkEnumerateDeviceExtensionProperties(pd, NULL, &n, NULL) != VK_SUCCESS || !n) return 0;
    VkExtensionProperties *e = calloc(n, sizeof *e);
    if (!e) return 0;
    int found = 0;
    if (p_vkEnumerateDeviceExtensionProperties(pd, NULL, &n, e) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++) found = strcmp(e[i].extensionName, name) == 0;
    free(e);
    return found;
}

static void vk_query(VkPhysicalDevice pd, vk_caps *c) {
    memset(c, 0, sizeof *c);
    VkPhysicalDeviceMaintenance3Properties m3 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &m3};
    p_vkGetPhysicalDeviceProperties2(pd, &p2);
    c->props = p2.properties;
    c->max_alloc = m3.maxMemoryAllocationSize;
    int afloat = has_ext(pd, VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME);
    VkPhysicalDeviceShaderAtomicFloatFeaturesEXT af = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT};
    VkPhysicalDeviceVulkan12Features f12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                            .pNext = afloat ? &af : NULL};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f12};
    if (c->props.apiVersion >= VK_API_VERSION_1_2) {
        p_vkGetPhysicalDeviceFeatures2(pd, &f2);
        c->bda = f12.bufferDeviceAddress;
        c->int64_atomics = f12.shaderBufferInt64Atomics;
        c->fatomic_add = afloat && af.shaderBufferFloat32AtomicAdd;
        c->int64 = f2.features.shaderInt64;
    }
}

static const char *dev_type(VkPhysicalDeviceType t) {
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "CPU";
    default: return "other";
    }
}

/* ---- the backend ---- */
struct dvm_buffer {
    VkBuffer buf;
    VkDeviceMemory mem;
    VkDeviceSize size;
    VkDeviceAddress addr;
    void *map; /* non-NULL when the memory is host-visible and coherent */
    int devlocal; /* the memory is device-local */
};

struct dvm_loaded {
    dvm_buffer *nodes, *consts, *tasks;
    uint8_t *lane_need; /* per task: whether run4 can run it, and with what (vk_task_lanes) */
};

/* What a four-lane pipeline has beyond the other nodes, each a specialization constant of
   interp.comp, so that launches without it keep the lane interpreter's code as it is (its
   registers, and its code: the row path's code alone, never run, made the transcendental
   kernel 1.3x slower, H100): the adstack nodes (LANE_STACKS), the fused one-node loop
   (LANE_LOOPS), the row path (LANE_ROWS), and plain lanes for a task without branches
   (LANE_PLAIN). vk_task_lanes says what a task needs: VK_LANES_OK and these. */
#define VK_LANES_OK 1
#define VK_X_STACKS 2
#define VK_X_LOOPS 4
#define VK_X_ROWS 8
#define VK_X_PLAIN 16
#define VK_X_MASK (VK_X_STACKS | VK_X_LOOPS | VK_X_ROWS | VK_X_PLAIN)
/* One pipeline of the interpreter: its register-file class (interp.comp: REGS, REGS_SHARED),
   its lanes (LANES) and, with four, its extras (VK_X_). */
typedef struct vk_pipe {
    uint32_t regs;
    int shared;
    uint32_t lanes;
    uint32_t extra;
    VkPipeline pipe;
} vk_pipe;
/* classes 16, 32, .., DVM_MAX_REGS (7) in shared memory, the private one, and the four-lane
   classes VK_LANE_MIN_REGS .. DVM_MAX_REGS (5) with each set of extras (16) */
#define VK_MAX_PIPES 88
/* The smallest four-lane register file: NVIDIA's compiler keeps a small private array in
   registers (see reg_class), a uvec4 array of 64 it does not. */
#define VK_LANE_MIN_REGS 64
/* The largest four-lane register file a launch takes at first: 256 uvec4 are 4 KiB a thread,
   as the one-lane private file. NVIDIA's driver fails to create the class of 1024 (16 KiB);
   a class the driver fails lowers be->lane_regs_max, and the launch runs on one lane. */
#define VK_LANE_MAX_REGS 256

typedef struct vk_lazy {
    dvm_buffer *dst, *src;
    size_t n;
} vk_lazy;

struct dvm_backend {
    VkInstance inst;
    VkPhysicalDevice pd;
    vk_caps caps;
    VkDevice dev;
    VkQueue queue;
    uint32_t qfam;
    VkPhysicalDeviceMemoryProperties mp;
    int use_int64, use_fatomic;
    VkDeviceSize max_alloc;
    int max_alloc_lowered; /* by the vk_max_alloc option (the message says so) */
    VkShaderModule shader;
    VkPipelineLayout layout;
    vk_pipe pipes[VK_MAX_PIPES]; /* per register-file class, created on first use (get_pipeline) */
    int npipes;
    VkPipeline pipe;             /* the smallest class's, created at open: the sizer's dispatches */
    uint32_t shared_regs_max;    /* the largest class with its registers in shared memory */
    VkPipelineCache pcache;
    char cache_file[600];
    int have_cache_path;
    size_t cache_bytes;          /* the cache's size when last read or written */
    VkCommandPool pool;
    VkCommandBuffer cmd;
    VkFence fence;
    uint32_t thread_cap;    /* threads of one parallel dispatch of a launch with adstacks */
    uint32_t thread_cap_ns; /* .. of a launch without (no heap slot per thread) */
    int private_ns;         /* a launch without adstacks takes private register files */
    int few_threads;        /* the gpu_threads option set the thread count */
    uint32_t max_threads;   /* threads one dispatch can have: maxComputeWorkGroupCount x WG_SIZE, < 2^31 */
    int poll_fence;         /* a wait polls the fence before blocking (not a CPU device) */
    int params_mapped;      /* params live in device-local memory the host maps (stage_params) */
    int lanes_ns;           /* .. and runs its parallel tasks four iterations an invocation */
    uint32_t lane_regs_max; /* .. when each task has at most this many registers */
    dvm_buffer *staging;  /* host-visible, for uploads and readbacks */
    dvm_buffer *params;   /* device: error record, uniforms, slot/stack tables, sizer jobs */
    dvm_buffer *scratch;  /* device: the sizer's slots */
    dvm_buffer *dummy;    /* stands in for a missing heap */
    dvm_buffer *cancel;   /* host-visible coherent, device-local where the device has such memory:
                             the context's cancel word (vk_cancel_word), read by the interpreter
                             at backward jumps */
    vk_lazy *lazy;        /* copies deferred by copy_lazy (vk_copy_lazy): recorded at the head of
                             the next exec's command buffer, or run by lazy_flush first */
    uint32_t nlazy, lazy_cap;
    double pipeline_ms;
    int cache_hit;
    char name[512];
};

#define VK_DEV_DECL(f) PFN_##f f;
typedef struct vk_dev_fns { VK_DEVICE_FNS(VK_DEV_DECL) } vk_dev_fns;
#undef VK_DEV_DECL
static vk_dev_fns D; /* device functions; one device's functions serve all devices of one
                        ICD, and dvm opens one backend per process in practice */

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int vkfail(VkResult r, const char *what, char *err, size_t errlen) {
    fmt(err, errlen, "vulkan: %s failed (VkResult %d%s)", what, (int)r,
        r == VK_ERROR_OUT_OF_DEVICE_MEMORY ? ": out of device memory"
        : r == VK_ERROR_OUT_OF_HOST_MEMORY ? ": out of host memory"
        : r == VK_ERROR_DEVICE_LOST ? ": device lost" : "");
    return -1;
}

static int find_mem(dvm_backend *be, uint32_t bits, VkMemoryPropertyFlags want, VkMemoryPropertyFlags prefer) {
    int best = -1;
    for (uint32_t i = 0; i < be->mp.memoryTypeCount; i++) {
        VkMemoryPropertyFlags f = be->mp.memoryTypes[i].propertyFlags;
        if (!(bits & (1u << i)) || (f & want) != want) continue;
        if ((f & prefer) == prefer) return (int)i;
        if (best < 0) best = (int)i;
    }
    return best;
}

static void buf_free(dvm_backend *be, dvm_buffer *b) {
    if (!b) return;
    if (b->map) D.vkUnmapMemory(be->dev, b->mem);
    if (b->buf) D.vkDestroyBuffer(be->dev, b->buf, NULL);
    if (b->mem) D.vkFreeMemory(be->dev, b->mem, NULL);
    free(b);
}

/* host: 1 for a host-visible coherent staging buffer, 0 for device memory. */
/* host: 0 device-local, 1 host-visible (prefers cached: staging), 2 host-visible, preferring
   device-local */
static int buf_new(dvm_backend *be, size_t bytes, int host, dvm_buffer **out, char *err, size_t errlen) {
    VkDeviceSize size = bytes < 16 ? 16 : (bytes + 15) & ~(VkDeviceSize)15;
    if (size > be->max_alloc) {
        fmt(err, errlen, "vulkan: an allocation of %zu bytes exceeds the device's largest allocation (%llu bytes, maxMemoryAllocationSize%s)",
            bytes, (unsigned long long)be->max_alloc, be->max_alloc_lowered ? " lowered by the vk_max_alloc option" : "");
        return -1;
    }
    dvm_buffer *b = calloc(1, sizeof *b);
    if (!b) { fmt(err, errlen, "vulkan: out of host memory"); return -1; }
    b->size = size;
    VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = size,
                             .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                      VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT,
                             .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    VkResult r = D.vkCreateBuffer(be->dev, &bi, NULL, &b->buf);
    if (r != VK_SUCCESS) { free(b); return vkfail(r, "vkCreateBuffer", err, errlen); }
    VkMemoryRequirements req;
    D.vkGetBufferMemoryRequirements(be->dev, b->buf, &req);
    VkMemoryPropertyFlags hv = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    /* host == 2: a word the host writes while shaders run (the cancel word). In system memory
       NVIDIA's shaders never saw the host's store (the GPU's L2 keeps the old line); written
       through the BAR into device-local memory, the next volatile load sees it. */
    int t = host == 2   ? find_mem(be, req.memoryTypeBits, hv, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)
            : host == 1 ? find_mem(be, req.memoryTypeBits, hv, VK_MEMORY_PROPERTY_HOST_CACHED_BIT)
                        : find_mem(be, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
    if (t < 0 && !host) t = find_mem(be, req.memoryTypeBits, 0, 0);
    if (t < 0) {
        buf_free(be, b);
        fmt(err, errlen, "vulkan: no suitable memory type for a %s buffer", host ? "host-visible" : "device");
        return -1;
    }
    VkMemoryAllocateFlagsInfo fl = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO,
                                    .flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT};
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .pNext = &fl,
                               .allocationSize = req.size, .memoryTypeIndex = (uint32_t)t};
    r = D.vkAllocateMemory(be->dev, &ai, NULL, &b->mem);
    if (r != VK_SUCCESS) {
        buf_free(be, b);
        fmt(err, errlen, "vulkan: cannot allocate %zu bytes of %s memory (VkResult %d)", bytes, host ? "host-visible" : "device", (int)r);
        return -1;
    }
    r = D.vkBindBufferMemory(be->dev, b->buf, b->mem, 0);
    if (r != VK_SUCCESS) { buf_free(be, b); return vkfail(r, "vkBindBufferMemory", err, errlen); }
    b->devlocal = (be->mp.memoryTypes[t].propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) != 0;
    if ((be->mp.memoryTypes[t].propertyFlags & hv) == hv) {
        r = D.vkMapMemory(be->dev, b->mem, 0, VK_WHOLE_SIZE, 0, &b->map);
        if (r != VK_SUCCESS) b->map = NULL;
    }
    VkBufferDeviceAddressInfo da = {.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO, .buffer = b->buf};
    b->addr = D.vkGetBufferDeviceAddress(be->dev, &da);
    *out = b;
    return 0;
}

/* Grows *b (contents lost) to at least bytes. */
static int buf_reserve(dvm_backend *be, dvm_buffer **b, size_t bytes, int host, char *err, size_t errlen) {
    if (*b && (*b)->size >= bytes) return 0;
    size_t want = bytes;
    if (*b && (size_t)(*b)->size * 2 > want) want = (size_t)(*b)->size * 2;
    if (want > be->max_alloc && bytes <= be->max_alloc) want = bytes;
    buf_free(be, *b);
    *b = NULL;
    return buf_new(be, want, host, b, err, errlen);
}

static void barrier(dvm_backend *be);
static uint32_t copy_threads(const dvm_backend *be, uint64_t units);
static void dispatch(dvm_backend *be, const vk_push *pc, uint32_t threads);
/* Records a copy of n bytes from the start of src to the start of dst into the command buffer
   being recorded, then a barrier. Between device buffers the interpreter's copy mode
   (interp.comp, copy_mode) moves them: on an H200, vkCmdCopyBuffer ran a snapshot's 64 MiB at
   about 0.8 TB/s (read + write), a fifth of the device's copy bandwidth. Host-visible buffers,
   sizes that are not whole words and copies of 8 GiB or more take vkCmdCopyBuffer. The caller
   binds its own pipeline afterwards. */
static void record_copy(dvm_backend *be, dvm_buffer *dst, dvm_buffer *src, size_t n) {
    if (dst->map || src->map || n % 4 || n >= ((size_t)1 << 33)) {
        VkBufferCopy rg = {.srcOffset = 0, .dstOffset = 0, .size = n};
        D.vkCmdCopyBuffer(be->cmd, src->buf, dst->buf, 1, &rg);
        barrier(be);
        return;
    }
    vk_push pc = {.mode = DVM_VK_MODE_COPY, .aux = src->addr, .heap = dst->addr, .walk_lo = (uint32_t)(n / 16),
                  .walk_hi = (uint32_t)(n % 16 / 4)};
    pc.nthreads = copy_threads(be, pc.walk_lo > 4 ? pc.walk_lo : 4); /* at least one invocation a tail word */
    D.vkCmdBindPipeline(be->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, be->pipe);
    dispatch(be, &pc, pc.nthreads);
}
/* Records the deferred copies into the command buffer being recorded. */
static void lazy_record(dvm_backend *be) {
    for (uint32_t i = 0; i < be->nlazy; i++) record_copy(be, be->lazy[i].dst, be->lazy[i].src, be->lazy[i].n);
    be->nlazy = 0;
}
/* Begins the command buffer; the deferred copies come first in it. */
static int cmd_begin(dvm_backend *be, char *err, size_t errlen) {
    VkResult r = D.vkResetCommandBuffer(be->cmd, 0);
    if (r != VK_SUCCESS) return vkfail(r, "vkResetCommandBuffer", err, errlen);
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    r = D.vkBeginCommandBuffer(be->cmd, &bi);
    if (r != VK_SUCCESS) return vkfail(r, "vkBeginCommandBuffer", err, errlen);
    lazy_record(be);
    return 0;
}

#define VK_POLL_MS 2.0
static int cmd_submit_wait(dvm_backend *be, char *err, size_t errlen) {
    VkResult r = D.vkEndCommandBuffer(be->cmd);
    if (r != VK_SUCCESS) return vkfail(r, "vkEndCommandBuffer", err, errlen);
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &be->cmd};
    r = D.vkQueueSubmit(be->queue, 1, &si, be->fence);
    if (r != VK_SUCCESS) return vkfail(r, "vkQueueSubmit", err, errlen);
    /* Polls the fence for up to VK_POLL_MS before blocking on it: a blocked thread wakes tens
       of microseconds after the device signals (through the kernel driver), as long as a small
       launch's whole work (an H100: 80 -> 35 us a launch of 2^14 saxpy iterations); a launch
       longer than the poll pays the wake-up once. Not on a CPU device, whose work runs on the
       host's cores: polling would take one from it. */
    const double t0 = now_ms();
    if (be->poll_fence)
        while ((r = D.vkGetFenceStatus(be->dev, be->fence)) == VK_NOT_READY && now_ms() - t0 < VK_POLL_MS) {
        }
    else
        r = VK_NOT_READY;
    if (r == VK_NOT_READY) r = D.vkWaitForFences(be->dev, 1, &be->fence, VK_TRUE, UINT64_MAX);
    D.vkResetFences(be->dev, 1, &be->fence);
    return r == VK_SUCCESS ? 0 : vkfail(r, "vkWaitForFences", err, errlen);
}

/* Runs the deferred copies now, for a call that submits nothing (a mapped buffer, a free). */
static int lazy_flush(dvm_backend *be, char *err, size_t errlen) {
    if (!be->nlazy) return 0;
    if (cmd_begin(be, err, errlen)) return -1;
    return cmd_submit_wait(be, err, errlen);
}

/* Makes earlier writes (shader or transfer) visible to later shaders and transfers. */
static void barrier(dvm_backend *be) {
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                           VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT};
    VkPipelineStageFlags st = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    D.vkCmdPipelineBarrier(be->cmd, st, st, 0, 1, &mb, 0, NULL, 0, NULL);
}
static void barrier_host(dvm_backend *be) {
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_SHADER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
    D.vkCmdPipelineBarrier(be->cmd, VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                           VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
}

#define STAGING_CHUNK ((size_t)64 << 20)

static int vk_write(dvm_backend *be, dvm_buffer *b, size_t off, const void *src, size_t n, char *err, size_t errlen) {
    if (off > b->size || n > b->size - off) { fmt(err, errlen, "vulkan: write of %zu bytes at %zu outside a buffer of %llu", n, off, (unsigned long long)b->size); return -1; }
    if (!n) return 0;
    if (b->map) {
        if (lazy_flush(be, err, errlen)) return -1;
        memcpy((char *)b->map + off, src, n);
        return 0;
    }
    for (size_t done = 0; done < n;) {
        size_t c = n - done < STAGING_CHUNK ? n - done : STAGING_CHUNK;
        if (buf_reserve(be, &be->staging, c, 1, err, errlen)) return -1;
        memcpy(be->staging->map, (const char *)src + done, c);
        if (cmd_begin(be, err, errlen)) return -1;
        VkBufferCopy rg = {.srcOffset = 0, .dstOffset = off + done, .size = c};
        D.vkCmdCopyBuffer(be->cmd, be->staging->buf, b->buf, 1, &rg);
        if (cmd_submit_wait(be, err, errlen)) return -1;
        done += c;
    }
    return 0;
}

static int vk_read(dvm_backend *be, dvm_buffer *b, size_t off, void *dst, size_t n, char *err, size_t errlen) {
    if (off > b->size || n > b->size - off) { fmt(err, errlen, "vulkan: read of %zu bytes at %zu outside a buffer of %llu", n, off, (unsigned long long)b->size); return -1; }
    if (!n) return 0;
    if (b->map) {
        if (lazy_flush(be, err, errlen)) return -1;
        memcpy(dst, (const char *)b->map + off, n);
        return 0;
    }
    for (size_t done = 0; done < n;) {
        size_t c = n - done < STAGING_CHUNK ? n - done : STAGING_CHUNK;
        if (buf_reserve(be, &be->staging, c, 1, err, errlen)) return -1;
        if (cmd_begin(be, err, errlen)) return -1;
        VkBufferCopy rg = {.srcOffset = off + done, .dstOffset = 0, .size = c};
        D.vkCmdCopyBuffer(be->cmd, b->buf, be->staging->buf, 1, &rg);
        barrier_host(be);
        if (cmd_submit_wait(be, err, errlen)) return -1;
        memcpy((char *)dst + done, be->staging->map, c);
        done += c;
    }
    return 0;
}

static int vk_copy(dvm_backend *be, dvm_buffer *dst, dvm_buffer *src, size_t n, char *err, size_t errlen) {
    if (n > dst->size || n > src->size) { fmt(err, errlen, "vulkan: copy of %zu bytes exceeds a buffer", n); return -1; }
    if (!n) return 0;
    if (cmd_begin(be, err, errlen)) return -1;
    record_copy(be, dst, src, n);
    return cmd_submit_wait(be, err, errlen);
}

/* A snapshot's copy (launch.c): one submission with the next exec's tasks saves the submit
   and wait of its own (0.1 ms a launch on an H100). */
static int vk_copy_lazy(dvm_backend *be, dvm_buffer *dst, dvm_buffer *src, size_t n, char *err, size_t errlen) {
    if (n > dst->size || n > src->size) { fmt(err, errlen, "vulkan: copy of %zu bytes exceeds a buffer", n); return -1; }
    if (!n) return 0;
    if (be->nlazy == be->lazy_cap) {
        uint32_t cap = be->lazy_cap ? 2 * be->lazy_cap : 8;
        vk_lazy *nl = realloc(be->lazy, cap * sizeof *nl);
        if (!nl) return vk_copy(be, dst, src, n, err, errlen);
        be->lazy = nl;
        be->lazy_cap = cap;
    }
    be->lazy[be->nlazy++] = (vk_lazy){dst, src, n};
    return 0;
}

static int vk_alloc(dvm_backend *be, size_t bytes, dvm_buffer **out, char *err, size_t errlen) {
    dvm_buffer *b;
    if (buf_new(be, bytes, 0, &b, err, errlen)) return -1;
    if (b->map) memset(b->map, 0, b->size);
    else {
        if (cmd_begin(be, err, errlen) == 0) {
            D.vkCmdFillBuffer(be->cmd, b->buf, 0, VK_WHOLE_SIZE, 0);
            if (cmd_submit_wait(be, err, errlen) == 0) { *out = b; return 0; }
        }
        buf_free(be, b);
        return -1;
    }
    *out = b;
    return 0;
}

static void vk_free(dvm_backend *be, dvm_buffer *b) {
    char err[256];
    for (uint32_t i = 0; i < be->nlazy; i++)
        if (be->lazy[i].dst == b || be->lazy[i].src == b) {
            (void)lazy_flush(be, err, sizeof err); /* a failure there leaves nothing to undo */
            break;
        }
    buf_free(be, b);
}

/* ---- pipeline cache on disk ---- */
static int cache_path(dvm_backend *be, const uint32_t *spv, size_t spv_bytes, char *out, size_t n) {
    char dir[400];
    const char *d = getenv("DVM_CACHE_DIR"), *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (d && *d) snprintf(dir, sizeof dir, "%s", d);
    else if (x && *x) snprintf(dir, sizeof dir, "%s/dvm", x);
    else if (home && *home) snprintf(dir, sizeof dir, "%s/.cache/dvm", home);
    else return -1;
    char uuid[33];
    for (int i = 0; i < 16; i++) snprintf(uuid + 2 * i, 3, "%02x", be->caps.props.pipelineCacheUUID[i]);
    int k = snprintf(out, n, "%s/vk-%s-%08x-%016llx.bin", dir, uuid, be->caps.props.driverVersion,
                     (unsigned long long)dvm_fnv1a(DVM_FNV_BASIS, spv, spv_bytes));
    return k > 0 && (size_t)k < n ? 0 : -1;
}

static void mkdir_p(const char *path) {
    char tmp[640];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s", path) >= sizeof tmp) return;
    char *slash = strrchr(tmp, '/');
    if (!slash) return;
    *slash = 0;
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') { *p = 0; mkdir(tmp, 0755); *p = '/'; }
    mkdir(tmp, 0755);
}

/* Reads a cache file; NULL when absent or not for this device (a corrupt file is ignored). */
static void *cache_read(dvm_backend *be, const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    void *data = NULL;
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0) n = ftell(f);
    if (n >= 32 && n < (1l << 30) && fseek(f, 0, SEEK_SET) == 0 && (data = malloc((size_t)n))) {
        if (fread(data, 1, (size_t)n, f) != (size_t)n) { free(data); data = NULL; }
    }
    fclose(f);
    if (!data) return NULL;
    /* VkPipelineCacheHeaderVersionOne: length, version, vendor, device, UUID. */
    uint32_t h[4];
    memcpy(h, data, sizeof h);
    if (h[0] < 32 || h[0] > (uint32_t)n || h[1] != VK_PIPELINE_CACHE_HEADER_VERSION_ONE ||
        h[2] != be->caps.props.vendorID || h[3] != be->caps.props.deviceID ||
        memcmp((char *)data + 16, be->caps.props.pipelineCacheUUID, VK_UUID_SIZE) != 0) {
        free(data);
        return NULL;
    }
    *len = (size_t)n;
    return data;
}

/* Writes the cache file; 0 when written (a failure only costs a later compile). */
static int cache_write(dvm_backend *be, VkPipelineCache pc, const char *path) {
    size_t n = 0;
    if (D.vkGetPipelineCacheData(be->dev, pc, &n, NULL) != VK_SUCCESS || !n) return -1;
    void *data = malloc(n);
    if (!data) return -1;
    int ok = 0;
    if (D.vkGetPipelineCacheData(be->dev, pc, &n, data) == VK_SUCCESS) {
        mkdir_p(path);
        char tmp[640];
        if ((size_t)snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid()) >= sizeof tmp) { free(data); return -1; }
        FILE *f = fopen(tmp, "wb");
        if (f) {
            ok = fwrite(data, 1, n, f) == n;
            ok = (fclose(f) == 0) && ok;
            if (!ok || rename(tmp, path) != 0) { remove(tmp); ok = 0; } /* the cache is an optimisation */
        }
    }
    free(data);
    return ok ? 0 : -1;
}

/* The interpreter's module, layout and pipeline cache (loaded from disk when present). */
static int make_module(dvm_backend *be, char *err, size_t errlen) {
    const uint32_t *spv;
    size_t bytes;
    if (be->use_int64 && be->use_fatomic) { spv = dvm_spv_i1_f1; bytes = sizeof dvm_spv_i1_f1; }
    else if (be->use_int64) { spv = dvm_spv_i1_f0; bytes = sizeof dvm_spv_i1_f0; }
    else if (be->use_fatomic) { spv = dvm_spv_i0_f1; bytes = sizeof dvm_spv_i0_f1; }
    else { spv = dvm_spv_i0_f0; bytes = sizeof dvm_spv_i0_f0; }

    VkShaderModuleCreateInfo sm = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = bytes, .pCode = spv};
    VkResult r = D.vkCreateShaderModule(be->dev, &sm, NULL, &be->shader);
    if (r != VK_SUCCESS) return vkfail(r, "vkCreateShaderModule", err, errlen);
    VkPushConstantRange pr = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .offset = 0, .size = sizeof(vk_push)};
    VkPipelineLayoutCreateInfo li = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                     .pushConstantRangeCount = 1, .pPushConstantRanges = &pr};
    r = D.vkCreatePipelineLayout(be->dev, &li, NULL, &be->layout);
    if (r != VK_SUCCESS) return vkfail(r, "vkCreatePipelineLayout", err, errlen);

    be->have_cache_path = cache_path(be, spv, bytes, be->cache_file, sizeof be->cache_file) == 0;
    size_t clen = 0;
    void *cdata = be->have_cache_path ? cache_read(be, be->cache_file, &clen) : NULL;
    VkPipelineCacheCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
                                    .initialDataSize = clen, .pInitialData = cdata};
    if (D.vkCreatePipelineCache(be->dev, &ci, NULL, &be->pcache) != VK_SUCCESS) {
        ci.initialDataSize = 0; /* a cache the driver rejects is dropped, not fatal */
        ci.pInitialData = NULL;
        clen = 0;
        if (D.vkCreatePipelineCache(be->dev, &ci, NULL, &be->pcache) != VK_SUCCESS) be->pcache = VK_NULL_HANDLE;
    }
    free(cdata);
    be->cache_hit = clen > 0;
    be->cache_bytes = clen;
    return 0;
}

/* The register-file class of a task with nregs registers (interp.comp: REGS, REGS_SHARED):
   a power of two from 16, in shared memory while a workgroup's files fit beside the sizer's
   reduction array, unless priv; else the private file of DVM_MAX_REGS words. The private
   file is not sized per task: NVIDIA's compiler keeps a small private array in registers
   (48 registers a thread with 1024 words; with 16 words, saxpy ran 2.00 ms against 1.35 and
   the transcendental kernel 5.8 against 3.0, H100). Few classes: each costs one driver
   compile on its first use in a cold cache. */
static void reg_class(const dvm_backend *be, uint32_t nregs, int priv, uint32_t lanes, uint32_t *regs, int *shared) {
    uint32_t r = lanes == 4 ? VK_LANE_MIN_REGS : 16;
    while (r < nregs) r *= 2;
    *shared = lanes == 1 && !priv && r <= be->shared_regs_max;
    *regs = *shared || lanes == 4 ? r : DVM_MAX_REGS;
}

/* Creates the pipeline of one class (from the pipeline cache when it holds it). Callable from
   several threads at once: the pipeline cache synchronizes itself (no EXTERNALLY_SYNCHRONIZED bit). */
static VkResult make_pipe(const dvm_backend *be, uint32_t regs, int shared, uint32_t lanes, uint32_t extra, VkPipeline *p) {
    const uint32_t spec[7] = {regs, shared ? VK_TRUE : VK_FALSE, lanes, extra & VK_X_STACKS ? VK_TRUE : VK_FALSE,
                              extra & VK_X_LOOPS ? VK_TRUE : VK_FALSE, extra & VK_X_ROWS ? VK_TRUE : VK_FALSE,
                              extra & VK_X_PLAIN ? VK_TRUE : VK_FALSE};
    VkSpecializationMapEntry me[7];
    for (uint32_t i = 0; i < 7; i++) me[i] = (VkSpecializationMapEntry){.constantID = i, .offset = 4 * i, .size = 4};
    const VkSpecializationInfo si = {.mapEntryCount = 7, .pMapEntries = me, .dataSize = sizeof spec, .pData = spec};
    VkComputePipelineCreateInfo pi = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = be->shader, .pName = "main", .pSpecializationInfo = &si},
        .layout = be->layout};
    return D.vkCreateComputePipelines(be->dev, be->pcache, 1, &pi, NULL, p);
}

/* Keeps a created pipeline; the cache file is rewritten when the driver added to it. */
static void keep_pipe(dvm_backend *be, uint32_t regs, int shared, uint32_t lanes, uint32_t extra, VkPipeline p) {
    be->pipes[be->npipes].regs = regs;
    be->pipes[be->npipes].shared = shared;
    be->pipes[be->npipes].lanes = lanes;
    be->pipes[be->npipes].extra = extra;
    be->pipes[be->npipes++].pipe = p;
    size_t n = 0;
    if (be->pcache && be->have_cache_path && D.vkGetPipelineCacheData(be->dev, be->pcache, &n, NULL) == VK_SUCCESS &&
        n > be->cache_bytes && cache_write(be, be->pcache, be->cache_file) == 0)
        be->cache_bytes = n;
}

/* The pipeline of a register-file class, created on first use; extra: a four-lane pipeline's
   (VK_X_; one lane has them all). */
static int get_pipeline(dvm_backend *be, uint32_t nregs, int priv, uint32_t lanes, uint32_t extra, VkPipeline *out,
                        char *err, size_t errlen) {
    uint32_t regs;
    int shared;
    reg_class(be, nregs, priv, lanes, &regs, &shared);
    if (lanes != 4) extra = 0;
    for (int i = 0; i < be->npipes; i++)
        if (be->pipes[i].regs == regs && be->pipes[i].shared == shared && be->pipes[i].lanes == lanes && be->pipes[i].extra == extra) {
            *out = be->pipes[i].pipe;
            return 0;
        }
    if (be->npipes == VK_MAX_PIPES) { fmt(err, errlen, "vulkan: more register-file classes than pipelines"); return -1; }
    VkPipeline p;
    double t0 = now_ms();
    VkResult r = make_pipe(be, regs, shared, lanes, extra, &p);
    be->pipeline_ms += now_ms() - t0;
    if (r != VK_SUCCESS) {
        char what[160];
        snprintf(what, sizeof what, "vkCreateComputePipelines (the interpreter, %u registers%s%s%s%s%s%s)", regs,
                 shared ? " in shared memory" : "", lanes == 4 ? ", four lanes" : "", extra & VK_X_STACKS ? ", adstacks" : "",
                 extra & VK_X_LOOPS ? ", fused loops" : "", extra & VK_X_ROWS ? ", the row path" : "",
                 extra & VK_X_PLAIN ? ", plain lanes" : "");
        return vkfail(r, what, err, errlen);
    }
    keep_pipe(be, regs, shared, lanes, extra, p);
    *out = p;
    return 0;
}

/* A four-lane class of VK_LANE_MIN_REGS registers, made on a host thread of its own while
   vk_open makes the first class (pre_main). */
typedef struct vk_pre {
    const dvm_backend *be;
    uint32_t extra;
    VkPipeline p;
    VkResult r;
} vk_pre;
static void *pre_main(void *arg) {
    vk_pre *q = arg;
    q->r = make_pipe(q->be, VK_LANE_MIN_REGS, 0, 4, q->extra, &q->p);
    return NULL;
}

static void vk_close(dvm_backend *be) {
    if (!be) return;
    if (be->dev) {
        buf_free(be, be->staging);
        buf_free(be, be->params);
        buf_free(be, be->scratch);
        buf_free(be, be->dummy);
        buf_free(be, be->cancel);
        for (int i = 0; i < be->npipes; i++) D.vkDestroyPipeline(be->dev, be->pipes[i].pipe, NULL);
        if (be->pcache) D.vkDestroyPipelineCache(be->dev, be->pcache, NULL);
        if (be->layout) D.vkDestroyPipelineLayout(be->dev, be->layout, NULL);
        if (be->shader) D.vkDestroyShaderModule(be->dev, be->shader, NULL);
        if (be->fence) D.vkDestroyFence(be->dev, be->fence, NULL);
        if (be->pool) D.vkDestroyCommandPool(be->dev, be->pool, NULL);
        D.vkDestroyDevice(be->dev, NULL);
    }
    free(be->lazy);
    free(be); /* be->inst is the process-wide instance: kept */
}

static dvm_backend *vk_open(const dvm_backend_opts *opts, char *err, size_t errlen) {
    dvm_backend *be = calloc(1, sizeof *be);
    if (!be) { fmt(err, errlen, "vulkan: out of host memory"); return NULL; }
    if (vk_instance(&be->inst, err, errlen)) { free(be); return NULL; }
    uint32_t n = 0;
    p_vkEnumeratePhysicalDevices(be->inst, &n, NULL);
    int want = opts ? opts->device : 0;
    if (n == 0) { fmt(err, errlen, "vulkan: no Vulkan device found"); goto fail; }
    if (want < 0 || (uint32_t)want >= n) { fmt(err, errlen, "vulkan: no device %d (found %u)", want, n); goto fail; }
    VkPhysicalDevice pds[64];
    if (n > 64) n = 64;
    p_vkEnumeratePhysicalDevices(be->inst, &n, pds);
    be->pd = pds[want];
    vk_query(be->pd, &be->caps);
    const char *dn = be->caps.props.deviceName;
    if (be->caps.props.apiVersion < VK_API_VERSION_1_2) {
        fmt(err, errlen, "vulkan: device %d (%s) supports Vulkan %u.%u; dvm needs 1.2", want, dn,
            VK_API_VERSION_MAJOR(be->caps.props.apiVersion), VK_API_VERSION_MINOR(be->caps.props.apiVersion));
        goto fail;
    }
    if (!be->caps.bda) { fmt(err, errlen, "vulkan: device %d (%s) lacks bufferDeviceAddress, which dvm needs", want, dn); goto fail; }
    be->use_int64 = be->caps.int64 && !(opts && opts->vk_no_int64);
    be->use_fatomic = be->caps.fatomic_add && !(opts && opts->vk_no_float_atomics);

    uint32_t nq = 0;
    p_vkGetPhysicalDeviceQueueFamilyProperties(be->pd, &nq, NULL);
    VkQueueFamilyProperties qf[32];
    if (nq > 32) nq = 32;
    p_vkGetPhysicalDeviceQueueFamilyProperties(be->pd, &nq, qf);
    be->qfam = UINT32_MAX;
    for (uint32_t i = 0; i < nq && be->qfam == UINT32_MAX; i++)
        if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) be->qfam = i;
    if (be->qfam == UINT32_MAX) { fmt(err, errlen, "vulkan: device %d (%s) has no compute queue", want, dn); goto fail; }

    float prio = 1.0f;
    VkDeviceQueueCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, .queueFamilyIndex = be->qfam,
                                  .queueCount = 1, .pQueuePriorities = &prio};
    VkPhysicalDeviceShaderAtomicFloatFeaturesEXT af = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT,
                                                       .shaderBufferFloat32AtomicAdd = VK_TRUE};
    VkPhysicalDeviceVulkan12Features f12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                            .pNext = be->use_fatomic ? &af : NULL,
                                            .bufferDeviceAddress = VK_TRUE};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f12};
    f2.features.shaderInt64 = be->use_int64 ? VK_TRUE : VK_FALSE;
    const char *exts[1] = {VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME};
    VkDeviceCreateInfo di = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .pNext = &f2, .queueCreateInfoCount = 1,
                             .pQueueCreateInfos = &qi, .enabledExtensionCount = be->use_fatomic ? 1 : 0,
                             .ppEnabledExtensionNames = exts};
    VkResult r = p_vkCreateDevice(be->pd, &di, NULL, &be->dev);
    if (r != VK_SUCCESS) { vkfail(r, "vkCreateDevice", err, errlen); be->dev = VK_NULL_HANDLE; goto fail; }
#define VK_LOAD(f) D.f = (PFN_##f)p_vkGetDeviceProcAddr(be->dev, #f);
    VK_DEVICE_FNS(VK_LOAD)
#undef VK_LOAD
    D.vkGetDeviceQueue(be->dev, be->qfam, 0, &be->queue);
    p_vkGetPhysicalDeviceMemoryProperties(be->pd, &be->mp);
    be->max_alloc = be->caps.max_alloc ? be->caps.max_alloc : ((VkDeviceSize)1 << 31);
    if (opts && opts->vk_max_alloc > 0 && (VkDeviceSize)opts->vk_max_alloc < be->max_alloc) {
        be->max_alloc = (VkDeviceSize)opts->vk_max_alloc;
        be->max_alloc_lowered = 1;
    }

    VkCommandPoolCreateInfo cp = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                  .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, .queueFamilyIndex = be->qfam};
    if ((r = D.vkCreateCommandPool(be->dev, &cp, NULL, &be->pool)) != VK_SUCCESS) { vkfail(r, "vkCreateCommandPool", err, errlen); goto fail; }
    VkCommandBufferAllocateInfo ca = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .commandPool = be->pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = 1};
    if ((r = D.vkAllocateCommandBuffers(be->dev, &ca, &be->cmd)) != VK_SUCCESS) { vkfail(r, "vkAllocateCommandBuffers", err, errlen); goto fail; }
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    if ((r = D.vkCreateFence(be->dev, &fi, NULL, &be->fence)) != VK_SUCCESS) { vkfail(r, "vkCreateFence", err, errlen); goto fail; }
    /* register files in shared memory: a workgroup's, beside the sizer's reduction array
       (interp.comp: red, WG_SIZE values of 8 bytes) */
    uint32_t smem = be->caps.props.limits.maxComputeSharedMemorySize;
    /* the class a launch without adstacks takes on a GPU (see the thread caps below); the
       pipeline made here is that class's of 16 registers, which also runs the sizer */
    be->private_ns = be->caps.props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU;
    be->poll_fence = be->caps.props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU;
    be->lanes_ns = opts && opts->vk_lanes ? opts->vk_lanes == 4 : be->private_ns;
    be->lane_regs_max = VK_LANE_MAX_REGS;
    be->shared_regs_max = 0;
    for (uint32_t k = 16; k <= DVM_MAX_REGS && (uint64_t)k * WG_SIZE * 4 + WG_SIZE * 8 <= smem; k *= 2) be->shared_regs_max = k;
    if (make_module(be, err, errlen)) goto fail;
    /* With four lanes, most launches without adstacks take the four-lane class of
       VK_LANE_MIN_REGS registers: plain lanes with the row path or without, or masked lanes:
       made beside the first, on host threads of their own, so that a cold cache costs the
       longest of the driver compiles (H100: about 3 s each), not their sum. A failure here is
       left to the first launch that needs the class, which reports it. */
    enum { NPRE = 3 };
    vk_pre pre[NPRE] = {{.be = be, .extra = VK_X_PLAIN, .r = VK_NOT_READY},
                        {.be = be, .extra = VK_X_PLAIN | VK_X_ROWS, .r = VK_NOT_READY},
                        {.be = be, .extra = 0, .r = VK_NOT_READY}};
    pthread_t pre_th[NPRE];
    int pre_on[NPRE] = {0};
    for (int i = 0; i < NPRE; i++) pre_on[i] = be->lanes_ns && pthread_create(&pre_th[i], NULL, pre_main, &pre[i]) == 0;
    const double t_open = now_ms();
    const int bad = get_pipeline(be, 1, be->private_ns, 1, 0, &be->pipe, err, errlen);
    for (int i = 0; i < NPRE; i++) {
        if (!pre_on[i]) continue;
        pthread_join(pre_th[i], NULL);
        if (pre[i].r == VK_SUCCESS && !bad) keep_pipe(be, VK_LANE_MIN_REGS, 0, 4, pre[i].extra, pre[i].p);
        else if (pre[i].r == VK_SUCCESS) D.vkDestroyPipeline(be->dev, pre[i].p, NULL);
        be->pipeline_ms = now_ms() - t_open;
    }
    if (bad) goto fail;
    if (buf_new(be, 16, 0, &be->dummy, err, errlen)) goto fail;
    if (buf_new(be, 16, 2, &be->cancel, err, errlen)) goto fail;
    if (!be->cancel->map) { fmt(err, errlen, "vulkan: the cancel word's host-visible memory cannot be mapped"); goto fail; }
    memset(be->cancel->map, 0, 16);
    /* params where the host can write them in place (a GPU's BAR heap; stage_params) */
    if (be->poll_fence) {
        if (buf_new(be, 4096, 2, &be->params, err, errlen) == 0) {
            be->params_mapped = be->params->map && be->params->devlocal;
            if (!be->params_mapped) {
                buf_free(be, be->params);
                be->params = NULL;
            }
        } else if (err && errlen) {
            err[0] = 0; /* optional: the staging path serves */
        }
    }

    /* Enough threads to fill the device, within maxComputeWorkGroupCount. A CPU device
       (lavapipe) gets many more: llvmpipe ends a shader's loops after 65535 iterations in
       all, so each thread should take few iterations of a grid-stride loop. The gpu_threads
       option sets the count (tests of threads that take many iterations).
       On a GPU, the interpreter is bound by the latency of each thread's node after node, so
       the threads resident at once set its speed. A register file in shared memory caps them
       at what the driver's shared-memory carveout holds (on an H100, 2x the shared memory per
       thread ran 1.8x slower, and 2x or 4x the threads gained nothing). A launch without
       adstacks therefore takes private register files and 4x the threads (its threads need no
       heap slots): saxpy 2.22 -> 1.37 ms, the 5-point stencil 4.8 -> 3.0 ms, the sin loop
       4.95 -> 2.9 ms (H100). With adstacks each thread has a heap slot: 4x the threads only while
       that heap stays small (vk_thread_cap), else 65536 and shared files, which beat private
       ones at that count (saxpy 2.27 against 3.00 ms). */
    int cpu = be->caps.props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
    uint64_t cap = cpu ? (1u << 18) : 65536, cap_ns = cpu ? cap : 4 * cap;
    if (opts && opts->gpu_threads > 0) cap = cap_ns = (uint64_t)opts->gpu_threads;
    be->few_threads = opts && opts->gpu_threads > 0;
    uint64_t maxg = (uint64_t)be->caps.props.limits.maxComputeWorkGroupCount[0] * WG_SIZE;
    if (maxg > 0x7FFFFFFFull) maxg = 0x7FFFFFFFull;
    be->max_threads = (uint32_t)maxg;
    be->thread_cap = (uint32_t)(cap < maxg ? cap : maxg);
    be->thread_cap_ns = (uint32_t)(cap_ns < maxg ? cap_ns : maxg);

    uint32_t api = be->caps.props.apiVersion;
    char few[48] = ""; /* the gpu_threads option, which changes how the work is spread */
    if (opts && opts->gpu_threads > 0) snprintf(few, sizeof few, ", at most %u threads (gpu_threads)", be->thread_cap);
    snprintf(be->name, sizeof be->name, "%s (%s, Vulkan %u.%u.%u, %s index math, f32 atomics %s%s%s, pipeline %.1f ms%s)",
             dn, dev_type(be->caps.props.deviceType), VK_API_VERSION_MAJOR(api), VK_API_VERSION_MINOR(api),
             VK_API_VERSION_PATCH(api), be->use_int64 ? "64-bit" : "checked 32-bit",
             be->use_fatomic ? "native" : "by CAS", be->lanes_ns ? ", 4 lanes" : "", few, be->pipeline_ms,
             be->cache_hit ? " from cache" : "");
    return be;
fail:
    vk_close(be);
    return NULL;
}

static int vk_probe(char *out, size_t outlen) {
    char err[256];
    size_t used = out ? strlen(out) : 0;
#define APPEND(...) do { if (out && used < outlen) { int k_ = snprintf(out + used, outlen - used, __VA_ARGS__); if (k_ > 0) used += (size_t)k_ < outlen - used ? (size_t)k_ : outlen - used - 1; } } while (0)
    VkInstance inst;
    if (vk_instance(&inst, err, sizeof err)) { APPEND("%s\n", err); return 0; }
    uint32_t n = 0;
    p_vkEnumeratePhysicalDevices(inst, &n, NULL);
    VkPhysicalDevice pds[64];
    if (n > 64) n = 64;
    if (n) p_vkEnumeratePhysicalDevices(inst, &n, pds);
    if (!n) APPEND("vulkan: no Vulkan device found\n");
    for (uint32_t i = 0; i < n; i++) {
        vk_caps c;
        vk_query(pds[i], &c);
        const VkPhysicalDeviceLimits *l = &c.props.limits;
        uint32_t api = c.props.apiVersion;
        APPEND("vulkan device %u: %s (%s, Vulkan %u.%u.%u, maxStorageBufferRange %u, maxComputeWorkGroupCount %u x %u x %u, "
               "maxMemoryAllocationSize %llu, int64 %s, int64 atomics %s, f32 atomic add %s, bufferDeviceAddress %s)%s%s\n",
               i, c.props.deviceName, dev_type(c.props.deviceType), VK_API_VERSION_MAJOR(api), VK_API_VERSION_MINOR(api),
               VK_API_VERSION_PATCH(api), l->maxStorageBufferRange, l->maxComputeWorkGroupCount[0],
               l->maxComputeWorkGroupCount[1], l->maxComputeWorkGroupCount[2], (unsigned long long)c.max_alloc,
               c.int64 ? "yes" : "no", c.int64_atomics ? "yes" : "no", c.fatomic_add ? "yes" : "no", c.bda ? "yes" : "no",
               (api < VK_API_VERSION_1_2 || !c.bda) ? " [unusable: needs Vulkan 1.2 with bufferDeviceAddress]" : "",
               c.props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? " [software: --backend auto takes the cpu backend instead]" : "");
    }
#undef APPEND
    return (int)n;
}

static const char *vk_device_name(dvm_backend *be) { return be->name; }

static int vk_software(const dvm_backend_opts *opts, char *name, size_t namelen) {
    char err[256];
    VkInstance inst;
    if (vk_instance(&inst, err, sizeof err)) return 0;
    uint32_t n = 0;
    p_vkEnumeratePhysicalDevices(inst, &n, NULL);
    VkPhysicalDevice pds[64];
    if (n > 64) n = 64;
    int want = opts ? opts->device : 0;
    if (!n || want < 0 || (uint32_t)want >= n) return 0;
    p_vkEnumeratePhysicalDevices(inst, &n, pds);
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    p_vkGetPhysicalDeviceProperties2(pds[want], &p2);
    if (p2.properties.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU) return 0;
    if (name && namelen) snprintf(name, namelen, "%s", p2.properties.deviceName);
    return 1;
}

/* ---- programs ---- */
static void vk_unload(dvm_backend *be, dvm_loaded *l) {
    if (!l) return;
    buf_free(be, l->nodes);
    buf_free(be, l->consts);
    buf_free(be, l->tasks);
    free(l->lane_need);
    free(l);
}

static int upload(dvm_backend *be, const void *src, size_t n, dvm_buffer **out, char *err, size_t errlen) {
    if (buf_new(be, n, 0, out, err, errlen)) return -1;
    return n ? vk_write(be, *out, 0, src, n, err, errlen) : 0;
}

/* Whether node n of a task of ndim dimensions takes the four lanes' row path when it can
   (interp.comp, row1 and row2): an array access whose row-path indices (dvm_row_index_operand)
   are the task's index registers, the innermost one for a 1-D index, both for two. */
static int vk_row_node(const dvm_node *n, uint32_t ndim) {
    const char *f = dvm_op_table[n->op].fmt;
    uint32_t reg[3], nr = 0;
    for (int k = 1; k <= 3; k++) {
        if (!f || !dvm_row_index_operand(n->op, k)) continue;
        const uint32_t v = k == 1 ? n->a : k == 2 ? n->b : n->c;
        reg[nr++] = f[k] == 'o' ? v & 1023u : v;
    }
    return (nr == 1 && reg[0] + 1 == ndim) || (nr == 2 && ndim == 2 && reg[0] == 0 && reg[1] == 1);
}

/* Whether INCLT node n (its bound hi = n->b, counter n->a) closes a one-node loop that the
   interpreters fuse: the node before it, which it jumps back to, a self-update that touches
   neither the counter nor the bound (DVM_SELF_UPDATE) */
static int vk_fused_loop(const dvm_node *code, uint32_t i) {
    const dvm_node *n = &code[i];
    if (n->op != DVM_OP_INCLT || n->x != 0 || i == 0 || n->c + 1u != i) return 0;
    const dvm_node *b = &code[n->c];
    const uint32_t bo = DVM_SELF_OTHER(b->op, b->a, b->b, b->c), bk = DVM_SU_IS(b->op, FMA_R) ? b->c : bo;
    return DVM_SELF_UPDATE(b->op, b->a, b->b, b->c) && n->a != b->a && n->b != b->a && n->a != bo && n->a != bk;
}

/* A counted one-node loop that plain lanes run whole at its head (interp.comp, OP_JGEI):
   JGEI lo, hi, ->i + k + 3 at node i; MOV cnt, lo at i + 1 (k = 1), or none (k = 0: the counter
   is lo itself, as a `while` with a counter compiles); a fused self-update at i + k + 1; INCLT
   cnt, hi, ->i + k + 1 at i + k + 2; x 0 in both, the counter not the bound. Returns the nodes it
   spans (3 or 4), 0 when node i starts none. */
static uint32_t vk_plain_loop(const dvm_node *code, uint32_t len, uint32_t i) {
    const dvm_node *j = &code[i];
    if (j->op != DVM_OP_JGEI || j->x != 0) return 0;
    for (uint32_t k = 0; k < 2; k++) {
        if (i + k + 3 > len) return 0;
        const dvm_node *m = &code[i + 1], *n = &code[i + k + 2];
        if (k && !(m->op == DVM_OP_MOV && m->b == j->a)) continue;
        const uint32_t cnt = k ? m->a : j->a;
        if (j->c == i + k + 3 && n->op == DVM_OP_INCLT && n->a == cnt && n->b == j->b && cnt != j->b &&
            vk_fused_loop(code, i + k + 2))
            return k + 3;
    }
    return 0;
}

/* Whether interp.comp's run4 (four lanes) can run a parallel task, and with what: 0 when it has a
   node that run4 leaves to run (POWF, ATAN2F, ASIN, ACOS, ATOMMAXF, ATOMMINF: library code too
   long to keep four times; STU: serial tasks only); else VK_LANES_OK, with VK_X_STACKS when it
   has PUSH or POP, VK_X_LOOPS when it has a one-node loop, which the interpreters fuse into
   one FMA loop (interp.comp, OP_INCLT), and VK_X_ROWS (the row path) when its index registers
   are registers 0..ndim-1 (ndim <= 2), never written (dvm_task_flow.fixed_idx), and at least
   half its nodes (less its closing END) are accesses that take it (vk_row_node): on an H100
   the row path's pipeline ran the 5-point stencil (6 of 8) 1.13x faster and saxpy (3 of 4) as
   fast, but the transcendental kernel (2 of 14) 1.17x and the FMA loop (3 of 7) 1.03x slower
   than the pipeline without it. VK_X_PLAIN (plain lanes) when it has no adstack and no branch
   but the counted one-node loops that plain lanes run whole (vk_plain_loop): on an H100 the
   stencil 0.96 -> 0.93 ms, saxpy 1% faster, the rest within noise. */
static int vk_task_lanes(const dvm_program *prog, const dvm_task_desc *td) {
    if (td->kind != DVM_TASK_PARALLEL) return 0;
    int need = VK_LANES_OK, branches = 0;
    uint32_t rows = 0, loop_end = 0; /* the nodes before loop_end: a loop that plain lanes run */
    const dvm_node *code = prog->nodes + td->code_begin;
    for (uint32_t i = 0; i < td->code_len; i++) {
        const dvm_node *n = &code[i];
        rows += (uint32_t)vk_row_node(n, td->ndim);
        if (dvm_op_table[n->op].flags & DVM_F_BRANCH) {
            const uint32_t span = vk_plain_loop(code, td->code_len, i);
            if (span) loop_end = i + span;
            else if (i >= loop_end) branches = 1;
        }
        switch (n->op) {
        case DVM_OP_PUSH: case DVM_OP_POP:
            need |= VK_X_STACKS;
            break;
        case DVM_OP_STU: case DVM_OP_POWF: case DVM_OP_ATAN2F: case DVM_OP_ASIN: case DVM_OP_ACOS: case DVM_OP_ATOMMAXF:
        case DVM_OP_ATOMMINF:
            return 0;
        case DVM_OP_INCLT:
            if (vk_fused_loop(code, i)) need |= VK_X_LOOPS;
            break;
        default:
            break;
        }
    }
    const uint32_t len = td->code_len - (td->code_len && code[td->code_len - 1].op == DVM_OP_END);
    if (td->ndim <= 2 && 2 * rows >= len && dvm_task_flow_of(prog->nodes, td).fixed_idx) need |= VK_X_ROWS;
    if (!branches && !(need & VK_X_STACKS)) need |= VK_X_PLAIN;
    return need;
}

static int vk_load(dvm_backend *be, const dvm_program *prog, dvm_loaded **out, char *err, size_t errlen) {
    dvm_loaded *l = calloc(1, sizeof *l);
    if (l) l->lane_need = malloc(prog->ntasks ? prog->ntasks : 1);
    if (!l || !l->lane_need) { free(l); fmt(err, errlen, "vulkan: out of host memory"); return -1; }
    for (uint32_t t = 0; t < prog->ntasks; t++) l->lane_need[t] = (uint8_t)vk_task_lanes(prog, &prog->tasks[t]);
    if (upload(be, prog->nodes, (size_t)prog->nnodes * sizeof(dvm_node), &l->nodes, err, errlen) ||
        upload(be, prog->consts, (size_t)prog->nconsts * 4, &l->consts, err, errlen) ||
        upload(be, prog->tasks, (size_t)prog->ntasks * sizeof(dvm_task_desc), &l->tasks, err, errlen)) {
        vk_unload(be, l);
        return -1;
    }
    *out = l;
    return 0;
}

/* Whether the adstack heap of `slots` thread slots (its stacks at their sized capacities)
   stays within 1/32 of the device's largest memory heap. */
static int heap_fits(const dvm_backend *be, const dvm_exec *x, uint64_t slots) {
    VkDeviceSize dev = 0;
    for (uint32_t h = 0; h < be->mp.memoryHeapCount; h++)
        if ((be->mp.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) && be->mp.memoryHeaps[h].size > dev)
            dev = be->mp.memoryHeaps[h].size;
    const uint64_t limit = dev / 32 / 4 / (slots ? slots : 1); /* words a slot may have */
    uint64_t words = 0;
    for (uint32_t i = 0; i < x->nstacks; i++) {
        const int64_t c = x->stack_cap ? x->stack_cap[i] : -1;
        if (c < 0 || c > DVM_SIZE_SAT) return 0;
        words += (uint64_t)c + 1;
        if (words > limit) return 0;
    }
    return 1;
}

/* The most threads of a launch on one lane: thread_cap_ns without adstacks, and with them
   while their heap (one slot each) fits (heap_fits); else thread_cap. On an H100 the sin loop's
   adjoint ran 43.6 -> 28.5 ms with 4x the threads (private register files). */
static int64_t vk_thread_cap(const dvm_backend *be, const dvm_exec *x) {
    if (!x->nstacks || be->thread_cap_ns <= be->thread_cap) return be->thread_cap_ns;
    return heap_fits(be, x, be->thread_cap_ns) ? be->thread_cap_ns : be->thread_cap;
}

/* The threads a launch needs: the largest iteration count of the variant's parallel tasks
   where the host knows it (dvm_exec.total: parameters, shape symbols and what the serial
   tasks run on the host computed), else the cap (vk_thread_cap). */
/* Whether a launch runs its parallel tasks four iterations an invocation (interp.comp, run4):
   on a GPU, when the host knows every parallel task's iteration count and each is below 2^31
   (run4's 32-bit lane indices), and with adstacks while the heap of four slots for each of
   thread_cap_ns invocations fits (each lane has its own stacks). */
static int vk_lanes(const dvm_backend *be, const dvm_exec *x) {
    if (!be->lanes_ns || (x->nstacks && !heap_fits(be, x, 4 * (uint64_t)be->thread_cap_ns))) return 0;
    for (uint32_t t = 0; t < x->var->ntasks; t++) {
        if (x->prog->tasks[x->var->task_begin + t].kind != DVM_TASK_PARALLEL) continue;
        const int64_t total = dvm_exec_total(x, t);
        if (total < 0 || total >= ((int64_t)1 << 31) || !(x->loaded->lane_need[x->var->task_begin + t] & VK_LANES_OK) ||
            x->prog->tasks[x->var->task_begin + t].nregs > be->lane_regs_max)
            return 0;
    }
    return 1;
}

/* The thread slots of a launch: one an invocation on one lane; with four lanes, four (one a
   lane: its adstacks' heap slot) for a quarter of the invocations, since each takes four
   iterations a round. vk_exec dispatches slots / 4 invocations then. */
static int64_t vk_slots(dvm_backend *be, const dvm_exec *x) {
    const int lanes = vk_lanes(be, x);
    int64_t cap = vk_thread_cap(be, x);
    /* Four lanes: 4x the invocations too (unless gpu_threads set them), so the iterations in
       flight are 16x one lane's cap. On an H200, 262144 -> 1048576 threads took saxpy 0.54 ->
       0.51 ms, trans 1.26 -> 1.19, the sin loop 1.48 -> 1.37, the stencil 1.26 -> 1.18; 2x
       gained half. With adstacks, while their heap fits. */
    if (lanes && !be->few_threads && (!x->nstacks || heap_fits(be, x, 16 * (uint64_t)cap))) {
        cap *= 4;
    }
    /* the slots within max_threads, in whole workgroups */
    if (lanes && cap > (int64_t)(be->max_threads / 4)) cap = be->max_threads / 4 / WG_SIZE * WG_SIZE;
    int64_t want = 0;
    for (uint32_t t = 0; t < x->var->ntasks; t++) {
        const dvm_task_desc *td = &x->prog->tasks[x->var->task_begin + t];
        if (td->kind != DVM_TASK_PARALLEL) continue;
        int64_t total = dvm_exec_total(x, t);
        if (total < 0) return cap;
        if (lanes) total = (total + 3) / 4;
        if (total > want) want = total;
    }
    if (want > (int64_t)cap) want = cap;
    if (want < 1) want = 1;
    /* four lanes: whole workgroups, so that each takes 4 x WG_SIZE consecutive iterations a
       round (interp.comp, par_loop4: the row path); a cap of gpu_threads that is not a
       multiple keeps it (the lanes then lie the thread count apart, without the row path) */
    if (lanes && cap % WG_SIZE == 0) want = (want + WG_SIZE - 1) / WG_SIZE * WG_SIZE;
    return lanes ? 4 * want : want;
}

/* The invocations of a copy of `units` 16-byte units (record_copy): one a unit, at most 2^20
   (each then takes several, grid-stride), within maxComputeWorkGroupCount. */
static uint32_t copy_threads(const dvm_backend *be, uint64_t units) {
    uint64_t t = units < ((uint64_t)1 << 20) ? units : ((uint64_t)1 << 20);
    if (t > be->max_threads) t = be->max_threads;
    return t < 1 ? 1 : (uint32_t)t;
}

/* The invocations a parallel task's dispatch needs: those with an iteration in their first
   round (interp.comp, par_loop32 and par_loop4; rows: on the row path, whose workgroups take
   4 x WG_SIZE consecutive iterations each), where the host knows the task's iteration count
   (total, else -1). The launch's thread count is its largest task's: a stencil's border tasks
   of one row each, dispatched over all of it, took 20 us apiece (H100). */
static uint32_t task_invocations(uint32_t nthreads, int rows, int64_t total) {
    if (total < 0 || total >= (int64_t)nthreads) return nthreads;
    int64_t need = rows ? (total + 4 * WG_SIZE - 1) / (4 * WG_SIZE) * WG_SIZE : total;
    if (need > (int64_t)nthreads) need = nthreads;
    return need < 1 ? 1 : (uint32_t)need;
}

/* Records one dispatch of `threads` threads. */
static void dispatch(dvm_backend *be, const vk_push *pc, uint32_t threads) {
    D.vkCmdPushConstants(be->cmd, be->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof *pc, pc);
    D.vkCmdDispatch(be->cmd, (threads + WG_SIZE - 1) / WG_SIZE, 1, 1);
    barrier(be);
}

/* Uploads `words` words of host data into be->params at the start of the command buffer being
   recorded. Where params live in device-local memory that the host maps (a GPU's BAR heap,
   params_mapped), the host writes them in place and reads the results there (params_back):
   the submission makes the host's writes visible to the shaders, and barrier_host the
   shaders' writes to the host. Else through the staging buffer, a copy each way (with their
   barriers, 7 us of the 38 that a launch of 2^14 saxpy iterations took on an H100). */
static int stage_params(dvm_backend *be, const uint32_t *host, size_t words, char *err, size_t errlen) {
    size_t bytes = words * 4;
    if (be->params_mapped) {
        if (buf_reserve(be, &be->params, bytes, 2, err, errlen)) return -1;
        if (be->params->map && be->params->devlocal) {
            memcpy(be->params->map, host, bytes);
            if (cmd_begin(be, err, errlen)) return -1;
            D.vkCmdBindPipeline(be->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, be->pipe);
            return 0;
        }
        /* the BAR heap is full: the staging path from now on */
        be->params_mapped = 0;
        buf_free(be, be->params);
        be->params = NULL;
    }
    if (buf_reserve(be, &be->params, bytes, 0, err, errlen) || buf_reserve(be, &be->staging, bytes, 1, err, errlen)) return -1;
    memcpy(be->staging->map, host, bytes);
    if (cmd_begin(be, err, errlen)) return -1;
    VkBufferCopy rg = {.srcOffset = 0, .dstOffset = 0, .size = bytes};
    D.vkCmdCopyBuffer(be->cmd, be->staging->buf, be->params->buf, 1, &rg);
    barrier(be);
    D.vkCmdBindPipeline(be->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, be->pipe);
    return 0;
}

/* Makes params words [0, words) readable by the host (params_back), submits and waits. */
static int finish_params(dvm_backend *be, size_t words, char *err, size_t errlen) {
    if (!be->params_mapped) {
        VkBufferCopy rg = {.srcOffset = 0, .dstOffset = 0, .size = words * 4};
        D.vkCmdCopyBuffer(be->cmd, be->params->buf, be->staging->buf, 1, &rg);
    }
    barrier_host(be);
    return cmd_submit_wait(be, err, errlen);
}

/* Where the host reads params back after finish_params. */
static const uint32_t *params_back(const dvm_backend *be) { return be->params_mapped ? be->params->map : be->staging->map; }

static int64_t w64(const uint32_t *w) { return (int64_t)((uint64_t)w[0] | (uint64_t)w[1] << 32); }

/* Turns the device's error record into *rt (1), or a backend error (-1) for private codes. */
static int take_error(const uint32_t *e, dvm_rt_error *rt, char *err, size_t errlen) {
    if (e[0] == 0) return 0;
    if (e[0] == RT_VK_RANGE32) {
        fmt(err, errlen, "vulkan: a parallel task iterates over 2^32 or more indices, which needs the 64-bit path "
                         "(this device lacks shaderInt64, or the vk_no_int64 option is set)");
        return -1;
    }
    if (e[0] == RT_VK_STEPS) {
        fmt(err, errlen, "vulkan: the interpreter's loop stopped at node %u before the task finished: llvmpipe "
                         "(lavapipe) ends a shader's loops after 65535 iterations in all, about 65535 interpreted "
                         "instructions a thread (other drivers after 65535^2); the launch was stopped. Run kernels "
                         "with long loops on the cpu backend or a GPU", e[2]);
        return -1;
    }
    memset(rt, 0, sizeof *rt);
    rt->code = (int32_t)e[0];
    rt->task = e[1];
    rt->node = e[2];
    for (int i = 0; i < 4; i++) rt->p[i] = w64(e + 4 + 2 * i);
    return 1;
}

static int vk_exec(dvm_backend *be, const dvm_exec *x, dvm_rt_error *rt, char *err, size_t errlen) {
    const dvm_variant_desc *v = x->var;
    int64_t nthr = x->nthread_slots < 1 ? 1 : x->nthread_slots;
    if (nthr > (int64_t)be->max_threads) {
        fmt(err, errlen, "vulkan: %lld thread slots exceed maxComputeWorkGroupCount", (long long)nthr);
        return -1;
    }
    if (x->nstacks && !x->heap) { fmt(err, errlen, "vulkan: exec with %u stacks and no heap", x->nstacks); return -1; }
    if (x->heap && x->stride > 0) {
        int64_t words = (nthr + 1) * x->stride;
        if ((uint64_t)words * 4 > x->heap->size) { fmt(err, errlen, "vulkan: the heap (%llu bytes) is smaller than its layout (%lld words)", (unsigned long long)x->heap->size, (long long)words); return -1; }
        if (!be->use_int64 && words >= ((int64_t)1 << 32)) {
            fmt(err, errlen, "vulkan: the adstack heap needs %lld words, beyond the 32-bit path of this device "
                             "(no shaderInt64, or the vk_no_int64 option); lower --ad-stack-size", (long long)words);
            return -1;
        }
    }
    /* each task's pipeline, before anything is recorded (a failure here writes nothing) */
    const int priv = be->private_ns && (x->nstacks == 0 || nthr > (int64_t)be->thread_cap);
    int lanes = vk_lanes(be, x);
    VkPipeline tp;
    for (uint32_t t = x->host_tasks; t < v->ntasks; t++) {
        const dvm_task_desc *td = &x->prog->tasks[v->task_begin + t];
        const int l4 = lanes && td->kind == DVM_TASK_PARALLEL;
        const uint32_t extra = x->loaded->lane_need[v->task_begin + t] & VK_X_MASK;
        if (get_pipeline(be, td->nregs, priv, l4 ? 4 : 1, extra, &tp, err, errlen) == 0) continue;
        if (!l4) return -1;
        /* the driver cannot make this four-lane class: this launch and every later one with
           as many registers run on one lane (an invocation a thread slot of vk_slots; the
           grid-stride loop covers the iterations) */
        uint32_t cls;
        int sh;
        reg_class(be, td->nregs, priv, 4, &cls, &sh);
        be->lane_regs_max = cls / 2;
        lanes = 0;
        t = x->host_tasks - 1; /* the loop's t++ starts it again at host_tasks, on one lane */
    }
    /* params: error record | uniforms | slot table | stack table (gpu_abi.h) */
    size_t o_uni = ERR_WORDS, o_slots = SLOTS_AT(o_uni + x->nuniforms), o_stacks = o_slots + DVM_VK_SLOT_WORDS * (size_t)x->nslots;
    size_t words = o_stacks + DVM_VK_STACK_WORDS * (size_t)x->nstacks;
    uint32_t *h = calloc(words, 4);
    if (!h) { fmt(err, errlen, "vulkan: out of host memory"); return -1; }
    memcpy(h + o_uni, x->uniforms, (size_t)x->nuniforms * 4);
    for (uint32_t s = 0; s < x->nslots; s++) {
        uint32_t *e = h + o_slots + DVM_VK_SLOT_WORDS * s;
        uint64_t a = x->arrays[s] ? x->arrays[s]->addr : be->dummy->addr;
        e[DVM_VK_SLOT_ADDR] = (uint32_t)a; e[DVM_VK_SLOT_ADDR + 1] = (uint32_t)(a >> 32);
        uint64_t n = x->arrays[s] ? (uint64_t)x->arr_len[s] : 0;
        if (x->arrays[s] && n * 4 > x->arrays[s]->size) n = x->arrays[s]->size / 4; /* never past the buffer */
        e[DVM_VK_SLOT_LEN] = (uint32_t)n; e[DVM_VK_SLOT_LEN + 1] = (uint32_t)(n >> 32);
        for (int d = 0; d < DVM_MAX_RANK; d++) e[DVM_VK_SLOT_SHAPE + d] = (uint32_t)x->arr_shape[s * DVM_MAX_RANK + d];
    }
    for (uint32_t i = 0; i < x->nstacks; i++) {
        uint32_t *e = h + o_stacks + DVM_VK_STACK_WORDS * i;
        e[DVM_VK_STACK_OFF] = (uint32_t)x->stack_off[i]; e[DVM_VK_STACK_OFF + 1] = (uint32_t)((uint64_t)x->stack_off[i] >> 32);
        e[DVM_VK_STACK_CAP] = (uint32_t)x->stack_cap[i]; e[DVM_VK_STACK_CAP + 1] = (uint32_t)((uint64_t)x->stack_cap[i] >> 32);
    }
    int rc = stage_params(be, h, words, err, errlen);
    if (rc) { free(h); return -1; }
    uint64_t pa = be->params->addr;
    vk_push pc = {.nodes = x->loaded->nodes->addr, .consts = x->loaded->consts->addr, .uni = pa + o_uni * 4,
                  .heap = x->heap ? x->heap->addr : be->dummy->addr, .err = pa, .slots = pa + o_slots * 4,
                  .stacks = pa + o_stacks * 4, .tasks = x->loaded->tasks->addr, .aux = be->dummy->addr, .cancel = be->cancel->addr,
                  .nthreads = (uint32_t)nthr, .stride_lo = (uint32_t)x->stride,
                  .stride_hi = (uint32_t)((uint64_t)x->stride >> 32), .nstacks = x->nstacks};
    VkPipeline bound = be->pipe; /* stage_params binds it */
    int first_serial = !x->resume; /* a later window keeps what earlier ones pushed */
    /* the host ran the first host_tasks tasks (vm/launch.c): their results are in the uniforms */
    for (uint32_t t = x->host_tasks; t < v->ntasks; t++) {
        const dvm_task_desc *td = &x->prog->tasks[v->task_begin + t];
        pc.task = v->task_begin + t;
        pc.task_rel = t;
        const int l4 = lanes && td->kind == DVM_TASK_PARALLEL;
        const uint32_t extra = x->loaded->lane_need[v->task_begin + t] & VK_X_MASK;
        get_pipeline(be, td->nregs, priv, l4 ? 4 : 1, extra, &tp, err, errlen); /* made above: a lookup */
        if (tp != bound) {
            D.vkCmdBindPipeline(be->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, tp);
            bound = tp;
        }
        if (td->kind == DVM_TASK_SERIAL) {
            pc.mode = MODE_SERIAL;
            pc.flags = first_serial ? FLAG_ZERO_SERIAL : 0;
            first_serial = 0;
            dispatch(be, &pc, 1);
        } else {
            /* four lanes: an invocation for four thread slots (interp.comp, heap_slots) */
            pc.mode = MODE_PARALLEL;
            pc.nthreads = (uint32_t)(l4 ? nthr / 4 : nthr);
            /* the row path: in whole workgroups only (interp.comp, par_loop4) */
            const int rows = l4 && (extra & VK_X_ROWS) && pc.nthreads % WG_SIZE == 0;
            pc.flags = rows ? FLAG_ROWS * td->ndim : 0;
            /* with adstacks every invocation zeroes its own slots' counts: all of them run */
            dispatch(be, &pc, task_invocations(pc.nthreads, rows, x->nstacks ? -1 : dvm_exec_total(x, t)));
            pc.nthreads = (uint32_t)nthr;
        }
    }
    rc = finish_params(be, o_slots, err, errlen);
    if (rc == 0) {
        const uint32_t *back = params_back(be);
        rc = take_error(back, rt, err, errlen);
        if (rc == 0) memcpy(x->uniforms, back + o_uni, (size_t)x->nuniforms * 4);
    }
    free(h);
    return rc;
}

/* ---- sizer primitives (vm/sizer.c runs them): the passes and the max-reducer are dispatches
   recorded into one command buffer, which size_read submits; layout in interp.comp ----
   params: error | uniforms | slot table | per program a block: its job (8 words), its ranges
   (10 words each), its result (3 words, padded to 4); the dispatches for program p see its
   block as the job table of one job (pc.aux), so job and range entries count from 0 there.
   scratch (pc.heap): each program's slots (2 words each), the reducer's per-thread slots
   (shared: the programs' dispatches run one after another), then per range and workgroup
   its max (2 words). */
struct dvm_sizing {
    const dvm_size_plan *plan;
    dvm_loaded *tmp;     /* a job without a loaded program gets one for this sizing */
    size_t *block;       /* per program: its block's first word in params */
    size_t words;        /* params words */
    uint32_t rthreads, ngroups;
    size_t o_grp;        /* scratch word of the group maxima */
    vk_push pc;          /* what every dispatch shares */
};

static void vk_size_end(dvm_backend *be, dvm_sizing *s) {
    if (!s) return;
    vk_unload(be, s->tmp);
    free(s->block);
    free(s);
}

static int vk_size_begin(dvm_backend *be, const dvm_size_plan *plan, dvm_sizing **out, char *err, size_t errlen) {
    const dvm_size_job *job = plan->job;
    *out = NULL;
    dvm_sizing *s = calloc(1, sizeof *s);
    size_t *block = calloc(plan->nprogs ? plan->nprogs : 1, sizeof *block);
    if (!s || !block) { free(s); free(block); fmt(err, errlen, "vulkan: out of host memory"); return -1; }
    s->plan = plan;
    s->block = block;
    size_t o_uni = ERR_WORDS, o_slots = SLOTS_AT(o_uni + job->nuniforms), o = o_slots + DVM_VK_SLOT_WORDS * (size_t)job->nslots;
    o = (o + 1) & ~(size_t)1; /* 8-byte alignment for the 64-bit atomics */
    for (uint32_t g = 0; g < plan->nprogs; g++) {
        block[g] = o;
        o += 8 + 10 * (size_t)plan->progs[g].nranges + 4;
    }
    s->words = o;
    uint32_t rthreads = be->thread_cap < 16384 ? be->thread_cap : 16384;
    rthreads = (rthreads + WG_SIZE - 1) / WG_SIZE * WG_SIZE;
    s->rthreads = rthreads;
    s->ngroups = rthreads / WG_SIZE;
    uint32_t *h = calloc(s->words, 4);
    if (!h) { vk_size_end(be, s); fmt(err, errlen, "vulkan: out of host memory"); return -1; }
    memcpy(h + o_uni, job->uniforms, (size_t)job->nuniforms * 4);
    for (uint32_t q = 0; q < job->nslots; q++) {
        uint32_t *e = h + o_slots + DVM_VK_SLOT_WORDS * q;
        uint64_t ad = job->arrays[q] ? job->arrays[q]->addr : be->dummy->addr;
        e[DVM_VK_SLOT_ADDR] = (uint32_t)ad; e[DVM_VK_SLOT_ADDR + 1] = (uint32_t)(ad >> 32);
        uint64_t n = job->arrays[q] ? (uint64_t)job->arr_len[q] : 0;
        if (job->arrays[q] && n * 4 > job->arrays[q]->size) n = job->arrays[q]->size / 4;
        e[DVM_VK_SLOT_LEN] = (uint32_t)n; e[DVM_VK_SLOT_LEN + 1] = (uint32_t)(n >> 32);
        for (int d = 0; d < DVM_MAX_RANK; d++) e[DVM_VK_SLOT_SHAPE + d] = (uint32_t)job->arr_shape[q * DVM_MAX_RANK + d];
    }
    size_t serial_words = 0;
    for (uint32_t g = 0; g < plan->nprogs; g++) {
        const dvm_size_prog *pg = &plan->progs[g];
        uint32_t *e = h + block[g];
        e[0] = pg->stack; e[1] = pg->begin; e[2] = pg->len; e[3] = 0;
        e[4] = (uint32_t)serial_words; e[5] = 8 + 10 * pg->nranges;
        serial_words += 2 * (size_t)pg->len;
        for (uint32_t r = 0; r < pg->nranges; r++) {
            uint32_t *re = e + 8 + 10 * r;
            re[0] = 0; re[1] = plan->ranges[pg->range_first + r].node;
        }
    }
    size_t body_words = 2 * (size_t)plan->maxbody;
    for (uint32_t g = 0; g < plan->nprogs; g++) {
        h[block[g] + 6] = (uint32_t)serial_words;
        h[block[g] + 7] = (uint32_t)body_words;
    }
    s->o_grp = serial_words + body_words * rthreads;
    size_t scratch_bytes = 4 * (s->o_grp + 2 * (size_t)plan->nranges * s->ngroups);
    if (scratch_bytes >= ((size_t)1 << 32) || buf_reserve(be, &be->scratch, scratch_bytes, 0, err, errlen)) {
        if (scratch_bytes >= ((size_t)1 << 32)) fmt(err, errlen, "vulkan: the sizer needs %zu bytes of scratch", scratch_bytes);
        free(h);
        vk_size_end(be, s);
        return -1;
    }
    const dvm_loaded *ld = job->loaded;
    if (!ld) {
        if (vk_load(be, job->prog, &s->tmp, err, errlen)) { free(h); vk_size_end(be, s); return -1; }
        ld = s->tmp;
    }
    int rc = stage_params(be, h, s->words, err, errlen);
    free(h);
    if (rc) { vk_size_end(be, s); return -1; }
    /* slots not yet written read as 0, as the CPU backend's calloc'd state and its per-thread
       copies of it do */
    D.vkCmdFillBuffer(be->cmd, be->scratch->buf, 0, (scratch_bytes + 3) / 4 * 4, 0);
    barrier(be);
    const int64_t walk = plan->walk_cap;
    uint64_t pa = be->params->addr;
    vk_push pc = {.nodes = ld->nodes->addr, .consts = ld->consts->addr, .uni = pa + o_uni * 4,
                  .heap = be->scratch->addr, .err = pa, .slots = pa + o_slots * 4, .stacks = be->dummy->addr,
                  .tasks = ld->tasks->addr, .cancel = be->cancel->addr, .aux = pa, .task_rel = 0,
                  .walk_lo = (uint32_t)walk, .walk_hi = (uint32_t)((uint64_t)walk >> 32)};
    s->pc = pc;
    *out = s;
    return 0;
}

/* The dispatch for program g: its block as the job table; its ranges' group maxima. */
static vk_push size_push(const dvm_backend *be, const dvm_sizing *s, uint32_t g) {
    const dvm_size_prog *pg = &s->plan->progs[g];
    vk_push pc = s->pc;
    pc.aux = be->params->addr + s->block[g] * 4;
    pc.naux = 1;
    pc.flags = 0;
    pc.stride_lo = (uint32_t)(s->o_grp + 2 * (size_t)s->ngroups * pg->range_first);
    pc.stride_hi = pg->nranges ? s->ngroups : 0;
    return pc;
}

static int vk_size_pass(dvm_backend *be, dvm_sizing *s, uint32_t g, int final, char *err, size_t errlen) {
    (void)err, (void)errlen;
    vk_push pc = size_push(be, s, g);
    pc.mode = final ? MODE_SZ_FINAL : MODE_SZ_RANGES;
    dispatch(be, &pc, 1);
    return 0;
}

static int vk_size_reduce(dvm_backend *be, dvm_sizing *s, uint32_t g, char *err, size_t errlen) {
    (void)err, (void)errlen;
    vk_push pc = size_push(be, s, g);
    pc.mode = MODE_SZ_BODY;
    pc.naux = s->plan->progs[g].nranges;
    pc.flags = 1; /* jobs in the table */
    pc.nthreads = s->rthreads;
    dispatch(be, &pc, s->rthreads);
    return 0;
}

static int vk_size_read(dvm_backend *be, dvm_sizing *s, int64_t *caps, dvm_rt_error *rt, char *err, size_t errlen) {
    const dvm_size_plan *plan = s->plan;
    int rc = finish_params(be, s->words, err, errlen);
    if (rc) return rc;
    const uint32_t *back = params_back(be);
    rc = take_error(back, rt, err, errlen);
    for (uint32_t g = 0; rc == 0 && g < plan->nprogs; g++) {
        const dvm_size_prog *pg = &plan->progs[g];
        const uint32_t *res = back + s->block[g] + 8 + 10 * (size_t)pg->nranges;
        if (res[2]) {
            const dvm_program *p = plan->job->prog;
            const dvm_stack_desc *sd = &p->stacks[plan->job->var->stack_begin + pg->stack];
            fmt(err, errlen, "vulkan: the size of adstack '%s' (line %u) overflows the 32-bit path of this device "
                             "(no shaderInt64, or the vk_no_int64 option)",
                p->strings + sd->name, sd->line);
            return -1;
        }
        caps[g] = be->use_int64 ? w64(res) : (int64_t)(int32_t)res[0];
    }
    return rc;
}

/* interp.comp stops a launch with its own errors: a loop that runs 65535^2 steps (the guard
   against llvmpipe's loop limit: RT_VK_STEPS) and an iteration space beyond the 32-bit path
   (RT_VK_RANGE32). A task with a loop, or of 2^32 iterations or more, may meet them. */
static int vk_may_stop(dvm_backend *be, const dvm_node *nodes, const dvm_task_desc *t, int64_t total) {
    (void)be;
    return dvm_task_flow_of(nodes, t).loops > 0 || total < 0 || total >= ((int64_t)1 << 32);
}

static volatile uint32_t *vk_cancel_word(dvm_backend *be) { return (volatile uint32_t *)be->cancel->map; }

const dvm_backend_vtbl dvm_backend_vulkan = {
    .name = "vulkan",
    .open = vk_open,
    .close = vk_close,
    .probe = vk_probe,
    .device_name = vk_device_name,
    .software = vk_software,
    .alloc = vk_alloc,
    .free = vk_free,
    .write = vk_write,
    .read = vk_read,
    .copy = vk_copy,
    .copy_lazy = vk_copy_lazy,
    .load = vk_load,
    .unload = vk_unload,
    .size_begin = vk_size_begin,
    .size_pass = vk_size_pass,
    .size_reduce = vk_size_reduce,
    .size_read = vk_size_read,
    .size_end = vk_size_end,
    .slots = vk_slots,
    .exec = vk_exec,
    .may_stop = vk_may_stop,
    .cancel_word = vk_cancel_word,
};
