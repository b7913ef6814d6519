"""Write the evaluation-harness examples in examples/harness/: a matched-form audit's runs
as lm-evaluation-harness and Inspect write them.

A small benchmark of 30 arithmetic word problems (the parents), each with a public form
and two fresh forms that keep its numbers and its answer. Seeded, so the files are
reproducible. The records follow the harnesses' documented formats; the values are
simulated, no model was run.

* ``lm_eval/``: lm-evaluation-harness ``--log_samples`` output of a model that saw the
  benchmark (public forms answered 95% of the time, fresh forms 40%), one samples file
  per form, each task with two filters (``strict-match`` and ``flexible-extract``) as
  gsm8k has. The public documents carry ``id``; the fresh ones ``parent_id``.
* ``inspect/``: Inspect logs of a model with no public-form advantage (every form 65%),
  scored with ``match`` over two epochs: the public form and the first fresh form as
  JSON logs, the second fresh form as a ``.eval`` archive. Every sample carries
  ``metadata.parent_id``.

    python examples/make_harness_example.py
    truescore-fast audit --public examples/harness/lm_eval/samples_arith_public_*.jsonl \
        --fresh examples/harness/lm_eval/samples_arith_fresh1_*.jsonl \
        --fresh examples/harness/lm_eval/samples_arith_fresh2_*.jsonl \
        --public-match-key doc.id --match-key doc.parent_id \
        --metric exact_match,strict-match
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SEED = 20261130
N_PARENTS = 30
STAMP = "2026-11-30T10-15-42.123456"  # lm-eval's file-name date: isoformat, ":" -> "-"
FORMS = ("public", "fresh1", "fresh2")
TEMPLATES = {
    "public": "{name} has {a} apples and buys {b} more. How many apples does {name} have now?",
    "fresh1": "A basket holds {a} pears and {b} more pears are put in. How many pears are in "
    "the basket?",
    "fresh2": "There are {a} cars in a car park; {b} more arrive. How many cars are there now?",
}
NAMES = ("Ada", "Ben", "Chloe", "Dev", "Emi", "Femi", "Gus", "Hana")
FEWSHOT = (
    "Question: Tom has 3 pens and gets 2 more. How many pens?\nAnswer: 3 + 2 = 5.\n#### 5\n\n"
)


def problems(rng):
    out = []
    for i in range(N_PARENTS):
        a, b = (int(x) for x in rng.integers(10, 90, size=2))
        out.append({"parent": f"arith-{i:04d}", "a": a, "b": b, "name": NAMES[i % len(NAMES)]})
    return out


def sha256(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def response(rng, a, b, correct):
    answer = a + b if correct else a + b + int(rng.choice([-10, -1, 1, 10]))
    if rng.random() < 0.85:  # strict-match needs the "#### N" line
        return f"{a} + {b} = {answer}.\n#### {answer}", answer, answer
    return f"Adding them gives {answer}.", "[invalid]", answer


# ------------------------------------------------------------------- lm-evaluation-harness


def lm_eval_records(rng, problem, form, p_correct):
    a, b = problem["a"], problem["b"]
    question = TEMPLATES[form].format(**problem)
    doc = {"question": question, "answer": f"{a} + {b} = {a + b}.\n#### {a + b}"}
    if form == "public":
        doc = {"id": problem["parent"], **doc}
    else:
        doc = {"id": f"{problem['parent']}-{form}", "parent_id": problem["parent"], **doc}
    prompt = FEWSHOT + f"Question: {question}\nAnswer:"
    text, strict, flexible = response(rng, a, b, rng.random() < p_correct)
    arguments = {"gen_args_0": {"arg_0": prompt, "arg_1": {"until": ["Question:"]}}}
    records = []
    for filter_name, extracted in (("strict-match", strict), ("flexible-extract", flexible)):
        records.append(
            {
                "doc_id": int(problem["parent"][-4:]),
                "doc": doc,
                "target": str(a + b),
                "arguments": arguments,
                "resps": [[text]],
                "filtered_resps": [str(extracted)],
                "filter": filter_name,
                "metrics": ["exact_match"],
                "doc_hash": sha256(json.dumps(doc, indent=2, ensure_ascii=False)),
                "prompt_hash": sha256(prompt),
                "target_hash": sha256(str(a + b)),
                "exact_match": float(str(extracted) == str(a + b)),
            }
        )
    return records


def write_lm_eval(rng, probs, folder):
    folder.mkdir(parents=True, exist_ok=True)
    p_correct = {"public": 0.95, "fresh1": 0.40, "fresh2": 0.40}
    for form in FORMS:
        lines = []
        for problem in probs:
            lines += lm_eval_records(rng, problem, form, p_correct[form])
        path = folder / f"samples_arith_{form}_{STAMP}.jsonl"
        with open(path, "w", encoding="utf-8", newline="\n") as fh:
            for record in lines:
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")


# ---------------------------------------------------------------------------------- Inspect

MODEL = "example/clean-model"
EPOCHS = 2


def inspect_samples(rng, probs, form):
    samples = []
    for epoch in range(1, EPOCHS + 1):
        for problem in probs:
            a, b = problem["a"], problem["b"]
            question = TEMPLATES[form].format(**problem)
            sid = problem["parent"] if form == "public" else f"{problem['parent']}-{form}"
            text, _, answer = response(rng, a, b, rng.random() < 0.65)
            grade = "C" if answer == a + b else "I"
            assistant = {"role": "assistant", "content": text, "source": "generate"}
            samples.append(
                {
                    "id": sid,
                    "epoch": epoch,
                    "input": question,
                    "target": str(a + b),
                    "messages": [
                        {"role": "user", "content": question, "source": "input"},
                        assistant,
                    ],
                    "output": {
                        "model": MODEL,
                        "choices": [{"message": assistant, "stop_reason": "stop"}],
                        "completion": text,
                        "usage": {"input_tokens": 40, "output_tokens": 12, "total_tokens": 52},
                    },
                    "scores": {
                        "match": {
                            "value": grade,
                            "answer": str(answer),
                            "explanation": text,
                            "metadata": {},
                        }
                    },
                    "metadata": {"parent_id": problem["parent"], "form": form},
                    "store": {},
                    "events": [],
                    "model_usage": {},
                    "attachments": {},
                }
            )
    return samples


def inspect_header(form, samples):
    accuracy = float(np.mean([s["scores"]["match"]["value"] == "C" for s in samples]))
    created = "2026-11-30T10:15:42+00:00"
    return {
        "version": 2,
        "status": "success",
        "eval": {
            "eval_id": sha256(f"eval-{form}")[:22],
            "run_id": sha256("run")[:22],
            "created": created,
            "task": f"arith_{form}",
            "task_id": sha256(f"task-{form}")[:22],
            "task_version": 0,
            "dataset": {"name": f"arith_{form}", "samples": N_PARENTS, "shuffled": False},
            "model": MODEL,
            "config": {"epochs": EPOCHS},
        },
        "plan": {"name": "plan", "steps": [{"solver": "generate", "params": {}}], "config": {}},
        "results": {
            "total_samples": len(samples),
            "completed_samples": len(samples),
            "scores": [
                {
                    "name": "match",
                    "scorer": "match",
                    "params": {},
                    "metrics": {"accuracy": {"name": "accuracy", "value": accuracy}},
                }
            ],
        },
        "stats": {"started_at": created, "completed_at": created, "model_usage": {}},
    }


def write_inspect(rng, probs, folder):
    folder.mkdir(parents=True, exist_ok=True)
    for form in FORMS:
        samples = inspect_samples(rng, probs, form)
        header = inspect_header(form, samples)
        stem = f"arith-{form}"  # Inspect names it <created>_<task>_<task id>: shortened
        if form != "fresh2":
            log = {**header, "samples": samples}
            (folder / f"{stem}.json").write_text(json.dumps(log) + "\n")
            continue
        with zipfile.ZipFile(folder / f"{stem}.eval", "w") as archive:

            def member(name, value, archive=archive):
                info = zipfile.ZipInfo(name, date_time=(2026, 11, 30, 10, 15, 42))
                info.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(info, json.dumps(value))

            start = {k: header[k] for k in ("version", "eval", "plan")}
            member("_journal/start.json", start)
            for sample in samples:
                member(f"samples/{sample['id']}_epoch_{sample['epoch']}.json", sample)
            member("header.json", header)


def main() -> None:
    rng = np.random.default_rng(SEED)
    probs = problems(rng)
    write_lm_eval(rng, probs, HERE / "harness" / "lm_eval")
    write_inspect(rng, probs, HERE / "harness" / "inspect")


if __name__ == "__main__":
    main()
