"""Hive: run a markdown plan of coding tasks with LLM agents, the way make runs a Makefile."""

__version__ = "0.1.0"
