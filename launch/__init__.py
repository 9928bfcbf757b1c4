"""The top layer: the `evokernel` CLI, the one configuration model, logging setup,
campaigns over many operators, and reports.

May import every other package; nothing else imports it.
"""

__version__ = "0.1.0"
