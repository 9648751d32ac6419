# The C API example, and `demo`: the example, then the README's command-line demo.
add_executable(api_example examples/api_example.c)
target_link_libraries(api_example PRIVATE dvm)
add_custom_target(demo
  COMMAND api_example ${CMAKE_CURRENT_SOURCE_DIR}/examples/damp.dvk
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/scripts/run_demo.sh ${CMAKE_CURRENT_BINARY_DIR}
  WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}
  DEPENDS api_example dvm_cli
  USES_TERMINAL)

# The diffusion example: one kernel with a serial loop against a tape of launches (checked:
# the two gradients must agree).
add_executable(diffusion_example examples/diffusion.c)
target_link_libraries(diffusion_example PRIVATE dvm m)
add_test(NAME example_diffusion COMMAND diffusion_example ${CMAKE_CURRENT_SOURCE_DIR}/examples/diffusion.dvk cpu 200)

# The mass-spring example, in vec3 and mat3: its adjoint gradient against finite differences.
add_executable(springs_example examples/springs.c)
target_link_libraries(springs_example PRIVATE dvm m)
add_test(NAME example_springs COMMAND springs_example ${CMAKE_CURRENT_SOURCE_DIR}/examples/springs.dvk cpu)
