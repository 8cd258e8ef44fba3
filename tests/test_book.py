"""The book: params files, the papermill runner, the HTML build and the Chromium chart check.

The fast tests run with the unit suite; the ones marked `book` execute every chapter at smoke scale, build
that book and open every page in headless Chromium (`make smoke`).
"""

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from nmtscale import book, charts, results
from nmtscale.errors import ConfigurationError

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("scale", book.SCALES)
@pytest.mark.parametrize("chapter", book.PAGES)
def test_every_chapter_has_valid_params_for_every_scale(chapter, scale):
    params = book.load_parameters(chapter, scale, root=ROOT)
    assert params["scale"] == scale
    assert set(book.SHARED_PARAMETERS) <= set(params)


@pytest.mark.parametrize("chapter", book.PAGES)
def test_papermill_reads_every_name_of_the_parameters_cell(chapter, tmp_path):
    """papermill injects a params file's values by the names it infers from the parameters cell; one it
    misreads (a comment with '=' on the line) is "passed unknown" and ends up in no table."""
    import jupytext
    import papermill

    path = tmp_path / f"{chapter}.ipynb"
    jupytext.write(jupytext.read(ROOT / "book" / f"{chapter}.py"), path)
    assert set(book.parameters_cell_names(chapter, ROOT)) <= set(papermill.inspect_notebook(str(path)))


def test_toc_shows_the_committed_cpu_notebook_of_every_chapter():
    pages = book.toc_pages(ROOT / "_toc.yml")
    assert pages[0] == "book/intro"
    assert pages[1:] == [f"book/_executed/{chapter}" for chapter in book.PAGES]
    for chapter in book.PAGES:
        assert book.executed_notebook(chapter, "cpu", ROOT).is_file(), f"run `make chapter NAME={chapter}`"


def test_other_scales_never_write_over_the_committed_notebooks():
    for scale in ("smoke", "gpu"):
        path = book.executed_notebook("01_bivariate_laws", scale, ROOT)
        assert path.is_relative_to(ROOT / "_build" / scale)
    assert book.html_dir("cpu", ROOT) == ROOT / "_build" / "html"


@pytest.fixture
def tiny_book(tmp_path):
    """A one-chapter book: a parameters cell, then a cell that fails when `fail` is true."""
    source = textwrap.dedent(
        """\
        # %% [markdown]
        # # A tiny chapter

        # %% tags=["parameters"]
        scale = "cpu"
        seed = 0  # base seed
        workers = 1
        threads_per_run = 1
        runs_dir = "runs"
        results_dir = "results"
        # Raise in the last cell,
        # to test failures.
        fail = False

        # %%
        print(f"seed {seed}")

        # %%
        if fail:
            raise ValueError("the chapter broke here")
        """
    )
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "tiny.py").write_text(source)
    (tmp_path / "params" / "tiny").mkdir(parents=True)
    write_params(
        tmp_path,
        "scale: smoke\nseed: 3\nworkers: 1\nthreads_per_run: 1\nruns_dir: runs\nresults_dir: results\n",
    )
    return tmp_path


def write_params(root: Path, text: str) -> Path:
    path = root / "params" / "tiny" / "smoke.yaml"
    path.write_text(text)
    return path


def test_params_file_and_overrides_fill_the_parameters_cell(tiny_book):
    assert book.parameters_cell_names("tiny", tiny_book) == [*book.SHARED_PARAMETERS, "fail"]
    params = book.load_parameters("tiny", "smoke", {"seed": 7}, tiny_book)
    assert params == {
        "scale": "smoke",
        "seed": 7,
        "workers": 1,
        "threads_per_run": 1,
        "runs_dir": "runs",
        "results_dir": "results",
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "scale: smoke\nsed: 1\n",
            r"smoke.yaml: key 'sed' is not a parameter of book/tiny.py \(did you mean 'seed'",
        ),
        ("scale: smoke\nseed: 1\n", r"smoke.yaml: missing key 'workers'"),
        (
            "scale: cpu\nseed: 1\nworkers: 1\nthreads_per_run: 1\nruns_dir: r\nresults_dir: s\n",
            r"key 'scale' is 'cpu', expected",
        ),
        ("- a list\n", r"smoke.yaml: expected a mapping"),
        ("scale: [smoke\n", r"smoke.yaml: not valid YAML"),
    ],
)
def test_bad_params_file_names_file_and_key(tiny_book, text, message):
    write_params(tiny_book, text)
    with pytest.raises(ConfigurationError, match=message):
        book.load_parameters("tiny", "smoke", root=tiny_book)


def test_bad_override_scale_or_chapter_is_named(tiny_book):
    with pytest.raises(ConfigurationError, match=r"-p threads: not a parameter of book/tiny.py"):
        book.load_parameters("tiny", "smoke", {"threads": 2}, tiny_book)
    with pytest.raises(ConfigurationError, match=r"scale 'smok' is not one of .* \(did you mean 'smoke'"):
        book.load_parameters("tiny", "smok", root=tiny_book)
    with pytest.raises(ConfigurationError, match=r"book/huge.py: no such chapter"):
        book.load_parameters("huge", "smoke", root=tiny_book)


def test_study_parameters_nest_chapter_1_with_the_chapters_overrides():
    params = book.study_parameters(
        "03_lm_vs_encdec", "smoke", ("pairs", "seed"), {"chapter1_overrides": {"steps": 7}}, ROOT
    )
    assert set(params) == {"pairs", "seed", "chapter1"}
    assert params["chapter1"]["steps"] == 7
    assert params["chapter1"]["scale"] == "smoke"
    assert "chapter1" not in book.study_parameters("01_bivariate_laws", "smoke", ("steps",), root=ROOT)
    with pytest.raises(ConfigurationError, match=r"-p stepz: not a parameter of book/01_bivariate_laws.py"):
        book.study_parameters("03_lm_vs_encdec", "smoke", (), {"chapter1_overrides": {"stepz": 7}}, ROOT)


def test_cli_rejects_a_misspelt_parameter_before_running_anything(capsys):
    from nmtscale.cli import main

    assert main(["book", "run", "--scale", "smoke", "--chapter", "api", "-p", "sed", "1"]) == 2
    assert "-p sed: not a parameter of book/api.py (did you mean 'seed'?)" in capsys.readouterr().err


def test_cli_gives_each_page_its_own_overrides(monkeypatch):
    """`book run --chapter X -p key value` with a key only chapter X has: the chapter gets it, the scorecard
    (always re-executed after it) gets only the shared keys it has."""
    from nmtscale.cli import main

    executed = []
    monkeypatch.setattr(
        book, "run_chapter", lambda chapter, scale, overrides: executed.append((chapter, overrides))
    )
    argv = ["book", "run", "--scale", "smoke", "--chapter", "01_bivariate_laws", "-p", "steps", "40"]
    assert main([*argv, "-p", "workers", "1"]) == 0
    assert executed == [
        ("01_bivariate_laws", {"steps": 40, "workers": 1}),
        ("scorecard", {"workers": 1}),
    ]


def test_an_override_no_selected_page_has_is_named():
    with pytest.raises(ConfigurationError, match=r"-p long_steps: not a parameter of book/api.py"):
        book.overrides_by_page(["api"], {"long_steps": 3}, ROOT)
    assert book.overrides_by_page(["api", "01_bivariate_laws"], {"long_steps": 3}, ROOT) == {
        "api": {},
        "01_bivariate_laws": {"long_steps": 3},
    }


def test_chapter_runs_with_its_parameters_and_a_failing_cell_is_named(tiny_book):
    executed = book.run_chapter("tiny", "smoke", root=tiny_book)
    assert executed == book.executed_notebook("tiny", "smoke", tiny_book)
    assert "seed 3" in executed.read_text()
    code = [c for c in nbformat.read(executed, as_version=4).cells if c.cell_type == "code"]
    assert code and all("hide-input" in c.metadata["tags"] for c in code), "the book folds every cell's code"
    removed = [c for c in code if "remove-cell" in c.metadata["tags"]]
    assert [c.metadata["tags"][0] for c in removed] == ["parameters", "injected-parameters"]
    executed.unlink()
    with pytest.raises(
        book.ChapterFailed, match=r"chapter tiny \(scale smoke\) failed in cell 4 .*ValueError"
    ):
        book.run_chapter("tiny", "smoke", {"fail": True}, tiny_book)
    assert not executed.exists(), "a failed run leaves no page for the book"
    assert "the chapter broke here" in (tiny_book / "_build" / "smoke" / "work" / "tiny.ipynb").read_text()


def test_the_parameters_table_shows_the_values_in_force_and_their_comments(tiny_book):
    shown = book.parameters_table("tiny", {**PARAMETERS_IN_FORCE, "seed": 3}, tiny_book).data
    assert "the 7 parameters of this execution (scale smoke)" in shown
    assert "<td>seed</td><td><code>3</code></td><td>base seed</td>" in shown, "papermill's value, its comment"
    assert (
        "<td>fail</td><td><code>false</code></td><td>Raise in the last cell, to test failures.</td>" in shown
    )
    assert "<td>workers</td><td><code>1</code></td><td></td>" in shown, "no comment, no meaning"


PARAMETERS_IN_FORCE = {
    "scale": "smoke",
    "seed": 0,
    "workers": 1,
    "threads_per_run": 1,
    "runs_dir": "runs",
    "results_dir": "results",
    "fail": False,
}


def test_a_notebook_from_older_sources_is_stale(tiny_book):
    book.run_chapter("tiny", "smoke", root=tiny_book)
    assert book.stale_chapters("smoke", tiny_book, ("tiny",)) == []
    source = tiny_book / "book" / "tiny.py"
    source.write_text(source.read_text().replace("seed {seed}", "the seed is {seed}"))
    assert book.stale_chapters("smoke", tiny_book, ("tiny",)) == ["tiny"]


def test_counter_finds_drawn_and_empty_containers():
    dom = (
        '<html><body><p>text<br></p><div class="output nmtscale-chart" id="a">'
        '<div class="vega-embed"><svg><g></g></svg></div></div>'
        '<div class="nmtscale-chart" id="b"></div><svg></svg>'
        '<div class="nmtscale-chart" id="c"><canvas></canvas><details><summary>...</summary></details></div>'
        "</body></html>"
    )
    assert book.count_rendered(dom, charts.CHART_CLASS, ("svg", "canvas")) == (3, 2)
    math = (
        '<span class="math notranslate">\\(x\\)</span><div class="math"><mjx-container></mjx-container></div>'
    )
    assert book.count_rendered(math, "math", ("mjx-container",)) == (2, 1)


def test_chart_widths_are_read_from_the_drawn_svg_and_compared_with_the_column():
    dom = '<svg class="marks" width="806.5" height="3"></svg><svg width="9"></svg>'
    dom += '<svg class="marks" width="500">'
    assert book.chart_widths(dom) == (806, 500)
    page = book.PageCheck(Path("p.html"), 2, 2, 0, 0, book.chart_widths(dom))
    assert page.too_wide == [806] and page.complete


def test_output_noise_finds_warnings_tracebacks_and_machine_paths(tmp_path):
    import nbformat

    notebook = nbformat.v4.new_notebook()
    stream = nbformat.v4.new_output(
        "stream", name="stderr", text="/srv/x/fitting.py:476: RuntimeWarning: overflow"
    )
    table = nbformat.v4.new_output("execute_result", data={"text/plain": "read /home/ann/runs/a.json"})
    clean = nbformat.v4.new_output("stream", name="stdout", text="loss 3.21 nats; see runs/a and 1/2 + 3/4")
    error = nbformat.v4.new_output("error", ename="ValueError", evalue="x", traceback=[])
    notebook.cells = [
        nbformat.v4.new_markdown_cell("prose"),
        nbformat.v4.new_code_cell("fit()", outputs=[stream, clean]),
        nbformat.v4.new_code_cell("show()", outputs=[table]),
        nbformat.v4.new_code_cell("fail()", outputs=[error]),
    ]
    path = tmp_path / "page.ipynb"
    nbformat.write(notebook, path)
    found = book.output_noise(path)
    assert [line.split(": ")[0:2] for line in found] == [
        ["page.ipynb cell 2", "warning"],
        ["page.ipynb cell 2", "absolute path"],  # the warning's source file
        ["page.ipynb cell 3", "absolute path"],
        ["page.ipynb cell 4", "error output ValueError"],
    ]


def test_the_committed_pages_show_no_warning_traceback_or_machine_path():
    noise = book.pages_noise("cpu", ROOT)
    assert not noise, "\n".join(noise)


def chromium_or_skip() -> str:
    try:
        return book.find_chromium()
    except FileNotFoundError as err:
        if os.environ.get("CI", "").lower() not in ("", "0", "false"):
            pytest.fail(f"{err}; CI must check that the book's charts draw")
        pytest.skip(str(err))


@pytest.mark.book
def test_chromium_check_tells_a_drawn_chart_from_a_missing_bundle(tmp_path):
    chromium_or_skip()
    spec = {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "data": {"values": [{"x": 1, "y": 2}, {"x": 2, "y": 3}]},
        "mark": "point",
        "encoding": {
            "x": {"field": "x", "type": "quantitative"},
            "y": {"field": "y", "type": "quantitative"},
        },
    }
    charts.write_vega_bundle(tmp_path / "_static")
    body = charts.chart_html(spec)
    with_bundle = tmp_path / "with.html"
    with_bundle.write_text(
        f'<html><head><script src="_static/{charts.VEGA_BUNDLE_NAME}"></script></head>'
        f"<body>{body}</body></html>"
    )
    without_bundle = tmp_path / "without.html"
    without_bundle.write_text(f"<html><head></head><body>{body}</body></html>")
    chart_tags = ("svg", "canvas")
    assert book.count_rendered(book.chromium_layout(with_bundle), charts.CHART_CLASS, chart_tags) == (1, 1)
    assert book.count_rendered(book.chromium_layout(without_bundle), charts.CHART_CLASS, chart_tags) == (1, 0)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "_static",
        "with.html",
        "without.html",
    ]  # no probe left


@pytest.mark.book
def test_the_layout_probe_measures_the_text_column_and_every_table(tmp_path):
    chromium_or_skip()
    page = tmp_path / "page.html"
    page.write_text(
        '<html><body><article style="width: 500px; padding: 0 16px">'
        '<table style="width: 900px"><tr><td>wide</td></tr></table>'
        "<table><tr><td>narrow</td></tr></table></article></body></html>"
    )
    column, tables = book.layout_widths(book.chromium_layout(page))
    assert column == 500 and tables[0] == 900 and tables[1] < 100
    checked = book.PageCheck(page, 0, 0, 0, 0, (), tables, column)
    assert checked.tables_too_wide == [900]


@pytest.mark.book
def test_make_chapter_runs_a_chapter_with_a_parameter_of_its_own():
    """The Makefile's documented way to re-execute one chapter with papermill parameters."""
    args = "ARGS=-p synthetic_repeats 1"
    command = ["make", "chapter", "NAME=appendix_fitting", "SCALE=smoke", args]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    executed = book.executed_notebook("appendix_fitting", "smoke", ROOT).read_text()
    assert "synthetic_repeats = 1\\n" in executed


@pytest.mark.book
def test_reproduce_retrains_a_chapter_into_retrain_and_compares_the_stores():
    """`make reproduce` at smoke scale for one chapter: the chapter runs from its recorded results, then
    `book run --retrain` trains every run again under retrain/ and compares; on one machine training is
    deterministic, so every run reproduces to well under a seed standard deviation."""
    chapter = ["--scale", "smoke", "--chapter", "04_multilingual_laws"]
    for retrain in ([], ["--retrain"]):
        command = [sys.executable, "-m", "nmtscale", "book", "run", *chapter, *retrain]
        result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "results compare _build/smoke/results" in result.stdout
    stores = ROOT / "_build" / "smoke" / "results", ROOT / "retrain" / "_build" / "smoke" / "results"
    comparison = results.compare(*stores, noise=0.01)
    assert len(comparison) > 0 and comparison["difference"].abs().max() < 1e-3
    shutil.rmtree(ROOT / "retrain" / "_build" / "smoke")


@pytest.mark.book
def test_smoke_book_runs_builds_and_every_chart_and_formula_draws():
    """The whole pipeline CI guards: every chapter at smoke scale, the HTML build, every page in Chromium."""
    chromium_or_skip()
    shutil.rmtree(ROOT / "_build" / "smoke", ignore_errors=True)  # a fresh run store: nothing is reused
    for command in (["run", "--scale", "smoke"], ["html", "--scale", "smoke"]):
        result = subprocess.run([sys.executable, "-m", "nmtscale", "book", *command], cwd=ROOT)
        assert result.returncode == 0, f"`nmtscale book {' '.join(command)}` failed (its messages are above)"

    pages = book.check_pages("smoke", ROOT)
    assert [page.page.stem for page in pages] == ["intro", *book.PAGES]
    incomplete = [p for p in pages if not p.complete]
    assert not incomplete, f"pages with undrawn charts or untypeset formulas: {incomplete}"
    too_wide = {
        p.page.stem: (p.too_wide, p.tables_too_wide) for p in pages if p.too_wide or p.tables_too_wide
    }
    assert not too_wide, f"(charts, tables) wider than the pages' text column: {too_wide}"
    noise = book.pages_noise("smoke", ROOT)
    assert not noise, "warnings, tracebacks or absolute paths in the smoke pages:\n" + "\n".join(noise)
    assert sum(page.charts for page in pages) >= 1, "the smoke book has at least one chart to check"
    assert pages[0].formulas >= 1, "the introduction has formulas to check"
    for chapter in book.PAGES:
        assert (ROOT / "_build" / "smoke" / "screenshots" / f"{chapter}.png").stat().st_size > 0
    assert len(book.chapter_claims("smoke", ROOT)) == len(book.CLAIM_CHAPTERS), "every chapter shows claims"


def test_reader_tables_drop_a_row_counter_and_fold_long_tables():
    counted = pd.DataFrame({"model": ["2L-2L", "2L-6L"], "loss": [3.28512, 0.083122]})
    shown = book.reader_table_html(counted)
    assert "<th>model</th>" in shown and "3.285" in shown and "0.0831" in shown
    assert "<th>0</th>" not in shown and "<th>1</th>" not in shown  # no row-number column
    assert "<th>2L-2L</th>" in book.reader_table_html(counted.set_index("model"))  # a named index stays
    gaps = book.reader_table_html(counted.assign(loss=[float("nan"), float("inf")]))
    assert "<td>—</td>" in gaps and "<td>not determined</td>" in gaps and "NaN" not in gaps
    long = pd.DataFrame({"step": range(book.LONG_TABLE_ROWS + 5)})
    folded = book.reader_table_html(long)
    head, whole = folded.split("<details>")
    assert head.count("<td>") == book.SHOWN_ROWS and whole.count("<td>") == len(long)
    assert f"all {len(long)} rows" in whole
    assert "<details>" not in book.reader_table_html(long.head(book.LONG_TABLE_ROWS))


def test_a_table_wider_than_the_column_is_shown_as_several_with_the_row_labels():
    wide = pd.DataFrame(
        {f"loss_{k}": [3.28512 + k, 0.083122] for k in range(20)},
        index=pd.Index(["2L-2L", "2L-6L"], name="model"),
    )
    groups = book.column_groups(wide)
    assert len(groups) > 1 and sum(groups, []) == list(range(20)), "every column once, in order"
    chars = [
        len("model") + 2 + sum(book._column_chars(wide.columns[i], wide.iloc[:, i]) for i in g)
        for g in groups
    ]
    assert max(chars) <= book.TABLE_WIDTH_CHARS
    shown = book.reader_table_html(wide)
    assert shown.count("<table") == len(groups) and shown.count("<th>2L-6L</th>") == len(groups)
    assert book.column_groups(wide.iloc[:, :3]) == [[0, 1, 2]], "a narrow table stays one"
    assert book.column_groups(pd.DataFrame({"x" * 200: [1]})) == [[0]], "one column a group at the least"


def test_reader_number_writes_four_significant_digits_and_an_exponent_only_far_out():
    assert [book.reader_number(x) for x in (0.0, 3.28512, 0.083122, 0.1019, 11426.85)] == [
        "0",
        "3.285",
        "0.08312",
        "0.1019",
        "11,427",
    ]
    assert book.reader_number(2.0169e-35) == "2.017e-35" and book.reader_number(1.1458e105) == "1.146e+105"
    assert book.reader_number(-0.0105) == "-0.0105" and book.reader_number(float("inf")) == "not determined"
    assert book.reader_number(0.002) == "0.002" and book.reader_number(3.2) == "3.2"
    assert book.reader_number(float("nan")) == "—" and book.reader_number(float("-inf")) == "not determined"
    assert book.reader_number(1200.0) == "1,200", "no trailing zero cut from an integer part"
