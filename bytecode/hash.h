/* hash.h: FNV-1a 64, the project's one hash: the blob checksum, the ops-table hash (also
 * computed at compile time by the CUDA/HIP interpreter from these constants), the Vulkan
 * pipeline-cache key, and the hash tables of the compiler and of tools/ptx_brx.c (which use the
 * low bits). Header-only so that build-time tools need no library. */
#ifndef DVM_HASH_H
#define DVM_HASH_H
#include <stddef.h>
#include <stdint.h>

#define DVM_FNV_BASIS 0xcbf29ce484222325ull /* 14695981039346656037 */
#define DVM_FNV_PRIME 0x100000001b3ull      /* 1099511628211 */

/* Hash h continued over n bytes; a hash starts from DVM_FNV_BASIS. */
static inline uint64_t dvm_fnv1a(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = (const unsigned char *)p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= DVM_FNV_PRIME;
    }
    return h;
}
#endif
