{{/*
Names, labels and the decisions several templates share.
*/}}

{{- define "hawser.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The prefix of every object name: the release name, followed by the chart name
unless the release name already contains it. Trimmed so that the longest
suffix ("-controller", "-certs-bootstrap") still fits in 63 characters.
*/}}
{{- define "hawser.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 46 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 46 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 46 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "hawser.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Labels of every object. Call with (dict "ctx" $ "component" "controller").
*/}}
{{- define "hawser.labels" -}}
helm.sh/chart: {{ include "hawser.chart" .ctx }}
{{ include "hawser.selectorLabels" . }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/part-of: hawser
{{- with .ctx.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
Selector labels. The controller finds the agents by the instance and component
labels (--agent-selector), so the HAProxy pods must keep exactly these.
*/}}
{{- define "hawser.selectorLabels" -}}
app.kubernetes.io/name: {{ include "hawser.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
{{- if .component }}
app.kubernetes.io/component: {{ .component }}
{{- end }}
{{- end }}

{{- define "hawser.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag }}
{{- if .Values.image.digest }}
{{- printf "%s:%s@%s" .Values.image.repository $tag .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository $tag }}
{{- end }}
{{- end }}

{{- define "hawser.controllerFullname" -}}
{{- printf "%s-controller" (include "hawser.fullname" .) }}
{{- end }}

{{- define "hawser.haproxyFullname" -}}
{{- printf "%s-haproxy" (include "hawser.fullname" .) }}
{{- end }}

{{- define "hawser.certsFullname" -}}
{{- printf "%s-certs" (include "hawser.fullname" .) }}
{{- end }}

{{/*
"true" when the admission webhook is on: as set, else on in cert-manager mode only.
*/}}
{{- define "hawser.webhookEnabled" -}}
{{- if hasKey .Values.webhook "enabled" }}
{{- if .Values.webhook.enabled }}true{{ end }}
{{- else if eq .Values.certificates.mode "cert-manager" }}true
{{- end }}
{{- end }}

{{/*
The Secret holding the webhook's serving certificate.
*/}}
{{- define "hawser.webhookTlsSecret" -}}
{{- if eq .Values.certificates.mode "cert-manager" }}
{{- default (printf "%s-webhook-tls" (include "hawser.fullname" .)) .Values.webhook.tlsSecret }}
{{- else }}
{{- .Values.webhook.tlsSecret }}
{{- end }}
{{- end }}

{{/*
"namespace/name" of the Service whose address goes into Ingress status, or empty.
*/}}
{{- define "hawser.publishService" -}}
{{- if .Values.controller.publishService.enabled }}
{{- if .Values.controller.publishService.pathOverride }}
{{- .Values.controller.publishService.pathOverride }}
{{- else if .Values.haproxy.service.enabled }}
{{- printf "%s/%s" .Release.Namespace (include "hawser.haproxyFullname" .) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
"true" when HAProxy binds a privileged port and so needs NET_BIND_SERVICE.
*/}}
{{- define "hawser.haproxyLowPorts" -}}
{{- if or (lt (int .Values.haproxy.ports.http) 1024) (lt (int .Values.haproxy.ports.https) 1024) (lt (int .Values.haproxy.ports.health) 1024) }}true{{ end }}
{{- end }}

{{/*
The numbers of HAProxy's stop, which agree by construction: the preStop
hook (`hawser haproxy-stop`) waits preStopSleepSeconds, soft-stops HAProxy
and gives it `drain` seconds to finish its connections, then hard-stops it
and waits up to `hardStopWait` for it to leave. `drain` is what the grace
period leaves after the wait and a margin that covers `hardStopWait`, so the
hook ends before the kubelet's SIGKILL. A grace period too short for the
wait plus a minimal drain fails the render.
Returns a dict: wait, drain, hardStopWait (seconds).
*/}}
{{- define "hawser.haproxyStop" -}}
{{- $grace := int .Values.haproxy.terminationGracePeriodSeconds }}
{{- $wait := int .Values.haproxy.preStopSleepSeconds }}
{{- $margin := 5 }}
{{- $minDrain := 5 }}
{{- $drain := sub (sub $grace $wait) $margin }}
{{- if lt $drain $minDrain }}
{{- fail (printf "haproxy.terminationGracePeriodSeconds (%d) must cover haproxy.preStopSleepSeconds (%d), a drain of at least %d s and a %d s margin for the hard stop: set it to at least %d, or lower haproxy.preStopSleepSeconds" $grace $wait $minDrain $margin (add $wait $minDrain $margin)) }}
{{- end }}
{{- dict "wait" $wait "drain" $drain "hardStopWait" 3 | toJson }}
{{- end }}

{{/*
Environment every hawser process gets: its pod, the log format and the two
certificate names each side checks the other against.
*/}}
{{- define "hawser.commonEnv" -}}
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: HAWSER_LOG_FORMAT
  value: {{ .Values.logFormat | quote }}
- name: HAWSER_AGENT_NAME
  value: {{ .Values.certificates.agentName | quote }}
- name: HAWSER_CONTROLLER_NAME
  value: {{ .Values.certificates.controllerName | quote }}
{{- end }}

{{/*
Default soft anti-affinity: spread a component's replicas over nodes.
Call with (dict "ctx" $ "component" "haproxy").
*/}}
{{- define "hawser.softAntiAffinity" -}}
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        topologyKey: kubernetes.io/hostname
        labelSelector:
          matchLabels:
            {{- include "hawser.selectorLabels" . | nindent 12 }}
{{- end }}

{{/*
Rules of the certificate jobs: read and write the three certificate Secrets,
nothing else. `create` cannot be limited by resourceNames: the API server
authorizes a create before the object (and so its name) exists, so a rule
with resourceNames never matches a create. It gets a rule of its own; it
lets the job create Secrets in this namespace only, and `hawser certs` only
ever creates the three named here.
*/}}
{{- define "hawser.certsRules" -}}
- apiGroups: [""]
  resources: ["secrets"]
  resourceNames:
    - {{ .Values.certificates.secrets.issuer | quote }}
    - {{ .Values.certificates.secrets.agentIdentity | quote }}
    - {{ .Values.certificates.secrets.controllerIdentity | quote }}
  verbs: ["get", "update"]
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["create"]
{{- end }}

{{/*
The certificate job's pod spec, shared by the bootstrap Job and the CronJob.
Call with (dict "ctx" $ "serviceAccount" "name").
*/}}
{{- define "hawser.certsPodSpec" -}}
{{- $ := .ctx -}}
serviceAccountName: {{ .serviceAccount }}
automountServiceAccountToken: true
enableServiceLinks: false
restartPolicy: OnFailure
{{- with $.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml $.Values.podSecurityContext | nindent 2 }}
{{- with $.Values.controller.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $.Values.controller.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
containers:
  - name: certs
    image: {{ include "hawser.image" $ }}
    imagePullPolicy: {{ $.Values.image.pullPolicy }}
    command: ["hawser"]
    args:
      - certs
      - renew
      - --kubernetes
      - --namespace
      - $(POD_NAMESPACE)
      - --issuer-secret
      - {{ $.Values.certificates.secrets.issuer | quote }}
      - --agent-secret
      - {{ $.Values.certificates.secrets.agentIdentity | quote }}
      - --controller-secret
      - {{ $.Values.certificates.secrets.controllerIdentity | quote }}
      - --agent-name
      - {{ $.Values.certificates.agentName | quote }}
      - --controller-name
      - {{ $.Values.certificates.controllerName | quote }}
      - --validity-days
      - {{ $.Values.certificates.validityDays | quote }}
      {{- range $.Values.certificates.bootstrap.extraArgs }}
      - {{ . | quote }}
      {{- end }}
    env:
      - name: POD_NAMESPACE
        valueFrom:
          fieldRef:
            fieldPath: metadata.namespace
      - name: HAWSER_LOG_FORMAT
        value: {{ $.Values.logFormat | quote }}
    securityContext:
      {{- toYaml $.Values.containerSecurityContext | nindent 6 }}
    resources:
      {{- toYaml $.Values.certificates.bootstrap.resources | nindent 6 }}
    volumeMounts:
      - name: tmp
        mountPath: /tmp
volumes:
  - name: tmp
    emptyDir: {}
{{- end }}
