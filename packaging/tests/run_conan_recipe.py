#!/usr/bin/env python3
"""Runs packaging/conan's recipe and test_package here, where Conan itself cannot be installed.

A minimal stand-in for the parts of the `conan` Python API the recipes use (ConanFile, CMakeToolchain's
cache variables, CMake configure/build/install, files.copy, cmake_layout, can_run) executes the
recipe's own methods in Conan's order: export_sources, layout, requirements, generate, build,
package, package_info; then builds and runs test_package against the package folder, as
`conan create` would. What is NOT exercised: Conan's dependency resolution (the requirements are
printed; the system's packages stand in for them), CMakeDeps, profiles and the package cache.

usage: run_conan_recipe.py RECIPE_DIR WORK_DIR [-o name=value ...] [-s build_type=T] [--generator G] [--cxx CXX]

-s build_type: the CMAKE_BUILD_TYPE that CMake.configure() passes, like the setting of `conan create -s`
(default Release, Conan's default profile). The ctest passes Debug: test_package.cpp builds in 22 s at
-O0 against 50 s at -O3, and what the test checks is the packaging, not the optimiser.
"""
import argparse
import fnmatch
import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap

STUB = {
    "conan/__init__.py": '''
class _Options:
    def __init__(self, values):
        object.__setattr__(self, "_v", dict(values))
    def __getattr__(self, k):
        return self._v[k]
    def get_safe(self, k, default=None):
        return self._v.get(k, default)
class _Info:
    class _Settings:
        def clear(self):
            pass
    def __init__(self):
        self.settings = _Info._Settings()
class _CppInfo:
    def __init__(self):
        self.props, self.builddirs, self.bindirs, self.libdirs, self.includedirs = {}, [], ["bin"], ["lib"], ["include"]
    def set_property(self, k, v):
        self.props[k] = v
class ConanFile:
    def __init__(self, options, folders):
        defaults = dict(getattr(self, "default_options", {}))
        defaults.update(options)
        self.options = _Options(defaults)
        self.info = _Info()
        self.cpp_info = _CppInfo()
        self.requires_list = []
        for k, v in folders.items():
            setattr(self, k, v)
    def requires(self, ref):
        self.requires_list.append(ref)
    def run(self, cmd, env=None):
        import subprocess
        subprocess.run(cmd, shell=True, check=True)
''',
    "conan/tools/__init__.py": "",
    "conan/tools/build/__init__.py": "def can_run(conanfile):\n    return True\n",
    "conan/tools/files/__init__.py": '''
import fnmatch, os, shutil
def copy(conanfile, pattern, src, dst):
    """Conan's copy: pattern matched against paths relative to src ('*' crosses folders)."""
    out = []
    for root, _, files in os.walk(src):
        for f in files:
            rel = os.path.relpath(os.path.join(root, f), src)
            if rel.startswith(("build" + os.sep, ".git" + os.sep)):
                continue
            if fnmatch.fnmatch(rel, pattern):
                os.makedirs(os.path.dirname(os.path.join(dst, rel)), exist_ok=True)
                shutil.copy2(os.path.join(src, rel), os.path.join(dst, rel))
                out.append(rel)
    return out
''',
    "conan/tools/cmake/__init__.py": '''
import json, os, subprocess
GENERATOR = os.environ.get("STUB_CMAKE_GENERATOR", "Ninja")
CXX = os.environ.get("STUB_CXX", "")
def cmake_layout(conanfile):
    conanfile.build_folder = os.path.join(conanfile.work_folder, "build")
    conanfile.generators_folder = os.path.join(conanfile.build_folder, "generators")
class CMakeToolchain:
    def __init__(self, conanfile):
        self.c, self.cache_variables = conanfile, {}
    def generate(self):
        os.makedirs(self.c.generators_folder, exist_ok=True)
        with open(os.path.join(self.c.generators_folder, "cache_variables.json"), "w") as f:
            json.dump(self.cache_variables, f)
class CMakeDeps:
    def __init__(self, conanfile):
        self.c = conanfile
    def generate(self):
        pass  # the system's packages stand in for the requirements
def _run(cmd):
    print("[conan stub] " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
class CMake:
    def __init__(self, conanfile):
        self.c = conanfile
    def configure(self):
        with open(os.path.join(self.c.generators_folder, "cache_variables.json")) as f:
            cache = json.load(f)
        cmd = ["cmake", "-S", self.c.source_folder, "-B", self.c.build_folder, "-G", GENERATOR,
               "-DCMAKE_BUILD_TYPE=" + os.environ.get("STUB_BUILD_TYPE", "Release"),
               "-DCMAKE_INSTALL_PREFIX=" + self.c.package_folder]
        if CXX:
            cmd.append("-DCMAKE_CXX_COMPILER=" + CXX)
        cmd += ["-D%s=%s" % (k, v) for k, v in sorted(cache.items())]
        _run(cmd)
    def build(self):
        _run(["cmake", "--build", self.c.build_folder])
    def install(self):
        _run(["cmake", "--install", self.c.build_folder, "--prefix", self.c.package_folder])
''',
}


def load_recipe(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    from conan import ConanFile  # the stub
    classes = [c for c in vars(mod).values() if isinstance(c, type) and issubclass(c, ConanFile) and c is not ConanFile]
    if len(classes) != 1:
        sys.exit("%s: expected one ConanFile class, found %d" % (path, len(classes)))
    return classes[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("recipe_dir")
    ap.add_argument("work")
    ap.add_argument("-o", action="append", default=[], help="option=value")
    ap.add_argument("-s", action="append", default=[], help="setting=value (build_type only)")
    ap.add_argument("--generator", default="Ninja")
    ap.add_argument("--cxx", default="")
    a = ap.parse_args()
    work = os.path.abspath(a.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "stub"))
    for rel, text in STUB.items():
        path = os.path.join(work, "stub", rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(textwrap.dedent(text))
    sys.path.insert(0, os.path.join(work, "stub"))
    os.environ["STUB_CMAKE_GENERATOR"] = a.generator
    os.environ["STUB_CXX"] = a.cxx
    os.environ["STUB_BUILD_TYPE"] = "Release"
    for kv in a.s:
        k, v = kv.split("=", 1)
        if k != "build_type":
            sys.exit("unknown setting %s (the stub knows build_type)" % k)
        os.environ["STUB_BUILD_TYPE"] = v
    options = {}
    for kv in a.o:
        k, v = kv.split("=", 1)
        options[k] = v.lower() in ("true", "1", "on", "yes")

    recipe_dir = os.path.abspath(a.recipe_dir)
    cls = load_recipe(os.path.join(recipe_dir, "conanfile.py"), "memplan_recipe")
    for k in options:
        if k not in cls.options:
            sys.exit("unknown option %s (the recipe has %s)" % (k, ", ".join(cls.options)))
    folders = {"recipe_folder": recipe_dir, "export_sources_folder": os.path.join(work, "src"),
               "source_folder": os.path.join(work, "src"), "work_folder": work,
               "package_folder": os.path.join(work, "package")}
    r = cls(options, folders)
    r.export_sources()
    if not os.path.exists(os.path.join(work, "src", "include", "memplan", "olla.hpp")):
        sys.exit("export_sources did not export include/memplan/olla.hpp")
    r.layout()
    r.requirements()
    print("[conan stub] %s/%s requires: %s" % (r.name, r.version, ", ".join(r.requires_list) or "nothing"), flush=True)
    r.package_id()
    r.generate()
    r.build()
    r.package()
    r.package_info()
    pkg = r.package_folder
    assert r.cpp_info.props.get("cmake_find_mode") == "none", "consumers are meant to use memplan's own config"
    for d in r.cpp_info.builddirs:
        if not os.path.exists(os.path.join(pkg, d, "memplanConfig.cmake")):
            sys.exit("package_info builddir %s has no memplanConfig.cmake" % d)

    # test_package, as `conan create` runs it: its own recipe's build() and test().
    tcls = load_recipe(os.path.join(recipe_dir, "test_package", "conanfile.py"), "memplan_test_package")
    tfolders = {"recipe_folder": os.path.join(recipe_dir, "test_package"),
                "source_folder": os.path.join(recipe_dir, "test_package"), "work_folder": os.path.join(work, "test_package"),
                "package_folder": os.path.join(work, "test_package", "unused")}
    t = tcls({}, tfolders)
    t.tested_reference_str = "%s/%s" % (r.name, r.version)
    t.requirements()
    t.layout()
    from conan.tools.cmake import CMakeToolchain
    tc = CMakeToolchain(t)
    # What CMakeDeps + builddirs give the consumer: memplan's config folder on the prefix path.
    tc.cache_variables["CMAKE_PREFIX_PATH"] = ";".join(os.path.join(pkg, d) for d in r.cpp_info.builddirs)
    tc.generate()
    t.build()
    t.cpp = type("cpp", (), {"build": type("b", (), {"bindir": t.build_folder})})()
    t.test()
    print("[conan stub] recipe and test_package ran", flush=True)


if __name__ == "__main__":
    main()
