# Sourced by the GPU scripts (policy_h200.sh, pipeline_h200.sh) from the repository root, with PY set: makes a
# bare device machine (no venv, no network) run the product's commands from this checkout.
#   - the wheels the device tool carried (.whl, .whl_b, .whl_c: bench/gpu/carry_wheels.sh) into /tmp/site, once per machine;
#   - the GL loader debs (.gl) unpacked into / (EGL for MuJoCo);
#   - our packages' metadata (console scripts the launcher runs, interface entry points) into /tmp/site when no venv
#     holds them; their code is still imported from src/ (first on the path);
#   - PYTHONPATH, the interface path, EGL, offline Hugging Face, unbuffered output and the machine's name exported.
for d in .whl .whl_b .whl_c; do  # wheels carried by the device tool (bench/README.md), installed once per machine
  if compgen -G "$d/*.whl" >/dev/null; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$d"/*.whl
  fi
done
if compgen -G ".gl/*.deb" >/dev/null; then for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig; fi
export PYTHONPATH=$(ls -d "$PWD"/src/*/ | paste -sd:):/tmp/site${PYTHONPATH:+:$PYTHONPATH}  # /tmp/site may not exist
if ! "$PY" -c "import importlib.metadata as m; m.distribution('so101_nodes')" 2>/dev/null; then
  # no venv here: our packages' metadata (console scripts the launcher runs, interface entry points) into
  # /tmp/site; their code is still imported from src/ (first on the path)
  ls -d src/*/ | grep -v so101_msgs | xargs "$PY" -m pip install -q --no-deps --no-build-isolation --no-index \
    --target /tmp/site
fi
export NODEGRAPH_INTERFACE_PATH=$PWD/src/so101_msgs MUJOCO_GL=egl PYOPENGL_PLATFORM=egl HF_HUB_OFFLINE=1
export PYTHONUNBUFFERED=1 SO101_MACHINE=${SO101_MACHINE:-device machine}
