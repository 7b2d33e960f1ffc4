# Compiler cache (issue 32): every tree of this checkout (build/, build-tsan/, build-asan/,
# build-fuzz/) compiles through ccache when it is installed (scripts/setup installs Debian's), into
# a cache that lives outside the checkout, so that a fresh clone on a machine that has built belfry
# before compiles little:
#   BELFRY_CCACHE_DIR   the cache (default $XDG_CACHE_HOME/belfry-ccache, else ~/.cache/belfry-ccache)
#   -DBELFRY_CCACHE=OFF compile without it
# base_dir is the checkout, so the absolute paths CMake passes (-I, the source file) hash the same
# from any clone; hash_dir is off, so the debug info's working directory does not split the cache
# either (a sanitizer report then names paths relative to the tree). scripts/test prints the
# statistics at the end (ccache --show-stats).
option(BELFRY_CCACHE "Compile through ccache when it is installed" ON)
if(BELFRY_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  find_program(BELFRY_CCACHE_PROGRAM ccache)
  if(BELFRY_CCACHE_PROGRAM)
    if(DEFINED ENV{BELFRY_CCACHE_DIR})
      set(_belfry_ccache_dir "$ENV{BELFRY_CCACHE_DIR}")
    elseif(DEFINED ENV{XDG_CACHE_HOME})
      set(_belfry_ccache_dir "$ENV{XDG_CACHE_HOME}/belfry-ccache")
    else()
      set(_belfry_ccache_dir "$ENV{HOME}/.cache/belfry-ccache")
    endif()
    get_filename_component(_belfry_ccache_base "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
    set(CMAKE_CXX_COMPILER_LAUNCHER
        /usr/bin/env "CCACHE_DIR=${_belfry_ccache_dir}" "CCACHE_BASEDIR=${_belfry_ccache_base}"
        CCACHE_NOHASHDIR=1 CCACHE_MAXSIZE=8G ${BELFRY_CCACHE_PROGRAM})
    message(STATUS "belfry: compiling through ccache (${_belfry_ccache_dir})")
  else()
    message(STATUS "belfry: ccache not found, compiling without a cache (scripts/setup installs it)")
  endif()
endif()
