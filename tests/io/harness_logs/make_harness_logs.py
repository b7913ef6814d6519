"""Write the harness logs in tests/io/harness_logs/ with the harnesses themselves: Inspect
and lm-evaluation-harness run small tasks on offline models, and what they write is kept
as they wrote it (only the file names are shortened). VERSIONS.txt records the versions
and the commands; the suite reads these logs without installing either harness.

Each harness runs in a scratch environment of its own (neither is a dependency of this
project):

    python -m venv /tmp/venv-inspect && /tmp/venv-inspect/bin/pip install inspect-ai==0.3.285
    /tmp/venv-inspect/bin/python tests/io/harness_logs/make_harness_logs.py inspect

    python -m venv /tmp/venv-lmeval && /tmp/venv-lmeval/bin/pip install torch==2.13.0 \\
        lm-eval==0.4.13
    HF_DATASETS_OFFLINE=1 /tmp/venv-lmeval/bin/python \\
        tests/io/harness_logs/make_harness_logs.py lm-eval

The benchmark: 8 arithmetic word problems (the parents), each with a public form and two
fresh forms that keep its numbers and its answer; every sample or document carries its
parent in ``parent_id``. The models are deterministic stand-ins (Inspect's
``mockllm/model`` with custom outputs; a small lm-eval ``LM`` subclass): whether a model
answers a form correctly is drawn from a hash of the model, the form and the attempt, so
that the scores vary across parents, forms and epochs. ``toy/alpha`` and
``mockllm/model`` saw the public forms (right 85% of the time there, 50% on fresh forms);
``toy/beta`` and ``mockllm/other`` did not (60% everywhere).

Inspect (``inspect/``, ``--match-key metadata.parent_id``, scorer ``match``):

* ``mean/``: 2 epochs, the default reducer (mean): public and fresh1 as ``.eval``
  (Inspect's default format, every member Zstandard-compressed), fresh2 as a ``.json``
  log, kept gzip-compressed (``.json.gz``: the JSON log is 30 times the size);
* ``max/``: ``Epochs(3, "max")``, the public and fresh1 forms as ``.eval``;
* ``reducers/``: the fresh1 form with 4 epochs reduced by ``median``, ``mode``,
  ``at_least_2`` and ``pass_at_2``, one log each (4 epochs of a coin near 50%, so that
  the reducers and the mean disagree);
* ``errored/``: 2 epochs; one public sample and one fresh1 sample raise in their solver,
  and ``fail_on_error=0.5`` lets the runs finish with status ``success``;
* ``status_error/``: a fresh1 run whose erroring sample stops it (status ``error``);
* ``no_samples/``: ``log_samples=False``, as ``.json`` and ``.eval``;
* ``other_model/``: fresh1 scored by ``mockllm/other``.

lm-evaluation-harness (``lm_eval/<model>/``, ``--match-key doc.parent_id``): the model
``toy-lm`` with ``pretrained=toy/alpha`` and ``pretrained=toy/beta``, each run on six local
tasks (``tasks/``, datasets in ``tasks/data/``): ``arith_mc_<form>`` (multiple_choice,
metrics ``acc`` and ``acc_norm``) and ``arith_gen_<form>`` (generate_until, metric
``exact_match`` under the filters ``strict-match`` and ``flexible-extract``), with
``--log_samples``: one ``results_<date>.json`` and six ``samples_<task>_<date>.jsonl``
per model. The fresh2 datasets list their parents in another order than the public one,
so that matching by ``doc_id`` (a row index) pairs the wrong parents.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import json
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
N_PARENTS = 8
FORMS = ("public", "fresh1", "fresh2")
# The shipped example's questions (examples/make_harness_example.py), its first six names.
_EXAMPLE = HERE.parents[2] / "examples" / "make_harness_example.py"
_spec = importlib.util.spec_from_file_location("make_harness_example", _EXAMPLE)
assert _spec is not None and _spec.loader is not None
_example = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_example)
TEMPLATES = _example.TEMPLATES
NAMES = _example.NAMES[:6]
SKILL = {  # P(right) by model and form
    "alpha": {"public": 0.85, "fresh1": 0.5, "fresh2": 0.5},
    "beta": {"public": 0.6, "fresh1": 0.6, "fresh2": 0.6},
}


def draw(*parts: object) -> float:
    """A uniform number in [0, 1) fixed by ``parts``: the stand-in models' coin."""
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def problems() -> list[dict]:
    out = []
    for i in range(N_PARENTS):
        a, b = 10 + int(draw("a", i) * 80), 10 + int(draw("b", i) * 80)
        out.append({"parent_id": f"arith-{i:02d}", "a": a, "b": b, "name": NAMES[i % 6]})
    return out


def question(problem: dict, form: str) -> str:
    return TEMPLATES[form].format(**problem)


# ---------------------------------------------------------------------------------- Inspect


def inspect_logs(out: Path, folders: list[str]) -> None:
    """The Inspect logs, all of them or those of ``folders`` (``mean``, ``max``, ...)."""
    from inspect_ai import Epochs, Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import match
    from inspect_ai.solver import generate, solver

    probs = problems()
    by_question = {question(p, f): (p, f) for p in probs for f in FORMS}

    def stand_in(skill: str):
        """A mockllm output function: right with the model's chance on the form, drawn
        afresh at each attempt (so epochs differ)."""
        attempts: dict[str, int] = {}

        def output(input, tools, tool_choice, config):
            text = input[-1].text
            problem, form = by_question[text]
            attempts[text] = attempts.get(text, 0) + 1
            total = problem["a"] + problem["b"]
            right = draw(skill, text, attempts[text]) < SKILL[skill][form]
            answer = total if right else total + (1 if draw("off", text) < 0.5 else -10)
            result = ModelOutput.from_content(model="mockllm", content=str(answer))
            # token counts given, so mockllm does not count them (its tokenizer downloads)
            result.usage = ModelUsage(input_tokens=len(text.split()), output_tokens=1,
                                      total_tokens=len(text.split()) + 1)  # fmt: skip
            return result

        return output

    @solver
    def flaky(fail: tuple[tuple[str, int], ...] = ()):
        """generate(), except that the (sample id, epoch) pairs in ``fail`` raise."""

        async def solve(state, generate_):
            if (str(state.sample_id), state.epoch) in fail:
                raise RuntimeError(
                    f"simulated sandbox failure on {state.sample_id} (epoch {state.epoch})"
                )
            return await generate_(state)

        return solve

    def task(form: str, epochs, fail=()) -> Task:
        samples = [
            Sample(
                id=f"{p['parent_id']}-{form}",
                input=question(p, form),
                target=str(p["a"] + p["b"]),
                metadata={"parent_id": p["parent_id"], "form": form},
            )
            for p in probs
        ]
        return Task(
            name=f"arith_{form}",
            dataset=samples,
            solver=flaky(fail) if fail else generate(),
            scorer=match(numeric=True),
            epochs=epochs,
        )

    def run(folder: str, stem: str, form: str, epochs, *, model="mockllm/model", fmt="eval",
            fail=(), log_samples=True, **options) -> None:  # fmt: skip
        if folders and folder not in folders:
            return
        skill = "alpha" if model == "mockllm/model" else "beta"
        with tempfile.TemporaryDirectory() as scratch:
            (log,) = eval(
                task(form, epochs, fail),
                model=get_model(model, custom_outputs=stand_in(skill)),
                log_dir=scratch,
                log_format=fmt,
                display="none",
                max_samples=1,
                log_samples=log_samples,
                **options,
            )
            print(f"{folder}/{stem}: status {log.status}", file=sys.stderr)
            target = out / folder / f"{stem}.{fmt}"
            target.parent.mkdir(parents=True, exist_ok=True)
            if fmt == "json" and log_samples:
                data = Path(log.location).read_bytes()
                target.with_name(target.name + ".gz").write_bytes(gzip.compress(data, mtime=0))
            else:
                shutil.copyfile(log.location, target)

    for form, fmt in zip(FORMS, ("eval", "eval", "json"), strict=True):
        run("mean", f"arith-{form}", form, 2, fmt=fmt)
    for form in FORMS[:2]:
        run("max", f"arith-{form}", form, Epochs(3, "max"))
    for reducer in ("median", "mode", "at_least_2", "pass_at_2"):
        run("reducers", f"arith-fresh1-{reducer}", "fresh1", Epochs(4, reducer))
    fails = {"public": (("arith-03-public", 1),), "fresh1": (("arith-07-fresh1", 2),)}
    for form in FORMS:
        run("errored", f"arith-{form}", form, 2, fail=fails.get(form, ()), fail_on_error=0.5)
    run("status_error", "arith-fresh1", "fresh1", 1, fail=(("arith-05-fresh1", 1),))
    for fmt in ("json", "eval"):
        run("no_samples", "arith-fresh1", "fresh1", 1, fmt=fmt, log_samples=False)
    run("other_model", "arith-fresh1", "fresh1", 2, model="mockllm/other")


# --------------------------------------------------------------------- lm-evaluation-harness

# lm-eval task configs: the part both kinds share, then each kind's own
TASK_HEAD = """task: arith_{kind}_{{form}}
dataset_path: json
dataset_kwargs:
  data_files:
    test: data/arith_{{form}}.jsonl
test_split: test
doc_to_text: "Question: {{{{{{{{question}}}}}}}}\\nAnswer:"
metadata:
  version: 1.0
"""

MC_TASK = (
    TASK_HEAD.format(kind="mc")
    + """output_type: multiple_choice
doc_to_choice: "{{{{choices}}}}"
doc_to_target: label
metric_list:
  - metric: acc
    aggregation: mean
    higher_is_better: true
  - metric: acc_norm
    aggregation: mean
    higher_is_better: true
"""
)

GEN_TASK = (
    TASK_HEAD.format(kind="gen")
    + """output_type: generate_until
doc_to_target: "{{{{answer}}}}"
generation_kwargs:
  until:
    - "Question:"
  do_sample: false
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
    ignore_case: true
    ignore_punctuation: false
filter_list:
  - name: strict-match
    filter:
      - function: regex
        regex_pattern: "#### (\\\\-?[0-9]+)"
      - function: take_first
  - name: flexible-extract
    filter:
      - function: regex
        group_select: -1
        regex_pattern: "(-?[0-9]+)"
      - function: take_first
"""
)


def write_tasks(folder: Path) -> list[str]:
    """The six task configs and their datasets; the task names."""
    (folder / "data").mkdir(parents=True, exist_ok=True)
    probs = problems()
    names = []
    for form in FORMS:
        order = (
            sorted(probs, key=lambda p: draw("order", p["parent_id"]))
            if form == "fresh2"
            else probs
        )
        with open(folder / "data" / f"arith_{form}.jsonl", "w", encoding="utf-8") as fh:
            for p in order:
                total = p["a"] + p["b"]
                choices = [str(total), str(total + 1), str(total - 10), str(total + 10)]
                shift = int(draw("shift", p["parent_id"], form) * 4)
                choices = choices[shift:] + choices[:shift]
                doc = {
                    "id": f"{p['parent_id']}-{form}",
                    "parent_id": p["parent_id"],
                    "question": question(p, form),
                    "choices": choices,
                    "label": choices.index(str(total)),
                    "answer": str(total),
                }
                fh.write(json.dumps(doc) + "\n")
        for kind, template in (("mc", MC_TASK), ("gen", GEN_TASK)):
            (folder / f"arith_{kind}_{form}.yaml").write_text(template.format(form=form))
            names.append(f"arith_{kind}_{form}")
    return names


def lm_eval_logs(out: Path) -> None:
    import os

    from lm_eval import simple_evaluate
    from lm_eval.api.model import LM
    from lm_eval.api.registry import register_model
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.tasks import TaskManager

    def form_of(doc: dict) -> str:
        return doc["id"].rsplit("-", 1)[1]

    @register_model("toy-lm")
    class ToyLM(LM):
        """A deterministic stand-in: it knows the answer with its chance on the form."""

        def __init__(self, pretrained: str = "toy/alpha", **kwargs) -> None:
            super().__init__()
            self.name = pretrained
            self.skill = SKILL[pretrained.split("/")[-1]]

        def knows(self, doc: dict) -> bool:
            return draw(self.name, doc["id"]) < self.skill[form_of(doc)]

        def loglikelihood(self, requests):
            out = []
            for request in requests:
                doc, continuation = request.doc, request.args[1]
                right = continuation.strip() == doc["answer"]
                favourite = (
                    right
                    if self.knows(doc)
                    else continuation.strip()
                    == doc["choices"][(doc["label"] + 1) % len(doc["choices"])]
                )
                out.append((-0.25 if favourite else -4.0 - len(continuation) / 10, favourite))
            return out

        def loglikelihood_rolling(self, requests):
            raise NotImplementedError("not used by these tasks")

        def generate_until(self, requests):
            out = []
            for request in requests:
                doc = request.doc
                total = int(doc["answer"])
                answer = total if self.knows(doc) else total + 10
                if draw("format", self.name, doc["id"]) < 0.8:  # strict-match needs "####"
                    out.append(f" The answer is {answer}.\n#### {answer}")
                else:
                    out.append(f" That makes {answer} in all.")
            return out

    with tempfile.TemporaryDirectory() as scratch:
        tasks = write_tasks(Path(scratch))
        shutil.copytree(scratch, out / "tasks", dirs_exist_ok=True)
        here = os.getcwd()
        os.chdir(scratch)  # the datasets' paths are relative: no local path in the logs
        try:
            for name in ("alpha", "beta"):
                tracker = EvaluationTracker(output_path=str(out))
                results = simple_evaluate(
                    model="toy-lm",
                    model_args=f"pretrained=toy/{name}",
                    tasks=tasks,
                    task_manager=TaskManager(include_path=scratch),
                    log_samples=True,
                    evaluation_tracker=tracker,
                    bootstrap_iters=0,
                    random_seed=0,
                    numpy_random_seed=0,
                    torch_random_seed=0,
                    fewshot_random_seed=0,
                )
                samples = results.pop("samples")
                tracker.save_results_aggregated(results=results, samples=samples)
                for task_name in results["configs"]:
                    tracker.save_results_samples(task_name=task_name, samples=samples[task_name])
        finally:
            os.chdir(here)


def main(argv: list[str]) -> None:
    if argv[:1] == ["inspect"]:
        inspect_logs(HERE / "inspect", argv[1:])
    elif argv == ["lm-eval"]:
        lm_eval_logs(HERE / "lm_eval")
    else:
        raise SystemExit("usage: make_harness_logs.py inspect [FOLDER ...] | lm-eval")


if __name__ == "__main__":
    main(sys.argv[1:])
