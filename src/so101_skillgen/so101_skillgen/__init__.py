"""so101_skillgen."""
