# Vulkan benchmark: the Vulkan backend against the CPU backend, same kernels and data, and the
# cost of opening it (pipeline cache cold or warm). Not a test: run build/bench_vulkan [--quick];
# bench/RESULTS.md ("Vulkan") records its output.
if(TARGET dvm_vk_spirv)
  add_executable(bench_vulkan bench/bench_vulkan.c)
  target_link_libraries(bench_vulkan PRIVATE dvm m)
  target_include_directories(bench_vulkan PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
endif()
