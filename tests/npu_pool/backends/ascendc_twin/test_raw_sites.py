"""Each twin build resolves its raw accesses' kernel lines before the sandbox's seal
(raw_sites.py), so a fault in a sealed run, where no addr2line may be started, still names its line."""

from __future__ import annotations

from npu_pool.backends.ascendc_twin.raw_sites import call_returns, kernel_lines
from tests.npu_pool.backends.ascendc_twin.twin_support import CANDIDATE_KERNELS as KERNELS
from tests.npu_pool.backends.ascendc_twin.twin_support import line_of

DISASSEMBLY = """
0000000000007c90 <kernel>:
    7c97:\tcall   7320 <__asan_store8_noabort@plt>
    7c9c:\tmov    %rax,%rdi
    7ca0:\tcall   7400 <memcpy@plt>
    7ca5:\tbl\t7650 <__asan_load4_noabort@plt>
    7ca9:\tret
"""
ADDR2LINE = """0x0000000000007c9b
twin_core.h:88
/tmp/work/kernel.cpp:48 (discriminator 2)
0x0000000000007ca8
/tmp/work/kernel_unit.cpp:0
??:0
"""


def test_the_instrumentation_calls_return_addresses_and_their_kernel_lines_are_read():
    assert call_returns(DISASSEMBLY) == [0x7c9c, 0x7ca9]
    # the innermost kernel.cpp frame of an inline chain; an address without one has no line
    assert kernel_lines(ADDR2LINE) == {0x7c9b: 48}


def test_a_twin_build_writes_the_table_of_its_raw_accesses(built):
    """v3's ReLU6 stores through a raw pointer: its table names that store's line."""
    artifact = built["relu6_v3_every_block"]
    table = artifact.with_name(artifact.name + ".sites").read_text().split()
    lines = {int(number) for number in table[1::2]}
    assert line_of(KERNELS / "relu6_v3_every_block.cpp", "out_ptr[off] =") in lines
