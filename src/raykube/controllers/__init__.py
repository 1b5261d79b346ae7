"""Reconcilers: read the cache, diff against what ``raykube.build`` wants, write; one status writer per CR."""
