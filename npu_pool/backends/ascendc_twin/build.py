"""What the npu-twin backend compiles and how it reads g++: the twin's headers and flags, the
generated launcher translation unit (CANN's aclrtlaunch ABI through evk_twin::Launch), the entry
check, a probe library for the SoC parameters, and one-line summaries of a kernel that uses an
API outside the twin's subset."""

from __future__ import annotations

import functools
import hashlib
import os
import re
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npu_pool.backends.base import KernelBuildError
from npu_pool.build_cache import compiler_identity

if TYPE_CHECKING:
    from npu_pool.tasks.signature import KernelSignature

TWIN_INCLUDE = Path(__file__).resolve().parent / "include"
TWIN_CFLAGS = ("-std=c++17", "-O2", "-fPIC", "-pthread")
# The kernel's own unit only (never the launcher): every load and store becomes a call the twin
# answers (include/twin_raw_gm.h), so raw pointer accesses to global memory meet the GlobalTensor
# rules; no sanitizer runtime is linked (callbacks, no shadow memory, no stack or globals
# instrumentation); line tables (-g1) name a faulting access's line.
RAW_GM_FLAGS = ("-fsanitize=kernel-address", "--param=asan-instrumentation-with-call-threshold=0",
                "--param=asan-stack=0", "--param=asan-globals=0", "-fno-sanitize-address-use-after-scope", "-g1")
DEFAULT_SOC = "Ascend910B1"
BUILD_TIMEOUT_S = 300

# Exported by every twin library: the SoC parameters the twin models after evk_twin_configure.
SOC_JSON_FUNCTION = r"""
extern "C" const char* evk_twin_soc_json(void) {
    static std::string text;
    const evk_twin::SocParams& s = evk_twin::state().soc;
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "{\"name\": \"%s\", \"ai_cores\": %u, \"ub_bytes\": %llu, \"clock_ghz\": %g, \"gm_gbps\": %g, "
                  "\"cube_macs_per_cycle_16\": %g, \"cube_macs_per_cycle_32\": %g, \"launch_us\": %g}",
                  s.name, s.ai_cores, (unsigned long long)s.ub_bytes, s.clock_ghz, s.gm_gbps,
                  s.cube_macs_per_cycle_16, s.cube_macs_per_cycle_32, s.launch_us);
    text = buf;
    return text.c_str();
}
"""


@functools.cache
def twin_headers_digest() -> str:
    """Hash of the twin's headers: part of every build key (a changed twin rebuilds)."""
    digest = hashlib.sha256()
    for path in sorted(TWIN_INCLUDE.rglob("*.h")):
        digest.update(str(path.relative_to(TWIN_INCLUDE)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def entry_declaration(signature: KernelSignature) -> str:
    """The kernel entry the task expects, as a C declaration."""
    params = ", ".join(f"GM_ADDR {a.name}" for a in signature.args if a.is_tensor)
    return f'extern "C" __global__ __aicore__ void {signature.function}({params}, GM_ADDR workspace, GM_ADDR tiling);\n'


_C_TYPES = {"float32": "float", "float16": "half", "bfloat16": "bfloat16_t", "int32": "int32_t", "int64": "int64_t",
            "int16": "int16_t", "int8": "int8_t", "uint8": "uint8_t", "bool": "bool"}


def op_dtype_macros(source: str, signature: KernelSignature) -> str:
    """DTYPE_<NAME> for each tensor parameter of the kernel's entry, as the op project's build
    defines them from the operator's inputs and outputs (a published op kernel writes
    `(__gm__ DTYPE_X*)x`): the entry's own parameter names, the task's element types."""
    entry = re.search(rf"\bvoid\s+{re.escape(signature.function)}\s*\(([^)]*)\)", source)
    if entry is None:
        return ""
    names = [re.sub(r"[^\w\s]", " ", p).split()[-1] for p in entry.group(1).split(",") if p.strip()]
    tensors = [a for a in signature.args if a.is_tensor]
    lines = []
    for name, arg in zip(names, tensors, strict=False):  # the entry also names workspace and tiling
        macro = f"DTYPE_{name.upper()}"
        lines.append(f"#ifndef {macro}\n#define {macro} {_C_TYPES.get(arg.dtype or 'float32', 'float')}\n#endif\n")
    return "".join(lines)


HOST_TILING_CAPACITY = 65536  # bytes of the kernel's tiling struct a host half may set (HostTiling)
# A candidate's host half: `void TilingFunc(const KernelTiling& shapes, HostTiling& host)`.
HOST_TILING = re.compile(r"\bvoid\s+TilingFunc\s*\(\s*const\s+KernelTiling\s*&\s*\w*\s*,\s*HostTiling\s*&")
# Appended to a kernel unit with a host half: runs it for the backend's wrapper (ctypes). One
# frame for both forms; %(setup)s prepares the host half's argument, %(call)s runs it,
# %(check)s judges its result, the data/size/blocks/workspace expressions read it.
_GLUE = r"""
#line 1 "host_glue.cpp"
#include <memory>
extern "C" int evk_host_tiling(const void* shapes, uint32_t core_num, void* out, uint32_t capacity, uint32_t* size,
                               uint32_t* block_dim, uint64_t* workspace, char* error, uint32_t error_capacity) {
    KernelTiling t;
    std::memcpy(&t, shapes, sizeof t);
%(setup)s
    try {
        %(call)s
    } catch (const evk_twin::Fault& f) {
        std::snprintf(error, error_capacity, "%%s (in the host half)", f.line.c_str());
        return 1;
    } catch (const std::exception& e) {
        std::snprintf(error, error_capacity, "the host half threw: %%s", e.what());
        return 2;
    }
%(check)s
    const size_t bytes = %(size)s;
    if (bytes > capacity) {
        std::snprintf(error, error_capacity, "the host's tiling data is %%zu bytes, more than %%u", bytes, capacity);
        return 1;
    }
    std::memcpy(out, %(data)s, bytes);
    *size = static_cast<uint32_t>(bytes);
    *block_dim = %(blocks)s;
    *workspace = %(workspace)s;
    return 0;
}
"""
HOST_GLUE = _GLUE % {
    "setup": "    std::unique_ptr<HostTiling> host(new HostTiling());\n    host->coreNum = host->blockDim = core_num;",
    "call": "TilingFunc(t, *host);", "check": "", "size": "host->tilingSize", "data": "host->tilingData",
    "blocks": "host->blockDim", "workspace": "host->userWorkspaceSize"}

# ... or the op project's: `ge::graphStatus TilingFunc(gert::TilingContext* context)` (also in namespace optiling).
OP_TILING = re.compile(r"\bTilingFunc\s*\(\s*gert::TilingContext\s*\*")
MIX_KERNEL = re.compile(r"\bREGIST_MATMUL_OBJ\b")  # a vector kernel that drives the cube: CANN builds it mixed
_GE_TYPES = {"float16": "ge::DT_FLOAT16", "bfloat16": "ge::DT_BF16", "int32": "ge::DT_INT32", "int8": "ge::DT_INT8"}
_OP_CHECK = """    if (status != ge::GRAPH_SUCCESS) {
        std::snprintf(error, error_capacity, "the tiling function returned %u, not ge::GRAPH_SUCCESS", unsigned(status));
        return 1;
    }
    evk_twin::state().tiling_key = context->GetTilingKey();"""


OP_ATTR = re.compile(r'\bAttr\s*\(\s*"(\w+)"\s*\)')


def attribute_order(scalars: list[str], source: str) -> list[str]:
    """The task's scalars in the order GetAttrs() indexes them: the order of the operator's
    declared attributes (`this->Attr("epsilon")`, as CANN numbers them) where each declared name
    matches one scalar (equal, or one name starting the other: eps / epsilon); otherwise, or with
    no declaration, the KernelTiling order."""
    declared = OP_ATTR.findall(source)
    if not declared:
        return scalars
    ordered = []
    for attr in declared:
        match = [name for name in scalars if name == attr] or \
                [name for name in scalars if name.startswith(attr) or attr.startswith(name)]
        if len(match) != 1 or match[0] in ordered:
            return scalars
        ordered.append(match[0])
    return ordered + [name for name in scalars if name not in ordered]


def has_host_half(source: str) -> bool:
    """Whether a candidate carries a host tiling function (TilingFunc) besides its kernel."""
    return HOST_TILING.search(source) is not None or OP_TILING.search(source) is not None


def host_glue(source: str, signature: KernelSignature) -> str:
    """What the twin appends to the unit of a candidate with a host half: `evk_host_tiling`,
    which runs it (HostTiling form, or gert::TilingContext filled from the task's shapes and
    scalars); "" for the kernel-only form."""
    if HOST_TILING.search(source):
        return HOST_GLUE
    if not OP_TILING.search(source):
        return ""
    from npu_pool.backends.ascendc import tiling_fields

    fields = tiling_fields(signature)
    lines = []
    for arg in signature.args:
        if not arg.is_tensor:
            continue
        dims = ", ".join(f"t.{f.name}" for f, _ in sorted((f for f in fields if f[0].role == "size" and f[0].source == arg.name),
                                                          key=lambda f: f[0].index or 0))
        shape = f"ge::Shape(std::vector<int64_t>{{{dims}}})"
        if arg.role == "output":
            lines.append(f"    context->AddOutput({shape});")
        else:
            lines.append(f"    context->AddInput({shape}, {_GE_TYPES.get(arg.dtype or '', 'ge::DT_FLOAT')});")
    scalars = attribute_order([f.name for f, _ in fields if f.role == "scalar"], source)
    lines += [f"    context->AddAttr(static_cast<double>(t.{name}));" for name in scalars]
    setup = ["    std::unique_ptr<gert::TilingContext> context(new gert::TilingContext());",
             "    context->SetBlockDim(core_num);", *lines, "    ge::graphStatus status = ge::GRAPH_FAILED;"]
    # CANN's block count: a kernel driving the Matmul library is a mixed kernel, whose
    # SetBlockDim counts AI cores; on a separated SoC (Atlas A2: one cube, two vector cores
    # each) its vector code runs as two blocks per AI core (the host tiling's SetDim counts them)
    blocks = "context->GetBlockDim()"
    if MIX_KERNEL.search(source):
        blocks += " * evk_twin::vector_cores_per_ai_core()"
    return _GLUE % {"setup": "\n".join(setup), "call": "using namespace optiling;\n        status = TilingFunc(context.get());",
                    "check": _OP_CHECK, "size": "context->GetRawTilingData()->GetDataSize()",
                    "data": "context->GetRawTilingData()->GetData()", "blocks": blocks,
                    "workspace": "context->WorkspaceBytes()"}


def launcher_translation_unit(signature: KernelSignature) -> str:
    """CANN's host ABI for the kernel, implemented by the twin's runtime."""
    tensors = [a.name for a in signature.args if a.is_tensor] + ["workspace", "tiling"]
    fn = signature.function
    params = ", ".join(f"GM_ADDR {name}" for name in tensors)
    void_params = ", ".join(f"void* {name}" for name in tensors)
    call_args = ", ".join(f"(GM_ADDR){name}" for name in tensors)
    return (
        '// Generated by EvoKernel: the host side of the kernel on the Ascend C twin.\n'
        '#include "twin_runtime.h"\n\n'
        f'extern "C" void {fn}({params});  // kernel.cpp\n\n'
        f'extern "C" uint32_t aclrtlaunch_{fn}(uint32_t blockDim, void* stream, {void_params})\n'
        "{\n    (void)stream;  // the twin runs the blocks itself (twin_blocks.h)\n"
        f"    return evk_twin::Launch(blockDim, [&] {{ {fn}({call_args}); }}, (GM_ADDR)workspace);\n}}\n"
        + SOC_JSON_FUNCTION
    )


@functools.cache
def unsupported_apis() -> frozenset[str]:
    """Ascend C APIs the twin declares only to refuse them (twin_unsupported.h)."""
    text = (TWIN_INCLUDE / "twin_unsupported.h").read_text()
    return frozenset(re.findall(r"^EVK_TWIN_NOT_IN_TWIN\((\w+)\)", text, re.MULTILINE))


# --- what g++ says about a kernel: its first error, in one line at the kernel's line ---------

_Q, _E = "['\u2018]", "['\u2019]"  # g++ quotes names with ASCII or, under a UTF-8 locale, typographic quotes
_ERROR = re.compile(r"^(?P<file>\S+?):(?P<line>\d+):\d+: (?:fatal )?error: (?P<message>.*)$")
_CHAIN_START = re.compile(r": In (?:instantiation|substitution) of ")
_FRAME = re.compile(r"^(?:\S*/)?kernel\.cpp:(\d+):\d+:\s+required (?:from|by)")
_NOT_IN_TWIN = re.compile(r"static assertion failed: (AscendC::\w+ is not in the EvoKernel twin)")
_SUBSET = "; see docs/ascendc_twin.md for the subset"
_ECHO = re.compile(r"variable or field .* declared void")
# (wording of g++'s message, summary): the first error whose wording is known is summarised
_WORDINGS: tuple[tuple[re.Pattern[str], Any], ...] = (
    (re.compile(rf"conflicting declaration of C function {_Q}[^(]*?(\w+)\("),
     lambda m: f"the kernel's entry '{m.group(1)}' does not have the signature given (its parameters must be exactly "
               "the GM_ADDR arguments shown)"),
    (re.compile(rf"{_Q}([\w:]+){_E} is not a member of {_Q}([^'\u2019]+){_E}"),
     lambda m: f"{m.group(2)}::{m.group(1)} is not in the Ascend C twin ('{m.group(1)}' is not a member of "
               f"{m.group(2)})"),
    (re.compile(rf"{_Q}([\w:]+){_E} in namespace {_Q}([\w:]+){_E} does not name a (?:template )?type"),
     lambda m: f"{m.group(2)}::{m.group(1)} is not in the Ascend C twin ('{m.group(1)}' is not a type in "
               f"{m.group(2)})"),
    (re.compile(rf"{_Q}((\w+)::)?([\w:]+){_E} has not been declared"),
     lambda m: (f"{m.group(2)}::{m.group(3)} is not in the Ascend C twin ('{m.group(2)}::{m.group(3)}' has not "
                "been declared)") if m.group(2) else
               f"'{m.group(3)}' is not declared: not in the Ascend C twin's API subset, or not defined in the kernel"),
    (re.compile(rf"{_Q}[^'\u2019]*?(\w+){_E} has no member named {_Q}(\w+){_E}"),
     lambda m: f"'{m.group(2)}' is not in the Ascend C twin ({m.group(1)} has no member named '{m.group(2)}')"),
    (re.compile(rf"{_Q}(\w+){_E} was not declared in this scope"),
     lambda m: f"'{m.group(1)}' is not declared: not in the Ascend C twin's API subset, or not defined in the kernel"),
    (re.compile(rf"there are no arguments to {_Q}(\w+){_E} that depend on a template parameter"),
     lambda m: f"'{m.group(1)}' is not declared: not in the Ascend C twin's API subset, or not defined in the kernel"),
    (re.compile(rf"{_Q}([\w:]+){_E} (?:is not a template|does not name a (?:type|template type)|is not a "
                "namespace-name|is not a class, namespace, or enumeration)"),
     lambda m: f"'{m.group(1)}' is not a type or template the Ascend C twin knows"),
)


def _errors(log: str) -> list[tuple[int, str]]:
    """The log's errors in the kernel's line order, as (line, message): an error inside the twin's headers
    (a static assertion) is placed at the innermost kernel.cpp frame of its instantiation chain."""
    found: list[tuple[int, str]] = []
    frame: int | None = None
    for text in log.splitlines():
        if _CHAIN_START.search(text):
            frame = None
            continue
        m = _FRAME.match(text)
        if m:
            frame = frame or int(m.group(1))  # the first frame after "In instantiation of" is the call
            continue
        m = _ERROR.match(text)
        if not m:
            continue
        if Path(m.group("file")).name == "kernel.cpp":
            found.append((int(m.group("line")), m.group("message").strip()))
        elif frame is not None:
            found.append((frame, m.group("message").strip()))
        frame = None
    # g++ reports errors in templates when it instantiates them, at the end of the unit: the
    # first error in the kernel's own order is the one its author reads first. "variable or field
    # 'kernel' declared void" is the echo of an unknown parameter type on the same line (GMADDR):
    # the cause goes first.
    return sorted(found, key=lambda error: (error[0], _ECHO.search(error[1]) is not None))


def first_error(log: str) -> str | None:
    """The kernel's first compile error as one line ("kernel.cpp:12: expected ';' ..."), or None."""
    errors = _errors(log)
    return f"kernel.cpp:{errors[0][0]}: {errors[0][1][:240]}" if errors else None


def summarize_build_errors(log: str) -> str | None:
    """One line for the kernel's first compile error where its wording says the kernel uses a
    name the twin does not have (the twin's own static_assert, an undeclared name or namespace,
    a missing member or type), naming it at the kernel's line; else None (first_error words it)."""
    errors = _errors(log)
    if not errors:
        return None
    line, message = errors[0]
    match = _NOT_IN_TWIN.search(message)
    if match:
        return f"{match.group(1)} (kernel.cpp:{line}){_SUBSET}"
    for pattern, words in _WORDINGS:
        m = pattern.search(message)
        if m:
            subset = "" if "conflicting declaration" in pattern.pattern else _SUBSET
            return f"{words(m)} (kernel.cpp:{line}){_nearest_name(message, m)}{subset}"
    return None


_SUGGESTED = re.compile(rf"did you mean {_Q}([\w:]+){_E}")


def _nearest_name(message: str, matched: re.Match[str]) -> str:
    """"; did you mean 'GM_ADDR'?" where a name the twin declares is close to the undeclared one
    (v5: `GMADDR` for `GM_ADDR` in 15 drafts): g++'s own suggestion where it made one, else the
    closest name of the twin's headers; "" where none is close."""
    suggested = _SUGGESTED.search(message)
    if suggested:
        return f"; did you mean '{suggested.group(1)}'?"
    words = [w for w in matched.groups() if w]
    if not words:
        return ""
    import difflib

    name = words[-1].split("::")[-1]
    close = difflib.get_close_matches(name, twin_names(), n=1, cutoff=0.8)
    return f"; did you mean '{close[0]}'?" if close and close[0] != name else ""


@functools.cache
def twin_names() -> tuple[str, ...]:
    """The names the twin's headers declare for kernels (AscendC's API, its macros and types),
    without the twin's own internals (`twin_*`, `_`-prefixed)."""
    names: set[str] = set()
    for header in TWIN_INCLUDE.rglob("*.h"):
        text = header.read_text(errors="replace")
        names.update(re.findall(r"#\s*define\s+([A-Za-z]\w*)", text))
        names.update(re.findall(r"\b(?:class|struct|enum(?:\s+class)?|using|namespace)\s+([A-Za-z]\w*)", text))
        names.update(re.findall(r"\b([A-Z]\w*)\s*\(", text))  # functions: the API's are CamelCase
    return tuple(sorted(n for n in names if not n.lower().startswith(("twin", "evk")) and len(n) > 2))


def finish(run: subprocess.Popen) -> str:
    try:
        out, _ = run.communicate(timeout=BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        run.kill()
        run.communicate()
        raise KernelBuildError(f"the compiler timed out after {BUILD_TIMEOUT_S} s") from exc
    return out


def probe_library(compiler: str) -> Path:
    """A library of the twin's runtime alone (for the SoC parameters before any kernel is
    built), cached by the headers' hash in the build cache (a temporary folder if unwritable)."""
    from npu_pool.paths import build_cache_dir

    key = hashlib.sha256("\0".join([SOC_JSON_FUNCTION, *TWIN_CFLAGS, compiler_identity(compiler),
                                    twin_headers_digest()]).encode()).hexdigest()[:16]
    text = '#include "twin_runtime.h"\n' + SOC_JSON_FUNCTION
    # build_cache_dir() creates the default cache, which a sandboxed process may not (its first
    # run with a configured build cache): then the temporary folder.
    for where in (lambda: build_cache_dir() / "twin", lambda: Path(tempfile.gettempdir()) / f"evokernel-twin-{os.getuid()}"):
        try:
            folder = where()
            folder.mkdir(parents=True, exist_ok=True)
            target = folder / f"probe-{key}.so"
            if target.exists():
                return target
            source = folder / f".probe-{key}-{os.getpid()}.cpp"
            source.write_text(text)
            tmp = folder / f".probe-{key}-{os.getpid()}.so"
            done = subprocess.run([compiler, *TWIN_CFLAGS, "-shared", f"-I{TWIN_INCLUDE}", str(source), "-o", str(tmp)],
                                  capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
            source.unlink(missing_ok=True)
            if done.returncode != 0:
                raise KernelBuildError("the Ascend C twin's runtime did not compile", done.stderr)
            os.replace(tmp, target)
            return target
        except OSError:
            continue
    raise KernelBuildError("no writable folder for the Ascend C twin's probe library")
