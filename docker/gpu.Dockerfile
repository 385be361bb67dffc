# GPU image for training, evaluation, the pipeline and the GR00T-protocol policy server: CUDA base, Python 3.12
# (Ubuntu 24.04), our Python packages and lerobot from requirements/ (torch's wheels bring their own CUDA
# runtime; the base image only needs to match the host driver). No ROS: the graph runs over Zenoh.
# Build from the repository root:  docker build -f docker/gpu.Dockerfile -t so101:gpu .
# Run: docker/README.md. Not built here (no Docker engine on the dev machines).
ARG CUDA_IMAGE=nvidia/cuda:13.0.0-base-ubuntu24.04
FROM ${CUDA_IMAGE}

SHELL ["/bin/bash", "-o", "pipefail", "-c"]
RUN apt-get update && apt-get install -y --no-install-recommends \
        python3.12 python3.12-venv libegl1 libgl1 libgles2 libglib2.0-0 libusb-1.0-0 \
    && rm -rf /var/lib/apt/lists/*

ENV VIRTUAL_ENV=/opt/venv PATH=/opt/venv/bin:$PATH
RUN python3.12 -m venv /opt/venv
WORKDIR /opt/so101
COPY requirements/ requirements/
RUN pip install --no-cache-dir "pip==$(grep -E '^pip==' requirements/constraints.txt | cut -d= -f3)" \
    && pip install --no-cache-dir -c requirements/constraints.txt -r requirements/runtime.txt

COPY src/ src/
COPY config/ config/
COPY launch/ launch/
# Every Python package of src/ (those with a setup.py), editable; their dependencies came from requirements/.
RUN find src -mindepth 2 -maxdepth 2 -name setup.py -printf '-e\n%h\n' | xargs pip install --no-cache-dir --no-deps

ENV MUJOCO_GL=egl PYOPENGL_PLATFORM=egl HF_HUB_OFFLINE=1 SO101_TRANSPORT=zenoh SO101_CONFIG_DIR=/opt/so101/config
# Outputs (datasets, checkpoints, reports) and LeRobot calibrations live on volumes.
VOLUME ["/data", "/root/.cache/huggingface/lerobot/calibration"]
WORKDIR /data
# The policy server binds 127.0.0.1:5555 (run with --network host; --host 0.0.0.0 only behind a token).
EXPOSE 5555
ENTRYPOINT ["so101"]
CMD ["--help"]
