"""`evokernel export`: a run's kernels as files of their own (EvoKernel's, KernelBench's or CANN's layout)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from launch.cli import UsageError
from launch.config import Settings


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "export", help="copy a run's kernels out (EvoKernel, KernelBench or CANN layout)",
        description="Copy the kernels a run kept (RUN_DIR/kernels/) into DIR. The kernelbench layout "
                    "writes level_<L>_problem_<N>_sample_0_kernel.py ModelNew files, the names "
                    "KernelBench's eval_from_generations.py reads; the cann layout writes each Ascend C "
                    "kernel as a CANN kernel launch project, DIR/<task>/ (bash run.sh on an Ascend "
                    "machine). (A memory bank's items: `evokernel memory export`.)")
    parser.add_argument("run_dir", metavar="RUN_DIR", type=Path, help="run folder of `evokernel run`")
    parser.add_argument("--out", type=Path, metavar="DIR", required=True, help="where to write")
    parser.add_argument("--layout", choices=["evokernel", "kernelbench", "cann"], default="evokernel",
                        help="evokernel (default): sources and ModelNew files by task; kernelbench: one "
                             "ModelNew file per problem, named as KernelBench's scripts expect; cann: each "
                             "Ascend C kernel as a CANN kernel launch project (CMake, host program, data)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--best", dest="which", action="store_const", const="best",
                       help="each operator's fastest feasible kernel (default)")
    which.add_argument("--first", dest="which", action="store_const", const="first",
                       help="each operator's first feasible kernel")
    parser.set_defaults(handler=run_export, which="best")


def run_export(args: argparse.Namespace, settings: Settings) -> int:
    from launch.kernel_export import ExportError, export_kernels

    if not args.run_dir.is_dir():
        raise UsageError(f"not a run folder: {args.run_dir}")
    if args.out.resolve() == args.run_dir.resolve() or args.out.resolve() == (args.run_dir / "kernels").resolve():
        raise UsageError(f"--out {args.out} is the run folder or its kernels/: choose another folder")
    try:
        done = export_kernels(args.run_dir, args.out, args.layout, args.which)
    except ExportError as exc:
        print(f"evokernel export: {exc}", file=sys.stderr)
        return 1
    for reason in done.skipped:
        print(f"skipped {reason}", file=sys.stderr)
    print(f"wrote {len(done.written)} file(s) of the {args.which} kernels to {args.out} ({args.layout} layout)")
    return 0 if done.written or not done.skipped else 1
