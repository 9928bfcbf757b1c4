"""The value-driven memory: item schema, LanceDB store, embeddings, two-phase
retrieval, Monte-Carlo value updates, and the central Ray actor serving them.

May import: nothing of ours (it is the bottom layer beside npu_pool). Never imports launch.
"""
