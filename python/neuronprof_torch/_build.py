"""Builds and loads the C++ extension with torch's own build helper
(``torch.utils.cpp_extension.load``: ninja, incremental, cached in a build folder).

Where things are found (python/README.md, "Building"):

- ``libneuronprof_capi.so`` (the Rust C ABI, crate ``neuronprof-capi``): the file
  ``NEURONPROF_CAPI_LIB`` names; else ``<target>/release`` or ``<target>/debug`` of the
  repository's Cargo target folder (``CARGO_TARGET_DIR`` or ``<repo>/target``), release
  first; else it is built with ``cargo build --release -p neuronprof-capi``.
- The build folder: ``NEURONPROF_TORCH_BUILD_DIR``, else ``<target>/torch-ext``.
"""

import os
import subprocess
import sys
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_DIR = PACKAGE_DIR.parent.parent
CAPI_NAME = "libneuronprof_capi.so"


def _target_dir() -> Path:
    return Path(os.environ.get("CARGO_TARGET_DIR") or REPO_DIR / "target")


def capi_library() -> Path:
    """The Rust C ABI library to link (building it when it cannot be found)."""
    named = os.environ.get("NEURONPROF_CAPI_LIB")
    if named:
        path = Path(named).resolve()
        if not path.is_file():
            raise FileNotFoundError(f"NEURONPROF_CAPI_LIB={named}: no such file")
        return path
    for profile in ("release", "debug"):
        path = _target_dir() / profile / CAPI_NAME
        if path.is_file():
            return path
    subprocess.run(
        ["cargo", "build", "--release", "-p", "neuronprof-capi"], cwd=REPO_DIR, check=True
    )
    return _target_dir() / "release" / CAPI_NAME


def load(verbose: bool = False):
    """Builds (when sources changed) and imports the extension module."""
    import torch
    from torch.utils import cpp_extension

    # A venv's ninja sits next to its python, which need not be on PATH.
    bin_dir = str(Path(sys.executable).parent)
    if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
    capi = capi_library()
    build_dir = Path(
        os.environ.get("NEURONPROF_TORCH_BUILD_DIR") or _target_dir() / "torch-ext"
    )
    build_dir.mkdir(parents=True, exist_ok=True)
    csrc = PACKAGE_DIR / "csrc"
    torch_include = Path(torch.__file__).resolve().parent / "include"
    return cpp_extension.load(
        name="neuronprof_torch_C",
        sources=[
            str(csrc / f)
            for f in (
                "device.cpp", "ops.cpp", "aliased.cpp", "attention.cpp", "conv.cpp", "errors.cpp",
                "kineto.cpp", "distributed.cpp", "compile.cpp", "memory.cpp", "module.cpp",
                "sparse.cpp",
            )
        ],
        # shared/reference/torch-privateuse1.md: the kineto headers need C++20, the
        # PrivateUse1 profiler registry needs USE_KINETO, and cpp_extension does not add
        # the kineto include folder.
        extra_cflags=["-std=c++20", "-DUSE_KINETO", "-O2"],
        extra_include_paths=[
            str(torch_include / "kineto"),
            str(csrc),
            str(REPO_DIR / "python" / "capi" / "include"),
            str(REPO_DIR / "runtime-hooks" / "include"),
        ],
        extra_ldflags=[
            f"-L{capi.parent}",
            "-lneuronprof_capi",
            f"-Wl,-rpath,{capi.parent}",
        ],
        build_directory=str(build_dir),
        verbose=verbose,
    )
