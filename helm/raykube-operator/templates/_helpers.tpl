{{/*
Names and labels follow KubeRay's kuberay-operator chart, so objects, selectors and labels are the same.
*/}}

{{/* The app name (label app.kubernetes.io/name). */}}
{{- define "raykube-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The component (Pod label app.kubernetes.io/component). */}}
{{- define "raykube-operator.component" -}}
{{- default .Chart.Name .Values.componentOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The full name of the objects: fullnameOverride, else <release>-<name> (or <release> if it contains the name). */}}
{{- define "raykube-operator.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "raykube-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels on every object. */}}
{{- define "raykube-operator.labels" -}}
app.kubernetes.io/name: {{ include "raykube-operator.name" . }}
helm.sh/chart: {{ include "raykube-operator.chart" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- if .Chart.AppVersion }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* The Deployment's selector (also the Service's). */}}
{{- define "raykube-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "raykube-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "raykube-operator.serviceAccount.name" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "raykube-operator.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "raykube-operator.leaderElection.name" -}}
{{- include "raykube-operator.fullname" . -}}-leader-election
{{- end -}}

{{- define "raykube-operator.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag | toString) -}}
{{- end -}}

{{/* The namespaces the operator watches, comma-separated: watchNamespace, else the release namespace with
singleNamespaceInstall, else empty (all namespaces). */}}
{{- define "raykube-operator.watchNamespace" -}}
{{- if .Values.watchNamespace -}}
{{- join "," .Values.watchNamespace -}}
{{- else if .Values.singleNamespaceInstall -}}
{{- .Release.Namespace -}}
{{- end -}}
{{- end -}}

{{/* The batch scheduler's name: batchScheduler.name, or volcano for the deprecated batchScheduler.enabled. */}}
{{- define "raykube-operator.batchScheduler" -}}
{{- with .Values.batchScheduler -}}
{{- if and .enabled .name -}}
{{- fail "batchScheduler.enabled and batchScheduler.name must not both be set (enabled is the deprecated form of name: volcano)" -}}
{{- end -}}
{{- if .enabled -}}volcano{{- else -}}{{- .name -}}{{- end -}}
{{- end -}}
{{- end -}}

{{/* The log file's path, when both logging.baseDir and logging.fileName are set. */}}
{{- define "raykube-operator.logFile" -}}
{{- if and .Values.logging.baseDir .Values.logging.fileName -}}
{{- printf "%s/%s" (trimSuffix "/" .Values.logging.baseDir) .Values.logging.fileName -}}
{{- end -}}
{{- end -}}

{{/* --feature-gates=A=true,B=false, or nothing without featureGates. */}}
{{- define "raykube-operator.featureGates" -}}
{{- $gates := list -}}
{{- range .Values.featureGates -}}
{{- $gates = append $gates (printf "%s=%t" .name .enabled) -}}
{{- end -}}
{{- if $gates -}}
--feature-gates={{ join "," $gates }}
{{- end -}}
{{- end -}}

{{/* Values KubeRay validates before rendering; the same messages. */}}
{{- define "raykube-operator.validate" -}}
{{- if hasKey .Values "reconcileConcurrency" -}}
{{- $rc := toString .Values.reconcileConcurrency -}}
{{- if not (regexMatch "^[1-9][0-9]*$" $rc) -}}
{{- fail (printf "values.reconcileConcurrency must be a positive integer, got %q" $rc) -}}
{{- end -}}
{{- end -}}
{{- with .Values.kubeClient -}}
{{- if hasKey . "qps" -}}
{{- $qps := toString .qps -}}
{{- if not (regexMatch "^[0-9]+(\\.[0-9]+)?$" $qps) -}}
{{- fail (printf "values.kubeClient.qps must be a valid float number, got %q" $qps) -}}
{{- end -}}
{{- end -}}
{{- if hasKey . "burst" -}}
{{- $burst := toString .burst -}}
{{- if not (regexMatch "^[0-9]+$" $burst) -}}
{{- fail (printf "values.kubeClient.burst must be a non-negative integer, got %q" $burst) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $_ := include "raykube-operator.batchScheduler" . -}}
{{- end -}}

{{/* The rules of a generated rules file (files/*.yaml, written by `raykube rbac generate`); fails when missing.
With "batch" true, the chosen batch scheduler's rules (files/batch-scheduler-<name>-rules.yaml, when that scheduler
needs any) follow, as KubeRay's chart adds the podgroups rule for batchScheduler.name=volcano; and with the
KubernetesWAS feature gate enabled, its scheduling.k8s.io rule (KubeRay v1.7.0's kuberay.kubernetesWASEnabled). */}}
{{- define "raykube-operator.rules" -}}
{{- $text := .context.Files.Get .file -}}
{{- $rules := fromYamlArray $text -}}
{{- if not $rules -}}
{{- fail (printf "%s is missing or empty: run `raykube rbac generate`" .file) -}}
{{- end -}}
{{- if .batch -}}
{{- with (include "raykube-operator.batchScheduler" .context) -}}
{{- $extra := $.context.Files.Get (printf "files/batch-scheduler-%s-rules.yaml" .) -}}
{{- if $extra -}}
{{- $rules = concat $rules (fromYamlArray $extra) -}}
{{- end -}}
{{- end -}}
{{- range .context.Values.featureGates -}}
{{- if and (eq .name "KubernetesWAS") .enabled -}}
{{- $rules = concat $rules (fromYamlArray ($.context.Files.Get "files/batch-scheduler-kubernetes-was-v1alpha2-rules.yaml")) -}}
{{- end -}}
{{- end -}}
{{- if .context.Values.diagnoseAfter -}}
{{- $rules = concat $rules (fromYamlArray (.context.Files.Get "files/diagnosis-rules.yaml")) -}}
{{- if .cluster -}}
{{- $rules = concat $rules (fromYamlArray (.context.Files.Get "files/diagnosis-cluster-rules.yaml")) -}}
{{- end -}}
{{- end -}}
{{- end -}}
rules:
{{ toYaml $rules | trim }}
{{- end -}}

{{/* The operator's arguments, in KubeRay's flag syntax (--flag=value). */}}
{{- define "raykube-operator.args" -}}
{{- $args := list -}}
{{- if .Values.configuration.enabled -}}
{{- $args = append $args "--config=/etc/raykube/config.yaml" -}}
{{- else -}}
{{- $args = append $args "--metrics-addr=:8080" -}}
{{- $args = append $args "--health-probe-bind-address=:8082" -}}
{{- if hasKey .Values "leaderElectionEnabled" -}}
{{- $args = append $args (printf "--enable-leader-election=%t" .Values.leaderElectionEnabled) -}}
{{- if .Values.leaderElectionEnabled -}}
{{- $args = append $args (printf "--leader-election-namespace=%s" .Release.Namespace) -}}
{{- end -}}
{{- end -}}
{{- if hasKey .Values "reconcileConcurrency" -}}
{{- $args = append $args (printf "--reconcile-concurrency=%v" .Values.reconcileConcurrency) -}}
{{- end -}}
{{- with .Values.kubeClient -}}
{{- if hasKey . "qps" -}}
{{- $args = append $args (printf "--qps=%v" .qps) -}}
{{- end -}}
{{- if hasKey . "burst" -}}
{{- $args = append $args (printf "--burst=%v" .burst) -}}
{{- end -}}
{{- end -}}
{{- with .Values.logging.stdoutEncoder -}}
{{- $args = append $args (printf "--log-stdout-encoder=%s" .) -}}
{{- end -}}
{{- with (include "raykube-operator.logFile" .) -}}
{{- $args = append $args (printf "--log-file-path=%s" .) -}}
{{- with $.Values.logging.fileEncoder -}}
{{- $args = append $args (printf "--log-file-encoder=%s" .) -}}
{{- end -}}
{{- end -}}
{{- with (include "raykube-operator.watchNamespace" .) -}}
{{- $args = append $args (printf "--watch-namespace=%s" .) -}}
{{- end -}}
{{- with (include "raykube-operator.batchScheduler" .) -}}
{{- $args = append $args (printf "--batch-scheduler=%s" .) -}}
{{- end -}}
{{- if hasKey .Values "useKubernetesProxy" -}}
{{- $args = append $args (printf "--use-kubernetes-proxy=%t" .Values.useKubernetesProxy) -}}
{{- end -}}
{{- if and .Values.metrics (hasKey .Values.metrics "enabled") -}}
{{- $args = append $args (printf "--enable-metrics=%t" .Values.metrics.enabled) -}}
{{- end -}}
{{- end -}}
{{- with (include "raykube-operator.featureGates" .) -}}
{{- $args = append $args . -}}
{{- end -}}
{{- with .Values.diagnoseAfter -}}
{{- $args = append $args (printf "--diagnose-after=%s" .) -}}
{{- end -}}
{{- toYaml $args -}}
{{- end -}}
