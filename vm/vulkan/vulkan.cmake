# Vulkan backend: the GLSL interpreter (interp.comp) compiled to SPIR-V at build time by
# glslangValidator, checked by spirv-val, embedded in the library; libvulkan.so.1 is opened
# at run time (dlopen), so only the headers are needed here.
# DVM_VULKAN: ON (fail when something is missing), OFF, AUTO (on when all is found).
find_program(DVM_GLSLANG glslangValidator)
find_program(DVM_SPIRV_VAL spirv-val)
find_path(DVM_VULKAN_INCLUDE vulkan/vulkan.h)

set(_dvm_vk_missing "")
foreach(_v DVM_GLSLANG DVM_SPIRV_VAL DVM_VULKAN_INCLUDE)
  if(NOT ${_v})
    list(APPEND _dvm_vk_missing ${_v})
  endif()
endforeach()

if(DVM_VULKAN STREQUAL "OFF")
  set(_dvm_vk_on FALSE)
elseif(_dvm_vk_missing)
  if(DVM_VULKAN STREQUAL "ON")
    message(FATAL_ERROR "DVM_VULKAN=ON but not found: ${_dvm_vk_missing} (glslangValidator, spirv-val, Vulkan headers)")
  endif()
  message(STATUS "Vulkan backend: off (not found: ${_dvm_vk_missing})")
  set(_dvm_vk_on FALSE)
else()
  set(_dvm_vk_on TRUE)
endif()

if(_dvm_vk_on)
  message(STATUS "Vulkan backend: on (${DVM_GLSLANG})")
  set(_vk_src ${CMAKE_CURRENT_SOURCE_DIR}/vm/vulkan)
  set(_vk_gen ${CMAKE_CURRENT_BINARY_DIR}/vk_gen)
  file(MAKE_DIRECTORY ${_vk_gen})

  # Opcode constants and properties from ops.def, and what else interp.comp shares with the C
  # side (limits, error codes, heap addressing, push constants: bc.h, gpu_abi.h); fails when
  # interp.comp lacks a `case OP_X:`.
  add_executable(dvm_gen_glsl_ops ${CMAKE_CURRENT_SOURCE_DIR}/tools/gen_glsl_ops.c)
  target_include_directories(dvm_gen_glsl_ops PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  add_custom_command(
    OUTPUT ${_vk_gen}/dvm_ops.glsl
    COMMAND dvm_gen_glsl_ops ${_vk_src}/interp.comp ${_vk_gen}/dvm_ops.glsl
    DEPENDS dvm_gen_glsl_ops ${_vk_src}/interp.comp ${CMAKE_CURRENT_SOURCE_DIR}/bytecode/ops.def
            ${CMAKE_CURRENT_SOURCE_DIR}/bytecode/bc.h ${CMAKE_CURRENT_SOURCE_DIR}/vm/interp/gpu_abi.h
    COMMENT "GLSL opcode constants and ABI")

  # Four builds: 64-bit or checked 32-bit index/size arithmetic x f32 atomics or CAS loops.
  set(_vk_headers "")
  foreach(_i64 0 1)
    foreach(_fa 0 1)
      set(_name dvm_spv_i${_i64}_f${_fa})
      add_custom_command(
        OUTPUT ${_vk_gen}/${_name}.h
        COMMAND ${DVM_GLSLANG} -V --target-env vulkan1.2 -DDVM_INT64=${_i64} -DDVM_FATOMIC=${_fa}
                -I${_vk_gen} -o ${_vk_gen}/${_name}.spv ${_vk_src}/interp.comp
        COMMAND ${DVM_SPIRV_VAL} --target-env vulkan1.2 ${_vk_gen}/${_name}.spv
        COMMAND ${DVM_GLSLANG} -V --target-env vulkan1.2 -DDVM_INT64=${_i64} -DDVM_FATOMIC=${_fa}
                -I${_vk_gen} --vn ${_name} -o ${_vk_gen}/${_name}.h ${_vk_src}/interp.comp
        DEPENDS ${_vk_src}/interp.comp ${_vk_gen}/dvm_ops.glsl
        COMMENT "SPIR-V interpreter ${_name}")
      list(APPEND _vk_headers ${_vk_gen}/${_name}.h)
    endforeach()
  endforeach()
  add_custom_target(dvm_vk_spirv DEPENDS ${_vk_headers})

  target_sources(dvm_obj PRIVATE ${_vk_src}/vulkan_backend.c)
  add_dependencies(dvm_obj dvm_vk_spirv)
  target_include_directories(dvm_obj PRIVATE ${_vk_gen} ${DVM_VULKAN_INCLUDE})
  target_compile_definitions(dvm_obj PUBLIC DVM_HAVE_VULKAN)
endif()
