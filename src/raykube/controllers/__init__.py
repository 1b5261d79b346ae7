"""Reconcilers: read the cache, diff against what ``raykube.builders`` wants, write; one status writer per CR."""
