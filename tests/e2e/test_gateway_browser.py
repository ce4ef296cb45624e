"""The dashboard in a real browser (issue 13.3): headless Chromium (Debian's chromium and
chromedriver, driven by selenium) against a real `meshrl gateway serve` and a real tiny run
(`meshrl train` on the tiny model: embedded NATS, vLLM rollout, reward, reference, learner).
The curves appear and grow (and every chart the run feeds has data: truncation, clip
fractions, throughput, staleness, held-out eval), the run API's live status and the service
map show each replica with its weights version and health and the queue depths, the alerts
feed shows the alert the run raises, a click on a sample opens its group's trace, Pause
pauses the run (checked through the API) and Resume resumes it, Checkpoint writes one, a
viewer token cannot pause, ExportRun writes a model dir; StopRun through the API ends the
run, whose page then says ENDED with Pause/Resume/Checkpoint disabled. A second, finished run
under the same runs root (written with the learner's own writers: metrics.jsonl rows with the
issue's held-out numbers, samples.jsonl rows of agent episodes built as the rollout publishes
them) shows an episode's turns, the held-out accuracy on its own axis beside the count of
prompts, and the step's time as a stack whose height is the step time; its episodes are
rendered with the rollout's own chat format for the tiny model and traced with the rollout's
span helpers (issue 34.6), so the page shows the prompt as the model read it (the tools block
included), observations without the template's markup, the sample's own episode marked in its
group's waterfall, "step 3 / 3 · policy v3" for the finished run and KL ticks at 1e-4 that
read. These finished-run tests need no training run: they run alone with
`-k "held_out or step_time or episode or prompt_is or finished or kl_axis"`.
Everything read from a part the page redraws (the service map every 2 s, the samples every
3 s) is read in one script call, so a redraw between two reads cannot leave a stale element.
Screenshots go to the test's tmp dir (the path is printed).

Run: timeout 900 .venv/bin/python -m pytest -q -s -m slow tests/e2e/test_gateway_browser.py
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from meshrl.config.load import dump_config
from tests.e2e.conftest import mesh_config

pytestmark = pytest.mark.slow
CLI = [sys.executable, "-m", "meshrl.cli.main"]
OPERATOR, VIEWER = "operator-token-0123456789", "viewer-token-0123456789ab"
STEPS = 2000  # never reached: the run is stopped when the tests are done
# Held-out eval every 3 steps on 4 prompts (the Held-out eval chart), and a reward_flat rule
# that fires at step 2 (std of 2 step rewards < 1e6 always; action none): the alerts feed.
RUN_OVERRIDES = [
    f"learner.steps={STEPS}",
    "eval.every=3",
    "eval.max_prompts=4",
    "alerts.reward_flat.window=2",
    "alerts.reward_flat.min_std=1000000",
]
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,1800",
]


def stop(proc: subprocess.Popen, grace_s: float = 60) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()


def api(base: str, path: str, token: str, method: str = "GET") -> tuple[int, dict]:
    request = urllib.request.Request(
        base + path,
        method=method,
        data=b"{}" if method == "POST" else None,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=130) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def wait_until(condition, what: str, timeout_s: float = 300, poll_s: float = 0.5):
    deadline = time.monotonic() + timeout_s
    while not (found := condition()):
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout_s} s"
        time.sleep(poll_s)
    return found


@pytest.fixture(scope="session")
def runs_root(tmp_path_factory):
    return tmp_path_factory.mktemp("gateway_runs")


@pytest.fixture(scope="session")
def gateway(runs_root):
    """The base URL of a real `meshrl gateway serve` over the runs root (operator and viewer
    tokens): the live run and the finished runs the tests write are served by it."""
    tokens = runs_root.parent / "tokens.yaml"
    tokens.write_text(
        f"tokens:\n  - {{name: olga, role: operator, token: {OPERATOR}}}\n"
        f"  - {{name: vic, role: viewer, token: {VIEWER}}}\n"
    )
    served = subprocess.Popen(  # port 0: the gateway binds a free port itself and prints it
        [*CLI, "gateway", "serve", "--runs-root", str(runs_root), "--port", "0", "--grpc-port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "MESHRL_GATEWAY_TOKENS_FILE": str(tokens)},
    )
    try:
        line = served.stdout.readline()
        assert line.startswith("gateway: http://"), f"meshrl gateway serve did not start: {line!r}"
        yield f"http://127.0.0.1:{line.split('/')[2].split()[0].rsplit(':', 1)[1]}"
    finally:
        stop(served, 10)


@pytest.fixture(scope="session")
def live_run(tiny_model_dir, e2e_data, runs_root, gateway):
    """(gateway base URL, run name, the launcher): a real run under the runs root."""
    root, base = runs_root, gateway
    config = root.parent / "browser-run.yaml"
    config.write_text(dump_config(mesh_config(tiny_model_dir, e2e_data, root / "tiny", *RUN_OVERRIDES)))
    train = subprocess.Popen(
        [*CLI, "train", str(config)], stdout=subprocess.DEVNULL, stderr=open(root.parent / "train.log", "w")
    )
    try:
        wait_until(
            lambda: (
                train.poll() is None
                and api(base, "/api/runs/tiny/status", VIEWER)[1].get("learner", {}).get("state") == "RUNNING"
            ),
            "the run's learner RUNNING",
        )
        yield base, "tiny", train
    finally:
        stop(train)


@pytest.fixture(scope="session")
def browser(tmp_path_factory):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    for tool in ("chromium", "chromedriver"):
        assert shutil.which(tool), (
            f"{tool} is missing: run `bash scripts/test_tools.sh` (apt-installs chromium chromium-driver)"
        )
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # the console: CSP refusals land there
    for flag in [*CHROMIUM_FLAGS, f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    yield driver
    driver.quit()


def log_in(driver, base: str, run: str, token: str) -> None:
    from selenium.webdriver.common.by import By

    driver.get(f"{base}/runs/{run}")
    driver.delete_all_cookies()
    driver.get(f"{base}/runs/{run}")
    wait_until(lambda: driver.find_element(By.ID, "login").is_displayed(), "the login form")
    driver.find_element(By.ID, "token").send_keys(token)
    driver.find_element(By.CSS_SELECTOR, "#login button").click()
    wait_until(lambda: driver.find_element(By.ID, "run-page").is_displayed(), "the run page")


def chart_attributes(driver, title: str) -> dict:
    """A chart's data attributes, read in one script call: a chart is replaced by a new one
    when a series first appears, so an element found before may be gone when read."""
    return driver.execute_script(
        'const c = document.querySelector(`.chart[data-title="${arguments[0]}"]`);return c ? {...c.dataset} : {}', title
    )


def chart_points(driver, title: str) -> int:
    return int(chart_attributes(driver, title).get("points") or 0)


def chart_data(driver, title: str) -> tuple[set[str], int]:
    """(the chart's series keys, rows with a number for one of them); (set(), 0) if absent."""
    found = chart_attributes(driver, title)
    return set((found.get("keys") or "").split()), int(found.get("filled") or 0)


# Charts the tiny GRPO run feeds every step, and a key each must draw.
STEP_CHARTS = {
    "Truncation": "completions/clipped_ratio",
    "Clip fractions": "clip_ratio/low",
    "Throughput": "perf/throughput",
    "Staleness": "staleness/mean",
}


def test_curves_appear_and_grow(live_run, browser, tmp_path):
    base, run, _ = live_run
    log_in(browser, base, run, OPERATOR)
    first = wait_until(lambda: chart_points(browser, "Reward"), "a reward curve")
    for title in ("KL", "Entropy", "Response length", "Grad norm", "Step time split (s)"):
        assert chart_points(browser, title) >= 1, f"no {title} chart"
    wait_until(lambda: chart_points(browser, "Reward") >= first + 2, "the reward curve growing by 2 steps")
    for title, key in STEP_CHARTS.items():
        keys, filled = chart_data(browser, title)
        assert key in keys and filled >= 2, (title, keys, filled)
    # eval.every=3: the held-out accuracy of step 3 (and later) is drawn
    keys, _ = wait_until(lambda: (d := chart_data(browser, "Held-out eval"))[1] >= 1 and d, "a held-out eval point")
    assert "eval/accuracy" in keys, keys
    held_out = wait_until(lambda: chart_view(browser, "Held-out eval"), "the held-out chart drawn")
    assert held_out["axes"]["eval/n"] == "right" and held_out["axes"]["eval/accuracy"] == "y", held_out
    browser.save_screenshot(str(tmp_path / "curves.png"))
    print(f"\nscreenshot: {tmp_path / 'curves.png'}")


def live_status(base: str, run: str) -> dict:
    status, body = api(base, f"/api/runs/{run}/status", VIEWER)
    assert status == 200, body
    return body


def in_flight(body: dict) -> int:
    return sum(int(q["pending"]) + int(q["ack_pending"]) for q in body["queues"])


def test_the_status_shows_each_replica_its_weights_version_health_and_the_queues(live_run):
    base, run, _ = live_run
    body = live_status(base, run)
    replicas = body["replicas"]
    counts = {s: sum(r["service"] == s for r in replicas) for s in body["wanted"]}
    assert counts == {s: int(n) for s, n in body["wanted"].items()} and counts["rollout"] >= 1, (counts, body["wanted"])
    assert all(r["health"] == "SERVING" and r["grpc"] and not r["error"] for r in replicas), replicas
    rollouts = [r for r in replicas if r["service"] == "rollout"]
    assert all(r["has_weights_version"] and int(r["groups_generated"]) > 0 for r in rollouts), rollouts
    held = min(int(r["weights_version"]) for r in rollouts)
    assert 1 <= held <= int(live_status(base, run)["learner"]["policy_version"])
    # the version each replica holds follows the learner's pushes
    wait_until(
        lambda: (
            min(int(r["weights_version"]) for r in live_status(base, run)["replicas"] if r["service"] == "rollout")
            > held
        ),
        "the rollouts' weights version rising",
        120,
    )
    assert {"prompts", "generated", "scored"} <= {q["stream"] for q in body["queues"]}, body["queues"]
    assert all(q["consumer"] for q in body["queues"])
    # work in flight: some queue holds a message waiting or being worked on while the run runs
    wait_until(lambda: in_flight(live_status(base, run)) > 0, "a message pending on a queue", 60)


def service_map(driver) -> dict[str, list[str]]:
    """Each row of the service map: its cells' text and, last, the health cell's class. One
    script call: the map is redrawn every 2 s, and an element read across a redraw is stale."""
    return driver.execute_script(
        "return Object.fromEntries([...document.querySelectorAll('#services tbody tr')].map(r =>"
        " [r.dataset.replica, [...[...r.children].map(td => td.textContent), r.children[3].className]]))"
    )


def shows(row: list[str], replica: dict) -> bool:
    """A service-map row shows the replica, SERVING and (a rollout) "vN" with N at least the
    version the API gave a moment before (the map is polled every 2 s)."""
    service, name, weights, health = row[:4]
    if replica["service"] != "rollout":
        return (service, name, weights, health) == (replica["service"], replica["replica"], "-", "SERVING")
    return (
        (service, name, health) == ("rollout", replica["replica"], "SERVING")
        and weights.startswith("v")
        and int(weights[1:]) >= int(replica["weights_version"])
    )


def map_agrees(shown: dict[str, list[str]], replicas: list[dict]) -> bool:
    return set(shown) == {r["replica"] for r in replicas} and all(shows(shown[r["replica"]], r) for r in replicas)


def test_the_service_map_shows_each_replica_its_weights_version_and_health(live_run, browser):
    base, run, _ = live_run
    replicas = live_status(base, run)["replicas"]
    shown = wait_until(
        lambda: map_agrees(m := service_map(browser), replicas) and m, f"the service map showing {replicas}", 30
    )
    assert all(row[-1] == "ok" for row in shown.values()), shown  # health shown in green
    queues = browser.execute_script(
        "return [...document.querySelectorAll('#queues tbody tr')].map(r => r.children[0].textContent)"
    )
    assert set(queues) >= {"prompts", "generated", "scored"}, queues


def test_the_alerts_feed_shows_the_alert_the_run_raised(live_run, browser):
    from selenium.webdriver.common.by import By

    base, run, _ = live_run
    records = wait_until(lambda: api(base, f"/api/runs/{run}/alerts", VIEWER)[1]["records"], "an alert in alerts.jsonl")
    assert records[0]["row"]["rule"] == "reward_flat" and records[0]["row"]["severity"] == "warning", records[0]
    feed = wait_until(lambda: browser.find_elements(By.CSS_SELECTOR, "#alerts li.alert"), "the alerts feed", 30)
    assert "reward_flat" in feed[-1].text and "warning" in feed[-1].get_attribute("class"), feed[-1].text


def samples_total(driver) -> int:
    from selenium.webdriver.common.by import By

    text = driver.find_element(By.ID, "samples-range").text  # "1–10 of 24"
    return int(text.split(" of ")[1]) if " of " in text else 0


def splits_shown(driver) -> list[str]:
    """The split of each sample row shown, read in one go (the first page is redrawn every 3 s)."""
    return driver.execute_script(
        "return [...document.querySelectorAll('tr.sample')].map(r => r.children[1].textContent)"
    )


def test_a_click_on_a_sample_opens_its_groups_trace(live_run, browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    # The second page holds samples a few steps old, whose spans are all written (a service
    # ends its span after its publish is acknowledged, and spans are exported in batches);
    # training samples only (the held-out eval's answers have no group trace).
    Select(browser.find_element(By.ID, "split")).select_by_visible_text("train")
    wait_until(lambda: set(splits_shown(browser)) == {"train"}, "the training samples' first page")
    wait_until(lambda: samples_total(browser) > 10, "more than a page of samples")
    browser.find_element(By.ID, "samples-older").click()
    wait_until(lambda: browser.find_element(By.ID, "samples-range").text.startswith("11"), "the second page")
    sample = browser.find_elements(By.CSS_SELECTOR, "tr.sample")[splits_shown(browser).index("train")]
    group = sample.get_attribute("data-group")

    def spans_shown() -> set[str]:
        sample.click()  # (re)opens the trace: it reads the span files again, then redraws
        time.sleep(1)
        return set(
            browser.execute_script(
                "return [...document.querySelectorAll('#waterfall .span-row')].map(r => r.dataset.span)"
            )
        )

    # learner.step: the learner's step span that trained the group, linked to its trace
    wanted = {"learner.publish_prompt", "rollout.generate", "reward.score", "learner.step"}
    wait_until(lambda: spans_shown() >= wanted, f"the group's spans {sorted(wanted)}", timeout_s=60, poll_s=1)
    assert browser.find_element(By.ID, "trace-group").text == group
    browser.save_screenshot(str(tmp_path / "trace.png"))
    print(f"\nscreenshot: {tmp_path / 'trace.png'}")


def click_when_enabled(driver, button_id: str) -> None:
    """Click an operator button once the page has enabled it (after its first status poll)."""
    from selenium.webdriver.common.by import By

    wait_until(lambda: driver.find_element(By.ID, button_id).is_enabled(), f"{button_id} enabled", 30)
    driver.find_element(By.ID, button_id).click()


def test_pause_pauses_the_run_and_resume_resumes_it(live_run, browser):
    from selenium.webdriver.common.by import By

    base, run, _ = live_run
    click_when_enabled(browser, "pause")
    wait_until(lambda: api(base, f"/api/runs/{run}/status", VIEWER)[1]["learner"]["state"] == "PAUSED", "PAUSED")
    wait_until(lambda: "paused" in browser.find_element(By.ID, "action-result").text, "the pause answer shown")
    click_when_enabled(browser, "resume")
    wait_until(lambda: api(base, f"/api/runs/{run}/status", VIEWER)[1]["learner"]["state"] == "RUNNING", "RUNNING")
    # both actions are in the run's audit log, read back through the API
    status, body = api(base, f"/api/runs/{run}/events", VIEWER)
    rows = [r["row"] for r in body["records"]]
    # the gateway's row names the token's user; the learner's control service writes its own
    # (its caller: the gateway's peer address), in either order with the gateway's
    by_gateway = [(r["action"], r["who"]) for r in rows if r["via"] == "gateway"]
    assert by_gateway[-2:] == [("pause", "olga"), ("resume", "olga")]
    by_learner = [r["action"] for r in rows if r["via"] == "learner-control"]
    assert by_learner[-2:] == ["pause", "resume"]


def test_a_viewer_cannot_pause(live_run, browser):
    from selenium.webdriver.common.by import By

    base, run, _ = live_run
    log_in(browser, base, run, VIEWER)
    assert not browser.find_element(By.ID, "pause").is_enabled()
    status = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        f"fetch('/api/runs/{run}/pause', {{method: 'POST', body: '{{}}'}}).then(r => done(r.status));"
    )
    assert status == 403
    assert api(base, f"/api/runs/{run}/status", VIEWER)[1]["learner"]["state"] == "RUNNING"


def test_checkpoint_now_writes_a_checkpoint(live_run, browser):
    from selenium.webdriver.common.by import By

    base, run, _ = live_run
    log_in(browser, base, run, OPERATOR)
    click_when_enabled(browser, "checkpoint")
    shown = wait_until(
        lambda: "written to" in (t := browser.find_element(By.ID, "action-result").text) and t,
        "the checkpoint answer shown",
    )
    step = int(shown.split("checkpoint of step ")[1].split()[0])
    steps = [int(c["step"]) for c in api(base, f"/api/runs/{run}/checkpoints", VIEWER)[1]["checkpoints"]]
    assert step in steps, (step, steps)
    status, body = api(base, f"/api/runs/{run}/export", OPERATOR, method="POST")  # the newest good one
    assert status == 200, body
    assert (Path(body["path"]) / "config.json").is_file() and int(body["checkpoint_step"]) >= step


def test_stop_through_the_api_ends_the_run(live_run):
    base, run, train = live_run
    status, body = api(base, f"/api/runs/{run}/stop", OPERATOR, method="POST")
    assert status == 200 and "asked the launcher" in body["message"]
    assert train.wait(300) != 0  # stopped, not finished: 143 (SIGTERM)
    listed = {r["name"]: r for r in api(base, "/api/runs", VIEWER)[1]["runs"]}
    assert listed[run]["live"] is False
    events = [r["row"]["action"] for r in api(base, f"/api/runs/{run}/events", VIEWER)[1]["records"]]
    assert events[-1] == "stop" and "checkpoint" in events


def controls(driver) -> dict:
    """The run's state and each action button's enabled state and tooltip, read at once."""
    return driver.execute_script(
        "return {state: document.getElementById('state').textContent, buttons: Object.fromEntries("
        "[...document.querySelectorAll('#controls button')].map(b => [b.id, [!b.disabled, b.title]]))}"
    )


def test_the_ended_run_says_so_and_its_actions_are_disabled(live_run, browser):
    """After the stop (the test above) the page, still open, shows ENDED and no action left."""
    shown = wait_until(lambda: (c := controls(browser))["state"] == "ENDED" and c, "the page saying ENDED", 30)
    assert shown["buttons"] == {verb: [False, "the run has ended"] for verb in ("pause", "resume", "checkpoint")}


# A finished agents run beside the live one: the learner's writers, constructed episodes.
AGENTS = "agents-done"
TIMES = {
    "time/wait_for_batch": 4.0,
    "time/forward": 1.5,
    "time/backward": 2.0,
    "time/algo": 0.25,
    "time/optimizer": 0.5,
    "time/weights_push": 0.75,
    "time/step": 10.0,  # the rest: 1.0 other
    "time/generate": 3.0,
    "time/train": 4.5,
}


KL = [1.2e-4, 2.5e-4, 3.1e-4]  # a KL of 1e-4 scale: its axis once read "0.00" at every tick
CALCULATOR = {
    "type": "function",
    "function": {
        "name": "calculator",
        "description": "evaluates an arithmetic expression",
        "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}},
    },
}


def rendered_as_the_rollout_does(group, model_dir) -> None:
    """The group's prompt tokens and its turns' observations as the rollout's chat format
    renders them for the tiny model (ChatML; the calculator in the system message's Hermes
    tools block): what the model read, template markup included."""
    from transformers import AutoTokenizer

    from meshrl.services.rollout.agent.chat_format import ChatFormat
    from meshrl.services.rollout.agent.parsers import get_tool_parser
    from meshrl.transport.bus.codec import pack_int32

    chat = ChatFormat(AutoTokenizer.from_pretrained(model_dir), get_tool_parser("hermes"))
    ids, _ = chat.prompt_ids([{"role": "user", "content": group.task.prompt_text}], [], [CALCULATOR])
    group.task.prompt_token_ids = pack_int32(ids)
    for sample in group.samples:
        for turn in sample.turns:
            if turn.observation_text:
                turn.observation_text = chat.observation_ids(
                    [{"role": "tool", "content": turn.observation_text}], None
                ).text


def write_episode_traces(run_dir, group) -> None:
    """The group's trace as the rollout writes it (tracing's own file exporter): the group's
    span, and each episode its own trace (rollout.episode, a turn span per turn)."""
    from meshrl.services.rollout.agent.spans import child_span, episode_span
    from meshrl.telemetry.tracing import group_span, init_tracing, shutdown_tracing

    tracer = init_tracing("rollout", "0", AGENTS, run_dir=run_dir)
    try:
        with group_span("rollout.generate", group.group_id):
            for sample in group.samples:
                with episode_span(f"{group.group_id}/{sample.index}", group.group_id, group.task.environment, 3):
                    for turn in sample.turns:
                        with child_span("episode.turn", 3, turn=turn.index):
                            pass
    finally:
        shutdown_tracing(tracer)


@pytest.fixture(scope="session")
def agents_run(runs_root, tiny_model_dir, e2e_data):
    """A finished 3-step agents run (its config asks for 3 steps), written with the learner's
    writers: metrics (KL at 1e-4 scale, weights_version 1..3), an episode group's samples
    rendered as the rollout renders them, and its trace."""
    from transformers import AutoTokenizer

    from meshrl.eval.samples import SampleWriter
    from meshrl.run_layout import RunDir
    from meshrl.services.learner.metric_logger import JsonlLogger
    from tests.fixtures.episodes import episode_group

    run_dir = runs_root / AGENTS
    run_dir.mkdir()
    (run_dir / "launcher.lock").touch()  # a launcher here ran it, and it has ended
    RunDir(run_dir).config.write_text(dump_config(mesh_config(tiny_model_dir, e2e_data, run_dir)))
    logger = JsonlLogger(run_dir / "metrics.jsonl")
    for step in range(3):
        held_out = {"eval/accuracy": 0.5 + 0.22 * step, "eval/n": 64.0} if step != 1 else {}  # 0.5, 0.94
        pushed = {"kl": KL[step], "weights_version": float(step + 1)}
        logger.log(step, {"reward": 0.2 * step, **TIMES, **held_out, **pushed})
    logger.close()
    group = episode_group()
    rendered_as_the_rollout_does(group, tiny_model_dir)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    SampleWriter.for_run(run_dir, k=10, tokenizer=tokenizer).write_train(2, [group])
    write_episode_traces(run_dir, group)
    return AGENTS


def chart_view(driver, title: str) -> dict | None:
    """What a chart shows: its series, their axes, each axis' drawn range, a stack's height
    (None until it is drawn)."""
    found = chart_attributes(driver, title)
    if not found.get("ranges"):
        return None
    return {
        "keys": found["keys"].split(),
        "axes": json.loads(found["axes"]),
        "stacked": found["stacked"],
        "ranges": json.loads(found["ranges"]),
        "top": found.get("top"),
    }


def test_held_out_accuracy_and_the_count_of_prompts_have_their_own_axes(gateway, agents_run, browser):
    log_in(browser, gateway, agents_run, VIEWER)
    chart = wait_until(lambda: chart_view(browser, "Held-out eval"), "the held-out chart", 30)
    assert chart["axes"] == {"eval/accuracy": "y", "eval/n": "right"}
    low, high = chart["ranges"]["y"]  # accuracy 0.5 → 0.94 fills its axis, not the bottom of 0..64
    assert 0 <= low <= 0.5 and 0.94 <= high <= 1.5, chart["ranges"]
    assert chart["ranges"]["right"][1] >= 64


def test_the_step_time_is_a_stack_whose_height_is_the_step_time(gateway, agents_run, browser):
    chart = wait_until(lambda: chart_view(browser, "Step time split (s)"), "the step-time chart", 30)
    assert chart["stacked"] == "1"
    assert chart["keys"] == [
        "time/wait_for_batch",
        "time/forward",
        "time/backward",
        "time/algo",
        "time/optimizer",
        "time/weights_push",
        "time/other",
    ]
    assert float(chart["top"]) == pytest.approx(10.0)  # the stack's height: time/step
    low, high = chart["ranges"]["y"]
    assert low == 0 and 10.0 <= high < 12  # the stack stands on 0 and fits the chart
    stages = chart_view(browser, "Stage time (s)")  # overlapping stage times: lines, not parts
    assert stages["keys"] == ["time/generate", "time/train"] and stages["stacked"] == "0"


def test_an_episode_shows_each_turn_its_tool_calls_observation_and_reward(gateway, agents_run, browser, tmp_path):
    from tests.fixtures.episodes import TURNS

    wait_until(
        lambda: browser.execute_script(
            "const row = [...document.querySelectorAll('tr.sample')].find(r => r.children[8].textContent === '3');"
            "if (row) row.click(); return Boolean(row);"
        ),
        "the 3-turn episode in the samples",
        30,
    )
    episode = wait_until(
        lambda: browser.execute_script(
            "const e = document.getElementById('episode');"
            "return e && {head: e.querySelector('h3').textContent, turns: [...e.querySelectorAll('li.turn')].map(t => ({"
            " reward: t.dataset.reward, head: t.querySelector('.turn-head').textContent,"
            " text: t.querySelector('.turn-text').textContent,"
            " calls: [...t.querySelectorAll('.tool-call')].map(c => [c.textContent, c.className]),"
            " observation: t.querySelector('.observation')?.textContent ?? null}))}"
        ),
        "the episode view",
        30,
    )
    assert episode["head"] == "Episode in tool_arith · 3 turns · environment reward 1"
    shown = episode["turns"]
    assert [t["head"] for t in shown] == [
        "turn 0 · reward 0 · stop",
        "turn 1 · reward 0.2500 · stop",
        "turn 2 · reward 0.7500 · stop · done",
    ]
    assert [t["text"] for t in shown] == [text for text, *_ in TURNS]
    # shown without the template's markup the model read around it (the row keeps that)
    assert [t["observation"] for t in shown] == ["error: arguments are not valid JSON", "42", None]
    rows = api(gateway, f"/api/runs/{agents_run}/samples?page_size=10", VIEWER)[1]["samples"]
    read = next(r for r in rows if len(r["turns"]) == 3)["turns"][1]["observation"]
    assert read == "<|im_end|>\n<|im_start|>tool\n42<|im_end|>\n<|im_start|>assistant\n", read
    assert shown[0]["calls"] == [
        ['calculator({"expression": 6*7}) — arguments are not valid JSON: Expecting value', "tool-call bad"]
    ]
    assert shown[1]["calls"] == [['calculator({"expression": "6*7"})', "tool-call"]] and shown[2]["calls"] == []
    assert [t["reward"] for t in shown] == ["0", "0.25", "0.75"]
    browser.save_screenshot(str(tmp_path / "episode.png"))
    print(f"\nscreenshot: {tmp_path / 'episode.png'}")


def test_the_prompt_is_shown_as_the_model_read_it_with_its_tools(agents_run, browser):
    """The sample opened above: its prompt as the rollout rendered it, the tools block in the
    system message before the user's question, up to the assistant header the model wrote after."""
    from tests.fixtures.episodes import PROMPT

    head, prompt = browser.execute_script(
        "const d = document.getElementById('sample-detail');"
        "return [d.querySelector('h3').textContent, d.querySelector('pre.prompt').textContent]"
    )
    assert head == "Prompt as the model read it"
    assert prompt.startswith("<|im_start|>system\n# Tools\n"), prompt
    assert f"<tools>\n{json.dumps(CALCULATOR)}\n</tools>" in prompt, prompt
    assert prompt.endswith(f"<|im_start|>user\n{PROMPT}<|im_end|>\n<|im_start|>assistant\n"), prompt


def test_the_samples_episode_is_marked_in_its_groups_waterfall(agents_run, browser, tmp_path):
    """The group's trace: its rollout.generate span, then each episode's own trace; the rows
    of the opened sample's episode (0: 3 turns) are marked, the other episode's are not."""
    shown = wait_until(
        lambda: browser.execute_script(
            "const rows = [...document.querySelectorAll('#waterfall .span-row')];"
            "return rows.length && {head: document.querySelector('#waterfall .trace-head').textContent,"
            " rows: rows.map(r => [r.dataset.span, r.classList.contains('this-episode')])}"
        ),
        "the group's waterfall",
        30,
    )
    assert shown["rows"] == [
        ["rollout.generate", False],
        ["rollout.episode", True],
        ["episode.turn", True],
        ["episode.turn", True],
        ["episode.turn", True],
        ["rollout.episode", False],
        ["episode.turn", False],
    ]
    assert shown["head"].endswith(" · this sample's episode agents-g1/0 marked"), shown["head"]
    browser.save_screenshot(str(tmp_path / "episode-trace.png"))
    print(f"\nscreenshot: {tmp_path / 'episode-trace.png'}")


def test_a_finished_run_shows_its_last_step_and_policy_version(agents_run, browser):
    """3 steps of 3 trained, the last one pushing policy version 3; no launcher: ENDED."""
    shown = wait_until(
        lambda: browser.execute_script(
            "const t = id => document.getElementById(id).textContent;"
            "return t('step') !== '-' && [t('state'), t('step'), t('total'), t('policy')]"
        ),
        "the run's status shown",
        30,
    )
    assert shown == ["ENDED", "3", "3", "3"]


def test_the_kl_axis_ticks_read_at_small_values(agents_run, browser):
    """KL of 1.2e-4 … 3.1e-4: each tick of its axis reads a different number (not "0.00")."""
    ticks = wait_until(lambda: chart_attributes(browser, "KL").get("ticks"), "the KL chart's ticks", 30)
    labels = json.loads(ticks)["y"]
    assert len(labels) >= 2 and len(set(labels)) == len(labels), labels
    assert all("e-4" in x or x == "0" for x in labels) and all(float(x) < 1e-3 for x in labels), labels
    reward = json.loads(chart_attributes(browser, "Reward")["ticks"])["y"]  # 0 … 0.4: plain decimals
    assert all("e" not in x for x in reward) and len(set(reward)) == len(reward), reward


def test_no_page_broke_a_content_security_policy_rule(live_run, browser):
    """Last of this file: every page the tests above drove ran under the gateway's CSP
    (gateway/auth/browser.py); the browser logs each thing it refused (an inline style, a script)."""
    browser.get(f"{live_run[0]}/runs/{live_run[1]}")
    refused = [e["message"] for e in browser.get_log("browser") if "Content Security Policy" in e["message"]]
    assert refused == []
