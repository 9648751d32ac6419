# gpu_image.cmake: what the CUDA and HIP builds share once their compiler has produced the
# interpreter image: embed IMAGE in the library objects (dvm_obj, which feed both the static
# and the shared library) as the byte array NAME (embed.cmake), add the backend's host
# sources, define DVM_HAVE_<BACKEND>.
function(dvm_gpu_image backend name image targets host_src)
  set(gpu ${CMAKE_CURRENT_SOURCE_DIR}/vm/cuda_hip)
  set(c ${CMAKE_CURRENT_BINARY_DIR}/${name}_image.c)
  add_custom_command(OUTPUT ${c}
    COMMAND ${CMAKE_COMMAND} -DIN=${image} -DOUT=${c} -DNAME=${name} "-DTARGETS=${targets}" -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/embed.cmake
    DEPENDS ${image} ${CMAKE_CURRENT_SOURCE_DIR}/cmake/embed.cmake
    VERBATIM)
  target_sources(dvm_obj PRIVATE ${gpu}/${host_src} ${gpu}/gpu_backend.c ${c})
  target_compile_definitions(dvm_obj PUBLIC DVM_HAVE_${backend})
endfunction()
