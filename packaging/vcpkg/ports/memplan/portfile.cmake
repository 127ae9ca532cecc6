# vcpkg overlay port for memplan (header-only). Use it from a checkout of memplan:
#   vcpkg install memplan[json,cbc] --overlay-ports=<memplan>/packaging/vcpkg/ports
# The sources are the checkout this port lives in (an overlay port; a registry port would use
# vcpkg_from_github with a release tag instead).
set(VCPKG_BUILD_TYPE release)  # headers only: one configuration
get_filename_component(SOURCE_PATH "${CMAKE_CURRENT_LIST_DIR}/../../../.." ABSOLUTE)

vcpkg_check_features(OUT_FEATURE_OPTIONS FEATURE_OPTIONS
  FEATURES
    json  MEMPLAN_WITH_JSON
    json  MEMPLAN_WITH_GZIP
    cbc   MEMPLAN_WITH_CBC
    boost MEMPLAN_WITH_BOOST
    ad    MEMPLAN_WITH_EIGEN
    cuda  MEMPLAN_WITH_CUDA
)

vcpkg_cmake_configure(
  SOURCE_PATH "${SOURCE_PATH}"
  OPTIONS
    -DMEMPLAN_BUILD_TESTS=OFF
    -DMEMPLAN_BUILD_EXAMPLES=OFF
    -DMEMPLAN_BUILD_BENCH=OFF
    -DMEMPLAN_BUILD_APPS=OFF
    -DMEMPLAN_HEADER_CHECK=OFF
    -DMEMPLAN_INSTALL_CMAKEDIR=share/memplan
    -DMEMPLAN_INSTALL_PKGCONFIG=ON
    ${FEATURE_OPTIONS}
)
vcpkg_cmake_install()
vcpkg_cmake_config_fixup(PACKAGE_NAME memplan CONFIG_PATH share/memplan)
vcpkg_fixup_pkgconfig()

file(REMOVE_RECURSE "${CURRENT_PACKAGES_DIR}/debug" "${CURRENT_PACKAGES_DIR}/lib")
file(INSTALL "${CMAKE_CURRENT_LIST_DIR}/usage" DESTINATION "${CURRENT_PACKAGES_DIR}/share/${PORT}")
# No licence has been chosen for memplan yet (docs/install.md); vcpkg requires a copyright file.
file(WRITE "${CURRENT_PACKAGES_DIR}/share/${PORT}/copyright"
  "memplan: no licence has been chosen yet; see the project's README and docs/install.md.\n")
