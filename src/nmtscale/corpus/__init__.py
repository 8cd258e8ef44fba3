"""The offline En/De/Fr/Zh corpus built from Debian packages: loading API (see `store`) and builder."""

from nmtscale.corpus.store import (
    corpus_fingerprint,
    load_monolingual,
    load_multiway,
    load_pairs,
    load_test_set,
    originality,
    read_parallel,
    test_set_names,
)

__all__ = [
    "corpus_fingerprint",
    "load_monolingual",
    "load_multiway",
    "load_pairs",
    "load_test_set",
    "originality",
    "read_parallel",
    "test_set_names",
]
