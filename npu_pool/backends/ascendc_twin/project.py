"""A CANN kernel launch project, built and run on the Ascend C twin (the direct-launch form of a
whole project): what `evokernel export --layout cann` writes, and CANN's kernel launch samples.

The project's CMakeLists names the kernel sources (`ascendc_library(<target> STATIC|SHARED
files...)`), the host program (`add_executable(<name> file)`), the SoC (`set(SOC_VERSION "..."`)
and the compile options (`ascendc_compile_options(... --cce-auto-sync=off)`). The twin compiles
the kernel sources as the backend compiles a kernel (instrumented: raw pointer accesses are
checked) and the host program against its ACL runtime (include/twin_kernel_launch/acl/acl.h),
with each ACLRT_LAUNCH_KERNEL (or `<<<>>>`) launch rewritten as direct.py rewrites them, links
them and runs the program in the project's folder, where it reads and writes its files. A fault
in a launch ends the program with the fault's line on stderr and exit status 3.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import structlog
from pydantic import BaseModel, Field

from npu_pool.backends.ascendc_twin.build import (
    BUILD_TIMEOUT_S,
    RAW_GM_FLAGS,
    TWIN_CFLAGS,
    TWIN_INCLUDE,
    twin_headers_digest,
)
from npu_pool.backends.ascendc_twin.direct import rewrite_launches
from npu_pool.backends.base import KernelBuildError
from npu_pool.build_cache import compiler_identity
from npu_pool.paths import build_cache_dir

log = structlog.get_logger("npu_pool.twin_project")

KERNEL_LAUNCH_INCLUDE = TWIN_INCLUDE / "twin_kernel_launch"  # acl/acl.h: the host program's runtime
FAULT_EXIT = 3  # the program's exit status after a twin fault in a launch

_LIBRARY = re.compile(r"\bascendc_library\s*\(\s*\S+\s+(?:STATIC|SHARED)\s+([^)]*)\)", re.IGNORECASE)
_EXECUTABLE = re.compile(r"\badd_executable\s*\(\s*(\S+)\s+([^)]*)\)", re.IGNORECASE)
_SOC = re.compile(r'\bset\s*\(\s*SOC_VERSION\s+"?([\w.]+)"?', re.IGNORECASE)
_OPTIONS = re.compile(r"\bascendc_compile_options\s*\(([^)]*)\)", re.IGNORECASE)
_AUTO_SYNC_OFF = re.compile(r"--cce-auto-sync=off\b")
_LOCAL_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.MULTILINE)
_ACLRT_LAUNCH = re.compile(r"\bACLRT_LAUNCH_KERNEL\s*\(\s*(\w+)\s*\)")
_CHEVRON_LAUNCH = re.compile(r"\b(\w+)\s*<<<")
# the host unit: the twin's ACL runtime, the launched kernels, the program as `evk_user_main`
_HOST_UNIT = """#include "acl/acl.h"  // the twin's ACL runtime (and the twin's runtime, once per program)
#include <cstdio>
#include <exception>
{declarations}
#define main evk_user_main
#include "{host}"
#undef main

int main(int argc, char** argv) {{
    try {{
        return evk_user_main(argc, argv);
    }} catch (const evk_twin::DirectLaunchFailed&) {{
        std::fprintf(stderr, "%s\\n", evk_twin_fault());
    }} catch (const std::exception& e) {{
        std::fprintf(stderr, "the host program threw: %s\\n", e.what());
    }}
    return {fault_exit};
}}
"""


class ProjectPlan(BaseModel):
    """What the project's CMakeLists says the twin should build."""

    kernel_sources: list[str] = Field(description="ascendc_library's files, relative to the project")
    host_source: str = Field(description="add_executable's one file")
    program: str
    soc: str = "Ascend910B1"
    auto_sync: bool = Field(True, description="false where ascendc_compile_options has --cce-auto-sync=off")


class ProjectRun(BaseModel):
    """One run of the project's program on the twin."""

    returncode: int
    stdout: str
    stderr: str
    fault: str = Field("", description="the twin fault line that ended the program, if one did")
    plan: ProjectPlan

    @property
    def passed(self) -> bool:
        return self.returncode == 0


def read_plan(project: Path) -> ProjectPlan:
    """The kernel sources, host program, SoC and --cce-auto-sync of `project`'s CMakeLists.txt."""
    text = re.sub(r"#[^\n]*", "", (project / "CMakeLists.txt").read_text())  # CMake comments out

    def files(words: str) -> list[str]:
        return [w.replace("${CMAKE_CURRENT_SOURCE_DIR}/", "") for w in words.split() if w.endswith((".cpp", ".cc", ".asc"))]

    library, executable = _LIBRARY.search(text), _EXECUTABLE.search(text)
    if library is None or executable is None or not files(library.group(1)):
        raise KernelBuildError(f"{project / 'CMakeLists.txt'}: no ascendc_library(... files) and add_executable(...)")
    hosts = files(executable.group(2))
    if len(hosts) != 1:
        raise KernelBuildError(f"{project / 'CMakeLists.txt'}: the twin runs a host program of one source, not {hosts}")
    soc = _SOC.search(text)
    options = " ".join(m.group(1) for m in _OPTIONS.finditer(text))
    return ProjectPlan(kernel_sources=files(library.group(1)), host_source=hosts[0], program=executable.group(1),
                       soc=soc.group(1) if soc else "Ascend910B1", auto_sync=_AUTO_SYNC_OFF.search(options) is None)


def _with_local_includes(project: Path, name: str, seen: set[str]) -> str:
    """A source's text followed by the project files it includes, for finding kernel entries."""
    if name in seen or not (project / name).is_file():
        return ""
    seen.add(name)
    text = (project / name).read_text()
    return text + "".join(_with_local_includes(project, inc, seen) for inc in _LOCAL_INCLUDE.findall(text))


def kernel_declarations(project: Path, plan: ProjectPlan, host: str) -> str:
    """The declaration of each kernel the host program launches, as CANN's generated
    aclrtlaunch_<kernel>.h gives the host: its parameters as the kernel source defines them."""
    kernels = "".join(_with_local_includes(project, name, set()) for name in plan.kernel_sources)
    lines = []
    for name in dict.fromkeys(_ACLRT_LAUNCH.findall(host) + _CHEVRON_LAUNCH.findall(host)):
        entry = re.search(rf'(extern\s+"C"\s+)?__global__\s+__aicore__\s+void\s+{name}\s*\(([^)]*)\)', kernels)
        if entry is None:
            raise KernelBuildError(f"the host program launches {name}, which no kernel source of the project defines")
        lines.append(f"{entry.group(1) or ''}__global__ __aicore__ void {name}({' '.join(entry.group(2).split())});")
    return "\n".join(lines)


def _compile(compiler: str, args: list[str], source: Path, key_parts: list[bytes], objects: Path, project: Path) -> Path:
    """One object file, cached in `objects` by everything that decides it (the project's
    contents, not where it lies)."""
    flags = [a.replace(str(project), "<project>").encode() for a in args]
    digest = hashlib.sha256(b"\0".join([*key_parts, *flags, compiler_identity(compiler).encode(),
                                        twin_headers_digest().encode()]))
    target = objects / f"{source.stem}-{digest.hexdigest()[:24]}.o"
    if target.exists():
        return target
    objects.mkdir(parents=True, exist_ok=True)
    tmp = objects / f".{target.name}-{os.getpid()}"
    done = subprocess.run([compiler, *TWIN_CFLAGS, *args, "-c", str(source), "-o", str(tmp)], capture_output=True,
                          text=True, timeout=BUILD_TIMEOUT_S, env={**os.environ, "LC_ALL": "C"})
    if done.returncode != 0:
        raise KernelBuildError(f"{source.name} did not compile against the twin", done.stdout + done.stderr)
    os.replace(tmp, target)
    return target


def build_project(project: Path, compiler: str | None = None, cache: Path | None = None) -> tuple[Path, ProjectPlan]:
    """The project's program built against the twin: (the executable, the plan read from
    CMakeLists.txt). Objects are cached by their sources, the twin's headers, the flags and the
    compiler, so projects that share a kernel or a host program share its object."""
    compiler = compiler or os.environ.get("CXX") or shutil.which("g++") or "g++"
    cache = cache or build_cache_dir() / "twin-projects"
    plan = read_plan(project)
    host_source = (project / plan.host_source).read_text()
    host_name = Path(plan.host_source).name
    unit = _HOST_UNIT.format(declarations=kernel_declarations(project, plan, host_source), host=host_name,
                             fault_exit=FAULT_EXIT)
    files = {p.relative_to(project).as_posix(): p.read_bytes() for p in sorted(project.rglob("*"))
             if p.is_file() and p.suffix in (".cpp", ".cc", ".h", ".hpp", ".asc")}
    headers = [name.encode() + b"\0" + text for name, text in files.items() if Path(name).suffix in (".h", ".hpp")]
    kernel_files = [name.encode() + b"\0" + text for name, text in files.items() if name != plan.host_source]
    includes = [f"-I{TWIN_INCLUDE}", f"-I{project}"]
    # the kernel sources are instrumented, as the backend's kernel unit (raw pointer accesses checked)
    jobs = [([*RAW_GM_FLAGS, *includes], project / name, kernel_files) for name in plan.kernel_sources]
    work = cache / "units" / hashlib.sha256(unit.encode() + rewrite_launches(host_source).encode()).hexdigest()[:24]
    work.mkdir(parents=True, exist_ok=True)
    (work / host_name).write_text(rewrite_launches(host_source))  # the launches rewritten, line for line
    (work / "host_unit.cpp").write_text(unit)
    defines = [f'-DEVK_TWIN_SOC="{plan.soc}"', f"-DEVK_TWIN_CCE_AUTO_SYNC={int(plan.auto_sync)}"]
    jobs.append(([f"-I{work}", f"-I{KERNEL_LAUNCH_INCLUDE}", *includes, *defines], work / "host_unit.cpp",
                 [unit.encode(), (work / host_name).read_bytes(), *headers]))
    with ThreadPoolExecutor(max(1, min(len(jobs), os.cpu_count() or 1))) as pool:
        objects = list(pool.map(lambda job: _compile(compiler, *job, cache / "objects", project), jobs))
    key = hashlib.sha256("\0".join(str(o) for o in objects).encode()).hexdigest()[:24]
    program = cache / "programs" / key / plan.program
    if program.exists():
        return program, plan
    program.parent.mkdir(parents=True, exist_ok=True)
    tmp = program.parent / f".{plan.program}-{os.getpid()}"
    link = subprocess.run([compiler, "-pthread", *(str(o) for o in objects), "-o", str(tmp)], capture_output=True,
                          text=True, timeout=BUILD_TIMEOUT_S)
    if link.returncode != 0:
        raise KernelBuildError(f"{project.name}: the program did not link against the twin", link.stderr)
    os.replace(tmp, program)
    log.info("twin_project_built", project=str(project), program=str(program))
    return program, plan


def run_project(project: Path, timeout_s: float = 300.0, compiler: str | None = None,
                cache: Path | None = None) -> ProjectRun:
    """Build `project` on the twin and run its program in the project's folder."""
    program, plan = build_project(project, compiler, cache)
    done = subprocess.run([str(program)], cwd=project, capture_output=True, text=True, timeout=timeout_s)
    fault = next((line for line in done.stderr.splitlines() if line.startswith("twin fault [")), "")
    return ProjectRun(returncode=done.returncode, stdout=done.stdout, stderr=done.stderr, fault=fault, plan=plan)


def main(argv: list[str] | None = None) -> int:
    """`python -m npu_pool.backends.ascendc_twin.project DIR`: build and run a kernel launch
    project on the twin; its program's output, and its exit status."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("project", type=Path, help="the project's folder (its CMakeLists.txt)")
    args = parser.parse_args(argv)
    try:
        run = run_project(args.project.resolve())
    except KernelBuildError as exc:
        print(f"{exc}\n{exc.log[-4000:]}", file=sys.stderr)
        return 2
    sys.stdout.write(run.stdout)
    sys.stderr.write(run.stderr)
    return run.returncode


if __name__ == "__main__":
    raise SystemExit(main())
