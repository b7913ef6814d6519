"""The Hugging Face ``transformers`` backend of :mod:`truescore_fast.io.scoring`: a causal
language model as a :class:`~truescore_fast.io.scoring.TokenScorer` (the ``score`` extra:
torch and transformers, imported when a scorer is made, never by ``import
truescore_fast``).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from truescore_fast._validation import optional_module
from truescore_fast.errors import ArgumentError, ArgumentTypeError

__all__ = ["TransformersScorer"]


_EXTRA = {"extra": "score"}


def _torch() -> Any:
    return optional_module(
        "torch", requirement="torch>=2.13", purpose="scoring with transformers", **_EXTRA
    )


class TransformersScorer:
    """A Hugging Face ``transformers`` causal language model as a
    :class:`~truescore_fast.io.scoring.TokenScorer`
    (the ``score`` extra: torch and transformers).

    Each window runs through the model once (its tokens but the last as input, no cache);
    the log-softmax of the logits, in float32 whatever the model's dtype, is gathered at
    the next tokens, as the released script does. Windows of different lengths in one
    batch are right-padded: a causal model's outputs at a position do not depend on the
    positions after it, so padding changes nothing that is read.

    Args:
        model: A name or local path (``AutoModelForCausalLM.from_pretrained``), or a loaded
            causal LM (a ``torch.nn.Module`` returning ``.logits``).
        tokenizer: A name or path (``AutoTokenizer.from_pretrained``), an object with
            ``encode(text)``, or None: the tokenizer of ``model`` when it is a name or
            path (none for a loaded model: then give token ids to
            :func:`~truescore_fast.io.scoring.score_orders`).
        device: Any torch device (default ``"cpu"``; ``"cuda"``, ``"cuda:1"``, ``"mps"``).
        dtype: ``"float32"``, ``"bfloat16"``, ``"float16"``, a ``torch.dtype``, or None
            (a loaded model's own; float32 for a name or path). A loaded model is moved
            to ``device`` and ``dtype`` in place (``torch.nn.Module.to``) and put in
            evaluation mode.
    """

    def __init__(
        self,
        model: Any,
        *,
        tokenizer: Any = None,
        device: Any = "cpu",
        dtype: Any = None,
    ) -> None:
        torch = _torch()
        optional_module(
            "transformers",
            requirement="transformers>=5.25,<6",
            purpose="scoring with transformers",
            **_EXTRA,
        )
        import transformers

        try:
            self.device = torch.device(device)
        except (RuntimeError, TypeError) as error:
            raise ArgumentError(
                "device", f"device must be a torch device; got {device!r}: {error}"
            ) from None
        resolved = _dtype(torch, dtype)
        if isinstance(model, (str, os.PathLike)):
            name = os.fspath(model)
            self.model = transformers.AutoModelForCausalLM.from_pretrained(
                name, dtype=resolved or torch.float32
            )
            if tokenizer is None:
                tokenizer = name
        elif isinstance(model, torch.nn.Module):
            name = str(getattr(getattr(model, "config", None), "name_or_path", "") or "model")
            self.model = model if resolved is None else model.to(resolved)
        else:
            raise ArgumentTypeError(
                "model",
                f"model must be a name, a path or a torch.nn.Module; got {type(model).__name__}",
            )
        try:
            self.model.to(self.device)
        except (RuntimeError, AssertionError) as error:  # torch built without CUDA asserts
            raise ArgumentError(
                "device", f"device {device!r} cannot be used here: {error}"
            ) from None
        self.model.eval()
        if isinstance(tokenizer, (str, os.PathLike)):
            tokenizer = transformers.AutoTokenizer.from_pretrained(os.fspath(tokenizer))
        if tokenizer is not None and not callable(getattr(tokenizer, "encode", None)):
            raise ArgumentTypeError(
                "tokenizer", "tokenizer must have encode(text), or be a name or a path"
            )
        self.tokenizer = tokenizer
        self.name = name
        config = getattr(self.model, "config", None)
        limit = getattr(config, "max_position_embeddings", None) or getattr(
            config, "n_positions", None
        )
        self.max_context: int | None = int(limit) if isinstance(limit, int) else None
        self.fingerprint = self._weights_digest(torch)

    def _weights_digest(self, torch: Any) -> str:
        """The model's name, dtype, configuration and a strided sample of every weight."""
        digest = hashlib.sha256(f"{self.name}\n".encode())
        config = getattr(self.model, "config", None)
        if config is not None and hasattr(config, "to_json_string"):
            digest.update(config.to_json_string().encode())
        with torch.no_grad():
            for key, tensor in self.model.state_dict().items():
                flat = tensor.detach().reshape(-1)
                step = max(1, flat.numel() // 64)
                sample = flat[::step][:64].to("cpu", torch.float64).numpy()
                digest.update(f"{key} {tuple(tensor.shape)} {tensor.dtype}\n".encode())
                digest.update(sample.tobytes())
        return digest.hexdigest()

    def encode(self, text: str) -> list[int]:
        """The token ids of one example (the tokenizer's ``encode`` with its defaults)."""
        if not isinstance(text, str):
            raise ArgumentTypeError("text", f"text must be a string; got {type(text).__name__}")
        if self.tokenizer is None:
            raise TypeError("this TransformersScorer has no tokenizer: give token ids instead")
        return list(self.tokenizer.encode(text))

    def __call__(self, windows: Sequence[Sequence[int]], /) -> list[npt.NDArray[np.float64]]:
        torch = _torch()
        if len(windows) == 0:
            return []
        lengths = [len(w) for w in windows]
        width = max(lengths)
        padded = np.zeros((len(windows), width), dtype=np.int64)
        for row, window in enumerate(windows):
            padded[row, : len(window)] = window
        ids = torch.from_numpy(padded).to(self.device)
        out: list[npt.NDArray[np.float64]] = []
        with torch.inference_mode():
            logits = self.model(input_ids=ids[:, :-1], use_cache=False).logits
            for row, length in enumerate(lengths):
                # one row at a time: the float32 copy of a row's logits, not the batch's
                scores = torch.log_softmax(logits[row, : length - 1].float(), dim=-1)
                picked = scores.gather(-1, ids[row, 1:length].unsqueeze(-1)).squeeze(-1)
                out.append(picked.double().cpu().numpy())
        return out


def _dtype(torch: Any, dtype: Any) -> Any:
    if dtype is None or dtype == "auto":
        return None
    if isinstance(dtype, torch.dtype):
        return dtype
    names = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
    if dtype not in names:
        raise ArgumentError(
            "dtype", f"dtype must be one of {sorted(names)} or a torch.dtype; got {dtype!r}"
        )
    return names[dtype]
