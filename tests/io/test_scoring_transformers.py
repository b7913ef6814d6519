"""The transformers backend of truescore_fast.io.scoring and ``truescore-fast score``, on a
small randomly initialised GPT-2 built from a config (no download): the sliding-window
log-likelihood against a full-context pass and against the released script's definition
(tests/reference.py), batched against unbatched, seeds, the command line.

Needs torch and transformers (the ``score`` extra; the ``test`` extra brings them).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from commands import run_cli
from reference import ref_full_context_loglik, ref_sliding_window_loglik

torch = pytest.importorskip("torch", reason="the score extra (torch) is not installed")
pytest.importorskip("transformers", reason="the score extra (transformers) is not installed")

import truescore_fast as tsf  # noqa: E402
from truescore_fast.io.scoring import score_orders, sliding_window_loglik  # noqa: E402
from truescore_fast.io.transformers_backend import TransformersScorer  # noqa: E402

VOCAB = 60


@pytest.fixture(scope="module")
def model():
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(1)
    config = GPT2Config(vocab_size=VOCAB, n_positions=32, n_embd=16, n_layer=2, n_head=2)
    built = GPT2LMHeadModel(config)
    built.eval()
    return built


@pytest.fixture(scope="module")
def saved(model, tmp_path_factory):
    """The model and a character-level tokenizer saved where from_pretrained reads them."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {ch: i for i, ch in enumerate("abcdefghijklmnopqrstuvwxyz .\n")}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="."))
    tokenizer.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    directory = tmp_path_factory.mktemp("model")
    model.save_pretrained(directory)
    PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token=".").save_pretrained(directory)
    bench = directory / "bench.txt"
    rng = np.random.default_rng(0)
    words = ["ab", "cde", "fg", "hij", "kl", "mno"]
    bench.write_text("".join(" ".join(rng.choice(words, size=3)) + ".\n" for _ in range(12)))
    return directory, bench


def _tokens(n, seed):
    return np.random.default_rng(seed).integers(0, VOCAB, size=n).tolist()


@pytest.mark.parametrize("n", [2, 5, 17, 33])
def test_one_window_equals_the_full_context_pass(model, n):
    # n - 1 <= context_len: the sliding window is one forward pass over everything
    tokens = _tokens(n, n)
    got = sliding_window_loglik(tokens, TransformersScorer(model), context_len=32, stride=16)
    assert got == pytest.approx(ref_full_context_loglik(tokens, model), rel=1e-5, abs=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("context_len, stride", [(8, 4), (8, 8), (8, 1), (7, 3), (16, 5)])
@pytest.mark.parametrize("n", [9, 10, 20, 31, 40])
def test_many_windows_equal_the_released_definition(model, n, context_len, stride):
    tokens = _tokens(n, 100 + n)
    scorer = TransformersScorer(model)
    got = sliding_window_loglik(tokens, scorer, context_len=context_len, stride=stride)
    want = ref_sliding_window_loglik(tokens, model, context_len, stride)
    assert got == pytest.approx(want, rel=1e-5, abs=1e-4)
    # and the window is not a no-op: the full context (where the model takes it) differs
    if context_len < n - 1 <= 32:
        assert abs(got - ref_full_context_loglik(tokens, model)) > 1e-3


@pytest.mark.slow
def test_batched_equals_unbatched(model):
    rng = np.random.default_rng(3)
    examples = [rng.integers(0, VOCAB, size=rng.integers(2, 6)).tolist() for _ in range(15)]
    orders = tsf.shard_orders(15, 3, 9, seed=4)
    runs = [
        score_orders(
            examples,
            orders,
            TransformersScorer(model),
            context_len=12,
            stride=5,
            batch_size=batch,
            progress=False,
        )
        for batch in (1, 4, 64)
    ]
    for other in runs[1:]:
        np.testing.assert_allclose(other.canonical, runs[0].canonical, rtol=1e-6, atol=1e-5)
        np.testing.assert_allclose(other.shuffled, runs[0].shuffled, rtol=1e-6, atol=1e-5)
    # each unbatched order is its own sliding-window log-likelihood
    row = orders.permutations[1][2]
    want = sliding_window_loglik(
        [t for k in row for t in examples[k]], TransformersScorer(model), context_len=12, stride=5
    )
    assert runs[0].shuffled[1, 2] == pytest.approx(want, rel=1e-6)


def test_ragged_windows_are_padded_without_changing_them(model):
    scorer = TransformersScorer(model)
    windows = [_tokens(n, n) for n in (3, 9, 6)]
    together = scorer(windows)
    for window, values in zip(windows, together, strict=True):
        np.testing.assert_allclose(values, scorer([window])[0], rtol=1e-6, atol=1e-6)


def test_reproducible_from_the_seed(model):
    examples = [_tokens(4, k) for k in range(10)]
    run = lambda seed: score_orders(  # noqa: E731
        examples,
        tsf.shard_orders(10, 2, 4, seed=seed),
        TransformersScorer(model),
        context_len=16,
        stride=8,
        progress=False,
    )
    a, b = run(11), run(11)
    assert a.canonical.tobytes() == b.canonical.tobytes()
    assert a.shuffled.tobytes() == b.shuffled.tobytes()
    assert a.shuffled.tobytes() != run(12).shuffled.tobytes()


def test_loaded_from_a_path_with_its_tokenizer(model, saved):
    directory, _ = saved
    scorer = TransformersScorer(str(directory))
    assert scorer.encode("ab c") == [0, 1, 26, 2]
    assert scorer.max_context == 32
    tokens = scorer.encode("abc defg hij.\n")
    assert sliding_window_loglik(tokens, scorer, context_len=32, stride=16) == pytest.approx(
        ref_full_context_loglik(tokens, model), rel=1e-5
    )


def test_fingerprint_tells_weights_apart(model):
    from transformers import GPT2LMHeadModel

    other = GPT2LMHeadModel(model.config)
    assert TransformersScorer(model).fingerprint != TransformersScorer(other).fingerprint
    assert TransformersScorer(model).fingerprint == TransformersScorer(model).fingerprint


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"dtype": "float64"}, ValueError, "dtype must be one of"),
        ({"device": "nonsense"}, ValueError, "device must be a torch device"),
        ({"tokenizer": 3}, TypeError, "tokenizer must have encode"),
    ],
)
def test_bad_backend_arguments(model, kwargs, error, message):
    with pytest.raises(error, match=message):
        TransformersScorer(model, **kwargs)
    with pytest.raises(TypeError, match="model must be a name, a path or a torch.nn.Module"):
        TransformersScorer(3)


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is here: cuda can be used")
def test_an_unusable_device_is_a_value_error(model):
    with pytest.raises(ValueError, match="device 'cuda' cannot be used here"):
        TransformersScorer(model, device="cuda")


def test_a_missing_extra_names_it(monkeypatch, model):
    monkeypatch.setitem(__import__("sys").modules, "torch", None)
    with pytest.raises(ImportError, match=r"pip install 'truescore-fast\[score\]'"):
        TransformersScorer(model)


def test_score_then_contamination_on_the_command_line(saved, tmp_path):
    directory, bench = saved
    out = tmp_path / "scores.csv"
    code, stdout, err = run_cli(
        "score",
        str(bench),
        "--model",
        str(directory),
        "--shards",
        "3",
        "--permutations",
        "9",
        "--context-len",
        "16",
        "--stride",
        "8",
        "--batch-size",
        "5",
        "--no-progress",
        "-o",
        str(out),
        "--json",
    )
    assert code == 0, err
    report = json.loads(stdout)
    assert report["n_shards"] == 3 and report["tokens_scored"] == report["tokens"] > 0
    assert report["tokens_per_second"] > 0
    lines = out.read_text().splitlines()
    assert lines[0] == "shard,permutation,kind,loglik" and len(lines) == 1 + 3 * 10
    # the same numbers as the library call
    scorer = TransformersScorer(str(directory))
    want = score_orders(
        bench, tsf.shard_orders(12, 3, 9), scorer, context_len=16, stride=8, progress=False
    )
    assert [float(x.split(",")[3]) for x in lines[1:]] == [r[3] for r in want.rows()]
    code, stdout, err = run_cli("contamination", str(out), "--shard-column", "shard")
    assert code in (0, 2), err
    assert "Pooled exchangeability tests over 3 shards" in stdout


@pytest.mark.slow
def test_score_resumes_from_its_checkpoint(saved, tmp_path):
    directory, bench = saved
    args = [
        "score",
        str(bench),
        "--model",
        str(directory),
        "--shards",
        "2",
        "--permutations",
        "3",
        "--context-len",
        "16",
        "--stride",
        "8",
        "--no-progress",
        "--checkpoint",
        str(tmp_path / "c.ckpt"),
    ]
    code, first, err = run_cli(*args)
    assert code == 0, err
    code, second, err = run_cli(*args, "-o", str(tmp_path / "s.csv"))
    assert code == 0, err
    assert "2 shards read back from the checkpoint" in second
    assert (tmp_path / "s.csv").read_text() == first


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--stride", "9", "--context-len", "8"], "--stride must be at most --context-len (8)"),
        (["--context-len", "64"], "--context-len must be at most the model's longest input (32)"),
        (["--shards", "13"], "--shards must be at most the number of examples (12)"),
        (["--batch-size", "0"], "--batch-size must be at least 1"),
        (["--json"], "--json describes the run when -o FILE"),
    ],
)
def test_score_refusals_are_one_line(saved, extra, message):
    directory, bench = saved
    args = [
        "score",
        str(bench),
        "--model",
        str(directory),
        "--shards",
        "2",
        "--permutations",
        "3",
        "--context-len",
        "16",
        "--stride",
        "8",
    ]
    # a later flag replaces an earlier one
    code, out, err = run_cli(*args, *extra)
    assert code == 1
    assert err.strip().count("\n") == 0 and message in err, err


def test_score_with_a_missing_model_is_one_line(saved, tmp_path):
    _, bench = saved
    code, out, err = run_cli(
        "score",
        str(bench),
        "--model",
        str(tmp_path / "nothing"),
        "--shards",
        "2",
        "--permutations",
        "3",
    )
    assert code == 1 and err.startswith("error: --model ") and err.count("\n") == 1, err


@pytest.mark.parametrize("case", ["dangling -o", "directory -o", "dangling --checkpoint",
                                  "directory --checkpoint", "missing folder -o"])  # fmt: skip
def test_score_checks_its_output_and_checkpoint_before_loading_the_model(saved, tmp_path, case):
    """The output paths go the package's one way (truescore_fast/_output.py) and are
    checked before any work: with a model path that does not exist, the refusal names the
    path, not the model (a check after loading would report the model first)."""
    _, bench = saved
    (tmp_path / "dir.csv").mkdir()
    (tmp_path / "dangling.csv").symlink_to(tmp_path / "gone" / "x.csv")
    target = {
        "dangling -o": ["-o", str(tmp_path / "dangling.csv")],
        "directory -o": ["-o", str(tmp_path / "dir.csv")],
        "dangling --checkpoint": [
            "-o",
            str(tmp_path / "s.csv"),
            "--checkpoint",
            str(tmp_path / "dangling.csv"),
        ],  # fmt: skip
        "directory --checkpoint": [
            "-o",
            str(tmp_path / "s.csv"),
            "--checkpoint",
            str(tmp_path / "dir.csv"),
        ],  # fmt: skip
        "missing folder -o": ["-o", str(tmp_path / "nowhere" / "s.csv")],
    }[case]
    flag = "--checkpoint" if "checkpoint" in case else "-o"
    code, _, err = run_cli("score", str(bench), "--model", str(tmp_path / "no-model"),
                           "--shards", "2", "--permutations", "3", *target)  # fmt: skip
    assert code == 1 and err.startswith(f"error: {flag}") and err.count("\n") == 1, err
    assert not (tmp_path / "gone").exists()
