"""What the anti-hack gate knows about torch and Python names: which are compute, which are
plumbing a kernel wrapper needs, and which are forbidden anywhere in a candidate file.

Paths are dotted names after alias resolution (`F.relu` -> `torch.nn.functional.relu`).
"""

from __future__ import annotations

# --- forbidden anywhere in the file (module code runs at import, inside the harness) ----

# prefix -> (rule, message). The longest matching prefix wins.
FORBIDDEN_PATHS: dict[str, tuple[str, str]] = {}


def _forbid(rule: str, message: str, *prefixes: str) -> None:
    for prefix in prefixes:
        FORBIDDEN_PATHS[prefix] = (rule, message)


_forbid("process", "starting processes is not allowed; compute in the kernel",
        "subprocess", "os.system", "os.popen", "os.fork", "os.forkpty", "os.execv", "os.execve",
        "os.execl", "os.execlp", "os.execle", "os.execvp", "os.execvpe", "os.spawnl", "os.spawnle",
        "os.spawnlp", "os.spawnv", "os.spawnve", "os.spawnvp", "os.posix_spawn", "os.posix_spawnp",
        "os.kill", "os.killpg", "os.setsid", "os.startfile", "pty", "pexpect", "signal", "resource",
        "atexit", "sys.exit", "os._exit", "os.abort")
_forbid("thread", "threads and processes are not allowed: all work must run where the harness times it",
        "threading", "_thread", "multiprocessing", "concurrent", "asyncio", "torch.multiprocessing",
        "sched", "queue")
_forbid("network", "network access is not allowed in a candidate",
        "socket", "ssl", "http", "urllib", "urllib3", "requests", "httpx", "aiohttp", "ftplib",
        "smtplib", "poplib", "imaplib", "telnetlib", "xmlrpc", "websocket", "websockets", "paramiko",
        "socketserver", "torch.hub", "torch.distributed", "huggingface_hub", "webbrowser")
_forbid("file_access", "file access is not allowed: keep sources in load_inline strings",
        "os.remove", "os.unlink", "os.rmdir", "os.removedirs", "os.rename", "os.renames",
        "os.replace", "os.truncate", "os.chmod", "os.chown", "os.symlink", "os.link", "os.write",
        "os.open", "os.fdopen", "os.dup2", "os.pipe", "os.chdir", "os.listdir", "os.scandir",
        "os.walk", "shutil", "glob", "torch.load", "torch.save", "io.open", "io.FileIO", "fileinput",
        "zipfile", "tarfile", "sqlite3", "mmap")
_forbid("native_code", "ctypes/cffi and loading libraries by hand are not allowed; use load_inline",
        "ctypes", "cffi", "torch.ops.load_library", "torch.classes", "_ctypes")
_forbid("dynamic_code", "dynamic imports and code generation hide what runs; write plain code",
        "importlib", "builtins", "pickle", "marshal", "shelve", "dill", "cloudpickle", "runpy",
        "code", "codeop", "types.FunctionType", "types.CodeType", "types.ModuleType", "imp",
        "__main__")
_forbid("introspection", "walking interpreter state (frames, gc, inspect) is not allowed",
        "gc", "inspect", "sys.modules", "sys._getframe", "sys.settrace", "sys.setprofile",
        "sys.meta_path", "sys.path_hooks", "sys.addaudithook", "sys.setrecursionlimit", "traceback",
        "tracemalloc", "faulthandler")
_forbid("stream", "do not create streams or events: launch on the current stream so the harness times all work",
        "torch.cuda.Stream", "torch.cuda.stream", "torch.cuda.set_stream", "torch.cuda.ExternalStream",
        "torch.cuda.StreamContext", "torch.cuda.Event", "torch.npu.Stream", "torch.npu.stream",
        "torch.npu.set_stream", "torch.npu.Event", "torch.npu.ExternalStream", "torch.Stream",
        "torch.Event", "torch.cuda.streams", "torch_npu.npu.Stream", "torch_npu.npu.Event",
        "torch_npu.npu.stream", "torch.xpu.Stream", "torch.mps.event", "torch.cuda.graphs",
        "torch.cuda.CUDAGraph", "torch.cuda.graph", "torch.cuda.make_graphed_callables")
_forbid("torch_internals", "torch internals and dispatch overrides are not allowed in a candidate",
        "torch._C", "torch._ops", "torch._VF", "torch._refs", "torch._prims", "torch._decomp",
        "torch._subclasses", "torch._dynamo", "torch._inductor", "torch._higher_order_ops",
        "torch.overrides", "torch.utils._python_dispatch", "torch.library", "torch._library",
        "torch.fx", "torch.export", "torch.jit", "torch.compile", "torch.compiler", "torch.func",
        "torch.vmap", "torch._functorch", "torch.autograd.forward_ad", "torch.utils._pytree")
_forbid("precision", "autocast and global precision switches lower precision silently; keep the task dtype",
        "torch.autocast", "torch.amp", "torch.cuda.amp", "torch.cpu.amp", "torch.npu.amp",
        "torch.set_float32_matmul_precision", "torch.set_default_dtype", "torch.set_default_tensor_type",
        "torch.set_default_device", "torch.set_flush_denormal", "torch.backends.cuda.matmul",
        "torch.backends.cudnn.allow_tf32")
_forbid("dynamic_code", "attrgetter/methodcaller reach attributes by computed names; use plain attribute access",
        "operator.attrgetter", "operator.methodcaller")
_forbid("global_state", "reading the random state predicts the harness's inputs; not allowed",
        "torch.get_rng_state", "torch.random", "torch.cuda.get_rng_state", "torch.cuda.get_rng_state_all",
        "torch.npu.get_rng_state", "torch.initial_seed", "torch.default_generator", "torch.cuda.default_generators")
_forbid("global_state", "changing torch's global state affects the reference and the timer",
        "torch.set_num_threads", "torch.set_num_interop_threads", "torch.use_deterministic_algorithms",
        "torch.set_rng_state", "torch.cuda.set_rng_state", "torch.random.set_rng_state",
        "torch.nn.modules.module.register_module_forward_hook",
        "torch.nn.modules.module.register_module_forward_pre_hook", "torch.set_warn_always")
_forbid("fallback", "suppressing exceptions hides a failing kernel; let errors surface", "contextlib.suppress")
_forbid("reference_model", "do not import task modules or the reference Model: write the kernel", "Model")

WARNED_PATHS: dict[str, tuple[str, str]] = {
    "time": ("timer", "the time module has no use in a kernel wrapper; the harness times the kernel"),
    "timeit": ("timer", "timing code has no use in a kernel wrapper; the harness times the kernel"),
    "os.environ": ("environment", "environment variables are set by the harness; do not read or change them"),
    "os.getenv": ("environment", "environment variables are set by the harness; do not read or change them"),
    "os.putenv": ("environment", "environment variables are set by the harness; do not read or change them"),
    "os.unsetenv": ("environment", "environment variables are set by the harness; do not read or change them"),
    "os.makedirs": ("file_access", "create no directories; load_inline manages its build folder"),
    "os.mkdir": ("file_access", "create no directories; load_inline manages its build folder"),
    "tempfile": ("file_access", "temporary files are unnecessary: keep sources in load_inline strings"),
    "torch.cuda.synchronize": ("synchronize", "synchronising is the harness's job; it only slows the kernel"),
    "torch.npu.synchronize": ("synchronize", "synchronising is the harness's job; it only slows the kernel"),
    "torch.cuda.set_device": ("device", "the harness selects the device; use the inputs' device"),
    "torch.npu.set_device": ("device", "the harness selects the device; use the inputs' device"),
    "torch.manual_seed": ("global_state", "seeding changes the harness's random inputs; remove it"),
    "torch.cuda.manual_seed": ("global_state", "seeding changes the harness's random inputs; remove it"),
    "torch.cuda.empty_cache": ("global_state", "emptying the allocator cache is the harness's business"),
    "torch.utils.dlpack": ("compute_elsewhere", "dlpack hands tensors to other libraries; compute in the kernel"),
    "sys.path": ("dynamic_code", "changing the import path is unnecessary in a candidate"),
    "sys.stdout": ("io", "write nothing to stdout from a candidate"),
}

# Top-level modules a candidate may import; anything else (the task's own module under any
# name included) is rejected.
KNOWN_MODULES = {
    "torch", "torch_npu", "triton", "numpy", "einops", "math", "cmath", "functools", "typing",
    "typing_extensions", "dataclasses", "os", "sys", "itertools", "collections", "enum", "abc",
    "__future__", "warnings", "logging", "contextlib", "textwrap", "string", "re", "hashlib",
    "pathlib", "operator", "random", "struct", "array", "copy", "numbers", "decimal", "fractions",
    "bisect", "heapq", "json", "time", "tempfile", "weakref",
}

# --- compute versus plumbing inside forward ---------------------------------------------

ALLOC_FUNCTIONS = {
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full",
    "full_like", "arange", "tensor", "as_tensor", "scalar_tensor", "empty_permuted", "from_numpy",
}
VIEW_FUNCTIONS = {
    "reshape", "flatten", "unflatten", "transpose", "permute", "squeeze", "unsqueeze", "narrow",
    "chunk", "split", "t", "as_strided", "broadcast_to", "movedim", "swapaxes", "swapdims", "unbind",
    "view_as_real", "view_as_complex", "select",
}
META_FUNCTIONS = {
    "is_tensor", "is_floating_point", "is_complex", "numel", "get_default_dtype", "device", "Size",
    "finfo", "iinfo", "promote_types", "result_type", "can_cast", "typename", "is_grad_enabled",
    "get_num_threads", "no_grad", "inference_mode", "enable_grad", "set_grad_enabled", "dtype",
    "Tensor", "is_inference_mode_enabled", "Generator", "get_device", "is_nonzero",
}
DTYPES_LOW = {
    "half", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
    "float8_e5m2fnuz", "int8", "uint8", "qint8", "quint8", "qint32", "int4", "uint4",
}
DTYPES_OTHER = {
    "float32", "float", "float64", "double", "int16", "short", "int32", "int", "int64", "long",
    "bool", "complex64", "complex128", "cfloat", "cdouble", "uint16", "uint32", "uint64",
}
# torch.cuda / torch.npu names a wrapper may use (streams and events are forbidden above).
DEVICE_MODULE_ALLOWED = {
    "is_available", "current_device", "device_count", "device", "current_stream", "default_stream",
    "get_device_properties", "get_device_capability", "get_device_name", "get_arch_list",
    "is_initialized", "memory_allocated", "max_memory_allocated", "memory_reserved", "mem_get_info",
    "nvtx", "utilization", "synchronize", "set_device", "manual_seed", "empty_cache",
}
# Builtin ops namespaces of torch.ops: compute, not the candidate's own extension.
# Every other namespace must be registered by the candidate's own sources to be allowed.

# Tensor methods and what they return in a wrapper; everything else called on a tensor is compute.
TENSOR_METHODS_TENSOR = {
    "contiguous", "view", "view_as", "reshape", "reshape_as", "flatten", "unflatten", "squeeze",
    "unsqueeze", "t", "transpose", "permute", "expand", "expand_as", "narrow", "select", "unbind",
    "split", "chunk", "as_strided", "detach", "requires_grad_", "to", "cuda", "cpu", "npu",
    "movedim", "swapaxes", "swapdims", "unfold", "zero_", "fill_", "new_empty", "new_zeros",
    "new_ones", "new_full", "new_empty_strided", "pin_memory", "detach_", "view_as_real",
    "type", "type_as", "float", "double", "half", "bfloat16", "int", "long", "short", "char", "byte",
    "bool", "clone", "copy_", "resize_", "untyped_storage", "storage",
}
TENSOR_METHODS_SCALAR = {
    "size", "dim", "ndimension", "numel", "nelement", "stride", "data_ptr", "element_size",
    "is_contiguous", "is_floating_point", "is_complex", "get_device", "item", "storage_offset",
    "dim_order", "is_pinned", "is_shared", "is_set_to", "__len__",
}
TENSOR_METHODS_WARN = {
    "clone": ("copy", "clone() makes torch copy the data; write results with the kernel instead"),
    "copy_": ("copy", "copy_() makes torch copy the data; write results with the kernel instead"),
    "resize_": ("resize", "resize_() on a wrapper tensor is unusual; allocate the output once per call"),
    "type_as": ("cast", "type_as() casts data with torch; keep the task dtype or cast inside the kernel"),
}
TENSOR_METHODS_FORBIDDEN = {
    "numpy": ("compute_elsewhere", "x.numpy() hands the data to NumPy; compute in your kernel"),
    "tolist": ("compute_elsewhere", "x.tolist() computes in Python; compute in your kernel"),
    "record_stream": ("stream", "streams are not allowed; launch on the current stream"),
    "set_": ("alias", "set_() makes one tensor alias another; write outputs with the kernel"),
    "share_memory_": ("process", "shared memory is for other processes; not allowed"),
    "register_hook": ("hook", "hooks change what runs around forward; not allowed"),
    "apply_": ("compute", "apply_ runs Python per element; compute in your kernel"),
    "map_": ("compute", "map_ runs Python per element; compute in your kernel"),
    "untyped_storage": ("storage", "raw storage hands the bytes to Python; pass the tensor to your kernel"),
    "storage": ("storage", "raw storage hands the bytes to Python; pass the tensor to your kernel"),
}
CAST_METHODS_LOW = {"half", "bfloat16"}
CAST_METHODS_OTHER = {"float", "double", "int", "long", "short", "char", "byte", "bool"}
TENSOR_ATTRS_SCALAR = {
    "shape", "dtype", "device", "ndim", "is_cuda", "is_npu", "is_cpu", "layout", "requires_grad",
    "is_leaf", "names", "itemsize", "nbytes", "is_sparse", "is_quantized", "is_meta", "is_mkldnn",
}
TENSOR_ATTRS_TENSOR = {"T", "mT", "H", "mH", "real", "imag", "data", "grad"}

# Attributes of nn layers that hold numbers, not tensors (kernel launch parameters).
NN_SCALAR_ATTRS = {
    "in_features", "out_features", "in_channels", "out_channels", "kernel_size", "stride", "padding",
    "dilation", "groups", "eps", "momentum", "num_features", "normalized_shape", "p", "negative_slope",
    "dim", "num_heads", "embed_dim", "head_dim", "hidden_size", "num_layers", "output_size",
    "ceil_mode", "count_include_pad", "padding_mode", "affine", "track_running_stats", "num_groups",
    "training", "inplace", "alpha", "beta", "threshold", "lambd", "min_val", "max_val", "approximate",
    "output_padding", "transposed", "reduction", "ignore_index", "label_smoothing", "start_dim",
    "end_dim", "elementwise_affine", "upscale_factor", "scale_factor", "mode", "align_corners",
}
NN_CONTAINER_CLASSES = {"Module", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"}

# Builtins that compute when handed a tensor.
COMPUTE_BUILTINS = {"sum", "max", "min", "abs", "pow", "round", "divmod", "sorted", "reversed", "any", "all", "map", "filter",
                    "bytes", "bytearray"}
# Builtins that only pass values through (or read metadata).
NEUTRAL_BUILTINS = {
    "isinstance", "issubclass", "len", "print", "repr", "str", "int", "float", "bool", "tuple", "list",
    "dict", "set", "frozenset", "enumerate", "zip", "range", "type", "callable", "hasattr", "iter",
    "next", "super", "slice", "object", "format", "hex", "oct", "bin", "ord", "chr", "NotImplementedError",
    "ValueError", "RuntimeError", "TypeError", "AssertionError", "Exception", "KeyError", "IndexError",
    "staticmethod", "classmethod", "property", "complex",
}
FORBIDDEN_BUILTINS = {
    "__import__": ("dynamic_code", "__import__ hides what is imported; import modules by name"),
    "exec": ("dynamic_code", "exec runs hidden code; write plain code"),
    "eval": ("dynamic_code", "eval runs hidden code; write plain code"),
    "compile": ("dynamic_code", "compile() builds hidden code; write plain code"),
    "globals": ("dynamic_code", "globals() reaches module state by name; write plain code"),
    "locals": ("dynamic_code", "locals() reaches state by name; write plain code"),
    "vars": ("dynamic_code", "vars() reaches state by name; write plain code"),
    "breakpoint": ("dynamic_code", "no debugger in a candidate"),
    "input": ("io", "a candidate cannot read input"),
    "__builtins__": ("module_patch", "do not touch __builtins__"),
    "memoryview": ("native_code", "raw memory views are not allowed in a candidate"),
}
FORBIDDEN_ATTRIBUTES = {
    "__dict__": "introspection", "__class__": "introspection", "__bases__": "introspection",
    "__mro__": "introspection", "__subclasses__": "introspection", "__globals__": "introspection",
    "__code__": "introspection", "__closure__": "introspection", "__builtins__": "module_patch",
    "__getattribute__": "introspection", "__setattr__": "module_patch", "__delattr__": "module_patch",
    "__torch_function__": "tensor_subclass", "__torch_dispatch__": "tensor_subclass",
    "_make_subclass": "tensor_subclass", "_make_wrapper_subclass": "tensor_subclass",
    "__reduce__": "dynamic_code", "__reduce_ex__": "dynamic_code", "__self__": "introspection",
    "__func__": "introspection", "__wrapped__": "introspection", "__loader__": "dynamic_code",
    "__spec__": "dynamic_code", "__import__": "dynamic_code", "__new__": "tensor_subclass",
    "f_back": "introspection", "f_globals": "introspection", "f_locals": "introspection",
    "write_text": "file_access", "write_bytes": "file_access", "unlink": "file_access",
    "rmdir": "file_access", "touch": "file_access", "symlink_to": "file_access",
    "hardlink_to": "file_access", "rmtree": "file_access",
    "register_forward_hook": "hook", "register_forward_pre_hook": "hook",
    "register_full_backward_hook": "hook", "register_backward_hook": "hook",
    "register_module_forward_hook": "hook", "register_module_forward_pre_hook": "hook",
    "__torch_function_mode__": "tensor_subclass",
}
TENSOR_BASES = {"torch.Tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch._C.TensorBase",
                "torch._C._TensorBase", "torch.nn.Buffer"}


def lookup_prefix(table: dict[str, tuple[str, str]], path: str) -> tuple[str, str] | None:
    """The entry of the longest key that is `path` or a dotted prefix of it."""
    parts = path.split(".")
    for end in range(len(parts), 0, -1):
        hit = table.get(".".join(parts[:end]))
        if hit is not None:
            return hit
    return None
