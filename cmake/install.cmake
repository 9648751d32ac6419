# install.cmake: what `cmake --install` puts under the prefix (GNU layout):
#   include/dvm.h; lib/libdvm.a, lib/libdvm.so.<version>; bin/dvm;
#   lib/pkgconfig/dvm.pc (pkg-config: the shared library; Libs.private for static linking);
#   lib/cmake/dvm/ (find_package(dvm): dvm::dvm, the shared library; dvm::dvm_static).
include(CMakePackageConfigHelpers)

install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/include/dvm.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS dvm dvm_shared EXPORT dvmTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS dvm_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# CMake package: relocatable (paths relative to the installed config file)
set(DVM_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/dvm)
install(EXPORT dvmTargets NAMESPACE dvm:: DESTINATION ${DVM_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/dvmConfig.cmake.in
                              ${CMAKE_CURRENT_BINARY_DIR}/dvmConfig.cmake
                              INSTALL_DESTINATION ${DVM_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/dvmConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/dvmConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/dvmConfigVersion.cmake
        DESTINATION ${DVM_CMAKE_DIR})

# pkg-config: the prefix is found from the .pc file's own place (${pcfiledir}), so that
# `cmake --install --prefix DIR` and DESTDIR give a working file too.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(DVM_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(DVM_PC_LIBDIR "${CMAKE_INSTALL_FULL_LIBDIR}")
  set(DVM_PC_INCLUDEDIR "${CMAKE_INSTALL_FULL_INCLUDEDIR}")
else()
  file(RELATIVE_PATH _dvm_up /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
  string(REGEX REPLACE "/$" "" _dvm_up "${_dvm_up}")
  set(DVM_PC_PREFIX "\${pcfiledir}/${_dvm_up}")
  set(DVM_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
  set(DVM_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
set(DVM_PC_LIBS_PRIVATE "")
foreach(l ${OpenMP_C_LIB_NAMES} m ${CMAKE_DL_LIBS})
  string(APPEND DVM_PC_LIBS_PRIVATE " -l${l}")
endforeach()
string(STRIP "${DVM_PC_LIBS_PRIVATE}" DVM_PC_LIBS_PRIVATE)
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/dvm.pc.in ${CMAKE_CURRENT_BINARY_DIR}/dvm.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/dvm.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
