"""The policy as an OpenAI-compatible endpoint, for environments that run their own agent (part 7).

An agent written against the OpenAI client (any framework, any language) runs unchanged as an
environment's policy: the environment answers Reset with `drives_policy`, gets the endpoint
and an episode key in `ResetRequest.policy`, and points its agent at them. Every call's prompt
and sampled token ids and log-probs are recorded under the episode; when the environment's
Step answers, the calls are one trajectory (calls as turns, what the agent added between them
as observation deltas, mask 0) and the episode joins its group like any other.

    openai_messages.py  requests and answers in OpenAI's shapes; which messages a call adds
    sessions.py         one episode's calls: keys, the conversation, the trajectory
    endpoint.py         PolicyEndpoint: the episode side (drive) and the call side (complete)
    http.py             the aiohttp server: /v1/chat/completions, /v1/models, bearer keys
"""
