"""Multi-turn rollouts (agents): episodes of a task in an environment service, on the shared engine.

parsers/        tool-call formats, one file per format, registered by name (`hermes`)
tool_calls.py   a turn's parsed calls checked against the episode's tools (unknown tool,
                arguments not matching the schema) → what is sent, what is answered as an error
chat_format.py  the chat template: the episode's first prompt (tools rendered by the
                template when it knows them, else the parser's system-prompt convention)
                and the token delta that appends an observation after a turn
observation.py  observations are untrusted: bounded in tokens, special tokens escaped
env_client.py   the EnvironmentService client: TLS + token, a deadline per call, retries
                only on UNAVAILABLE / RESOURCE_EXHAUSTED, an episode pinned to one replica
episode.py      one episode: turn → parse → Step → observation → next turn
group.py        a group: N episodes of one task at once → a `Group` (or its drop reason)
"""
