# `cmake --install` into a temporary prefix, then a program built against it with pkg-config
# and with find_package(dvm) (tests/install_consumer.sh). Skipped (77) without pkg-config.
find_program(DVM_PKG_CONFIG pkg-config)
add_test(NAME install_consumer
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/tests/install_consumer.sh ${CMAKE_COMMAND} ${CMAKE_CURRENT_BINARY_DIR}
                 ${CMAKE_CURRENT_BINARY_DIR}/install_consumer "${CMAKE_C_COMPILER}" "${CMAKE_INSTALL_LIBDIR}"
                 ${CMAKE_CURRENT_SOURCE_DIR}/tests/install_consumer "${DVM_PKG_CONFIG}")
# nosan: a sanitizer build installs an instrumented library that a plain program cannot load
# (the ASan runtime must come first); the Release run tests the install
set_tests_properties(install_consumer PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120 LABELS nosan)
