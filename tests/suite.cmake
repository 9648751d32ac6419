# The kernel corpus through the dvm command: forward, gradients (finite differences and
# tangent/adjoint agreement), runtime errors, on the CPU and, where a device exists, Vulkan.
# A backend with no device exits 77: ctest reports the test as skipped, never as passed.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
set(DVM_SUITE ${CMAKE_CURRENT_SOURCE_DIR}/tests/suite/run_suite.py)
foreach(mode forward grad errors)
  add_test(NAME suite_${mode}_cpu COMMAND ${Python3_EXECUTABLE} ${DVM_SUITE} --dvm $<TARGET_FILE:dvm_cli> --backend cpu --mode ${mode})
  set_tests_properties(suite_${mode}_cpu PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900)
endforeach()
add_test(NAME suite_big_maxreducer_cpu COMMAND ${Python3_EXECUTABLE} ${DVM_SUITE} --dvm $<TARGET_FILE:dvm_cli> --backend cpu --mode big)
set_tests_properties(suite_big_maxreducer_cpu PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900 LABELS nosan)
foreach(be vulkan cuda hip)
  foreach(mode forward grad errors)
    add_test(NAME suite_${mode}_${be} COMMAND ${Python3_EXECUTABLE} ${DVM_SUITE} --dvm $<TARGET_FILE:dvm_cli> --backend ${be} --mode ${mode})
    set_tests_properties(suite_${mode}_${be} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900)
  endforeach()
endforeach()
