"""Isaac-GR00T N1.6 fine-tuning recipe for so101 (not runnable here: GR00T needs Python 3.10, CUDA and the
``gr00t`` package, which no reachable registry serves). See ``README.md`` in this folder."""
