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


# ------------------------------------------------- the public types check what they hold


@pytest.mark.parametrize(
    ("keywords", "error", "words"),
    [
        ({"replications": 0}, ValueError, "replications"),
        ({"replications": 2.5}, ValueError, "replications"),
        ({"replications": 10, "alpha": 1.5}, ValueError, "alpha"),
        ({"replications": 10, "seed": "x"}, TypeError, "seed"),
        ({"replications": 10, "n_threads": 0}, ValueError, "n_threads"),
        ({"replications": 10, "progress": "yes"}, ValueError, "progress"),
        ({"replications": 10, "executor": object()}, ValueError, "executor"),
        ({"replications": 10, "checkpoint": 3}, TypeError, "checkpoint"),
    ],
)
def test_study_options_refuse_what_no_study_could_run(keywords, error, words):
    with pytest.raises((error, ValueError, TypeError), match=words) as caught:
        StudyOptions(**keywords)
    assert isinstance(caught.value, error)


@pytest.mark.parametrize(
    ("keywords", "words"),
    [
        ({"n": [10, 0]}, "n"),
        ({"n": "10"}, "n"),
        ({"intervals": ["wald", 3]}, "intervals"),
        ({"intervals": "wald"}, "intervals"),
        ({"population_size": -1}, "population_size"),
        ({"value_column": ""}, "value_column"),
        ({"population": 3}, "population"),
    ],
)
def test_study_settings_refuse_values_of_the_wrong_kind(keywords, words):
    with pytest.raises((ValueError, TypeError), match=words):
        StudySettings(**keywords)
    StudySettings(n=[10, 20], intervals=("wald",), population_size=100)  # as the CLI makes


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"name": "two words"}, "name must be a word"),
        ({"summary": ""}, "summary"),
        ({"replications": 0}, "replications"),
        ({"replications": "5"}, "replications"),
        ({"run": "coverage"}, "callable"),
        ({"plot": 3}, "callable"),
        ({"settings": "n"}, "tuple"),
    ],
)
def test_a_registry_entry_refuses_fields_of_the_wrong_kind(change, words):
    fields = {"name": "mine", "summary": "what it does", "replications": 10,
              "run": lambda options, settings: None, "settings": (), "plot": None}  # fmt: skip
    with pytest.raises((ValueError, TypeError), match=words):
        Study(**{**fields, **change})
