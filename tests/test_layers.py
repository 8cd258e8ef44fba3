"""The package's layering, read from the source: a study's modules import only from the layers before them,
and no study imports the trainer (studies read records; `runs` trains)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import nmtscale.studies

STUDIES = Path(nmtscale.studies.__file__).parent
# within a study: what to run, how to make and score its data, what it measures, whether its scale lets
# effects show, what it draws, how it is judged
LAYER_ORDER = ["plan", "synthetic", "evaluation", "analysis", "gates", "charts", "verdicts"]
STUDY_PACKAGES = sorted(p.parent.name for p in STUDIES.glob("*/__init__.py"))


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def test_every_chapter_study_is_a_package():
    assert STUDY_PACKAGES == ["architectures", "bivariate", "composition", "multilingual"]


@pytest.mark.parametrize("study", STUDY_PACKAGES)
def test_a_study_layer_imports_only_the_layers_before_it(study):
    for path in sorted((STUDIES / study).glob("*.py")):
        if path.name == "__init__.py":
            continue
        assert path.stem in LAYER_ORDER, f"{path}: not a known layer {LAYER_ORDER}"
        prefix = f"nmtscale.studies.{study}."
        used = {m[len(prefix) :].split(".")[0] for m in imported_modules(path) if m.startswith(prefix)}
        later = [layer for layer in used if LAYER_ORDER.index(layer) >= LAYER_ORDER.index(path.stem)]
        assert later == [], f"{path} imports from {later}"


def test_no_study_imports_the_trainer():
    for path in STUDIES.rglob("*.py"):
        trainer = [
            m for m in imported_modules(path) if m == "nmtscale.train" or m.startswith("nmtscale.train.")
        ]
        assert trainer == [], f"{path} imports {trainer}"
