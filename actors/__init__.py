"""The agent half of EvoKernel: drafter, refiner, the episode loop, the LLM client and prompts.

An episode asks memory_actor for context, a drafter or refiner for a candidate and
npu_pool for a verdict, then sends the reward back to memory.

May import: memory_actor, npu_pool. Never imports launch.
"""
