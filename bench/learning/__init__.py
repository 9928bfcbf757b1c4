"""The learning benchmark (docs/learning_benchmark.md), one module per step of its design:

- plan.py: the pool, the arms, the command line, the estimate, plan.json;
- screening.py (with reuse.py): cold drafts, the band, held-out operators and curriculum;
- learning_pass.py: each arm's online campaign over the curriculum, building its bank;
- evaluation.py: fresh drafts against each arm's frozen bank;
- stats.py, power.py: the exact tests and intervals; the design's simulated power;
- summary.py, publish.py: the tables (summary.md/.json) and their copy in bench/results/;
- resume.py: the model, the settings and the interruptible run a rerun resumes;
- archive.py: a published run's raw state (pack, unpack, re-derive its tables);
- cli.py: `python -m bench.learning`.
"""
