{{/* The chart's names, labels and shared pieces (docs/deploy.md, "Helm"). */}}

{{- define "skillbus.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 48 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default "skillbus" .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 48 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 48 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Labels of every object; the pods' selector labels are these less
     version and chart. */}}
{{- define "skillbus.labels" -}}
app.kubernetes.io/name: skillbus
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/part-of: skillbus
{{- with .component }}
app.kubernetes.io/component: {{ . }}
{{- end }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "skillbus.selectorLabels" -}}
app.kubernetes.io/name: skillbus
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "skillbus.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ $tag }}
{{- end -}}
{{- end -}}

{{- define "skillbus.natsURL" -}}
{{- default "nats://nats:4222" .Values.natsURL -}}
{{- end -}}

{{/* The Secret holding a role's nats.creds. */}}
{{- define "skillbus.credsSecret" -}}
{{- $v := .root.Values.natsCreds -}}
{{- if hasKey $v.secretNames .role -}}
{{- index $v.secretNames .role -}}
{{- else -}}
{{- printf "%s-%s-creds" (include "skillbus.fullname" .root) .role -}}
{{- end -}}
{{- end -}}

{{- define "skillbus.consoleTokenSecret" -}}
{{- default (printf "%s-console-token" (include "skillbus.fullname" .)) .Values.console.token.existingSecret -}}
{{- end -}}

{{/* The skills of the library ConfigMap, as a JSON list of names: the
     chart's files/library/skills/<name>/SKILL.md and library.skills. */}}
{{- define "skillbus.skillNames" -}}
{{- $names := list -}}
{{- range $path, $_ := .Files.Glob "files/library/skills/*/SKILL.md" -}}
{{- $names = append $names (base (dir $path)) -}}
{{- end -}}
{{- range $name, $_ := .Values.library.skills -}}
{{- $names = append $names $name -}}
{{- end -}}
{{- $names | uniq | sortAlpha | toJson -}}
{{- end -}}
