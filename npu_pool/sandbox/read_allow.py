"""What a sandboxed candidate may read: derived from the running interpreter, not guessed.

The child (and the compiler it starts) needs the interpreter and the packages it has
imported, the system's libraries, headers and compiler, a few device, proc and sys files,
its own folder and the harness caches. Everything else stays unreadable under Landlock: the
user's home beyond the interpreter and the caches, the project's checkout (only the
package folders actually imported from it are readable), run folders, memory banks, Ray's
session folder and token, /root, /etc beyond the loader's and the name service's files.
See docs/harness.md, "What a candidate may read".
"""

from __future__ import annotations

import glob
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import ModuleType

# The system's programs, libraries and headers (the compiler, its headers and crt files live
# under /usr; /lib* are links to it on merged-/usr systems, real folders elsewhere).
SYSTEM_FOLDERS = ("/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin")
# The dynamic loader's configuration, time zone and name-service files (getpwuid: no secret
# lives in /etc/passwd since shadow passwords), and the toolkits' install records.
ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/ld.so.preload", "/etc/localtime",
             "/etc/nsswitch.conf", "/etc/passwd", "/etc/group", "/etc/ascend_install.info",
             "/etc/ascend_filelist.info")
# Kernel-provided views: CPU, memory and device facts the runtimes read. Not all of /proc:
# another process's files there (environ, cmdline) are readable by the same user unless a
# user namespace stands between; the process's own folder is added where it confines itself.
KERNEL_VIEWS = ("/sys", "/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/proc/loadavg", "/proc/filesystems",
                "/proc/version", "/proc/sys", "/proc/devices", "/proc/driver")
DEVICE_FILES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
# Accelerator device nodes (opened read-write by the CUDA and CANN runtimes).
DEVICE_PATTERNS = ("/dev/nvidia*", "/dev/nvidia-caps", "/dev/davinci*", "/dev/devmm_svm", "/dev/hisi_hdc",
                   "/dev/dri")
# Toolkits named by the environment the backends pass into the sandbox.
TOOLKIT_ENV = ("CUDA_HOME", "CUDA_PATH", "ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_OPP_PATH",
               "ASCEND_AICPU_PATH")


def interpreter_folders() -> list[Path]:
    """The venv and the Python installation it was made from (stdlib, headers, libpython)."""
    found = [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix,
             os.path.dirname(os.path.realpath(sys.executable))]
    return _real(found)


def imported_package_roots(modules: Mapping[str, ModuleType | None] | None = None) -> list[Path]:
    """The folder of every top-level package imported (a single-file module: the file), by
    real path: a package installed editable from a checkout allows its own folder only."""
    modules = sys.modules if modules is None else modules
    roots: list[str] = []
    for name, module in list(modules.items()):
        if "." in name or module is None:
            continue
        paths = list(getattr(module, "__path__", None) or [])
        file = getattr(module, "__file__", None)
        if not paths and isinstance(file, str):
            paths = [file]
        roots += [p for p in paths if isinstance(p, str) and os.path.isabs(p)]
    return _real(roots)


def accelerator_nodes() -> list[Path]:
    """The accelerators' device nodes here (read and written by their runtimes)."""
    return _real([p for pattern in DEVICE_PATTERNS for p in glob.glob(pattern)])


def device_files() -> list[Path]:
    return [*_real(DEVICE_FILES), *accelerator_nodes()]


def toolkit_folders(env: Mapping[str, str] | None = None) -> list[Path]:
    env = os.environ if env is None else env
    return _real([env[name] for name in TOOLKIT_ENV if env.get(name)])


# Entries of the process's own /proc folder left unreadable: `net` lists the network
# namespace's sockets with their paths (how a candidate once found the warm server's socket).
OWN_PROC_HIDDEN = ("net",)


def own_proc_entries() -> list[Path]:
    """This process's own /proc folder, entry by entry, less OWN_PROC_HIDDEN (Landlock only
    allows: a hidden entry is one never listed). /proc/self as it resolves here: the processes
    it starts get no /proc/self of their own."""
    own = Path(os.path.realpath("/proc/self"))
    try:  # never a link (cwd, exe, root): a rule follows it, and `root` would allow all of /
        return sorted(own / name for name in os.listdir(own)
                      if name not in OWN_PROC_HIDDEN and not os.path.islink(own / name))
    except OSError:
        return []


def read_allow_list(extra: Iterable[str | Path] = (), modules: Mapping[str, ModuleType | None] | None = None) -> list[Path]:
    """Every path the candidate may read (`extra`: its own folder, the caches), minimal:
    a path beneath another listed one is left out. Includes this process's own /proc folder
    but its `net` and its links (own_proc_entries)."""
    paths = [*_real(SYSTEM_FOLDERS), *_real(ETC_FILES), *_real(KERNEL_VIEWS), *own_proc_entries(),
             *device_files(), *interpreter_folders(), *toolkit_folders(), *imported_package_roots(modules),
             *_real(extra)]
    return _outermost(paths)


def _real(paths: Iterable[str | Path]) -> list[Path]:
    return [Path(os.path.realpath(p)) for p in paths if p and os.path.exists(p)]


def _outermost(paths: list[Path]) -> list[Path]:
    # Each path's ancestors looked up in a set: every sandboxed child computes this list, and
    # comparing each of ~200 paths with every kept one through pathlib took 0.1-0.5 s a child.
    kept: set[Path] = set()
    for path in sorted(set(paths), key=lambda p: len(p.parts)):
        if not any(parent in kept for parent in path.parents):
            kept.add(path)
    return sorted(kept)
