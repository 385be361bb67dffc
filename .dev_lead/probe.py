import os, time, tempfile, pathlib
import numpy as np
import mujoco, torch
t=time.time()
from so101_core.sim.twin import Twin  # noqa
print("import ok", mujoco.__version__, torch.cuda.is_available())
m = mujoco.MjModel.from_xml_string('<mujoco><worldbody><light pos="0 0 1"/><geom type="sphere" size=".1"/><camera name="c" pos="0 -1 0" xyaxes="1 0 0 0 0 1"/></worldbody></mujoco>')
d = mujoco.MjData(m); r = mujoco.Renderer(m, 480, 640); mujoco.mj_forward(m, d); r.update_scene(d, "c"); img = r.render(); print("render", img.shape, img.mean())
os.environ["HF_HUB_OFFLINE"]="1"
from lerobot.datasets.lerobot_dataset import LeRobotDataset
root = pathlib.Path(tempfile.mkdtemp())/"ds"
feat = {"observation.state":{"dtype":"float32","shape":(6,),"names":None},"action":{"dtype":"float32","shape":(6,),"names":None},"observation.images.ego":{"dtype":"video","shape":(480,640,3),"names":["height","width","channels"]}}
ds = LeRobotDataset.create(repo_id="local/probe", fps=30, root=root, features=feat, use_videos=True)
for i in range(30):
    ds.add_frame({"observation.state":np.zeros(6,np.float32),"action":np.zeros(6,np.float32),"observation.images.ego":img,"task":"t"})
ds.save_episode(); ds.finalize(); print("lerobot ok", ds.num_frames, time.time()-t)
ds2 = LeRobotDataset("local/probe", root=root, video_backend="pyav"); print(ds2[0]["observation.images.ego"].shape)
