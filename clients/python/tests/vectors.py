"""Loads the shared test vectors (contracts/vectors of the belfry repository, or $BELFRY_VECTORS)."""

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
VECTORS = os.environ.get("BELFRY_VECTORS") or os.path.normpath(os.path.join(HERE, "..", "..", "..", "contracts", "vectors"))


def load(name):
    with open(os.path.join(VECTORS, name), encoding="utf-8") as f:
        return json.load(f)
