{{- define "twinspan.name" -}}{{ .Release.Name }}-twinspan{{- end -}}
{{- define "twinspan.labels" -}}
app.kubernetes.io/name: twinspan
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}
{{- define "twinspan.image" -}}{{ .Values.image.repository }}:{{ .Values.image.tag }}{{- end -}}
{{- define "twinspan.targetService" -}}{{ include "twinspan.name" .root }}-target-{{ .variant.name }}{{- end -}}
{{- define "twinspan.drafterService" -}}{{ include "twinspan.name" .root }}-drafter-{{ .variant.name }}{{- end -}}
