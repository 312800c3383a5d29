"""Runs the pods of deploy/'s Kubernetes manifests (`kubectl kustomize` output) as podman
containers, as a kubelet would start them: each container's exact command, args ($(VAR) expanded)
and environment (fieldRef values filled in), its user and fsGroup, its volumes (ConfigMap files
read-only, Secret keys as podman secrets with the manifest's mode, a podman volume per
PersistentVolumeClaim), the Services' DNS names as network aliases, its readiness probe (HTTP GET)
and its preStop hook. Used by container_cluster.py; knows only what deploy/ uses."""

import base64
import json
import os
import re
import subprocess
import time
import urllib.request

import yaml


# aardvark-dns (podman's DNS server) can drop one of the A and AAAA queries glibc sends at once
# from one socket, and the lookup then waits out two 5 s timeouts (seen here: 10.15 s for a name
# that answers in 0.2 s the next time). One query at a time avoids it, as `options single-request`
# does for such servers anywhere.
DNS_OPTIONS = ["--dns-option", "single-request"]


def podman(*args, check=True, capture=True, timeout=600):
    result = subprocess.run(["podman", *args], capture_output=capture, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise RuntimeError(f"podman {' '.join(args[:3])}... failed ({result.returncode}): "
                           f"{result.stderr.strip()}")
    return result


class Pod:
    """One pod to start: its name, the workload it belongs to, its Job index (or None)."""

    def __init__(self, workload, name, index=None):
        self.workload = workload
        self.name = name
        self.index = index
        spec = workload["spec"]["template"]["spec"]
        self.spec = spec
        self.container = spec["containers"][0]
        self.labels = workload["spec"]["template"]["metadata"].get("labels", {})

    def port(self, name_or_number):
        for port in self.container.get("ports", []):
            if port.get("name") == name_or_number:
                return port["containerPort"]
        return int(name_or_number)


class PodmanKube:
    """The pods of one rendered manifest set on one podman network; `prefix` names everything it
    makes (network, secrets, volumes, containers) so teardown removes exactly that."""

    def __init__(self, objects, image, prefix, scratch, options, namespace="default"):
        self.objects = [o for o in objects if o]
        self.image = image
        self.prefix = prefix
        self.scratch = scratch
        self.options = list(options)
        self.namespace = namespace
        self.network = f"{prefix}-net"
        self.secrets = {}  # (secret name, key) -> podman secret name
        self.configmap_dirs = {}
        self.volumes = set()
        self.containers = set()

    # --- objects -------------------------------------------------------------------------------
    def object(self, kind, name):
        for o in self.objects:
            if o["kind"] == kind and o["metadata"]["name"] == name:
                return o
        raise KeyError(f"no {kind} {name} in the manifests")

    def of_kind(self, kind):
        return [o for o in self.objects if o["kind"] == kind]

    def configmap_data(self, name):
        return self.object("ConfigMap", name)["data"]

    # --- set up and tear down ------------------------------------------------------------------
    def setup(self):
        podman("network", "create", self.network)
        for secret in self.of_kind("Secret"):
            for key, encoded in secret.get("data", {}).items():
                podman_name = f"{self.prefix}-{secret['metadata']['name']}-{key}"
                path = os.path.join(self.scratch, podman_name)
                with open(path, "wb") as out:
                    out.write(base64.b64decode(encoded))
                podman("secret", "create", podman_name, path)
                os.remove(path)
                self.secrets[(secret["metadata"]["name"], key)] = podman_name
        for configmap in self.of_kind("ConfigMap"):
            folder = os.path.join(self.scratch, "configmaps", configmap["metadata"]["name"])
            os.makedirs(folder, exist_ok=True)
            for key, text in configmap.get("data", {}).items():
                with open(os.path.join(folder, key), "w") as out:
                    out.write(text)
                os.chmod(os.path.join(folder, key), 0o644)
            os.chmod(folder, 0o755)
            self.configmap_dirs[configmap["metadata"]["name"]] = folder

    def teardown(self):
        for name in self.containers:
            podman("rm", "-f", "-t", "0", name, check=False)
        for name in self.volumes:
            podman("volume", "rm", "-f", name, check=False)
        for name in self.secrets.values():
            podman("secret", "rm", name, check=False)
        podman("network", "rm", "-f", self.network, check=False)

    # --- one pod ------------------------------------------------------------------------------
    def field_value(self, pod, path):
        if path == "metadata.name":
            return pod.name
        if path == "metadata.namespace":
            return self.namespace
        if path == "metadata.annotations['batch.kubernetes.io/job-completion-index']":
            return str(pod.index)
        raise ValueError(f"fieldRef {path} is not one this runner fills")

    def environment(self, pod):
        env = {}
        for item in pod.container.get("env", []):
            if "value" in item:
                env[item["name"]] = expand(item["value"], env)
            else:
                env[item["name"]] = self.field_value(pod, item["valueFrom"]["fieldRef"]["fieldPath"])
        return env

    def aliases(self, pod):
        """The DNS names Services give this pod: a Service selecting it by name, a headless
        StatefulSet Service as POD.SERVICE.NAMESPACE.svc."""
        names = []
        for service in self.of_kind("Service"):
            selector = service["spec"].get("selector", {})
            if not selector or any(pod.labels.get(k) != v for k, v in selector.items()):
                continue
            service_name = service["metadata"]["name"]
            if service["spec"].get("clusterIP") == "None":
                if pod.workload["spec"].get("serviceName") == service_name:
                    names += [f"{pod.name}.{service_name}",
                              f"{pod.name}.{service_name}.{self.namespace}.svc"]
            else:
                names += [service_name, f"{service_name}.{self.namespace}.svc"]
        return names

    def volume_options(self, pod):
        volumes = {v["name"]: v for v in pod.spec.get("volumes", [])}
        claims = {c["metadata"]["name"] for c in pod.workload["spec"].get("volumeClaimTemplates", [])}
        options = []
        for mount in pod.container.get("volumeMounts", []):
            name, path = mount["name"], mount["mountPath"]
            if name in claims:
                volume = f"{self.prefix}-{name}-{pod.name}"
                self.volumes.add(volume)
                options += ["-v", f"{volume}:{path}"]
            elif "persistentVolumeClaim" in volumes[name]:
                volume = f"{self.prefix}-{volumes[name]['persistentVolumeClaim']['claimName']}"
                self.volumes.add(volume)
                options += ["-v", f"{volume}:{path}"]
            elif "configMap" in volumes[name]:
                options += ["-v", f"{self.configmap_dirs[volumes[name]['configMap']['name']]}:{path}:ro"]
            elif "secret" in volumes[name]:
                options += self.secret_options(pod, volumes[name]["secret"], path)
            else:
                raise ValueError(f"volume {name} of {pod.name} is of a kind this runner lacks")
        return options

    def secret_options(self, pod, secret, path):
        group = pod.spec.get("securityContext", {}).get("fsGroup", 0)
        mode = secret.get("defaultMode", 0o644)
        options = []
        for (secret_name, key), podman_name in self.secrets.items():
            if secret_name == secret["secretName"]:
                options += ["--secret", f"{podman_name},type=mount,target={path}/{key},"
                            f"uid=0,gid={group},mode={mode:o}"]
        if not options:
            raise ValueError(f"Secret {secret['secretName']} of {pod.name} was not made")
        return options

    def run_options(self, pod):
        env = self.environment(pod)
        security = pod.spec.get("securityContext", {})
        options = ["--name", pod.name, "--hostname", pod.name, "--network", self.network,
                   "--label", f"{self.prefix}=1", *DNS_OPTIONS]
        for alias in self.aliases(pod):
            options += ["--network-alias", alias]
        if "runAsUser" in security:
            options += ["--user", f"{security['runAsUser']}:{security.get('runAsGroup', 0)}"]
        if "fsGroup" in security:
            options += ["--group-add", str(security["fsGroup"])]
        for key, value in env.items():
            options += ["-e", f"{key}={value}"]
        options += self.volume_options(pod)
        command = [expand(word, env) for word in pod.container.get("command", [])]
        args = [expand(word, env) for word in pod.container.get("args", [])]
        if command:
            options += ["--entrypoint", json.dumps(command)]
        return options + [self.image] + args

    def start(self, pod):
        podman("rm", "-f", "-t", "0", pod.name, check=False)
        podman("run", "-d", *self.options, *self.run_options(pod))
        self.containers.add(pod.name)

    def address(self, pod):
        text = podman("inspect", "--format",
                      "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}", pod.name).stdout
        return text.split()[0]

    def http_get(self, pod, port, path="/metrics", timeout=3):
        url = f"http://{self.address(pod)}:{pod.port(port)}{path}"
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read().decode()

    def wait_ready(self, pod, limit_s=120):
        """Polls the readiness probe (or the liveness probe) until it answers 200."""
        probe = pod.container.get("readinessProbe") or pod.container.get("livenessProbe")
        get = probe["httpGet"]
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            if not self.running(pod):
                raise RuntimeError(f"{pod.name} exited before it was ready:\n{self.logs(pod)}")
            try:
                if self.http_get(pod, get["port"], get["path"])[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"{pod.name} not ready in {limit_s} s:\n{self.logs(pod)}")

    def running(self, pod):
        state = podman("inspect", "--format", "{{.State.Running}}", pod.name, check=False)
        return state.stdout.strip() == "true"

    def exit_code(self, pod):
        return int(podman("inspect", "--format", "{{.State.ExitCode}}", pod.name).stdout.strip())

    def logs(self, pod, tail=40):
        """The last `tail` lines of a pod's (or a container name's) output."""
        name = pod if isinstance(pod, str) else pod.name
        result = podman("logs", "--tail", str(tail), name, check=False)
        return result.stdout + result.stderr

    def pre_stop(self, pod, limit_s=600):
        hook = pod.container.get("lifecycle", {}).get("preStop", {}).get("exec")
        if not hook:
            return None
        return podman("exec", pod.name, *hook["command"], check=False, timeout=limit_s)

    def delete(self, pod):
        """Deletes a pod as Kubernetes does: its preStop hook, then SIGTERM with the pod's grace
        period. Returns the hook's result (None without one)."""
        hook = self.pre_stop(pod)
        grace = pod.spec.get("terminationGracePeriodSeconds", 30)
        podman("stop", "-t", str(grace), pod.name, check=False, timeout=grace + 60)
        return hook

    def kill(self, pod):
        podman("kill", "-s", "KILL", pod.name, check=False)
        podman("wait", pod.name, check=False)

    def run_once(self, args, secret_mounts, entrypoint=None, timeout=120):
        """A one-off container of the image on the network (like `kubectl run`), with secrets
        mounted as {(secret name, key): path}; returns its completed process."""
        options = ["--rm", "--network", self.network, *DNS_OPTIONS]
        for (secret_name, key), path in secret_mounts.items():
            options += ["--secret", f"{self.secrets[(secret_name, key)]},type=mount,target={path},"
                        f"uid=10001,gid=10001,mode=400"]
        if entrypoint:
            options += ["--entrypoint", entrypoint]
        return podman("run", *self.options, *options, self.image, *args, check=False, timeout=timeout)

def expand(word, env):
    """Kubernetes' $(VAR) expansion in env values, command and args."""
    return re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
                  lambda m: env.get(m.group(1), m.group(0)), word)


def load_objects(*paths):
    objects = []
    for path in paths:
        with open(path) as stream:
            objects += [o for o in yaml.safe_load_all(stream) if o]
    return objects
