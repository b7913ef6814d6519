"""``truescore-fast suite``: the shipped example flags its planted leaks (exit 2), a clean
suite exits 0, --json and --report/--plot write what they say, and every failure is one
line on stderr with exit 1."""

from __future__ import annotations

import csv
import gzip
import html
import json

import pytest
import truescore_fast as tf
from commands import assert_one_line_error, run_cli
from common import write_suite_table

EXAMPLE = "examples/suite/suite_example.csv.gz"
PLANTED = {("model-01", "bench-1"), ("model-04", "bench-3"), ("model-07", "bench-2")}
FAST = ("--tests", "matched_form", "randomization")


def test_the_example_flags_its_planted_leaks():
    code, out, err = run_cli("suite", EXAMPLE, "--json")
    assert code == 2, err
    result = json.loads(out)
    flagged = {
        (m, b)
        for m, b, f in zip(result["model"], result["benchmark"], result["flagged"], strict=True)
        if f
    }
    # the figures quoted in the README and the guide: the three leaks and nothing else
    # (before ConStat was computed as published, its pairing of scores also flagged
    # model-08, the strongest model, on bench-4)
    assert flagged == PLANTED
    # eight tests flagged: both matched-form tests of each leak, ConStat on two of them
    flagged_tests = [t for t, f in zip(result["test"], result["flagged"], strict=True) if f]
    assert sorted(flagged_tests) == ["constat"] * 2 + ["matched_form"] * 3 + ["randomization"] * 3
    assert set(result["test"]) == {"matched_form", "randomization", "constat"}
    assert result["q"] == 0.05 and result["fdr"] == "bh"
    code, out, _ = run_cli("suite", EXAMPLE, "--fdr", "by", "--json")
    result = json.loads(out)
    flagged = {
        (m, b)
        for m, b, f in zip(result["model"], result["benchmark"], result["flagged"], strict=True)
        if f
    }
    assert code == 2 and flagged == PLANTED
    # the guide's figure for --fdr by: six tests, the matched-form pair of each leak
    assert sum(result["flagged"]) == 6


def test_a_suite_of_identical_models_is_no_finding(tmp_path):
    """Six copies of one model's answers: ConStat cannot fit (every reference score is one
    point), so its pairs are not testable and nothing is flagged: exit 0."""
    data = tf.simulate_suite(models=6, benchmarks=1, parents=80, leaks=(), seed=3)
    one = data.pairs[0]
    lines = ["model,benchmark,parent,form,correct"]
    for k in range(6):
        for i, parent in enumerate(one.parents):
            lines.append(f"copy-{k},{one.benchmark},{parent},public,{one.public[i]:g}")
            lines.append(f"copy-{k},{one.benchmark},{parent},fresh1,{one.fresh[i, 0]:g}")
    table = tmp_path / "same.csv"
    table.write_text("\n".join(lines) + "\n")
    code, out, err = run_cli("suite", str(table), "--tests", "constat", "matched_form")
    assert code == 0, out + err
    assert "not testable" in out and "FLAG" not in out


def test_the_text_report_lists_the_flags():
    code, out, _ = run_cli("suite", EXAMPLE, *FAST, "--fdr", "by")
    assert code == 2
    assert "FLAG model-01 on bench-1" in out and "Benjamini-Yekutieli" in out
    assert "does not mean" in out


def test_a_clean_suite_exits_0(tmp_path):
    data = tf.simulate_suite(models=4, benchmarks=2, parents=50, leaks=(), seed=3)
    code, out, err = run_cli("suite", write_suite_table(tmp_path / "clean.csv", data), *FAST)
    assert code == 0, out + err
    assert "nothing flagged" in out


def test_report_and_plot_are_written(tmp_path):
    pytest.importorskip("matplotlib")
    report, plot = tmp_path / "suite.html", tmp_path / "suite.png"
    code, _, err = run_cli("suite", EXAMPLE, *FAST, "--report", report, "--plot", plot)
    assert code == 2, err
    page = report.read_text(encoding="utf-8")
    assert "model-07" in page and "bench-4" in page
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _png_size(path):
    data = path.read_bytes()
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_heatmap_order_and_limits_from_the_command_line(tmp_path, monkeypatch):
    """--order, --max-models and --max-benchmarks reach the report and the figure (0: all,
    None to the library; the defaults the report's, as --help says); --order strength
    passes each pair's public score; the figures drawn differ."""
    pytest.importorskip("matplotlib")
    full, few = tmp_path / "full.png", tmp_path / "few.png"
    assert run_cli("suite", EXAMPLE, *FAST, "--plot", full, "--max-models", "0")[0] == 2
    assert run_cli("suite", EXAMPLE, *FAST, "--plot", few, "--max-models", "3")[0] == 2
    assert full.read_bytes() != few.read_bytes()
    import truescore_fast.suite.report as report

    seen = {}
    for name in ("plot_heatmap", "write_report"):
        record = lambda result, path, _n=name, **kw: seen.update({_n: kw})  # noqa: E731
        monkeypatch.setattr(report, name, record)
    page = tmp_path / "r.html"
    code, _, err = run_cli(
        "suite", EXAMPLE, *FAST, "--plot", few, "--report", page, "--order", "strength",
        "--max-benchmarks", "2", "--max-models", "0",
    )  # fmt: skip
    assert code == 2, err
    assert seen["plot_heatmap"] == seen["write_report"]
    kw = seen["plot_heatmap"]
    assert kw["order"] == "strength" and kw["max_benchmarks"] == 2 and kw["max_models"] is None
    data = tf.read_suite(EXAMPLE)
    pair = data.pairs[5]
    assert kw["scores"][(pair.model, pair.benchmark)] == pytest.approx(pair.public.mean())
    assert len(kw["scores"]) == len(data.pairs)
    assert run_cli("suite", EXAMPLE, *FAST, "--plot", few)[0] == 2
    kw = seen["plot_heatmap"]
    assert (kw["order"], kw["scores"]) == ("auto", None)
    assert (kw["max_models"], kw["max_benchmarks"]) == (report.MAX_MODELS, report.MAX_BENCHMARKS)


def test_the_help_states_the_heatmaps_default_limits():
    import truescore_fast.suite.report as report

    _, out, _ = run_cli("suite", "--help")
    text = " ".join(out.split())
    assert f"(default {report.MAX_MODELS}; 0: all)" in text
    assert f"(default {report.MAX_BENCHMARKS}; 0: all)" in text


@pytest.mark.parametrize("flag", ["--max-models", "--max-benchmarks"])
def test_a_negative_heatmap_limit_is_one_line(flag):
    code, _, err = run_cli("suite", EXAMPLE, *FAST, flag, "-1")
    assert_one_line_error(code, err, flag)


def test_renamed_columns_and_log_likelihoods(tmp_path):
    data = tf.simulate_suite(models=3, benchmarks=1, parents=40, leaks=(), seed=1)
    path = write_suite_table(tmp_path / "s.csv", data)
    path.write_text(path.read_text().replace("model,benchmark", "system,task", 1))
    ll = tmp_path / "ll.csv"
    ll.write_text("kind,loglik\ncanonical,50\n" + "".join(f"shuffled,{v}\n" for v in range(19)))
    code, out, err = run_cli(
        "suite", path, "--model-column", "system", "--benchmark-column", "task",
        "--loglik", "model-01", "bench-1", ll, "--tests", "order", "randomization", "--json",
    )  # fmt: skip
    assert code == 0, err
    result = json.loads(out)
    assert result["test"].count("order") == 1
    assert result["p_value"][result["test"].index("order")] == pytest.approx(1 / 20)


def test_a_manifest_of_runs(tmp_path):
    data = tf.simulate_suite(models=2, benchmarks=1, parents=30, leaks=((0, 0, 0.9),), seed=2)
    rows = ["model,benchmark,form,path"]
    for p in data.pairs:
        for form, values in (("public", p.public), ("fresh1", p.fresh[:, 0])):
            run = tmp_path / f"{p.model}-{form}.csv"
            run.write_text(
                "id,acc\n"
                + "".join(f"{q},{v:g}\n" for q, v in zip(p.parents, values, strict=True))
            )
            rows.append(f"{p.model},{p.benchmark},{form},{run.name}")
    manifest = tmp_path / "manifest.csv"
    manifest.write_text("\n".join(rows) + "\n")
    code, out, err = run_cli("suite", manifest, "--match-key", "id", "--metric", "acc", *FAST)
    assert code == 2, err
    assert "FLAG model-01 on bench-1" in out
    code, _, err = run_cli("suite", manifest, *FAST)
    assert_one_line_error(code, err, "--match-key")


@pytest.mark.parametrize(
    "argv, words",
    [
        (("missing.csv",), ("missing.csv",)),
        ((EXAMPLE, "--q", "2"), ("--q",)),
        ((EXAMPLE, "--fdr", "bonferroni"), ("--fdr",)),
        ((EXAMPLE, "--model-column", "system"), ("system",)),
        ((EXAMPLE, "--resamples", "0"), ("--resamples",)),
        ((EXAMPLE, "--reference-model", "model-01"), ("--reference-model",)),
        (
            (
                EXAMPLE,
                *[w for m in (1, 2, 3, 4, 5) for w in ("--reference-model", f"model-0{m}")],
                "--reference-model",
                "nobody",
            ),
            ("--reference-model", "'nobody'"),
        ),
        ((EXAMPLE, "--match-key", "id"), ("--match-key",)),
        ((EXAMPLE, "--tests", "order"), ("log-likelihoods",)),
        ((EXAMPLE, "--threads", "0"), ("--threads",)),
    ],
)
def test_failures_are_one_line(argv, words):
    code, _, err = run_cli("suite", *argv)
    assert_one_line_error(code, err, *words)


def test_standard_input(tmp_path):
    data = tf.simulate_suite(models=3, benchmarks=1, parents=30, leaks=((0, 0, 0.9),), seed=2)
    text = write_suite_table(tmp_path / "s.csv", data).read_bytes()
    code, out, err = run_cli("suite", "-", *FAST, stdin=text)
    assert code == 2, err
    assert "FLAG model-01 on bench-1" in out


# ----------------------------------------------------------------- names that forge text

FORGED = "model-01\u202e evil\nFLAG model-99 on bench-9 (forged)\x1b[2J"


def _with_model_renamed(tmp_path, old, new):
    with gzip.open(EXAMPLE, "rt", newline="") as f:
        rows = list(csv.reader(f))
    for row in rows[1:]:
        if row[0] == old:
            row[0] = new
    path = tmp_path / "suite.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)
    return path


def test_a_name_cannot_forge_a_line_or_drive_the_terminal(tmp_path):
    path = _with_model_renamed(tmp_path, "model-01", FORGED)
    code, out, err = run_cli("suite", path, *FAST)
    assert code == 2, err
    # the planted leak of model-01 is still flagged, under its name shown escaped
    assert "  FLAG model-01\\u202e evil\\nFLAG model-99 on bench-9 (forged)\\x1b[2J on " in out
    assert not any(line.startswith("FLAG model-99") for line in out.splitlines())
    assert "\x1b" not in out and "\u202e" not in out


def test_names_that_differ_only_by_white_space_are_refused_before_they_merge(tmp_path):
    with gzip.open(EXAMPLE, "rt", newline="") as f:
        rows = list(csv.reader(f))
    first = next(i for i, row in enumerate(rows) if row[0] == "model-02")
    rows[first + 1][0] = "model-02\u00a0"  # one row's name with a no-break space after it
    path = tmp_path / "suite.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)
    code, _, err = run_cli("suite", path, *FAST)
    assert_one_line_error(
        code, err, f"row {first + 1}:", "model 'model-02\\xa0' and 'model-02'", "white space"
    )


def test_a_report_and_heatmap_show_such_a_name_escaped_and_isolated(tmp_path):
    pytest.importorskip("matplotlib")
    path = _with_model_renamed(tmp_path, "model-01", FORGED)
    report, plot = tmp_path / "suite.html", tmp_path / "suite.svg"
    code, _, err = run_cli("suite", path, *FAST, "--report", report, "--plot", plot)
    assert code == 2, err
    page = report.read_text(encoding="utf-8")
    shown = "model-01\\u202e evil\\nFLAG model-99 on bench-9 (forged)\\x1b[2J"
    assert f"<bdi>{shown}</bdi>" in page
    assert "\u202e" not in page and "\x1b" not in page
    figure = plot.read_text(encoding="utf-8")
    assert "\u202e" not in figure and "\x1b" not in figure


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".png", ".svg", ".pdf"])
def test_very_long_names_draw_without_a_warning(tmp_path, suffix):
    # names of 10,000 characters (Latin, Devanagari, CJK, emoji): the figure draws each
    # shortened to 40 characters, the report's table keeps it whole; no warning (nor log
    # line) from matplotlib reaches stderr, and none is raised (recorded here: the suite's
    # filterwarnings would make one an error)
    pytest.importorskip("matplotlib")
    import warnings

    model = "model-01-" + "नमस्ते" * 1000 + "模型" * 1000 + "😀" * 1000 + "x" * 3991
    with gzip.open(EXAMPLE, "rt", newline="") as f:
        rows = list(csv.reader(f))
    benchmark = "bench-1-" + "y" * 9992
    for row in rows[1:]:
        row[0] = model if row[0] == "model-01" else row[0]
        row[1] = benchmark if row[1] == "bench-1" else row[1]
    path = tmp_path / "suite.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)
    report, plot = tmp_path / "suite.html", tmp_path / f"suite{suffix}"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, _, err = run_cli("suite", path, *FAST, "--report", report, "--plot", plot)
    assert code == 2, err
    assert err == "" and [str(w.message) for w in caught] == []
    page = report.read_text(encoding="utf-8")
    assert f"<bdi>{html.escape(benchmark)}</bdi>" in page  # whole in the table
    if suffix == ".svg":
        figure = plot.read_text(encoding="utf-8")
        assert "bench-1-" + "y" * 31 + "…" in figure and "y" * 33 not in figure


def test_a_name_with_a_lone_surrogate_is_one_line_naming_the_file_and_the_row(tmp_path):
    # JSON Lines: "\udc80" in JSON is a lone surrogate, which no UTF-8 file can hold (its
    # --report failed, naming neither the file nor the model)
    with gzip.open(EXAMPLE, "rt", newline="") as f:
        header, *rows = list(csv.reader(f))
    path = tmp_path / "suite.jsonl"
    with open(path, "w", encoding="ascii") as f:
        for row in rows:
            row[0] = "model-01\udc80" if row[0] == "model-01" else row[0]
            f.write(json.dumps(dict(zip(header, row, strict=True))) + "\n")
    code, _, err = run_cli("suite", path, *FAST, "--report", tmp_path / "r.html")
    assert_one_line_error(code, err, f"source {path} row ", "'model-01\\udc80'", "surrogate")
    assert not (tmp_path / "r.html").exists()
