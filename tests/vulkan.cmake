# Vulkan backend tests (owned by the vulkan helper): the backend against the CPU backend, in
# each of its builds (64-bit or checked 32-bit arithmetic; f32 atomics or CAS loops). They
# run on lavapipe where it is installed; without a Vulkan device they SKIP (exit 77).
if(TARGET dvm_vk_spirv)
  add_executable(test_vulkan tests/test_vulkan.c)
  target_link_libraries(test_vulkan PRIVATE dvm)
  target_include_directories(test_vulkan PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/vk_gen)
  set(DVM_VK_TEST_ICD "" CACHE STRING "Vulkan ICD manifest for the tests (default: lavapipe when installed)")
  set(_icd "${DVM_VK_TEST_ICD}")
  if(NOT _icd AND EXISTS /usr/share/vulkan/icd.d/lvp_icd.x86_64.json)
    set(_icd /usr/share/vulkan/icd.d/lvp_icd.x86_64.json)
  endif()
  set(_env "")
  if(_icd)
    set(_env VK_DRIVER_FILES=${_icd} VK_ICD_FILENAMES=${_icd})
  endif()
  # each shader build (--no-int64, --no-float-atomics: the backend's vk_ options), and a few
  # threads that each take many iterations of a task (--gpu-threads; 100, since lavapipe ends a
  # thread's loops after 65535 iterations in all), and four iterations a thread (--vk-lanes 4: the
  # default on GPUs, interp.comp's run4)
  foreach(_v "vulkan|" "vulkan_no_int64|--no-int64" "vulkan_no_float_atomics|--no-float-atomics"
          "vulkan_gpu_threads|--gpu-threads;100" "vulkan_lanes|--vk-lanes;4")
    string(FIND "${_v}" "|" _bar)
    string(SUBSTRING "${_v}" 0 ${_bar} _name)
    math(EXPR _bar "${_bar} + 1")
    string(SUBSTRING "${_v}" ${_bar} -1 _flags)
    add_test(NAME ${_name} COMMAND test_vulkan ${_flags})
    set_tests_properties(${_name} PROPERTIES SKIP_RETURN_CODE 77 ENVIRONMENT "${_env}")
    if(NOT _name STREQUAL "vulkan")
      # the shader variants run the same host code as `vulkan`: not repeated under ASan
      set_tests_properties(${_name} PROPERTIES LABELS nosan)
    endif()
  endforeach()
endif()
