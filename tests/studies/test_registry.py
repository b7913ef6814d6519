"""The study registry: every registered study is a calibrate subcommand with its default
replications, settings and figure; StudyOptions is every study's keyword block; a study
added with Study.of runs from the command line with no other edit."""

from __future__ import annotations

import contextlib
import inspect
import io

import pytest
import truescore_fast as tf
from truescore_fast.cli import main
from truescore_fast.studies.options import StudyOptions, StudySettings
from truescore_fast.studies.registry import STUDIES, Study


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_every_study_function_takes_the_options_keywords():
    keywords = set(StudyOptions(replications=10).keywords("run"))
    assert keywords == {
        "replications", "alpha", "seed", "n_threads", "progress", "executor", "checkpoint"
    }  # fmt: skip
    for function in (
        tf.coverage_study,
        tf.stress_grid,
        tf.detection_study,
        tf.budget_study,
        tf.sequential_study,
        tf.sequential_order_study,
    ):
        parameters = inspect.signature(function).parameters
        assert keywords <= set(parameters), function.__name__
        assert all(parameters[k].kind is inspect.Parameter.KEYWORD_ONLY for k in keywords)


def test_the_checkpoint_keyword_names_the_run(tmp_path):
    options = StudyOptions(replications=10, checkpoint=tmp_path / "c.jsonl")
    saved = options.keywords("planted")["checkpoint"]
    assert saved.run == "planted" and str(saved.path) == str(tmp_path / "c.jsonl")
    assert StudyOptions(replications=10).keywords("planted")["checkpoint"] is None


def test_the_command_line_lists_every_registered_study_with_its_defaults():
    with pytest.raises(SystemExit) as stop, contextlib.redirect_stdout(io.StringIO()) as out:
        main(["calibrate", "--help"])
    assert stop.value.code == 0
    text = " ".join(out.getvalue().split())
    for study in STUDIES.values():
        assert f"{study.name} {study.replications}" in text  # --replications' defaults
        assert study.summary in text


def test_a_study_names_only_settings_that_exist():
    with pytest.raises(ValueError, match="no such setting"):
        Study("toy", "a toy", 10, lambda options, settings: None, ("populaton",))
    assert "population" in StudySettings.names()


def _toy_study(*, replications, alpha, seed, n_threads, progress, executor, checkpoint):
    # a study function with nothing but the shared keywords: the mean of seeded draws
    import numpy as np

    draws = np.random.default_rng(seed).random(replications)
    return tf.StudyTable(
        title=f"toy study ({replications} replications)",
        columns={"mean": np.array([draws.mean()]), "alpha": np.array([alpha])},
        notes=("a toy",),
    )


def test_a_study_added_with_study_of_runs_from_the_command_line(monkeypatch):
    monkeypatch.setitem(STUDIES, "toy", Study.of(_toy_study, "toy", "a toy study", 7))
    code, out, err = run("calibrate", "toy", "--seed", "3", "--quiet")
    assert (code, err) == (0, "")
    assert "toy study (7 replications)" in out  # the registry's default replications
    code, out, _ = run("calibrate", "toy", "--json", "--replications", "5", "--alpha", "0.1")
    assert code == 0 and '"study": "toy"' in out and '"alpha"' in out
    # flags of the other studies are refused, naming the studies that take them
    code, _, err = run("calibrate", "toy", "--intervals", "wald")
    assert code == 1 and "--intervals applies to calibrate coverage and stress, not toy" in err
    code, _, err = run("calibrate", "toy", "--plot", "toy.png")
    assert (
        code == 1 and "--plot applies to calibrate coverage, stress, detection and budget" in err
    )
