{{/* Names. */}}
{{- define "ferry.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ferry.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels of every object. */}}
{{- define "ferry.labels" -}}
app.kubernetes.io/name: {{ include "ferry.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* Selector labels of one component: (dict "root" $ "component" "broker" "group" "broker-a"). */}}
{{- define "ferry.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ferry.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{ include "ferry.componentLabels" . }}
{{- end -}}

{{/* The component's own labels, added to ferry.labels on its objects. */}}
{{- define "ferry.componentLabels" -}}
app.kubernetes.io/component: {{ .component }}
{{- if .group }}
ferry-group: {{ .group }}
{{- end }}
{{- end -}}

{{- define "ferry.image" -}}
{{- printf "%s:%s" .Values.image.repository (toString .Values.image.tag) -}}
{{- end -}}

{{/* Name server addresses: each pod's DNS name under the headless Service. Short names
resolve in the pods' own namespace, so the plain manifests work in any namespace. */}}
{{- define "ferry.namesrvAddrs" -}}
{{- $full := include "ferry.fullname" . -}}
{{- $addrs := list -}}
{{- range $i := until (int .Values.namesrv.replicas) -}}
{{- $addrs = append $addrs (printf "%s-namesrv-%d.%s-namesrv:%d" $full $i $full (int $.Values.ports.namesrv)) -}}
{{- end -}}
{{- toJson $addrs -}}
{{- end -}}

{{- define "ferry.controllerAddrs" -}}
{{- $full := include "ferry.fullname" . -}}
{{- $addrs := list -}}
{{- range $i := until (int .Values.controller.replicas) -}}
{{- $addrs = append $addrs (printf "%s-controller-%d.%s-controller:%d" $full $i $full (int $.Values.ports.controller)) -}}
{{- end -}}
{{- toJson $addrs -}}
{{- end -}}

{{/* Raft peers: nodeId (the pod name) @ the pod's DNS name : Raft port. */}}
{{- define "ferry.controllerPeers" -}}
{{- $full := include "ferry.fullname" . -}}
{{- $peers := list -}}
{{- range $i := until (int .Values.controller.replicas) -}}
{{- $peers = append $peers (printf "%s-controller-%d@%s-controller-%d.%s-controller:%d" $full $i $full $i $full (int $.Values.ports.raft)) -}}
{{- end -}}
{{- toJson $peers -}}
{{- end -}}

{{/* Mount paths of the Secrets. */}}
{{- define "ferry.aclFile" -}}/etc/ferry/acl/plain_acl.yml{{- end -}}
{{- define "ferry.tlsDir" -}}/etc/ferry/tls{{- end -}}

{{- define "ferry.aclSecret" -}}
{{- default (printf "%s-acl" (include "ferry.fullname" .)) .Values.acl.existingSecret -}}
{{- end -}}

{{- define "ferry.tlsSecret" -}}
{{- default (printf "%s-tls" (include "ferry.fullname" .)) .Values.tls.existingSecret -}}
{{- end -}}

{{/* The ACL and TLS keys of one section (namesrv, controller, broker), as a dict. */}}
{{- define "ferry.securityKeys" -}}
{{- $keys := dict -}}
{{- if .Values.acl.enabled -}}
{{- $_ := set $keys "aclEnable" true -}}
{{- $_ := set $keys "aclFile" (include "ferry.aclFile" .) -}}
{{- end -}}
{{- if ne .Values.tls.mode "disabled" -}}
{{- $dir := include "ferry.tlsDir" . -}}
{{- $_ := set $keys "tlsMode" .Values.tls.mode -}}
{{- $_ := set $keys "tlsCertFile" (printf "%s/tls.crt" $dir) -}}
{{- $_ := set $keys "tlsKeyFile" (printf "%s/tls.key" $dir) -}}
{{- if .Values.tls.clientCA -}}
{{- $_ := set $keys "tlsClientCaFile" (printf "%s/ca.crt" $dir) -}}
{{- $_ := set $keys "tlsRequireClientCert" .Values.tls.requireClientCert -}}
{{- end -}}
{{- end -}}
{{- toYaml $keys -}}
{{- end -}}

{{/* Configuration files (the keys of conf/*.yaml; `ferry config` lists them). The
chart's keys override the values' `config` maps. */}}
{{- define "ferry.namesrvConfig" -}}
{{- $managed := dict "listen" (printf "0.0.0.0:%d" (int .Values.ports.namesrv)) "httpListen" (printf "0.0.0.0:%d" (int .Values.ports.http)) "kvConfigPath" "/data/kvConfig.json" -}}
{{- $managed = mergeOverwrite $managed (include "ferry.securityKeys" . | fromYaml) -}}
{{- $cfg := mergeOverwrite (deepCopy .Values.namesrv.config) $managed -}}
{{- toYaml (dict "namesrv" $cfg "log" .Values.log) -}}
{{- end -}}

{{- define "ferry.controllerConfig" -}}
{{- $managed := dict "listen" (printf "0.0.0.0:%d" (int .Values.ports.controller)) "raftListen" (printf "0.0.0.0:%d" (int .Values.ports.raft)) "peers" (include "ferry.controllerPeers" . | fromJsonArray) "dataDir" "/data" "httpListen" (printf "0.0.0.0:%d" (int .Values.ports.http)) -}}
{{- $managed = mergeOverwrite $managed (include "ferry.securityKeys" . | fromYaml) -}}
{{- $cfg := mergeOverwrite (deepCopy .Values.controller.config) $managed -}}
{{- toYaml (dict "controller" $cfg "log" .Values.log) -}}
{{- end -}}

{{/* (dict "root" $ "group" $group) */}}
{{- define "ferry.brokerConfig" -}}
{{- $root := .root -}}
{{- $v := $root.Values -}}
{{- $managed := dict "brokerName" .group.name "clusterName" $v.clusterName "controllerMode" true "controllerAddrs" (include "ferry.controllerAddrs" $root | fromJsonArray) "namesrvAddrs" (include "ferry.namesrvAddrs" $root | fromJsonArray) "listen" (printf "0.0.0.0:%d" (int $v.ports.broker)) "haListen" (printf "0.0.0.0:%d" (int $v.ports.ha)) "httpListen" (printf "0.0.0.0:%d" (int $v.ports.http)) "dataDir" "/data" -}}
{{- $managed = mergeOverwrite $managed (include "ferry.securityKeys" $root | fromYaml) -}}
{{- if ne $v.tls.mode "disabled" -}}
{{- $_ := set $managed "tlsToNamesrv" true -}}
{{- end -}}
{{- $cfg := mergeOverwrite (deepCopy $v.broker.config) (deepCopy (default dict .group.config)) $managed -}}
{{- toYaml (dict "broker" $cfg "log" $v.log) -}}
{{- end -}}

{{/* Pod-level scheduling of one component: (dict "root" $ "component" "broker" "group" "broker-a" "values" .Values.broker). */}}
{{- define "ferry.scheduling" -}}
{{- $sel := include "ferry.selectorLabels" . -}}
affinity:
  podAntiAffinity:
    {{- if eq .root.Values.antiAffinity "hard" }}
    requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector:
          matchLabels:
            {{- $sel | nindent 12 }}
        topologyKey: kubernetes.io/hostname
    {{- else }}
    preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        podAffinityTerm:
          labelSelector:
            matchLabels:
              {{- $sel | nindent 14 }}
          topologyKey: kubernetes.io/hostname
    {{- end }}
{{- if .root.Values.zoneSpread }}
topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: topology.kubernetes.io/zone
    whenUnsatisfiable: ScheduleAnyway
    labelSelector:
      matchLabels:
        {{- $sel | nindent 8 }}
{{- end }}
{{- with .values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .root.Values.podSecurityContext | nindent 2 }}
{{- end -}}

{{- define "ferry.httpScheme" -}}
{{- if eq .Values.tls.mode "enforcing" -}}HTTPS{{- else -}}HTTP{{- end -}}
{{- end -}}

{{/* Pod annotations: Prometheus scraping and the checksum of the config the pod runs
(a changed config makes the StatefulSet's pods out of date). (dict "root" $ "config" "..." "values" .Values.broker) */}}
{{- define "ferry.podAnnotations" -}}
checksum/config: {{ .config | sha256sum }}
{{- if .root.Values.metrics.podAnnotations }}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .root.Values.ports.http | quote }}
prometheus.io/path: /metrics
prometheus.io/scheme: {{ include "ferry.httpScheme" .root | lower | quote }}
{{- end }}
{{- with .values.podAnnotations }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The container's probes, ports-independent: the http port is named "http". */}}
{{- define "ferry.probes" -}}
{{- $scheme := include "ferry.httpScheme" . -}}
{{- $p := .Values.probes -}}
startupProbe:
  httpGet: {path: /healthz, port: http, scheme: {{ $scheme }}}
  periodSeconds: {{ $p.startup.periodSeconds }}
  failureThreshold: {{ $p.startup.failureThreshold }}
  timeoutSeconds: {{ $p.startup.timeoutSeconds }}
livenessProbe:
  httpGet: {path: /healthz, port: http, scheme: {{ $scheme }}}
  periodSeconds: {{ $p.liveness.periodSeconds }}
  failureThreshold: {{ $p.liveness.failureThreshold }}
  timeoutSeconds: {{ $p.liveness.timeoutSeconds }}
readinessProbe:
  httpGet: {path: /readyz, port: http, scheme: {{ $scheme }}}
  periodSeconds: {{ $p.readiness.periodSeconds }}
  failureThreshold: {{ $p.readiness.failureThreshold }}
  timeoutSeconds: {{ $p.readiness.timeoutSeconds }}
{{- end -}}

{{/* Volume mounts and volumes of the config file (key of the ConfigMap) and the Secrets. */}}
{{- define "ferry.volumeMounts" -}}
- name: data
  mountPath: /data
- name: config
  mountPath: /etc/ferry/config
  readOnly: true
{{- if .Values.acl.enabled }}
- name: acl
  mountPath: /etc/ferry/acl
  readOnly: true
{{- end }}
{{- if ne .Values.tls.mode "disabled" }}
- name: tls
  mountPath: {{ include "ferry.tlsDir" . }}
  readOnly: true
{{- end }}
{{- end -}}

{{/* (dict "root" $ "key" "broker-a.yaml") */}}
{{- define "ferry.volumes" -}}
- name: config
  configMap:
    name: {{ include "ferry.fullname" .root }}-config
    items:
      - key: {{ .key }}
        path: {{ .key }}
{{- if .root.Values.acl.enabled }}
- name: acl
  secret:
    secretName: {{ include "ferry.aclSecret" .root }}
    items:
      - key: plain_acl.yml
        path: plain_acl.yml
{{- end }}
{{- if ne .root.Values.tls.mode "disabled" }}
- name: tls
  secret:
    secretName: {{ include "ferry.tlsSecret" .root }}
    items:
      - key: tls.crt
        path: tls.crt
      - key: tls.key
        path: tls.key
      {{- if .root.Values.tls.clientCA }}
      - key: ca.crt
        path: ca.crt
      {{- end }}
{{- end }}
{{- end -}}

{{/* The per-pod volume. (dict "root" $ "storage" .Values.broker.storage) */}}
{{- define "ferry.volumeClaim" -}}
- metadata:
    name: data
  spec:
    accessModes: [ReadWriteOnce]
    {{- with .storage.storageClassName }}
    storageClassName: {{ . }}
    {{- end }}
    resources:
      requests:
        storage: {{ .storage.size }}
{{- end -}}

{{/* Checks of the values that the templates rely on. */}}
{{- define "ferry.validate" -}}
{{- $n := int .Values.controller.replicas -}}
{{- if or (lt $n 3) (eq (mod $n 2) 0) -}}
{{- fail (printf "controller.replicas must be an odd number of at least 3, got %d" $n) -}}
{{- end -}}
{{- if lt (int .Values.namesrv.replicas) 1 -}}
{{- fail "namesrv.replicas must be at least 1" -}}
{{- end -}}
{{- if not (has .Values.tls.mode (list "disabled" "permissive" "enforcing")) -}}
{{- fail (printf "tls.mode must be disabled, permissive or enforcing, got %q" .Values.tls.mode) -}}
{{- end -}}
{{- if and (eq .Values.tls.mode "enforcing") .Values.tls.requireClientCert -}}
{{- fail "tls.requireClientCert cannot be used with tls.mode enforcing: the kubelet's HTTPS probes present no client certificate" -}}
{{- end -}}
{{- if not (has .Values.antiAffinity (list "soft" "hard")) -}}
{{- fail (printf "antiAffinity must be soft or hard, got %q" .Values.antiAffinity) -}}
{{- end -}}
{{- if not .Values.broker.groups -}}
{{- fail "broker.groups must list at least one group" -}}
{{- end -}}
{{- $seen := dict -}}
{{- range .Values.broker.groups -}}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" (toString .name)) -}}
{{- fail (printf "broker.groups: name %q must be lowercase letters, digits and '-' (a brokerName and a Kubernetes name)" (toString .name)) -}}
{{- end -}}
{{- if or (eq .name "namesrv") (eq .name "controller") (eq .name "config") (eq .name "acl") (eq .name "tls") -}}
{{- fail (printf "broker.groups: name %q is taken by the chart's own objects" .name) -}}
{{- end -}}
{{- if hasKey $seen .name -}}
{{- fail (printf "broker.groups: %q is listed twice" .name) -}}
{{- end -}}
{{- $_ := set $seen .name true -}}
{{- if lt (int (default $.Values.broker.replicas .replicas)) 2 -}}
{{- fail (printf "broker.groups: %q needs at least 2 replicas (a master and a slave)" .name) -}}
{{- end -}}
{{- end -}}
{{- if and .Values.acl.enabled (not .Values.acl.existingSecret) (or (not .Values.acl.accounts) (not .Values.acl.accessKey) (not .Values.acl.secretKey)) -}}
{{- fail "acl.enabled needs acl.existingSecret, or acl.accounts, acl.accessKey and acl.secretKey" -}}
{{- end -}}
{{- if and (ne .Values.tls.mode "disabled") (not .Values.tls.existingSecret) (or (not .Values.tls.cert) (not .Values.tls.key)) -}}
{{- fail "tls.mode needs tls.existingSecret, or tls.cert and tls.key" -}}
{{- end -}}
{{- if and .Values.tls.clientCA (not .Values.tls.existingSecret) (not .Values.tls.ca) -}}
{{- fail "tls.clientCA needs tls.existingSecret (with ca.crt) or tls.ca" -}}
{{- end -}}
{{- end -}}
