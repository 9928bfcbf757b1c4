"""One module per `evokernel` subcommand; each exposes `register(subparsers)`. `run`'s parts
beside it: `run_prepare` (its checks and plan), `run_resume` (a resume's settings) and
`run_outcome` (what it says at its end)."""
