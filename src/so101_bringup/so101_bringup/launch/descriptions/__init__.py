"""One module per launch, each defining ``DESCRIPTION``; registered in ``so101_bringup.launch.catalog``."""
