#!/bin/sh
# install_consumer.sh: installs this build into a temporary prefix and builds
# tests/install_consumer/main.c against it twice, with pkg-config and with find_package(dvm)
# (the shared library, and dvm::dvm_static), then runs each program.
# usage: install_consumer.sh CMAKE BUILD_DIR WORK_DIR CC LIBDIR CONSUMER_SRC [PKG_CONFIG]
# Exit 77 (skipped) when pkg-config is missing.
set -eu
cmake=$1 build=$2 work=$3 cc=$4 libdir=$5 src=$6 pkgconfig=${7:-}
fail() { echo "install_consumer: $*" >&2; exit 1; }
if [ -z "$pkgconfig" ] || ! command -v "$pkgconfig" >/dev/null 2>&1; then
    echo "install_consumer: skipped: pkg-config not found (install pkg-config)"
    exit 77
fi
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
"$cmake" --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1 || { cat "$work/install.log"; fail "cmake --install failed"; }
for f in include/dvm.h "$libdir/libdvm.a" "$libdir/libdvm.so" "$libdir/pkgconfig/dvm.pc" \
         "$libdir/cmake/dvm/dvmConfig.cmake" bin/dvm; do
    [ -e "$prefix/$f" ] || fail "expected $prefix/$f after cmake --install, found nothing"
done
"$prefix/bin/dvm" info >/dev/null || fail "the installed dvm command failed: $prefix/bin/dvm info"

# pkg-config: the shared library
flags=$(PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig" "$pkgconfig" --cflags --libs dvm) || fail "pkg-config --cflags --libs dvm failed"
echo "pkg-config: $flags"
# shellcheck disable=SC2086
"$cc" -std=c11 -Wall -Wextra -Werror -o "$work/app_pc" "$src/main.c" $flags || fail "cc with pkg-config's flags failed"
LD_LIBRARY_PATH="$prefix/$libdir" "$work/app_pc" || fail "the pkg-config program failed"
case $(LD_LIBRARY_PATH="$prefix/$libdir" ldd "$work/app_pc") in
    *"$prefix/$libdir/libdvm.so"*) ;;
    *) fail "the pkg-config program does not load $prefix/$libdir/libdvm.so" ;;
esac

# find_package(dvm): dvm::dvm and dvm::dvm_static
"$cmake" -S "$src" -B "$work/cmake" -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$prefix" \
    >"$work/configure.log" 2>&1 || { cat "$work/configure.log"; fail "configuring the find_package project failed"; }
"$cmake" --build "$work/cmake" >"$work/build.log" 2>&1 || { cat "$work/build.log"; fail "building the find_package project failed"; }
"$work/cmake/app" || fail "the find_package program (dvm::dvm) failed"
"$work/cmake/app_static" || fail "the find_package program (dvm::dvm_static) failed"
echo "install_consumer: ok"
