"""The static anti-hack gate on kernel sources (C, C++, CUDA, Ascend C): forbidden calls and
includes are rejected, comments and strings are not, and macros cannot hide calls."""

from __future__ import annotations

import pytest

from npu_pool.antihack import check_kernel_source, summarise

from .antihack_support import _rules

# --- kernel sources ------------------------------------------------------------------------

KERNEL_HEAD = '#include <cstdint>\nextern "C" void kernel(const float* x, float* out, int64_t n) {\n'


@pytest.mark.parametrize(("body", "rule"), [
    ("system(\"ls\");", "process"),
    ("std::system(\"ls\");", "process"),
    ("pid_t p = fork();", "process"),
    ("execve(\"/bin/sh\", 0, 0);", "process"),
    ("int s = socket(2, 1, 0);", "network"),
    ("FILE* f = fopen(\"/etc/passwd\", \"r\");", "file_access"),
    ("std::ofstream o(\"/tmp/x\");", "file_access"),
    ("void* h = dlopen(\"libc.so.6\", 1);", "dynamic_loading"),
    ("const char* e = getenv(\"HOME\");", "environment"),
    ("auto t0 = std::chrono::steady_clock::now();", "timer"),
    ("unsigned long long c = __rdtsc();", "timer"),
    ("struct timeval tv; gettimeofday(&tv, 0);", "timer"),
    ("long t = clock();", "timer"),
    ("signal(11, 0);", "signal"),
    ("asm volatile(\"syscall\");", "inline_asm"),
    ("asm volatile(\".byte 0x0f, 0x05\");", "inline_asm"),
    ("int (*run)(const char*) = system; run(\"ls\");", "process"),
    ("}\n#include <torch/extension.h>\ntorch::Tensor f(torch::Tensor a, const at::Tensor& b) { auto c = a.contiguous(); return c * b;", "torch_compute"),
    ("}\n#include <torch/extension.h>\ntorch::Tensor g(torch::Tensor a) { auto o = torch::empty_like(a); o -= a; return -o;", "torch_compute"),
    ("std::thread t([]{}); t.join();", "thread"),
    ("pthread_t t; pthread_create(&t, 0, 0, 0);", "thread"),
    # found by the hostile re-probe (issue 55): names beside the public ones
    ("FILE* f = freopen64(\"/etc/passwd\", \"r\", stdin);", "file_access"),
    ("execveat(3, \"\", 0, 0, 0x1000);", "process"),
    ("int fd = memfd_create(\"k\", 0); fexecve(fd, 0, 0);", "process"),
    ("int fd = open_tree(-100, \"/\", 1);", "file_access"),
    ("struct open_how h{}; int fd = openat2(-100, \"/etc/passwd\", &h, sizeof h);", "file_access"),
])
def test_kernel_source_rules(body, rule):
    findings = check_kernel_source(KERNEL_HEAD + body + "\n}\n", "cpp")
    assert rule in _rules(findings), summarise(findings)[2]


@pytest.mark.parametrize(("body", "rule"), [
    ("int p = _Fork();", "process"),  # glibc 2.34's exported fork
    ("int p = __libc_fork();", "process"),
    ("__libc_system(\"ls\");", "process"),
    ("FILE* f = _IO_fopen(\"/etc/passwd\", \"r\");", "file_access"),
    ("FILE* f = _IO_new_fopen(\"/etc/passwd\", \"r\");", "file_access"),
    ("int fd = __open64_2(\"/etc/passwd\", 0);", "file_access"),
    ("long n = __read_nocancel(0, out, 4);", "file_access"),
])
def test_glibc_internal_names_are_judged_as_the_public_names_they_stand_for(body, rule):
    findings = check_kernel_source(KERNEL_HEAD + body + "\n}\n", "cpp")
    assert rule in _rules(findings), summarise(findings)[2]


@pytest.mark.parametrize("body", [
    "float _time = 1.0f; out[0] = _time;", "int __open_files = 3; out[0] = __open_files;",
    "int _wait = 2; out[0] = _wait;", "__syncthreads();", "float _read_scale = 2.0f; out[0] = _read_scale;",
])
def test_underscored_names_that_are_not_glibc_aliases_are_not_flagged(body):
    findings = check_kernel_source(KERNEL_HEAD + body + "\n}\n", "cuda")
    assert not [f for f in findings if f.severity == "reject"], summarise(findings)[2]


@pytest.mark.parametrize(("include", "rule"), [
    ("<sys/socket.h>", "network"), ("<netinet/in.h>", "network"), ("<dlfcn.h>", "dynamic_loading"),
    ("<fstream>", "file_access"), ("<thread>", "thread"), ("<pthread.h>", "thread"),
    ("<spawn.h>", "process"), ("\"/etc/passwd\"", "file_access"), ("\"../task.py\"", "file_access"),
])
def test_forbidden_includes(include, rule):
    findings = check_kernel_source(f"#include {include}\n" + KERNEL_HEAD + "}\n", "c")
    assert rule in _rules(findings), summarise(findings)[2]


def test_comments_strings_and_openmp_do_not_trigger_rules():
    source = (
        "#include <omp.h>\n#include <cmath>\n"
        "// system(\"rm -rf /\"); fopen getenv socket std::thread\n"
        "/* fork(); dlopen(); clock(); */\n"
        'static const char* note = "never call system() or fopen()";\n'
        'const char* raw = R"x(fork(); exec())x";\n'
        + KERNEL_HEAD
        + "#pragma omp parallel for\n  for (int64_t i = 0; i < n; ++i) out[i] = std::fmax(x[i], 0.f);\n}\n"
    )
    assert check_kernel_source(source, "cpp") == []


def test_macros_cannot_hide_calls():
    findings = check_kernel_source("#define RUN system\n" + KERNEL_HEAD + "RUN(\"ls\");\n}\n", "cpp")
    assert "process" in _rules(findings)


def test_token_pasting_is_checked_after_the_macros_are_expanded():
    pasted = "#define JOIN(a, b) a ## b\n#define CALL JOIN(sys, tem)\n" + KERNEL_HEAD + 'CALL("ls");\n}\n'
    findings = check_kernel_source(pasted, "cpp")
    rejected = [f for f in findings if f.severity == "reject"]
    assert [f.rule for f in rejected] == ["process"] and rejected[0].message.startswith("after the macros are expanded")
    # a paste that makes an innocent name is only the usual warning
    harmless = "#define JOIN(a, b) a ## b\n" + KERNEL_HEAD + "int64_t JOIN(len, gth) = n;\n}\n"
    assert [f.severity for f in check_kernel_source(harmless, "cpp")] == ["warn"]


@pytest.mark.parametrize(("body", "rule"), [
    ('int fd = (open)("/etc/passwd", 0);', "file_access"),
    ("(fork)();", "process"),
    ("long k = ((::read))(0, 0, 0);", "file_access"),
    ("(*write)(1, 0, 0);", "file_access"),
    ('(n, open)("/x", 0);', "file_access"),
    ("(n ? read : read)(0, 0, 0);", "file_access"),
    ("int r = int(read(0, 0, 0));", "file_access"),
    ('op\\\nen("/x", 0);', "file_access"),  # a backslash-newline splices the name
    ('}\n#define ARGS ("/x", 0)\nvoid g() { open ARGS;', "file_access"),
    ('}\n#define CALL(f, a) f a\nvoid g() { CALL(open, ("/x", 0));', "file_access"),
    ('}\n#define WRAP(f) (f)\nvoid g() { WRAP(open)("/x", 0);', "file_access"),
    ('}\n#define L (\nvoid g() { L open)("/x", 0);', "file_access"),
    ("}\n%:define J(a, b) a %:%: b\nvoid g() { J(fo, rk)();", "process"),  # digraphs: #define, ##
    ('}\n#define RUN \\\n  system\nvoid g() { RUN("ls");', "process"),
])
def test_calls_through_parentheses_and_macros_are_seen(body, rule):
    findings = check_kernel_source(KERNEL_HEAD + body + "\n}\n", "cpp")
    assert rule in _rules(findings), summarise(findings)[2]


@pytest.mark.parametrize(("body", "rule"), [
    ('}\nextern "C" int open(const char*, int, ...);\nstatic int (*const f)(const char*, int, ...) = open;\nvoid g() {',
     "file_access"),  # a prototype declares libc's open, not the program's own
    ("ssize_t (*r)(int, void*, size_t) = &read; (void)r;", "file_access"),
    ("auto w = ::write; (void)w;", "file_access"),
    ("long (*c)() = clock; (void)c;", "timer"),
    ("float time = 1.f; auto t = std::time; (void)t; (void)time;", "timer"),  # qualified: never the program's
    ("auto f = n ? wait : wait; (void)f;", "process"),
])
def test_common_words_taken_as_values_are_seen_unless_the_program_declares_them(body, rule):
    findings = check_kernel_source(KERNEL_HEAD + body + "\n}\n", "cpp")
    assert rule in _rules(findings), summarise(findings)[2]


@pytest.mark.parametrize("body", [
    "bool open = n > 0; if (open) (void)x;",  # a condition's parenthesis, then a statement
    "float time = 1.f; out[0] = (time) * 2.f;",
    "struct R { int read(int a) { return a; } } r; out[0] = (r.read)(1);",
    "}\nextern \"C\" int (open)(const char*, int, ...);\nvoid g() {",  # declared, never called
    "}\n#define CEIL_DIV(a, b) (((a) + (b) - 1) / (b))\nvoid g(int64_t n) { int64_t t = CEIL_DIV(n, 64); (void)t;",
])
def test_harmless_parentheses_and_macros_are_not_flagged(body):
    assert check_kernel_source(KERNEL_HEAD + body + "\n}\n", "cpp") == []


@pytest.mark.parametrize("body", [
    "float time = 1.f; float y = time; out[0] = y;",
    "}\nstatic void copy(const float* read, float* write, int64_t n) { for (int64_t i = 0; i < n; ++i) write[i] = read[i]; }"
    "\nvoid g(const float* a, float* b) { copy(a, b, 4);",
    "}\nenum Mode { read, write };\nint g() { Mode m = read; return m == write;",
    "}\nstatic inline float read(const float* p, int64_t i) { return p[i]; }\nvoid g() { float (*f)(const float*, int64_t) = read; (void)f;",
    "auto wait = [](int a) { return a; }; auto f = wait; (void)f;",
    "}\ntemplate <int open> int g() { return open;",
])
def test_the_programs_own_names_taken_as_values_are_not_flagged(body):
    assert check_kernel_source(KERNEL_HEAD + body + "\n}\n", "cpp") == []


def test_cooperative_groups_wait_is_a_barrier_but_other_namespaces_do_not_hide_libc():
    cuda = ("#include <cooperative_groups.h>\n#include <cooperative_groups/memcpy_async.h>\n"
            "namespace cg = cooperative_groups;\n__global__ void k(const float* x, float* out) {\n"
            "  auto block = cg::this_thread_block();\n  cg::wait(block);\n  cooperative_groups::wait(block);\n}\n")
    assert check_kernel_source(cuda, "cuda") == []
    hidden = ('namespace my { extern "C" int open(const char*, int, ...); }\n'
              'void g() { my::open("/etc/passwd", 0); }\n' + cuda)
    assert "file_access" in _rules(check_kernel_source(hidden, "cuda"))


def test_an_expanded_finding_names_the_line_it_came_from_and_cuda_is_expanded_as_nvcc_sees_it():
    source = KERNEL_HEAD + '}\n#define CALL(f, a) f a\nvoid g() {\n  int k = 0;\n  CALL(open, ("/x", 0));\n}\n'
    findings = [f for f in check_kernel_source(source, "cpp") if f.severity == "reject"]
    # unexpanded, `open` is a macro's argument: a value of a name the program does not declare
    assert [(f.line, f.message.split(":")[0]) for f in findings if not f.message.startswith("after")] == \
        [(7, "open taken as a function pointer (not a name the program declares itself)")]
    [finding] = [f for f in findings if f.message.startswith("after")]
    assert finding.line == 7 and finding.message.startswith("after the macros are expanded: open()")
    device_only = ('#ifdef __CUDA_ARCH__\n#define CALL(f, a) f a\n#else\n#define CALL(f, a)\n#endif\n'
                   + KERNEL_HEAD + 'CALL(open, ("/x", 0));\n}\n')
    assert "file_access" in _rules(check_kernel_source(device_only, "cuda"))


def test_static_pointer_cache_is_flagged_for_review():
    source = "static const float* last = nullptr;\n" + KERNEL_HEAD + "if (x == last) return;\nlast = x;\n}\n"
    findings = check_kernel_source(source, "cpp")
    assert _rules(findings, "warn") == {"static_cache"} and not _rules(findings)


def test_ascend_c_kernel_shape_is_clean_and_its_timers_and_streams_are_not():
    good = """
    #include "kernel_operator.h"
    using namespace AscendC;
    extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling) {
        GlobalTensor<float> xGm; xGm.SetGlobalBuffer((__gm__ float*)x + GetBlockIdx() * 128, 128);
        TPipe pipe; TQue<QuePosition::VECIN, 2> q; pipe.InitBuffer(q, 2, 512);
        LocalTensor<float> t = q.AllocTensor<float>(); DataCopy(t, xGm, 128); Relu(t, t, 128);
    }
    """
    assert check_kernel_source(good, "ascendc") == []
    hostile = good.replace("Relu(t, t, 128);", "int64_t c = AscendC::GetSystemCycle(); aclrtStream s; aclrtCreateStream(&s);")
    assert {"timer", "stream"} <= _rules(check_kernel_source(hostile, "ascendc"))


def test_unknown_language_is_a_usage_error():
    with pytest.raises(ValueError, match="unknown kernel language"):
        check_kernel_source("", "fortran")  # type: ignore[arg-type]

