"""The book: execute chapters with papermill at a chosen scale, build the HTML offline, check it in Chromium.

Chapters are Jupytext percent-format notebooks ``book/<chapter>.py``; ``params/<chapter>/<scale>.yaml``
holds the values injected into each chapter's ``parameters`` cell. The executed notebooks of the default
``cpu`` scale are committed under ``book/_executed/`` (what ``_toc.yml`` lists); every other scale lives
under ``_build/<scale>/``, in a copy of the book's sources, so a smoke or GPU run never overwrites the
committed results.

Commands (run from the repository root)::

    python -m nmtscale book run [--scale S] [--chapter NAME ...] [-p KEY VALUE ...]
    python -m nmtscale book html [--scale S]
    python -m nmtscale book check [--scale S]
"""

from __future__ import annotations

import argparse
import ast
import html.parser
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from nmtscale.config import parse_yaml, read_yaml
from nmtscale.errors import ConfigurationError, closest

CHAPTERS = (
    "01_bivariate_laws",
    "02_composition_bias",
    "03_lm_vs_encdec",
    "04_multilingual_laws",
    "appendix_fitting",
    "api",
)
# Chapters whose claims tables the scorecard counts (the API appendix makes no claims).
CLAIM_CHAPTERS = CHAPTERS[:5]
# The scorecard is read first (the page after the introduction) but executed last: it reads the chapters'
# executed notebooks.
SCORECARD = "scorecard"
PAGES = (SCORECARD, *CHAPTERS)
EXECUTION_ORDER = (*CHAPTERS, SCORECARD)
SCALES = ("smoke", "cpu", "gpu")
DEFAULT_SCALE = "cpu"
# Every chapter's parameters cell defines these, so one params file layout serves the whole book.
SHARED_PARAMETERS = ("scale", "seed", "workers", "threads_per_run", "runs_dir", "results_dir")
KERNEL_NAME = "python3"
EXECUTED_DIR = Path("book/_executed")
# Pages that are not executed notebooks; a non-default scale's book copies them beside its own notebooks.
STATIC_PAGES = ("_config.yml", "_toc.yml", "book/intro.md", "_static/nmtscale.css")
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
)
# Virtual time lets vega finish drawing before Chromium dumps the page, without waiting in real time.
CHROMIUM_VIRTUAL_TIME_MS = 20000


class ChapterFailed(RuntimeError):
    """A chapter's notebook raised; the message names the chapter, the cell and the saved notebook."""


def book_source(scale: str, root: Path = Path(".")) -> Path:
    """The folder holding the book's sources for `scale`: the repository itself for the default scale."""
    _check_scale(scale)
    return root if scale == DEFAULT_SCALE else root / "_build" / scale / "source"


def executed_notebook(chapter: str, scale: str, root: Path = Path(".")) -> Path:
    """Where the executed notebook of `chapter` at `scale` lives (the page the book shows)."""
    return book_source(scale, root) / EXECUTED_DIR / f"{chapter}.ipynb"


def html_dir(scale: str, root: Path = Path(".")) -> Path:
    """Where `build_html` writes the HTML book of `scale`."""
    return _html_output(scale, root) / "_build" / "html"


def _parameter_assignments(chapter: str, root: Path) -> tuple[str, list[tuple[str, int]]]:
    """The source of the cell tagged ``parameters`` of ``book/<chapter>.py`` and each name it assigns, with
    the line (in the cell) of its assignment."""
    import jupytext

    source = _chapter_source(chapter, root)
    for cell in jupytext.read(source).cells:
        if "parameters" in cell.metadata.get("tags", []):
            tree = ast.parse(cell.source, filename=str(source))
            return cell.source, [
                (target.id, node.lineno)
                for node in tree.body
                if isinstance(node, ast.Assign | ast.AnnAssign)
                for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
                if isinstance(target, ast.Name)
            ]
    raise ConfigurationError(f"{source}: no cell tagged 'parameters' (# %% tags=[\"parameters\"])")


def parameters_cell_names(chapter: str, root: Path = Path(".")) -> list[str]:
    """The names assigned in the cell tagged ``parameters`` of ``book/<chapter>.py``."""
    return [name for name, _ in _parameter_assignments(chapter, root)[1]]


def parameters_table(chapter: str, namespace: Mapping[str, Any], root: Path = Path(".")):
    """The parameters a chapter was executed with, as one table for the reader (pass `globals()`): each
    name of its ``parameters`` cell, the value in force (papermill's, from ``params/<chapter>/<scale>.yaml``)
    and what it means (the comment on its line, else the comment lines just above it in the cell). The
    executed page drops the two parameter cells themselves (`fold_code_cells`), so they are shown once."""
    import io
    import tokenize

    from IPython.display import HTML

    cell, assignments = _parameter_assignments(chapter, root)
    comments = {
        token.start[0]: token.string.lstrip("# ").strip()
        for token in tokenize.generate_tokens(io.StringIO(cell).readline)
        if token.type == tokenize.COMMENT
    }
    code_lines = {line for _, line in assignments}
    rows = []
    for name, line in assignments:
        meaning = comments.get(line)
        if meaning is None:  # the comment block directly above the assignment
            above, previous = [], line - 1
            while previous in comments and previous not in code_lines:
                above.insert(0, comments[previous])
                previous -= 1
            meaning = " ".join(above)
        value = yaml.safe_dump(namespace[name], default_flow_style=True, width=10**6).strip()
        rows.append(
            f"<tr><td>{html.escape(name)}</td><td><code>{html.escape(value.removesuffix('...').strip())}"
            f"</code></td><td>{html.escape(meaning)}</td></tr>"
        )
    scale = namespace.get("scale", "")
    return HTML(
        f"<details><summary>the {len(rows)} parameters of this execution (scale {html.escape(str(scale))})"
        "</summary><table><thead><tr><th>parameter</th><th>value</th><th>meaning</th></tr>"
        f"</thead><tbody>{''.join(rows)}</tbody></table></details>"
    )


def chapter_parameters(chapter: str, namespace: Mapping[str, Any], root: Path = Path(".")) -> dict[str, Any]:
    """A chapter's parameters as its notebook holds them once papermill has set them (pass `globals()`): the
    mapping the study packages' plan functions take, so the chapter and its package plan the same runs."""
    return {name: namespace[name] for name in parameters_cell_names(chapter, root)}


def load_parameters(chapter: str, scale: str, overrides: dict | None = None, root: Path = Path(".")) -> dict:
    """The parameters for one chapter run: ``params/<chapter>/<scale>.yaml`` updated by `overrides`.

    Every key must be a name of the chapter's parameters cell, the shared keys must all be there, and the
    file's ``scale`` must be its own scale; anything else raises ConfigurationError naming the file and key.
    """
    _check_scale(scale)
    names = parameters_cell_names(chapter, root)
    path = root / "params" / chapter / f"{scale}.yaml"
    if not path.is_file():
        raise ConfigurationError(f"{path}: missing; every chapter needs params for the scales {list(SCALES)}")
    params = read_yaml(path)
    if not isinstance(params, dict):
        raise ConfigurationError(f"{path}: expected a mapping of parameter names to values")

    for key in params:
        if key not in names:
            raise ConfigurationError(
                f"{path}: key {key!r} is not a parameter of book/{chapter}.py{closest(str(key), names)}"
            )
    for key in SHARED_PARAMETERS:
        if key not in params:
            raise ConfigurationError(
                f"{path}: missing key {key!r} (every chapter sets {list(SHARED_PARAMETERS)})"
            )
    if params["scale"] != scale:
        raise ConfigurationError(f"{path}: key 'scale' is {params['scale']!r}, expected {scale!r}")
    for key, value in (overrides or {}).items():
        if key not in names:
            raise ConfigurationError(
                f"-p {key}: not a parameter of book/{chapter}.py{closest(key, names)}; it has {names}"
            )
        if key in params and not _same_kind(value, params[key]):
            raise ConfigurationError(
                f"-p {key} {value!r}: {path} sets it to {params[key]!r}; give a value of that kind"
            )
    return {**params, **(overrides or {})}


def study_parameters(
    chapter: str, scale: str, names: Sequence[str], overrides: dict | None = None, root: Path = Path(".")
) -> dict:
    """A chapter's parameters at `scale` (`load_parameters`) as its study package's plan functions take them,
    for code outside the notebook (scripts, benchmarks, tests): the keys in `names` (the package's
    ``PARAMETER_NAMES``), and, for a chapter that takes chapter 1's recipe (a ``chapter1_overrides``
    parameter), chapter 1's parameters at the same scale, changed by those overrides, under ``"chapter1"``,
    as the notebook nests them."""
    params = load_parameters(chapter, scale, overrides, root)
    study = {key: value for key, value in params.items() if key in names}
    if "chapter1_overrides" in params:
        study["chapter1"] = load_parameters(CHAPTERS[0], scale, params["chapter1_overrides"], root)
    return study


def _same_kind(value, reference) -> bool:
    """Whether a -p value can stand where the params file has `reference`: the same YAML kind (an integer
    may stand for a number; null in the file, or a null value, accepts anything)."""
    if reference is None or value is None:
        return True
    if isinstance(reference, bool) or isinstance(value, bool):
        return isinstance(value, bool) and isinstance(reference, bool)
    if isinstance(reference, float):
        return isinstance(value, int | float)
    for kind in (int, str, list, dict):
        if isinstance(reference, kind):
            return isinstance(value, kind)
    return True


def run_chapter(chapter: str, scale: str, overrides: dict | None = None, root: Path = Path(".")) -> Path:
    """Execute one chapter with papermill at `scale` and return the executed notebook's path.

    The notebook runs in `root` (so ``runs/`` and ``cache/`` are shared by all chapters) and is written
    first to ``_build/<scale>/work/``; only a notebook that ran to the end replaces the one the book shows.
    A failing cell raises ChapterFailed naming the chapter and the cell.
    """
    import jupytext
    import papermill

    parameters = load_parameters(chapter, scale, overrides, root)
    notebook = jupytext.read(_chapter_source(chapter, root))
    notebook.metadata["kernelspec"] = {"name": KERNEL_NAME, "display_name": "Python 3", "language": "python"}
    work = root / "_build" / scale / "work" / f"{chapter}.ipynb"
    work.parent.mkdir(parents=True, exist_ok=True)
    try:
        papermill.execute_notebook(
            notebook,
            work,
            parameters=parameters,
            kernel_name=KERNEL_NAME,
            cwd=root,
            progress_bar=False,
        )
    except papermill.PapermillExecutionError as err:
        raise ChapterFailed(
            f"chapter {chapter} (scale {scale}) failed in cell {err.cell_index} (In [{err.exec_count}]): "
            f"{err.ename}: {err.evalue}; the notebook with the traceback is {work}"
        ) from err
    fold_code_cells(work)
    executed = executed_notebook(chapter, scale, root)
    executed.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(work, executed)
    return executed


PARAMETER_TAGS = {"parameters", "injected-parameters"}


def fold_code_cells(notebook_path: Path) -> None:
    """Tag every code cell of an executed notebook `hide-input`: the book shows the outputs and prose, and
    each cell's code stays one click away (Jupyter Book's "Show code cell source" toggle). The two parameter
    cells are removed from the page (`remove-cell`): the chapter shows its `parameters_table` instead."""
    import nbformat

    notebook = nbformat.read(notebook_path, as_version=4)
    for cell in notebook.cells:
        tags = cell.metadata.setdefault("tags", [])
        if cell.cell_type == "code" and "hide-input" not in tags:
            tags.append("hide-input")
        # the defaults and papermill's values: `parameters_table` shows the values in force once
        if PARAMETER_TAGS & set(tags) and "remove-cell" not in tags:
            tags.append("remove-cell")
    nbformat.write(notebook, notebook_path)


# What a reader should never find in a page's outputs: a warning, a traceback or a path of the machine that
# executed it (a path is meaningless elsewhere and says where someone's files live).
OUTPUT_NOISE = {
    "warning": re.compile(r"\b\w*Warning: "),
    "traceback": re.compile(r"Traceback \(most recent call last\)"),
    "absolute path": re.compile(r"(?<![\w.~/:])/(?:[\w.-]+/){2,}[\w.-]*|\b[A-Z]:\\\w"),
}


def output_noise(notebook_path: Path) -> list[str]:
    """Warnings, tracebacks and absolute paths in the outputs of an executed notebook: one line per finding,
    naming the cell (counted from 1 among all cells) and quoting what was found."""
    import nbformat

    notebook = nbformat.read(notebook_path, as_version=4)
    found = []
    for number, cell in enumerate(notebook.cells, start=1):
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                found.append(f"{notebook_path.name} cell {number}: error output {output.ename}")
                continue
            text = output.get("text", "") if output.output_type == "stream" else ""
            for kind in ("text/plain", "text/html", "text/markdown"):
                text += "".join(output.get("data", {}).get(kind, ""))
            for name, pattern in OUTPUT_NOISE.items():
                match = pattern.search(text)
                if match:
                    quoted = text[max(0, match.start() - 40) : match.end() + 40].replace("\n", " ")
                    found.append(f"{notebook_path.name} cell {number}: {name}: ...{quoted}...")
    return found


def pages_noise(scale: str = DEFAULT_SCALE, root: Path = Path(".")) -> list[str]:
    """`output_noise` of every executed page of the book at `scale`."""
    return [line for page in PAGES for line in output_noise(executed_notebook(page, scale, root))]


MISSING = "—"  # how the chapters' tables show a missing value (NaN)


def reader_number(x: float) -> str:
    """How the chapters' tables print a float: at most four significant digits, written out between 1e-4 and
    1e6 (with thousands separators, without trailing zeros, so a rounded 0.002 stays 0.002), so a column never
    mixes `8.3122e-02` with `0.1019`; an exponent only outside. A missing value reads "—" and an infinite
    one (a scale-up a law never reaches, a ratio to 0) "not determined"."""
    if math.isnan(x):
        return MISSING
    if math.isinf(x):
        return "not determined"
    if x == 0:
        return "0"
    if not 1e-4 <= abs(x) < 1e6:
        return f"{x:.3e}"
    decimals = max(0, 3 - math.floor(math.log10(abs(x))))
    written = f"{x:,.{decimals}f}"
    return written.rstrip("0").rstrip(".") if "." in written else written


def show_tables_for_readers() -> None:
    """The table display of every chapter: floats by `reader_number`, and in a notebook each DataFrame drawn
    by `reader_table_html`."""
    import pandas as pd
    from IPython import get_ipython

    pd.set_option("display.width", 200, "display.max_columns", 30, "display.float_format", reader_number)
    shell = get_ipython()
    if shell is not None:
        shell.display_formatter.formatters["text/html"].for_type(pd.DataFrame, reader_table_html)


# A table longer than this shows its first SHOWN_ROWS rows, and the whole table folded below them.
LONG_TABLE_ROWS = 20
SHOWN_ROWS = 8
# How many characters of the tables' small type fit the text column (COLUMN_WIDTH_PX at about 6.6 px a
# character, cell padding included): a wider table is shown as several, each with the row labels.
TABLE_WIDTH_CHARS = 110


def _column_chars(label, values) -> int:
    """Characters a column takes: its longest value or the longest piece of its name (names wrap after an
    underscore and between the levels of a column MultiIndex), plus about two for the cell's padding."""
    labels = label if isinstance(label, tuple) else (label,)
    name = max((len(piece) for part in labels for piece in str(part).split("_")), default=0)
    written = [reader_number(v) if isinstance(v, float) else str(v) for v in values]
    return max([name, *map(len, written)]) + 2


def column_groups(frame, width: int = TABLE_WIDTH_CHARS) -> list[list[int]]:
    """The positions of `frame`'s columns split, in order, into groups each about `width` characters wide
    beside its row labels (`_column_chars`); one group when the whole table fits, one column a group at the
    least."""
    import pandas as pd

    index = 0
    if not isinstance(frame.index, pd.RangeIndex):
        names = [str(n) for n in frame.index.names if n is not None]
        index = max([*map(len, names), *(len(str(v)) for v in frame.index)], default=0) + 2
    groups: list[list[int]] = [[]]
    used = index
    for position, label in enumerate(frame.columns):
        chars = _column_chars(label, frame.iloc[:, position])
        if groups[-1] and used + chars > width:
            groups.append([])
            used = index
        groups[-1].append(position)
        used += chars
    return groups


def reader_table_html(frame) -> str:
    """A DataFrame as the book shows it: without a row-number index (one that only counts rows takes a column
    and says nothing), floats by `reader_number`, column names that may wrap after an underscore (a zero-width
    space there), a table wider than the text column as several tables of its columns in turn (each with the
    row labels, `column_groups`), and a long table as its first rows with the whole table folded in a
    <details> element, so a page is not a wall of numbers."""
    import pandas as pd

    def breakable(label):
        return label.replace("_", "_\u200b") if isinstance(label, str) else label

    def html(rows) -> str:
        return "".join(
            rows.iloc[:, group]
            .rename(columns=breakable)
            .to_html(
                index=not isinstance(frame.index, pd.RangeIndex),
                notebook=True,
                float_format=reader_number,
                na_rep=MISSING,
                classes="reader",
            )
            for group in column_groups(frame)
        )

    if len(frame) <= LONG_TABLE_ROWS:
        return html(frame)
    return (
        f"{html(frame.head(SHOWN_ROWS))}<details><summary>all {len(frame)} rows of this table</summary>"
        f"{html(frame)}</details>"
    )


def stale_chapters(
    scale: str = DEFAULT_SCALE, root: Path = Path("."), chapters: tuple[str, ...] = PAGES
) -> list[str]:
    """Chapters whose executed notebook at `scale` was not made from the current ``book/<chapter>.py``:
    its cells differ from the source's (papermill's injected parameters aside), so the page is out of date."""
    import jupytext
    import nbformat

    def cells(notebook) -> list[tuple[str, str]]:
        return [
            (cell.cell_type, cell.source)
            for cell in notebook.cells
            if "injected-parameters" not in cell.metadata.get("tags", [])
        ]

    return [
        chapter
        for chapter in chapters
        if executed_notebook(chapter, scale, root).is_file()
        and cells(jupytext.read(_chapter_source(chapter, root)))
        != cells(nbformat.read(executed_notebook(chapter, scale, root), as_version=4))
    ]


def chapter_title(chapter: str, root: Path = Path(".")) -> str:
    """The title of ``book/<chapter>.py``: its first level-one markdown heading."""
    source = _chapter_source(chapter, root)
    for line in source.read_text(encoding="utf-8").splitlines():
        if line.startswith("# # "):
            return line[4:].strip()
    raise ConfigurationError(f"{source}: no title (a markdown cell starting '# # ')")


def chapter_claims(scale: str = DEFAULT_SCALE, root: Path = Path(".")) -> dict[str, list]:
    """Every claim each chapter's executed notebook at `scale` shows, by chapter (for the scorecard).
    Chapters not executed at this scale are left out; a notebook without its claims table is an error."""
    from nmtscale.studies.claims import notebook_claims

    return {
        chapter: notebook_claims(executed_notebook(chapter, scale, root))
        for chapter in CLAIM_CHAPTERS
        if executed_notebook(chapter, scale, root).is_file()
    }


def build_html(scale: str = DEFAULT_SCALE, root: Path = Path(".")) -> Path:
    """Build the HTML book of `scale` from the executed notebooks already present (no training).

    Returns the HTML folder. Writes the vega bundle the charts need into the book's ``_static/``.
    """
    from nmtscale.charts import write_vega_bundle

    source = book_source(scale, root)
    if source != root:
        for page in STATIC_PAGES:
            (source / page).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(root / page, source / page)
    missing = [c for c in PAGES if not executed_notebook(c, scale, root).is_file()]
    if missing:
        raise ConfigurationError(
            f"{source / EXECUTED_DIR}: no executed notebook for {missing}; "
            f"run `python -m nmtscale book run --scale {scale}` first"
        )
    stale = stale_chapters(scale, root)
    if stale:
        print(
            f"warning: the executed notebooks of {stale} were made from older sources; "
            f"re-run them with `python -m nmtscale book run --scale {scale} --chapter NAME`",
            file=sys.stderr,
        )
    write_vega_bundle(source / "_static")
    write_mathjax(source / "_extra")
    jupyter_book = Path(sys.executable).parent / "jupyter-book"
    command = [
        str(jupyter_book),
        "build",
        str(source),
        "--path-output",
        str(_html_output(scale, root)),
        "--all",
    ]
    if subprocess.run(command).returncode != 0:
        raise RuntimeError(f"jupyter-book build of {source} failed (its messages are above)")
    return html_dir(scale, root)


def write_mathjax(extra_dir: Path) -> Path:
    """Copy MathJax 3's self-contained SVG build into `extra_dir`/mathjax/, where ``_config.yml``'s
    ``mathjax_path`` expects it, so the book's formulas render without a network."""
    import mathjax  # the django-static-mathjax wheel: MathJax's files, nothing of Django

    path = extra_dir / "mathjax" / "tex-svg.js"
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(Path(mathjax.__file__).parent / "static" / "mathjax" / "es5" / "tex-svg.js", path)
    return path


def toc_pages(toc: Path) -> list[str]:
    """Every page a Jupyter Book ``_toc.yml`` lists, as paths without extension, in reading order."""
    entries = yaml.safe_load(toc.read_text(encoding="utf-8"))
    pages = [entries["root"]]

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if "file" in node:
                pages.append(node["file"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk({k: v for k, v in entries.items() if k != "root"})
    return pages


# The window the check lays pages out in, and the text column (the article's content box, the width a cell's
# output may take) of the book's theme there; each page's own column is measured, this is the default.
CHECK_WINDOW = "1400,2000"
COLUMN_WIDTH_PX = 772


@dataclass
class PageCheck:
    """What Chromium shows on one page: its charts and formulas, how many of each were drawn, and how wide its
    charts and tables are against the text column."""

    page: Path
    charts: int
    charts_drawn: int
    formulas: int
    formulas_typeset: int
    chart_widths: tuple[int, ...] = ()  # the drawn width of each chart, pixels
    table_widths: tuple[int, ...] = ()  # the laid-out width of each table in the article, pixels
    column_px: int = COLUMN_WIDTH_PX  # the text column's width as measured on the page

    @property
    def complete(self) -> bool:
        return self.charts_drawn == self.charts and self.formulas_typeset == self.formulas

    @property
    def too_wide(self) -> list[int]:
        """The widths of the charts wider than the text column."""
        return [w for w in self.chart_widths if w > self.column_px]

    @property
    def tables_too_wide(self) -> list[int]:
        """The widths of the tables wider than the text column (they scroll sideways)."""
        return [w for w in self.table_widths if w > self.column_px]


# Appended to a copy of a page by `chromium_layout`: after the layout, it writes the text column's width and
# every table's into a <meta> element, which the dumped DOM then carries.
LAYOUT_PROBE = """<script>
window.addEventListener("load", () => {
  const article = document.querySelector("article") || document.body;
  const style = getComputedStyle(article);
  const column = article.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  const tables = [...article.querySelectorAll("table")].map((t) => t.getBoundingClientRect().width);
  const probe = document.createElement("meta");
  probe.name = "nmtscale-layout";
  probe.content = JSON.stringify({ column: Math.round(column), tables: tables.map(Math.round) });
  document.head.appendChild(probe);
});
</script>"""


def chart_widths(dom: str) -> tuple[int, ...]:
    """The drawn width of every vega chart in a page's rendered DOM: that of its ``<svg class="marks">``."""
    return tuple(int(float(w)) for w in re.findall(r'<svg[^>]*class="marks"[^>]*\swidth="([\d.]+)"', dom))


def layout_widths(dom: str) -> tuple[int, tuple[int, ...]]:
    """(text column width, table widths) from the <meta> that `LAYOUT_PROBE` leaves in a dumped DOM."""
    found = re.search(r'<meta name="nmtscale-layout" content="([^"]*)"', dom)
    if found is None:
        raise RuntimeError("the page's layout probe did not run (no nmtscale-layout <meta> in its DOM)")
    layout = json.loads(html.unescape(found.group(1)))
    return layout["column"], tuple(layout["tables"])


def find_chromium() -> str:
    """The Chromium executable; the error says how to install it."""
    for name in ("chromium", "chromium-browser"):
        if path := shutil.which(name):
            return path
    raise FileNotFoundError("chromium not found: install the Debian package (apt-get install -y chromium)")


def check_pages(scale: str = DEFAULT_SCALE, root: Path = Path(".")) -> list[PageCheck]:
    """Open every page of the built book of `scale` in headless Chromium, offline, and count what it drew:
    charts (vega-embed's ``<svg>``/``<canvas>`` in each chart container) and formulas (MathJax output in each
    Sphinx math node). Saves one screenshot per page under ``_build/<scale>/screenshots/``.
    """
    from nmtscale.charts import CHART_CLASS

    pages = [
        html_dir(scale, root) / f"{page}.html" for page in toc_pages(book_source(scale, root) / "_toc.yml")
    ]
    screenshots = root / "_build" / scale / "screenshots"
    screenshots.mkdir(parents=True, exist_ok=True)
    results = []
    for page in pages:
        dom = chromium_layout(page)
        chromium_screenshot(page, screenshots / f"{page.stem}.png")
        charts = count_rendered(dom, CHART_CLASS, ("svg", "canvas"))
        formulas = count_rendered(dom, "math", ("mjx-container",))
        column, tables = layout_widths(dom)
        results.append(PageCheck(page, *charts, *formulas, chart_widths(dom), tables, column))
    return results


def count_rendered(dom: str, css_class: str, rendered_tags: tuple[str, ...]) -> tuple[int, int]:
    """(elements of class `css_class`, those holding one of `rendered_tags`) in a page's rendered DOM."""
    counter = _RenderedCounter(css_class, rendered_tags)
    counter.feed(dom)
    return counter.containers, len(counter.rendered)


class _RenderedCounter(html.parser.HTMLParser):
    def __init__(self, css_class: str, rendered_tags: tuple[str, ...]) -> None:
        super().__init__()
        self.css_class = css_class
        self.rendered_tags = rendered_tags
        self.containers = 0
        self.rendered: set[int] = set()
        self.open_tags: list[tuple[str, int | None]] = []  # (tag, index of the container it is or is inside)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        inside = self.open_tags[-1][1] if self.open_tags else None
        if self.css_class in (dict(attrs).get("class") or "").split():
            inside = self.containers
            self.containers += 1
        if tag in self.rendered_tags and inside is not None:
            self.rendered.add(inside)
        if tag not in _VOID_TAGS:
            self.open_tags.append((tag, inside))

    def handle_endtag(self, tag: str) -> None:
        # Close up to the matching tag; tolerates the unclosed tags a browser's DOM dump can hold.
        for depth in range(len(self.open_tags) - 1, -1, -1):
            if self.open_tags[depth][0] == tag:
                del self.open_tags[depth:]
                return


_VOID_TAGS = {
    "area",
    "base",
    "br",
    "col",
    "embed",
    "hr",
    "img",
    "input",
    "link",
    "meta",
    "source",
    "track",
    "wbr",
}


def chromium_layout(page: Path) -> str:
    """The DOM of a local HTML page after its scripts ran and its layout at `CHECK_WINDOW`, from headless
    Chromium with the network off, with `LAYOUT_PROBE`'s measurements in it. The probe runs in a copy of the
    page beside it (so its relative links resolve), removed afterwards: the built book stays as it was."""
    copy = page.with_name(f".layout-probe-{page.name}")
    copy.write_text(page.read_text(encoding="utf-8").replace("</body>", f"{LAYOUT_PROBE}</body>", 1))
    try:
        return _chromium(copy, "--dump-dom", f"--window-size={CHECK_WINDOW}")
    finally:
        copy.unlink()


def chromium_screenshot(page: Path, png: Path, size: str = CHECK_WINDOW) -> None:
    """A screenshot of the top of a local HTML page (`size` is "width,height" in pixels)."""
    _chromium(page, f"--screenshot={png.resolve()}", f"--window-size={size}")


def _chromium(page: Path, *args: str) -> str:
    with tempfile.TemporaryDirectory(prefix="nmtscale-chromium-") as profile:
        command = [
            find_chromium(),
            *CHROMIUM_FLAGS,
            f"--user-data-dir={profile}",
            f"--virtual-time-budget={CHROMIUM_VIRTUAL_TIME_MS}",
            *args,
            page.resolve().as_uri(),
        ]
        result = subprocess.run(command, capture_output=True, text=True, timeout=180)
    if result.returncode != 0:
        raise RuntimeError(f"chromium failed on {page}: {result.stderr.strip()[-2000:]}")
    return result.stdout


def _html_output(scale: str, root: Path) -> Path:
    # jupyter-book writes to <path-output>/_build/html.
    return root if scale == DEFAULT_SCALE else root / "_build" / scale


def _chapter_source(chapter: str, root: Path) -> Path:
    source = root / "book" / f"{chapter}.py"
    if not source.is_file():
        raise ConfigurationError(f"{source}: no such chapter; the book has {list(PAGES)}")
    return source


def _check_scale(scale: str) -> None:
    if scale not in SCALES:
        raise ConfigurationError(f"scale {scale!r} is not one of {list(SCALES)}{closest(scale, SCALES)}")


def overrides_by_page(pages: Sequence[str], overrides: dict, root: Path = Path(".")) -> dict[str, dict]:
    """Each page's share of the `-p` overrides: the keys its parameters cell has. A key that none of `pages`
    has is a ConfigurationError naming it, so a typo never runs the book with the default silently."""
    names = {page: set(parameters_cell_names(page, root)) for page in pages}
    for key in overrides:
        if not any(key in page_names for page_names in names.values()):
            known = sorted(set().union(*names.values()))
            raise ConfigurationError(
                f"-p {key}: not a parameter of {', '.join(f'book/{p}.py' for p in pages)}"
                + closest(key, known)
            )
    return {page: {k: v for k, v in overrides.items() if k in names[page]} for page in pages}


def _cmd_run(args: argparse.Namespace) -> int:
    overrides = {key: parse_yaml(value, f"-p {key} {value}") for key, value in args.parameters}
    chapters = [c for c in EXECUTION_ORDER if c in (args.chapter or EXECUTION_ORDER)]
    # a key must belong to a page the user selected; the scorecard, added below, takes the keys it has
    page_overrides = overrides_by_page(chapters, overrides)
    if SCORECARD not in chapters:  # it counts every chapter's claims, so it follows any re-run
        chapters.append(SCORECARD)
        scorecard_names = set(parameters_cell_names(SCORECARD))
        page_overrides[SCORECARD] = {k: v for k, v in overrides.items() if k in scorecard_names}
    for chapter in chapters:  # a typo in any params file stops the run before hours of training
        load_parameters(chapter, args.scale, page_overrides[chapter])
    if args.retrain:  # the chapters' kernels inherit it: every run is trained again under retrain/
        os.environ["NMTSCALE_RETRAIN"] = "1"
    failures = []
    for chapter in chapters:
        print(f"book run: {chapter} at scale {args.scale}", flush=True)
        started = time.perf_counter()
        try:
            executed = run_chapter(chapter, args.scale, page_overrides[chapter])
            print(f"book run: wrote {executed} in {time.perf_counter() - started:.0f} s", flush=True)
        except ChapterFailed as err:
            print(f"error: {err}", file=sys.stderr, flush=True)
            failures.append(chapter)
    if failures:
        print(f"error: {len(failures)} chapter(s) failed: {', '.join(failures)}", file=sys.stderr)
    if args.retrain:
        from nmtscale import results, runs

        store = load_parameters(chapters[0], args.scale, page_overrides[chapters[0]])["results_dir"]
        retrained = runs.retrain_store(store)
        print(f"book run --retrain: nmtscale results compare {store} {retrained}", flush=True)
        results.print_comparison(results.compare(store, retrained))
    return 1 if failures else 0


def _cmd_html(args: argparse.Namespace) -> int:
    try:
        print(f"book html: {build_html(args.scale) / 'index.html'}")
    except RuntimeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    try:
        results = check_pages(args.scale)
    except (FileNotFoundError, RuntimeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    for r in results:
        print(
            f"{r.page}: {r.charts_drawn}/{r.charts} charts drawn, "
            f"{r.formulas_typeset}/{r.formulas} formulas typeset; wider than its {r.column_px} px column: "
            f"{len(r.too_wide)} of {len(r.chart_widths)} charts"
            + (f" ({', '.join(map(str, r.too_wide))} px)" if r.too_wide else "")
            + f", {len(r.tables_too_wide)} of {len(r.table_widths)} tables"
            + (f" ({', '.join(map(str, r.tables_too_wide))} px)" if r.tables_too_wide else "")
        )
    for kind, wide, every in (
        ("charts", [w for r in results for w in r.too_wide], [w for r in results for w in r.chart_widths]),
        (
            "tables",
            [w for r in results for w in r.tables_too_wide],
            [w for r in results for w in r.table_widths],
        ),
    ):
        print(
            f"{kind} wider than the text column at a {CHECK_WINDOW.split(',')[0]} px window: "
            f"{len(wide)} of {len(every)} (gate: 0)"
        )
    noise = pages_noise(args.scale)
    print(f"warnings, tracebacks and absolute paths in the pages' outputs: {len(noise)} (gate: 0)")
    for line in noise:
        print(f"  {line}")
    print(f"screenshots in {Path('_build') / args.scale / 'screenshots'}")
    fits = all(r.complete and not r.too_wide and not r.tables_too_wide for r in results)
    return 0 if fits and not noise else 1


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    """Add ``book run``, ``book html`` and ``book check`` to the nmtscale CLI."""
    book = subparsers.add_parser("book", help="execute the chapters, build the HTML book, check its charts")
    commands = book.add_subparsers(dest="book_command", required=True, metavar="BOOK_COMMAND")

    run = commands.add_parser("run", help="execute chapters with papermill at a scale")
    run.add_argument("--scale", default=DEFAULT_SCALE, choices=SCALES)
    run.add_argument(
        "--chapter",
        action="append",
        choices=PAGES,
        help="repeatable; default: every chapter (the scorecard is always re-executed last)",
    )
    run.add_argument(
        "-p",
        dest="parameters",
        nargs=2,
        action="append",
        default=[],
        metavar=("KEY", "VALUE"),
        help="override a parameter (VALUE is read as YAML: 3, 0.5, true, [1, 2])",
    )
    run.add_argument(
        "--retrain",
        action="store_true",
        help="train every run again into retrain/ (recorded results ignored), then compare the two stores",
    )
    run.set_defaults(func=_cmd_run)

    build = commands.add_parser("html", help="build the HTML book from the executed notebooks present")
    build.add_argument("--scale", default=DEFAULT_SCALE, choices=SCALES)
    build.set_defaults(func=_cmd_html)

    check = commands.add_parser(
        "check", help="check in headless Chromium that every chart of the built book draws"
    )
    check.add_argument("--scale", default=DEFAULT_SCALE, choices=SCALES)
    check.set_defaults(func=_cmd_check)
