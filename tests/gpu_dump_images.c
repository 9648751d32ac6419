/* gpu_dump_images.c: writes the interpreter images embedded in libdvm (CUDA fatbin, HIP
 * offload bundle) to files, so that test_gpu_build.sh inspects exactly what ships. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#ifdef DVM_HAVE_CUDA
extern const unsigned char dvm_cuda_image[];
extern const size_t dvm_cuda_image_len;
#endif
#ifdef DVM_HAVE_HIP
extern const unsigned char dvm_hip_image[];
extern const size_t dvm_hip_image_len;
#endif

static int dump(const char *path, const unsigned char *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "gpu_dump_images: cannot write %s\n", path);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: gpu_dump_images cuda|hip OUT\n");
        return 2;
    }
#ifdef DVM_HAVE_CUDA
    if (strcmp(argv[1], "cuda") == 0) return dump(argv[2], dvm_cuda_image, dvm_cuda_image_len);
#endif
#ifdef DVM_HAVE_HIP
    if (strcmp(argv[1], "hip") == 0) return dump(argv[2], dvm_hip_image, dvm_hip_image_len);
#endif
    fprintf(stderr, "gpu_dump_images: the %s backend is not in this build\n", argv[1]);
    return 3;
}
