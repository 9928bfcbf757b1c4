"""Kernel evaluation: devices, backends (npu, cuda, cpu), the sandbox, the verifier and
profiler gates, task loading and size fitting, and device-pinned actor pools.

May import: nothing of ours (bottom layer beside memory_actor). Never imports launch.
"""
