#!/usr/bin/env bash
# The wheelhouse a cluster's setup commands install from (examples/cluster-cpu.yaml copies it
# to every node with file_mounts): wheels of every package a node needs, at the versions
# installed in this machine's .venv, so nodes need no package index and match this machine.
#
#   bash scripts/cluster_wheelhouse.sh [OUT]     default OUT: ~/.cache/evokernel/wheelhouse
#
# Packages come from wherever this machine's pip looks (its index, find-links, caches); a
# second run only adds what is missing, and one with the same .venv and pyproject.toml as the
# last complete run returns at once (a stamp in OUT). Env: EVOKERNEL_VENV (default .venv).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${EVOKERNEL_VENV:-.venv}
out=${1:-$HOME/.cache/evokernel/wheelhouse}
mkdir -p "$out"
constraints=$(mktemp)
trap 'rm -f "$constraints"' EXIT
# The versions of this environment, as constraints (the project itself is installed on the
# node from its own copy; llama.cpp's server is not a node requirement).
"$venv/bin/python" -m pip freeze --exclude-editable | grep -v -i -e '^evokernel' -e ' @ ' > "$constraints"
stamp=$(cat "$constraints" pyproject.toml | sha256sum | cut -d' ' -f1)
if [ "$(cat "$out/.complete" 2>/dev/null)" = "$stamp" ]; then
    echo "cluster_wheelhouse: up to date, $(ls "$out" | wc -l) files, $(du -sh "$out" | cut -f1) in $out"
    exit 0
fi
# The project's requirements, Ray (the version `ray up` needs on the nodes) and what an
# editable install of the project builds with (pyproject.toml's build-system).
"$venv/bin/python" -m pip download --quiet --dest "$out" --constraint "$constraints" --prefer-binary \
    setuptools wheel "ray[default]==2.60.0" .
echo "$stamp" > "$out/.complete"
echo "cluster_wheelhouse: $(ls "$out" | wc -l) files, $(du -sh "$out" | cut -f1) in $out"
