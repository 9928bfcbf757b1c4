"""Backend registry: one module per backend (cpu, cuda, npu) behind one protocol."""
