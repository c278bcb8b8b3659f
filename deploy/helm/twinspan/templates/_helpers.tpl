{{- define "twinspan.name" -}}{{ .Release.Name }}-twinspan{{- end -}}
{{- define "twinspan.labels" -}}
app.kubernetes.io/name: twinspan
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}
{{- define "twinspan.image" -}}{{ .Values.image.repository }}:{{ .Values.image.tag }}{{- end -}}
{{- define "twinspan.targetService" -}}{{ include "twinspan.name" .root }}-target-{{ .variant.name }}{{- end -}}
{{- define "twinspan.drafterService" -}}{{ include "twinspan.name" .root }}-drafter-{{ .variant.name }}{{- end -}}

{{- /* The device flag value of a container: the pod's GPU, or the CPU without GPUs. */ -}}
{{- define "twinspan.device" -}}{{ ternary .device "cpu" .root.Values.gpu.enabled }}{{- end -}}

{{- /* TLS and auth flags of a server, and of its client side when it dials another service
       (`dials`: a target with a gRPC drafter, the router): the same certificate and CA. */ -}}
{{- define "twinspan.securityArgs" -}}
{{- if .root.Values.tls.enabled }}
- --tls-cert=/etc/twinspan/tls/tls.crt
- --tls-key=/etc/twinspan/tls/tls.key
{{- if .root.Values.tls.mutual }}
- --tls-ca=/etc/twinspan/tls/ca.crt
{{- end }}
{{- if .dials }}
- --upstream-tls-ca=/etc/twinspan/tls/ca.crt
{{- if .root.Values.tls.mutual }}
- --upstream-tls-cert=/etc/twinspan/tls/tls.crt
- --upstream-tls-key=/etc/twinspan/tls/tls.key
{{- end }}
{{- end }}
{{- end }}
{{- if and .public .root.Values.auth.enabled }}
- --auth-token-file=/etc/twinspan/auth/{{ .root.Values.auth.key }}
{{- if .root.Values.auth.exemptHealthMetrics }}
- --auth-exempt-health-metrics
{{- end }}
{{- end }}
{{- end -}}

{{- define "twinspan.securityMounts" -}}
{{- if .Values.tls.enabled }}
- {name: tls, mountPath: /etc/twinspan/tls, readOnly: true}
{{- end }}
{{- if .Values.auth.enabled }}
- {name: auth, mountPath: /etc/twinspan/auth, readOnly: true}
{{- end }}
{{- end -}}

{{- define "twinspan.securityVolumes" -}}
{{- if .Values.tls.enabled }}
- name: tls
  secret: {secretName: {{ .Values.tls.secretName }}}
{{- end }}
{{- if .Values.auth.enabled }}
- name: auth
  secret: {secretName: {{ .Values.auth.secretName }}}
{{- end }}
{{- end -}}

{{- /* gRPC health probes: the kubelet's own gRPC probe in plaintext; twinspan-probe over TLS,
       which the kubelet's probe cannot speak. */ -}}
{{- define "twinspan.probeAction" -}}
{{- if .root.Values.tls.enabled }}
exec:
  command: ["/usr/local/bin/twinspan-probe", "health", "--addr", "127.0.0.1:{{ .port }}",
            "--timeout", "4", "--tls-ca", "/etc/twinspan/tls/ca.crt",
            "--tls-cert", "/etc/twinspan/tls/tls.crt", "--tls-key", "/etc/twinspan/tls/tls.key"]
{{- else }}
grpc: {port: {{ .port }}}
{{- end }}
{{- end -}}

{{- define "twinspan.probes" -}}
startupProbe:
  {{- include "twinspan.probeAction" . | nindent 2 }}
  periodSeconds: 10
  timeoutSeconds: 5
  failureThreshold: {{ .startupFailureThreshold }}
readinessProbe:
  {{- include "twinspan.probeAction" . | nindent 2 }}
  periodSeconds: 5
  timeoutSeconds: 5
livenessProbe:
  {{- include "twinspan.probeAction" . | nindent 2 }}
  periodSeconds: 10
  timeoutSeconds: 5
  failureThreshold: 3
{{- end -}}

{{- define "twinspan.podSecurityContext" -}}
securityContext:
  runAsNonRoot: true
  runAsUser: 10001
  runAsGroup: 10001
  fsGroup: 10001
  seccompProfile: {type: RuntimeDefault}
{{- end -}}

{{- define "twinspan.containerSecurityContext" -}}
securityContext:
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  capabilities: {drop: [ALL]}
{{- end -}}

{{- define "twinspan.modelsVolume" -}}
- name: models
{{- if eq .Values.models.volume.type "hostPath" }}
  hostPath: {path: {{ .Values.models.volume.hostPath }}, type: Directory}
{{- else }}
  persistentVolumeClaim: {claimName: {{ .Values.models.volume.claimName }}, readOnly: true}
{{- end }}
{{- end -}}

{{- /* Spreads one pool's pods (label twinspan.io/role) over nodes. */ -}}
{{- define "twinspan.affinity" -}}
{{- $term := dict "labelSelector" (dict "matchLabels" (dict "app.kubernetes.io/instance" .root.Release.Name "twinspan.io/role" .role)) "topologyKey" "kubernetes.io/hostname" -}}
{{- $affinity := deepCopy (default (dict) .base) -}}
{{- if eq .antiAffinity "required" -}}
{{- $_ := set $affinity "podAntiAffinity" (dict "requiredDuringSchedulingIgnoredDuringExecution" (list $term)) -}}
{{- else if eq .antiAffinity "preferred" -}}
{{- $_ := set $affinity "podAntiAffinity" (dict "preferredDuringSchedulingIgnoredDuringExecution" (list (dict "weight" 100 "podAffinityTerm" $term))) -}}
{{- end -}}
{{- if $affinity }}
affinity: {{- toYaml $affinity | nindent 2 }}
{{- end }}
{{- end -}}

{{- /* Scheduling of a GPU worker pod. */ -}}
{{- define "twinspan.workerScheduling" -}}
{{- $w := .root.Values.worker -}}
{{- if and .root.Values.gpu.enabled .root.Values.gpu.runtimeClassName }}
runtimeClassName: {{ .root.Values.gpu.runtimeClassName }}
{{- end }}
{{- with $w.nodeSelector }}
nodeSelector: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $w.tolerations }}
tolerations: {{- toYaml . | nindent 2 }}
{{- end }}
{{- include "twinspan.affinity" (dict "root" .root "role" .role "antiAffinity" (default "none" .variant.antiAffinity) "base" $w.affinity) }}
{{- with .root.Values.image.pullSecrets }}
imagePullSecrets:
{{- range . }}
  - {name: {{ . }}}
{{- end }}
{{- end }}
{{- end -}}

{{- /* A container's resources: requests/limits from values, plus its GPU. */ -}}
{{- define "twinspan.workerResources" -}}
{{- $res := deepCopy .resources -}}
{{- if and .root.Values.gpu.enabled (eq .root.Values.gpu.allocation "devicePlugin") .gpu -}}
{{- $limits := default (dict) $res.limits -}}
{{- $_ := set $limits .root.Values.gpu.resource 1 -}}
{{- $_ := set $res "limits" $limits -}}
{{- end -}}
{{- if and .root.Values.gpu.enabled (eq .root.Values.gpu.allocation "dra") .gpu -}}
{{- $_ := set $res "claims" (list (dict "name" "gpu")) -}}
{{- end -}}
resources: {{- toYaml $res | nindent 2 }}
{{- end -}}

{{- define "twinspan.resourceClaims" -}}
{{- if and .Values.gpu.enabled (eq .Values.gpu.allocation "dra") }}
resourceClaims:
  - {name: gpu, resourceClaimTemplateName: {{ include "twinspan.name" . }}-gpu}
{{- end }}
{{- end -}}

{{- define "twinspan.pdb" -}}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ .name }}
  labels: {{- include "twinspan.labels" .root | nindent 4 }}
spec:
  maxUnavailable: {{ .maxUnavailable }}
  selector:
    matchLabels: {app.kubernetes.io/instance: {{ .root.Release.Name }}, twinspan.io/role: {{ .name }}}
{{- end -}}

{{- /* The drafter container: in its own pod (separate) or beside a colocated target (dra). */ -}}
{{- define "twinspan.drafterContainer" -}}
{{- $w := .root.Values.worker -}}
{{- $port := $w.drafterPort -}}
{{- $prefix := ternary "drafter-" "" .sidecar -}}
- name: drafter
  image: {{ include "twinspan.image" .root }}
  imagePullPolicy: {{ .root.Values.image.pullPolicy }}
  command:
    - /usr/local/bin/twinspan-drafter
    - --model={{ .root.Values.models.drafter }}
    - --target-model={{ .root.Values.models.target }}
    - --head-variant={{ .head }}
    - --listen=0.0.0.0:{{ $port }}
    - --metrics=0.0.0.0:{{ .metricsPort }}
    {{- /* A drafter stream holds the target's context plus one block (B <= 16). */}}
    - --context={{ add $w.context 16 }}
    - --device={{ include "twinspan.device" (dict "root" .root "device" $w.drafterDevice) }}
    - --drain-seconds={{ $w.drainSeconds }}
    {{- include "twinspan.securityArgs" (dict "root" .root "public" false) | nindent 4 }}
  env:
    - {name: TWINSPAN_HEALTH_ADDR, value: "127.0.0.1:{{ $port }}"}
    {{- with $w.env }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  ports:
    - {name: {{ $prefix }}grpc, containerPort: {{ $port }}}
    - {name: {{ $prefix }}metrics, containerPort: {{ .metricsPort }}}
  {{- include "twinspan.probes" (dict "root" .root "port" $port "startupFailureThreshold" $w.startupFailureThreshold) | nindent 2 }}
  {{- include "twinspan.workerResources" (dict "root" .root "resources" .resources "gpu" true) | nindent 2 }}
  {{- include "twinspan.containerSecurityContext" .root | nindent 2 }}
  volumeMounts:
    - {name: models, mountPath: /models, readOnly: true}
    {{- include "twinspan.securityMounts" .root | nindent 4 }}
{{- end -}}
