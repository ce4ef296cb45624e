"""Issue 23, point 4: bad values are refused when the config loads, before anything starts,
each with one line naming the key, the value and the rule. A table: (id, overrides, the
substrings the message must hold). The YAML limits (aliases, size) and the launch-time input
checks (data paths that are files, the model's context) have their own tables below."""

import pytest

from meshrl.config import ConfigError, load_config
from meshrl.config.agent import MAX_TURNS
from meshrl.config.values import (
    MAX_KV_CACHE_GB,
    MAX_NATS_REPLICAS,
    MAX_RANKS,
    MAX_REPLICAS,
    MAX_STEPS,
    MAX_TENSOR_PARALLEL,
)
from meshrl.config.yaml_text import MAX_DEPTH
from meshrl.errors import LaunchError

BASE = {"model": {"path": "/m"}, "data": {"train": "/d.jsonl"}}
PORT = "the port must be a number 1..65535"
HOST_PORT = "expected host:port"
PRINTABLE = "use printable characters only"
NUL = "holds a NUL character"
SWITCH = "is a switch, not a number: give a number here"
BITS = "is past the 64-bit range of any count or size"
ENDPOINT = "is not an endpoint URL; give http://HOST:PORT (schemes: http, https)"
NO_QUERY = "must not hold credentials, a query string or a fragment"
NOT_PRESET = "is not a known preset"
PYTHON_ENV = ["environment.name=e", "environment.builtin=python"]


def rule(kind: str, params: str) -> str:
    return f"reward.components=[{{name: r, kind: {kind}, params: {params}}}]"


def external(address: str) -> str:
    return f"reward.components=[{{name: judge, kind: external, address: '{address}'}}]"


CASES = [
    # ports in range
    ("learner-port-high", ["learner.grpc_port=65536"], ["learner.grpc_port", "less than or equal to 65535"]),
    ("learner-port-negative", ["learner.grpc_port=-1"], ["learner.grpc_port", "greater than or equal to 0"]),
    ("rollout-port-high", ["rollout.grpc_port=70000"], ["rollout.grpc_port", "less than or equal to 65535"]),
    ("rollout-port-negative", ["rollout.grpc_port=-5"], ["rollout.grpc_port", "greater than or equal to 0"]),
    ("reference-port-high", ["reference.grpc_port=99999"], ["reference.grpc_port", "less than or equal to 65535"]),
    ("reference-port-negative", ["reference.grpc_port=-80"], ["reference.grpc_port", "greater than or equal to 0"]),
    ("reference-address-port-high", ["reference.address=ref:70000"], ["reference.address='ref:70000'", PORT]),
    ("reference-address-port-zero", ["reference.address=ref:0"], ["reference.address='ref:0'", PORT]),
    ("reference-address-port-word", ["reference.address=ref:http"], ["reference.address='ref:http'", PORT]),
    ("reference-address-no-port", ["reference.address=ref"], ["reference.address='ref'", HOST_PORT]),
    ("reference-address-no-host", ["reference.address=':50051'"], ["reference.address=':50051'", HOST_PORT]),
    (
        "reference-address-one-bad-replica",
        ["reference.address='a:1,b:65536'"],
        ["reference.address='a:1,b:65536'", PORT],
    ),
    ("external-port-high", [external("judge:65536")], ["'judge': address", PORT]),
    ("external-port-negative", [external("judge:-1")], ["'judge': address", PORT]),
    ("external-no-port", [external("judge")], ["'judge': address", HOST_PORT]),
    ("external-dns-port-high", [external("dns:///judge:99999")], ["'judge': address", PORT]),
    ("nats-url-port-high", ["nats.url=nats://127.0.0.1:65536"], ["nats.url", PORT]),
    ("nats-url-port-zero", ["nats.url=nats://127.0.0.1:0"], ["nats.url", PORT]),
    ("nats-url-second-server", ["nats.url='nats://a:4222,nats://b:99999'"], ["nats.url", PORT]),
    ("otlp-port-high", ["telemetry.otlp_endpoint=http://127.0.0.1:4318000"], ["telemetry.otlp_endpoint", PORT]),
    ("otlp-port-word", ["telemetry.otlp_endpoint=http://127.0.0.1:otlp"], ["telemetry.otlp_endpoint", PORT]),
    ("webhook-port-high", ["alerts.webhook.url=https://hooks.example:70000/x"], ["alerts.webhook.url", PORT]),
    ("mlflow-port-high", ["telemetry.mlflow.tracking_uri=http://mlflow:123456"], ["mlflow.tracking_uri", PORT]),
    (
        "environment-address-port-high",
        ["environment.name=e", "environment.address=env:65536"],
        ["environment.address='env:65536'", PORT],
    ),
    (
        "environment-address-no-port",
        ["environment.name=e", "environment.address=env"],
        ["environment.address='env'", HOST_PORT],
    ),
    # replica and rank counts within the documented caps (meshrl/config/values.py)
    (
        "rollout-replicas-huge",
        ["rollout.replicas=2147483647"],
        ["rollout.replicas", f"less than or equal to {MAX_REPLICAS}"],
    ),
    (
        "rollout-replicas-cap",
        [f"rollout.replicas={MAX_REPLICAS + 1}"],
        ["rollout.replicas", f"less than or equal to {MAX_REPLICAS}"],
    ),
    ("rollout-replicas-zero", ["rollout.replicas=0"], ["rollout.replicas", "greater than or equal to 1"]),
    (
        "reward-replicas-cap",
        [f"reward.replicas={MAX_REPLICAS + 1}"],
        ["reward.replicas", f"less than or equal to {MAX_REPLICAS}"],
    ),
    ("reward-replicas-negative", ["reward.replicas=-2"], ["reward.replicas", "greater than or equal to 1"]),
    (
        "reference-replicas-cap",
        [f"reference.replicas={MAX_REPLICAS * 2}"],
        ["reference.replicas", f"less than or equal to {MAX_REPLICAS}"],
    ),
    (
        "environment-replicas-cap",
        ["environment.name=e", "environment.builtin=calculator", f"environment.replicas={MAX_REPLICAS + 1}"],
        ["environment.replicas", f"less than or equal to {MAX_REPLICAS}"],
    ),
    (
        "reward-model-replicas-cap",
        [f"reward_model.replicas={MAX_REPLICAS + 1}"],
        ["reward_model.replicas", f"less than or equal to {MAX_REPLICAS}"],
    ),
    (
        "learner-ranks-huge",
        ["learner.ranks=100000"],
        ["learner.ranks=100000", f"must be a whole number 1..{MAX_RANKS}"],
    ),
    ("learner-ranks-cap", [f"learner.ranks={MAX_RANKS + 1}"], [f"learner.ranks={MAX_RANKS + 1}", f"1..{MAX_RANKS}"]),
    ("learner-ranks-zero", ["learner.ranks=0"], ["learner.ranks=0", f"1..{MAX_RANKS}"]),
    ("learner-ranks-fraction", ["learner.ranks=1.5"], ["learner.ranks=1.5", "whole number"]),
    ("learner-ranks-bool", ["learner.ranks=true"], ["learner.ranks=True", "whole number"]),
    (
        "tensor-parallel-cap",
        [f"rollout.tensor_parallel_size={MAX_TENSOR_PARALLEL + 1}"],
        ["rollout.tensor_parallel_size", f"less than or equal to {MAX_TENSOR_PARALLEL}"],
    ),
    (
        "tensor-parallel-zero",
        ["rollout.tensor_parallel_size=0"],
        ["rollout.tensor_parallel_size", "greater than or equal to 1"],
    ),
    (
        "nats-replicas-cap",
        [f"nats.replicas={MAX_NATS_REPLICAS + 1}"],
        ["nats.replicas", f"less than or equal to {MAX_NATS_REPLICAS}"],
    ),
    ("nats-replicas-zero", ["nats.replicas=0"], ["nats.replicas", "greater than or equal to 1"]),
    ("math-verify-workers-cap", [rule("math_verify", "{workers: 1000}")], ["workers", "less than or equal to 64"]),
    # max_tokens within the engine's context
    (
        "max-tokens-fills-context",
        ["rollout.sampling.max_tokens=512"],
        ["rollout.sampling.max_tokens=512 leaves no room for a prompt in rollout.max_model_len=512"],
    ),
    (
        "max-tokens-over-context",
        ["rollout.max_model_len=256", "rollout.sampling.max_tokens=4096"],
        ["rollout.sampling.max_tokens=4096", "rollout.max_model_len=256", "raise rollout.max_model_len"],
    ),
    (
        "eval-max-tokens-over-context",
        ["eval.max_tokens=100000"],
        ["eval.max_tokens=100000 leaves no room for a prompt", "lower eval.max_tokens"],
    ),
    (
        "max-tokens-zero",
        ["rollout.sampling.max_tokens=0"],
        ["rollout.sampling.max_tokens", "greater than or equal to 1"],
    ),
    ("max-model-len-tiny", ["rollout.max_model_len=8"], ["rollout.max_model_len", "greater than or equal to 16"]),
    # reward rule params checked when the config loads (typos, regexes, ranges)
    (
        "regex-param-typo",
        [rule("regex", "{patern: 'a'}")],
        ["reward.components[r].params for kind 'regex' are invalid", "patern: Extra inputs", "Allowed params: pattern"],
    ),
    ("regex-missing-pattern", [rule("regex", "{}")], ["kind 'regex' are invalid", "pattern: Field required"]),
    ("regex-does-not-compile", [rule("regex", "{pattern: '(a'}")], ["pattern '(a' is not a valid regular expression"]),
    ("regex-bad-class", [rule("regex", "{pattern: '[z-a]'}")], ["pattern '[z-a]' is not a valid regular expression"]),
    (
        "regex-bad-repeat",
        [rule("regex", "{pattern: '*a'}")],
        ["is not a valid regular expression", "nothing to repeat"],
    ),
    ("regex-unknown-flag", [rule("regex", "{pattern: a, flags: x}")], ["unknown regex flags ['x']; allowed: i, s, m"]),
    ("regex-too-long", [rule("regex", "{pattern: '" + "a" * 5000 + "'}")], ["pattern", "at most 4096 characters"]),
    ("regex-match-nan", [rule("regex", "{pattern: a, match: .nan}")], ["match", "finite number"]),
    (
        "exact-match-typo",
        [rule("exact_match", "{case_sensitve: true}")],
        ["kind 'exact_match' are invalid", "case_sensitve"],
    ),
    ("exact-match-type", [rule("exact_match", "{strip: maybe}")], ["kind 'exact_match' are invalid", "strip"]),
    (
        "math-verify-typo",
        [rule("math_verify", "{timeout: 5}")],
        ["kind 'math_verify' are invalid", "timeout: Extra inputs"],
    ),
    ("math-verify-timeout-zero", [rule("math_verify", "{timeout_s: 0}")], ["timeout_s", "greater than 0"]),
    ("math-verify-workers-zero", [rule("math_verify", "{workers: 0}")], ["workers", "greater than or equal to 1"]),
    (
        "length-no-mode",
        [rule("length_penalty", "{}")],
        ["set exactly one of max_len (cap mode) or target (target mode)"],
    ),
    ("length-both-modes", [rule("length_penalty", "{max_len: 10, target: 5}")], ["set exactly one of max_len"]),
    (
        "length-buffer-over",
        [rule("length_penalty", "{max_len: 10, buffer: 20}")],
        ["buffer needs max_len and must be <= max_len"],
    ),
    ("length-unit", [rule("length_penalty", "{max_len: 10, unit: words}")], ["unit", "'chars' or 'tokens'"]),
    (
        "length-negative-penalty",
        [rule("length_penalty", "{max_len: 10, penalty: -1}")],
        ["penalty", "greater than or equal to 0"],
    ),
    ("environment-credit", [rule("environment", "{credit: step}")], ["kind 'environment' are invalid", "credit"]),
    # names without NUL, newline or other control characters
    ("run-name-newline", ['run.name="a\\nb"'], ["run.name", "control character '\\n'", PRINTABLE]),
    ("run-name-nul", ['run.name="a\\0b"'], ["run.name", "control character '\\x00'", PRINTABLE]),
    ("run-name-tab", ['run.name="a\\tb"'], ["run.name", "control character '\\t'"]),
    ("run-name-escape", ['run.name="a\\eb"'], ["run.name", "control character '\\x1b'"]),
    ("run-name-blank", ["run.name='  '"], ["run.name", "must not be empty or blank"]),
    ("run-name-too-long", ["run.name=" + "n" * 129], ["run.name", "at most 128 characters"]),
    (
        "component-name-newline",
        ['reward.components=[{name: "a\\nb", kind: exact_match}]'],
        ["reward.components.0.name", "control character '\\n'"],
    ),
    (
        "component-name-empty",
        ["reward.components=[{name: '', kind: exact_match}]"],
        ["reward.components.0.name", "must not be empty"],
    ),
    (
        "environment-name-newline",
        ['environment.name="e\\nvil"', "environment.builtin=calculator"],
        ["environment.name", "control character '\\n'"],
    ),
    ("model-path-nul", ['model.path="/m\\0/x"'], ["model.path", NUL]),
    ("data-train-nul", ['data.train="/d\\0.jsonl"'], ["data.train", NUL]),
    ("nats-url-nul", ['nats.url="nats://a\\0:4222"'], ["nats.url", NUL]),
    ("stop-string-nul", ['rollout.sampling.stop=["\\0"]'], ["rollout.sampling.stop", NUL]),
    ("params-key-nul", [rule("exact_match", '{"a\\0": 1}')], ["params", NUL]),
    # numbers that are numbers, within caps (issue 31, point 5)
    ("learner-steps-bool", ["learner.steps=true"], ["learner.steps: true " + SWITCH]),
    ("learner-steps-10e30", ["learner.steps=1000000000000000000000000000000"], ["learner.steps: 1e+30 " + BITS]),
    ("learner-steps-cap", [f"learner.steps={MAX_STEPS + 1}"], ["learner.steps", f"less than or equal to {MAX_STEPS}"]),
    (
        "kv-cache-1e12",
        ["rollout.kv_cache_gb=1e12"],
        ["rollout.kv_cache_gb", f"less than or equal to {MAX_KV_CACHE_GB:g}"],
    ),
    ("kv-cache-bool", ["rollout.kv_cache_gb=false"], ["rollout.kv_cache_gb: false " + SWITCH]),
    ("seed-past-64-bits", [f"run.seed={2**64}"], ["run.seed", BITS]),
    (
        "max-turns-cap",
        ["rollout.agent.max_turns=1000000"],
        ["rollout.agent.max_turns", f"less than or equal to {MAX_TURNS}"],
    ),
    ("max-turns-bool", ["rollout.agent.max_turns=yes"], ["rollout.agent.max_turns: true " + SWITCH]),
    (
        "sandbox-cpu-cap",
        [*PYTHON_ENV, "environment.sandbox.cpu_s=86400"],
        ["sandbox.cpu_s", "less than or equal to 600"],
    ),
    (
        "sandbox-wall-cap",
        [*PYTHON_ENV, "environment.sandbox.wall_s=1e9"],
        ["sandbox.wall_s", "less than or equal to 1800"],
    ),
    (
        "sandbox-memory-cap",
        [*PYTHON_ENV, "environment.sandbox.memory_mb=10000000"],
        ["sandbox.memory_mb", "less than or equal to 65536"],
    ),
    (
        "sandbox-processes-cap",
        [*PYTHON_ENV, "environment.sandbox.processes=100000"],
        ["sandbox.processes", "less than or equal to 1024"],
    ),
    (
        "sandbox-output-cap",
        [*PYTHON_ENV, "environment.sandbox.output_bytes=10000000000"],
        ["sandbox.output_bytes", "less than or equal to 16777216"],
    ),
    (
        "sandbox-concurrent-cap",
        [*PYTHON_ENV, "environment.sandbox.concurrent=1000"],
        ["sandbox.concurrent", "less than or equal to 64"],
    ),
    # the OTLP endpoint is an endpoint: scheme, host, port, nothing else
    ("otlp-scheme-file", ["telemetry.otlp_endpoint=file:///etc/passwd"], ["telemetry.otlp_endpoint=", ENDPOINT]),
    ("otlp-scheme-ftp", ["telemetry.otlp_endpoint=ftp://collector:21"], ["telemetry.otlp_endpoint=", ENDPOINT]),
    ("otlp-no-host", ["telemetry.otlp_endpoint=http://:4317"], ["telemetry.otlp_endpoint=", ENDPOINT]),
    ("otlp-two", ["telemetry.otlp_endpoint='a:4317,b:4317'"], ["telemetry.otlp_endpoint=", ENDPOINT]),
    ("otlp-space", ["telemetry.otlp_endpoint='http://a b:4317'"], ["telemetry.otlp_endpoint=", ENDPOINT]),
    ("otlp-query-token", ["telemetry.otlp_endpoint=http://c:4318/v1/traces?token=t0k"], ["otlp_endpoint", NO_QUERY]),
    ("otlp-fragment", ["telemetry.otlp_endpoint=http://c:4318/#t0k"], ["otlp_endpoint", NO_QUERY]),
    ("otlp-user", ["telemetry.otlp_endpoint=http://me@c:4317"], ["otlp_endpoint", NO_QUERY]),
    # a tracker URI carries no credential in its query string either (the value never shown)
    (
        "mlflow-query-token",
        ["telemetry.mlflow.tracking_uri=http://mlflow:5000/?token=t0k"],
        ["telemetry.mlflow.tracking_uri carries 'token' in its query string", "MLFLOW_TRACKING_TOKEN"],
    ),
    (
        "mlflow-query-api-key",
        ["telemetry.mlflow.tracking_uri=postgresql://db/mlflow?sslmode=require&API_KEY=t0k"],
        ["carries 'API_KEY' in its query string"],
    ),
    # names are names: a preset is looked up, never joined into a path
    ("preset-absolute-path", ["algorithm.preset=/etc/hostname"], ["algorithm.preset='/etc/hostname' " + NOT_PRESET]),
    (
        "preset-dot-dot",
        ["algorithm.preset=../../../etc/hostname"],
        ["algorithm.preset='../../../etc/hostname'", NOT_PRESET],
    ),
    ("preset-a-list", ["algorithm.preset=[grpo]"], ["algorithm.preset=\"['grpo']\" " + NOT_PRESET]),
    ("override-key-deep", [".".join(["a"] * (MAX_DEPTH + 1)) + "=1"], [f"is deeper than {MAX_DEPTH} levels"]),
]


@pytest.mark.parametrize("overrides, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_value_is_refused_with_one_line_naming_it(overrides, expected):
    with pytest.raises(ConfigError) as err:
        load_config(base=BASE, overrides=overrides)
    message = str(err.value)
    assert "\n" not in message.replace("\\n", ""), message
    for part in expected:
        assert part in message, f"{part!r} not in:\n{message}"


def test_the_caps_are_the_ones_the_cli_and_the_gateway_use():
    """One number: `meshrl scale` (meshrl.run.scale) and the gateway's ScaleService import it."""
    from meshrl.run import scale

    with pytest.raises(LaunchError, match=f"allowed 1..{MAX_REPLICAS}"):
        scale.check_count("rollout", str(MAX_REPLICAS + 1))
    assert scale.check_count("rollout", str(MAX_REPLICAS)) == MAX_REPLICAS


LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8)
)
YAML_CASES = [
    ("billion-laughs", LAUGHS, ["uses more than 64 YAML aliases", "write the values out instead"]),
    ("alias-fan-out", "a: &a [1]\nb: [" + ", ".join(["*a"] * 65) + "]\n", ["uses more than 64 YAML aliases"]),
    ("over-one-mib", "run: {name: x}\n# " + "x" * (1 << 20) + "\n", ["is over 1 MiB", "keep data in the data files"]),
    ("not-a-mapping", "- model\n- data\n", ["holds a list, not a mapping of sections"]),
    ("a-scalar", "just text\n", ["holds a str, not a mapping of sections"]),
    ("bad-indent", "model:\n  path: /m\n data: 1\n", ["is not valid YAML", "(line 3, column 2)"]),
    ("unclosed-flow", "model: {path: /m\n", ["is not valid YAML", "line"]),
    ("control-character", 'model: {path: "/m"}\x07\n', ["is not valid YAML", "special characters are not allowed"]),
    (
        "python-object-tag",
        "model: !!python/object/apply:os.system [echo hi]\n",
        ["is not valid YAML", "could not determine a constructor"],
    ),
    ("two-documents", "model: {path: /m}\n---\ndata: {train: /d}\n", ["is not valid YAML", "another document"]),
    (
        "key-twice",
        "model: {path: /m}\nlearner:\n  steps: 5\n  push_every: 1\n  steps: 50\n",
        ["key 'steps' is given twice in one mapping (lines 3 and 5); keep one"],
    ),
    (
        "section-twice",
        "learner: {}\nmodel: {path: /m}\nlearner: {}\n",
        ["key 'learner' is given twice", "lines 1 and 3"],
    ),
    ("nested-deep", "params: " + "[" * 5000 + "]" * 5000 + "\n", [f"nests deeper than {MAX_DEPTH} levels (line 1)"]),
    ("nested-block", "".join("  " * i + f"k{i}:\n" for i in range(40)) + "  " * 40 + "v\n", ["nests deeper than"]),
    (
        "nested-by-aliases",
        "a: &a " + "[" * 20 + "1" + "]" * 20 + "\nb: " + "[" * 20 + "*a" + "]" * 20 + "\n",
        [f"nests deeper than {MAX_DEPTH} levels once its aliases are expanded"],
    ),
]


@pytest.mark.parametrize("text, expected", [c[1:] for c in YAML_CASES], ids=[c[0] for c in YAML_CASES])
def test_bad_yaml_file_is_refused_with_one_line(tmp_path, text, expected):
    path = tmp_path / "config.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"config file {path}"), message
    for part in expected:
        assert part in message, f"{part!r} not in:\n{message}"


def test_a_config_path_that_is_a_folder_or_not_utf8(tmp_path):
    with pytest.raises(ConfigError, match="is a directory; name the YAML file in it"):
        load_config(tmp_path)
    (tmp_path / "latin1.yaml").write_bytes(b"run: {name: caf\xe9}\n")
    with pytest.raises(ConfigError, match="cannot be read"):
        load_config(tmp_path / "latin1.yaml")


def test_an_override_bomb_is_refused():
    with pytest.raises(ConfigError, match="override run.name= uses more than 64 YAML aliases"):
        load_config(base=BASE, overrides=["run.name=[&a [1], " + ", ".join(["*a"] * 65) + "]"])


def test_a_merge_key_may_still_be_overridden_and_lists_are_never_echoed(tmp_path):
    """`<<: *base` then a key of its own is YAML's override, not a key given twice; and an
    error over a list shows the key only (a list may be a whole file someone loaded)."""
    path = tmp_path / "c.yaml"
    path.write_text(
        "base: &base {steps: 3, prompts_per_step: 2}\nmodel: {path: /m}\ndata: {train: /d.jsonl}\n"
        "learner: {<<: *base, steps: 4}\n"
    )
    with pytest.raises(ConfigError) as err:  # `base` is no section: the merge itself loaded fine
        load_config(path)
    assert str(err.value).startswith("invalid config: base: unknown key;"), err.value
    assert "prompts_per_step': 2" not in str(err.value)
    with pytest.raises(ConfigError) as err:
        load_config(base=BASE, overrides=["learner.steps=[secret-a, secret-b]"])
    assert "learner.steps: Input should be a valid integer" in str(err.value)
    assert "secret" not in str(err.value)


def test_a_config_file_outside_the_callers_roots_is_refused(tmp_path):
    """The gateway loads a submitted config only from its own folder: not another path, nor a
    link inside it that leads out."""
    inside, outside = tmp_path / "submitted", tmp_path / "elsewhere"
    inside.mkdir(), outside.mkdir()
    (outside / "c.yaml").write_text("model: {path: /m}\ndata: {train: /d.jsonl}\n")
    (inside / "link.yaml").symlink_to(outside / "c.yaml")
    (inside / "own.yaml").write_text("model: {path: /m}\ndata: {train: /d.jsonl}\n")
    for path in (outside / "c.yaml", inside / "link.yaml", inside / ".." / "elsewhere" / "c.yaml"):
        with pytest.raises(ConfigError, match="lies outside the folders configs are read from here"):
            load_config(path, roots=[inside])
    assert load_config(inside / "own.yaml", roots=[inside]).model.path == "/m"


def test_a_part_module_that_does_not_parse_is_named_not_quoted(tmp_path, monkeypatch):
    """A `module:function` part is read as source: a file that is no Python (a secret, say),
    or a package whose __init__ raises, is one line naming the file or the error's type,
    never the file's text or the error's message."""
    secret = "sk-live-8d1e0a"
    (tmp_path / "not_python.py").write_text(f"token = {secret} {secret}\n")
    (tmp_path / "raising_pkg").mkdir()
    (tmp_path / "raising_pkg" / "__init__.py").write_text(f"raise RuntimeError({secret!r})\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for part, expected in (
        ("not_python:f", f"{tmp_path / 'not_python.py'} is not valid Python (invalid decimal literal, line 1)"),
        ("raising_pkg.mod:f", "importing the packages above 'raising_pkg.mod' raised RuntimeError"),
    ):
        with pytest.raises(ConfigError) as err:
            load_config(base=BASE, overrides=[f"algorithm.policy_loss={part}"])
        assert expected in str(err.value) and secret not in str(err.value), err.value
