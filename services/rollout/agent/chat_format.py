"""The chat template, used incrementally: an episode's first prompt and each observation's delta.

Token ids the model sampled are kept exactly; what comes between two turns (the end of the
model's turn, the observation's messages, the next assistant header) is the chat template's
own rendering of it, found as a *delta*: the template renders a fixed dummy conversation
ending in an assistant turn with and without the new messages, and the text the second adds
after the first is what gets tokenised and appended. The template is never asked to
re-render (and the tokenizer never re-tokenises) the sampled turns, so their token
boundaries — and their log-probs — stay exactly as sampled (verl's agent loop and TRL's
tool loop do the same).

- `prompt_ids(messages, tools)`: the first prompt. Tools go through the template
  (`tools=`) when it renders them (checked once with a probe tool), else into the system
  message in the parser's convention (Hermes: a `<tools>` block and how to call).
- `observation_ids(messages, last_token)`: the delta after a turn. The template closes an
  assistant turn with text such as `<|im_end|>\\n`; when the model's last token already
  wrote its start (it stopped on `<|im_end|>`) only the rest is added, otherwise (cut at
  its token limit) all of it. Tool messages go as role "tool" when the template renders
  that role (a probe again), else as user messages in the parser's tool-response wrapping.
- Every observation is bounded and escaped first (`observation.py`); the delta's special
  token ids are then checked against those of the same delta with empty contents, so an
  observation that still forged one is refused (`InvalidAnswer`) instead of read.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from meshrl.services.rollout.agent.failures import InvalidAnswer
from meshrl.services.rollout.agent.observation import Bounded, Escaper, bound_messages
from meshrl.services.rollout.agent.parsers import ToolParser

SENTINEL = "MESHRL7f3aSENTINEL"  # the dummy assistant turn's text, found again in the rendering
DUMMY = [{"role": "user", "content": "U"}, {"role": "assistant", "content": SENTINEL}]
PROBE_TOOL = {
    "type": "function",
    "function": {
        "name": "meshrl_probe_tool",
        "description": "probe",
        "parameters": {"type": "object", "properties": {}},
    },
}


@dataclass
class Delta:
    ids: list[int]
    text: str
    bounded: Bounded


class ChatFormat:
    def __init__(self, tokenizer, parser: ToolParser, max_observation_tokens: int = 256):
        self.tokenizer, self.parser, self.max_observation_tokens = tokenizer, parser, max_observation_tokens
        self.escape = Escaper(tokenizer)
        self.special_ids = set(tokenizer.all_special_ids) - {tokenizer.unk_token_id}
        self.native_tools = PROBE_TOOL["function"]["name"] in self._render([DUMMY[0]], tools=[PROBE_TOOL])
        self.tool_role = self._renders_tool_role()
        base = self._render(DUMMY, generation_prompt=False)
        self.closing = base[base.index(SENTINEL) + len(SENTINEL) :]  # e.g. "<|im_end|>\n"

    def _render(self, messages, *, tools=None, generation_prompt: bool = True) -> str:
        extra = {"tools": tools} if tools else {}
        return self.tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=generation_prompt, **extra
        )

    def _renders_tool_role(self) -> bool:
        probe = {"role": "tool", "name": "meshrl_probe_tool", "content": SENTINEL + "-tool"}
        try:
            return probe["content"] in self._render([*DUMMY, probe])
        except Exception:  # jinja2 TemplateError: e.g. "roles must alternate user/assistant"
            return False

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False)

    # -- the first prompt -----------------------------------------------------------------
    def prompt_ids(self, messages: list[dict], observation: list[dict], tools: list[dict]) -> tuple[list[int], Bounded]:
        """The episode's first prompt: the task's messages (trusted), then the environment's
        first observation (bounded, escaped), with `tools` (OpenAI function dicts)."""
        bounded = bound_messages(observation, self.tokenizer, self.escape, self.max_observation_tokens)
        messages = [*messages, *map(self._as_renderable, bounded.messages)]
        if tools and not self.native_tools:
            messages = with_system_text(messages, self.parser.tools_system_prompt(tools))
        text = self._render(messages, tools=tools if self.native_tools else None)
        return self.encode(text), bounded

    # -- an observation after a turn --------------------------------------------------------
    def turn_tail(self, last_token: int | None) -> str:
        """What closes the model's turn after its last token (all of `closing` if it was cut)."""
        if last_token is not None and last_token in self.special_ids:
            written = self.tokenizer.decode([last_token])
            if written and self.closing.startswith(written):
                return self.closing[len(written) :]
        return self.closing

    def observation_ids(self, messages: list[dict], last_token: int | None) -> Delta:
        bounded = bound_messages(messages, self.tokenizer, self.escape, self.max_observation_tokens)
        tail = self.turn_tail(last_token)
        text = tail + self._messages_delta(bounded.messages)
        ids = self.encode(text)
        empty = [{**m, "content": ""} for m in bounded.messages]
        expected = Counter(i for i in self.encode(tail + self._messages_delta(empty)) if i in self.special_ids)
        if Counter(i for i in ids if i in self.special_ids) != expected:
            raise InvalidAnswer("the observation still spells one of the model's special tokens after escaping")
        return Delta(ids, text, bounded)

    def _messages_delta(self, messages: list[dict]) -> str:
        base = self._render(DUMMY, generation_prompt=False)
        full = self._render([*DUMMY, *map(self._as_renderable, messages)])
        if not full.startswith(base):
            raise RuntimeError(
                "the model's chat template re-renders earlier turns when a message is added "
                "(it is not prefix-preserving), so observations cannot be appended as a delta; "
                "use a model whose template renders each message on its own"
            )
        return full[len(base) :]

    def _as_renderable(self, message: dict) -> dict:
        if message["role"] != "tool" or self.tool_role:
            return message
        return {"role": "user", "content": self.parser.tool_response_text(message["content"])}


def with_system_text(messages: list[dict], text: str) -> list[dict]:
    """`text` appended to the first system message, or a new system message first."""
    if messages and messages[0]["role"] == "system":
        return [{**messages[0], "content": f"{messages[0]['content']}\n\n{text}"}, *messages[1:]]
    return [{"role": "system", "content": text}, *messages]
