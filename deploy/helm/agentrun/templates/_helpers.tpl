{{/* Names and labels. */}}
{{- define "agentrun.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "agentrun.fullname" -}}
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

{{- define "agentrun.selectorLabels" -}}
app.kubernetes.io/name: {{ include "agentrun.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "agentrun.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "agentrun.selectorLabels" . }}
app.kubernetes.io/version: {{ include "agentrun.tag" . | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "agentrun.tag" -}}
{{- default .Chart.AppVersion .Values.image.tag -}}
{{- end -}}

{{- define "agentrun.image" -}}
{{- printf "%s:%s" .Values.image.repository (include "agentrun.tag" .) -}}
{{- end -}}

{{/* The Secret holding the seal key and the token: the user's, or the chart's. */}}
{{- define "agentrun.keysSecret" -}}
{{- default (include "agentrun.fullname" .) .Values.existingSecret -}}
{{- end -}}

{{/* The keys' names in that Secret: the user's names for theirs, the chart's own otherwise. */}}
{{- define "agentrun.sealKeyKey" -}}
{{- if .Values.existingSecret -}}{{ .Values.sealKeyKey }}{{- else -}}AGENTRUN_SEAL_KEY{{- end -}}
{{- end -}}
{{- define "agentrun.tokenKey" -}}
{{- if .Values.existingSecret -}}{{ .Values.tokenKey }}{{- else -}}AGENTRUN_TOKEN{{- end -}}
{{- end -}}

{{/* "true" when the store is PostgreSQL (runner pods, server --no-runner). */}}
{{- define "agentrun.postgres" -}}
{{- if or .Values.store.url .Values.store.existingSecret -}}true{{- end -}}
{{- end -}}

{{/* The Secret and key holding the store URL. */}}
{{- define "agentrun.storeSecret" -}}
{{- default (include "agentrun.fullname" .) .Values.store.existingSecret -}}
{{- end -}}
{{- define "agentrun.storeSecretKey" -}}
{{- if .Values.store.existingSecret -}}{{ .Values.store.existingSecretKey }}{{- else -}}AGENTRUN_STORE_URL{{- end -}}
{{- end -}}

{{/* The environment every agentrun process gets. */}}
{{/* The data folder: a folder the process makes on its volume (mounted at /data), never the
mount itself, which Kubernetes leaves owned by root or writable by others: the process refuses to
start on a data folder another user owns or can write. */}}
{{- define "agentrun.home" -}}/data/agentrun{{- end -}}

{{- define "agentrun.env" -}}
- name: AGENTRUN_HOME
  value: {{ include "agentrun.home" . }}
- name: AGENTRUN_SEAL_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "agentrun.keysSecret" . }}
      key: {{ include "agentrun.sealKeyKey" . }}
{{- if include "agentrun.postgres" . }}
- name: AGENTRUN_STORE_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "agentrun.storeSecret" . }}
      key: {{ include "agentrun.storeSecretKey" . }}
{{- end }}
{{- with .Values.env }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "agentrun.probes" -}}
{{- $port := .port -}}
{{- with .root.Values.probes -}}
startupProbe:
  httpGet: {path: /healthz, port: {{ $port }}}
  {{- toYaml .startup | nindent 2 }}
livenessProbe:
  httpGet: {path: /livez, port: {{ $port }}}
  {{- toYaml .liveness | nindent 2 }}
readinessProbe:
  httpGet: {path: /readyz, port: {{ $port }}}
  {{- toYaml .readiness | nindent 2 }}
{{- end }}
{{- end -}}
