{{/* The chart's name. */}}
{{- define "descheduler.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The full name: the release's, with the chart's unless it holds it already. */}}
{{- define "descheduler.fullname" -}}
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

{{- define "descheduler.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The policy's ConfigMap: <fullname>-policy, kube-system/descheduler-policy for a release
named descheduler in kube-system, where `kubectl descheduler plan` looks by default. */}}
{{- define "descheduler.policyConfigMap" -}}
{{- printf "%s-policy" (include "descheduler.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "descheduler.labels" -}}
app.kubernetes.io/name: {{ include "descheduler.name" . }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "descheduler.selectorLabels" -}}
app.kubernetes.io/name: {{ include "descheduler.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "descheduler.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{ default (include "descheduler.fullname" .) .Values.serviceAccount.name }}
{{- else -}}
{{ default "default" .Values.serviceAccount.name }}
{{- end -}}
{{- end -}}

{{/* The container's arguments, the same for both kinds (a CronJob runs one cycle). */}}
{{- define "descheduler.args" -}}
- --policy-config-file=/policy-dir/policy.yaml
{{- if eq .Values.kind "Deployment" }}
- --descheduling-interval={{ required "deschedulingInterval is required when kind is Deployment" .Values.deschedulingInterval }}
{{- end }}
{{- range $key, $value := .Values.cmdOptions }}
{{- if ne $value nil }}
- {{ printf "--%s=%s" $key (toString $value) }}
{{- else }}
- {{ printf "--%s" $key }}
{{- end }}
{{- end }}
{{- if and (eq .Values.kind "Deployment") .Values.leaderElection.enabled }}
- --leader-elect=true
{{- with .Values.leaderElection.leaseDuration }}
- --leader-elect-lease-duration={{ . }}
{{- end }}
{{- with .Values.leaderElection.renewDeadline }}
- --leader-elect-renew-deadline={{ . }}
{{- end }}
{{- with .Values.leaderElection.retryPeriod }}
- --leader-elect-retry-period={{ . }}
{{- end }}
{{- with .Values.leaderElection.resourceLock }}
- --leader-elect-resource-lock={{ . }}
{{- end }}
{{- with .Values.leaderElection.resourceName }}
- --leader-elect-resource-name={{ . }}
{{- end }}
{{- with (default .Values.leaderElection.resourceNamespace .Values.leaderElection.resourceNamescape) }}
- --leader-elect-resource-namespace={{ . }}
{{- end }}
{{- end }}
{{- with .Values.rateLimits }}
- --eviction-qps={{ .evictionQps | default 0 }}
- --eviction-burst={{ .evictionBurst | default 1 }}
- --node-eviction-qps={{ .nodeEvictionQps | default 0 }}
- --node-eviction-burst={{ .nodeEvictionBurst | default 1 }}
{{- end }}
{{- if and (eq .Values.kind "Deployment") .Values.evictionCooldown }}
- --eviction-cooldown={{ .Values.evictionCooldown }}
{{- end }}
{{- if and (eq .Values.kind "Deployment") .Values.evictionBackoffMax }}
- --eviction-backoff-max={{ .Values.evictionBackoffMax }}
{{- end }}
{{- if and (eq .Values.kind "Deployment") .Values.cycleOnChange.enabled }}
- --cycle-on-change=true
- --cycle-debounce={{ .Values.cycleOnChange.debounce }}
- --min-cycle-gap={{ .Values.cycleOnChange.minGap }}
{{- end }}
{{- if .Values.decisionLog.enabled }}
- --decision-log={{ .Values.decisionLog.path }}
- --decision-log-snapshot={{ .Values.decisionLog.snapshot | default false }}
- --decision-log-max-files={{ .Values.decisionLog.maxFiles | int }}
- --decision-log-max-bytes={{ .Values.decisionLog.maxBytes }}
{{- end }}
{{- end -}}

{{/* The pod's spec, the same for both kinds. */}}
{{- define "descheduler.podSpec" -}}
{{- with .Values.dnsConfig }}
dnsConfig:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .Values.schedulerName }}
schedulerName: {{ . }}
{{- end }}
{{- with .Values.runtimeClassName }}
runtimeClassName: {{ . }}
{{- end }}
serviceAccountName: {{ include "descheduler.serviceAccountName" . }}
{{- if kindIs "bool" .Values.automountServiceAccountToken }}
automountServiceAccountToken: {{ .Values.automountServiceAccountToken }}
{{- end }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.initContainers }}
initContainers:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if eq .Values.kind "CronJob" }}
restartPolicy: Never
{{- end }}
containers:
  - name: {{ .Chart.Name }}
    image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"
    imagePullPolicy: {{ .Values.image.pullPolicy }}
    command:
      {{- toYaml .Values.command | nindent 6 }}
    args:
      {{- include "descheduler.args" . | nindent 6 }}
    {{- if eq .Values.kind "Deployment" }}
    env:
      - name: POD_NAME
        valueFrom:
          fieldRef:
            fieldPath: metadata.name
    {{- end }}
    ports:
      {{- toYaml .Values.ports | nindent 6 }}
    {{- if eq .Values.kind "Deployment" }}
    livenessProbe:
      {{- toYaml .Values.livenessProbe | nindent 6 }}
    {{- end }}
    resources:
      {{- toYaml .Values.resources | nindent 6 }}
    {{- with .Values.securityContext }}
    securityContext:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    volumeMounts:
      - mountPath: /policy-dir
        name: policy-volume
      {{- if .Values.decisionLog.enabled }}
      - mountPath: {{ .Values.decisionLog.path }}
        name: decision-log
      {{- end }}
      {{- if and .Values.extraServiceAccountVolumeMounts (not .Values.automountServiceAccountToken) }}
      {{- toYaml .Values.extraServiceAccountVolumeMounts | nindent 6 }}
      {{- end }}
{{- with .Values.podSecurityContext }}
securityContext:
  {{- toYaml . | nindent 2 }}
{{- end }}
volumes:
  - name: policy-volume
    configMap:
      name: {{ include "descheduler.policyConfigMap" . }}
  {{- if .Values.decisionLog.enabled }}
  - name: decision-log
    {{- if .Values.decisionLog.existingClaim }}
    persistentVolumeClaim:
      claimName: {{ .Values.decisionLog.existingClaim }}
    {{- else }}
    emptyDir:
      {{- with .Values.decisionLog.sizeLimit }}
      sizeLimit: {{ . }}
      {{- end }}
    {{- end }}
  {{- end }}
  {{- if and .Values.extraServiceAccountVolumes (not .Values.automountServiceAccountToken) }}
  {{- toYaml .Values.extraServiceAccountVolumes | nindent 2 }}
  {{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
