{{/* Chart name, truncated to the 63 characters a label allows. */}}
{{- define "kured-ts.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Full name: the DaemonSet's name, which carries the lock (--ds-name). */}}
{{- define "kured-ts.fullname" -}}
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

{{- define "kured-ts.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "kured-ts.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kured-ts.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "kured-ts.labels" -}}
helm.sh/chart: {{ include "kured-ts.chart" . }}
{{ include "kured-ts.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "kured-ts.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "kured-ts.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The DaemonSet holding the lock: ours unless configuration.dsName/dsNamespace say otherwise. */}}
{{- define "kured-ts.lockDsName" -}}
{{- default (include "kured-ts.fullname" .) .Values.configuration.dsName -}}
{{- end -}}

{{- define "kured-ts.lockDsNamespace" -}}
{{- default .Release.Namespace .Values.configuration.dsNamespace -}}
{{- end -}}

{{/*
The agent's arguments, one per configuration key (flag = kebab-case of the key), sorted by key,
each only when its value differs from the agent's own default (files/agent-defaults.yaml, generated
from the flag table): a KURED_* variable in extraEnv/extraEnvVars then takes effect, as in kured,
and `kubectl describe` lists only what was chosen. Strings and numbers: `--flag=value` unless empty
("" = the agent's default); lists: one `--flag=item` per item; booleans: `--flag` or `--flag=false`.
dsName/dsNamespace are always rendered, resolved against the release.
*/}}
{{- define "kured-ts.args" -}}
{{- $defaults := .Files.Get "files/agent-defaults.yaml" | fromYaml -}}
{{- $extra := include "kured-ts.extraArgs" . | fromYamlArray -}}
{{- /* a flag in extraArgs wins over the configuration key of the same name (kured's order) */ -}}
{{- $overridden := dict -}}
{{- range $extra -}}
{{- $_ := set $overridden (regexReplaceAll "^--([^=]+).*$" . "${1}") true -}}
{{- end -}}
{{- $args := list -}}
{{- range $key, $value := .Values.configuration -}}
{{- $flag := kebabcase $key -}}
{{- $text := toString $value -}}
{{- if or (kindIs "float64" $value) (kindIs "int64" $value) (kindIs "int" $value) -}}
{{- $text = printf "%d" (int64 $value) -}}
{{- end -}}
{{- if or (eq $key "dsName") (eq $key "dsNamespace") (eq $key "useRebootSentinelHostPath") (eq $key "rebootSentinel") (eq $key "coordinator") (hasKey $overridden $flag) -}}
{{- else if kindIs "slice" $value -}}
{{- range $value -}}
{{- $args = append $args (printf "--%s=%v" $flag .) -}}
{{- end -}}
{{- else if or (eq $text "") (and (hasKey $defaults $key) (eq $text (toString (get $defaults $key)))) -}}
{{- else if kindIs "bool" $value -}}
{{- $args = append $args (ternary (printf "--%s" $flag) (printf "--%s=false" $flag) $value) -}}
{{- else -}}
{{- $args = append $args (printf "--%s=%s" $flag $text) -}}
{{- end -}}
{{- end -}}
{{- /* no coordinator installed (or followed): the agents never read its Lease */ -}}
{{- if and (not (hasKey $overridden "coordinator")) (or (not .Values.coordinator.enabled) (eq (toString .Values.configuration.coordinator) "false")) -}}
{{- $args = append $args "--coordinator=false" -}}
{{- end -}}
{{- /* the sentinel's directory is mounted at /sentinel (daemonset.yaml) */ -}}
{{- if not (hasKey $overridden "reboot-sentinel") -}}
{{- $args = append $args (printf "--reboot-sentinel=/sentinel/%s" (base (.Values.configuration.rebootSentinel | default "/var/run/reboot-required"))) -}}
{{- end -}}
{{- /* the host's files the agent reads are mounted under /host (daemonset.yaml) */ -}}
{{- if not (hasKey $overridden "host-root") -}}
{{- $args = append $args "--host-root=/host" -}}
{{- end -}}
{{- /* drainRules are rendered into a ConfigMap mounted at /etc/kured-ts/drain-rules (daemonset.yaml) */ -}}
{{- if and .Values.drainRules (not (hasKey $overridden "drain-rules")) -}}
{{- $args = append $args "--drain-rules=/etc/kured-ts/drain-rules/drain-rules.yaml" -}}
{{- end -}}
{{- /* the hooks' templates are rendered in the release namespace (hooks.yaml) */ -}}
{{- $hooks := include "kured-ts.hooks" . | fromYaml -}}
{{- range $hook, $_ := $hooks -}}
{{- $args = append $args (printf "--%s-hook=%s" $hook (include "kured-ts.hookName" (dict "root" $ "hook" $hook))) -}}
{{- end -}}
{{- if and $hooks (not .Values.configuration.hookNamespace) -}}
{{- $args = append $args (printf "--hook-namespace=%s" .Release.Namespace) -}}
{{- end -}}
{{- $args = append $args (printf "--ds-name=%s" (include "kured-ts.lockDsName" .)) -}}
{{- $args = append $args (printf "--ds-namespace=%s" (include "kured-ts.lockDsNamespace" .)) -}}
{{- $args = concat $args $extra -}}
{{- range $args }}
- {{ . | quote }}
{{- end -}}
{{- end -}}

{{/*
The agent container's extra environment (extraEnv, then extraEnvVars), values as strings, as the API
server requires (`value: 3` from --set or YAML). A YAML list. The coordinator takes its KURED_*
variables from it (kured-ts.coordinatorEnv), so both read one --concurrency.
*/}}
{{- define "kured-ts.extraEnv" -}}
{{- $env := list -}}
{{- range concat (.Values.extraEnv | default list) (.Values.extraEnvVars | default list) -}}
{{- if and (kindIs "map" .) (hasKey . "value") -}}
{{- $env = append $env (merge (dict "value" (toString .value)) (omit . "value")) -}}
{{- else -}}
{{- $env = append $env . -}}
{{- end -}}
{{- end -}}
{{- toYaml $env -}}
{{- end -}}

{{/*
The coordinator (`kured-ts coordinator`, coordinator-deployment.yaml): its names, and the agent flags
it reads (src/cli/coordinator.ts COORDINATOR_FLAGS but --kubeconfig, which the chart never sets; a
test holds the two lists together). Names are cut so that "-coordinator" still fits 63 characters.
*/}}
{{- define "kured-ts.coordinatorName" -}}
{{- printf "%s-coordinator" (include "kured-ts.fullname" . | trunc 51 | trimSuffix "-") -}}
{{- end -}}

{{- define "kured-ts.coordinatorServiceAccountName" -}}
{{- include "kured-ts.coordinatorName" . -}}
{{- end -}}

{{/* The coordinator's Lease (src/queue/coordinator-lease.ts coordinatorLeaseName), in the lock's namespace. */}}
{{- define "kured-ts.coordinatorLeaseName" -}}
{{- printf "%s-coordinator" (include "kured-ts.lockDsName" .) -}}
{{- end -}}

{{/*
Its pods' labels: a name of their own, so that neither the DaemonSet's selector nor the metrics
Service and PodMonitor (which select the agents by kured-ts.selectorLabels) match them.
*/}}
{{- define "kured-ts.coordinatorSelectorLabels" -}}
app.kubernetes.io/name: {{ printf "%s-coordinator" (include "kured-ts.name" . | trunc 51 | trimSuffix "-") }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: coordinator
{{- end -}}

{{- define "kured-ts.coordinatorLabels" -}}
{{ include "kured-ts.labels" . }}
app.kubernetes.io/component: coordinator
{{- end -}}

{{- define "kured-ts.coordinatorFlags" -}}
{{- toYaml (list "ds-name" "ds-namespace" "lock-annotation" "lock-ttl" "concurrency" "group-label" "group-concurrency" "count-unavailable" "control-plane-last" "max-unhealthy-nodes" "max-quarantined" "fleetlock-url" "log-format" "wave-start" "wave-growth" "soak" "max-failures" "group-order") -}}
{{- end -}}

{{/*
The coordinator's arguments: `coordinator`, then those of the agent's (kured-ts.args, extraArgs
included) that name one of its flags, so that the agents and the coordinator can never be given
two different values of --concurrency, the lock or the groups.
*/}}
{{- define "kured-ts.coordinatorArgs" -}}
{{- $flags := include "kured-ts.coordinatorFlags" . | fromYamlArray -}}
{{- $args := list "coordinator" -}}
{{- range (include "kured-ts.args" . | fromYamlArray) -}}
{{- if has (regexReplaceAll "^--([^=]+).*$" . "${1}") $flags -}}
{{- $args = append $args . -}}
{{- end -}}
{{- end -}}
{{- range $args }}
- {{ . | quote }}
{{- end -}}
{{- end -}}

{{/* The agent's KURED_* variables of the coordinator's flags (from extraEnv/extraEnvVars). */}}
{{- define "kured-ts.coordinatorEnv" -}}
{{- $names := list -}}
{{- range (include "kured-ts.coordinatorFlags" . | fromYamlArray) -}}
{{- $names = append $names (printf "KURED_%s" (. | upper | replace "-" "_")) -}}
{{- end -}}
{{- $env := list -}}
{{- range (include "kured-ts.extraEnv" . | fromYamlArray) -}}
{{- if and (kindIs "map" .) (has (toString .name) $names) -}}
{{- $env = append $env . -}}
{{- end -}}
{{- end -}}
{{- toYaml $env -}}
{{- end -}}

{{/*
extraArgs as flags: our list of "--flag=value" as given, or kured's map `flag: value`, where ""
is the bare flag (`force-reboot: ""` → --force-reboot), sorted by flag. A YAML list.
*/}}
{{- define "kured-ts.extraArgs" -}}
{{- $out := list -}}
{{- if kindIs "map" .Values.extraArgs -}}
{{- range $flag, $value := .Values.extraArgs -}}
{{- $name := trimPrefix "--" $flag -}}
{{- if eq (toString $value) "" -}}
{{- $out = append $out (printf "--%s" $name) -}}
{{- else if kindIs "float64" $value -}}
{{- $out = append $out (printf "--%s=%v" $name (int64 $value)) -}}
{{- else -}}
{{- $out = append $out (printf "--%s=%v" $name $value) -}}
{{- end -}}
{{- end -}}
{{- else -}}
{{- range .Values.extraArgs -}}
{{- $out = append $out (toString .) -}}
{{- end -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{/*
A generated policy file (files/*-admission-policy.yaml) with an installation's values in place of its
placeholders (__KURED_TS_<key>__): YAML text of the specs by kind. dict "root" . "file" F "values" V.
*/}}
{{- define "kured-ts.policySpecs" -}}
{{- $text := .root.Files.Get .file -}}
{{- range $key, $value := .values -}}
{{- if regexMatch "['\"\\\\]" $value -}}
{{- fail (printf "admissionPolicy: %s may hold no quote or backslash: %s" $key $value) -}}
{{- end -}}
{{- $text = replace (printf "__KURED_TS_%s__" $key) $value $text -}}
{{- end -}}
{{- $text -}}
{{- end -}}

{{/*
Combinations the agent would only discover on the node: fail the install instead.
*/}}
{{- define "kured-ts.validate" -}}
{{- $c := .Values.configuration -}}
{{- $hooks := include "kured-ts.hooks" . | fromYaml -}}
{{- if and (hasKey $hooks "before-reboot") $c.beforeRebootHook -}}
{{- fail "hooks.beforeReboot renders the before-reboot hook's template: leave configuration.beforeRebootHook empty" -}}
{{- end -}}
{{- if and (hasKey $hooks "after-reboot") $c.afterRebootHook -}}
{{- fail "hooks.afterReboot renders the after-reboot hook's template: leave configuration.afterRebootHook empty" -}}
{{- end -}}
{{- if and $hooks $c.hookNamespace (ne $c.hookNamespace .Release.Namespace) -}}
{{- fail "hooks.*: the hooks' templates are rendered in the release namespace; leave configuration.hookNamespace empty" -}}
{{- end -}}
{{- if (.Values.podSecurityPolicy | default dict).create -}}
{{- fail "podSecurityPolicy.create: PodSecurityPolicy was removed in Kubernetes 1.25; label the namespace for the privileged Pod Security level instead (pod-security.kubernetes.io/enforce: privileged)" -}}
{{- end -}}
{{- range (include "kured-ts.extraArgs" . | fromYamlArray) -}}
{{- $flag := regexReplaceAll "^--([^=]+).*$" . "${1}" -}}
{{- if has $flag (list "concurrency" "lock-annotation" "prefer-no-schedule-taint" "drain-grace-period" "ds-name" "ds-namespace" "group-label" "group-concurrency") -}}
{{- fail (printf "extraArgs %s: set configuration.%s instead; the admission policy and RBAC are rendered from it, and would deny the agent's writes" $flag (camelcase $flag | untitle)) -}}
{{- end -}}
{{- end -}}
{{- if eq (toString $c.useRebootSentinelHostPath) "false" -}}
{{- fail "configuration.useRebootSentinelHostPath false: kured-ts reads the sentinel through its hostPath mount; to test on the host instead, set configuration.rebootSentinelCommand (e.g. \"test -f /var/run/reboot-required\")" -}}
{{- end -}}
{{- if and (eq ($c.rebootMethod | default "command") "signal") (ne ($c.rebootSentinelCommand | toString) "") (eq ($c.hostExec | default "nsenter") "nsenter") -}}
{{- fail "configuration.rebootSentinelCommand runs through nsenter, which needs a privileged pod: use rebootMethod \"command\" or the file sentinel (rebootSentinel) with rebootMethod \"signal\"" -}}
{{- end -}}
{{- /* The sentinel's whole directory is mounted from the host (at /sentinel): not a system directory. */ -}}
{{- $dir := dir ($c.rebootSentinel | default "/var/run/reboot-required") -}}
{{- if has $dir (list "/" "/etc" "/usr" "/bin" "/sbin" "/lib" "/lib64" "/proc" "/sys" "/dev" "/app" "/tmp") -}}
{{- fail (printf "configuration.rebootSentinel %s: its directory %s would be mounted into the container, a system directory of the host; put the sentinel in a directory of its own (e.g. /var/run)" $c.rebootSentinel $dir) -}}
{{- end -}}
{{- if has $c.metricsHost (list "127.0.0.1" "localhost" "::1") -}}
{{- fail (printf "configuration.metricsHost %s: the kubelet probes /healthz and /readyz on the pod's IP; leave metricsHost empty" $c.metricsHost) -}}
{{- end -}}
{{- end -}}

{{/* The agent container's securityContext as the reboot method needs it (daemonset.yaml). */}}
{{- define "kured-ts.securityContext" -}}
{{- if eq (.Values.configuration.rebootMethod | default "command") "command" -}}
privileged: true
runAsUser: 0
runAsGroup: 0
readOnlyRootFilesystem: true
{{- else -}}
privileged: false
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsUser: 0
runAsGroup: 0
capabilities:
  drop: ["ALL"]
  add: ["KILL"]
seccompProfile:
  type: RuntimeDefault
{{- end -}}
{{- end -}}

{{/*
The hooks configured (hooks.beforeReboot, hooks.afterReboot with a template), as YAML: a map from the
hook's name (before-reboot, after-reboot) to its Job spec; "" when none is.
*/}}
{{- define "kured-ts.hooks" -}}
{{- $hooks := dict -}}
{{- $given := .Values.hooks | default dict -}}
{{- if ($given.beforeReboot | default dict).template -}}{{- $_ := set $hooks "before-reboot" $given.beforeReboot -}}{{- end -}}
{{- if ($given.afterReboot | default dict).template -}}{{- $_ := set $hooks "after-reboot" $given.afterReboot -}}{{- end -}}
{{- if $hooks -}}{{- toYaml $hooks -}}{{- end -}}
{{- end -}}

{{/* A hook's template (a CronJob): at most 52 characters, as CronJob names are. */}}
{{- define "kured-ts.hookName" -}}
{{- printf "%s-%s" (include "kured-ts.fullname" .root | trunc 38 | trimSuffix "-") .hook -}}
{{- end -}}
