# Cancel and time limits (dvm_context_cancel, dvm_launch_opts.timeout_ms) on every backend
# compiled in; a backend without a device exits 77 and is reported as skipped, never passed.
add_executable(test_cancel tests/test_cancel.c)
target_include_directories(test_cancel PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}) # tests/check.h
target_link_libraries(test_cancel PRIVATE dvm) # pthreads: through OpenMP's -fopenmp
add_test(NAME cancel_cpu COMMAND test_cancel cpu)
set_tests_properties(cancel_cpu PROPERTIES TIMEOUT 120)
if(TARGET dvm_vk_spirv)
  set(_icd "${DVM_VK_TEST_ICD}")
  if(NOT _icd AND EXISTS /usr/share/vulkan/icd.d/lvp_icd.x86_64.json)
    set(_icd /usr/share/vulkan/icd.d/lvp_icd.x86_64.json)
  endif()
  add_test(NAME cancel_vulkan COMMAND test_cancel vulkan)
  set_tests_properties(cancel_vulkan PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
  if(_icd)
    set_tests_properties(cancel_vulkan PROPERTIES ENVIRONMENT "VK_DRIVER_FILES=${_icd};VK_ICD_FILENAMES=${_icd}")
  endif()
endif()
foreach(_be cuda hip)
  if((_be STREQUAL "cuda" AND DVM_CUDA_TARGETS) OR (_be STREQUAL "hip" AND DVM_HIP_BUNDLE))
    add_test(NAME cancel_${_be} COMMAND test_cancel ${_be})
    set_tests_properties(cancel_${_be} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
  endif()
endforeach()

# API misuse (use after destroy, double destroy, a context destroyed first, two threads on
# one context): DVM_ERR_USAGE or a no-op, never a crash; clean in the sanitizer build.
add_executable(test_misuse tests/test_misuse.c)
target_include_directories(test_misuse PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}) # tests/check.h
target_link_libraries(test_misuse PRIVATE dvm)
add_test(NAME test_misuse COMMAND test_misuse)
set_tests_properties(test_misuse PROPERTIES TIMEOUT 120)
