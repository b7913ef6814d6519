"""truescore_fast.io.scoring: the sliding window against the released script's definition
(tests/reference.py) and a full-context pass, batching, seeds, checkpoints, bad input.

The window arithmetic and the plumbing are tested with a NumPy scorer; the log-likelihoods
with a small randomly initialised GPT-2 (torch and transformers: the ``score`` extra,
skipped with the reason where they are missing).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import truescore_fast as tsf
from commands import run_cli
from truescore_fast.io.scoring import (
    OrderScores,
    read_examples,
    score_orders,
    sliding_window_loglik,
    window_spans,
)


class ContextScorer:
    """A NumPy 'model' whose log-probability of a token depends on its whole context in
    the window: -0.01 * (sum of the window's earlier tokens mod 97) - 0.1 * token."""

    name = "context-scorer"  # one model for the checkpoint, whatever the subclass

    def __init__(self):
        self.calls = []

    def __call__(self, windows):
        self.calls.append([len(w) for w in windows])
        out = []
        for w in windows:
            w = np.asarray(w, dtype=np.int64)
            prefix = np.cumsum(w)[:-1] % 97
            out.append(-0.01 * prefix - 0.1 * w[1:])
        return out


def _ref_context_loglik(tokens, context_len, stride):
    # the released script's definition, target by target, for ContextScorer
    tokens = list(tokens)
    total = 0.0
    for q in range(len(tokens) - 1):
        j = 0 if q < context_len else (q - context_len) // stride + 1
        context = tokens[j * stride : q + 1]
        total += -0.01 * (sum(context) % 97) - 0.1 * tokens[q + 1]
    return total


# --------------------------------------------------------------------------- windows


@pytest.mark.parametrize("context_len, stride", [(8, 4), (8, 8), (8, 1), (5, 3), (16, 16)])
@pytest.mark.parametrize("n_tokens", [0, 1, 2, 3, 8, 9, 10, 17, 30, 41])
def test_windows_score_every_target_once(n_tokens, context_len, stride):
    spans = window_spans(n_tokens, context_len, stride)
    scored = [i for start, end, skip in spans for i in range(start + skip, end)]
    assert scored == list(range(max(n_tokens - 1, 0)))
    assert all(end - start <= context_len for start, end, _ in spans)
    rng = np.random.default_rng(n_tokens)
    tokens = rng.integers(0, 1000, size=n_tokens)
    got = sliding_window_loglik(tokens, ContextScorer(), context_len=context_len, stride=stride)
    assert got == pytest.approx(_ref_context_loglik(tokens, context_len, stride), abs=1e-9)


def test_windows_as_released():
    # t = 9 targets, c = 4, s = 2: k = ceil(5 / 2) = 3 windows after the first
    assert window_spans(10, 4, 2) == [(0, 4, 0), (2, 6, 2), (4, 8, 2), (6, 9, 2)]
    assert window_spans(5, 2048, 1024) == [(0, 4, 0)]


@pytest.mark.parametrize(
    "args, message",
    [
        ((10, 4, 5), "stride must be at most context_len"),
        ((10, 0, 1), "context_len"),
        ((10, 4, 0), "stride"),
        ((-1, 4, 2), "n_tokens"),
    ],
)
def test_window_arguments_refused(args, message):
    with pytest.raises(ValueError, match=message):
        window_spans(*args)


# --------------------------------------------------------------------------- plumbing


def _examples(n, seed=0, vocab=50):
    rng = np.random.default_rng(seed)
    return [rng.integers(1, vocab, size=rng.integers(2, 7)).tolist() for _ in range(n)]


def test_scores_are_each_orders_sliding_window_loglik():
    examples = _examples(13)
    orders = tsf.shard_orders(13, 3, 4, seed=5)
    scores = score_orders(
        examples, orders, ContextScorer(), context_len=6, stride=4, batch_size=3, progress=False
    )
    for i in range(3):
        rows = [orders.canonical(i), *orders.permutations[i]]
        want = [_ref_context_loglik([t for k in row for t in examples[k]], 6, 4) for row in rows]
        got = [scores.canonical[i], *scores.shuffled[i]]
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)
    assert scores.tokens.tolist() == [
        sum(len(examples[k]) for k in orders.canonical(i)) for i in range(3)
    ]


def test_a_shards_orders_share_each_batch_without_padding():
    scorer = ContextScorer()
    orders = tsf.shard_orders(10, 2, 6, seed=1)
    score_orders(
        _examples(10), orders, scorer, context_len=5, stride=3, batch_size=4, progress=False
    )
    # every call holds windows of one length, at most batch_size of them
    assert all(len(set(call)) == 1 and len(call) <= 4 for call in scorer.calls)


def test_rows_and_csv_are_what_contamination_reads(tmp_path):
    examples = _examples(12)
    scores = score_orders(
        examples,
        tsf.shard_orders(12, 3, 5),
        ContextScorer(),
        context_len=8,
        stride=4,
        progress=False,
    )
    path = tmp_path / "scores.csv"
    path.write_text("".join(scores.csv_lines()))
    lines = path.read_text().splitlines()
    assert lines[0] == "shard,permutation,kind,loglik"
    assert lines[1].startswith("0,,canonical,") and lines[2].startswith("0,0,permuted,")
    assert float(lines[1].split(",")[3]) == scores.canonical[0]  # bit for bit
    code, out, err = run_cli("contamination", str(path), "--shard-column", "shard", "--json")
    assert code in (0, 2), err
    report = json.loads(out)
    want = tsf.exchangeability_tests(scores.canonical, scores.shuffled).combine("fisher")
    assert report["p_value"] == pytest.approx(want.p_value, rel=1e-12)
    assert scores.to_dict()["canonical"] == scores.canonical.tolist()
    assert "not a verdict" in scores.summary() and str(scores) == scores.summary()


def test_same_seed_same_scores_other_seed_other_orders():
    examples = _examples(12)
    run = lambda seed: score_orders(  # noqa: E731
        examples,
        tsf.shard_orders(12, 2, 5, seed=seed),
        ContextScorer(),
        context_len=8,
        stride=4,
        progress=False,
    )
    a, b, c = run(3), run(3), run(4)
    assert a.canonical.tobytes() == b.canonical.tobytes()
    assert a.shuffled.tobytes() == b.shuffled.tobytes()
    assert a.canonical.tobytes() == c.canonical.tobytes()  # the published order: no seed
    assert a.shuffled.tobytes() != c.shuffled.tobytes()


def test_text_examples_are_encoded_one_by_one(tmp_path):
    class Encoding(ContextScorer):
        def encode(self, text):
            return [ord(ch) for ch in text]

    path = tmp_path / "bench.txt"
    path.write_text("ab\ncd\nef\ngh")
    assert read_examples(path) == ["ab\n", "cd\n", "ef\n", "gh"]  # line ends kept
    scores = score_orders(
        path, tsf.shard_orders(4, 1, 3), Encoding(), context_len=4, stride=2, progress=False
    )
    text = "ab\ncd\nef\ngh"
    assert scores.canonical[0] == pytest.approx(
        _ref_context_loglik([ord(ch) for ch in text], 4, 2), abs=1e-9
    )


def test_read_examples_formats(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"text": "one"}\n"two"\n')
    assert read_examples(tmp_path / "a.jsonl") == ["one", "two"]
    (tmp_path / "b.jsonl").write_text('{"q": "one"}\n')
    assert read_examples(tmp_path / "b.jsonl", text_field="q") == ["one"]
    (tmp_path / "c.json").write_text('["x", "y"]')
    assert read_examples(tmp_path / "c.json") == ["x", "y"]
    for name, content, message in [
        ("d.jsonl", '{"text": "one"}\n\n', "line 2 is blank"),
        ("e.jsonl", '{"other": 1}\n', "no field 'text'"),
        ("f.jsonl", "[1]\n", "must be a string"),
        ("g.json", '{"a": 1}', "list of strings"),
        ("h.txt", "", "holds no example"),
    ]:
        (tmp_path / name).write_text(content)
        with pytest.raises(ValueError, match=message):
            read_examples(tmp_path / name)
    with pytest.raises(FileNotFoundError):
        read_examples(tmp_path / "missing.txt")


class _Stop(Exception):
    pass


def test_checkpoint_resumes_at_the_first_unfinished_shard(tmp_path):
    examples = _examples(20)
    orders = tsf.shard_orders(20, 4, 5, seed=2)
    kwargs = {"context_len": 6, "stride": 3, "batch_size": 6, "progress": False}
    whole = score_orders(examples, orders, ContextScorer(), **kwargs)

    first_shard_calls = len(window_spans(int(whole.tokens[0]), 6, 3))  # one batch of 6 orders

    class Failing(ContextScorer):
        def __call__(self, windows):
            if len(self.calls) >= first_shard_calls + 1:  # partway through the second shard
                raise _Stop
            return super().__call__(windows)

    path = tmp_path / "score.ckpt"
    with pytest.raises(_Stop):
        score_orders(examples, orders, Failing(), checkpoint=path, **kwargs)
    first = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line.get("cell") for line in first[1:]] == [0]  # the first shard saved
    again = ContextScorer()
    resumed = score_orders(examples, orders, again, checkpoint=path, **kwargs)
    assert resumed.resumed_shards == 1
    assert resumed.canonical.tobytes() == whole.canonical.tobytes()
    assert resumed.shuffled.tobytes() == whole.shuffled.tobytes()
    assert resumed.tokens_scored == int(whole.tokens[1:].sum()) * 6
    # a finished run is read back whole: no call at all
    idle = ContextScorer()
    done = score_orders(examples, orders, idle, checkpoint=path, **kwargs)
    assert idle.calls == [] and done.resumed_shards == 4
    # another window, other examples: refused
    with pytest.raises(ValueError, match="different score run"):
        score_orders(
            examples,
            orders,
            ContextScorer(),
            checkpoint=path,
            context_len=8,
            stride=3,
            progress=False,
        )
    with pytest.raises(ValueError, match="different score run"):
        score_orders(_examples(20, seed=9), orders, ContextScorer(), checkpoint=path, **kwargs)
    # an edited record: refused, naming the line
    lines = path.read_text().splitlines()
    record = json.loads(lines[1])
    record["sums"][0] = (-1.0).hex()
    lines[1] = json.dumps(record, separators=(",", ":"))
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match="line 2: the record does not match its checksum"):
        score_orders(examples, orders, ContextScorer(), checkpoint=path, **kwargs)


def test_progress_line_shows_tokens_per_second(monkeypatch, capsys):
    import builtins

    real_import = builtins.__import__

    def no_tqdm(name, *args, **kwargs):
        if name.startswith("tqdm"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tqdm)
    score_orders(
        _examples(8),
        tsf.shard_orders(8, 2, 3),
        ContextScorer(),
        context_len=4,
        stride=2,
        progress=True,
    )
    err = capsys.readouterr().err
    assert "tokens/s" in err and "left" in err and err.endswith("\n")


@pytest.mark.parametrize(
    "change, error, message",
    [
        ({"orders": "x"}, TypeError, "orders must be a ShardOrders"),
        ({"scorer": 3}, TypeError, "scorer must be callable"),
        ({"stride": 9}, ValueError, "stride must be at most context_len"),
        ({"batch_size": 0}, ValueError, "batch_size"),
        ({"progress": "yes"}, ValueError, "progress must be"),
        ({"examples": [[1, 2]] * 5}, ValueError, "orders are for 6 examples"),
        ({"examples": ["a"] * 6}, TypeError, "examples are text but scorer has no encode"),
        ({"examples": [[1, -2]] * 6}, ValueError, "token id out of range"),
        (
            {"examples": [np.array([1, 2**63], dtype=np.uint64)] * 6},
            ValueError,
            "token id out of range",
        ),
        ({"examples": [[1, 2**63]] * 6}, TypeError, "integer token ids"),
        ({"text_field": 3}, TypeError, "text_field must be a string"),
        ({"examples": [[1.5]] * 6}, TypeError, "integer token ids"),
        ({"examples": 3}, TypeError, "examples must be"),
        ({"scorer": lambda w: [np.zeros(1)] * len(w)}, ValueError, "log-probabilities per window"),
        ({"scorer": lambda w: [np.full(len(x) - 1, np.nan) for x in w]}, ValueError, "not finite"),
    ],
)
def test_bad_arguments_are_named(change, error, message):
    kwargs = {
        "examples": _examples(6),
        "orders": tsf.shard_orders(6, 2, 2),
        "scorer": ContextScorer(),
        "context_len": 8,
        "stride": 4,
        "progress": False,
    }
    kwargs.update(change)
    with pytest.raises(error, match=message):
        score_orders(**kwargs)


def test_context_len_above_the_models_is_refused():
    scorer = ContextScorer()
    scorer.max_context = 16
    with pytest.raises(
        ValueError, match=r"context_len must be at most the model's longest input \(16\)"
    ):
        score_orders(_examples(4), tsf.shard_orders(4, 1, 2), scorer, context_len=32, stride=16)


def test_order_scores_is_a_result():
    scores = score_orders(
        _examples(6),
        tsf.shard_orders(6, 2, 2),
        ContextScorer(),
        context_len=4,
        stride=2,
        progress=False,
    )
    assert isinstance(scores, OrderScores)
    json.dumps(scores.to_dict(), allow_nan=False)
    assert repr(scores).startswith("OrderScores(n_shards=2, permutations_per_shard=2")
    assert "<table>" in scores._repr_html_()
