"""The scorer's positive control: a small GPT-2-style model trained on CPU on a corpus into
which a synthetic benchmark is inserted, then scored with ``truescore-fast score`` and
tested with ``truescore-fast contamination``. Used by tests/io/test_scoring_control.py and
by tools/duplication_table.py (the copies -> pooled p-value table of the guide).

Everything is made here, nothing is downloaded: the benchmark and the filler text come
from a seeded generator over a small vocabulary, the tokenizer is a byte-level BPE trained
on the corpus with the ``tokenizers`` library, the model is built from a ``GPT2Config``.

* ``order="published"``: every copy of the benchmark is inserted in its published order
  (the contamination the order test looks for);
* ``order="shuffled"``: every copy in a fresh shuffled order (the model saw every example
  as often, never the published order);
* ``copies=0`` or ``train=False``: no benchmark in the corpus, or no training at all.
"""

from __future__ import annotations

import contextlib
import math
import random
import re
from dataclasses import dataclass
from pathlib import Path

WORDS = (
    "amber basin cedar delta ember fjord grove harbor iris jasper kelp lagoon meadow "
    "nectar orchid pebble quartz raven saffron tundra umber valley willow yarrow zephyr "
    "copper marble lantern thistle summit"
).split()

# The settings of the control (the test's and the table's rows)
N_EXAMPLES = 36
N_SHARDS = 6
PERMUTATIONS = 19
FILLER_SENTENCES = 100
STEPS = 600
CONTEXT_LEN = 128
STRIDE = 64
SEED = 0


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 6))) + ".\n"


def benchmark(seed: int = SEED) -> list[str]:
    """The benchmark's examples in published order (one line each)."""
    rng = random.Random(f"benchmark {seed}")
    return [sentence(rng) for _ in range(N_EXAMPLES)]


def corpus(examples: list[str], copies: int, order: str, seed: int = SEED) -> str:
    """Filler sentences with ``copies`` copies of the benchmark inserted at random places."""
    rng = random.Random(f"corpus {seed}")
    docs = [sentence(rng) for _ in range(FILLER_SENTENCES)]
    for _ in range(copies):
        copy = examples if order == "published" else rng.sample(examples, k=len(examples))
        docs.insert(rng.randrange(len(docs) + 1), "".join(copy))
    return "".join(docs)


@contextlib.contextmanager
def _one_thread():
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)  # the same sums on any machine's thread count
    try:
        yield
    finally:
        torch.set_num_threads(before)


@dataclass(frozen=True)
class Control:
    name: str
    model_dir: Path
    benchmark_file: Path


def build(
    directory: Path,
    *,
    copies: int,
    order: str = "published",
    train: bool = True,
    steps: int = STEPS,
    seed: int = SEED,
) -> Control:
    """Train (or not) the control's model and save it, its tokenizer and the benchmark in
    ``directory``; returns where they are."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    examples = benchmark(seed)
    text = corpus(examples, copies, order, seed)
    directory.mkdir(parents=True, exist_ok=True)
    bench_file = directory / "benchmark.txt"
    bench_file.write_text("".join(examples), encoding="utf-8")

    # the tokenizer always learns from the published corpus's text (one vocabulary for
    # every arm of a comparison)
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator([corpus(examples, max(copies, 1), "published", seed)], trainer)
    ids = torch.tensor(tokenizer.encode(text).ids)

    with _one_thread():
        torch.manual_seed(seed)
        config = GPT2Config(
            vocab_size=tokenizer.get_vocab_size(),
            n_positions=CONTEXT_LEN,
            n_embd=128,
            n_layer=2,
            n_head=4,
            bos_token_id=0,
            eos_token_id=0,
        )
        model = GPT2LMHeadModel(config)
        if train:
            optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
            # 50 warm-up steps, then a cosine decay to a tenth: without the decay the last
            # steps' noise decides how sharply the transitions are memorised
            schedule = torch.optim.lr_scheduler.LambdaLR(
                optimizer,
                lambda step: (
                    min(1.0, (step + 1) / 50)
                    * (0.1 + 0.45 * (1.0 + math.cos(math.pi * step / steps)))
                ),
            )
            generator = torch.Generator().manual_seed(seed)
            length, batch = 64, 16
            model.train()
            for _ in range(steps):
                starts = torch.randint(0, ids.numel() - length, (batch,), generator=generator)
                x = torch.stack([ids[s : s + length] for s in starts.tolist()])
                loss = model(input_ids=x, labels=x).loss
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                schedule.step()
        model.eval()
    model_dir = directory / "model"
    model.save_pretrained(model_dir)
    PreTrainedTokenizerFast(tokenizer_object=tokenizer).save_pretrained(model_dir)
    name = f"copies={copies} order={order}" + ("" if train else " untrained")
    return Control(name=name, model_dir=model_dir, benchmark_file=bench_file)


def score_args(control: Control, scores: Path) -> list[str]:
    """``truescore-fast score`` for the control (the command the test and the table run)."""
    return [
        "score",
        str(control.benchmark_file),
        "--model",
        str(control.model_dir),
        "--shards",
        str(N_SHARDS),
        "--permutations",
        str(PERMUTATIONS),
        "--seed",
        str(SEED),
        "--context-len",
        str(CONTEXT_LEN),
        "--stride",
        str(STRIDE),
        "--batch-size",
        "20",
        "--no-progress",
        "-o",
        str(scores),
    ]


_ROW = re.compile(
    r"^\| (\d+) \| (published|shuffled|untrained) \| ([0-9.e+-]+) \| (flagged|not flagged) \| "
    r"([0-9.e+\- ]+) \|$",
    re.M,
)


def table_rows(text: str) -> dict:
    """The rows of the duplication table (tools/duplication_table.py's Markdown) in
    ``text``: (copies, order) -> pooled p-value, verdict, shard p-values."""
    return {
        (int(m[1]), m[2]): {
            "p_value": float(m[3]),
            "contaminated": m[4] == "flagged",
            "shards": [float(x) for x in m[5].split()],
        }
        for m in _ROW.finditer(text)
    }
