#!/usr/bin/env python3
"""Checks the Kubernetes manifests of deploy/ offline, as rendered by `kubectl kustomize deploy/`,
with the Secrets deploy/make-secrets.sh prints:

- every object's kind, apiVersion and required fields; selectors that match their pods' labels;
  Services whose target ports are container ports; the StatefulSet's headless Service;
- the cluster's shape: the server StatefulSet's replicas and EMBER_INITIAL_SERVERS, the trainer
  Job's completions and parallelism, against cluster.servers and cluster.trainers of the config
  in the ConfigMap;
- probes: httpGet on /metrics at the port the container's --metrics-bind serves;
- every volume a mount names, every ConfigMap and Secret a volume names, and every file under a
  mount that an argument names (a key in the ConfigMap or Secret);
- every flag of every container's command, preStop hook and deploy/ember-pod.sh's additions
  (run in its dry-run mode), against what `ember ROLE --help` of the real binary lists.

usage: check_deploy.py RENDERED.yaml SECRETS.yaml EMBER_BINARY EMBER_POD_SH
Prints each problem and exits 1 if there is any.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

API_VERSIONS = {"Deployment": "apps/v1", "StatefulSet": "apps/v1", "Job": "batch/v1",
                "Service": "v1", "ConfigMap": "v1", "Secret": "v1", "PersistentVolumeClaim": "v1"}
WORKLOADS = ("Deployment", "StatefulSet", "Job")
problems = []


def problem(where, text):
    problems.append(f"{where}: {text}")


def load(path):
    with open(path) as f:
        return [doc for doc in yaml.safe_load_all(f) if doc]


def help_flags(ember, role, cache={}):
    if role not in cache:
        out = subprocess.run([ember, role, "--help"], capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            cache[role] = None
        else:
            flags = set()
            for match in re.finditer(r"--(\[no-\])?([a-z][a-z0-9-]*)", out.stdout):
                flags.add(match.group(2))
                if match.group(1):
                    flags.add("no-" + match.group(2))
            cache[role] = flags
    return cache[role]


def substitute(tokens, env):
    """Kubernetes' $(VAR) expansion of command and args from the container's env."""
    return [re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env.get(m.group(1), m.group(0)), t)
            for t in tokens]


def flag_value(argv, name):
    for i, token in enumerate(argv):
        if token == "--" + name and i + 1 < len(argv):
            return argv[i + 1]
        if token.startswith("--" + name + "="):
            return token.split("=", 1)[1]
    return None


def check_ember_argv(where, argv, ember):
    if len(argv) < 2 or os.path.basename(argv[0]) != "ember":
        problem(where, f"does not run ember: {argv}")
        return
    role = argv[1]
    flags = help_flags(ember, role)
    if flags is None:
        problem(where, f"`ember {role} --help` fails: no such command")
        return
    for token in argv[2:]:
        if token.startswith("--"):
            name = token[2:].split("=", 1)[0]
            if name not in flags:
                problem(where, f"--{name} is not a flag of `ember {role}` (its --help lists "
                               f"{', '.join(sorted(flags))})")
        elif "$(" in token:
            problem(where, f"unexpanded variable in {token!r}")


def final_argv(where, argv, env, ember_pod, data_dir):
    """argv as the container runs it: ember-pod.sh is run in its dry-run mode."""
    if os.path.basename(argv[0]) != "ember-pod.sh":
        return argv
    run_env = dict(os.environ, EMBER_POD_DRY_RUN="1", EMBER="ember", EMBER_DATA_DIR=data_dir)
    run_env.update({k: v for k, v in env.items() if not k.startswith("EMBER_DATA_DIR")})
    out = subprocess.run([ember_pod] + argv[1:], env=run_env, capture_output=True, text=True,
                         timeout=30)
    if out.returncode != 0:
        problem(where, f"ember-pod.sh {' '.join(argv[1:])} fails: {out.stderr.strip()}")
        return []
    return out.stdout.splitlines()


def main():
    rendered, secrets_path, ember, ember_pod = sys.argv[1:5]
    docs = load(rendered)
    secrets = {d["metadata"]["name"]: d for d in load(secrets_path) if d.get("kind") == "Secret"}
    objects = {}
    for doc in docs:
        kind, meta = doc.get("kind"), doc.get("metadata") or {}
        where = f"{kind}/{meta.get('name')}"
        if kind not in API_VERSIONS:
            problem(where, "unexpected kind")
            continue
        if doc.get("apiVersion") != API_VERSIONS[kind]:
            problem(where, f"apiVersion {doc.get('apiVersion')}, expected {API_VERSIONS[kind]}")
        if not meta.get("name"):
            problem(where, "no metadata.name")
        objects.setdefault(kind, {})[meta.get("name")] = doc
    for kind, names in (("Deployment", ["ember-scheduler"]), ("StatefulSet", ["ember-server"]),
                        ("Job", ["ember-trainer"]),
                        ("Service", ["ember-scheduler", "ember-server"])):
        for name in names:
            if name not in objects.get(kind, {}):
                problem(f"{kind}/{name}", "missing")
    for name in ("ember-keyring", "ember-key-scheduler", "ember-key-server", "ember-key-trainer",
                 "ember-key-admin"):
        if name not in secrets:
            problem(f"Secret/{name}", "make-secrets.sh does not make it")
    configmaps = objects.get("ConfigMap", {})
    config_maps = [c for n, c in configmaps.items() if n.startswith("ember-config")]
    if len(config_maps) != 1 or "job.yaml" not in config_maps[0].get("data", {}):
        problem("ConfigMap/ember-config", "missing, or without job.yaml")
        return finish()
    job = yaml.safe_load(config_maps[0]["data"]["job.yaml"])
    cluster = job.get("cluster", {})
    if job.get("security", {}).get("keyring") is None:
        problem("ConfigMap/ember-config", "job.yaml trusts no keyring (security.keyring)")

    # Services by name, with the pods they select.
    services = objects.get("Service", {})
    pod_ports = {}  # workload name -> {port name: number}
    data_dir = tempfile.mkdtemp(prefix="ember-deploy-check-")
    with open(os.path.join(data_dir, "server-identity"), "w") as f:
        f.write("3 tcp://0.0.0.0:40000\n")

    for kind in WORKLOADS:
        for name, doc in objects.get(kind, {}).items():
            where = f"{kind}/{name}"
            spec = doc.get("spec", {})
            template = spec.get("template", {})
            labels = template.get("metadata", {}).get("labels", {})
            selector = spec.get("selector", {}).get("matchLabels")
            if kind != "Job":
                if not selector or any(labels.get(k) != v for k, v in selector.items()):
                    problem(where, f"selector {selector} does not match the pod labels {labels}")
            pod = template.get("spec", {})
            containers = pod.get("containers") or []
            if not containers:
                problem(where, "no containers")
            volumes = {v["name"]: v for v in pod.get("volumes", [])}
            claims = {c["metadata"]["name"] for c in spec.get("volumeClaimTemplates", [])}
            for volume_name, volume in volumes.items():
                if "configMap" in volume and volume["configMap"]["name"] not in configmaps:
                    problem(where, f"volume {volume_name}: no ConfigMap {volume['configMap']['name']}")
                if "secret" in volume and volume["secret"]["secretName"] not in secrets:
                    problem(where, f"volume {volume_name}: no Secret {volume['secret']['secretName']}")
                claim = volume.get("persistentVolumeClaim", {}).get("claimName")
                if claim is not None and claim not in objects.get("PersistentVolumeClaim", {}):
                    problem(where, f"volume {volume_name}: no PersistentVolumeClaim {claim}")
            for container in containers:
                cwhere = f"{where} container {container.get('name')}"
                for field in ("name", "image"):
                    if not container.get(field):
                        problem(cwhere, f"no {field}")
                ports = {p.get("name"): p["containerPort"] for p in container.get("ports", [])}
                pod_ports[name] = ports
                mounts = {}
                for mount in container.get("volumeMounts", []):
                    if mount["name"] not in volumes and mount["name"] not in claims:
                        problem(cwhere, f"mount of unknown volume {mount['name']}")
                    mounts[mount["mountPath"].rstrip("/")] = mount["name"]
                env = {}
                for var in container.get("env", []):
                    if "value" in var:
                        env[var["name"]] = str(var["value"])
                    else:
                        field = var.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath", "")
                        env[var["name"]] = {"metadata.name": f"{name}-3",
                                            "metadata.namespace": "default"}.get(field, "1")
                env = {k: substitute([v], env)[0] for k, v in env.items()}
                argv = substitute(list(container.get("command", [])) + list(container.get("args", [])), env)
                commands = [("command", argv)]
                pre_stop = container.get("lifecycle", {}).get("preStop", {}).get("exec", {})
                if pre_stop:
                    commands.append(("preStop", substitute(pre_stop["command"], env)))
                for what, command in commands:
                    run = final_argv(f"{cwhere} {what}", command, env, ember_pod, data_dir)
                    if not run:
                        continue
                    check_ember_argv(f"{cwhere} {what}", run, ember)
                    # Files the command names under a mount exist in what is mounted there.
                    for token in run:
                        path = token.split("=", 1)[-1]
                        if not path.startswith("/etc/ember/"):
                            continue
                        mount_path, file_name = os.path.split(path)
                        volume = volumes.get(mounts.get(mount_path, ""), None)
                        if volume is None:
                            problem(cwhere, f"{path}: nothing is mounted at {mount_path}")
                        elif "secret" in volume:
                            secret = secrets.get(volume["secret"]["secretName"], {})
                            if file_name not in secret.get("data", {}):
                                problem(cwhere, f"{path}: Secret {volume['secret']['secretName']} "
                                                f"has no {file_name}")
                        elif "configMap" in volume:
                            if file_name not in configmaps.get(volume["configMap"]["name"], {}).get("data", {}):
                                problem(cwhere, f"{path}: the ConfigMap has no {file_name}")
                    if what == "command":
                        metrics = flag_value(run, "metrics-bind")
                        if metrics is None:
                            problem(cwhere, "no --metrics-bind")
                        else:
                            metrics_port = int(metrics.rsplit(":", 1)[1])
                            if metrics_port not in ports.values():
                                problem(cwhere, f"metrics port {metrics_port} is not a container port")
                            for probe_name in ("readinessProbe", "livenessProbe"):
                                probe = container.get(probe_name)
                                if probe is None:
                                    continue
                                http = probe.get("httpGet")
                                if http is None:
                                    problem(cwhere, f"{probe_name} is not an httpGet probe")
                                    continue
                                port = http.get("port")
                                port = ports.get(port, port)
                                if http.get("path") != "/metrics" or port != metrics_port:
                                    problem(cwhere, f"{probe_name} gets {http.get('path')} on port "
                                                    f"{port}, not /metrics on {metrics_port}")
                        scheduler = flag_value(run, "scheduler")
                        if scheduler is not None:
                            host_port = scheduler.replace("tcp://", "")
                            host, port = host_port.rsplit(":", 1)
                            service = services.get(host)
                            if service is None or int(port) not in [p["port"] for p in service["spec"]["ports"]]:
                                problem(cwhere, f"--scheduler {scheduler} is no Service port")
                    if what == "preStop":
                        if kind != "StatefulSet" or "--server" not in " ".join(run).replace("=", " "):
                            problem(cwhere, "the preStop hook does not drain this server")
                if kind in ("Deployment", "StatefulSet") and not container.get("livenessProbe"):
                    problem(cwhere, "no liveness probe")
                if kind in ("Deployment", "StatefulSet") and not container.get("readinessProbe"):
                    problem(cwhere, "no readiness probe")

    scheduler = objects.get("Deployment", {}).get("ember-scheduler")
    if scheduler:
        pod = scheduler["spec"]["template"]["spec"]
        claimed = {v["name"] for v in pod.get("volumes", []) if "persistentVolumeClaim" in v}
        container = pod["containers"][0]
        data_dir = flag_value(container.get("args", []), "data-dir") or ""
        on_claim = [m for m in container.get("volumeMounts", []) if m["name"] in claimed and
                    (data_dir + "/").startswith(m["mountPath"].rstrip("/") + "/")]
        if not on_claim:
            problem("Deployment/ember-scheduler", f"--data-dir {data_dir or '(none)'} is not on a "
                    "PersistentVolumeClaim's mount: a restarted scheduler would forget the job")
    statefulset = objects.get("StatefulSet", {}).get("ember-server")
    if statefulset:
        spec = statefulset["spec"]
        headless = services.get(spec.get("serviceName"))
        if headless is None or headless["spec"].get("clusterIP") != "None":
            problem("StatefulSet/ember-server", f"serviceName {spec.get('serviceName')} is no headless Service")
        env = {v["name"]: v.get("value") for v in spec["template"]["spec"]["containers"][0].get("env", [])}
        if not (spec.get("replicas") == cluster.get("servers") == int(env.get("EMBER_INITIAL_SERVERS", -1))):
            problem("StatefulSet/ember-server", f"replicas {spec.get('replicas')}, EMBER_INITIAL_SERVERS "
                    f"{env.get('EMBER_INITIAL_SERVERS')} and cluster.servers {cluster.get('servers')} differ")
        claims = {c["metadata"]["name"] for c in spec.get("volumeClaimTemplates", [])}
        mounts = {m["mountPath"]: m["name"] for m in spec["template"]["spec"]["containers"][0]["volumeMounts"]}
        if mounts.get(env.get("EMBER_DATA_DIR")) not in claims:
            problem("StatefulSet/ember-server", "EMBER_DATA_DIR is not a PersistentVolumeClaim's mount")
    job_doc = objects.get("Job", {}).get("ember-trainer")
    if job_doc:
        spec = job_doc["spec"]
        if spec.get("completionMode") != "Indexed":
            problem("Job/ember-trainer", "not an indexed Job")
        if not (spec.get("completions") == spec.get("parallelism") == cluster.get("trainers")):
            problem("Job/ember-trainer", f"completions {spec.get('completions')}, parallelism "
                    f"{spec.get('parallelism')} and cluster.trainers {cluster.get('trainers')} differ")
        if spec["template"]["spec"].get("restartPolicy") not in ("OnFailure", "Never"):
            problem("Job/ember-trainer", "restartPolicy must be OnFailure or Never")
    for name, service in services.items():
        selector = service["spec"].get("selector", {})
        matched = [w for k in WORKLOADS for w, d in objects.get(k, {}).items()
                   if all(d["spec"]["template"]["metadata"]["labels"].get(a) == b for a, b in selector.items())]
        if not matched:
            problem(f"Service/{name}", f"selects no pods ({selector})")
        for port in service["spec"].get("ports", []):
            target = port.get("targetPort", port["port"])
            for workload in matched:
                if target not in pod_ports.get(workload, {}) and target not in pod_ports.get(workload, {}).values():
                    problem(f"Service/{name}", f"targetPort {target} is no port of {workload}")
    return finish()


def finish():
    for line in problems:
        print("PROBLEM", line)
    print(f"check_deploy: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    scratch = tempfile.mkdtemp(prefix="ember-deploy-check-")
    tempfile.tempdir = scratch  # the data directory main() makes goes in here, removed below
    try:
        sys.exit(main())
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
