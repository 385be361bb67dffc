"""One small build (conftest ``built``): every output read back with independent readers, LeRobot's own tools
among them (``lerobot-dataset-viz``'s loader, ``lerobot-train`` of a diffusion policy)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from so101_core.lerobot_units import LEROBOT_JOINT_NAMES, to_lerobot


def test_v3_loads_with_stock_lerobot_and_dataloader_batches(built) -> None:
    import torch
    from lerobot.datasets import LeRobotDataset

    result, cfg, _ = built
    assert result.episodes == 3 and result.frames == 36
    ds = LeRobotDataset(cfg.repo_id, root=result.v3_dir, video_backend="pyav")
    assert ds.meta.total_episodes == 3 and len(ds) == 36
    assert ds.meta.robot_type == "so_follower" and ds.fps == 30
    assert ds.meta.features["observation.state"]["names"] == list(LEROBOT_JOINT_NAMES)
    batch = next(iter(torch.utils.data.DataLoader(ds, batch_size=4, shuffle=True, num_workers=0)))
    assert batch["observation.state"].shape == (4, 6) and batch["action"].shape == (4, 6)
    for cam in cfg.cameras:
        assert batch[f"observation.images.{cam}"].shape == (4, 3, 48, 64)
    assert set(batch["task"]) == {"Pick up the vial and place it upright in the rack"}
    # the state column is the recorded joint state in LeRobot units
    unit = sorted((result.out_dir / "episodes").glob("episode_*"))[0]
    with np.load(unit / "replay.npz") as z:
        expected = to_lerobot(z["q"]).astype(np.float32)
    first = torch.stack([ds[i]["observation.state"] for i in range(12)]).numpy()
    np.testing.assert_allclose(first, expected, atol=1e-4)


def test_corrupt_demo_is_skipped_and_named(built) -> None:
    result, _, demos = built
    assert set(result.failed) == {"3"}
    assert result.failed["3"]["reason"] == "bad_demo_file"
    assert str(demos / "demo_000003.npz") in result.failed["3"]["detail"]


def test_frames_decode_to_the_rendered_pixels_and_render_is_deterministic(built) -> None:
    from so101_dataset.bags import decode_frames
    from so101_dataset.render import EpisodeRenderer, Replay

    result, cfg, _ = built
    unit = sorted((result.out_dir / "episodes").glob("episode_*"))[1]
    meta = json.loads((unit / "episode.json").read_text())
    assert "/" in meta["gl_renderer"]  # vendor / renderer of the context that rendered: GPU or software, said
    with np.load(unit / "replay.npz") as z:
        rep = Replay(z["t"], z["q"], z["action"], {k[12:]: z[k] for k in z.files if k.startswith("object_pose/")})
    r = EpisodeRenderer(cfg.width, cfg.height, cfg.cameras, frames_per_pass=5)
    try:
        dr = r.prepare(meta["provenance"]["render_seed"])
        assert dr == meta["visual_dr"]  # the recorded DR draw is the one rendered
        a = [{c: v.copy() for c, v in f.items()} for f in r.frames(rep)]
        r.prepare(meta["provenance"]["render_seed"])
        b = [{c: v.copy() for c, v in f.items()} for f in r.frames(rep)]
    finally:
        r.close()
    one = EpisodeRenderer(cfg.width, cfg.height, cfg.cameras, frames_per_pass=1)  # one frame per readback
    try:
        one.prepare(meta["provenance"]["render_seed"])
        c = [{k: v.copy() for k, v in f.items()} for f in one.frames(rep)]
    finally:
        one.close()
    assert cfg.render.frames_per_pass == 4 and len(a) == 12  # passes of 4 frames made the unit
    for cam in cfg.cameras:
        assert all(np.array_equal(x[cam], y[cam]) for x, y in zip(a, b, strict=True))
        # the pass size moves a frame within the buffer: a few edge pixels rasterize otherwise (0.2 % seen), no more
        moved = [np.any(x[cam] != y[cam], axis=-1).mean() for x, y in zip(a, c, strict=True)]
        assert max(moved) < 0.01, (cam, max(moved))
        video = next((unit / "lerobot" / "videos" / f"observation.images.{cam}").glob("chunk-*/file-*.mp4"))
        decoded = np.stack(list(decode_frames(video))).astype(float)
        rendered = np.stack([x[cam] for x in a]).astype(float)
        assert decoded.shape == rendered.shape
        mse = ((decoded - rendered) ** 2).mean()
        # codec tolerance: h264 crf 23, yuv420p at 64×48 (chroma at 32×24) → PSNR ≈ 29–33 dB
        assert 10 * np.log10(255**2 / max(mse, 1e-9)) > 26.0, cam
        other = ((decoded[::-1] - rendered) ** 2).mean()  # the same frames, time-reversed: clearly worse
        assert other > 2 * mse, cam


def test_v21_passes_gr00t_rules_and_lerobot_converter(built, tmp_path: Path) -> None:
    from lerobot.datasets import LeRobotDataset
    from lerobot.scripts.convert_dataset_v21_to_v30 import convert_dataset
    from so101_dataset.lerobot_v21 import check_gr00t_layout

    result, cfg, _ = built
    checked = check_gr00t_layout(result.v21_dir)
    assert checked == {"episodes": 3, "frames": 36, "videos": 9}
    modality = json.loads((result.v21_dir / "meta" / "modality.json").read_text())
    assert modality["state"] == {"single_arm": {"start": 0, "end": 5}, "gripper": {"start": 5, "end": 6}}
    stats = json.loads((result.v21_dir / "meta" / "stats.json").read_text())
    assert {"mean", "std", "min", "max", "q01", "q99"} <= set(stats["action"])
    assert (result.v21_dir / "gr00t" / "so101_modality_config.py").is_file()
    copy = tmp_path / "v21"
    shutil.copytree(result.v21_dir, copy)
    convert_dataset(repo_id=cfg.repo_id, root=copy, push_to_hub=False)
    ds = LeRobotDataset(cfg.repo_id, root=copy, video_backend="pyav")
    assert ds.meta.total_episodes == 3 and len(ds) == 36
    assert ds[20]["observation.images.top"].shape == (3, 48, 64)


def test_v21_language_key_is_the_one_gr00t_derives(built) -> None:
    """GR00T N1.6's loader rules (``lerobot_episode_loader.py``: ``_load_parquet_data``, ``get_dataset_statistics``)
    on the export and the modality-config file it ships."""
    from so101_core.lerobot_schema import LANGUAGE_KEY
    from so101_core.testing.gr00t_rules import run_modality_config_file

    result, _, _ = built
    root = result.v21_dir
    modality = json.loads((root / "meta" / "modality.json").read_text())
    rows = [json.loads(line) for line in (root / "meta" / "tasks.jsonl").read_text().splitlines()]
    tasks = {row["task_index"]: row["task"] for row in rows}
    config = run_modality_config_file(root / "gr00t" / "so101_modality_config.py")["new_embodiment"]
    (key,) = config["language"].modality_keys
    assert key == LANGUAGE_KEY == "annotation.human.task_description"  # the server's key, N1.6's SO-100 examples'
    # the loader: a language key starts with "annotation."; the rest names a group of modality.json's "annotation",
    # whose original_key (default: the key itself) is the parquet column of task indices into tasks.jsonl
    assert key.startswith("annotation.")
    assert {f"annotation.{group}" for group in modality["annotation"]} == {key}
    column = modality["annotation"][key.replace("annotation.", "")].get("original_key", key)
    table = pq.read_table(root / "data" / "chunk-000" / "episode_000000.parquet")
    assert {tasks[i] for i in table.column(column).to_pylist()} == {"Pick up the vial and place it upright in the rack"}
    # the config's other keys are modality.json's, and every stats key GR00T reads slices to each joint group's width
    stats = json.loads((root / "meta" / "stats.json").read_text())
    assert list(config["video"].modality_keys) == list(modality["video"])
    for part, feature in (("state", "observation.state"), ("action", "action")):
        for group in config[part].modality_keys:
            start, end = modality[part][group]["start"], modality[part][group]["end"]
            assert all(
                len(stats[feature][s][start:end]) == end - start for s in ("mean", "std", "min", "max", "q01", "q99")
            )


def test_gr00t_check_rejects_a_prefixed_annotation_key(built, tmp_path: Path) -> None:
    from so101_dataset.errors import ExportError
    from so101_dataset.lerobot_v21 import check_gr00t_layout

    result, _, _ = built
    copy = tmp_path / "v21"
    shutil.copytree(result.v21_dir / "meta", copy / "meta")
    modality = json.loads((copy / "meta" / "modality.json").read_text())
    modality["annotation"] = {"annotation.human.task_description": {"original_key": "task_index"}}
    (copy / "meta" / "modality.json").write_text(json.dumps(modality))
    with pytest.raises(ExportError, match=r"prefixes 'annotation\.' itself"):
        check_gr00t_layout(copy)


def test_gr00t_check_rejects_overlapping_modality_slices(built, tmp_path: Path) -> None:
    from so101_dataset.errors import ExportError
    from so101_dataset.lerobot_v21 import check_gr00t_layout

    result, _, _ = built
    copy = tmp_path / "v21"
    shutil.copytree(result.v21_dir, copy)
    modality = json.loads((copy / "meta" / "modality.json").read_text())
    modality["state"]["gripper"] = {"start": 4, "end": 6}
    (copy / "meta" / "modality.json").write_text(json.dumps(modality))
    with pytest.raises(ExportError, match="covers"):
        check_gr00t_layout(copy)


def test_bag_decodes_message_for_message(built) -> None:
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory
    from so101_dataset.bags import decode_frames

    result, _, _ = built
    unit = sorted((result.out_dir / "episodes").glob("episode_*"))[0]
    bag = result.bags_dir / unit.name
    with np.load(unit / "replay.npz") as z:
        q, t = z["q"], z["t"]
    video = next((unit / "lerobot" / "videos" / "observation.images.side").glob("chunk-*/file-*.mp4"))
    frames = list(decode_frames(video))
    counts: dict[str, int] = {}
    states, images = [], []
    with open(next(bag.glob("*.mcap")), "rb") as f:
        for _, channel, message, msg in make_reader(f, decoder_factories=[DecoderFactory()]).iter_decoded_messages():
            topic = channel.topic
            counts[topic] = counts.get(topic, 0) + 1
            if topic == "/joint_states":
                states.append((message.log_time, list(msg.position)))
            elif topic == "/cameras/side/image_raw":
                images.append(np.frombuffer(bytes(msg.data), np.uint8).reshape(msg.height, msg.width, 3))
    assert counts["/joint_states"] == counts["/joint_commands"] == counts["/clock"] == counts["/tf"] == 12
    assert counts["/tf_static"] == counts["/robot_description"] == 1
    assert counts["/cameras/ego/camera_info"] == 12 and counts["/sim/objects/vial/pose"] == 12
    np.testing.assert_allclose([p for _, p in states], q, atol=1e-12)
    assert [ns for ns, _ in states] == [round(x * 1e9) for x in t]
    assert all(np.array_equal(a, b) for a, b in zip(images, frames, strict=True))


def _bag_messages(bag: Path) -> list[tuple[str, int, bytes]]:
    from mcap.reader import make_reader

    with open(next(bag.glob("*.mcap")), "rb") as f:
        return [(ch.topic, m.log_time, bytes(m.data)) for _, ch, m in make_reader(f).iter_messages()]


def test_bags_written_by_two_processes_equal_the_serial_ones(built, tmp_path: Path) -> None:
    from so101_dataset.bags import write_bags

    result, cfg, _ = built
    units = sorted((result.out_dir / "episodes").glob("episode_*"))
    (tmp_path / "bags" / units[0].name).mkdir(parents=True)  # a torn bag from a crash: redone
    bags = write_bags(units, tmp_path / "bags", cfg, workers=2)
    assert [b.name for b in bags] == [u.name for u in units] and len(units) == 3
    for bag in bags:
        assert _bag_messages(bag) == _bag_messages(result.bags_dir / bag.name), bag.name
    assert not list((tmp_path / "bags" / ".tmp").iterdir())


def test_report_and_provenance(built) -> None:
    result, _, _ = built
    md = (result.report_dir / "summary.md").read_text()
    assert "| generated | 2 | 24 |" in md and "| seed | 1 | 12 |" in md
    assert "bad_demo_file: 1" in md
    for name in ("index.html", "trajectories.png", "contact_sheet.png", "sample_ego.mp4"):
        assert (result.report_dir / name).stat().st_size > 0
    prov = [json.loads(x) for x in (result.v3_dir / "meta" / "so101_provenance.jsonl").read_text().splitlines()]
    assert [p["source"] for p in prov] == ["generated", "seed", "generated"]
    assert prov[0]["seed_ids"] == ["seed_0.npz", "seed_1.npz"] and prov[0]["dr"]["seed"] == 1000


def test_mix_hits_the_ratio_with_provenance(built, tmp_path: Path) -> None:
    from lerobot.datasets import LeRobotDataset
    from so101_dataset.mix import mix_datasets

    result, cfg, _ = built
    real = tmp_path / "real"
    shutil.copytree(result.v3_dir, real)
    (real / "meta" / "so101_provenance.jsonl").unlink()
    summary = mix_datasets(result.out_dir, real, 0.25, tmp_path / "mix", cfg)
    # 3 sim episodes of 12 frames vs 36 real frames: a 0.25 sim share takes 1 sim episode, real once
    assert summary["sim_episodes"] == 1 and summary["sim_frame_share"] == 0.25
    ds = LeRobotDataset(cfg.repo_id, root=tmp_path / "mix", video_backend="pyav")
    assert ds.meta.total_episodes == 4 and len(ds) == 48
    prov = [json.loads(x) for x in (tmp_path / "mix" / "meta" / "so101_provenance.jsonl").read_text().splitlines()]
    assert [p["source"] for p in prov].count("real") == 3 and prov[0]["source"] in ("seed", "generated")
    # a 0.75 share needs more sim than there is: sim episodes repeat (real is never dropped)
    summary = mix_datasets(result.out_dir, real, 0.75, tmp_path / "mix2", cfg)
    assert summary["sim_episodes"] == 9 and summary["sim_repeated"] and summary["sim_frame_share"] == 0.75


def test_cli_report_and_clear_error_on_bad_override(built, tmp_path: Path) -> None:
    from so101_cli.main import app
    from typer.testing import CliRunner

    result, _, demos = built
    runner = CliRunner()
    ok = runner.invoke(app, ["dataset", "report", str(result.out_dir), "--demos", str(demos)])
    assert ok.exit_code == 0, ok.output
    assert "index.html" in ok.output
    bad = runner.invoke(app, ["dataset", "build", "--demos", str(demos), "--out", str(tmp_path / "o"), "--width", "65"])
    assert bad.exit_code == 2 and "dataset.width" in bad.output and not (tmp_path / "o").exists()


def _video_packets(path: Path) -> list[tuple[int | None, int | None, bytes]]:
    import av

    with av.open(str(path)) as c:
        return [(p.pts, p.dts, bytes(p)) for p in c.demux(video=0) if p.size]


def _assert_same_dataset(ours: Path, theirs: Path) -> None:
    """Same files; equal JSON and parquet tables; videos with the same packets (timestamps and bytes)."""
    import pandas as pd

    files = sorted(str(p.relative_to(theirs)) for p in theirs.rglob("*") if p.is_file())
    assert sorted(str(p.relative_to(ours)) for p in ours.rglob("*") if p.is_file()) == files
    for rel in files:
        a, b = ours / rel, theirs / rel
        if rel.endswith(".json"):
            assert json.loads(a.read_text()) == json.loads(b.read_text()), rel
        elif rel.endswith(".parquet"):
            pd.testing.assert_frame_equal(pd.read_parquet(a), pd.read_parquet(b), obj=rel)
        else:
            assert _video_packets(a) == _video_packets(b), rel


@pytest.mark.parametrize("file_mb", [None, 1e-6], ids=["one_file", "a_file_per_shard"])
def test_one_pass_merge_equals_lerobots_aggregation(built, tmp_path: Path, file_mb: float | None) -> None:
    """The export's merge against ``lerobot.datasets.aggregate_datasets`` of the same shards: with lerobot's
    file size limits (one data file and one video per camera) and with limits every shard exceeds (a file each)."""
    from lerobot.datasets import aggregate_datasets
    from so101_dataset.v3_merge import merge_shards

    result, cfg, _ = built
    shards = [u / "lerobot" for u in sorted((result.out_dir / "episodes").glob("episode_*"))]
    limits = {} if file_mb is None else {"data_files_size_in_mb": file_mb, "video_files_size_in_mb": file_mb}
    aggregate_datasets(
        [f"shard_{i}" for i in range(len(shards))], cfg.repo_id, roots=shards, aggr_root=tmp_path / "lerobot", **limits
    )
    merged = merge_shards(shards, tmp_path / "ours", cfg, workers=2, data_files_mb=file_mb, video_files_mb=file_mb)
    _assert_same_dataset(merged, tmp_path / "lerobot")
    videos = list((merged / "videos").rglob("*.mp4"))
    assert len(videos) == (len(cfg.cameras) if file_mb is None else len(cfg.cameras) * len(shards))
    assert not (tmp_path / "ours.tmp").exists()


def test_one_pass_merge_of_a_merged_dataset_equals_lerobots_aggregation(built, tmp_path: Path) -> None:
    """A source of several episodes (the export's merged dataset, as ``so101 dataset mix`` merges a real one),
    after a one-episode shard, and the same shard again (a repeated episode)."""
    from lerobot.datasets import aggregate_datasets
    from so101_dataset.v3_merge import merge_shards

    result, cfg, _ = built
    first = sorted((result.out_dir / "episodes").glob("episode_*"))[0] / "lerobot"
    sources = [first, result.v3_dir, first]
    aggregate_datasets([f"s_{i}" for i in range(3)], cfg.repo_id, roots=sources, aggr_root=tmp_path / "lerobot")
    _assert_same_dataset(merge_shards(sources, tmp_path / "ours", cfg, workers=3), tmp_path / "lerobot")


def test_a_merge_over_several_files_reads_back_the_same_frames(built, tmp_path: Path) -> None:
    """Stock ``LeRobotDataset`` over a merge with a file per shard returns the frames of the export's merge."""
    import torch
    from lerobot.datasets import LeRobotDataset
    from so101_dataset.v3_merge import merge_shards

    result, cfg, _ = built
    shards = [u / "lerobot" for u in sorted((result.out_dir / "episodes").glob("episode_*"))]
    split = merge_shards(shards, tmp_path / "split", cfg, data_files_mb=1e-6, video_files_mb=1e-6)
    a = LeRobotDataset(cfg.repo_id, root=split, video_backend="pyav")
    b = LeRobotDataset(cfg.repo_id, root=result.v3_dir, video_backend="pyav")
    assert len(a) == len(b) == 36
    for i in (0, 11, 12, 23, 35):
        for key in ("observation.state", "episode_index", "index", *b.meta.camera_keys):
            assert torch.equal(a[i][key], b[i][key]), (i, key)


def test_merge_refuses_a_shard_of_another_rate_and_leaves_no_output(built, tmp_path: Path) -> None:
    from so101_dataset.errors import ExportError
    from so101_dataset.v3_merge import merge_shards

    result, cfg, _ = built
    units = sorted((result.out_dir / "episodes").glob("episode_*"))
    odd = tmp_path / "odd"
    shutil.copytree(units[1] / "lerobot", odd)
    info = json.loads((odd / "meta" / "info.json").read_text())
    (odd / "meta" / "info.json").write_text(json.dumps({**info, "fps": 15}))
    with pytest.raises(ExportError, match=f"{odd}: fps/robot_type 15"):
        merge_shards([units[0] / "lerobot", odd], tmp_path / "v3", cfg)
    assert not (tmp_path / "v3").exists() and not (tmp_path / "v3.tmp").exists()


def test_merge_names_a_shard_without_its_video_and_keeps_the_older_dataset(built, tmp_path: Path) -> None:
    from so101_dataset.errors import ExportError
    from so101_dataset.v3_merge import merge_shards

    result, cfg, _ = built
    units = sorted((result.out_dir / "episodes").glob("episode_*"))
    shards = [tmp_path / f"s{i}" for i in range(len(units))]
    for unit, shard in zip(units, shards, strict=True):
        shutil.copytree(unit / "lerobot", shard)
    merge_shards(shards, tmp_path / "v3", cfg)
    before = sorted(p.relative_to(tmp_path / "v3") for p in (tmp_path / "v3").rglob("*"))
    next((shards[2] / "videos").rglob("*.mp4")).unlink()
    with pytest.raises(ExportError, match=f"{shards[2]}: not a complete v3.0 dataset"):
        merge_shards(shards, tmp_path / "v3", cfg)
    assert sorted(p.relative_to(tmp_path / "v3") for p in (tmp_path / "v3").rglob("*")) == before
    assert not (tmp_path / "v3.tmp").exists()


# ---------------------------------------------------------------------------------- LeRobot's own tools, offline


def _offline_env(tmp_path: Path) -> dict[str, str]:
    """Offline, with empty Hugging Face and torch caches: nothing can come from a download or an earlier one."""
    return {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"), "TORCH_HOME": str(tmp_path / "torch")}


def _lerobot_cli(name: str) -> str:
    """A LeRobot console script of this interpreter's environment (``lerobot-train``, ``lerobot-dataset-viz``)."""
    path = Path(sys.executable).parent / name
    assert path.is_file(), f"{path} missing (lerobot's console scripts)"
    return str(path)


def test_lerobot_dataset_viz_loader_reads_an_episode(built) -> None:
    """What ``lerobot-dataset-viz --repo-id R --root DIR --episode-index 1`` does before it hands the frames to
    rerun: its dataset (one episode), its DataLoader and its frame and name conversions, on our export."""
    import torch
    from lerobot.datasets import LeRobotDataset
    from lerobot.scripts.lerobot_dataset_viz import get_feature_names, to_hwc_uint8_numpy

    result, cfg, _ = built
    dataset = LeRobotDataset(cfg.repo_id, episodes=[1], root=result.v3_dir, tolerance_s=1e-4)
    frames = 0
    for batch in torch.utils.data.DataLoader(dataset, batch_size=32, num_workers=0):
        for i in range(len(batch["index"])):
            for key in dataset.meta.camera_keys:
                assert to_hwc_uint8_numpy(batch[key][i]).shape == (48, 64, 3)
            frames += 1
        assert set(batch["episode_index"].tolist()) == {1}
    assert frames == 12 and len(dataset.meta.camera_keys) == len(cfg.cameras)
    names = [f"{j}.pos" for j in ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll", "gripper")]
    assert get_feature_names(dataset, "observation.state") == get_feature_names(dataset, "action") == names


def test_lerobot_dataset_viz_writes_a_recording(built, tmp_path: Path) -> None:
    pytest.importorskip("rerun", reason="rerun-sdk (lerobot[viz], ~400 MB) is not installed by scripts/setup")
    result, cfg, _ = built
    viz = tmp_path / "viz"
    args = [_lerobot_cli("lerobot-dataset-viz"), "--repo-id", cfg.repo_id, "--root", str(result.v3_dir),
            "--episode-index", "0", "--save", "1", "--output-dir", str(viz), "--num-workers", "0"]  # fmt: skip
    done = subprocess.run(args, capture_output=True, text=True, timeout=300, env=_offline_env(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    recording = viz / f"{cfg.repo_id.replace('/', '_')}_episode_0.rrd"
    assert recording.stat().st_size > 10_000


def test_lerobot_train_fits_a_diffusion_policy_on_the_export(built, tmp_path: Path) -> None:
    """``lerobot-train --policy.type=diffusion`` for two steps on our v3.0 export, on the CPU, offline: no
    pretrained backbone (``pretrained_backbone_weights=null``, group norm instead of frozen batch norm), the
    smallest U-Net that fits the horizon; it writes a LeRobot checkpoint of a diffusion policy on our features."""
    result, cfg, _ = built
    out = tmp_path / "diffusion"
    args = [_lerobot_cli("lerobot-train"), f"--dataset.repo_id={cfg.repo_id}", f"--dataset.root={result.v3_dir}",
            "--policy.type=diffusion", "--policy.device=cpu", "--policy.push_to_hub=false",
            "--policy.pretrained_backbone_weights=null", "--policy.use_group_norm=true", "--policy.crop_shape=null",
            "--policy.use_separate_rgb_encoder_per_camera=false", "--policy.down_dims=[16,32]",
            "--policy.diffusion_step_embed_dim=16", "--policy.n_groups=4", "--policy.spatial_softmax_num_keypoints=8",
            "--policy.horizon=8", "--policy.n_action_steps=4", "--steps=2", "--batch_size=2", "--num_workers=0",
            "--save_freq=2", "--log_freq=1", f"--output_dir={out}"]  # fmt: skip
    done = subprocess.run(args, capture_output=True, text=True, timeout=600, env=_offline_env(tmp_path))
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-4000:]
    losses = [float(m) for m in re.findall(r"step:\d+ .*?loss:([-\d.e+]+|nan|inf)", log)]
    assert len(losses) == 2 and all(np.isfinite(losses)), log[-2000:]
    model = out / "checkpoints" / "000002" / "pretrained_model"
    config = json.loads((model / "config.json").read_text())
    assert config["type"] == "diffusion" and config["pretrained_backbone_weights"] is None
    images = {f"observation.images.{c}" for c in cfg.cameras}
    assert images | {"observation.state"} == set(config["input_features"])
    assert (model / "model.safetensors").stat().st_size > 1_000_000
