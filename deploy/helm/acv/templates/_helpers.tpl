{{/* The chart's name. */}}
{{- define "acv.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's full name: every object's name starts with it. */}}
{{- define "acv.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* A component's object name; dict: root, component. */}}
{{- define "acv.componentName" -}}
{{- printf "%s-%s" (include "acv.fullname" .root) .component | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The labels a component's pods are selected by; dict: root, component. */}}
{{- define "acv.selectorLabels" -}}
app.kubernetes.io/name: {{ include "acv.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* Every object's labels; dict: root, component. */}}
{{- define "acv.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "acv.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: acv
{{- end }}

{{/* The image, pinned by tag and, when given, by digest. */}}
{{- define "acv.image" -}}
{{- $tag := toString (default .Chart.AppVersion .Values.image.tag) }}
{{- if eq $tag "latest" }}
{{- fail "image.tag: pin a version; latest names no particular image" }}
{{- end }}
{{- with .Values.image.digest }}
{{- if not (regexMatch "^sha256:[0-9a-f]{64}$" .) }}
{{- fail "image.digest: want sha256: and 64 lowercase hex digits" }}
{{- end }}
{{- printf "%s:%s@%s" $.Values.image.repository $tag . }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository $tag }}
{{- end }}
{{- end }}

{{/* The Secret holding the master key and, by default, the database URL. */}}
{{- define "acv.secretName" -}}
{{- default (include "acv.fullname" .) .Values.secret.name }}
{{- end }}

{{- define "acv.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "acv.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* "true" when the log events go through Kafka (and the log writer runs). */}}
{{- define "acv.kafka" -}}
{{- if .Values.kafka.brokers }}true{{ end }}
{{- end }}

{{/* The Deployments this release runs, with each one's values key. */}}
{{- define "acv.workloads" -}}
api: api
relay: relay
{{- if include "acv.kafka" . }}
log-writer: logWriter
{{- end }}
{{- if .Values.console.enabled }}
console: console
{{- end }}
{{- end }}
