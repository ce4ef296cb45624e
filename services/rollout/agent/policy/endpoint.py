"""`PolicyEndpoint`: episodes whose environment runs its own agent against the policy.

    policy = PolicyEndpoint(base_url="http://127.0.0.1:8400/v1", model="policy")
    # the episode side (episode.py): a key in ResetRequest.policy, then, when Reset answers
    # drives_policy, `await policy.drive(episode, first)`: Step(turn 0) while the agent calls
    # the endpoint's side (http.py): `await policy.complete(key, body)` per chat completion

`drive` calls Step once (turn 0, empty text) and waits: the environment runs its agent, whose
calls arrive at `complete` under the episode's key and build the trajectory (sessions.py);
Step's answer (done, reward: put on the last call's turn) ends the episode and the key is
revoked. No call at all, or calls that do not chain (`broken`), fail the episode with
INVALID_ANSWER: nothing half-recorded is trained on.

What the agent asks for and what is sampled: the run's sampling (temperature, top_p, seed, stop)
is used whatever the request says — the learner takes log-probs at the run's temperature, so
an agent's own temperature would make the recorded log-probs wrong for training — and
`max_tokens` (or `max_completion_tokens`) can only lower the run's per-turn limit. `n` must be
1 and `stream` false. Each call counts as one turn toward rollout.agent.max_turns; a call past
it, past the episode's token budget or the context answers 400 `context_length_exceeded`
(as OpenAI's API does), and the episode ends there as truncated.
"""

from __future__ import annotations

import json

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.api.env.v1 import env_pb2
from meshrl.services.rollout.agent.failures import INVALID_ANSWER, EpisodeFailed, InvalidAnswer
from meshrl.services.rollout.agent.policy import openai_messages as oa
from meshrl.services.rollout.agent.policy.sessions import PolicySession, SessionTable
from meshrl.services.rollout.agent.tool_calls import tool_spec


class CallRefused(Exception):
    """A call the endpoint answers with an HTTP error: (status, OpenAI error code, message)."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code = status, code


class PolicyEndpoint:
    def __init__(self, base_url: str = "", model: str = "policy"):  # base_url: set by start_policy_server
        self.base_url, self.model = base_url, model
        self.sessions = SessionTable()

    # -- the episode side ------------------------------------------------------------------
    def endpoint_for(self, episode) -> env_pb2.PolicyEndpoint:
        return env_pb2.PolicyEndpoint(base_url=self.base_url, api_key=self.sessions.open(episode), model=self.model)

    def forget(self, episode_id: str) -> None:
        self.sessions.close(episode_id)

    async def drive(self, episode, first: env_pb2.ResetResponse):
        session = self.sessions.of(episode.id)
        answer = await episode.step(pb.Turn(index=0, text=""), truncated=False)  # the agent runs meanwhile
        async with session.lock:  # a call still in flight finishes first
            self.sessions.close(episode.id)
        if session.broken or session.traj is None:
            why = session.broken or "the agent made no call to the policy endpoint"
            raise EpisodeFailed(episode.id, INVALID_ANSWER, f"the environment drove its own agent, but {why}")
        traj = session.traj
        episode.score(traj, traj.turns[-1], answer)
        traj.ended = session.ended or "done"
        traj.turns[-1].done, traj.turns[-1].info_json = answer.done, answer.info_json
        return traj

    # -- the call side -------------------------------------------------------------------------
    async def complete(self, key: str, body: dict) -> dict:
        session = self.sessions.get(key)
        if session is None:
            raise CallRefused(401, "invalid_api_key", "unknown or expired episode key")
        messages, limit = _checked(body, session.episode.ctx.chat.parser)
        tools = _tools(body.get("tools"))
        async with session.lock:
            if self.sessions.get(key) is None:
                raise CallRefused(401, "invalid_api_key", "the episode has ended")
            return await self._turn(session, messages, tools, limit)

    async def _turn(self, session: PolicySession, messages: list[dict], tools: dict, limit: int | None) -> dict:
        episode = session.episode
        if session.traj is not None and session.calls >= episode.ctx.limits.max_turns:
            session.ended = session.ended or "max_turns"
        else:
            self._extend(session, messages, tools)
        if session.ended:
            raise CallRefused(
                400,
                "context_length_exceeded",
                f"the episode is at its limit ({session.ended}): no further turn is sampled",
            )
        prompt_tokens = len(session.traj.prompt) + len(session.traj.ids)
        turn = await episode.sample(session.traj, session.calls, session.tools, max_tokens=limit)
        session.calls += 1
        parser = episode.ctx.chat.parser
        message = oa.answer_message(turn, parser.parse(turn.text).content)
        session.conversation = [*messages, *oa.normalise([message], parser)]  # as the agent will send it back
        return oa.completion(turn, message, model=self.model, prompt_tokens=prompt_tokens)

    def _extend(self, session: PolicySession, messages: list[dict], tools: dict) -> None:
        """Bring the session's trajectory up to `messages`: the first prompt, or the delta
        (session.ended set when it leaves no room for a turn)."""
        episode = session.episode
        if session.traj is None:
            session.tools = tools
            prompt, _ = episode.ctx.chat.prompt_ids(messages, [], [t.as_openai() for t in tools.values()])
            try:
                session.traj = episode.start(prompt)
            except EpisodeFailed as err:
                session.broken = err.message
                raise CallRefused(400, "context_length_exceeded", err.message) from None
            return
        added, why = oa.added_messages(session.conversation, messages)
        if why:
            session.broken = session.broken or f"{why} (call {session.calls})"
            raise CallRefused(
                400,
                "invalid_request_error",
                f"{why}: an episode is one conversation; send back every message you were answered with",
            )
        if not episode.append_messages(session.traj, session.traj.turns[-1], added):
            session.ended = session.traj.ended


def _checked(body: dict, parser) -> tuple[list[dict], int | None]:
    if not isinstance(body, dict):
        raise CallRefused(400, "invalid_request_error", "the body must be a JSON object")
    if body.get("stream"):
        raise CallRefused(400, "invalid_request_error", "stream=true is not served: ask for the whole answer")
    if body.get("n", 1) != 1:
        raise CallRefused(400, "invalid_request_error", "n must be 1: each call is one turn of the episode")
    limit = body.get("max_completion_tokens", body.get("max_tokens"))
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        raise CallRefused(400, "invalid_request_error", "max_tokens must be a whole number ≥ 1")
    try:
        return oa.normalise(body.get("messages"), parser), limit
    except oa.BadRequest as err:
        raise CallRefused(400, "invalid_request_error", str(err)) from None


def _tools(tools) -> dict:
    if not tools:
        return {}
    try:
        specs = [
            tool_spec(
                t["function"]["name"],
                t["function"].get("description", ""),
                json.dumps(t["function"].get("parameters") or {}),
            )
            for t in tools
        ]
    except (KeyError, TypeError) as err:
        raise CallRefused(
            400,
            "invalid_request_error",
            f"tools[]: each tool is {{type: function, function: {{name, description, parameters}}}} ({err!r})",
        ) from None
    except InvalidAnswer as err:
        raise CallRefused(400, "invalid_request_error", f"tools[]: {err}") from None
    return {s.name: s for s in specs}
