"""``so101 train``, ``so101 serve``, ``so101 eval``: policy training (ACT or Diffusion Policy through LeRobot), the
GR00T-protocol policy server, evaluation in the twin (so101_policy)."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


def with_settings(cfg: Any, sets: list[str], root: str) -> Any:
    """``cfg`` (a config dataclass) with ``field=value`` settings (values as YAML), validated as the file is."""
    import yaml
    from so101_policy.config import parse_config
    from so101_policy.errors import ConfigError

    if not sets:
        return cfg
    values = {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(cfg).items()}
    for item in sets:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise ConfigError("--set", f"expects field=value, got {item!r}")
        values[key.strip()] = yaml.safe_load(raw)
    return parse_config(type(cfg), values, root)


def _columns(verb: str, fields: str) -> tuple[Any, ...]:
    """A progress bar's columns: ``verb``, the bar, done/total, ``fields`` (a rich format of the task's fields),
    elapsed and remaining time."""
    return (
        TextColumn(f"[bold]{verb}[/bold]"), BarColumn(), MofNCompleteColumn(), TextColumn(fields),
        TimeElapsedColumn(), TimeRemainingColumn(),
    )  # fmt: skip


def _fail(console: Console, exc: Exception) -> None:
    console.print(f"[red]error:[/red] {exc}")
    raise typer.Exit(2) from None


def train(
    dataset: Path = typer.Option(
        ..., "--dataset", help="LeRobot v3.0 dataset (a mixed one co-trains), or a dataset build with kept frames"
    ),
    out: Path = typer.Option(Path("runs/act"), "--out", help="run directory (resumed from checkpoints/last)"),
    config: Path | None = typer.Option(None, "--config", help="train YAML (default config/train.yaml)"),
    policy: str | None = typer.Option(None, "--policy", help="act | diffusion (LeRobot's --policy.type; train.policy)"),
    steps: int | None = typer.Option(None, "--steps", min=1, help="total optimizer steps (overrides the config)"),
    batch_size: int | None = typer.Option(None, "--batch-size", min=1),
    device: str | None = typer.Option(None, "--device", help="auto | cpu | cuda[:N]"),
    tracking_uri: str | None = typer.Option(None, "--tracking-uri", help="MLflow server (default: <out>/mlflow.db)"),
    time_limit_s: float | None = typer.Option(None, "--time-limit", min=0, help="s for this call, final save included"),
    sweep: Path | None = typer.Option(None, "--sweep", help="YAML of runs trained side by side, then fast-evaluated"),
    envs: int = typer.Option(0, "--envs", min=0, help="--sweep: fast-evaluation environments (0 = one per core)"),
) -> None:
    """Train ACT or Diffusion Policy through LeRobot, offline; MLflow tracking; resumable after a crash or SIGKILL
    (a run resumes as the policy it started as). ``--sweep``: the
    sweep file's runs on one device (each its own process and run directory under ``--out``; all at once, or
    ``at_once`` at a time), each scored by the fast evaluator; ``<out>/sweep.json`` ranks them."""
    from so101_policy.config import load_train_config
    from so101_policy.errors import PolicyError
    from so101_policy.train import TrainProgress, train_policy

    console = Console(stderr=True)
    try:
        cfg = load_train_config(config)
        overrides: dict[str, Any] = {"steps": steps, "batch_size": batch_size, "device": device}
        overrides["tracking_uri"] = tracking_uri
        overrides["time_limit_s"] = time_limit_s
        overrides["policy"] = policy
        cfg = dataclasses.replace(cfg, **{k: v for k, v in overrides.items() if v is not None})
    except (PolicyError, ValueError) as exc:
        _fail(console, exc)
    if sweep is not None:
        _sweep(console, sweep, cfg, dataset, out, envs)
        return
    columns = _columns("train", "loss {task.fields[loss]:.4f}  {task.fields[rate]:.0f} samples/s")
    with Progress(*columns, console=console) as bar:
        task = bar.add_task("train", total=cfg.steps, loss=float("nan"), rate=0.0)

        def on_progress(p: TrainProgress) -> None:
            bar.update(task, completed=p.step, loss=p.loss, rate=p.samples_per_s)

        try:
            result = train_policy(dataset, out, cfg, progress=on_progress)
        except (PolicyError, ValueError, OSError) as exc:
            _fail(console, exc)
    summary = {k: str(v) if isinstance(v, Path) else v for k, v in dataclasses.asdict(result).items()}
    (out / "train_result.json").write_text(json.dumps(summary, indent=2))
    typer.echo(json.dumps(summary, indent=2))


def serve(
    checkpoint: Path | None = typer.Option(None, "--checkpoint", help="ACT / Diffusion Policy run or checkpoint dir"),
    gr00t: Path | None = typer.Option(None, "--gr00t", help="Isaac-GR00T model (needs the gr00t package)"),
    replay: Path | None = typer.Option(None, "--replay", help=".npy (N, 6) actions in LeRobot units to replay"),
    host: str = typer.Option("127.0.0.1", "--host", help="bind address (localhost by default)"),
    port: int = typer.Option(5555, "--port"),
    token: str | None = typer.Option(None, "--token", help="api_token clients must send (enables kill)"),
    device: str = typer.Option("auto", "--device"),
    precision: str | None = typer.Option(None, "--precision", help="--checkpoint: fp32 (default), bf16 or fp16 (CUDA)"),
    compile_mode: str | None = typer.Option(None, "--compile", help="ACT: torch.compile mode, e.g. reduce-overhead"),
    cuda_graph: bool = typer.Option(False, "--cuda-graph", help="ACT on CUDA: the forward pass from a CUDA graph"),
    protocol: str | None = typer.Option(None, "--protocol", help="GR00T wire version: n1.6 (default) or n1.5"),
    warmup: int | None = typer.Option(None, "--warmup", min=0, help="inferences before 'serving on' (default 3)"),
) -> None:
    """Serve a policy over the GR00T N1.6 ZMQ protocol (ping, kill, get_action, reset, get_modality_config);
    --protocol n1.5 speaks GR00T N1.5's dialect (flat keys) instead."""
    from so101_policy.serve import main as serve_main

    argv = ["--host", host, "--port", str(port), "--device", device] + (["--cuda-graph"] if cuda_graph else [])
    given = {"--checkpoint": checkpoint, "--gr00t": gr00t, "--replay": replay, "--token": token, "--protocol": protocol}
    given |= {"--precision": precision, "--compile": compile_mode}
    for flag, value in (*given.items(), ("--warmup", warmup)):
        if value is not None:
            argv += [flag, str(value)]
    raise typer.Exit(serve_main(argv))


def evaluate(
    checkpoint: Path = typer.Option(..., "--checkpoint", help="ACT / Diffusion Policy run or checkpoint directory"),
    episodes: int | None = typer.Option(None, "-n", "--episodes", min=1, help="randomized episodes"),
    out: Path = typer.Option(Path("runs/eval"), "--out", help="report directory (resumed if it exists)"),
    config: Path | None = typer.Option(None, "--config", help="eval YAML (default config/eval.yaml)"),
    seed: int | None = typer.Option(None, "--seed", help="seed of the first episode"),
    real_time_factor: float | None = typer.Option(None, "--real-time-factor", help="sim + policy node speed-up"),
    device: str | None = typer.Option(None, "--device"),
    real: Path | None = typer.Option(None, "--real", help="sim-vs-real table (YAML: conditions, bags, labels)"),
    dr_profile: str | None = typer.Option(None, "--dr-profile", help="dr.yaml profile, e.g. wide"),
    fast: bool = typer.Option(False, "--fast", help="vectorized twin environments, batched policy (development)"),
    sets: list[str] = typer.Option([], "--set", help="eval.yaml field=value (YAML value), e.g. --set graphs=4"),
    envs: int = typer.Option(0, "--envs", min=0, help="--fast: environments at a time (0 = one per CPU core)"),
    time_limit_s: float | None = typer.Option(
        None, "--time-limit", min=0, help="s: no episode starts after it; the report counts the episodes run"
    ),
) -> None:
    """Evaluate in the twin through the real graph: success (ours + workshop rule, Wilson 95 %), FRAME metrics,
    tracking plots, videos, HTML report, MLflow. ``--fast``: the same episodes and success rules in vectorized
    environments with batched inference (fast_results.json; the graph evaluation is the figure of record).
    ``--time-limit``: a job's slice; episodes already started finish (the graph evaluation resumes the rest when
    called again with the same ``--out``)."""
    from so101_policy.config import load_eval_config
    from so101_policy.errors import PolicyError
    from so101_policy.evaluate import checkpoint_spec, run_evaluation

    console = Console(stderr=True)
    deadline = None if time_limit_s is None else time.monotonic() + time_limit_s
    try:
        cfg = load_eval_config(config)
        overrides: dict[str, Any] = {"episodes": episodes, "seed": seed, "device": device}
        overrides["real_time_factor"] = real_time_factor
        overrides["dr_profile"] = dr_profile
        cfg = dataclasses.replace(cfg, **{k: v for k, v in overrides.items() if v is not None})
        cfg = with_settings(cfg, sets, "eval")
        spec = checkpoint_spec(checkpoint, cfg.device, cfg.inference())
    except (PolicyError, ValueError) as exc:
        _fail(console, exc)
    if fast:
        _evaluate_fast(console, checkpoint, out, cfg, envs, deadline)
        return
    with Progress(*_columns("eval", "{task.fields[ok]}"), console=console) as bar:
        task = bar.add_task("eval", total=cfg.episodes, ok="")
        count = {"ok": 0}

        def on_episode(done: int, total: int, row: dict) -> None:
            count["ok"] += int(row["success"])
            bar.update(task, completed=done, ok=f"{count['ok']}/{done} succeeded")

        try:
            result = run_evaluation(spec, out, cfg, progress=on_episode, deadline=deadline, real=real)
        except (PolicyError, ValueError, OSError) as exc:
            _fail(console, exc)
    console.print(
        f"success {result.successes}/{result.episodes} = {result.success_rate:.0%} "
        f"(Wilson 95 %: {result.wilson_low:.0%}–{result.wilson_high:.0%}); report: {result.report_html}"
    )


def compare(
    a: Path = typer.Argument(..., help="an evaluation's output directory or episodes .jsonl"),
    b: Path = typer.Argument(..., help="another, of the same scenes"),
) -> None:
    """Pair two evaluations by scene seed (``so101 eval`` or ``--fast`` outputs, a sweep run's ``fast_eval``): per
    success rule, the successes of each on the common scenes, the scenes only one solved and the exact McNemar p
    (is the difference more than chance?). Prints JSON."""
    from so101_policy.comparison import compare_evaluations
    from so101_policy.errors import PolicyError

    console = Console(stderr=True)
    try:
        result = compare_evaluations(a, b)
    except (PolicyError, OSError) as exc:
        _fail(console, exc)
    for rule in ("success", "workshop_success"):
        r = result[rule]
        console.print(
            f"{rule}: A {r['a_successes']}/{result['same_scenes']}, B {r['b_successes']}/{result['same_scenes']}; "
            f"only A {r['only_a']}, only B {r['only_b']}; exact McNemar p = {r['exact_mcnemar_p']:.3g}"
        )
    print(json.dumps(result, indent=2))


def _evaluate_fast(console: Console, checkpoint: Path, out: Path, cfg: Any, envs: int, deadline: float | None) -> None:
    from so101_policy.errors import PolicyError
    from so101_policy.fast_eval import evaluate_checkpoint_fast

    try:
        result = evaluate_checkpoint_fast(checkpoint, out, cfg, envs=envs, deadline=deadline)
    except (PolicyError, ValueError, OSError) as exc:
        _fail(console, exc)
    console.print(
        f"success {result.successes}/{result.episodes} = {result.success_rate:.0%} "
        f"(Wilson 95 %: {result.wilson_low:.0%}–{result.wilson_high:.0%}), workshop rule "
        f"{result.workshop_successes}/{result.episodes}; {result.episodes_per_min:.0f} episodes/min "
        f"({result.episodes_per_min_warm:.0f} without the environments' start); "
        f"{result.results_json}"
    )


def _sweep(console: Console, path: Path, base: Any, dataset: Path, out: Path, envs: int) -> None:
    from so101_policy.config import load_eval_config
    from so101_policy.errors import PolicyError
    from so101_policy.sweep import load_sweep, run_sweep

    try:
        rows = run_sweep(load_sweep(path, base, load_eval_config()), dataset, out, envs=envs)
    except (PolicyError, ValueError, OSError) as exc:
        _fail(console, exc)
    for row in rows:
        lo, hi = row["wilson_95"]
        console.print(
            f"{row['run']}: success {row['success_rate']:.0%} ({lo:.0%}–{hi:.0%}), workshop {row['workshop_rate']:.0%},"
            f" {row['steps']} steps at {row['samples_per_s']:.0f} samples/s; {row['changes']}"
        )
    typer.echo(json.dumps(rows, indent=2))
