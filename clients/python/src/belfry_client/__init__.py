"""belfry_client: publish job commands to belfry and consume its triggers.

See clients/python/README.md. Message formats: belfry's README.md."""

from .commands import (
    Backfill, Command, Cron, Delete, Every, Once, Pause, Resume, RetryBackoff, TriggerJob, Upsert, command_from_dict,
)
from .rules import DEFAULT_RULES, Rules, ValidationError, format_iso_time, parse_iso_time
from .triggers import Deduper, ExecutionReport, Trigger

__all__ = [
    "Backfill", "BelfryProducer", "Command", "Cron", "Deduper", "Delete", "Every", "ExecutionReport", "Once", "Outcome",
    "OutcomeTimeout", "Pause", "Resume", "RetryBackoff", "Rules", "DEFAULT_RULES", "Trigger", "TriggerConsumer", "TriggerJob",
    "Upsert", "ValidationError", "command_from_dict", "format_iso_time", "parse_iso_time",
]


def __getattr__(name):  # the Kafka parts import confluent_kafka only when used
    if name in ("BelfryProducer", "Outcome", "OutcomeTimeout"):
        from . import producer

        return getattr(producer, name)
    if name == "TriggerConsumer":
        from .consumer import TriggerConsumer

        return TriggerConsumer
    raise AttributeError(name)
