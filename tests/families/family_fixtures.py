"""Tiny GGUF fixtures for chat-template families, made from the embedded model without a download.

Each fixture is SmolLM2-135M-Instruct (the embedded model) with its metadata rewritten by the
``gguf`` package: the published chat template of one family (``tests/data/chat-templates``),
and a vocabulary whose special tokens carry that family's names. SmolLM2 was trained to open a
turn with id 1 (``<|im_start|>``) and to end one with id 2 (``<|im_end|>``); a fixture renames
id 2 to the family's end-of-turn token, so the token the weights emit to end a reply *is* that
family's end-of-turn token, and renames id 1 to the token that opens the model's own turn.
The other renamed ids (3 to 16: code and notebook markers the chat weights never use) give
the family's remaining markup a single control token each, as in the real vocabulary.

The end-of-turn token is made known to llama.cpp the ways real GGUFs do it:

* ``eos``: the end-of-turn token is ``tokenizer.ggml.eos_token_id`` (Llama-3 Instruct, Qwen,
  Mistral);
* ``eot``: ``eos`` is another token (Gemma's ``<eos>``) and ``tokenizer.ggml.eot_token_id``
  names the end of turn (Gemma-2 as llama.cpp's converter writes it);
* ``text``: ``eos`` is another token and no key names the end of turn; llama.cpp finds it by
  its text, as it does for Gemma-3's ``<end_of_turn>`` and Phi-3's ``<|end|>``.

The tensors are copied byte for byte, so the weights are the embedded model's.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

TEMPLATES = Path(__file__).resolve().parent.parent / "data" / "chat-templates"

BUILDER_VERSION = 1
"""Part of every fixture's cache key: bump when the way a fixture is written changes."""

TURN_START = 1
"""The id SmolLM2 opens a turn with (``<|im_start|>``)."""

TURN_END = 2
"""The id SmolLM2 ends a turn with (``<|im_end|>``): every family's end-of-turn token."""

EndKnownBy = Literal["eos", "eot", "text"]


@dataclass(frozen=True)
class Family:
    """One chat-template family and how its fixture renames SmolLM2's special tokens."""

    name: str
    template: str
    """A file in ``tests/data/chat-templates``."""
    tokens: Mapping[int, str]
    """New text for ids 0 to 16; ids not listed keep SmolLM2's."""
    end_known_by: EndKnownBy
    bos: int | None = None
    """``tokenizer.ggml.bos_token_id``; None keeps SmolLM2's (1)."""
    eos: int = TURN_END
    """``tokenizer.ggml.eos_token_id``; the end-of-turn id unless ``end_known_by`` says other."""
    unknown: int | None = None
    markup: tuple[str, ...] = field(default=())
    """The family's special tokens as its markup spells them, each a single token."""

    @property
    def end_token(self) -> str:
        """The text of the family's end-of-turn token."""
        return self.tokens[TURN_END]

    def template_text(self) -> str:
        return (TEMPLATES / self.template).read_text(encoding="utf-8")


FAMILIES: tuple[Family, ...] = (
    Family(
        name="llama3",
        template="meta-llama-Llama-3.2-3B-Instruct.jinja",
        tokens={
            0: "<|end_of_text|>",
            TURN_START: "<|start_header_id|>",
            TURN_END: "<|eot_id|>",
            3: "<|end_header_id|>",
            4: "<|begin_of_text|>",
            5: "<|eom_id|>",
            6: "<|python_tag|>",
            7: "<|finetune_right_pad_id|>",
        },
        end_known_by="eos",
        bos=4,
        markup=("<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"),
    ),
    Family(
        name="qwen2.5",
        template="Qwen-Qwen2.5-7B-Instruct.jinja",
        tokens={
            0: "<|endoftext|>",
            TURN_START: "<|im_start|>",
            TURN_END: "<|im_end|>",
            3: "<tool_call>",
            4: "</tool_call>",
        },
        end_known_by="eos",
        bos=0,
        markup=("<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"),
    ),
    Family(
        name="qwen3",
        template="Qwen-Qwen3-0.6B.jinja",
        tokens={
            0: "<|endoftext|>",
            TURN_START: "<|im_start|>",
            TURN_END: "<|im_end|>",
            3: "<tool_call>",
            4: "</tool_call>",
            5: "<think>",
            6: "</think>",
            7: "<tool_response>",
            8: "</tool_response>",
        },
        end_known_by="eos",
        bos=0,
        markup=("<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_response>"),
    ),
    Family(
        name="gemma2",
        template="google-gemma-2-2b-it.jinja",
        tokens={
            0: "<pad>",
            TURN_START: "<start_of_turn>",
            TURN_END: "<end_of_turn>",
            3: "<eos>",
            4: "<bos>",
            5: "<unk>",
            6: "<mask>",
        },
        end_known_by="eot",
        bos=4,
        eos=3,
        unknown=5,
        markup=("<bos>", "<start_of_turn>", "<end_of_turn>"),
    ),
    Family(
        name="gemma3",
        template="google-gemma-3-it.jinja",
        tokens={
            0: "<pad>",
            TURN_START: "<start_of_turn>",
            TURN_END: "<end_of_turn>",
            3: "<eos>",
            4: "<bos>",
            5: "<unk>",
            6: "<mask>",
            7: "<start_of_image>",
        },
        end_known_by="text",
        bos=4,
        eos=3,
        unknown=5,
        markup=("<bos>", "<start_of_turn>", "<end_of_turn>", "<start_of_image>"),
    ),
    Family(
        name="phi3.5",
        template="microsoft-Phi-3.5-mini-instruct.jinja",
        tokens={
            0: "<|endoftext|>",
            TURN_START: "<|assistant|>",
            TURN_END: "<|end|>",
            3: "<|user|>",
            4: "<|system|>",
            5: "<s>",
            6: "</s>",
            7: "<unk>",
        },
        end_known_by="text",
        bos=5,
        eos=0,
        unknown=7,
        markup=("<|system|>", "<|user|>", "<|assistant|>", "<|end|>"),
    ),
    Family(
        name="mistral-v0.3",
        template="mistralai-Mistral-7B-Instruct-v0.3.jinja",
        tokens={
            0: "<unk>",
            TURN_START: "<s>",
            TURN_END: "</s>",
            3: "[INST]",
            4: "[/INST]",
            5: "[TOOL_CALLS]",
            6: "[AVAILABLE_TOOLS]",
            7: "[/AVAILABLE_TOOLS]",
            8: "[TOOL_RESULTS]",
            9: "[/TOOL_RESULTS]",
        },
        end_known_by="eos",
        bos=TURN_START,
        unknown=0,
        markup=("<s>", "[INST]", "[/INST]", "</s>", "[AVAILABLE_TOOLS]", "[TOOL_RESULTS]"),
    ),
)

CONTROL = Family(
    name="control",
    template="Qwen-Qwen2.5-7B-Instruct.jinja",
    tokens={0: "<|nothing|>", TURN_START: "<|im_start|>", TURN_END: "<|im_close|>", 3: "<|halt|>"},
    end_known_by="text",
    bos=0,
    eos=3,
    markup=("<|im_start|>", "<|im_close|>"),
)
"""A negative control, not a family: SmolLM2 still ends its turns with id 2, but neither a key
nor its text (``<|im_close|>``, in no list of llama.cpp's) makes it an end of generation."""

BY_NAME = {family.name: family for family in (*FAMILIES, CONTROL)}


def fixture_key(family: Family, source: Path) -> str:
    """A key for the fixture's inputs: the source model, the template, the renaming, the builder."""
    stat = source.stat()
    inputs = {
        "builder": BUILDER_VERSION,
        "source": [str(source), stat.st_size, stat.st_mtime_ns],
        "template": hashlib.sha256(family.template_text().encode("utf-8")).hexdigest(),
        "tokens": sorted(family.tokens.items()),
        "ids": [family.end_known_by, family.bos, family.eos, family.unknown],
    }
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode("utf-8")).hexdigest()[:16]


def build_fixture(family: Family, source: Path, target: Path) -> Path:
    """Write ``source`` with ``family``'s template and special tokens to ``target``.

    Written to a name of this process first and renamed, so a half-written file is never
    used, and sessions building the same fixture at once do not write into each other's file.
    """
    import gguf  # lazy: start-up time

    reader = gguf.GGUFReader(source)
    keys = gguf.Keys.Tokenizer
    tokens = list(reader.get_field(keys.LIST).contents())
    types = list(reader.get_field(keys.TOKEN_TYPE).contents())
    for index, text in family.tokens.items():
        if types[index] != gguf.TokenType.CONTROL:
            raise ValueError(f"{family.name}: id {index} is not a control token in {source.name}")
        tokens[index] = text
    if len(set(tokens)) != len(tokens):
        raise ValueError(f"{family.name}: a new token name is already in the vocabulary")

    replaced: dict[str, tuple[Any, gguf.GGUFValueType, gguf.GGUFValueType | None]] = {
        keys.LIST: (tokens, gguf.GGUFValueType.ARRAY, gguf.GGUFValueType.STRING),
        keys.CHAT_TEMPLATE: (family.template_text(), gguf.GGUFValueType.STRING, None),
        keys.EOS_ID: (family.eos, gguf.GGUFValueType.UINT32, None),
        keys.PAD_ID: (family.eos, gguf.GGUFValueType.UINT32, None),
        gguf.Keys.General.NAME: (
            f"SmolLM2-135M-Instruct as {family.name}",
            gguf.GGUFValueType.STRING,
            None,
        ),
    }
    if family.bos is not None:
        replaced[keys.BOS_ID] = (family.bos, gguf.GGUFValueType.UINT32, None)
    if family.unknown is not None:
        replaced[keys.UNK_ID] = (family.unknown, gguf.GGUFValueType.UINT32, None)
    added = {}
    if family.end_known_by == "eot":
        added[keys.EOT_ID] = (TURN_END, gguf.GGUFValueType.UINT32, None)

    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    architecture = reader.get_field(gguf.Keys.General.ARCHITECTURE).contents()
    writer = gguf.GGUFWriter(partial, architecture, endianess=reader.endianess)
    for name, reader_field in reader.fields.items():
        if name == gguf.Keys.General.ARCHITECTURE or name.startswith("GGUF."):
            continue  # the writer adds these itself
        if name in replaced:
            value, kind, sub_kind = replaced[name]
        else:
            kind = reader_field.types[0]
            sub_kind = reader_field.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
            value = reader_field.contents()
        writer.add_key_value(name, value, kind, sub_type=sub_kind)
    for name, (value, kind, sub_kind) in added.items():
        writer.add_key_value(name, value, kind, sub_type=sub_kind)
    for tensor in reader.tensors:
        writer.add_tensor_info(
            tensor.name,
            tensor.data.shape,
            tensor.data.dtype,
            tensor.data.nbytes,
            tensor.tensor_type,
        )
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for tensor in reader.tensors:
        writer.write_tensor_data(tensor.data, tensor_endianess=reader.endianess)
    writer.close()
    partial.replace(target)
    return target
