"""One episode: the model's turns and the environment's observations, as one token sequence.

    result = await Episode(ctx, task, index).run()   # EpisodeFailed when the environment fails it

1. `Reset` (episode id `<group_id>/<index>`, the task's messages, ground truth, seed); the
   first prompt is the task's messages, then the first observation, with the offered tools
   (`chat_format.prompt_ids`).
2. Each turn is one request on the shared engine (`engine.generate_turn`): the prompt plus
   everything so far, exactly as sampled. Its tokens join the trajectory with mask 1 and
   their sampling log-probs. The text is parsed (`parsers`), calls checked (`tool_calls`),
   and `Step` gets the text, the calls that can be sent and those refused with the reason
   (`rejected_tool_calls`).
3. Unless `Step` said done or it was the last turn, the observation — error messages for
   calls that were not sent, then the environment's messages — is appended as the chat
   template's delta, mask 0 and log-prob 0.
4. Limits: `max_turns`; the episode's response tokens (`max_episode_tokens`); the context
   (`max_model_len`). A turn gets at most what is left of both (and
   `sampling.max_tokens`); an observation that would leave no room for another turn is not
   appended. Any of them ends the episode as truncated (finish reason LENGTH); an
   environment's `done` ends it with STOP. A first prompt that leaves no room for one turn
   fails the episode (`prompt_too_long`): there would be nothing to train on.
5. `Close` is always attempted, whatever happened (`finally`).
The episode is its own trace (`spans.py`): a span per turn, its generation and its Step.

Seeds: turn t of episode i of a task seeded s samples with a seed derived from (s, i, t), so
a redelivered task repeats its episodes; `Reset` gets the episode's own `seed` (0 = unseeded)
and the group's `group_seed` (`s`, or one derived from the group id: never 0), the same for
every episode of the group, so an environment that draws its task from it gives the whole
group one task.
"""

from __future__ import annotations

import time
import zlib
from dataclasses import dataclass, field

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.api.env.v1 import env_pb2
from meshrl.services.rollout.agent import answers
from meshrl.services.rollout.agent.failures import INVALID_ANSWER, EpisodeFailed, InvalidAnswer
from meshrl.services.rollout.agent.instruments import AgentEvents
from meshrl.services.rollout.agent.spans import child_span, episode_span
from meshrl.services.rollout.agent.tool_calls import check_calls, error_observation, rejected_calls
from meshrl.services.rollout.samples import FINISH_REASONS, completion_version

SEED_MODULUS = 2**31 - 1


@dataclass(frozen=True)
class EpisodeLimits:
    max_turns: int = 4
    max_episode_tokens: int = 512
    max_tool_calls: int = 4
    max_model_len: int = 512


@dataclass
class EpisodeContext:
    """What every episode of a replica shares."""

    engine: object  # RolloutEngine
    env: object  # EnvironmentClient
    chat: object  # ChatFormat
    limits: EpisodeLimits
    events: AgentEvents = field(default_factory=AgentEvents)
    policy: object = None  # PolicyEndpoint (policy/endpoint.py) when the rollout serves one


def episode_seed(task_seed: int, index: int, turn: int = -1) -> int:
    if not task_seed:
        return 0
    return (task_seed * 1_000_003 + index * 7_919 + (turn + 1) * 104_729) % SEED_MODULUS or 1


def group_seed(task: pb.PromptTask) -> int:
    """The seed every episode of the task's group shares (ResetRequest.group_seed): the task's
    sampling seed, or, for an unseeded task, one derived from its group id; never 0."""
    if task.sampling.seed:
        return task.sampling.seed
    return zlib.crc32(task.group_id.encode()) % SEED_MODULUS or 1


def task_messages(task: pb.PromptTask) -> list[dict]:
    if task.prompt_messages:
        return [{"role": m.role, "content": m.content} for m in task.prompt_messages]
    return [{"role": "user", "content": task.prompt_text}]


@dataclass
class Trajectory:
    """The episode so far: response ids after the first prompt, log-probs, mask, turns."""

    prompt: list[int]
    ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)
    turns: list[pb.Turn] = field(default_factory=list)
    versions: list[int] = field(default_factory=list)
    env_reward: float = 0.0
    has_env_reward: bool = False
    ended: str = ""  # done | max_turns | token_budget | context

    def add(self, ids, logprobs, mask: int) -> None:
        self.ids += ids
        self.logprobs += logprobs
        self.mask += [mask] * len(ids)


def sampled_logprobs(out) -> list[float]:
    """A turn's sampling log-probs, one per token (the trainer's behaviour log-probs)."""
    logprobs = list(out.logprobs.logprobs) if out.logprobs else []
    if len(logprobs) != len(out.token_ids):
        raise RuntimeError(
            f"vLLM returned {len(logprobs)} log-probs for {len(out.token_ids)} tokens; "
            f"a turn must be requested with logprobs=0, flat_logprobs=True"
        )
    return logprobs


class Episode:
    def __init__(self, ctx: EpisodeContext, task: pb.PromptTask, index: int):
        self.ctx, self.task, self.index = ctx, task, index
        self.id = f"{task.group_id}/{index}"
        self.rejected: dict[int, list[env_pb2.RejectedToolCall]] = {}  # turn → calls not sent

    async def run(self) -> Trajectory:
        version = self.ctx.engine.version
        with episode_span(self.id, self.task.group_id, self.task.environment, version):
            try:
                return await self._play()
            finally:
                if self.ctx.policy is not None:
                    self.ctx.policy.forget(self.id)  # the episode's endpoint key stops working
                with child_span("env.close", version):
                    await self.ctx.env.close(self.id)

    def _invalid(self, err: InvalidAnswer) -> EpisodeFailed:
        return EpisodeFailed(self.id, INVALID_ANSWER, str(err))

    async def _play(self) -> Trajectory:
        first = await self.reset()
        if first.drives_policy:  # the environment runs its own agent against the policy endpoint
            return await self.driven(first)
        traj = self.start(self.first_prompt(first))
        for turn in range(self.ctx.limits.max_turns):
            left, limit = self.room(traj)
            if left < 1:
                traj.ended = limit
                break
            with child_span("episode.turn", self.ctx.engine.version, turn=turn):
                record, answer = await self.turn(traj, turn)
            if answer.done or turn + 1 == self.ctx.limits.max_turns:
                traj.ended = "done" if answer.done else "max_turns"
                break
            if not self.append_observation(traj, record, answer):
                break
        return traj

    async def reset(self) -> env_pb2.ResetResponse:
        """The environment's first answer, checked."""
        with child_span("env.reset", self.ctx.engine.version):
            first, repaired = await self.ctx.env.reset(self.reset_request())
        if repaired:
            self.ctx.events.repaired()
        try:
            answers.check_reset(first)  # every first answer, a black-box agent's too (as the kit checks it)
        except InvalidAnswer as err:
            raise self._invalid(err) from None
        return first

    async def driven(self, first: env_pb2.ResetResponse) -> Trajectory:
        """The episode as the environment's own agent plays it through this rollout's policy endpoint."""
        if self.ctx.policy is None:
            raise EpisodeFailed(
                self.id,
                "FAILED_PRECONDITION",
                (
                    "the environment runs its own agent (ResetResponse.drives_policy) but this rollout serves no "
                    "policy endpoint: set rollout.agent.policy_endpoint.enabled: true"
                ),
                code="no_policy_endpoint",
            )
        return await self.ctx.policy.drive(self, first)

    def first_prompt(self, first: env_pb2.ResetResponse) -> list[int]:
        """The task's messages, then the first observation, with the tools the environment offers."""
        try:
            self.tools = answers.tools(first)
        except InvalidAnswer as err:
            raise self._invalid(err) from None
        observation = answers.observation(first.observation)
        prompt, bounded = self.ctx.chat.prompt_ids(
            task_messages(self.task), observation, [t.as_openai() for t in self.tools.values()]
        )
        if observation:
            self.ctx.events.observation(bounded)
        return prompt

    def start(self, prompt: list[int]) -> Trajectory:
        """A trajectory after `prompt`; EpisodeFailed (prompt_too_long) when no turn would fit."""
        traj = Trajectory(prompt=prompt)
        if self.room(traj)[0] < 1:
            raise EpisodeFailed(
                self.id,
                "CONTEXT_OVERFLOW",
                (
                    f"the first prompt (the task's messages, the tools, the first observation) is {len(prompt)} tokens: "
                    f"rollout.max_model_len={self.ctx.limits.max_model_len} leaves no room for a turn; raise it, or "
                    f"shorten the prompt"
                ),
                code="prompt_too_long",
                source="rollout",
            )
        return traj

    def reset_request(self) -> env_pb2.ResetRequest:
        t = self.task
        return env_pb2.ResetRequest(
            run_id=t.run_id,
            episode_id=self.id,
            environment=t.environment,
            prompt_messages=[env_pb2.ChatMessage(**m) for m in task_messages(t)],
            ground_truth_json=t.ground_truth_json,
            data_source=t.data_source,
            extra_json=t.extra_json or "{}",
            seed=episode_seed(t.sampling.seed, self.index),
            group_seed=group_seed(t),
            policy=self.ctx.policy.endpoint_for(self) if self.ctx.policy else None,
        )

    # -- limits -------------------------------------------------------------------------------
    def room(self, traj: Trajectory, extra: int = 0) -> tuple[int, str]:
        """(tokens a turn may still sample after `extra` more, the limit that binds):
        what the episode budget and the context leave."""
        limits = self.ctx.limits
        budget = limits.max_episode_tokens - len(traj.ids) - extra
        context = limits.max_model_len - len(traj.prompt) - len(traj.ids) - extra
        return (budget, "token_budget") if budget <= context else (context, "context")

    # -- a turn ---------------------------------------------------------------------------------
    async def turn(self, traj: Trajectory, turn: int) -> tuple[pb.Turn, env_pb2.StepResponse]:
        record = await self.sample(traj, turn, self.tools)
        answer = await self.step(record, truncated=record.finish_reason == pb.FINISH_REASON_LENGTH)
        self.score(traj, record, answer)
        return record, answer

    async def sample(self, traj: Trajectory, turn: int, tools: dict, max_tokens: int | None = None) -> pb.Turn:
        """Sample turn `turn` after everything so far and append it (mask 1, its log-probs)."""
        out = await self.generate(traj, turn, max_tokens)
        start = len(traj.ids)
        traj.add(list(out.token_ids), sampled_logprobs(out), 1)
        traj.versions.append(completion_version(out, self.ctx.engine.version))
        parsed = self.ctx.chat.parser.parse(out.text)
        calls = check_calls(parsed, tools, turn, self.ctx.limits.max_tool_calls)
        self.rejected[turn] = rejected_calls(parsed, calls)
        record = pb.Turn(
            index=turn,
            token_start=start,
            token_end=len(traj.ids),
            text=out.text,
            tool_calls=calls,
            finish_reason=FINISH_REASONS.get(out.finish_reason, pb.FINISH_REASON_UNSPECIFIED),
            observation_end=len(traj.ids),
        )
        traj.turns.append(record)
        self.ctx.events.turn(record)
        return record

    async def generate(self, traj: Trajectory, turn: int, max_tokens: int | None):
        """One request on the shared engine: the prompt plus everything so far, within the room left."""
        sampling = self.task.sampling
        limit = min(sampling.max_tokens, self.room(traj)[0], max_tokens or sampling.max_tokens)
        with child_span("turn.generate", self.ctx.engine.version) as span:
            out = await self.ctx.engine.generate_turn(
                traj.prompt + traj.ids,
                sampling,
                max_tokens=limit,
                seed=episode_seed(sampling.seed, self.index, turn),
                name=f"{self.id}/t{turn}",
            )
            span.set_attribute("meshrl.tokens", len(out.token_ids))
        return out

    async def step(self, record: pb.Turn, truncated: bool) -> env_pb2.StepResponse:
        sent = [
            env_pb2.ToolCall(id=c.id, name=c.name, arguments_json=c.arguments_json)
            for c in record.tool_calls
            if not c.error
        ]
        began = time.perf_counter()
        with child_span("env.step", self.ctx.engine.version, tool_calls=len(sent)) as span:
            answer, repaired = await self.ctx.env.step(
                env_pb2.StepRequest(
                    episode_id=self.id,
                    turn=record.index,
                    text=record.text,
                    tool_calls=sent,
                    truncated=truncated,
                    rejected_tool_calls=self.rejected.get(record.index, []),
                )
            )
            span.set_attribute("meshrl.done", answer.done)
        if repaired:
            self.ctx.events.repaired()
        try:
            answers.check_step(answer, record.index)
        except InvalidAnswer as err:
            raise self._invalid(err) from None
        record.env_latency_s = time.perf_counter() - began
        record.done, record.info_json = answer.done, answer.info_json
        return answer

    def score(self, traj: Trajectory, record: pb.Turn, answer: env_pb2.StepResponse) -> None:
        reward = answers.reward(answer)  # checked finite by `step`
        if reward is not None:
            record.reward = reward
            traj.env_reward += reward
            traj.has_env_reward = True

    def append_observation(self, traj: Trajectory, record: pb.Turn, answer: env_pb2.StepResponse) -> bool:
        """Append the Step's observation (after error messages for calls not sent)."""
        messages = answers.observation(answer.observation)  # roles checked by `step`
        return self.append_messages(
            traj, record, [error_observation(c) for c in record.tool_calls if c.error] + messages
        )

    def append_messages(self, traj: Trajectory, record: pb.Turn, messages: list[dict]) -> bool:
        """Append `messages` as the template's delta after `record` (mask 0, log-prob 0); False
        (and the episode ended at its limit) when no room for another turn would be left."""
        try:
            delta = self.ctx.chat.observation_ids(messages, traj.ids[-1] if traj.ids else None)
        except InvalidAnswer as err:
            raise self._invalid(err) from None
        left, limit = self.room(traj, extra=len(delta.ids))
        if left < 1:
            traj.ended = limit
            return False
        traj.add(delta.ids, [0.0] * len(delta.ids), 0)
        record.observation_text, record.observation_end = delta.text, len(traj.ids)
        record.observation_truncated = delta.bounded.truncated
        self.ctx.events.observation(delta.bounded)
        return True
