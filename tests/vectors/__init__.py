"""Test vectors written by Go itself (tools/govectors, ``make vectors``); never edit the JSON files by hand."""
