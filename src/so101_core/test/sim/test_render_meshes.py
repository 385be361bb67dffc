"""Lighter render meshes: vertex clustering, the STL reader, and a scene whose physics they leave alone."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import mujoco
import numpy as np
import pytest


def _sphere_soup(n: int = 40, radius: float = 0.02) -> np.ndarray:
    """A UV sphere as a triangle soup (3·T, 3) m: n × 2n quads, two triangles each."""
    th, ph = np.linspace(0, np.pi, n + 1), np.linspace(0, 2 * np.pi, 2 * n + 1)
    p = np.stack(np.meshgrid(th, ph, indexing="ij"), -1)
    xyz = radius * np.stack([np.sin(p[..., 0]) * np.cos(p[..., 1]), np.sin(p[..., 0]) * np.sin(p[..., 1]),
                             np.cos(p[..., 0])], -1)  # fmt: skip
    a, b, c, d = xyz[:-1, :-1], xyz[1:, :-1], xyz[1:, 1:], xyz[:-1, 1:]
    return np.concatenate([np.stack([a, b, c], -2), np.stack([a, c, d], -2)]).reshape(-1, 3)


def test_clustering_keeps_the_shape_with_fewer_triangles() -> None:
    from so101_core.sim.render_meshes import cluster_vertices

    soup = _sphere_soup()
    _, fine_f = cluster_vertices(soup, 1e-6)  # a cell far below the vertex spacing: only the poles' copies go
    assert len(fine_f) > 0.9 * len(soup) / 3
    v, f = cluster_vertices(soup, 0.004)
    assert 50 < len(f) < len(fine_f) / 4
    assert np.all(f[:, 0] != f[:, 1]) and np.all(f[:, 1] != f[:, 2]) and np.all(f[:, 0] != f[:, 2])
    assert len(np.unique(np.sort(f, axis=1), axis=0)) == len(f)  # each triangle once
    assert f.min() >= 0 and f.max() < len(v)
    radius = np.linalg.norm(v[np.unique(f)], axis=1)
    assert np.all(np.abs(radius - 0.02) < 0.004)  # every kept vertex within a cell of the surface


def test_a_file_that_is_no_binary_stl_is_named(tmp_path: Path) -> None:
    from so101_core.sim.errors import SceneError
    from so101_core.sim.render_meshes import read_binary_stl

    bad = tmp_path / "part.stl"
    bad.write_bytes(b"solid part\nfacet normal 0 0 1\n" + b" " * 100)
    with pytest.raises(SceneError, match=r"part\.stl: not a binary STL"):
        read_binary_stl(bad)


def test_the_scene_draws_light_meshes_with_the_same_physics() -> None:
    from so101_core.sim.config import load_sim_config
    from so101_core.sim.scene import build_model

    cfg = load_sim_config()
    light = build_model(replace(cfg, robot=replace(cfg.robot, render_mesh_cell_m=0.002)))
    cad = build_model(replace(cfg, robot=replace(cfg.robot, render_mesh_cell_m=0.0)))

    def drawn_faces(m: mujoco.MjModel) -> int:
        visual = [g for g in range(m.ngeom) if m.geom_type[g] == mujoco.mjtGeom.mjGEOM_MESH and m.geom_group[g] <= 2]
        return sum(int(m.mesh_facenum[m.geom_dataid[g]]) for g in visual)

    assert drawn_faces(light) < drawn_faces(cad) / 8
    assert np.array_equal(light.body_mass, cad.body_mass) and np.array_equal(light.body_inertia, cad.body_inertia)
    runs = []
    for m in (light, cad):
        d = mujoco.MjData(m)
        rng = np.random.default_rng(0)
        for _ in range(300):
            d.ctrl[:] = rng.uniform(m.actuator_ctrlrange[:, 0], m.actuator_ctrlrange[:, 1])
            mujoco.mj_step(m, d)
        runs.append(d.qpos.copy())
    np.testing.assert_array_equal(runs[0], runs[1])  # collisions, inertia, actuation: unchanged

    pixels = []
    for m in (light, cad):
        d = mujoco.MjData(m)
        mujoco.mj_forward(m, d)
        with mujoco.Renderer(m, 120, 160) as r:
            r.update_scene(d, camera="side")
            pixels.append(r.render().astype(float))
    change = np.abs(pixels[0] - pixels[1])
    assert 0 < change.mean() < 2.0  # the arm is drawn from other triangles, and looks the same


def test_a_robot_whose_visual_mesh_is_no_binary_stl_gets_the_way_out_named(tmp_path: Path) -> None:
    from so101_core.sim.errors import SceneError
    from so101_core.sim.render_meshes import lighten_visual_meshes

    (tmp_path / "part.stl").write_bytes(b"solid part\n" + b" " * 100)  # an ASCII STL, say
    (tmp_path / "robot.xml").write_text(
        '<mujoco><asset><mesh name="part" file="part.stl"/></asset><worldbody><body>'
        '<geom type="mesh" mesh="part" contype="0" conaffinity="0"/></body></worldbody></mujoco>'
    )
    spec = mujoco.MjSpec.from_file(str(tmp_path / "robot.xml"))
    with pytest.raises(SceneError, match=r"not a binary STL .*render_mesh_cell_m: 0 draws"):
        lighten_visual_meshes(spec, 0.002)
