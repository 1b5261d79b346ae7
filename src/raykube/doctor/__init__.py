"""``raykube doctor``: walks the objects behind a Ray custom resource and names the root cause first (issue 8)."""
