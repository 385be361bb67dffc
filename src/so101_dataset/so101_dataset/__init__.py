"""so101_dataset: kept SkillGen demos → three-camera renders, LeRobot v3.0 / v2.1 datasets, bags, mixes, reports.

Stages (each resumable; ``build`` runs them in order): ``render`` (kinematic replay through the twin's
cameras into one-episode LeRobot v3.0 shards, :mod:`.episodes`), ``export`` (:mod:`.lerobot_v3` merge and
:mod:`.lerobot_v21` GR00T layout), ``bags`` (:mod:`.bags`), ``report`` (:mod:`.report`); ``mix`` (:mod:`.mix`).
"""
