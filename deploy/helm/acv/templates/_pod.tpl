{{/*
The pod template of an acv workload. dict: root, component (api, console, relay, log-writer),
values (the component's values).

Probes: liveness asks /healthz, which answers while the process runs, so a dependency outage
never restarts a pod. Readiness asks /readyz, which answers 503 only when a dependency the
process's roles cannot work without is down (service.Config.ReadinessGates): an API replica
stays ready while Kafka or PostgreSQL is down, since it still verifies; a relay goes unready
without Redis or Kafka, a log writer without Kafka or PostgreSQL. The API is probed on its own
port, as the Service's traffic arrives there; the others on the debug listener.
*/}}
{{- define "acv.podTemplate" -}}
{{- $root := .root }}
{{- $c := .values }}
{{- $component := .component }}
{{- $probePort := ternary "http" "metrics" (eq $component "api") }}
{{- $preStop := int (default 0 $c.preStopSleepSeconds) }}
{{- $grace := int $c.terminationGracePeriodSeconds }}
{{- if le $grace (add $preStop $root.Values.drainSeconds) }}
{{- fail (printf "%s: terminationGracePeriodSeconds (%d) must exceed preStopSleepSeconds (%d) + drainSeconds (%d)" $component $grace $preStop (int $root.Values.drainSeconds)) }}
{{- end }}
{{- $opensKeys := or (eq $component "api") (eq $component "console") }}
metadata:
  labels:
    {{- include "acv.labels" (dict "root" $root "component" $component) | nindent 4 }}
  {{- if or $c.podAnnotations $root.Values.secret.create }}
  annotations:
    {{- if $root.Values.secret.create }}
    # Rolls the pods when the chart-made Secret changes.
    checksum/secret: {{ printf "%s\n%s" $root.Values.secret.masterKey $root.Values.secret.databaseURL | sha256sum }}
    {{- end }}
    {{- with $c.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- end }}
spec:
  serviceAccountName: {{ include "acv.serviceAccountName" $root }}
  automountServiceAccountToken: false
  # No Service environment variables: acv reads its settings only.
  enableServiceLinks: false
  {{- with $root.Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    {{- toYaml $root.Values.podSecurityContext | nindent 4 }}
  terminationGracePeriodSeconds: {{ $grace }}
  {{- $spread := $root.Values.topologySpread }}
  {{- if or $spread.zone.enabled $spread.node.enabled }}
  topologySpreadConstraints:
    {{- range $key, $topology := dict "zone" "topology.kubernetes.io/zone" "node" "kubernetes.io/hostname" }}
    {{- $s := index $spread $key }}
    {{- if $s.enabled }}
    - topologyKey: {{ $topology }}
      maxSkew: {{ $s.maxSkew }}
      whenUnsatisfiable: {{ $s.whenUnsatisfiable }}
      labelSelector:
        matchLabels:
          {{- include "acv.selectorLabels" (dict "root" $root "component" $component) | nindent 10 }}
      matchLabelKeys:
        - pod-template-hash
    {{- end }}
    {{- end }}
  {{- end }}
  {{- with $c.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $c.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $c.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  containers:
    - name: acv
      image: {{ include "acv.image" $root }}
      imagePullPolicy: {{ $root.Values.image.pullPolicy }}
      args: ["serve"]
      env:
        {{- include "acv.env" (dict "root" $root "component" $component "values" $c) | trim | nindent 8 }}
      ports:
        {{- if eq $component "api" }}
        - name: http
          containerPort: {{ $root.Values.ports.http }}
          protocol: TCP
        {{- end }}
        {{- if eq $component "console" }}
        - name: admin
          containerPort: {{ $root.Values.ports.admin }}
          protocol: TCP
        {{- end }}
        - name: metrics
          containerPort: {{ $root.Values.ports.metrics }}
          protocol: TCP
      startupProbe:
        httpGet:
          path: /healthz
          port: {{ $probePort }}
        periodSeconds: 2
        timeoutSeconds: 2
        # Up to 2 minutes to start: the API mirrors every API key into Redis first.
        failureThreshold: 60
      livenessProbe:
        httpGet:
          path: /healthz
          port: {{ $probePort }}
        periodSeconds: 10
        timeoutSeconds: 3
        failureThreshold: 3
      readinessProbe:
        httpGet:
          path: /readyz
          port: {{ $probePort }}
        periodSeconds: 5
        # /readyz gives each dependency's probe 2 s.
        timeoutSeconds: 3
        failureThreshold: 2
      {{- if gt $preStop 0 }}
      lifecycle:
        preStop:
          sleep:
            seconds: {{ $preStop }}
      {{- end }}
      resources:
        {{- toYaml $c.resources | trim | nindent 8 }}
      securityContext:
        {{- toYaml $root.Values.securityContext | trim | nindent 8 }}
      volumeMounts:
        - name: tmp
          mountPath: /tmp
        {{- if $opensKeys }}
        - name: master-key
          mountPath: /etc/acv/master-key
          readOnly: true
        {{- end }}
  volumes:
    - name: tmp
      emptyDir:
        sizeLimit: 64Mi
    {{- if $opensKeys }}
    - name: master-key
      secret:
        secretName: {{ include "acv.secretName" $root }}
        defaultMode: 0440
        items:
          - key: {{ $root.Values.secret.masterKeyKey }}
            path: {{ $root.Values.secret.masterKeyKey }}
    {{- end }}
{{- end }}

{{/*
The environment of an acv process, by the names of README's configuration table
(internal/settings.Service). dict: root, component (api, console, relay, log-writer, migrate),
values (the component's values).
*/}}
{{- define "acv.env" -}}
{{- $root := .root }}
{{- $component := .component }}
{{- $v := $root.Values }}
{{- $managed := list "ACV_ROLES" "ACV_INSTANCE" "ACV_HTTP_ADDR" "ACV_ADMIN_ADDR" "ACV_DEBUG_ADDR" "ACV_REDIS_URL" "ACV_DATABASE_URL" "ACV_PIPELINE" "KAFKA_BROKERS" "ACV_KAFKA_TOPIC" "ACV_KAFKA_PARTITIONS" "ACV_CONSUMER_GROUP" "ACV_SHUTDOWN_DRAIN" "ACV_MASTER_KEY" "ACV_MASTER_KEY_FILE" "OTEL_SERVICE_NAME" }}
{{- $extra := merge (deepCopy (default dict .values.env)) (deepCopy (default dict $v.env)) }}
{{- range $name, $_ := $extra }}
{{- if has $name $managed }}
{{- fail (printf "env %s is set by the chart (see values.yaml); remove it from env" $name) }}
{{- end }}
{{- end }}
{{- $kafka := include "acv.kafka" $root }}
{{- if ne $component "migrate" }}
- name: ACV_ROLES
  value: {{ get (dict "api" "api" "console" "api" "relay" "relay" "log-writer" "consumer") $component }}
- name: ACV_INSTANCE
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: ACV_DEBUG_ADDR
  value: {{ printf ":%v" $v.ports.metrics | quote }}
{{- end }}
{{- if eq $component "api" }}
- name: ACV_HTTP_ADDR
  value: {{ printf ":%v" $v.ports.http | quote }}
# The console runs in processes of its own.
- name: ACV_ADMIN_ADDR
  value: ""
{{- end }}
{{- if eq $component "console" }}
# This process serves the console; its client API port stays on loopback.
- name: ACV_HTTP_ADDR
  value: {{ printf "127.0.0.1:%v" $v.ports.http | quote }}
- name: ACV_ADMIN_ADDR
  value: {{ printf ":%v" $v.ports.admin | quote }}
{{- end }}
{{- if ne $component "migrate" }}
- name: ACV_REDIS_URL
  {{- if $v.redis.urlSecretKey }}
  valueFrom:
    secretKeyRef:
      name: {{ include "acv.secretName" $root }}
      key: {{ $v.redis.urlSecretKey }}
  {{- else }}
  value: {{ required "redis.url: the Redis Cluster's URL" $v.redis.url | quote }}
  {{- end }}
{{- end }}
- name: ACV_DATABASE_URL
  valueFrom:
    secretKeyRef:
      {{- if $v.secret.databaseURLFrom.name }}
      name: {{ $v.secret.databaseURLFrom.name }}
      key: {{ required "secret.databaseURLFrom.key: the key of the database URL" $v.secret.databaseURLFrom.key }}
      {{- else }}
      name: {{ include "acv.secretName" $root }}
      key: {{ $v.secret.databaseURLKey }}
      {{- end }}
{{- if ne $component "migrate" }}
- name: ACV_PIPELINE
  value: {{ ternary "kafka" "direct" (eq $kafka "true") }}
{{- end }}
{{- if and $kafka (has $component (list "relay" "log-writer")) }}
- name: KAFKA_BROKERS
  value: {{ $v.kafka.brokers | quote }}
- name: ACV_KAFKA_TOPIC
  value: {{ $v.kafka.topic | quote }}
- name: ACV_KAFKA_PARTITIONS
  value: {{ $v.kafka.partitions | quote }}
- name: ACV_CONSUMER_GROUP
  value: {{ $v.kafka.consumerGroup | quote }}
{{- end }}
{{- if has $component (list "api" "console") }}
- name: ACV_SHUTDOWN_DRAIN
  value: {{ printf "%ds" (int $v.drainSeconds) | quote }}
- name: ACV_MASTER_KEY_FILE
  value: /etc/acv/master-key/{{ $v.secret.masterKeyKey }}
{{- end }}
{{- if ne $component "migrate" }}
- name: OTEL_SERVICE_NAME
  value: acv-{{ $component }}
{{- end }}
{{- range $name := keys $extra | sortAlpha }}
- name: {{ $name }}
  value: {{ index $extra $name | toString | quote }}
{{- end }}
{{- end }}
