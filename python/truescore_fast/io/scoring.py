"""Scoring the shard orders with a language model: the step between
:func:`~truescore_fast.shard_orders` and the order-based tests.

For each shard of a benchmark, the model's log-likelihood of the shard's examples
concatenated in the published order and in each shuffled order, as Oren et al. (2023)
define it in their released script (``compute_sharded_comparison_test.py`` of
tatsu-lab/test_set_contamination, commit 2912e15): every example is tokenized on its own,
the token ids are concatenated in the order, and the log-likelihood of the concatenation
is summed by a sliding window (:func:`window_spans`) of ``context_len`` tokens moved by
``stride``, each window scoring only the targets the windows before it did not.

The model enters through one small protocol, :class:`TokenScorer`: a callable that takes
a batch of token-id windows and returns, for each, the log-probability of every token
given the tokens before it in the window.
:class:`~truescore_fast.io.transformers_backend.TransformersScorer` is the Hugging Face
``transformers`` backend (the ``score`` extra: torch, transformers); any other backend
(vLLM, an API, a harness) fits by being such a callable.

The published order and the shuffled orders of a shard hold the same tokens, so their
windows have the same lengths and are batched together without padding. A checkpoint
file (the calibration studies' checkpoint format and integrity rules:
:mod:`truescore_fast.studies._checkpoint`) saves each shard when it is done, so a stopped
run resumes at the first unfinished shard with bit-identical saved numbers.

What the scores are not: a verdict. They are the input of
:func:`~truescore_fast.exchangeability_tests` and
:func:`~truescore_fast.sharded_likelihood_test` (or ``truescore-fast contamination``).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from truescore_fast import _core
from truescore_fast._files import check_input_file, decode_text
from truescore_fast._progress import Progress
from truescore_fast._result import TabularResult
from truescore_fast._validation import check_memory, check_positive_int, one_line
from truescore_fast.contamination.sharded import ShardOrders
from truescore_fast.errors import ArgumentError, ArgumentTypeError, literal
from truescore_fast.studies._checkpoint import Checkpoint

__all__ = [
    "OrderScores",
    "TokenScorer",
    "read_examples",
    "score_orders",
    "sliding_window_loglik",
    "window_spans",
]

_RUN = "score"
_MAX_TOKEN_ID = 2**62


class TokenScorer(Protocol):
    """What :func:`score_orders` needs of a model: a callable taking a batch of windows
    (each a sequence of token ids, at least 2 long) and returning, for each window ``w``,
    the ``len(w) - 1`` log-probabilities ``log p(w[i] | w[0], ..., w[i-1])``,
    ``i = 1 .. len(w) - 1`` (natural log), as any array-like.

    Optional attributes :func:`score_orders` reads when present: ``encode(text)`` (the
    token ids of one example, used when the examples are text), ``max_context`` (the
    longest input the model takes: ``context_len`` is refused above it) and
    ``fingerprint`` (a string identifying the model and its weights, kept in the
    checkpoint so a file saved for another model is refused).
    """

    def __call__(self, windows: Sequence[Sequence[int]], /) -> Sequence[npt.ArrayLike]: ...


# ----------------------------------------------------------------------------- windows


def window_spans(n_tokens: int, context_len: int, stride: int) -> list[tuple[int, int, int]]:
    """The sliding windows over a sequence of ``n_tokens`` tokens, as Oren et al. define them.

    The targets are tokens 1 .. n-1 (the first token is context only), t = n - 1 of them;
    window j (j = 0 .. k, k the smallest integer with t <= k * stride + context_len)
    feeds the tokens ``start .. end - 1`` with ``start = j * stride`` and
    ``end = min(start + context_len, t)`` and predicts the targets ``start + 1 .. end``;
    every window after the first scores only its predictions from position
    ``skip = context_len - stride`` on (those the window before did not score), so each
    target is scored exactly once, with at least ``context_len - stride`` tokens of
    context after the first window.

    Returns:
        One ``(start, end, skip)`` per window: the window's tokens are
        ``tokens[start:end + 1]`` (inputs and targets), and of its ``end - start``
        log-probabilities those from index ``skip`` on are summed. Empty when
        ``n_tokens < 2`` (nothing to predict).

    Raises:
        ValueError: ``context_len`` or ``stride`` below 1, or ``stride > context_len``
            (the released script would leave targets between windows unscored).
    """
    n = check_positive_int("n_tokens", n_tokens, minimum=0)
    c = check_positive_int("context_len", context_len)
    s = check_positive_int("stride", stride)
    if s > c:
        raise ArgumentError(
            "stride",
            template=f"{{stride}} must be at most {{context_len}} ({c}); got {s}: a longer "
            "stride leaves tokens between windows unscored",
        )
    t = n - 1
    if t < 1:
        return []
    k = -(-max(0, t - c) // s)  # ceil
    check_memory("n_tokens", 100.0 * (k + 1), "score shorter sequences, or use a longer stride")
    return [(s * j, min(s * j + c, t), (c - s) if j > 0 else 0) for j in range(k + 1)]


def _window_sums(
    sequences: npt.NDArray[np.int64],
    spans: Sequence[tuple[int, int, int]],
    scorer: TokenScorer,
    batch_size: int,
) -> npt.NDArray[np.float64]:
    """The sliding-window log-likelihood of each row of ``sequences`` (all of one length),
    ``batch_size`` rows per call of ``scorer``; summed window by window in a fixed order."""
    rows = sequences.shape[0]
    totals = np.zeros(rows, dtype=np.float64)
    for start, end, skip in spans:
        for first in range(0, rows, batch_size):
            block = sequences[first : first + batch_size, start : end + 1]
            values = _checked_output(scorer(block.tolist()), block.shape[0], end - start)
            totals[first : first + block.shape[0]] += values[:, skip:].sum(axis=1)
    return totals


def _checked_output(output: Any, rows: int, length: int) -> npt.NDArray[np.float64]:
    """The scorer's answer for ``rows`` windows of ``length + 1`` tokens as a (rows, length)
    float array, or an error saying what is wrong with it."""
    try:
        values = [np.asarray(row, dtype=np.float64).reshape(-1) for row in output]
    except (TypeError, ValueError) as error:
        raise TypeError(
            f"scorer must return one array of log-probabilities per window; got {one_line(output)}"
        ) from error
    if len(values) != rows or any(v.shape[0] != length for v in values):
        got = [v.shape[0] for v in values][:4]
        raise ValueError(
            f"scorer returned {len(values)} rows of lengths {got}... for {rows} windows of "
            f"{length + 1} tokens: it must return {length} log-probabilities per window"
        )
    array = np.stack(values) if values else np.zeros((0, length))
    if not np.isfinite(array).all():
        raise ValueError("scorer returned a log-probability that is not finite")
    return array


def sliding_window_loglik(
    tokens: Sequence[int] | npt.ArrayLike,
    scorer: TokenScorer,
    *,
    context_len: int = 2048,
    stride: int = 1024,
) -> float:
    """The log-likelihood of one token sequence by the sliding window of
    :func:`window_spans` (natural log; 0.0 for fewer than two tokens).

    Args:
        tokens: The token ids.
        scorer: A :class:`TokenScorer`.
        context_len: Tokens a window feeds the model (default 2048, the released script's).
        stride: Tokens between the starts of two windows (default 1024), at most
            ``context_len``.
    """
    if not callable(scorer):
        raise ArgumentTypeError(
            "scorer", f"scorer must be callable (a TokenScorer); got {type(scorer).__name__}"
        )
    ids = _token_ids("tokens", tokens)
    spans = window_spans(ids.size, context_len, stride)
    return float(_window_sums(ids.reshape(1, -1), spans, scorer, 1)[0])


def _token_ids(name: str, tokens: Any) -> npt.NDArray[np.int64]:
    if isinstance(tokens, (str, bytes)):
        raise ArgumentTypeError(name, f"{name} must be token ids (integers); got text")
    try:
        ids = np.asarray(tokens)
    except (TypeError, ValueError) as error:
        raise ArgumentTypeError(
            name, f"{name} must be a sequence of token ids; {error}"
        ) from error
    if ids.size == 0:
        return np.zeros(0, dtype=np.int64)
    if ids.ndim != 1 or ids.dtype.kind not in "iu":
        raise ArgumentTypeError(
            name, f"{name} must be a 1-D sequence of integer token ids; got {one_line(tokens)}"
        )
    if (ids < 0).any() or (ids > _MAX_TOKEN_ID).any():
        raise ArgumentError(name, f"{name} holds a token id out of range (0 .. 2**62)")
    return ids.astype(np.int64)


# ----------------------------------------------------------------------------- examples


def read_examples(path: str | os.PathLike[str], *, text_field: str = "text") -> list[str]:
    """The examples of a benchmark file, in published order.

    * JSON Lines (``.jsonl``, ``.ndjson``): one example a line, a JSON string or an object
      whose ``text_field`` is a string; blank lines are refused.
    * JSON (``.json``): a list of strings (as the released script reads it).
    * Anything else: plain text, one example a line, each keeping its line end as the
      released script's ``readlines()`` does (the last line may lack one).

    Raises:
        FileNotFoundError, ValueError: naming the file and the line.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise ArgumentTypeError("path", f"path must be a file path; got {type(path).__name__}")
    if not isinstance(text_field, str):
        raise ArgumentTypeError(
            "text_field", f"text_field must be a string; got {type(text_field).__name__}"
        )
    file_path = check_input_file(path)
    where = str(file_path)
    text = decode_text(file_path.read_bytes(), where)
    suffix = file_path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        examples = [
            _json_example(line, text_field, f"{where}, line {i}")
            for i, line in enumerate(text.splitlines(), 1)
        ]
    elif suffix == ".json":
        try:
            document = json.loads(text)
        except ValueError as error:
            raise ValueError(f"{where} is not JSON: {error}") from None
        if not isinstance(document, list) or not all(isinstance(x, str) for x in document):
            raise ValueError(f"{where}: a .json benchmark must be a list of strings")
        examples = document
    else:
        examples = text.splitlines(keepends=True)
    if not examples:
        raise ValueError(f"{where} holds no example")
    return examples


def _json_example(line: str, field: str, where: str) -> str:
    if not line.strip():
        raise ValueError(f"{where} is blank: one example a line")
    try:
        value = json.loads(line)
    except ValueError:
        raise ValueError(f"{where} is not JSON") from None
    if isinstance(value, dict):
        if field not in value:
            raise ArgumentError(
                "text_field",
                template=f"{literal(where)} has no field {literal(repr(field))} ({{text_field}})",
            )
        value = value[field]
    if not isinstance(value, str):
        raise ValueError(f"{where}: the example must be a string; got {one_line(value)}")
    return value


def _encoded(examples: Any, scorer: Any, text_field: str) -> list[npt.NDArray[np.int64]]:
    if not isinstance(text_field, str):
        raise ArgumentTypeError(
            "text_field", f"text_field must be a string; got {type(text_field).__name__}"
        )
    if isinstance(examples, (str, os.PathLike)):
        try:
            examples = read_examples(examples, text_field=text_field)
        except FileNotFoundError:
            raise FileNotFoundError(f"examples: no such file: {os.fspath(examples)}") from None
    if not isinstance(examples, Sequence) or isinstance(examples, (bytes, Mapping)):
        raise ArgumentTypeError(
            "examples",
            "examples must be a benchmark file, a list of strings or a list of token-id "
            f"lists; got {type(examples).__name__}",
        )
    if len(examples) == 0:
        raise ArgumentError("examples", "examples holds no example")
    if all(isinstance(x, str) for x in examples):
        encode = getattr(scorer, "encode", None)
        if not callable(encode):
            raise ArgumentTypeError(
                "examples",
                "examples are text but scorer has no encode(text): give token ids, or a "
                "scorer with a tokenizer",
            )
        return [
            _token_ids(f"the tokens of example {i}", encode(x)) for i, x in enumerate(examples)
        ]
    return [_token_ids(f"examples[{i}]", x) for i, x in enumerate(examples)]


# ----------------------------------------------------------------------------- result


@dataclass(frozen=True, repr=False)
class OrderScores(TabularResult):
    """Each shard's log-likelihood in its published order and in its shuffled orders.

    Attributes:
        canonical: Shape (r,): shard i's log-likelihood in published order.
        shuffled: Shape (r, P): row i, column j: shard i in shuffled order j
            (``orders.permutations[i][j]``).
        tokens: Shape (r,): the tokens of each of shard i's orders (the same for every
            order: the examples are tokenized one by one).
        seed: The seed of the orders (``ShardOrders.seed``).
        context_len: Tokens a window feeds the model.
        stride: Tokens between two windows' starts.
        seconds: Wall time of this call.
        tokens_scored: Tokens of the orders scored in this call (shards read back from a
            checkpoint not counted).
        resumed_shards: Shards read back from a checkpoint instead of scored.
    """

    canonical: npt.NDArray[np.float64]
    shuffled: npt.NDArray[np.float64]
    tokens: npt.NDArray[np.int64]
    seed: int
    context_len: int
    stride: int
    seconds: float
    tokens_scored: int
    resumed_shards: int

    _repr_fields = ("n_shards", "permutations_per_shard", "tokens_scored", "tokens_per_second")

    @property
    def n_shards(self) -> int:
        return int(self.canonical.shape[0])

    @property
    def permutations_per_shard(self) -> int:
        return int(self.shuffled.shape[1])

    @property
    def tokens_per_second(self) -> float:
        """Tokens of the orders scored per second of this call (0.0 when none)."""
        return self.tokens_scored / self.seconds if self.seconds > 0 else 0.0

    def rows(self) -> Iterator[tuple[int, int | None, str, float]]:
        """``(shard, permutation, kind, loglik)``, shard by shard, the published order first
        (permutation None, kind ``"canonical"``), then shuffled order j (kind
        ``"permuted"``): the rows ``truescore-fast contamination`` reads."""
        for i in range(self.n_shards):
            yield i, None, "canonical", float(self.canonical[i])
            for j in range(self.permutations_per_shard):
                yield i, j, "permuted", float(self.shuffled[i, j])

    def csv_lines(self) -> Iterator[str]:
        """The rows as CSV text with a header (``shard,permutation,kind,loglik``), each
        log-likelihood written so it reads back bit for bit."""
        yield "shard,permutation,kind,loglik\n"
        for shard, permutation, kind, loglik in self.rows():
            yield f"{shard},{'' if permutation is None else permutation},{kind},{loglik!r}\n"

    def _columns(self) -> Mapping[str, Any]:
        rows = list(self.rows())
        return {
            "shard": [r[0] for r in rows],
            "permutation": [-1 if r[1] is None else r[1] for r in rows],
            "kind": [r[2] for r in rows],
            "loglik": [r[3] for r in rows],
        }

    def summary(self) -> str:
        orders = self.n_shards * (self.permutations_per_shard + 1)
        resumed = (
            f"; {self.resumed_shards} shards read back from the checkpoint"
            if self.resumed_shards
            else ""
        )
        return (
            f"Log-likelihoods of {self.n_shards} shards x (1 published + "
            f"{self.permutations_per_shard} shuffled) orders = {orders} orders, "
            f"{int(self.tokens.sum()) * (self.permutations_per_shard + 1):,} tokens\n"
            f"  sliding window: context_len {self.context_len}, stride {self.stride}; "
            f"orders from seed {self.seed}\n"
            f"  scored {self.tokens_scored:,} tokens in {self.seconds:.1f} s "
            f"({self.tokens_per_second:,.0f} tokens/s){resumed}\n"
            "  these are the order tests' input, not a verdict: test them with "
            "exchangeability_tests or sharded_likelihood_test"
        )


# ----------------------------------------------------------------------------- scoring


class _ShardCell:
    """A shard as a checkpoint cell: one task, its P + 1 log-likelihoods as the sums."""

    n_tasks = 1

    def __init__(self, width: int) -> None:
        self.width = width

    def sums_problem(self, sums: npt.NDArray[np.float64], tasks: int) -> str | None:
        if sums.shape != (self.width,):
            return f"{sums.shape[0]} log-likelihoods saved for a shard of {self.width} orders"
        return None


def _fingerprint(
    tokens: Sequence[npt.NDArray[np.int64]],
    orders: ShardOrders,
    scorer: Any,
    context_len: int,
    stride: int,
) -> tuple[str, str]:
    """(SHA-256 of everything that determines the scores, the model's name)."""
    model = getattr(scorer, "fingerprint", None)
    name = str(getattr(scorer, "name", type(scorer).__qualname__))
    digest = hashlib.sha256()
    for value in (
        _core.__version__,
        name,
        model,
        context_len,
        stride,
        orders.n_examples,
        orders.n_shards,
        orders.permutations_per_shard,
        orders.seed,
    ):
        digest.update(f"{type(value).__name__} {value!r}\n".encode())
    for ids in tokens:
        digest.update(f"{ids.size}\n".encode())
        digest.update(ids.astype("<i8").tobytes())
    return digest.hexdigest(), name


def score_orders(
    examples: str | os.PathLike[str] | Sequence[str] | Sequence[Sequence[int]],
    orders: ShardOrders,
    scorer: TokenScorer,
    *,
    context_len: int = 2048,
    stride: int = 1024,
    batch_size: int = 16,
    text_field: str = "text",
    checkpoint: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
) -> OrderScores:
    """Score every shard of ``orders`` in its published and shuffled orders.

    Each example is tokenized on its own (``scorer.encode``, as the released script's
    ``tokenizer.encode(example)``); an order's tokens are its examples' tokens
    concatenated; its log-likelihood is :func:`sliding_window_loglik`. A shard's P + 1
    orders have the same number of tokens, so they go to ``scorer`` together,
    ``batch_size`` windows of one length per call (memory is bounded by one batch and
    the tokens of ``batch_size`` orders).

    Args:
        examples: The benchmark in published order: a file (:func:`read_examples`), a
            list of strings (needs ``scorer.encode``) or a list of token-id lists.
        orders: From :func:`~truescore_fast.shard_orders` with ``n_examples`` equal to the
            number of examples.
        scorer: A :class:`TokenScorer` (a
            :class:`~truescore_fast.io.transformers_backend.TransformersScorer`, or any
            callable).
        context_len: Tokens a window feeds the model (default 2048, as released); at most
            ``scorer.max_context`` when the scorer has one.
        stride: Tokens between two windows' starts (default 1024), 1 .. ``context_len``.
        batch_size: Windows per call of ``scorer`` (default 16).
        text_field: The field of a JSON Lines object holding the example (default "text").
        checkpoint: A file to save each finished shard to and resume from: run the same
            call again after an interruption and finished shards are read back (bit for
            bit), not scored again. A file written for other examples, orders, window or
            model is refused.
        progress: A progress bar on stderr with tokens per second and the time left
            (tqdm when installed, else one line); None (default) shows it after a second.

    Returns:
        An :class:`OrderScores`; ``canonical`` and ``shuffled`` go straight into
        :func:`~truescore_fast.exchangeability_tests`.

    Raises:
        ValueError, TypeError: naming the argument.
    """
    if not isinstance(orders, ShardOrders):
        raise ArgumentTypeError(
            "orders", f"orders must be a ShardOrders (shard_orders); got {type(orders).__name__}"
        )
    if not callable(scorer):
        raise ArgumentTypeError(
            "scorer", f"scorer must be callable (a TokenScorer); got {type(scorer).__name__}"
        )
    window_spans(2, context_len, stride)  # checks both
    batch = check_positive_int("batch_size", batch_size)
    if not (progress is None or isinstance(progress, (bool, np.bool_))):
        raise ArgumentError(
            "progress", f"progress must be True, False or None (auto); got {one_line(progress)}"
        )
    limit = getattr(scorer, "max_context", None)
    if isinstance(limit, int) and context_len > limit:
        raise ArgumentError(
            "context_len",
            f"context_len must be at most the model's longest input ({limit}); got {context_len}",
        )
    started = time.perf_counter()
    tokens = _encoded(examples, scorer, text_field)
    if len(tokens) != orders.n_examples:
        raise ArgumentError(
            "orders", f"orders are for {orders.n_examples} examples; examples holds {len(tokens)}"
        )
    r, p = orders.n_shards, orders.permutations_per_shard
    lengths = np.array([ids.size for ids in tokens], dtype=np.int64)
    shard_tokens = np.add.reduceat(lengths, orders.offsets[:-1]).astype(np.int64)
    scores = np.zeros((r, p + 1), dtype=np.float64)
    store = None
    if checkpoint is not None:
        fingerprint, name = _fingerprint(tokens, orders, scorer, context_len, stride)
        header = {
            "fingerprint": fingerprint,
            "truescore_fast": _core.__version__,
            "cells": r,
            "replications": [p + 1],
            "key": [name, f"context_len={context_len}", f"stride={stride}", f"seed={orders.seed}"],
        }
        store = Checkpoint(
            checkpoint, _RUN, header, [_ShardCell(p + 1)] * r, width=p + 1, every=0.0
        )
    try:
        done = np.zeros(r, dtype=bool)
        if store is not None:
            for i, (tasks, sums) in enumerate(store.resume()):
                if tasks == 1 and sums is not None:
                    scores[i], done[i] = sums, True
        per_shard = shard_tokens * (p + 1)
        bar = Progress(progress, int(per_shard.sum()), "score", "token",
                       done=int(per_shard[done].sum()), unit_scale=True, rate=True)  # fmt: skip
        try:
            for shard in np.flatnonzero(~done).tolist():
                scores[shard] = _score_shard(
                    tokens, orders, shard, scorer, context_len, stride, batch, bar
                )
                if store is not None:
                    store.save(shard, 1, scores[shard], final=True)
        finally:
            bar.close()
    finally:
        if store is not None:
            store.close()
    return OrderScores(
        canonical=scores[:, 0].copy(),
        shuffled=scores[:, 1:].copy(),
        tokens=shard_tokens,
        seed=orders.seed,
        context_len=context_len,
        stride=stride,
        seconds=time.perf_counter() - started,
        tokens_scored=int(per_shard[~done].sum()),
        resumed_shards=int(done.sum()),
    )


def _score_shard(
    tokens: Sequence[npt.NDArray[np.int64]],
    orders: ShardOrders,
    shard: int,
    scorer: TokenScorer,
    context_len: int,
    stride: int,
    batch: int,
    bar: Progress,
) -> npt.NDArray[np.float64]:
    """Shard ``shard``'s P + 1 log-likelihoods: the published order, then shuffle j."""
    all_orders = np.vstack([orders.canonical(shard)[None, :], orders.permutations[shard]])
    n = int(sum(tokens[k].size for k in all_orders[0]))
    spans = window_spans(n, context_len, stride)
    out = np.zeros(all_orders.shape[0], dtype=np.float64)
    for first in range(0, all_orders.shape[0], batch):
        chunk = all_orders[first : first + batch]
        sequences = np.array([np.concatenate([tokens[k] for k in row]) for row in chunk])
        sequences = sequences.reshape(chunk.shape[0], n)
        out[first : first + chunk.shape[0]] = _window_sums(sequences, spans, scorer, batch)
        bar.update(chunk.shape[0] * n)
    return out
