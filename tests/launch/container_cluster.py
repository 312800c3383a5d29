"""The ember image run as a cluster of podman containers from deploy/'s manifests (podman_kube.py
starts each pod as a kubelet would): the scheduler, the servers' StatefulSet on volumes, the
trainers' indexed Job, keys as secrets. Checks, in order:

1. every pod's readiness probe (GET /metrics) answers, and /metrics of each running container
   (scheduler, servers, trainers) serves ember's metrics;
2. a server container SIGKILLed mid-training and started again on its volume, then the
   scheduler's likewise on its own volume (its state there): the trainers finish
   (restartPolicy OnFailure is applied, restarts counted);
3. `ember status` and `ember lookup` from one-off containers on the network;
4. a server pod deleted as Kubernetes would (its preStop hook drains it, then SIGTERM): the other
   server holds every partition and every row reads as before.

usage: container_cluster.py RENDERED.yaml SECRETS.yaml IMAGE SCRATCH PREFIX"""

import sys
import time

import yaml

from podman_kube import Pod, PodmanKube, load_objects

LOOKUP_KEYS = 400
MASK = (1 << 64) - 1


def mix64(x):
    """common/hash.h's Mix64."""
    x ^= x >> 30
    x = (x * 0xbf58476d1ce4e5b9) & MASK
    x ^= x >> 27
    x = (x * 0x94d049bb133111eb) & MASK
    return x ^ (x >> 31)


def hash_name(name):
    h = 0xcbf29ce484222325
    for byte in name.encode():
        h = ((h ^ byte) * 0x100000001b3) & MASK
    return mix64(h)


def hash_combine(a, b):
    return mix64(a ^ ((mix64(b) + 0x9e3779b97f4a7c15 + (a << 6) + (a >> 2)) & MASK))


def synthetic_keys(tower, count):
    """The keys of the `count` most frequent ids of the synthetic data's first slot of `tower`
    (trainer/synthetic_source.cc: the key of rank r is Mix64(r ^ slot salt))."""
    salt = hash_combine(hash_name(tower), 0)
    return [mix64(rank ^ salt) for rank in range(count)]


def shrink_job(objects):
    """The ConfigMap's job, sized for two shared cores: the manifests' roles and flags unchanged."""
    for o in objects:
        if o["kind"] != "ConfigMap" or "job.yaml" not in o.get("data", {}):
            continue
        job = yaml.safe_load(o["data"]["job.yaml"])
        job["cluster"].update(server_threads=1, partitions=64)
        for table in job["tables"]:
            table["dim"] = 16
        job["model"].update(embedding_dim=16, hidden=[32], output_dim=16)
        job["data"]["synthetic"]["vocabulary"] = 20000
        job["train"].update(steps=12000, batch_size=256, log_every=500)
        o["data"]["job.yaml"] = yaml.safe_dump(job, sort_keys=False)
        return job
    raise RuntimeError("no ConfigMap with job.yaml in the manifests")


def check(condition, what):
    if not condition:
        raise RuntimeError(what)
    print(f"ok: {what}", flush=True)


def scrape(kube, pods):
    for pod in pods:
        if not kube.running(pod):
            raise RuntimeError(f"{pod.name} exited ({kube.exit_code(pod)}) before its /metrics "
                               f"was read:\n{kube.logs(pod)}")
        status, body = kube.http_get(pod, "metrics")
        samples = [line for line in body.splitlines() if line.startswith("ember_")]
        check(status == 200 and samples, f"GET /metrics of {pod.name}: {len(samples)} ember samples")


def wait_for_progress(kube, trainer, limit_s=180):
    """Waits for the trainer's first progress line; it must still be training then."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if not kube.running(trainer):
            raise RuntimeError(f"{trainer.name} exited ({kube.exit_code(trainer)}) before any "
                               f"progress line:\n{kube.logs(trainer)}")
        if "step" in kube.logs(trainer, tail=5):
            return
        time.sleep(0.5)
    raise RuntimeError(f"{trainer.name} shows no progress in {limit_s} s:\n{kube.logs(trainer)}")


def finish_job(kube, trainers, backoff_limit, scheduler, limit_s=600):
    """Waits for the Job's pods, restarting a failed one (restartPolicy OnFailure) up to the Job's
    backoffLimit; returns the restarts."""
    restarts = 0
    deadline = time.monotonic() + limit_s
    pending = list(trainers)
    while pending and time.monotonic() < deadline:
        for pod in list(pending):
            if kube.running(pod):
                continue
            if kube.exit_code(pod) == 0:
                pending.remove(pod)
                continue
            restarts += 1
            print(f"{pod.name} failed:\n{kube.logs(pod, tail=60)}\nthe scheduler's log:\n"
                  f"{kube.logs(scheduler, tail=80)}", flush=True)
            if restarts > backoff_limit:
                raise RuntimeError(f"the Job failed: {restarts} restarts > backoffLimit")
            kube.start(pod)
        time.sleep(1)
    if pending:
        raise RuntimeError(f"{[p.name for p in pending]} still training after {limit_s} s")
    return restarts


def status(kube):
    result = kube.run_once([
        "status", "--scheduler=tcp://ember-scheduler:7000", "--key=/etc/ember/key/admin.key",
        "--scheduler-key=/etc/ember/keyring/scheduler.pub"], {
            ("ember-key-admin", "admin.key"): "/etc/ember/key/admin.key",
            ("ember-keyring", "scheduler.pub"): "/etc/ember/keyring/scheduler.pub"})
    check(result.returncode == 0, f"ember status ({result.stderr.strip()[-300:]})")
    print(result.stdout, flush=True)
    return result.stdout


def server_rows(text):
    """`ember status`'s server lines as {pod name: (state, partitions, rows or None)}."""
    servers = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) >= 5 and words[1].startswith("tcp://"):
            pod = words[1][len("tcp://"):].split(".")[0]
            servers[pod] = (words[2], int(words[3]), int(words[4]) if words[4].isdigit() else None)
    return servers


def lookup(kube, table, tower):
    keys = "\\n".join(str(k) for k in synthetic_keys(tower, LOOKUP_KEYS))
    result = kube.run_once([
        "-c", f"printf '{keys}\\n' | ember lookup --scheduler=tcp://ember-scheduler:7000 "
        f"--table={table} --keys=- --key=/etc/ember/key/trainer.key "
        "--scheduler-key=/etc/ember/keyring/scheduler.pub"], {
            ("ember-key-trainer", "trainer.key"): "/etc/ember/key/trainer.key",
            ("ember-keyring", "scheduler.pub"): "/etc/ember/keyring/scheduler.pub"},
        entrypoint="bash")
    check(result.returncode == 0, f"ember lookup of {table} ({result.stderr.strip()[-300:]})")
    rows = [line for line in result.stdout.splitlines() if line.strip()]
    check(len(rows) == LOOKUP_KEYS, f"{len(rows)} rows of {table} read")
    return rows


def main(rendered, secrets, image, scratch, prefix):
    objects = load_objects(rendered, secrets)
    job = shrink_job(objects)
    kube = PodmanKube(objects, image, prefix, scratch, sys.argv[6:])
    try:
        kube.setup()
        servers_set = kube.object("StatefulSet", "ember-server")
        trainer_job = kube.object("Job", "ember-trainer")
        scheduler = Pod(kube.object("Deployment", "ember-scheduler"), "ember-scheduler-0")
        servers = [Pod(servers_set, f"ember-server-{i}") for i in range(servers_set["spec"]["replicas"])]
        trainers = [Pod(trainer_job, f"ember-trainer-{i}", index=i)
                    for i in range(trainer_job["spec"]["completions"])]

        kube.start(scheduler)
        kube.wait_ready(scheduler)
        for pod in servers:
            kube.start(pod)
        for pod in servers:
            kube.wait_ready(pod)
        check(True, f"scheduler and {len(servers)} servers ready")
        for pod in trainers:
            kube.start(pod)
        wait_for_progress(kube, trainers[0])
        scrape(kube, [scheduler] + servers + trainers)

        victim = servers[0]
        kube.kill(victim)
        check(not kube.running(victim), f"{victim.name} SIGKILLed mid-training")
        time.sleep(2)
        kube.start(victim)
        kube.wait_ready(victim)
        check(any(kube.running(p) for p in trainers),
              f"{victim.name} started again on its volume, the trainers still training")
        kube.kill(scheduler)
        check(not kube.running(scheduler), "the scheduler SIGKILLed mid-training")
        time.sleep(2)
        kube.start(scheduler)
        kube.wait_ready(scheduler)
        restored = [line for line in kube.logs(scheduler, tail=200).splitlines()
                    if "restarted from" in line]
        check(restored, f"the scheduler went on from its state ({restored[-1][-150:] if restored else ''})")
        check(any(kube.running(p) for p in trainers),
              "the scheduler started again on its volume, the trainers still training")
        # Its new container has a new address; the servers' old connections lead nowhere (a
        # killed container sends no reset): they must notice and connect anew.
        for pod in servers:
            heard = False
            for _ in range(60):
                heard = "answers again after" in kube.logs(pod, tail=400)
                if heard:
                    break
                time.sleep(0.5)
            check(heard, f"{pod.name} hears from the restarted scheduler")

        restarts = finish_job(kube, trainers, trainer_job["spec"].get("backoffLimit", 6), scheduler)
        for pod in trainers:
            check(kube.exit_code(pod) == 0, f"{pod.name} trained {job['train']['steps']} steps "
                  f"(exit 0; the Job's restarts: {restarts})")

        before = server_rows(status(kube))
        towers = {job["train"]["user_tables"][0]: "user", job["train"]["item_tables"][0]: "item"}
        rows = {table: lookup(kube, table, tower) for table, tower in towers.items()}
        found = sum(1 for t in rows.values() for r in t if r.split("\t")[1] == "1")
        check(found == len(towers) * LOOKUP_KEYS,
              f"{found} of the {len(towers) * LOOKUP_KEYS} most frequent keys have trained rows")

        drained = servers[-1]
        hook = kube.delete(drained)
        check(hook is not None and hook.returncode == 0,
              f"{drained.name}'s preStop drain ({(hook.stdout + hook.stderr).strip()[-300:]})")
        after = server_rows(status(kube))
        check(after[drained.name][:2] == ("drained", 0),
              f"{drained.name} drained: {after[drained.name]}")
        check(after[servers[0].name] == ("live", job["cluster"]["partitions"], sum(r[2] for r in before.values())),
              f"{servers[0].name} holds every partition and row: {after[servers[0].name]}")
        for table, old in rows.items():
            check(lookup(kube, table, towers[table]) == old, f"{table}: every row as before the drain")
        scrape(kube, [scheduler] + servers[:-1])
        print("PASS", flush=True)
    except Exception:
        for name in sorted(kube.containers):
            print(f"--- the log of {name}:\n{kube.logs(name, tail=25)}", flush=True)
        raise
    finally:
        kube.teardown()


if __name__ == "__main__":
    main(*sys.argv[1:6])
