#!/usr/bin/env python3
"""Keeps belfry's message contracts (contracts/, docs/contracts.md) true, without a server.

1. Every schema in contracts/schemas is a valid JSON Schema 2020-12 document.
2. Every shared vector (contracts/vectors) against its schema: a valid message passes; an invalid
   one fails, unless it names a rule of docs/contracts.md's table ("rule"), and then it passes
   (the rule must list its reason), so that no annotation goes stale. Expected encodings
   (triggers, outcomes, change events, normalised jobs) pass their schemas too.
3. Every case of the hostile corpora (tests/corpus/hostile*/MANIFEST.tsv; belfry rejects each)
   is explained: its value is not JSON, or it fails its schema (a tombstone: its key fails the id
   rule), or its reason is one of a rule of docs/contracts.md that the schema cannot express.
4. contracts/asyncapi.yaml: every $ref resolves (inside the document, or to a schema file), every
   schema file is used, every topic of the config has a channel at its default name (README and
   include/belfry/config.h), and the direction of each operation.
5. The messages belfry's own tests embed: every JSON object in a raw string literal of
   tests/**/*.cc that has the fields of a trigger, a command outcome or a change event must
   validate against that schema.
With --dump FILE, instead: every record the integration tests consumed from belfry's topics
(tests/integration/message_dump.cc) against its schema, and every record they produced by
belfry's verdict on it (from the dump, or read from the broker, --brokers).

Exit 0 when everything holds; otherwise every violation is printed and the exit code is 1.
Run by ctest (tests/contract/CMakeLists.txt, label unit) with the venv that scripts/setup creates:
  .venv/bin/python tests/contract/message_contracts_test.py --source-dir .
"""

import argparse
import base64
import json
from collections import Counter
import os
import pathlib
import re
import sys

import jsonschema
import jsonschema_rs
import referencing
import yaml

# jsonschema (Python) is the reference validator: the schemas are checked with it, and every
# failure message comes from it. jsonschema-rs (compiled) answers first whether a message is
# valid: the dump holds ~150k records, which took Python's validator 12 s of CPU on an idle
# machine and 80 s at the end of a loaded suite, where the dump check is the last test to run;
# jsonschema-rs takes under a second. Outside the dump both judge every message and must agree
# (cross_check), so the vectors and corpora keep the fast path honest.
DRAFT = jsonschema.Draft202012Validator


class Checker:
    def __init__(self, root):
        self.root = root
        self.failures = []
        self.checked = 0
        self.schemas = {}
        self.validators = {}
        for path in sorted((root / "contracts" / "schemas").glob("*.schema.json")):
            self.schemas[path.name] = json.loads(path.read_text(encoding="utf-8"))
        self.registry = referencing.Registry().with_resources(
            (s["$id"], referencing.Resource.from_contents(s)) for s in self.schemas.values()
        )
        self.fast_registry = jsonschema_rs.Registry([(s["$id"], s) for s in self.schemas.values()])
        self.fast_validators = {}
        self.cross_check = True
        self.rules = self.load_rules()

    def fail(self, where, message):
        self.failures.append(f"{where}: {message}")

    def validator(self, name, pointer=""):
        key = (name, pointer)
        if key not in self.validators:
            schema_id = self.schemas[name]["$id"]
            ref = {"$ref": schema_id + ("#" + pointer if pointer else "")}
            self.validators[key] = DRAFT(ref, registry=self.registry)
            self.fast_validators[key] = jsonschema_rs.Draft202012Validator(
                ref, registry=self.fast_registry)
        return self.validators[key]

    def fast_verdict(self, name, instance, pointer=""):
        """jsonschema-rs's verdict, or None for a value it cannot take (a lone surrogate)."""
        self.validator(name, pointer)
        try:
            return self.fast_validators[(name, pointer)].is_valid(instance)
        except (UnicodeError, ValueError, OverflowError):
            return None

    def errors(self, name, instance, pointer=""):
        self.checked += 1
        fast = self.fast_verdict(name, instance, pointer)
        if fast and not self.cross_check:
            return []
        errors = [e.message for e in self.validator(name, pointer).iter_errors(instance)]
        if fast is not None and fast != (not errors):
            self.fail(f"{name}{pointer}", f"jsonschema-rs calls {json.dumps(instance)[:200]} "
                      f"{'valid' if fast else 'invalid'}, jsonschema {errors[:1] or 'valid'}")
        return errors

    def expect_valid(self, where, name, instance, pointer=""):
        errors = self.errors(name, instance, pointer)
        if errors:
            self.fail(where, f"does not conform to {name}{pointer}: {errors[0][:300]}")

    # docs/contracts.md, "Rules the schemas cannot express": | `rule` | `reason`, ... | why |
    def load_rules(self):
        rules = {}
        text = (self.root / "docs" / "contracts.md").read_text(encoding="utf-8")
        section = text.split("## Rules the schemas cannot express", 1)[-1].split("\n## ", 1)[0]
        for line in section.splitlines():
            m = re.match(r"^\| `([a-z0-9_]+)` \| ([^|]+) \|", line)
            if m:
                rules[m.group(1)] = set(re.findall(r"`([a-z0-9_]+)`", m.group(2)))
        if not rules:
            self.fail("docs/contracts.md", "no table of rules the schemas cannot express")
        return rules

    def reasons_with_rules(self):
        return set().union(*self.rules.values()) if self.rules else set()

    # ------------------------------------------------------------------------------------------
    # 1. The schemas themselves.

    def check_schemas(self):
        if not self.schemas:
            self.fail("contracts/schemas", "no *.schema.json")
        for name, schema in self.schemas.items():
            self.checked += 1
            try:
                DRAFT.check_schema(schema)
            except jsonschema.SchemaError as e:
                self.fail(name, f"is not a valid 2020-12 schema: {e.message}")
            if schema.get("$schema") != "https://json-schema.org/draft/2020-12/schema":
                self.fail(name, "does not declare $schema 2020-12")
            if not schema.get("$id", "").endswith("/" + name):
                self.fail(name, f"$id {schema.get('$id')!r} does not end in its file name")

    # ------------------------------------------------------------------------------------------
    # Raw messages: bytes to a JSON value, as far as a schema can judge one.

    @staticmethod
    def parse_json(raw):
        """The JSON value of `raw` (bytes or str), or None when it is not a JSON document."""
        try:
            text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
            return (json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c))),)
        except (UnicodeDecodeError, ValueError, RecursionError):
            return None

    def explain_rejection(self, where, schema_name, key, raw, reason, rule=None, annotated=False):
        """Checks that a message belfry rejects is explained by the schema or by a rule.

        An annotated case (a vector) must fail the schema unless it names its rule. A hostile
        corpus case carries no annotation: a reason that some rule lists explains it."""
        if raw is None:  # a tombstone
            if schema_name == "command.schema.json":
                fails = key is None or bool(self.errors(schema_name, key, "/$defs/id"))
            else:
                fails = True  # a report must have a value
        else:
            parsed = self.parse_json(raw)
            fails = parsed is None or bool(self.errors(schema_name, parsed[0]))
        if rule is not None:
            if rule not in self.rules:
                self.fail(where, f"names rule {rule!r}, which docs/contracts.md does not list")
            elif reason not in self.rules[rule]:
                self.fail(where, f"rule {rule!r} does not list reason {reason!r} in docs/contracts.md")
            if fails:
                self.fail(where, f"names rule {rule!r} but its schema already rejects it")
            return
        if not fails and annotated:
            self.fail(where, f"belfry rejects it ({reason}) but it conforms to {schema_name}; "
                             "name the rule of docs/contracts.md that rejects it, or tighten the schema")
        elif not fails and reason not in self.reasons_with_rules():
            self.fail(where, f"belfry rejects it ({reason}) but it conforms to {schema_name}, "
                             "and no rule of docs/contracts.md lists that reason")

    # ------------------------------------------------------------------------------------------
    # 2. The shared vectors.

    def vector_file(self, name):
        return json.loads((self.root / "contracts" / "vectors" / name).read_text(encoding="utf-8"))

    @staticmethod
    def raw_value(case):
        if "valueText" in case:
            return case["valueText"]
        if case.get("value") is None:
            return None
        return json.dumps(case["value"], ensure_ascii=False, separators=(",", ":"))

    def check_message_vectors(self, file_name, schema_name):
        vectors = self.vector_file(file_name)
        for case in vectors["valid"]:
            where = f"{file_name} valid {case['name']}"
            raw = self.raw_value(case)
            if raw is None:
                self.expect_valid(where + " (tombstone key)", schema_name, case["key"], "/$defs/id")
            else:
                self.expect_valid(where, schema_name, json.loads(raw))
            job = case.get("expect", {}).get("job")
            if job is not None:
                self.expect_valid(where + " expect.job", "change-event.schema.json", job, "/$defs/job")
        for case in vectors["invalid"]:
            self.explain_rejection(f"{file_name} invalid {case['name']}", schema_name, case.get("key"),
                                   self.raw_value(case), case["reason"], case.get("rule"), annotated=True)

    def check_encoding_vectors(self):
        for case in self.vector_file("triggers.json")["cases"]:
            where = f"triggers.json {case['name']}"
            self.expect_valid(where, "trigger.schema.json", json.loads(case["expect"]["value"]))
            self.expect_valid(where + " headers", "trigger-headers.schema.json", case["expect"]["headers"])
        for case in self.vector_file("command-outcomes.json")["cases"]:
            self.expect_valid(f"command-outcomes.json {case['name']}", "command-outcome.schema.json",
                              json.loads(case["value"]))
        for case in self.vector_file("change-events.json")["cases"]:
            self.expect_valid(f"change-events.json {case['name']}", "change-event.schema.json",
                              json.loads(case["value"]))

    # ------------------------------------------------------------------------------------------
    # 3. The hostile corpora (the format: the header of tests/corpus/hostile/MANIFEST.tsv; the
    # loader this mirrors: tests/corpus/hostile_corpus.cc).

    @staticmethod
    def decode_key(field):
        if field == "-":
            return None
        out, i = bytearray(), 0
        raw = field.encode("utf-8")
        while i < len(raw):
            c = raw[i]
            if c != 0x5C or i + 1 >= len(raw):
                out.append(c)
                i += 1
                continue
            e = chr(raw[i + 1])
            if e == "n":
                out.append(0x0A)
                i += 2
            elif e == "t":
                out.append(0x09)
                i += 2
            elif e == "x" and re.fullmatch(rb"[0-9a-fA-F]{2}", raw[i + 2:i + 4] or b""):
                out.append(int(raw[i + 2:i + 4], 16))
                i += 4
            else:
                out.append(raw[i + 1])
                i += 2
        return out.decode("utf-8", errors="surrogateescape")

    @staticmethod
    def generated(name):
        def padded(job_id, field, open_, fill, n, close):
            return (f'{{"id":"{job_id}","topic":"tracking.poll","intervalMinutes":5,"{field}":'
                    f'{open_}"{fill * n}"{close}}}')

        def report(job_id, error):
            return f'{{"jobId":"{job_id}","scheduledFor":0,"status":"failed","error":{error}}}'

        def nested(levels, objects):
            return ('{"a":' * levels + "1" + "}" * levels) if objects else ("[" * levels + "]" * levels)

        if name == "@gen:key_string_200k":
            return padded("h-key-200k", "key", "", "k", 200 * 1024, "")
        if name == "@gen:details_70k":
            return padded("h-details-70k", "jobDetails", '{"pad":', "d", 70 * 1024, "}")
        if name == "@gen:value_1mb":
            overhead = len(padded("h-1mb", "jobDetails", '{"pad":', "x", 0, "}"))
            return padded("h-1mb", "jobDetails", '{"pad":', "x", 1_000_000 - overhead, "}")
        if name == "@gen:report_arrays_10000":
            return report("r-deep-arrays", nested(10_000, False))
        if name == "@gen:report_objects_10000":
            return report("r-deep-objects", nested(10_000, True))
        if name == "@gen:report_value_70k":
            return report("r-70k", '"' + "e" * (70 * 1024) + '"')
        return None

    def check_hostile(self, corpus, schema_name):
        directory = self.root / "tests" / "corpus" / corpus
        cases = 0
        for number, line in enumerate((directory / "MANIFEST.tsv").read_text(encoding="utf-8").splitlines(), 1):
            if not line or line.startswith("#"):
                continue
            fields = line.split("\t")
            where = f"tests/corpus/{corpus}/MANIFEST.tsv line {number}"
            if len(fields) < 3:
                self.fail(where, "malformed line")
                continue
            file, key, reason = fields[0], self.decode_key(fields[1]), fields[2]
            if file == "@tombstone":
                raw = None
            elif file.startswith("@gen:"):
                raw = self.generated(file)
                if raw is None:
                    self.fail(where, f"unknown generated case {file}")
                    continue
            else:
                raw = (directory / file).read_bytes()
            cases += 1
            self.explain_rejection(f"{where} ({file})", schema_name, key, raw, reason)
        if cases == 0:
            self.fail(f"tests/corpus/{corpus}", "no cases")

    # ------------------------------------------------------------------------------------------
    # 4. The AsyncAPI document.

    # channel -> (config key under kafka:, what belfry does)
    CHANNELS = {
        "commands": ("commands_topic", "receive"),
        "commandResults": ("results_topic", "send"),
        "commandsDlq": ("dlq_topic", "send"),
        "executions": ("executions_topic", "receive"),
        "executionsDlq": ("executions_dlq_topic", "send"),
        "triggersDlq": ("triggers_dlq_topic", "send"),
        "changes": ("changes_topic", "send"),
        "triggers": (None, "send"),
    }

    def readme_kafka_config(self):
        text = (self.root / "README.md").read_text(encoding="utf-8")
        section = text.split("## Configuration", 1)[1]
        block = re.search(r"```yaml\n(.*?)```", section, re.S).group(1)
        return yaml.safe_load(block)["kafka"]

    def code_topic_defaults(self):
        text = (self.root / "include" / "belfry" / "config.h").read_text(encoding="utf-8")
        return dict(re.findall(r'std::string (\w+_topic) = "([^"]*)";', text))

    def check_asyncapi(self):
        where = "contracts/asyncapi.yaml"
        doc = yaml.safe_load((self.root / "contracts" / "asyncapi.yaml").read_text(encoding="utf-8"))
        self.checked += 1
        if not str(doc.get("asyncapi", "")).startswith("3."):
            self.fail(where, f"asyncapi is {doc.get('asyncapi')!r}, not 3.x")

        used_files = set()

        def resolve(ref, at):
            file, _, pointer = ref.partition("#")
            if file:
                path = (self.root / "contracts" / file).resolve()
                if not path.is_file():
                    self.fail(where, f"{at}: $ref {ref!r} names no file")
                    return
                if path.parent != (self.root / "contracts" / "schemas").resolve():
                    self.fail(where, f"{at}: $ref {ref!r} is not a file of contracts/schemas")
                used_files.add(path.name)
                target = json.loads(path.read_text(encoding="utf-8"))
            else:
                target = doc
            for part in [p for p in pointer.split("/") if p]:
                part = part.replace("~1", "/").replace("~0", "~")
                if not isinstance(target, dict) or part not in target:
                    self.fail(where, f"{at}: $ref {ref!r} does not resolve")
                    return
                target = target[part]

        def walk(node, at):
            if isinstance(node, dict):
                for k, v in node.items():
                    if k == "$ref":
                        self.checked += 1
                        resolve(v, at)
                    else:
                        walk(v, f"{at}/{k}")
            elif isinstance(node, list):
                for i, v in enumerate(node):
                    walk(v, f"{at}/{i}")

        walk(doc, "")
        for name in self.schemas:
            if name not in used_files:
                self.fail(where, f"no message uses schemas/{name}")

        readme = self.readme_kafka_config()
        code = self.code_topic_defaults()
        topic_keys = {k for k in list(readme) + list(code) if k.endswith("_topic")}
        channels = doc.get("channels", {})
        covered = set()
        for channel, (config_key, action) in self.CHANNELS.items():
            ch = channels.get(channel)
            if ch is None:
                self.fail(where, f"no channel {channel}")
                continue
            if config_key is None:
                if ch.get("address") != "{topic}" or "topic" not in ch.get("parameters", {}):
                    self.fail(where, f"channel {channel} is not parameterised by the job's topic")
            else:
                covered.add(config_key)
                for source, defaults in (("README", readme), ("include/belfry/config.h", code)):
                    if defaults.get(config_key) != ch.get("address"):
                        self.fail(where, f"channel {channel} is {ch.get('address')!r}; the default "
                                         f"kafka.{config_key} in {source} is {defaults.get(config_key)!r}")
            ops = [op for op in doc.get("operations", {}).values()
                   if op.get("channel", {}).get("$ref") == f"#/channels/{channel}"]
            if not ops:
                self.fail(where, f"no operation on channel {channel}")
            for op in ops:
                if op.get("action") != action:
                    self.fail(where, f"belfry should {action} on {channel}, the document says {op.get('action')}")
        for key in sorted(topic_keys - covered):
            self.fail(where, f"config topic kafka.{key} has no channel")
        extra = set(channels) - set(self.CHANNELS)
        for channel in sorted(extra):
            self.fail(where, f"channel {channel} is not known to this test")

    # ------------------------------------------------------------------------------------------
    # 5. The messages belfry's own tests embed in raw string literals.

    # A message kind by its required fields, and how many the tests embed at least (the change
    # event tests parse the encoder's output instead of comparing it with a literal).
    KINDS = [
        ("trigger.schema.json", {"jobId", "scheduledFor", "intervalMinutes", "jobDetails"}, 1),
        ("command-outcome.schema.json", {"id", "op", "status", "error", "partition", "offset"}, 1),
        ("change-event.schema.json", {"version", "changeId", "jobId", "op", "before", "after"}, 0),
    ]

    def embedded_messages(self):
        """(where, value) for every JSON object that adjacent raw string literals R"(...)" form."""
        literal = re.compile(r'R"\((.*?)\)"', re.S)
        for path in sorted((self.root / "tests").rglob("*.cc")):
            text = path.read_text(encoding="utf-8", errors="replace")
            matches = list(literal.finditer(text))
            i = 0
            while i < len(matches):
                parts, end, j = [matches[i].group(1)], matches[i].end(), i + 1
                while j < len(matches) and re.fullmatch(r"\s*", text[end:matches[j].start()]):
                    parts.append(matches[j].group(1))
                    end = matches[j].end()
                    j += 1
                line = text.count("\n", 0, matches[i].start()) + 1
                value = self.parse_json("".join(parts))
                if value is not None and isinstance(value[0], dict):
                    yield f"{path.relative_to(self.root)}:{line}", value[0]
                i = j

    def check_embedded(self):
        found = {name: 0 for name, _, _ in self.KINDS}
        for where, value in self.embedded_messages():
            for name, fields, _ in self.KINDS:
                if fields <= set(value):
                    found[name] += 1
                    self.expect_valid(where, name, value)
        for name, _, least in self.KINDS:
            if found[name] < least:
                self.fail("tests/**/*.cc", f"{found[name]} embedded messages of {name} found, fewer than {least}: is the scan broken?")
        return found


    # ------------------------------------------------------------------------------------------
    # 6. The records the integration tests consumed from belfry's topics, and those they produced
    # (--dump; written by tests/integration/message_dump.cc when BELFRY_MESSAGE_DUMP is set).

    @staticmethod
    def produced_kind(topic):
        """What a produced record is, by its topic: ItestWorld's "<t>.commands", and the
        executions topics "it.executions.<run>" of executions_itest and retry_itest."""
        if topic.endswith(".commands"):
            return "command"
        if topic.startswith("it.executions.") and not topic.startswith("it.executions.dlq."):
            return "report"
        return None

    @staticmethod
    def dump_kind(record):
        topic = record["topic"]
        if record["kind"] == "produced":
            return "produced"
        if record["kind"] == "trigger" or topic.endswith(".triggers"):
            return "trigger"
        if topic.endswith(("triggers.dlq", "triggers-dlq")):
            return "trigger_dlq"
        if ".dlq" in topic:
            return "dlq"
        if topic.endswith(".results"):
            return "outcome"
        if topic.endswith(".changes"):
            return "change"
        return None

    def check_dump(self, path, brokers=None):
        self.cross_check = False  # the reference validator judges only what the fast one refuses
        if not path.exists():
            print(f"{path}: no records were dumped")
            return Counter()
        seen = Counter()
        produced = []  # (where, record, value bytes)
        verdicts = {}  # (source topic, partition, offset) -> (status, op, error)
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            where = f"{path.name} line {number}"
            try:
                record = json.loads(line)
                value = None if record["value"] is None else base64.b64decode(record["value"])
                headers = {k: base64.b64decode(v).decode("utf-8", errors="replace")
                           for k, v in record["headers"].items()}
            except (ValueError, KeyError) as e:
                self.fail(where, f"not a dump record: {e}")
                continue
            where += f" ({record['topic']})"
            kind = self.dump_kind(record)
            seen[kind] += 1
            if kind is None:
                self.fail(where, "a topic of no known kind: name it in dump_kind()")
                continue
            if kind == "produced":
                produced.append((where, record, value))
                continue
            if kind == "dlq":
                self.judge_dlq(where, record["topic"], headers, verdicts)
                continue
            parsed = None if value is None else self.parse_json(value)
            if parsed is None:
                self.fail(where, f"the {kind} value is not JSON")
                continue
            if kind == "trigger":
                self.expect_valid(where, "trigger.schema.json", parsed[0])
                self.expect_valid(where + " headers", "trigger-headers.schema.json", headers)
            elif kind == "trigger_dlq":  # the refused trigger's own value, and the DLQ's headers
                self.expect_valid(where, "trigger.schema.json", parsed[0])
                self.expect_valid(where + " headers", "trigger-dlq-headers.schema.json", headers)
            elif kind == "outcome":
                self.judge_outcome(where, record["topic"], parsed[0], verdicts)
            else:
                self.expect_valid(where, "change-event.schema.json", parsed[0])
        if brokers:
            seen.update(self.broker_verdicts(brokers, produced, verdicts))
        seen.update(self.judge_produced(produced, verdicts))
        return seen

    @staticmethod
    def dlq_source(dlq_topic):
        """The topic whose rejected records a DLQ topic holds: ItestWorld's "<t>.dlq" takes
        "<t>.commands"; "it.executions.dlq.<run>" takes "it.executions.<run>"."""
        if dlq_topic.startswith("it.executions.dlq."):
            return dlq_topic.replace(".dlq.", ".", 1)
        if dlq_topic.endswith(".dlq"):
            return dlq_topic[:-len(".dlq")] + ".commands"
        return None

    def judge_dlq(self, where, topic, headers, verdicts):
        """A DLQ record against its schema; a rejected command's or report's record names its
        source, which is belfry's verdict on a produced record (judge_produced)."""
        self.expect_valid(where, "dlq-headers.schema.json", headers)
        source = self.dlq_source(topic)
        try:
            position = (source, int(headers["belfry-source-partition"]), int(headers["belfry-source-offset"]))
        except (KeyError, ValueError):
            return
        if source is not None:
            verdicts.setdefault(position, ("rejected", "unknown", headers.get("belfry-error", "")))

    def judge_outcome(self, where, topic, outcome, verdicts):
        """A command outcome against its schema; it names its command's partition and offset and
        is belfry's verdict on it, which wins over the same command's DLQ record."""
        self.expect_valid(where, "command-outcome.schema.json", outcome)
        if isinstance(outcome, dict) and isinstance(outcome.get("partition"), int) \
                and isinstance(outcome.get("offset"), int):
            source = topic[:-len(".results")] + ".commands"
            verdicts[(source, outcome["partition"], outcome["offset"])] = (
                outcome.get("status"), outcome.get("op"), outcome.get("error") or "")

    def broker_verdicts(self, brokers, produced, verdicts):
        """The verdicts the dump lacks, read from the broker after the tests (their topics stay):
        for each topic with a produced record that has none, the whole results topic of a
        command topic and the whole DLQ topic of either. Each record read is checked against its
        schema as the dumped ones are. A report no DLQ record names, at an offset below what a
        consumer group committed on its partition (only belfry's consumers commit in the tests),
        was accepted: belfry commits a report's offset once it is stored."""
        from confluent_kafka import Consumer, KafkaException, TopicPartition
        from confluent_kafka.admin import AdminClient
        from confluent_kafka import ConsumerGroupTopicPartitions

        pending = {}  # produced topic -> [(partition, offset)] without a verdict
        for _, record, _ in produced:
            kind = self.produced_kind(record["topic"])
            if kind is not None and (record["topic"], record["partition"], record["offset"]) not in verdicts:
                pending.setdefault(record["topic"], []).append((record["partition"], record["offset"]))
        read = Counter()
        if not pending:
            return read
        admin = AdminClient({"bootstrap.servers": brokers})
        existing = admin.list_topics(timeout=30).topics
        consumer = Consumer({"bootstrap.servers": brokers, "group.id": "message-contracts-checker",
                             "enable.auto.commit": False, "enable.partition.eof": False})

        def whole(topic):
            """Every record of a topic, up to its high watermarks now."""
            if topic not in existing:
                return
            ends = {}
            for p in existing[topic].partitions:
                low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
                if high > low:
                    ends[p] = (low, high)
            if not ends:
                return
            consumer.assign([TopicPartition(topic, p, low) for p, (low, _) in ends.items()])
            left = {p: high for p, (_, high) in ends.items()}
            idle = 0
            while left and idle < 20:
                batch = consumer.consume(1000, timeout=1.0)
                idle = idle + 1 if not batch else 0
                for m in batch:
                    if m.error():
                        raise KafkaException(m.error())
                    if m.partition() in left and m.offset() + 1 >= left[m.partition()]:
                        del left[m.partition()]
                    yield m
            consumer.unassign()
            if left:
                self.fail(topic, f"could not read to the end of partitions {sorted(left)} from the broker")

        def headers_of(m):
            return {k: (v or b"").decode("utf-8", errors="replace") for k, v in (m.headers() or [])}

        try:
            for topic in sorted(pending):
                if self.produced_kind(topic) == "command":
                    results = topic[:-len(".commands")] + ".results"
                    for m in whole(results):
                        where = f"broker {results} {m.partition()}/{m.offset()}"
                        parsed = None if m.value() is None else self.parse_json(m.value())
                        if parsed is None:
                            self.fail(where, "the outcome value is not JSON")
                            continue
                        self.judge_outcome(where, results, parsed[0], verdicts)
                        read["broker outcome"] += 1
                    dlq = topic[:-len(".commands")] + ".dlq"
                else:
                    dlq = topic.replace("it.executions.", "it.executions.dlq.", 1)
                for m in whole(dlq):
                    self.judge_dlq(f"broker {dlq} {m.partition()}/{m.offset()}", dlq, headers_of(m), verdicts)
                    read["broker dlq"] += 1
            reports = sorted(t for t in pending if self.produced_kind(t) == "report")
            if reports:
                committed = {}  # (topic, partition) -> the highest offset a group committed
                groups = admin.list_consumer_groups().result(timeout=30).valid
                for g in groups:
                    if g.group_id == "message-contracts-checker":
                        continue
                    request = [ConsumerGroupTopicPartitions(g.group_id)]
                    for offsets in admin.list_consumer_group_offsets(request).values():
                        for tp in offsets.result(timeout=30).topic_partitions:
                            if tp.topic in reports and tp.offset >= 0:
                                key = (tp.topic, tp.partition)
                                committed[key] = max(committed.get(key, 0), tp.offset)
                for topic in reports:
                    for partition, offset in pending[topic]:
                        position = (topic, partition, offset)
                        if position not in verdicts and offset < committed.get((topic, partition), 0):
                            verdicts[position] = ("applied", "report", "")
        finally:
            consumer.close()
        return read

    def judge_produced(self, produced, verdicts):
        """Each command or report a test produced, by belfry's verdict on it: an applied command
        conforms to its schema (a tombstone: its key is an id); one belfry rejected as a message
        (op "unknown", or a report's DLQ record) fails its schema or is explained by a rule of
        docs/contracts.md; one rejected by the stored state (a real op: not_found, ...) conforms.
        A record with no verdict, in the dump or on the broker, is only counted (belfry never
        consumed it: its test ended first, or a broker outage was the test)."""
        judged = Counter()
        for where, record, value in produced:
            kind = self.produced_kind(record["topic"])
            if kind is None:
                judged["produced, other topic"] += 1
                continue
            key = None if record["key"] is None else base64.b64decode(record["key"]).decode("utf-8", errors="replace")
            verdict = verdicts.get((record["topic"], record["partition"], record["offset"]))
            if verdict is None:
                judged[f"produced {kind}, no verdict"] += 1
                continue
            status, op, error = verdict
            schema = "command.schema.json" if kind == "command" else "execution-report.schema.json"
            where += f" offset {record['partition']}/{record['offset']}, {status}"
            if status == "applied" or (status == "rejected" and op not in (None, "unknown")):
                if value is None:
                    if kind != "command" or key is None or self.errors(schema, key, "/$defs/id"):
                        self.fail(where, "belfry accepted a tombstone whose key is not an id")
                else:
                    parsed = self.parse_json(value)
                    if parsed is None:
                        self.fail(where, "belfry accepted a value that is not JSON")
                    else:
                        self.expect_valid(where, schema, parsed[0])
            else:
                reason = error.split(":", 1)[0]
                self.explain_rejection(where, schema, key, value, reason)
            judged[f"produced {kind}, {status}"] += 1
        return judged


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source-dir", default=pathlib.Path(__file__).resolve().parents[2], type=pathlib.Path)
    parser.add_argument("--dump", type=pathlib.Path,
                        help="check only the records the integration tests dumped to this file")
    parser.add_argument("--brokers", default=os.environ.get("BELFRY_KAFKA_BROKERS"),
                        help="with --dump: read the verdicts the dump lacks from these brokers "
                             "(default $BELFRY_KAFKA_BROKERS; none: only count those records)")
    args = parser.parse_args()
    c = Checker(args.source_dir.resolve())
    if args.dump is not None:
        seen = c.check_dump(args.dump, args.brokers)
        for failure in c.failures:
            print("FAIL", failure)
        print(f"{sum(seen.values())} dumped records: " + ", ".join(f"{n} {k}" for k, n in sorted(seen.items(), key=str))
              + f"; {len(c.failures)} failures")
        return 1 if c.failures else 0
    c.check_schemas()
    if c.failures:  # nothing else can be judged with a broken schema
        for failure in c.failures:
            print("FAIL", failure)
        return 1
    c.check_message_vectors("commands.json", "command.schema.json")
    c.check_message_vectors("execution-reports.json", "execution-report.schema.json")
    c.check_encoding_vectors()
    c.check_hostile("hostile", "command.schema.json")
    c.check_hostile("hostile_reports", "execution-report.schema.json")
    c.check_asyncapi()
    embedded = c.check_embedded()
    for failure in c.failures:
        print("FAIL", failure)
    print(f"{c.checked} checks; embedded messages validated: "
          + ", ".join(f"{n} {k}" for k, n in embedded.items()) + f"; {len(c.failures)} failures")
    return 1 if c.failures else 0


if __name__ == "__main__":
    sys.exit(main())
