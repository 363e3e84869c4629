{{- define "tso.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "tso.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "tso.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tso.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "tso.labels" -}}
{{ include "tso.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "tso.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "tso.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The operator image (also runs the uninstall hook): image.full, else registry/task-service-operator:tag. */}}
{{- define "tso.image" -}}
{{ .Values.image.full | default (printf "%s/task-service-operator:%s" .Values.image.registry (.Values.image.tag | default .Chart.AppVersion)) }}
{{- end }}
