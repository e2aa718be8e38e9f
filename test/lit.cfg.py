# -*- Python -*-
# lit configuration for bitpipe's FileCheck tests.

import os
import sys

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "BITPIPE"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test", ".json", ".td"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs"]

config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.bitpipe_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%examples", os.path.join(config.bitpipe_src_root, "examples")))
# The Python that runs lit runs the tests' small input generators.
config.substitutions.append(("%python", sys.executable))
config.substitutions.append(("%inputs", os.path.join(config.bitpipe_src_root, "test", "Inputs")))

# The include path of bitpipe-tblgen's tests: bitpipe's and MLIR's .td files.
config.substitutions.append(("%tblgen_includes", " ".join(
    "-I " + d for d in [os.path.join(config.bitpipe_src_root, "include")] +
    config.mlir_include_dirs.split(";"))))

# Captured SSA names must not leak between CHECK-LABEL blocks.
config.environment["FILECHECK_OPTS"] = "--enable-var-scope"

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

# FileCheck, not, count and split-file come from the LLVM installation.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.bitpipe_tools_dir, config.llvm_tools_dir]
tools = [
    "bitpipe-opt", "bitpipe-import", "bitpipe-compile", "bitpipe-compare",
    "bitpipe-plan", "bitpipe-calibrate", "bitpipe-tblgen", "bitpipe-tokenize",
    "bench-kernel-rates", "mlir-translate", "llc",
]
llvm_config.add_tool_substitutions(tools, tool_dirs)
