#!/usr/bin/env bash
# Does protobuf on the wire make kube-apiserver cheaper for an operator's Pods than JSON?
#
# For each mode given (json or proto, in that order; alternate them, e.g. `json proto proto json`), on a fresh local
# sandbox shaped like the scale benchmark's (10 kwok nodes of 256 CPU / 1 Ti / 1,000 Pods, client QPS 100 / burst
# 200), codecprobe (main.go, built with Go from the module proxy into ~/.cache/raykube/bin) creates 4,000 Pods as
# raykube builds a worker of benchmarks.scale's RayCluster and watches them until every one is Ready, sending and
# reading that content type. It appends one JSON line per mode to benchmarks/results/codec-probe.jsonl: the CPU
# seconds kube-apiserver, kwok and kube-controller-manager spent from the first create to the last Pod Ready (/proc),
# and the probe's own.
#
#   bash benchmarks/codec_probe/run.sh json proto proto json
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
raykube="$repo/.venv/bin/raykube"
python="$repo/.venv/bin/python"
work=$(mktemp -d -t raykube-codec-probe-XXXXXX)
sandbox=codec-probe
trap '"$raykube" sandbox down --name "$sandbox" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

probe="${XDG_CACHE_HOME:-$HOME/.cache}/raykube/bin/codecprobe-$(sha256sum "$here/main.go" "$here/go.sum" | sha256sum | cut -c1-12)"
if [[ ! -x "$probe" ]]; then
  (cd "$here" && go build -o "$probe" .)
fi
(cd "$repo" && "$python" - "$work/pod.json" <<'EOF'
import json, sys
from benchmarks.scale import cluster
from raykube.api.resources import RayCluster
from raykube.builders import pods
from raykube.builders.options import BuildOptions

obj = cluster("probe")
obj["metadata"].update(namespace="probe", uid="00000000-0000-0000-0000-000000000001")
pod = pods.worker_pod(RayCluster.model_validate(obj), 0, BuildOptions(), replica_index=0)
for key in ("ownerReferences", "generateName"):
    pod["metadata"].pop(key, None)  # codecprobe names each Pod; no owner to collect them
json.dump(pod, open(sys.argv[1], "w"))
EOF
)

kubectl=$("$python" -c 'from raykube.sandbox import Binaries; print(Binaries.from_cache().kubectl)')
cpu() { awk '{printf "%.2f", ($14 + $15) / 100}' "/proc/$1/stat"; }
pid_of() { "$python" -c 'import json, sys; print(next(c["pid"] for c in json.load(sys.stdin)["components"] if c["component"] == sys.argv[1]))' "$1" <<<"$status"; }

for mode in "$@"; do
  "$raykube" sandbox up --name "$sandbox" --nodes 10 --node-cpu 256 --node-memory 1Ti --node-pods 1000 \
    --client-qps 100 --client-burst 200 >"$work/up.log" 2>&1
  status=$("$raykube" sandbox status --name "$sandbox" -o json)
  kubeconfig=$("$python" -c 'import json, sys; print(json.load(sys.stdin)["kubeconfig"])' <<<"$status")
  apiserver=$(pid_of kube-apiserver); kwok=$(pid_of kwok); kcm=$(pid_of kube-controller-manager)
  "$kubectl" --kubeconfig "$kubeconfig" create namespace probe >/dev/null
  a0=$(cpu "$apiserver"); k0=$(cpu "$kwok"); c0=$(cpu "$kcm")
  line=$(/usr/bin/time -f '%U %S' -o "$work/time" "$probe" --kubeconfig "$kubeconfig" --namespace probe \
    --content "$mode" --pod "$work/pod.json" --pods 4000 2>"$work/probe.log")
  a1=$(cpu "$apiserver"); k1=$(cpu "$kwok"); c1=$(cpu "$kcm")
  read -r user system <"$work/time"
  "$python" - "$repo/benchmarks/results/codec-probe.jsonl" "$line" \
    "$a0" "$a1" "$k0" "$k1" "$c0" "$c1" "$user" "$system" <<'EOF'
import json, sys, time
out, line, *cpu = sys.argv[1:]
a0, a1, k0, k1, c0, c1, user, system = map(float, cpu)
run = json.loads(line)
run.update(at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), cpu_seconds={
    "kube-apiserver": round(a1 - a0, 2), "kwok": round(k1 - k0, 2), "kube-controller-manager": round(c1 - c0, 2),
    "probe": round(user + system, 2)})
print(json.dumps(run))
with open(out, "a") as sink:
    sink.write(json.dumps(run) + "\n")
EOF
  "$raykube" sandbox down --name "$sandbox" >/dev/null 2>&1
done
