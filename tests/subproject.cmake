# dvm as a subproject: a parent project's add_subdirectory(dvm) configures without dvm's tests,
# examples and benchmarks, and a program linked to dvm::dvm builds and runs
# (tests/subproject/CMakeLists.txt; GPU backends off to keep it short).
add_test(NAME subproject_consumer
         COMMAND sh -c "rm -rf \"$1\" && \"$0\" -S \"$2/tests/subproject\" -B \"$1\" -DDVM_SOURCE_DIR=\"$2\" -DCMAKE_C_COMPILER=\"$3\" -DDVM_VULKAN=OFF -DDVM_CUDA=OFF -DDVM_HIP=OFF && \"$0\" --build \"$1\" -j2 && \"$1/app\""
                 ${CMAKE_COMMAND} ${CMAKE_CURRENT_BINARY_DIR}/subproject_consumer ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_C_COMPILER})
# nosan: it builds dvm afresh with none of the parent build's flags (no sanitizer), so the
# sanitizer run would repeat the Release run's build and check exactly
set_tests_properties(subproject_consumer PROPERTIES TIMEOUT 300 LABELS nosan)
