"""The agent CLIs Hive knows: each one's profiles, how to read its output, and how to
check that it will start."""
