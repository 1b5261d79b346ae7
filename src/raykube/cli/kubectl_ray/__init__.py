"""``kubectl ray``: KubeRay v1.6.1's kubectl plugin, as raykube ships it (``kubectl-ray`` on PATH).

The commands, flags, table columns and messages are the plugin's (``docs/kubectl-ray.md`` lists where raykube
knowingly does better). :mod:`.render` and :mod:`.generate` are pure; :mod:`.app` holds the commands and
:mod:`.flows` the long-running ones (``session``, ``log``, ``job submit``).
"""
