"""The sandbox's process runtime: a kubelet for "process nodes" that runs Pods as real processes.

Each Pod gets network, UTS, IPC and mount namespaces (a pause process holds them) with a veth on a sandbox bridge
and its own IP; each container runs ``command``/``args`` as PID 1 of its own PID namespace, on an overlay of the
host's root filesystem, with the kubelet's environment, volumes, probes, restarts and logs. Ray images map to venvs
with ``ray[default,serve,data]`` and boto3. See ``docs/architecture.md`` ("The process runtime") for the whole picture.
"""
