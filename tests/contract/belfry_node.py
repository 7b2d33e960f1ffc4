"""A live `belfry serve` node for the contract tests, on its own database and topics.

Like tests/integration (itest_support.cc): a fresh database on $BELFRY_DATABASE_URL's server,
topics named after the run, the admin API on a free loopback port, and `belfry migrate` first.
Jobs are created through the real command path (`belfry jobs put`, which publishes to the
commands topic and waits for the outcome); execution outcomes are published to the node's
executions topic, as a consumer service would.
"""

import json
import os
import random
import re
import signal
import subprocess
import tempfile
import time
import urllib.parse

import requests


class NodeError(RuntimeError):
    pass


def _need_env(name):
    value = os.environ.get(name, "")
    if not value:
        raise NodeError(
            f"{name} is not set: run via scripts/test, or `scripts/local-stack up` and "
            f'`eval "$(scripts/local-stack env)"` first'
        )
    return value


def _with_database(url, name):
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))


def iso_ms(epoch_ms):
    t = time.gmtime(epoch_ms // 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", t) + ".%03dZ" % (epoch_ms % 1000)


class BelfryNode:
    """Starts in __enter__, stops and drops its database in __exit__."""

    def __init__(self, binary, source_dir, name, token="", extra_env=None, share=None):
        """`share`: another BelfryNode whose database and topics this node joins (as a second
        node of one cluster); it neither creates nor drops the database."""
        self.binary = binary
        self.source_dir = source_dir
        self.token = token
        self.server_url = _need_env("BELFRY_DATABASE_URL")
        self.brokers = _need_env("BELFRY_KAFKA_BROKERS")
        self.run_id = f"{name}-{os.getpid()}-{random.randrange(100000)}"
        self.db_name = "belfry_c_" + re.sub(r"[^a-z0-9]", "_", self.run_id.lower())
        t = "contract." + self.run_id
        self.topics = {
            "commands": t + ".commands",
            "dlq": t + ".dlq",
            "results": t + ".results",
            "executions": t + ".executions",
            "executions_dlq": t + ".executions-dlq",
            "triggers": t + ".triggers",
        }
        self.env = dict(os.environ)
        self.env.update(
            {
                "BELFRY_DATABASE_URL": _with_database(self.server_url, self.db_name),
                "BELFRY_KAFKA_BROKERS": self.brokers,
                "BELFRY_KAFKA_COMMANDS_TOPIC": self.topics["commands"],
                "BELFRY_KAFKA_DLQ_TOPIC": self.topics["dlq"],
                "BELFRY_KAFKA_RESULTS_TOPIC": self.topics["results"],
                "BELFRY_KAFKA_EXECUTIONS_TOPIC": self.topics["executions"],
                "BELFRY_KAFKA_EXECUTIONS_DLQ_TOPIC": self.topics["executions_dlq"],
                "BELFRY_KAFKA_GROUP_ID": "contract-" + self.run_id,
                "BELFRY_KAFKA_EXECUTIONS_GROUP_ID": "contract-exec-" + self.run_id,
                "BELFRY_ADMIN_LISTEN": "127.0.0.1:0",
                "BELFRY_ADMIN_TOKEN": token,
                "BELFRY_MIGRATIONS_DIR": os.path.join(source_dir, "migrations"),
                "BELFRY_LOG_LEVEL": "info",
            }
        )
        if share is not None:
            for k in ("BELFRY_DATABASE_URL", "BELFRY_KAFKA_COMMANDS_TOPIC", "BELFRY_KAFKA_DLQ_TOPIC",
                      "BELFRY_KAFKA_RESULTS_TOPIC", "BELFRY_KAFKA_EXECUTIONS_TOPIC",
                      "BELFRY_KAFKA_EXECUTIONS_DLQ_TOPIC"):
                self.env[k] = share.env[k]
            self.topics = share.topics
        self.share = share
        self.env.update(extra_env or {})
        self.proc = None
        self.port = None
        self.log_path = None
        self._producer = None
        self._db_created = False

    # ---- lifecycle -------------------------------------------------------------------------

    def __enter__(self):
        try:
            if self.share is None:
                self._psql(f'CREATE DATABASE "{self.db_name}"')
                self._db_created = True
                self.belfry(["migrate"], timeout=120)
            fd, self.log_path = tempfile.mkstemp(prefix=f"belfry-{self.run_id}-", suffix=".log")
            self.proc = subprocess.Popen(
                [self.binary, "serve"], env=self.env, stdout=fd, stderr=fd, stdin=subprocess.DEVNULL
            )
            os.close(fd)
            self.port = self._wait_for_port(timeout=60)
            self.base_url = f"http://127.0.0.1:{self.port}"
            self._wait_until(lambda: self._get_ok("/healthz"), 30, "GET /healthz never answered 200")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        if self._producer is not None:
            self._producer.flush(5)
            self._producer = None
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._db_created:
            self.drop_database()
        if self.log_path and exc and exc[0] is None:
            os.unlink(self.log_path)
        return False

    def drop_database(self):
        """Drops the node's database, with FORCE (the node's sessions are cut). The node reconnects
        at once (its bulk-operation runner looks for work every second), and a connection that
        arrives between FORCE's cut and the drop fails it: try again until it is gone."""
        for _ in range(50):
            self._psql(f'DROP DATABASE IF EXISTS "{self.db_name}" WITH (FORCE)', check=False)
            r = self._psql(f"SELECT 'still-there' FROM pg_database WHERE datname = '{self.db_name}'", check=False)
            if "still-there" not in (r.stdout or ""):
                break
            time.sleep(0.1)
        self._db_created = False

    def log_tail(self, n=60):
        if not self.log_path or not os.path.exists(self.log_path):
            return "(no log)"
        with open(self.log_path, errors="replace") as f:
            return "".join(f.readlines()[-n:])

    # ---- helpers ---------------------------------------------------------------------------

    def _psql(self, sql, check=True):
        r = subprocess.run(
            ["psql", self.server_url, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-c", sql],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if check and r.returncode != 0:
            raise NodeError(f"psql {sql!r} failed: {r.stderr.strip()}")
        return r

    def belfry(self, args, timeout=60, check=True):
        r = subprocess.run([self.binary, *args], env=self.env, capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise NodeError(f"belfry {' '.join(args)} exited {r.returncode}: {r.stdout}{r.stderr}")
        return r

    def _wait_for_port(self, timeout):
        needle = re.compile(r"admin HTTP listening on \S+ \(port (\d+)\)")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with open(self.log_path, errors="replace") as f:
                m = needle.search(f.read())
            if m:
                return int(m.group(1))
            if self.proc.poll() is not None:
                raise NodeError(f"belfry serve exited {self.proc.returncode}:\n{self.log_tail()}")
            time.sleep(0.1)
        raise NodeError(f"belfry serve did not report its admin port within {timeout}s:\n{self.log_tail()}")

    def _wait_until(self, cond, timeout, what):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if cond():
                return
            time.sleep(0.2)
        raise NodeError(f"{what} within {timeout}s\n{self.log_tail()}")

    def auth_headers(self):
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def _get_ok(self, path):
        try:
            return requests.get(self.base_url + path, headers=self.auth_headers(), timeout=5).status_code == 200
        except requests.RequestException:
            return False

    # ---- the command path ------------------------------------------------------------------

    def put_jobs(self, jobs, timeout=90):
        """Publishes each job (a dict of `belfry jobs put` flags, or {"file": command}) with the
        CLI, in parallel, and requires every outcome to be `applied`."""
        procs = []
        for job in jobs:
            args = ["jobs", "put", "--timeout", "60s"]
            cmd_file = None
            for flag, value in job.items():
                if flag == "file":
                    fd, cmd_file = tempfile.mkstemp(suffix=".json")
                    with os.fdopen(fd, "w") as f:
                        json.dump(value, f)
                    args += ["-f", cmd_file]
                elif isinstance(value, list):  # a repeatable flag
                    for v in value:
                        args += ["--" + flag, str(v)]
                else:
                    args += ["--" + flag, str(value)]
            p = subprocess.Popen(
                [self.binary, *args], env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            procs.append((job, p, cmd_file))
        failures = []
        for job, p, cmd_file in procs:
            out, err = p.communicate(timeout=timeout)
            if cmd_file:
                os.unlink(cmd_file)
            if p.returncode != 0 or '"status":"applied"' not in out:
                failures.append(f"{job}: exit {p.returncode}: {out}{err}")
        if failures:
            raise NodeError("belfry jobs put failed:\n" + "\n".join(failures) + "\n" + self.log_tail())

    def report_executions(self, reports):
        """Publishes execution outcome reports (dicts) to the node's executions topic."""
        from confluent_kafka import Producer  # only the nodes that report need it

        if self._producer is None:
            self._producer = Producer({"bootstrap.servers": self.brokers, "acks": "all", "linger.ms": 5})
        errors = []

        def delivered(err, _msg):
            if err is not None:
                errors.append(str(err))

        for r in reports:
            self._producer.produce(
                self.topics["executions"], key=r["jobId"].encode(), value=json.dumps(r).encode(), on_delivery=delivered
            )
        remaining = self._producer.flush(30)
        if remaining or errors:
            raise NodeError(f"could not publish execution reports: {remaining} undelivered, errors {errors}")

    def get_json(self, path):
        r = requests.get(self.base_url + path, headers=self.auth_headers(), timeout=10)
        r.raise_for_status()
        return r.json()

    def wait_for(self, cond, timeout, what):
        self._wait_until(cond, timeout, what)
