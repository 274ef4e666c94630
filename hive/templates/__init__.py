"""Jinja templates and file skeletons; shipped as package data `hive.templates`."""
