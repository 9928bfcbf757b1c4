"""One module per `evokernel` subcommand; each exposes `register(subparsers)`."""
