# Conan 2 recipe for memplan: a header-only package whose optional backends are components.
#   conan create packaging/conan -o "memplan/*:json=True" -o "memplan/*:cbc=True"
# The recipe installs memplan with its own CMake (the same install tree `cmake --install` makes) and
# points consumers at memplan's own memplanConfig.cmake, so `find_package(memplan)` and the targets
# memplan::memplan, memplan::json, memplan::gzip, memplan::cbc, memplan::boost, memplan::ad and
# memplan::cuda are the same with or without Conan.
import os

from conan import ConanFile
from conan.tools.cmake import CMake, CMakeDeps, CMakeToolchain, cmake_layout
from conan.tools.files import copy


class MemplanConan(ConanFile):
    name = "memplan"
    version = "0.1.0"
    description = ("Header-only C++20 library that plans the memory of neural-network training and "
                   "inference graphs: operator order, arena offsets, recomputation")
    license = "LicenseRef-memplan-unspecified"  # no licence chosen yet: docs/install.md
    topics = ("memory-planning", "deep-learning", "scheduling", "header-only")
    package_type = "header-library"
    settings = "os", "arch", "compiler", "build_type"
    options = {"json": [True, False], "cbc": [True, False], "boost": [True, False],
               "ad": [True, False], "cuda": [True, False]}
    default_options = {"json": True, "cbc": False, "boost": False, "ad": False, "cuda": False}
    no_copy_source = True

    # backend option -> (CMake switch of memplan, Conan requirement or None)
    BACKENDS = {
        "json": ("MEMPLAN_WITH_JSON", "nlohmann_json/3.11.3"),
        "cbc": ("MEMPLAN_WITH_CBC", "coin-cbc/2.10.5"),
        "boost": ("MEMPLAN_WITH_BOOST", "boost/1.83.0"),
        "ad": ("MEMPLAN_WITH_EIGEN", "eigen/3.4.0"),
        "cuda": ("MEMPLAN_WITH_CUDA", None),  # the system's CUDA toolkit
    }

    def export_sources(self):
        root = os.path.join(self.recipe_folder, "..", "..")
        for pattern in ("CMakeLists.txt", "cmake/*", "include/*"):
            copy(self, pattern, root, self.export_sources_folder)

    def layout(self):
        cmake_layout(self)

    def requirements(self):
        for option, (_, ref) in self.BACKENDS.items():
            if ref and self.options.get_safe(option):
                self.requires(ref)
        if self.options.json:
            self.requires("zlib/1.3.1")  # .json.gz graphs (memplan::gzip)

    def package_id(self):
        # Headers only: the compiler and build type do not change what is packaged.
        self.info.settings.clear()

    def cmake_cache_variables(self):
        """The CMake cache of memplan's install build (also read by packaging/tests/run_conan_recipe.py)."""
        v = {"MEMPLAN_BUILD_TESTS": "OFF", "MEMPLAN_BUILD_EXAMPLES": "OFF", "MEMPLAN_BUILD_BENCH": "OFF",
             "MEMPLAN_BUILD_APPS": "OFF", "MEMPLAN_HEADER_CHECK": "OFF", "MEMPLAN_INSTALL_PKGCONFIG": "ON"}
        for option, (switch, _) in self.BACKENDS.items():
            v[switch] = "ON" if self.options.get_safe(option) else "OFF"
        v["MEMPLAN_WITH_GZIP"] = "ON" if self.options.json else "OFF"
        return v

    def generate(self):
        tc = CMakeToolchain(self)
        for k, val in self.cmake_cache_variables().items():
            tc.cache_variables[k] = val
        tc.generate()
        CMakeDeps(self).generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()

    def package(self):
        cmake = CMake(self)
        cmake.install()

    def package_info(self):
        # Consumers use memplan's own config file (lib/cmake/memplan), which finds the backends'
        # dependencies with find_dependency.
        self.cpp_info.set_property("cmake_find_mode", "none")
        self.cpp_info.builddirs.append(os.path.join("lib", "cmake", "memplan"))
        self.cpp_info.bindirs = []
        self.cpp_info.libdirs = []
        self.cpp_info.set_property("pkg_config_name", "memplan")
