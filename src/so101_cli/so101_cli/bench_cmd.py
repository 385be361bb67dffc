"""``so101 bench ...``: benchmarks; each prints its JSON and records it in ``bench/results/<name>.json``."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import typer
from so101_core.robot_spec import JOINT_NAMES

from so101_cli.benchmarks.results import machine, read_result, write_result

app = typer.Typer(help="Benchmarks (results recorded in bench/results/).", no_args_is_help=True)


def _report(name: str, result: dict[str, Any], as_json: bool, save: bool) -> None:
    if save:
        path = write_result(name, result)
        typer.echo(f"recorded in {path}", err=True)
    if as_json:
        typer.echo(json.dumps(result, indent=2))
    else:
        for key, value in result.items():
            typer.echo(f"{key}: {value}")


@app.command()
def transport(
    seconds: float = typer.Option(10.0, "--seconds", help="duration of each load, s"),
    port: int = typer.Option(17447, "--port", help="router port on 127.0.0.1 for the run (zenoh)"),
    transport: str = typer.Option("zenoh", "--transport", help="zenoh (vs raw zenoh) or rclpy (in $ROS_DOMAIN_ID)"),
    as_json: bool = typer.Option(False, "--json", help="print JSON"),
    save: bool = typer.Option(True, "--save/--no-save", help="write bench/results/transport.json"),
) -> None:
    """3 × 640×480 rgb8 @ 30 Hz + JointState @ 100 Hz, recorded to MCAP; on zenoh vs raw zenoh, or on rclpy.

    One file holds both: a zenoh run keeps the file's ``rclpy`` section, an rclpy run replaces only it."""
    from so101_cli.benchmarks.transport import run_rclpy_transport_benchmark, run_transport_benchmark

    if transport not in ("zenoh", "rclpy"):
        raise typer.BadParameter(f"--transport must be zenoh or rclpy, got {transport!r}")
    previous = read_result("transport") or {}
    if transport == "zenoh":
        result = run_transport_benchmark(seconds, port)
        if "rclpy" in previous:
            result["rclpy"] = previous["rclpy"]
    else:
        section = run_rclpy_transport_benchmark(seconds)
        section["date"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        section["machine"] = machine()
        result = {k: v for k, v in previous.items() if k != "benchmark"}  # the zenoh run, as recorded
        result["rclpy"] = section
    _report("transport", result, as_json, save)


@app.command()
def sim(
    episodes: int = typer.Option(100, "--episodes", help="randomized scripted episodes"),
    render_frames: int = typer.Option(20, "--render-frames", help="three-camera frames to render"),
    width: int = typer.Option(640, "--width"),
    height: int = typer.Option(480, "--height"),
    dr_profile: str = typer.Option("", "--dr-profile", help="dr.yaml profile of the episodes (default: base)"),
    label: str = typer.Option("cpu", "--label", help="result name suffix: sim_<label>.json (e.g. cpu, h200)"),
    as_json: bool = typer.Option(False, "--json", help="print JSON"),
    save: bool = typer.Option(True, "--save/--no-save", help="write bench/results/sim_<label>.json"),
) -> None:
    """Physics real-time factor, three-camera rendering rate, scripted-expert success over N episodes."""
    from so101_core.sim.bench import run_sim_benchmark
    from so101_core.sim.randomization import load_dr_config

    profile = None if dr_profile in ("", "default") else dr_profile
    dr = load_dr_config(profile=profile)
    result = run_sim_benchmark(episodes, render_frames=render_frames, width=width, height=height, dr=dr)
    result["dr_profile"] = profile or "default"
    result["goals"] = {"physics_rtf_min": 50.0, "render_sets_per_s_min_gpu": 100.0, "success_rate_min": 0.95}
    _report(f"sim_{label}", result, as_json, save)


@app.command()
def placement(
    demos: Path = typer.Option(..., "--demos", help="successful episodes (SkillGen's demos, recorded seeds)"),
    offsets: str = typer.Option("0,2,4,6,8,10,12", "--offsets", help="rack offsets, mm, comma-separated"),
    limit: int = typer.Option(20, "--limit", help="episodes replayed (the first N)"),
    dr_profile: str = typer.Option("", "--dr-profile", help="dr.yaml profile the demos were made under"),
    label: str = typer.Option("cpu", "--label", help="result name suffix: placement_<label>.json"),
    as_json: bool = typer.Option(False, "--json", help="print JSON"),
    save: bool = typer.Option(True, "--save/--no-save", help="write bench/results/placement_<label>.json"),
) -> None:
    """The task's placement tolerance: each demo replayed open loop with the rack moved by each offset (mm) in
    four directions; our success rule's rate per offset (how precisely a policy must set the vial down)."""
    import time

    from so101_core.seeds.format import load_seeds
    from so101_core.sim.config import load_sim_config, load_task_config
    from so101_core.sim.placement_tolerance import placement_tolerance, replay_of
    from so101_core.sim.randomization import load_dr_config
    from so101_core.sim.twin import Twin

    try:
        offsets_mm = [float(v) for v in offsets.split(",") if v.strip()]
    except ValueError as exc:
        raise typer.BadParameter(f"--offsets: numbers in mm, comma-separated ({exc})") from None
    episodes = [d for d in load_seeds(demos) if d.success][:limit]
    if not episodes:
        raise typer.BadParameter(f"--demos: no successful episode in {demos}")
    started = time.perf_counter()
    with Twin(load_sim_config(), load_dr_config(profile=dr_profile or None), load_task_config()) as twin:
        replays = [replay_of(d.seed, d.actions, d.object_poses) for d in episodes]
        table = placement_tolerance(twin, replays, offsets_mm)
    result = {
        "measures": "open-loop replays of successful episodes, the rack moved by each offset along +-x, +-y",
        "demos": str(demos),
        "episodes": len(replays),
        "dr_profile": dr_profile or "default",
        "success_by_offset_mm": table,
        "wall_s": round(time.perf_counter() - started, 1),
    }
    _report(f"placement_{label}", result, as_json, save)


@app.command()
def driver(
    seconds: float = typer.Option(10.0, "--seconds", help="measurement time, s"),
    rate_hz: float = typer.Option(100.0, "--rate", help="driver control rate, Hz"),
    samples: int = typer.Option(100, "--samples", help="command-to-bus latency samples"),
    as_json: bool = typer.Option(False, "--json", help="print JSON"),
    save: bool = typer.Option(True, "--save/--no-save", help="write bench/results/driver.json"),
) -> None:
    """Driver over the Feetech emulator: loop rate and jitter (sync read + write of 6 servos), command→bus latency."""
    from so101_cli.benchmarks.driver import run_driver_benchmark

    _report("driver", run_driver_benchmark(seconds, rate_hz, samples), as_json, save)


@app.command()
def sysid(
    joints: str = typer.Option(",".join(JOINT_NAMES), "--joints", help="joints identified"),
    seed: int = typer.Option(0, "--seed", help="draw of the hidden dynamics"),
    replay: bool = typer.Option(True, "--replay/--no-replay", help="also validate on a pick-and-place replay"),
    workdir: Path | None = typer.Option(None, "--workdir", help="keep the bags here (default: a temporary one)"),
    reuse: bool = typer.Option(False, "--reuse", help="fit the bags already in --workdir instead of recording"),
    report: Path = typer.Option(Path("out/sysid_report"), "--report", help="HTML report directory"),
    as_json: bool = typer.Option(False, "--json", help="print JSON"),
    save: bool = typer.Option(True, "--save/--no-save", help="write bench/results/sysid.json and sysid_report.png"),
) -> None:
    """Identify an emulated arm with hidden dynamics through the driver and bus: recovery error per parameter,
    held-out tracking error identified / nominal (heldout_tracking_error_ratio, goal <= 0.5)."""
    import shutil

    from so101_cli.benchmarks.results import results_dir
    from so101_cli.benchmarks.sysid import run_sysid_benchmark

    names = tuple(n for n in joints.split(",") if n)
    result = run_sysid_benchmark(workdir, joints=names, seed=seed, replay=replay, report_dir=report, reuse=reuse,
                                 log=lambda line: typer.echo(line, err=True))  # fmt: skip
    result["report"] = str(report / "index.html")
    if save:
        shutil.copyfile(report / "summary.png", results_dir() / "sysid_report.png")
    _report("sysid", result, as_json, save)


@app.command()
def skillgen(
    seeds: int = typer.Option(5, "--seeds", help="scripted seed demos to start from"),
    demos: int = typer.Option(20, "--demos", help="demos to keep per case (default/wide DR x 0/5/10 mrad)"),
    large: int = typer.Option(0, "--large", help="also keep this many on --workers local processes (H200: 1200)"),
    workers: int = typer.Option(1, "--workers", help="local processes per case and of the --large run"),
    large_profile: str = typer.Option("", "--large-profile", help="DR profile of the --large run (default: base)"),
    cases: bool = typer.Option(True, "--cases/--no-cases", help="run the variant x DR profile x noise cases"),
    variants: str = typer.Option("single_vial,multi_vial", "--variants", help="task.yaml variants of the cases"),
    profiles: str = typer.Option("default,wide", "--profiles", help="dr.yaml profiles of the cases"),
    noise: str = typer.Option("0,5,10", "--noise", help="seed joint noise of the cases, mrad"),
    bound_scenes: int = typer.Option(40, "--bound-scenes", help="scenes judged by the upright bound per clean case"),
    seed_sets: int = typer.Option(1, "--seed-sets", help="seed sets per case, pooled (each set's figures listed)"),
    label: str = typer.Option("", "--label", help="result name suffix: skillgen_<label>.json"),
    as_json: bool = typer.Option(False, "--json", help="print JSON"),
    save: bool = typer.Option(True, "--save/--no-save", help="write bench/results/skillgen[_<label>].json"),
) -> None:
    """SkillGen from scripted seeds without rendering: yield under our and the workshop rule, kept/min/core."""
    from so101_skillgen.bench_skillgen import run_skillgen_benchmark

    grid: dict[str, Any] = {
        "variants": tuple(v for v in variants.split(",") if v),
        "profiles": tuple(None if p == "default" else p for p in profiles.split(",") if p),
        "noise_mrad": tuple(float(n) for n in noise.split(",") if n),
    }
    if not cases:
        grid = {"profiles": (), "noise_mrad": ()}
    result = run_skillgen_benchmark(
        num_seeds=seeds,
        num_demos=demos,
        workers=workers,
        large=large,
        large_profile=None if large_profile in ("", "default") else large_profile,
        bound_scenes=bound_scenes,
        seed_sets=seed_sets,
        on_case=lambda key, case: typer.echo(f"case {key}: {json.dumps(case)}", err=True),
        **grid,
    )
    _report(f"skillgen_{label}" if label else "skillgen", result, as_json, save)


@app.command()
def ik(
    device: str = typer.Option("cpu", "--device", help="cpu | cuda (the batched 1024 x 32 case)"),
    targets: int = typer.Option(1024, "--targets", help="targets of the batched case"),
    seeds: int = typer.Option(32, "--seeds", help="seeds per target of the batched backend"),
    threads: int = typer.Option(1, "--threads", help="torch CPU threads (1 is fastest on a small shared CPU)"),
    label: str = typer.Option("", "--label", help="result name suffix: ik_<label>.json (default: the device)"),
    as_json: bool = typer.Option(False, "--json", help="print JSON"),
    save: bool = typer.Option(True, "--save/--no-save", help="write bench/results/ik_<label>.json"),
) -> None:
    """IK success % and latency per backend: single targets on the CPU; batched targets x seeds on DEVICE."""
    from so101_skillgen.bench_ik import run_ik_benchmark

    result = run_ik_benchmark(device=device, batched_targets=targets, seeds=seeds, threads=threads)
    result["goals"] = {
        "cold_single_ms_p50_max": 0.05,
        "cold_single_success_pct_min": 99.9,
        "jacobian_ms_max": 0.5,
        "batched_1024x32_ms_max_h200": 1.0,
        "success_pct_min": 99.0,
    }
    _report(f"ik_{label or device}", result, as_json, save)


@app.command()
def render(
    phases: str = typer.Option(
        "stock:1,tiled:1:1,tiled:1:4,dataset:1:4:ultrafast",
        "--phases",
        help="mode:P[:B[:preset|noshadow|rgb|rgba|bgra|s=SEC]],...",
    ),
    seconds: float = typer.Option(10.0, "--seconds", help="time per phase, s"),
    frames: int = typer.Option(60, "--frames", help="frames per episode"),
    width: int = typer.Option(640, "--width"),
    height: int = typer.Option(480, "--height"),
    encoder_threads: int = typer.Option(2, "--encoder-threads", help="libx264 threads per camera stream"),
    merge_episodes: int | None = typer.Option(
        None,
        "--merge-episodes",
        min=0,
        help="episodes of the first dataset phase merged, at most (0: no merge; default bench_render.MERGE_EPISODES)",
    ),
    label: str = typer.Option("cpu", "--label", help="result name suffix: render_<label>.json (e.g. cpu, h200)"),
    as_json: bool = typer.Option(False, "--json", help="print JSON"),
    save: bool = typer.Option(True, "--save/--no-save", help="write bench/results/render_<label>.json"),
) -> None:
    """Three-camera frames/s rendered and written to a LeRobot v3.0 dataset (three_cam_fps_to_dataset).

    The result file is written after every phase too (``"complete": false``): a run cut off keeps its phases."""
    from so101_dataset.bench_render import run_render_benchmark

    name = f"render_{label}"

    def checkpoint(partial: dict[str, Any]) -> None:
        if save:
            write_result(name, partial)

    result = run_render_benchmark(
        width=width, height=height, phases_spec=phases, seconds=seconds, frames=frames,
        encoder_threads=encoder_threads, merge_episodes=merge_episodes, on_record=checkpoint,
    )  # fmt: skip
    _report(name, result, as_json, save)


@app.command()
def export(
    sizes: str = typer.Option("160x120,640x480", "--sizes", help="WxH,... (three cameras each)"),
    presets: str = typer.Option("veryfast,ultrafast", "--presets", help="x264 presets, comma-separated"),
    processes: str = typer.Option("1,2", "--processes", help="worker process counts, comma-separated"),
    seconds: float = typer.Option(10.0, "--seconds", help="time per phase, s"),
    frames: int = typer.Option(150, "--frames", help="frames per episode"),
    encoder_threads: int = typer.Option(1, "--encoder-threads", help="libx264 threads per camera stream"),
    reference: str = typer.Option(
        "160x120:7628:1069,640x480:1824:589",
        "--reference",
        help="WxH:render-only fps:fps into v3.0 (lerobot stats),... measured on the --reference-cores machine "
        "(default: the 16-core H100 machine, session 10, ultrafast)",
    ),
    reference_cores: int = typer.Option(16, "--reference-cores"),
    label: str = typer.Option("cpu", "--label", help="result name suffix: export_<label>.json"),
    as_json: bool = typer.Option(False, "--json", help="print JSON"),
    save: bool = typer.Option(True, "--save/--no-save", help="write bench/results/export_<label>.json"),
) -> None:
    """CPU per three-camera frame written into LeRobot v3.0 (pre-rendered frames), image_stats lerobot vs exact."""
    from so101_dataset.bench_render import run_export_benchmark

    def size(text: str) -> tuple[int, int]:
        w, h = text.lower().split("x")
        return int(w), int(h)

    ref = {}
    for item in filter(None, reference.split(",")):
        key, render_fps, stock_fps = item.split(":")
        ref[key] = (float(render_fps), float(stock_fps))
    result = run_export_benchmark(
        sizes=[size(s) for s in sizes.split(",")],
        presets=presets.split(","),
        processes=[int(p) for p in processes.split(",")],
        seconds=seconds,
        frames=frames,
        encoder_threads=encoder_threads,
        reference=ref,
        reference_cores=reference_cores,
    )
    _report(f"export_{label}", result, as_json, save)


@app.command()
def pipeline(
    config: Path | None = typer.Option(None, "--config", help="pipeline YAML (default config/pipeline.yaml)"),
    out: Path = typer.Option(Path("out/bench_pipeline"), "--out", help="output directory (emptied first)"),
    keep: bool = typer.Option(False, "--keep", help="keep the output directory (resume or skip what is there)"),
    label: str = typer.Option("cpu", "--label", help="result name suffix: pipeline_<label>.json (e.g. cpu, h200)"),
    as_json: bool = typer.Option(False, "--json", help="print JSON"),
    save: bool = typer.Option(True, "--save/--no-save", help="write bench/results/pipeline_<label>.json"),
    sets: list[str] = typer.Option([], "--set", help="a.b.c=value over the pipeline file (as `so101 pipeline run`)"),
) -> None:
    """The whole pipeline from an empty output directory, then re-run (all skipped): wall time per stage."""
    from so101_cli.benchmarks.pipeline import run_pipeline_benchmark

    _report(f"pipeline_{label}", run_pipeline_benchmark(config, out, keep=keep, sets=sets), as_json, save)


@app.command()
def policy(
    checkpoint: Path | None = typer.Option(None, "--checkpoint", help="checkpoint for the inference latency"),
    device: str = typer.Option("auto", "--device"),
    calls: int = typer.Option(200, "--calls", help="get_action calls measured"),
    width: int = typer.Option(640, "--width", help="camera frame width sent (each camera)"),
    height: int = typer.Option(480, "--height"),
    jitter_s: float = typer.Option(10.0, "--jitter-seconds", help="policy-node loop measurement (0 = skip)"),
    train_result: Path | None = typer.Option(None, "--train-result", help="train_result.json of so101 train"),
    eval_results: Path | None = typer.Option(None, "--eval-results", help="results.json of so101 eval"),
    demos: int | None = typer.Option(None, "--demos", help="demos the policy was trained on"),
    full_resolution: bool = typer.Option(
        False, "--full-resolution", help="also time an untrained policy at the full frame size (the headline figure)"
    ),
    train_config: Path | None = typer.Option(
        None, "--train-config", help="--full-resolution: that policy's type and architecture (default train.yaml)"
    ),
    transport: bool = typer.Option(
        False, "--transport", help="also time the wire alone: a server answering a fixed chunk, 3 cameras' frames"
    ),
    label: str = typer.Option("cpu", "--label", help="result name suffix: policy_<label>.json (e.g. cpu, h200)"),
    as_json: bool = typer.Option(False, "--json", help="print JSON"),
    save: bool = typer.Option(True, "--save/--no-save", help="write bench/results/policy_<label>.json"),
) -> None:
    """Inference p50/p99 per chunk, 30 Hz loop jitter, training samples/s, sim success of a policy."""
    from so101_policy.bench_policy import run_policy_benchmark
    from so101_policy.config import load_train_config

    result = run_policy_benchmark(
        checkpoint,
        device,
        calls=calls,
        width=width,
        height=height,
        jitter_s=jitter_s,
        train_result=train_result,
        eval_results=eval_results,
        demos=demos,
        full_resolution=full_resolution,
        transport=transport,
        train=load_train_config(train_config),
    )
    _report(f"policy_{label}", result, as_json, save)


@app.command()
def train(
    dataset: Path | None = typer.Option(
        None, "--dataset", help="LeRobot v3.0 dataset (e.g. <out>/lerobot_v3 of so101 dataset build)"
    ),
    synthetic: bool = typer.Option(
        False, "--synthetic", help="training steps on random frames in device memory (no dataset): samples/s"
    ),
    batch_sizes: str = typer.Option("64,256,512", "--batch-sizes", help="--synthetic: batch sizes to try"),
    norms: str = typer.Option("frozen,batch", "--norms", help="--synthetic: backbone_norm values to try"),
    image: str = typer.Option("3x120x160", "--image", help="--synthetic: cameras x height x width"),
    seconds: float = typer.Option(20.0, "--seconds", help="--synthetic: timed seconds per variant"),
    steps: int = typer.Option(0, "--steps", help="also train this many optimizer steps per source (0 = data only)"),
    batches: int = typer.Option(50, "--batches", help="batches pulled per source for the data rate"),
    device: str = typer.Option("auto", "--device"),
    config: Path | None = typer.Option(None, "--config", help="train YAML (default config/train.yaml)"),
    label: str = typer.Option("cpu", "--label", help="result name suffix: train_<label>.json"),
    as_json: bool = typer.Option(False, "--json", help="print JSON"),
    save: bool = typer.Option(True, "--save/--no-save", help="write bench/results/train_<label>.json"),
) -> None:
    """Policy training data rate (and samples/s): the dataset decoded into memory vs LeRobot's per-frame DataLoader,
    or a dataset build's rendered frames (``render.keep_frames``) with the cold start a training slice pays;
    ``--synthetic``: training samples/s of train.yaml's model per batch size and backbone norm, no dataset."""
    import dataclasses

    from so101_policy.bench_train import run_train_benchmark, synthetic_sweep
    from so101_policy.config import load_train_config

    cfg = dataclasses.replace(load_train_config(config), device=device)
    if synthetic:
        cams, h, w = (int(v) for v in image.split("x"))
        sizes = [int(b) for b in batch_sizes.split(",")]
        result = synthetic_sweep(cfg, sizes, norms.split(","), cams, h, w, seconds)
        result["command"] = (
            f"so101 bench train --synthetic --batch-sizes {batch_sizes} --norms {norms} --image {image} "
            f"--seconds {seconds} --device {device} --label {label}"
        )
        _report(f"train_{label}", result, as_json, save)
        return
    if dataset is None:
        raise typer.BadParameter("--dataset is required (or --synthetic)")
    result = run_train_benchmark(dataset, steps, device, cfg, batches)
    result["command"] = (
        f"so101 bench train --dataset {dataset} --steps {steps} --batches {batches} --device {device} --label {label}"
    )
    _report(f"train_{label}", result, as_json, save)
