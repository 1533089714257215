"""Where and how a run happened: the model that produced the outputs, how tokens were
chosen, the machine, and the assertion types the run could use (``environment`` in
``results.json``). The judge's model is described by the same :class:`ModelInfo`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Any, Literal

from skilleval.results.codec import OMIT_EMPTY, meta
from skilleval.util.frozen import frozen


@frozen
class ModelInfo:
    """What produced the outputs: enough to tell two models apart byte for byte."""

    kind: str = field(metadata=meta("gguf, openai, echo, scripted …"))
    name: str
    file: str | None = None
    size: int | None = field(default=None, metadata=meta(minimum=0))
    sha256: str | None = field(default=None, metadata=meta("Byte-exact identity of a model file."))
    details: Mapping[str, Any] = field(default_factory=dict, metadata=meta(omit=OMIT_EMPTY))
    error: str | None = field(
        default=None, metadata=meta("Why the identity could not be read.", omit=OMIT_EMPTY)
    )


@frozen
class ModelError:
    """A model whose identity could not be read."""

    error: str


@frozen
class DecodingInfo:
    """How tokens were chosen."""

    mode: Literal["deterministic", "distribution"]
    seed: int
    max_tokens: int = field(metadata=meta(minimum=1))
    temperature: float = field(metadata=meta(minimum=0))
    top_p: float | None = field(default=None, metadata=meta(omit=OMIT_EMPTY, minimum=0, maximum=1))
    greedy: bool | None = field(default=None, metadata=meta(omit=OMIT_EMPTY))


@frozen
class RegistryEntry:
    """One assertion type the run could use."""

    name: str
    tier: Literal["deterministic", "model"]
    origin: str = field(
        metadata=meta("builtin, a plugin folder, or an entry point with its distribution.")
    )
    summary: str
    defined_at: str | None = field(
        default=None, metadata=meta("file:line of a plugin's definition.")
    )


@frozen
class WaitPolicyInfo:
    """How the in-process model's threads waited between pieces of work (OpenMP)."""

    policy: str = field(
        metadata=meta("`ACTIVE` or `PASSIVE`, or `default` for OpenMP's own bounded spin.")
    )
    reason: str = field(metadata=meta("Why: set by the user, or what the machine was doing."))


@frozen
class KernelsInfo:
    """What the kernel probe measured for the in-process model on this build
    (engine/kernel_probe.py)."""

    splits: bool = field(
        metadata=meta("A prompt gave the same logits whole and split into other batches.")
    )
    batches: bool = field(
        metadata=meta("A sequence gave the same logits decoded alone and beside others.")
    )
    prompt_grid: int | None = field(
        default=None,
        metadata=meta(
            "Prompt batches ended at multiples of this many tokens, one at a time, so that "
            "replies do not depend on what was evaluated before (set when splits differ).",
            omit=OMIT_EMPTY,
            minimum=1,
        ),
    )


@frozen
class LanesInfo:
    """How the in-process model's batched decoding used its threads, and what the lane probe
    measured to decide it (engine/lane_probe.py; milliseconds per generated token)."""

    count: int = field(
        metadata=meta(
            "Decoders working at once: 1 is one batched decoder with every thread; more are "
            "lanes, each a context of its own with a share of the threads.",
            minimum=1,
        )
    )
    width: int = field(metadata=meta("Requests one decoder held at once.", minimum=1))
    threads: int = field(metadata=meta("CPU threads of each decoder.", minimum=1))
    one_ms: float = field(metadata=meta("One sequence decoded with every thread.", minimum=0))
    batched_ms: float = field(
        metadata=meta("As many sequences as threads decoded together, every thread.", minimum=0)
    )
    lanes_ms: float = field(
        metadata=meta("One-thread decoders, one per thread, decoding at the same time.", minimum=0)
    )
    same_bits: bool = field(
        metadata=meta("A step's logits were bitwise the same with one thread and with all.")
    )


@frozen
class Environment:
    """Where and how the run happened."""

    model: ModelInfo
    model_spec: Mapping[str, Any] = field(metadata=meta("The `model:` setting as loaded."))
    decoding: DecodingInfo
    trials: int = field(metadata=meta(minimum=1))
    python: str
    platform: str
    registry: tuple[RegistryEntry, ...]
    threads: int | None = field(
        default=None,
        metadata=meta("CPU threads the in-process model was given.", omit=OMIT_EMPTY, minimum=1),
    )
    threads_reason: str | None = field(
        default=None,
        metadata=meta(
            "Why that many threads: set in `model.threads`, every usable core, or fewer "
            "because other processes kept cores busy when the model loaded.",
            omit=OMIT_EMPTY,
        ),
    )
    batch_width: int | None = field(
        default=None,
        metadata=meta(
            "Requests the in-process model decoded together (1: one at a time).",
            omit=OMIT_EMPTY,
            minimum=1,
        ),
    )
    batch_width_reason: str | None = field(
        default=None,
        metadata=meta(
            "Why the in-process model decoded one at a time although `parallel` or `--jobs` "
            "asked for more: batching would have changed its replies on this build.",
            omit=OMIT_EMPTY,
        ),
    )
    kernels: KernelsInfo | None = field(default=None, metadata=meta(omit=OMIT_EMPTY))
    chat_layout: tuple[str, ...] = field(
        default=(),
        metadata=meta(
            "How conversations were rewritten so that the model's chat template accepts them: "
            "`fold-system` (a system turn's text went into the next user turn), `merge-turns` "
            "(consecutive turns of one role were joined). Learned from the template.",
            omit=OMIT_EMPTY,
        ),
    )
    wait_policy: WaitPolicyInfo | None = field(default=None, metadata=meta(omit=OMIT_EMPTY))
    lanes: LanesInfo | None = field(default=None, metadata=meta(omit=OMIT_EMPTY))
    gpu_layers: int | None = field(
        default=None,
        metadata=meta(
            "Layers of the in-process model offloaded to a GPU (`model.gpu_layers`; -1: all).",
            omit=OMIT_EMPTY,
            minimum=-1,
        ),
    )
    instruction_sets: tuple[str, ...] = field(
        default=(),
        metadata=meta(
            "What the in-process model's llama.cpp build was compiled with, from its system "
            "info (`AVX2`, `AVX512`, `AMX_INT8`, and kernel options such as `LLAMAFILE`): "
            "greedy replies are byte-identical on the same build and CPU.",
            omit=OMIT_EMPTY,
        ),
    )
