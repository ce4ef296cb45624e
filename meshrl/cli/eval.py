"""`meshrl eval CHECKPOINT_OR_EXPORT DATA [--out FILE] [key=value ...]`: evaluate before a release.

CHECKPOINT_OR_EXPORT is a run dir (its newest good checkpoint), RUN_DIR/checkpoints/step_N
or a Hugging Face model dir (`meshrl export`); DATA is a verl-style .jsonl/.parquet file.
A checkpoint is first exported to a temporary HF dir. The run config is the one saved with
the checkpoint (or `--config FILE`, or the defaults), with `model.path` = the served dir and
the `eval` and `reward` sections deciding what is sampled and what is correct (see
meshrl/config/eval.py); `key=value` overrides come last, e.g. `eval.pass_k=8`.

Then it starts a local NATS, one rollout and one reward process (meshrl.launch.eval_mesh),
runs the same Evaluator the learner runs every `eval.every` steps, prints the metrics as a
table, writes the JSON result (metrics and every sample; default ./eval-<name>.json) and
stops every process it started. The temporary dir (export, logs, NATS data) is removed
after a success and kept, with its path printed, after a service failure; `--work-dir` keeps it.

Rows are checked before anything starts: a bad row fails at once naming its line and field.
Exit status: 0 done; 2 a bad argument, checkpoint, data file or config; 1 the evaluation
failed (a service died or could not answer).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
from pathlib import Path

import yaml
from tqdm import tqdm

from meshrl.cli import about
from meshrl.config import ConfigError, load_config
from meshrl.config.load import deep_merge
from meshrl.errors import LaunchError, RunFailed
from meshrl.eval import EvalUnavailable
from meshrl.eval.evaluator import Evaluator
from meshrl.eval.plan import EvalPlan
from meshrl.eval.report import metrics_table, result_document, write_result
from meshrl.eval.reward_client import RewardClient
from meshrl.eval.rollout_pool import RolloutPool
from meshrl.eval.source import model_dir_for, resolve_source
from meshrl.inputs.checkpoint.errors import CheckpointError
from meshrl.inputs.data.prompts import PromptDataset, read_prompt_rows
from meshrl.inputs.data.rows import DatasetError
from meshrl.inputs.models.load import ModelLoadError, load_tokenizer
from meshrl.launch.eval_mesh import eval_mesh
from meshrl.run_layout import RunDir
from meshrl.transport.rpc.mesh_tls import caller_env


def add_parser(sub) -> None:
    p = sub.add_parser(
        "eval", help=about("eval"), description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("source", metavar="CHECKPOINT_OR_EXPORT")
    p.add_argument("data", metavar="DATA", help="prompt rows (.jsonl or .parquet, verl-style)")
    p.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides")
    p.add_argument("--out", type=Path, default=None, help="JSON result (default ./eval-<name>.json)")
    p.add_argument(
        "--config", type=Path, default=None, help="run config YAML to use instead of the one saved with the checkpoint"
    )
    p.add_argument("--base-model", default=None, help="export: HF dir with the architecture's config")
    p.add_argument("--tokenizer", default=None, help="export: tokenizer dir (default: the run's)")
    p.add_argument(
        "--work-dir",
        type=Path,
        default=None,
        help="keep the export, logs and NATS data here (default: a temporary dir)",
    )
    p.add_argument(
        "--start-timeout",
        type=float,
        default=600.0,
        metavar="S",
        help="seconds for rollout and reward to come up (vLLM start-up)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run, accepts_extra_overrides=True)


def run(args) -> int:
    try:
        return evaluate(args)
    except (CheckpointError, DatasetError, ModelLoadError) as err:
        print(f"meshrl: error: {err}", file=sys.stderr)
        return 2
    except EvalUnavailable as err:
        raise RunFailed(str(err)) from None


def check_data(path: str) -> Path:
    """DATA exists and every row is valid (DatasetError names the line and field)."""
    data = Path(path).expanduser()
    if not data.is_file():
        raise LaunchError(
            f"DATA {data} does not exist; pass a .jsonl or .parquet file of prompt "
            f"rows (`meshrl data arithmetic --out {data} --n 64` makes one)"
        )
    read_prompt_rows(data, "error")
    return data.resolve()


def evaluate(args) -> int:
    source, data = resolve_source(args.source), check_data(args.data)
    work_dir = args.work_dir or Path(tempfile.mkdtemp(prefix="meshrl-eval-"))
    ok = False
    try:
        model_dir = model_dir_for(source, work_dir, base_model=args.base_model, tokenizer=args.tokenizer)
        cfg = eval_config(source.saved_config, args.config, model_dir, data, work_dir, args.overrides)
        result = run_on_mesh(cfg, model_dir, work_dir, args)
        report(result, cfg, source, data, model_dir, args.out)
        ok = True
    finally:
        started = RunDir(work_dir).logs.is_dir()  # failed before any process: nothing worth keeping
        if args.work_dir is None and (ok or not started):
            shutil.rmtree(work_dir, ignore_errors=True)
        elif not ok:
            print(f"meshrl eval: the export, logs and NATS data are kept in {work_dir}", file=sys.stderr)
    return 0


def eval_config(
    saved: dict | None, config_file: Path | None, model_dir: Path, data: Path, work_dir: Path, overrides: list[str]
):
    """The saved (or given) run config, made to serve `model_dir` here, then the overrides."""
    tree = dict(saved or {})
    if config_file is not None:
        if not config_file.is_file():
            raise ConfigError(f"--config {config_file} does not exist")
        tree = yaml.safe_load(config_file.read_text()) or {}
    here = {
        "model": {"path": str(model_dir), "tokenizer": None, "gguf_file": None},
        "data": {"train": str(data), "eval": str(data)},
        "run": {"dir": str(work_dir), "name": (tree.get("run") or {}).get("name", "eval")},
        "rollout": {"replicas": 1},
        "reward": {"replicas": 1},
        "nats": {"url": "embedded"},
        "telemetry": {"metrics_port": 0, "otlp_endpoint": None},
        "eval": {"every": 0, "at_start": False},
    }
    return load_config(base=deep_merge(tree, here), overrides=overrides)


def run_on_mesh(cfg, model_dir: Path, work_dir: Path, args):
    """Tokenize the prompts (as training does), start the mesh, evaluate, stop the mesh."""
    dataset = PromptDataset.from_file(
        cfg.data.eval,
        load_tokenizer(model_dir),
        shuffle=False,
        max_prompt_tokens=cfg.data.max_prompt_tokens,
        apply_chat_template=cfg.data.apply_chat_template,
    )
    items = dataset.items[: cfg.eval.max_prompts]
    if dataset.report().over_limit:
        print(
            f"meshrl eval: warning: {dataset.report().over_limit} prompts longer than "
            f"data.max_prompt_tokens={cfg.data.max_prompt_tokens} left out",
            file=sys.stderr,
        )
    print(
        f"meshrl eval: {len(items)} prompts from {cfg.data.eval} on {model_dir}; starting "
        f"rollout and reward (vLLM start-up takes a minute on CPU)",
        file=sys.stderr,
    )
    with eval_mesh(cfg, work_dir, start_timeout_s=args.start_timeout) as mesh, caller_env(mesh.grpc_env):
        return asyncio.run(evaluate_items(cfg, mesh, items, progress=not args.no_progress))


async def evaluate_items(cfg, mesh, items, *, progress: bool):
    plan = EvalPlan.from_run_config(cfg)
    pool = RolloutPool(mesh.rollout)
    reward = RewardClient(mesh.reward, plan.component_names, mesh.run_id)
    try:
        with tqdm(total=len(items), desc="eval", unit="prompt", disable=not progress) as bar:
            return await Evaluator(plan, pool, reward, mesh.run_id).run(items, tag="offline", on_progress=bar.update)
    finally:
        await pool.close()
        await reward.close()


def report(result, cfg, source, data: Path, model_dir: Path, out: Path | None) -> None:
    name = f"step_{source.step}" if source.step is not None else source.path.name
    document = result_document(
        result, cfg, source=str(source.path), step=source.step, data=str(data), model_dir=str(model_dir)
    )
    print(metrics_table(result.metrics))
    print(f"wrote {write_result(out or Path(f'eval-{name}.json'), document)}")
