"""so101_pipeline: the whole pipeline (seeds → SkillGen → dataset → train → eval → report) as one resumable
command. :mod:`.runner` is robot-agnostic (stages, fingerprints, ``done.json``, MLflow, progress);
:mod:`.stages` holds the six so101 stages; :mod:`.config` reads ``config/pipeline.yaml``."""
