"""Anti-hack rules for C, C++, CUDA and Ascend C sources (the kernel-source format, and the
`cpp_sources`/`cuda_sources` strings of a `load_inline` candidate).

Comments and string literals are blanked before matching, so a comment or a message string
never triggers a rule; `#include` targets and inline assembly are read before strings are
blanked, since that is where they live.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from npu_pool.antihack.findings import Finding
from npu_pool.antihack.lexing import _line, blank_comments_and_strings, read_digraphs, splice_lines
from npu_pool.antihack.own_names import declares, taken_as_value
from npu_pool.antihack.preprocessed import check_expanded, needs_expansion
from npu_pool.antihack.tensor_operators import check_tensor_operators

# --- rule tables -------------------------------------------------------------------------

# Names that are rejected wherever they appear as a token (distinctive enough never to be
# an innocent variable), grouped by the message the LLM gets.
_TOKEN_RULES: list[tuple[str, str, tuple[str, ...]]] = [
    ("process", "starting processes is not allowed in a kernel", (
        "fork", "vfork", "execv", "execve", "execvp", "execvpe", "execl", "execlp", "execle",
        "execveat", "fexecve", "popen", "posix_spawn", "posix_spawnp", "waitpid", "ptrace", "prctl", "syscall")),
    ("network", "network access is not allowed in a kernel", (
        "socket", "getaddrinfo", "gethostbyname", "inet_pton", "inet_addr", "sendto", "recvfrom",
        "curl_easy_init", "curl_easy_perform")),
    ("dynamic_loading", "loading libraries at run time (dlopen/dlsym) is not allowed", (
        "dlopen", "dlsym", "dlvsym", "dlmopen", "LoadLibrary", "LoadLibraryA", "GetProcAddress")),
    ("environment", "reading or changing environment variables is not allowed in a kernel", (
        "getenv", "secure_getenv", "setenv", "putenv", "unsetenv", "clearenv")),
    ("timer", "timers and cycle counters are not allowed in a kernel: the harness times it", (
        "gettimeofday", "clock_gettime", "timespec_get", "__rdtsc", "__rdtscp", "_rdtsc", "rdtsc",
        "__builtin_ia32_rdtsc", "__builtin_ia32_rdtscp", "__builtin_readcyclecounter", "clock64",
        "__globaltimer", "GetSystemCycle", "QueryPerformanceCounter")),
    ("file_access", "file access is not allowed in a kernel", (
        "fopen", "fopen64", "freopen", "fdopen", "tmpfile", "tmpnam", "mkstemp", "openat", "creat",
        "unlink", "unlinkat", "rmdir", "mkdir", "chmod", "ftruncate", "symlink", "ifstream",
        "ofstream", "fstream", "filebuf", "basic_ifstream", "basic_ofstream", "basic_fstream", "basic_filebuf",
        "open64", "openat64", "creat64", "pread", "pread64", "preadv", "readv", "pwrite", "pwrite64", "pwritev",
        "writev", "sendfile", "open_by_handle_at", "name_to_handle_at", "freopen64", "openat2", "open_tree",
        "memfd_create")),
    ("thread", "threads are not allowed (work must run where the harness times it); use OpenMP on CPU", (
        "pthread_create", "pthread_detach", "jthread", "thrd_create")),
    ("signal", "signal handlers and signals are not allowed in a kernel", (
        "sigaction", "sigprocmask", "setitimer", "alarm")),
    ("stream", "do not create streams or events: launch on the stream the harness gives you", (
        "cudaStreamCreate", "cudaStreamCreateWithFlags", "cudaStreamCreateWithPriority",
        "cudaEventCreate", "cudaEventCreateWithFlags", "cudaEventRecord", "cudaEventElapsedTime",
        "cudaLaunchHostFunc", "cudaStreamAddCallback", "cuStreamCreate", "cuEventCreate",
        "cudaDeviceReset", "cudaSetDevice", "getStreamFromPool", "setCurrentCUDAStream",
        "CUDAStreamGuard", "aclrtCreateStream", "aclrtCreateStreamWithConfig", "aclrtCreateEvent",
        "aclrtCreateEventWithFlag", "aclrtRecordEvent", "aclrtEventElapsedTime", "aclrtSetDevice",
        "aclrtResetDevice", "aclrtSetCurrentContext", "getStreamFromPoolNPU")),
]

# Common words: rejected only when called (`name(`), or anywhere inside a #define.
_CALL_RULES: list[tuple[str, str, tuple[str, ...]]] = [
    ("process", "starting processes is not allowed in a kernel", ("system", "clone", "kill", "wait")),
    ("network", "network access is not allowed in a kernel", ("connect", "listen", "accept")),
    ("file_access", "file access is not allowed in a kernel", ("open", "write", "read", "truncate", "mmap", "mprotect")),
    ("timer", "timers are not allowed in a kernel: the harness times it", ("clock", "time")),
    ("signal", "signal handlers and signals are not allowed in a kernel", ("signal", "raise")),
]
# Common words that are still never an innocent value: flagged when their address is taken.
_POINTER_TAKEN = {"system", "kill", "clone", "connect", "listen", "accept", "mmap", "mprotect", "signal", "raise"}
_CALL_WARNINGS: list[tuple[str, str, tuple[str, ...]]] = [
    ("sleep", "sleeping in a kernel only makes it slower (and may hit the run timeout)", (
        "sleep", "usleep", "nanosleep", "sleep_for", "sleep_until")),
    ("exit", "exiting or aborting kills the evaluation; report errors with TORCH_CHECK or a status", (
        "exit", "_exit", "quick_exit", "abort", "__builtin_trap", "std::terminate")),
    ("file_access", "remove/rename look like file operations; kernels must not touch files", ("remove", "rename")),
    ("synchronize", "synchronising inside the kernel wrapper is unnecessary; the harness synchronises", (
        "cudaDeviceSynchronize", "cudaStreamSynchronize", "aclrtSynchronizeDevice",
        "aclrtSynchronizeStream")),
    ("vendor_library", "calling a vendor library (cuBLAS, cuDNN, BLAS, MKL, oneDNN, aclnn) is not writing the kernel", ()),
]
_VENDOR_CALL = re.compile(r"(?<![\w.])(cublas\w*|cudnn\w*|cblas_\w+|mkl_\w+|dnnl_\w+|aclnn\w+|aclop\w+)\s*\(")

_QUALIFIED_REJECTS: list[tuple[str, str, re.Pattern[str]]] = [
    ("timer", "std::chrono timers are not allowed in a kernel: the harness times it", re.compile(r"\bchrono\s*::")),
    ("thread", "std::thread/std::async are not allowed; use OpenMP on CPU", re.compile(r"\bstd\s*::\s*(thread|async|jthread)\b")),
    ("file_access", "std::filesystem is not allowed in a kernel", re.compile(r"\bfilesystem\s*::")),
    ("load_time_code", "constructor/destructor functions run code at library load; not allowed",
     re.compile(r"__attribute__\s*\(\(\s*(constructor|destructor)|\[\[\s*gnu\s*::\s*(constructor|destructor)")),
    ("dispatch_tampering", "changing torch's dispatch keys hides operators from the harness; not allowed",
     re.compile(r"\b(?:Exclude|Include)DispatchKeyGuard\b|\bAutoDispatchBelow\w*|\bDisableTorchDispatch\b|\btls_set_dispatch_key")),
    ("namespace_alias", "write torch::/at:: names in full (no using-directives or aliases of torch namespaces)",
     re.compile(r"\busing\s+namespace\s+(?:torch|at|aten|c10|at_npu)\b|\bnamespace\s+\w+\s*=\s*(?:::)?(?:torch|at|aten|c10|at_npu)\b"
                r"|\busing\s+(?:::)?(?:torch|at|aten|at_npu)\s*::\s*[a-z_]\w*\s*;")),
    # The Ascend C twin's runtime keeps the fault, the regions and the cost counters: a kernel
    # reaching it could clear a fault or its own modelled cost.
    ("harness_internals", "evk_twin names the Ascend C twin's runtime, which belongs to the harness; use the Ascend C API only",
     re.compile(r"\bevk_twin\w*")),
    ("torch_builtin_op", "torch_npu's built-in operators are torch compute; write the kernel yourself",
     re.compile(r"\bat_npu\s*::\s*native\s*::")),
]

_INCLUDE_REJECTS = {
    "sys/socket.h": "network", "netdb.h": "network", "sys/un.h": "network", "ifaddrs.h": "network",
    "dlfcn.h": "dynamic_loading", "fstream": "file_access", "filesystem": "file_access",
    "fcntl.h": "file_access", "sys/mman.h": "file_access", "thread": "thread", "future": "thread",
    "pthread.h": "thread", "threads.h": "thread", "spawn.h": "process", "sys/wait.h": "process",
    "sys/ptrace.h": "process", "sys/syscall.h": "process", "syscall.h": "process",
    "sys/prctl.h": "process", "sys/resource.h": "process", "signal.h": "signal", "csignal": "signal",
}
_INCLUDE_REJECT_PREFIXES = {"netinet/": "network", "arpa/": "network", "curl/": "network", "linux/": "process",
                            "twin_": "harness_internals"}  # the Ascend C twin's own headers
_INCLUDE_WARNINGS = {
    "unistd.h": "process", "chrono": "timer", "ctime": "timer", "time.h": "timer",
    "sys/time.h": "timer", "setjmp.h": "exit", "csetjmp": "exit", "sys/stat.h": "file_access",
    "cublas_v2.h": "vendor_library", "cublas.h": "vendor_library", "cublasLt.h": "vendor_library",
    "cudnn.h": "vendor_library", "cblas.h": "vendor_library", "mkl.h": "vendor_library",
    "aclnn/aclnn_base.h": "vendor_library",
}
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*(?:<([^>\n]*)>|"([^"\n]*)"|(\S.*))', re.MULTILINE)
_EMBED = re.compile(r"^[ \t]*#[ \t]*embed\b", re.MULTILINE)
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define\b.*$", re.MULTILINE)
_ASM = re.compile(r"\b(?:asm|__asm__|__asm)\b\s*(?:volatile|__volatile__|goto|inline)?\s*(?:volatile|__volatile__)?\s*\(")
_ASM_FORBIDDEN = re.compile(r"syscall|sysenter|int\s*\$?0x80|\bsvc\b|rdtsc|rdpmc|incbin|globaltimer|%%?clock", re.IGNORECASE)
# Assembler directives that emit bytes: raw machine code (`.2byte 0x050f` is `syscall`), in
# any spelling GNU as accepts, and the fill and alignment directives that take a fill value.
_ASM_DATA = re.compile(r"\.(?:\d*byte|short|word|long|quad|octa|int|inst|insn|ascii|asciz|string\d*|value|hword|"
                       r"dc|dcb|ds|fill|space|skip|zero|org|b?align[wl]?|p2align[wl]?|align|float|single|double|"
                       r"[su]leb128|reloc|base64)\b", re.IGNORECASE)
_STRING_LITERAL = re.compile(r'(?:\b(?:u8|u|U|L|R|LR|u8R|uR|UR))?"((?:[^"\\\n]|\\.)*)"')

# torch/ATen functions a load_inline wrapper may call: allocation, options, streams, threads.
_ATEN_ALLOWED = {
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full",
    "full_like", "from_blob", "scalar_tensor", "tensor", "arange", "device", "dtype",
    "parallel_for", "get_num_threads", "in_parallel_region", "get_thread_num", "globalContext",
    "getCurrentCUDAStream", "getDefaultCUDAStream", "current_device", "device_count",
    "getCurrentDeviceProperties", "typeMetaToScalarType", "toString", "elementSize",
    "check", "requires_grad", "irange", "ceil_div", "divup", "str",
}
_ATEN_CALL = re.compile(r"\b(torch|at|aten|c10)\s*::\s*((?:\w+\s*::\s*)*)(\w+)\s*(?:<[^<>;()]*>)?\s*\(")
# Tensor methods that compute (a copy is data movement, allowed; views are allowed).
_TENSOR_COMPUTE_METHODS = (
    "relu relu_ sigmoid sigmoid_ tanh tanh_ exp exp_ log log_ log1p expm1 sum mean max min amax amin "
    "argmax argmin matmul mm bmm addmm addmv addbmm baddbmm mv dot outer einsum softmax log_softmax "
    "add add_ sub sub_ mul mul_ div div_ pow pow_ sqrt rsqrt abs neg clamp clamp_ clamp_min clamp_max "
    "gelu silu mish hardtanh leaky_relu elu softplus erf sin cos floor ceil round sign lt gt le ge eq "
    "ne maximum minimum where masked_fill gather scatter scatter_add index_select index_add sort "
    "topk cumsum cumprod norm var std prod logsumexp layer_norm batch_norm group_norm conv1d conv2d "
    "conv3d linear max_pool1d max_pool2d avg_pool1d avg_pool2d reciprocal square lerp addcmul addcdiv"
).split()
_TENSOR_METHOD_CALL = re.compile(r"(?:\.|->)\s*(" + "|".join(map(re.escape, _TENSOR_COMPUTE_METHODS)) + r")\s*\(")
_TORCH_SOURCE = re.compile(r"torch/extension\.h|\bATen/|\btorch\s*::|\bat\s*::|torch/library\.h")

_COMPARISON = re.compile(r"([A-Za-z_][\w.\[\]>-]*)\s*[!=]=\s*([A-Za-z_0-9][\w.\[\]>-]*)")
_STATIC_DECL = re.compile(
    r"\bstatic\b(?![^;{}=()]*\b(?:constexpr|inline|__device__|__global__|__host__|__aicore__)\b)"
    r"(?P<decl>[^;{}()=]*?)\b(?P<name>[A-Za-z_]\w*)\s*(?P<after>=|;|\[)"
)


def check_source(source: str, language: str) -> list[Finding]:
    """Every finding in one C/C++/CUDA/Ascend C source."""
    no_comments, code = (read_digraphs(text) for text in blank_comments_and_strings(splice_lines(source)))
    findings: list[Finding] = []
    findings += _check_includes(no_comments)
    findings += _check_asm(no_comments)
    # include lines are judged by _check_includes; token rules read the code around them
    findings += _check_tokens(_INCLUDE.sub(lambda m: " " * len(m.group(0)), code))
    if language in ("cpp", "cuda") and _TORCH_SOURCE.search(code):
        findings += _check_aten(code)
        findings += check_tensor_operators(code)
    findings += _check_static_caches(code)
    if trigger := needs_expansion(code):  # a macro can assemble or wrap a name: look again after expansion
        findings += check_expanded(no_comments, language, findings, trigger,
                                   lambda text: _check_tokens(blank_comments_and_strings(text)[1]))
    return findings


def _finding(rule: str, severity: str, message: str, text: str, offset: int) -> Finding:
    return Finding(rule=rule, severity=severity, message=message, line=_line(text, offset))


def _check_includes(text: str) -> Iterator[Finding]:
    for match in _INCLUDE.finditer(text):
        angle, quoted, computed = match.groups()
        target = (angle or quoted or "").strip()
        if computed is not None:
            yield _finding("include", "reject", "use a literal #include <header>, not a macro", text, match.start())
            continue
        if target.startswith("/") or ".." in target.split("/") or target.startswith("~"):
            yield _finding("file_access", "reject", f"#include \"{target}\" reads a file outside the kernel; include only system and toolkit headers", text, match.start())
            continue
        rule = _INCLUDE_REJECTS.get(target) or next(
            (r for prefix, r in _INCLUDE_REJECT_PREFIXES.items() if target.startswith(prefix)), None)
        if rule:
            yield _finding(rule, "reject", f"#include <{target}> is not allowed in a kernel ({rule.replace('_', ' ')})", text, match.start())
        elif target in _INCLUDE_WARNINGS:
            rule = _INCLUDE_WARNINGS[target]
            yield _finding(rule, "warn", f"#include <{target}> is unusual in a kernel ({rule.replace('_', ' ')})", text, match.start())
    for match in _EMBED.finditer(text):
        yield _finding("file_access", "reject", "#embed reads a file into the kernel; not allowed", text, match.start())


def asm_text(body: str) -> str:
    """What the assembler reads from an asm statement's body: its string literals joined as the
    compiler joins adjacent ones (`"sys" "call"`) and their escapes decoded (`"\\x0f\\x05"`,
    `"sys\\143all"`)."""
    return "".join(_decode_escapes(m.group(1)) for m in _STRING_LITERAL.finditer(body))


def _decode_escapes(literal: str) -> str:
    simple = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", '"': '"', "'": "'", "a": "\a", "b": "\b",
              "f": "\f", "v": "\v", "?": "?"}

    def one(match: re.Match[str]) -> str:
        code = match.group(1)
        if code[0] in "xX":
            return chr(int(code[1:], 16) & 0xFF) if len(code) > 1 else ""
        if code[0] in "01234567" and len(code) > 1 or code.isdigit():
            return chr(int(code, 8) & 0xFF)
        return simple.get(code, code)

    return re.sub(r"\\(x[0-9a-fA-F]+|[0-7]{1,3}|.)", one, literal)


def _check_asm(text: str) -> Iterator[Finding]:
    for match in _ASM.finditer(text):
        depth, i = 1, match.end()
        while i < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        body = text[match.end():i]
        assembled = asm_text(body)
        if hit := _ASM_FORBIDDEN.search(body) or _ASM_FORBIDDEN.search(assembled):
            yield _finding("inline_asm", "reject", f"inline assembly with '{hit.group(0)}' (system calls, timers, file embedding) is not allowed", text, match.start())
        elif hit := _ASM_DATA.search(assembled) or _ASM_DATA.search(body):
            yield _finding("inline_asm", "reject", f"inline assembly with the data directive '{hit.group(0)}' "
                           "(raw machine code: a system call the gate cannot read) is not allowed", text, match.start())
        elif "\x0f" in assembled or "\x05" in assembled:  # an opcode byte smuggled as a character
            yield _finding("inline_asm", "reject", "inline assembly with raw bytes is not allowed", text, match.start())


# glibc's own names for its public functions (`_Fork`, `__fork`, `__libc_fork`, `_IO_fopen`,
# `_IO_new_fopen`, `__open64_2`, `__read_nocancel`): exported too, so they link like the public
# ones. Such a name is judged as the public name it stands for.
_LIBC_ALIAS = re.compile(r"(?<![\w.>])(_{1,2}(?:IO_(?:new_|old_)?|libc_)?([A-Za-z]\w*?)(?:64)?(?:_nocancel|_chk|_2)?)\b")
_ALIAS_TOKEN = {name: (rule, message) for rule, message, names in _TOKEN_RULES for name in names}
_ALIAS_CALL = {name: (rule, message) for rule, message, names in _CALL_RULES for name in names}


# glibc's libio internals (`_IO_proc_open` is popen's body and starts /bin/sh; `_IO_file_fopen`,
# `_IO_file_open`, `_IO_new_file_fopen` open files): exported, never needed by a kernel, and too
# many to list one by one, so every `_IO_` name but the FILE type is refused.
_LIBIO_NAME = re.compile(r"(?<![\w.>])_IO_(?!FILE\b)\w+")


def _check_libc_aliases(code: str) -> Iterator[Finding]:
    for match in _LIBIO_NAME.finditer(code):
        yield _finding("process", "reject", f"{match.group(0)}: glibc's internal stdio entry points (_IO_*) start "
                       "programs and open files; not allowed in a kernel", code, match.start())
    for match in _LIBC_ALIAS.finditer(code):
        public = match.group(2).lower()
        called = code[match.end():match.end() + 40].lstrip().startswith(("(", ")"))
        found = _ALIAS_TOKEN.get(public) or (_ALIAS_CALL.get(public) if called or "IO_" in match.group(1)
                                            or "libc_" in match.group(1) else None)
        if found is not None:
            rule, message = found
            yield _finding(rule, "reject", f"{match.group(1)} is glibc's own name for {public}: {message}",
                           code, match.start())


def _check_tokens(code: str) -> Iterator[Finding]:
    yield from _check_libc_aliases(code)
    for rule, message, names in _TOKEN_RULES:
        pattern = re.compile(r"(?<![\w.>])(" + "|".join(map(re.escape, names)) + r")\b")
        for match in pattern.finditer(code):
            yield _finding(rule, "reject", f"{match.group(0)}: {message}", code, match.start())
    defines = [(m.start(), m.group(0)) for m in _DEFINE.finditer(code)]
    for rule, message, names in _CALL_RULES:
        alternatives = "|".join(map(re.escape, names))
        for match in _calls(code, alternatives):
            yield _finding(rule, "reject", f"{match.group(1)}(): {message}", code, match.start())
        # taken as a value (`auto f = system;`, `&kill`, `run(system)`): a call through a pointer
        value = re.compile(r"(?:[=&(,]\s*)(?:std\s*::\s*|::\s*)?(" + "|".join(map(re.escape, _POINTER_TAKEN & set(names))) + r")\s*[;,)]") \
            if _POINTER_TAKEN & set(names) else None
        for match in value.finditer(code) if value else ():
            yield _finding(rule, "reject", f"{match.group(1)} taken as a function pointer: {message}", code, match.start(1))
        # the other common words, where the program does not declare the name itself (own_names)
        common = set(names) - _POINTER_TAKEN
        own = {name for name in common if declares(code, name)}
        for match in taken_as_value(code, common):
            if match.group("name") in own and not match.group("qualified"):
                continue
            yield _finding(rule, "reject", f"{match.group('name')} taken as a function pointer (not a name the "
                           f"program declares itself): {message}", code, match.start("name"))
        bare = re.compile(r"(?<![\w.])(" + alternatives + r")\b")
        for start, body in defines:
            for match in bare.finditer(body):
                yield _finding(rule, "reject", f"{match.group(1)} inside #define: {message}", code, start)
    for rule, message, names in _CALL_WARNINGS:
        matches = _VENDOR_CALL.finditer(code) if not names else _calls(code, "|".join(map(re.escape, names)), declarations=True)
        for match in matches:
            yield _finding(rule, "warn", f"{match.group(1)}: {message}", code, match.start())
    for rule, message, pattern in _QUALIFIED_REJECTS:
        for match in pattern.finditer(code):
            yield _finding(rule, "reject", message, code, match.start())
    for start, body in defines:
        if "##" in body:
            yield _finding("token_pasting", "warn", "## in a macro can assemble forbidden names; write names out", code, start)


def _calls(code: str, alternatives: str, declarations: bool = False) -> Iterator[re.Match[str]]:
    """Calls of the named functions, also through parentheses: `open(p, 0)`, `(open)(p, 0)`,
    `((::open))(...)`, `(*open)(...)`, `(x, open)(...)`, `(c ? read : read)(...)`; not the
    kernel's own definitions (`float read(...)`) unless `declarations`, nor a name that ends an
    if/while/for/switch condition (`if (open) (x)++;`)."""
    call = re.compile(r"(?<![\w.>])(?:std\s*::\s*(?:this_thread\s*::\s*)?|::\s*)?(" + alternatives + r")(?P<close>(?:\s*\))*)\s*\(")
    groups = _cooperative_groups(code)
    for match in call.finditer(code):
        if groups and (owner := re.search(r"(\w+)\s*::\s*$", code[max(0, match.start() - 60):match.start()])) \
                and owner.group(1) in groups:
            continue  # CUDA's cooperative_groups::wait(block) is a barrier, not libc's wait
        if not declarations and _is_declaration(code, match.start(), parenthesised=bool(match.group("close"))):
            continue
        if match.group("close") and _ends_a_condition(code, match.start(), match.group("close").count(")")):
            continue
        yield match


def _cooperative_groups(code: str) -> set[str]:
    """`cooperative_groups` and the program's aliases of it (`namespace cg = cooperative_groups;`)."""
    if "cooperative_groups" not in code:
        return set()
    aliases = re.findall(r"\bnamespace\s+(\w+)\s*=\s*(?:::\s*)?cooperative_groups\s*;", code)
    return {"cooperative_groups", *aliases}


def _ends_a_condition(code: str, offset: int, closes: int) -> bool:
    """Whether the last of `closes` parentheses after `offset` closes an if/while/for/switch."""
    depth = closes
    for i in range(offset - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(code[i], 0)
        if depth == 0:
            return bool(re.search(r"\b(?:if|while|for|switch)\s*$", code[max(0, i - 20):i]))
    return False


def _is_declaration(code: str, offset: int, parenthesised: bool = False) -> bool:
    """`float read(...)`-style definitions of the kernel's own helpers are not calls of libc;
    nor, for a name in parentheses, `int (read)(...)` or `int (*read)(...)` (a functional cast,
    `int(read(fd, p, n))`, is a call)."""
    before = code[max(0, offset - 40):offset].rstrip()
    declarator = r"(?:\s*\(\s*[*&]*)" if parenthesised else ""
    return bool(re.search(r"\b(void|int|float|double|auto|bool|half|int64_t|int32_t|size_t|__device__|__aicore__|inline)\s*[*&]?"
                          + declarator + "$", before))


def _check_aten(code: str) -> Iterator[Finding]:
    for match in _ATEN_CALL.finditer(code):
        namespaces = re.sub(r"\s+", "", match.group(2))
        name = match.group(3)
        if name[0].isupper() or name in _ATEN_ALLOWED or name.startswith("AT_"):
            continue
        if "vec::" in namespaces:
            continue  # at::vec: SIMD register helpers, the building blocks of a CPU kernel
        if namespaces.startswith(("cuda::", "npu::")) and name.startswith(("get", "current")) and name != "getStreamFromPool":
            continue
        yield _finding("torch_compute", "reject", f"{match.group(1)}::{namespaces}{name}() is torch compute; compute in your own kernel", code, match.start())
    for match in _TENSOR_METHOD_CALL.finditer(code):
        yield _finding("torch_compute", "reject", f".{match.group(1)}() on a tensor is torch compute; compute in your own kernel", code, match.start())


def _check_static_caches(code: str) -> Iterator[Finding]:
    names = {
        m.group("name") for m in _STATIC_DECL.finditer(code)
        if not ("const" in m.group("decl").split() and "*" not in m.group("decl"))
    }
    nulls = {"nullptr", "NULL", "0", "false", "true"}
    for match in _COMPARISON.finditer(code):
        left, right = match.group(1), match.group(2)
        for mine, other in ((left, right), (right, left)):
            name = re.sub(r"\W.*", "", mine)  # `last_x`, `cache[i]` and `t->p` name their root variable
            if name in names and other not in nulls:
                # compared with a real value: lazy initialisation (== nullptr) is fine
                yield _finding("static_cache", "warn", f"static '{name}' compared with a value: results must not be cached across calls", code, match.start())
                break
