"""so101_policy."""
