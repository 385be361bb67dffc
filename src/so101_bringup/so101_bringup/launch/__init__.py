"""so101's launches: the descriptions (data for the engine in ``nodegraph.launch``), their catalog and the
configuration directory they name."""
