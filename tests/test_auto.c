/* test_auto.c: `auto` (and a NULL backend) never opens a software Vulkan device such as
 * lavapipe, while `vulkan` named explicitly still does; with no CUDA or HIP device, auto is
 * then the cpu backend. Run with only lavapipe visible (tests/host.cmake sets
 * VK_DRIVER_FILES); exits 77 (skip) where no software Vulkan device is found, since there is
 * then nothing auto could wrongly take. */
#include <stdio.h>
#include <string.h>
#include "dvm.h"
#include "tests/check.h"

/* The backend a context opens with these options ("" if it fails), and its device line. */
static const char *open_backend(const char *backend, int device, char *devline, size_t len) {
    static char name[32];
    dvm_context_opts o = {.backend = backend, .device = device};
    dvm_context *ctx = NULL;
    name[0] = 0;
    if (devline && len) devline[0] = 0;
    if (dvm_context_create(&o, &ctx) == DVM_OK) {
        snprintf(name, sizeof name, "%s", dvm_context_backend(ctx));
        if (devline) snprintf(devline, len, "%s", dvm_context_device(ctx));
    }
    dvm_context_destroy(ctx);
    return name;
}

int main(void) {
    char vkdev[512];
    /* lavapipe names itself "llvmpipe (...) (CPU, Vulkan 1.3...)" (the device type) */
    int software = !strcmp(open_backend("vulkan", 0, vkdev, sizeof vkdev), "vulkan") && strstr(vkdev, "(CPU, Vulkan");
    int gpu = !strcmp(open_backend("cuda", 0, NULL, 0), "cuda") || !strcmp(open_backend("hip", 0, NULL, 0), "hip");

    const char *modes[2] = {"auto", NULL};
    for (int m = 0; m < 2; m++) {
        char dev[512];
        char want[32];
        snprintf(want, sizeof want, "%s", open_backend(modes[m], 0, dev, sizeof dev));
        CHECK(want[0], "backend %s opened nothing", modes[m] ? modes[m] : "NULL");
        CHECK(strcmp(want, "vulkan") || !strstr(dev, "(CPU, Vulkan"), "backend %s took the software Vulkan device %s",
              modes[m] ? modes[m] : "NULL", dev);
        if (software && !gpu)
            CHECK(!strcmp(want, "cpu"), "backend %s with only a software Vulkan device: got %s (%s), want cpu",
                  modes[m] ? modes[m] : "NULL", want, dev);
    }

    /* dvm info says which devices auto passes over */
    char *report = dvm_backends_report();
    CHECK(report != NULL, "dvm_backends_report failed");
    if (report && software)
        CHECK(strstr(report, "[software: --backend auto takes the cpu backend instead]") != NULL,
              "dvm info does not mark the software device:\n%s", report);
    dvm_free(report);

    if (fails) return 1;
    if (!software) {
        printf("SKIP: no software Vulkan device here (vulkan device 0: %s)\n", vkdev[0] ? vkdev : "none");
        return 77;
    }
    printf("ok: auto and NULL pass over %s\n", vkdev);
    return 0;
}
