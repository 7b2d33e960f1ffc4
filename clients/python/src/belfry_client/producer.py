"""Publishing commands to ``belfry.commands`` and awaiting their outcomes on
``belfry.command-results``.

belfry answers every command with one record on the results topic, keyed by the command's id, whose
value names the command's own ``partition`` and ``offset`` (docs/kafka.md, "Results records").
This producer learns that position from the delivery report and picks the outcome with the same
id, partition and offset, so an outcome of an earlier command for the same job is never mistaken
for this one's. The results reader is assigned at the topic's end before the first command is
published (no consumer group, nothing committed), like `belfry jobs put`.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from .commands import Backfill, Command, Delete, Pause, Resume, TimeLike, TriggerJob, Upsert
from .rules import DEFAULT_RULES, Rules


class OutcomeTimeout(TimeoutError):
    """No outcome arrived in time (belfry down or far behind); the command may still apply."""


@dataclass(frozen=True)
class Outcome:
    """A command's outcome: ``status`` is ``applied`` or ``rejected``; ``error`` is
    ``<reason>: <message>`` for a rejection. ``raw`` is the whole record value, with the fields
    some ops add (``slots``, ``covered``, ``dryRun``, a bulk operation's ``matched``...)."""

    id: str
    op: str
    status: str
    error: Optional[str]
    partition: int
    offset: int
    raw: Dict[str, Any]

    @property
    def applied(self) -> bool:
        return self.status == "applied"

    @property
    def reason(self) -> Optional[str]:
        return self.error.split(":", 1)[0] if self.error else None

    @property
    def slots(self) -> Optional[int]:
        """An applied trigger's or backfill's triggers stored (a dry run: that it would store)."""
        return self.raw.get("slots")

    @property
    def covered(self) -> Optional[int]:
        """An applied backfill's slots that an earlier backfill of the job covered (not fired again)."""
        return self.raw.get("covered")

    @property
    def dry_run(self) -> Optional[bool]:
        return self.raw.get("dryRun")

    @staticmethod
    def parse(value: bytes) -> "Outcome":
        """A results record's value (ValueError, KeyError or TypeError if it is not an outcome)."""
        v = json.loads(value)
        return Outcome(v["id"], v.get("op", ""), v["status"], v.get("error"), v["partition"], v["offset"], v)


class BelfryProducer:
    """Publishes job commands. Not thread-safe; use one per thread (or guard it)."""

    def __init__(self, brokers: str, *, commands_topic: str = "belfry.commands",
                 results_topic: str = "belfry.command-results", rules: Rules = DEFAULT_RULES,
                 actor: Optional[str] = None, config: Optional[Dict[str, Any]] = None, _clients=None):
        """``config``: extra librdkafka settings for both clients (TLS, SASL, ...).
        ``actor``: sent as the ``belfry-actor`` header (the audit trail's who) unless a command
        names its own. ``_clients``: a (producer, results consumer) pair instead of new
        confluent-kafka ones (tests)."""
        self.commands_topic = commands_topic
        self.results_topic = results_topic
        self.rules = rules
        self.actor = actor
        self._base = {"bootstrap.servers": brokers, **(config or {})}
        self._results: Optional[Consumer] = None
        if _clients is not None:
            self._producer, self._results = _clients
        else:
            self._producer = Producer({**self._base, "enable.idempotence": True, "acks": "all", "linger.ms": 5})
        self._outcomes: Dict[Tuple[str, int, int], Outcome] = {}
        self._pending_ids: Dict[str, int] = {}

    # ---- the operations --------------------------------------------------------------------

    def put(self, command: Upsert, *, wait: bool = False, timeout: float = 30.0) -> Optional[Outcome]:
        """Publishes an upsert; with ``wait``, returns its outcome (or raises OutcomeTimeout)."""
        return self.send(command, wait=wait, timeout=timeout)

    def delete(self, job_id: str, *, tombstone=False, reason=None, actor=None, wait=False, timeout=30.0) -> Optional[Outcome]:
        """``tombstone=True`` publishes a null value keyed by the id (reason and actor as headers);
        belfry answers it like ``{"op":"delete"}``, so it can be awaited too."""
        return self.send(Delete(job_id, reason, actor, tombstone), wait=wait, timeout=timeout)

    def pause(self, job_id: str, *, reason=None, actor=None, wait=False, timeout=30.0) -> Optional[Outcome]:
        return self.send(Pause(job_id, reason, actor), wait=wait, timeout=timeout)

    def resume(self, job_id: str, *, reason=None, actor=None, wait=False, timeout=30.0) -> Optional[Outcome]:
        return self.send(Resume(job_id, reason, actor), wait=wait, timeout=timeout)

    def trigger(self, job_id: str, *, reason=None, actor=None, wait=False, timeout=30.0) -> Optional[Outcome]:
        """Fires the job once, now; the outcome's ``slots`` is 1 (0 for a replay), or it is
        rejected ``not_found``."""
        return self.send(TriggerJob(job_id, reason, actor), wait=wait, timeout=timeout)

    def backfill(self, job_id: str, from_: TimeLike, to: TimeLike, *, rate_per_minute: Optional[int] = None,
                 dry_run: Optional[bool] = None, reason=None, actor=None, wait=False, timeout=30.0) -> Optional[Outcome]:
        """Fires the job's slots in ``[from_, to)``; the outcome has ``slots``, ``covered`` and
        ``dry_run``, or is rejected (``not_found``, ``invalid_backfill``: a one-shot, over 10,000 slots)."""
        return self.send(Backfill(job_id, from_, to, rate_per_minute, dry_run, reason, actor), wait=wait, timeout=timeout)

    def send(self, command: Command, *, wait: bool = False, timeout: float = 30.0) -> Optional[Outcome]:
        """Validates ``command`` (ValidationError before anything is sent), publishes it keyed by
        its id, waits for the broker's acknowledgement, and with ``wait`` for belfry's outcome."""
        command.validate(self.rules)
        deadline = time.monotonic() + timeout
        if wait:
            self._ensure_results_reader(deadline)
            self._pending_ids[command.id] = self._pending_ids.get(command.id, 0) + 1
        try:
            partition, offset = self._publish(command, deadline)
            if not wait:
                return None
            return self._await_outcome(command.id, partition, offset, deadline)
        finally:
            if wait:
                self._pending_ids[command.id] -= 1
                if not self._pending_ids[command.id]:
                    del self._pending_ids[command.id]

    def close(self) -> None:
        self._producer.flush(10)
        if self._results is not None:
            self._results.close()
            self._results = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # ---- internals -------------------------------------------------------------------------

    def _publish(self, command: Command, deadline: float) -> Tuple[int, int]:
        delivered: Dict[str, Any] = {}

        def on_delivery(err, msg):
            delivered["err"], delivered["msg"] = err, msg

        key, value, headers = command.record(self.actor)
        self._producer.produce(self.commands_topic, key=key, value=value, headers=headers, on_delivery=on_delivery)
        while "err" not in delivered:
            if time.monotonic() > deadline:
                raise OutcomeTimeout(f"the broker did not acknowledge command {command.id!r} in time")
            self._producer.poll(0.05)
        if delivered["err"] is not None:
            raise KafkaException(delivered["err"])
        return delivered["msg"].partition(), delivered["msg"].offset()

    def _ensure_results_reader(self, deadline: float) -> None:
        if self._results is not None:
            return
        c = Consumer({**self._base, "group.id": f"belfry-client-results-{uuid.uuid4()}",
                      "enable.auto.commit": False, "auto.offset.reset": "earliest",
                      "topic.metadata.refresh.interval.ms": 1000})
        md = c.list_topics(self.results_topic, timeout=max(1.0, deadline - time.monotonic()))
        topic = md.topics.get(self.results_topic)
        if topic is None or topic.error is not None or not topic.partitions:
            c.close()
            raise OutcomeTimeout(f"results topic {self.results_topic!r} does not exist (run belfry migrate)")
        assignment = []
        for p in topic.partitions:
            while True:  # a topic just created may have no leader yet: retry until the deadline
                try:
                    _low, high = c.get_watermark_offsets(
                        TopicPartition(self.results_topic, p), timeout=max(0.5, min(5.0, deadline - time.monotonic())))
                    break
                except KafkaException as e:
                    if time.monotonic() >= deadline:
                        c.close()
                        raise OutcomeTimeout(f"cannot read the end of {self.results_topic!r} partition {p}: {e}") from e
                    time.sleep(0.2)
            assignment.append(TopicPartition(self.results_topic, p, high))
        c.assign(assignment)
        self._results = c

    def _await_outcome(self, job_id: str, partition: int, offset: int, deadline: float) -> Outcome:
        want = (job_id, partition, offset)
        while want not in self._outcomes:
            left = deadline - time.monotonic()
            if left <= 0:
                raise OutcomeTimeout(f"no outcome for command {job_id!r} (partition {partition}, offset {offset}) in time")
            msg = self._results.poll(min(left, 0.2))
            if msg is None or msg.error() is not None or msg.value() is None:
                continue
            try:
                o = Outcome.parse(msg.value())
            except (ValueError, KeyError, TypeError):
                continue
            if o.id in self._pending_ids:  # others' outcomes are not kept
                self._outcomes[(o.id, o.partition, o.offset)] = o
        return self._outcomes.pop(want)
