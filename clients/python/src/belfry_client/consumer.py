"""A trigger consumer: hands the application one trigger at a time, reports each execution to
``belfry.executions``, drops repeats, and commits a trigger's offset only once it is handled."""

from __future__ import annotations

import socket
import os
import time
import logging
from typing import Any, Callable, Dict, Iterable, Optional

from confluent_kafka import Consumer, KafkaException, Producer

from .rules import ValidationError
from .triggers import Deduper, ExecutionReport, Trigger

log = logging.getLogger("belfry_client")


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class TriggerConsumer:
    """Consumes triggers from ``topics`` in consumer group ``group_id``.

    For each trigger, :meth:`poll` (or :meth:`run`):

    1. skips it when its dedupe key (jobId, scheduledFor, attempt) was handled within
       ``dedupe_window_s`` by this consumer (a repeat: belfry is at-least-once);
    2. reports ``running`` (if ``report_running``), calls ``handler(trigger)``, and reports
       ``succeeded``, or ``failed`` with ``str(exception)`` as the error if the handler raised;
       each report has ``startedAt``, ``finishedAt`` (the handler's timings), ``worker`` and
       ``attempt``, keyed by the job id;
    3. waits for the reports' acknowledgement, then commits the trigger's offset.

    A crash before step 3 redelivers the trigger (to this or another group member). A value that
    is not a trigger is logged and committed (it can never be handled).
    """

    def __init__(self, brokers: str, group_id: str, topics: Iterable[str], *,
                 executions_topic: str = "belfry.executions", worker: Optional[str] = None,
                 dedupe_window_s: float = 3600.0, report_running: bool = True,
                 config: Optional[Dict[str, Any]] = None, _clients=None):
        """``config``: extra librdkafka settings for both clients. ``_clients``: a (consumer,
        producer) pair to use instead of new confluent-kafka ones (tests)."""
        base = {"bootstrap.servers": brokers, **(config or {})}
        self.executions_topic = executions_topic
        self.worker = worker if worker is not None else f"{socket.gethostname()}-{os.getpid()}"
        self.report_running = report_running
        self.dedupe = Deduper(dedupe_window_s)
        if _clients is not None:
            self._consumer, self._producer = _clients
        else:
            self._consumer = Consumer({**base, "group.id": group_id, "enable.auto.commit": False,
                                       "auto.offset.reset": "earliest", "topic.metadata.refresh.interval.ms": 1000})
            self._producer = Producer({**base, "enable.idempotence": True, "acks": "all", "linger.ms": 5})
        self._consumer.subscribe(list(topics))

    def poll(self, handler: Callable[[Trigger], Any], timeout: float = 1.0) -> Optional[Trigger]:
        """Handles at most one trigger; returns it (None if none came, or it was a repeat)."""
        msg = self._consumer.poll(timeout)
        if msg is None:
            return None
        if msg.error() is not None:
            log.warning("trigger consumer: %s", msg.error())
            return None
        try:
            trigger = Trigger.parse(msg.value(), msg.key(), msg.topic(), msg.partition(), msg.offset())
        except ValidationError as e:
            log.error("not a trigger at %s[%d]@%d: %s", msg.topic(), msg.partition(), msg.offset(), e)
            self._commit(msg)
            return None
        if self.dedupe.seen(trigger.dedupe_key):
            self._commit(msg)
            return None
        started = _now_ms()
        if self.report_running:
            self._report(ExecutionReport.for_trigger(trigger, "running", started_at_ms=started, worker=self.worker))
        try:
            handler(trigger)
            report = ExecutionReport.for_trigger(trigger, "succeeded", started_at_ms=started,
                                                 finished_at_ms=_now_ms(), worker=self.worker)
        except Exception as e:  # the handler's failure is the execution's outcome
            report = ExecutionReport.for_trigger(trigger, "failed", error=str(e) or type(e).__name__,
                                                 started_at_ms=started, finished_at_ms=_now_ms(), worker=self.worker)
        self._report(report)
        self._flush()
        self.dedupe.remember(trigger.dedupe_key)
        self._commit(msg)
        return trigger

    def run(self, handler: Callable[[Trigger], Any], stop: Callable[[], bool] = lambda: False) -> None:
        """Calls :meth:`poll` until ``stop()`` is true."""
        while not stop():
            self.poll(handler, 0.5)

    def close(self) -> None:
        self._flush()
        self._consumer.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _commit(self, msg) -> None:
        # A commit refused because the partition moved to another member (a rebalance) is not an
        # error of this trigger: the new owner reads it again (at-least-once; its dedupe key is the same).
        try:
            self._consumer.commit(message=msg, asynchronous=False)
        except KafkaException as e:
            log.warning("could not commit %s[%d]@%d (it will be delivered again): %s",
                        msg.topic(), msg.partition(), msg.offset(), e)

    def _report(self, report: ExecutionReport) -> None:
        self._producer.produce(self.executions_topic, key=report.job_id.encode("utf-8"), value=report.to_json())
        self._producer.poll(0)

    def _flush(self) -> None:
        if self._producer.flush(30) != 0:
            raise KafkaException(f"execution reports to {self.executions_topic!r} were not acknowledged in 30 s")
