"""Lighter render meshes for the robot: its visual-only mesh geoms drawn from vertex-clustered copies.

The SO-101's CAD meshes give 399k triangles per camera render (17 visual geoms); drawing them is nearly all of a
render's cost (on llvmpipe at 3 × 160×120: 13 three-camera frames/s with them, 114 with 2 mm clusters). Vertex
clustering snaps every vertex to a cubic grid of ``cell_m`` m, merges each cell's vertices into their mean and drops
the triangles that collapse: detail below the cell size goes, the silhouette stays (at 160×120 a pixel spans 2–4 mm
of the scene). Only geoms that collide with nothing (``contype == conaffinity == 0``) change, and the bodies carry
explicit inertials: the physics is the same (tested).
"""

from __future__ import annotations

import functools
from pathlib import Path

import mujoco
import numpy as np
import numpy.typing as npt

from .errors import SceneError

I32 = npt.NDArray[np.int32]
F64 = npt.NDArray[np.float64]
_STL_RECORD = np.dtype([("normal", "<f4", 3), ("vertices", "<f4", (3, 3)), ("attribute", "<u2")])


def read_binary_stl(path: Path) -> F64:
    """The triangles' corners of a binary STL, (3·T, 3) in the file's units, three rows per triangle."""
    data = path.read_bytes()
    if len(data) < 84:
        raise SceneError(f"{path}: not a binary STL (only {len(data)} bytes)")
    count = int(np.frombuffer(data, np.uint32, 1, 80)[0])
    if len(data) != 84 + count * _STL_RECORD.itemsize:
        raise SceneError(f"{path}: not a binary STL ({count} triangles announced, {len(data)} bytes)")
    records = np.frombuffer(data, _STL_RECORD, count, 84)
    return records["vertices"].reshape(-1, 3).astype(np.float64)


def cluster_vertices(corners: F64, cell_m: float) -> tuple[F64, I32]:
    """Vertex clustering of a triangle soup ``corners`` (3·T, 3) m: vertices (V, 3) m, each the mean of its grid
    cell's corners, and faces (F, 3), the triangles whose corners lie in three distinct cells, each kept once."""
    grid = np.floor(corners / cell_m).astype(np.int64)
    grid -= grid.min(axis=0)
    span = grid.max(axis=0) + 1
    _, cell = np.unique((grid[:, 0] * span[1] + grid[:, 1]) * span[2] + grid[:, 2], return_inverse=True)
    counts = np.bincount(cell)
    vertices = np.stack([np.bincount(cell, weights=corners[:, k]) for k in range(3)], axis=1) / counts[:, None]
    faces = cell.reshape(-1, 3)
    distinct = (faces[:, 0] != faces[:, 1]) & (faces[:, 1] != faces[:, 2]) & (faces[:, 0] != faces[:, 2])
    faces = faces[distinct]
    ordered = np.sort(faces, axis=1).astype(np.int64)
    n = len(counts)
    _, first = np.unique((ordered[:, 0] * n + ordered[:, 1]) * n + ordered[:, 2], return_index=True)
    return vertices, faces[np.sort(first)].astype(np.int32)


@functools.lru_cache(maxsize=64)
def _clustered_file(path: Path, scale: tuple[float, float, float], cell_m: float) -> tuple[F64, I32]:
    """:func:`cluster_vertices` of an STL scaled by ``scale``, once per process (every twin builds the same)."""
    return cluster_vertices(read_binary_stl(path) * np.asarray(scale), cell_m)


def lighten_visual_meshes(spec: mujoco.MjSpec, cell_m: float) -> dict[str, int]:
    """Point every visual-only mesh geom of ``spec`` at a clustered copy of its mesh (``<name>_render``, the
    original's scale and reference frame); returns {mesh: triangles kept}. Collision meshes are left alone."""
    folder = Path(spec.modelfiledir) / (spec.meshdir or "")
    made: dict[str, str] = {}
    kept: dict[str, int] = {}
    for geom in spec.geoms:
        if geom.type != mujoco.mjtGeom.mjGEOM_MESH or geom.contype or geom.conaffinity:
            continue
        mesh = spec.mesh(geom.meshname)
        if mesh is None:
            raise SceneError(f"geom mesh {geom.meshname!r} is not in the robot MJCF")
        if mesh.name not in made:
            scale = np.asarray(mesh.scale, dtype=np.float64)
            try:
                vertices, faces = _clustered_file(folder / mesh.file, tuple(float(v) for v in scale), cell_m)
            except (OSError, SceneError) as exc:
                raise SceneError(
                    f"{exc} (sim.yaml robot.render_mesh_cell_m: 0 draws the MJCF's meshes as they are)"
                ) from exc
            light = spec.add_mesh(
                name=f"{mesh.name}_render", uservert=(vertices / scale).ravel(), userface=faces.ravel()
            )
            light.scale, light.refpos, light.refquat = mesh.scale, mesh.refpos, mesh.refquat
            made[mesh.name] = light.name
            kept[mesh.name] = len(faces)
        geom.meshname = made[mesh.name]
    return kept
