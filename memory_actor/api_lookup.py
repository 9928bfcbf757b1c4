"""API knowledge is not ranked by value: a backend's core bundle items, plus the API items whose
exact names appear in the retrieved code."""

from __future__ import annotations

import re
from collections.abc import Iterable


class ApiNameIndex:
    """API item ids by backend and name; one compiled pattern per backend finds names in code."""

    def __init__(self) -> None:
        self.by_name: dict[str, dict[str, str]] = {}
        self.core: dict[str, list[str]] = {}
        self._patterns: dict[str, re.Pattern[str] | None] = {}

    def add(self, backend: str, item_id: str, name: str | None, core: bool) -> None:
        if name:
            self.by_name.setdefault(backend, {})[name] = item_id
            self._patterns.pop(backend, None)
        ids = self.core.setdefault(backend, [])
        if core and item_id not in ids:
            ids.append(item_id)

    def _pattern(self, backend: str) -> re.Pattern[str] | None:
        if backend not in self._patterns:
            names = sorted(self.by_name.get(backend, {}), key=len, reverse=True)
            self._patterns[backend] = (
                re.compile("|".join(rf"(?<!\w){re.escape(name)}(?![\w])" for name in names)) if names else None
            )
        return self._patterns[backend]

    def names_in(self, backend: str, texts: Iterable[str]) -> list[str]:
        """API names of `backend` used in `texts`, in order of first use."""
        pattern = self._pattern(backend)
        if pattern is None:
            return []
        found: dict[str, None] = {}
        for text in texts:
            for match in pattern.finditer(text):
                found.setdefault(match.group(0), None)
        return list(found)

    def lookup(self, backend: str, names: Iterable[str]) -> list[str]:
        table = self.by_name.get(backend, {})
        return [table[name] for name in dict.fromkeys(names) if name in table]
