package dev.belfry.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.clients.consumer.OffsetResetStrategy;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;

/** Hermetic: exact encodings, the client-side rules, dedupe, and the consumer's order of work. */
class ClientTest {
  static String reason(Command c) {
    try {
      c.validate(Rules.DEFAULT);
      return null;
    } catch (ValidationException e) {
      return e.reason();
    }
  }

  static String json(byte[] b) {
    return new String(b, StandardCharsets.UTF_8);
  }

  @Test
  void encodesTheReadmeExamples() {
    Upsert job = Upsert.builder("shipment-42-poll")
        .schedule(Schedule.Every.named("EVERY_15_MINUTES").between("2026-11-22T13:00:00Z", null))
        .topic("tracking.poll").key("shipment-42").owner("tracking-svc").jobDetails(Map.of("shipmentId", 42)).build();
    assertEquals("{\"op\":\"upsert\",\"id\":\"shipment-42-poll\",\"executionInterval\":\"EVERY_15_MINUTES\","
        + "\"startDateTime\":\"2026-11-22T13:00:00Z\",\"topic\":\"tracking.poll\",\"key\":\"shipment-42\","
        + "\"owner\":\"tracking-svc\",\"jobDetails\":{\"shipmentId\":42}}", json(job.validate(Rules.DEFAULT).toJson()));
    assertEquals("{\"op\":\"upsert\",\"id\":\"report-berlin\",\"cron\":\"0 9 * * MON-FRI\",\"timeZone\":\"Europe/Berlin\","
        + "\"topic\":\"reports.daily\"}",
        json(Upsert.builder("report-berlin").cron("0 9 * * MON-FRI", "Europe/Berlin").topic("reports.daily").build().toJson()));
    assertEquals("2026-11-22T18:00:00.250Z", Schedule.Once.at(Instant.parse("2026-11-22T18:00:00.250Z")).runAt());
    assertEquals("{\"op\":\"pause\",\"id\":\"j\",\"reason\":\"carrier API outage\",\"actor\":\"oncall-ana\"}",
        json(new Command.Pause("j", "carrier API outage", "oncall-ana").toJson()));
    assertEquals("{\"op\":\"resume\",\"id\":\"j\"}", json(new Command.Resume("j").toJson()));
    assertEquals("{\"op\":\"delete\",\"id\":\"j\"}", json(new Command.Delete("j").toJson()));
  }

  @Test
  void encodesAReport() {
    Trigger t = Trigger.parse(("{\"jobId\":\"j\",\"scheduledFor\":\"2026-11-22T13:37:32.500Z\",\"intervalMinutes\":15,"
        + "\"attempt\":2,\"jobDetails\":{\"x\":1}}").getBytes(StandardCharsets.UTF_8), "j", "t", 0, 0);
    ExecutionReport r = ExecutionReport.of(t, "failed", "HTTP 503", 1795354653010L, 1795354654200L, "poller-7");
    assertEquals("{\"jobId\":\"j\",\"scheduledFor\":\"2026-11-22T13:37:32.500Z\",\"status\":\"failed\",\"error\":\"HTTP 503\","
        + "\"startedAt\":\"2026-11-22T13:37:33.010Z\",\"finishedAt\":\"2026-11-22T13:37:34.200Z\",\"worker\":\"poller-7\","
        + "\"attempt\":2}", json(r.validate().toJson()));
  }

  @Test
  void idsTopicsIntervals() {
    assertEquals("missing_id", reason(new Command.Pause("")));
    assertEquals("invalid_id", reason(new Command.Pause("x".repeat(256))));
    assertNull(reason(new Command.Pause("é".repeat(127))));
    assertEquals("invalid_id", reason(new Command.Pause("é".repeat(128))));
    assertEquals("invalid_id", reason(new Command.Pause("a#trigger#b")));
    assertEquals("invalid_id", reason(new Command.Pause("a\u007fb")));
    assertNull(reason(Upsert.builder("j").every("EVERY_2_HOURS").topic("a".repeat(249)).build()));
    assertEquals("invalid_topic", reason(Upsert.builder("j").every("EVERY_HOUR").topic("a".repeat(250)).build()));
    assertEquals("forbidden_topic", reason(Upsert.builder("j").every("EVERY_HOUR").topic("__x").build()));
    assertEquals("unsupported_interval", reason(Upsert.builder("j").every("EVERY_7_MINUTES").topic("t").build()));
    assertEquals("unsupported_interval", reason(Upsert.builder("j").every("EVERY_05_MINUTES").topic("t").build()));
    assertEquals("conflicting_interval",
        reason(Upsert.builder("j").schedule(new Schedule.Every("EVERY_HOUR", 30, null, null, null)).topic("t").build()));
    assertEquals("offset_out_of_range",
        reason(Upsert.builder("j").schedule(Schedule.Every.minutes(5).withOffset(5)).topic("t").build()));
    assertEquals("missing_field", reason(Upsert.builder("j").every("EVERY_HOUR").build()));
  }

  @Test
  void cronAndZones() {
    for (String good : List.of("0 9 * * MON-FRI", "*/60 * * * *", "0 0 1 jan *", "@hourly", "5/15 1-5/2 * * 1/3", "0 0 * * 7",
        "0\t0 * * *")) {
      assertNull(reason(Upsert.builder("j").cron(good, null).topic("t").build()), good);
    }
    for (String bad : List.of("0 9 * *", "60 * * * *", "*/61 * * * *", "0 0 * * 8", "5-1 * * * *", "@reboot", "@daily x",
        "0 0 0 * *", "0 0 * FOO *", "0,,1 * * * *", "* * * * * *", "*/0 * * * *", "0 0 * * */8", "0 9 * * MON\n")) {
      assertEquals("invalid_cron", reason(Upsert.builder("j").cron(bad, null).topic("t").build()), bad);
    }
    assertNull(reason(Upsert.builder("j").cron("0 9 * * *", "America/New_York").topic("t").build()));
    assertEquals("invalid_time_zone", reason(Upsert.builder("j").cron("0 9 * * *", "Mars/Base").topic("t").build()));
    assertEquals("invalid_time_zone", reason(Upsert.builder("j").cron("0 9 * * *", "+01:00").topic("t").build()));
  }

  @Test
  void dates() {
    for (String good : List.of("2026-11-22T18:00:00Z", "2026-11-22 18:00:00", "2026-11-22T18:00:00.123456789+05:30",
        "2028-02-29T00:00:00Z")) {
      assertNull(reason(Upsert.builder("j").once(good).topic("t").build()), good);
    }
    for (String bad : List.of("2026-11-22", "2026-02-29T00:00:00Z", "1969-12-31T23:59:59Z", "1970-01-01T00:30:00+01:00",
        "9999-12-31T23:30:00-01:00", "2026-11-22T24:00:00Z", "2026-11-22T18:00:00+24:00", "2026-11-22T18:00:00.Z")) {
      assertEquals("invalid_date", reason(Upsert.builder("j").once(bad).topic("t").build()), bad);
    }
    assertEquals("end_before_start", reason(Upsert.builder("j")
        .schedule(Schedule.Every.named("EVERY_HOUR").between("2026-01-02T00:00:00Z", "2026-01-01T00:00:00Z")).topic("t").build()));
  }

  @Test
  void otherFields() {
    java.util.function.Function<java.util.function.UnaryOperator<Upsert.Builder>, String> up =
        f -> reason(f.apply(Upsert.builder("j").every("EVERY_HOUR").topic("t")).build());
    assertEquals("invalid_key", up.apply(b -> b.key("k".repeat(1025))));
    assertEquals("invalid_owner", up.apply(b -> b.owner("o\n")));
    assertEquals("invalid_priority", up.apply(b -> b.priority(1_000_001)));
    assertEquals("invalid_retries", up.apply(b -> b.maxRetries(-1)));
    assertEquals("invalid_retry_backoff", up.apply(b -> b.retryBackoff(new Upsert.RetryBackoff(null, 11.0, null))));
    assertEquals("invalid_retry_backoff", up.apply(b -> b.retryBackoff(new Upsert.RetryBackoff(null, null, 30))));
    assertEquals("invalid_labels", up.apply(b -> b.labels(Map.of("a/b", "x", "-c", "y"))));
    assertEquals("invalid_labels", up.apply(b -> b.labels(
        IntStream.range(0, 17).boxed().collect(Collectors.toMap(String::valueOf, i -> "x")))));
    assertEquals("details_too_large", up.apply(b -> b.jobDetails(Map.of("big", "x".repeat(65536)))));
    assertEquals("invalid_details", up.apply(b -> b.jobDetails(Map.of("k\0", 1))));
    assertEquals("invalid_max_fires", up.apply(b -> b.maxFires(0)));
    assertEquals("invalid_reason", up.apply(b -> b.reason("r".repeat(1025))));
    assertEquals("invalid_actor", up.apply(b -> b.actor("a\tb")));
    assertEquals("invalid_max_fires", reason(Upsert.builder("j").once("2026-11-22T18:00:00Z").topic("t").maxFires(2).build()));
  }

  @Test
  void dedupeWindowCapacityAndRetries() {
    AtomicLong now = new AtomicLong();
    Deduper<String> d = new Deduper<>(Duration.ofSeconds(10), 2, now::get);
    d.remember("a");
    now.set(Duration.ofMillis(9900).toNanos());
    assertTrue(d.seen("a"));
    now.set(Duration.ofSeconds(10).toNanos());
    assertFalse(d.seen("a"));
    d.remember("b");
    d.remember("c");
    d.remember("d");
    assertFalse(d.seen("b"));
    assertTrue(d.seen("c") && d.seen("d"));
    String base = "{\"jobId\":\"j\",\"scheduledFor\":\"2026-11-22T13:37:32.500Z\",\"intervalMinutes\":15,%s\"jobDetails\":{}}";
    Trigger first = Trigger.parse(String.format(base, "").getBytes(StandardCharsets.UTF_8), "j", "t", 0, 0);
    Trigger repeat = Trigger.parse(String.format(base, "").getBytes(StandardCharsets.UTF_8), "j", "t", 0, 1);
    Trigger retry = Trigger.parse(String.format(base, "\"attempt\":1,").getBytes(StandardCharsets.UTF_8), "j", "t", 0, 2);
    assertEquals(first.dedupeKey(), repeat.dedupeKey());
    assertNotEquals(first.dedupeKey(), retry.dedupeKey());
  }

  static final String TRIGGER = "{\"jobId\":\"j\",\"scheduledFor\":\"2026-11-22T13:37:32.500Z\",\"intervalMinutes\":15,"
      + "\"jobDetails\":{\"n\":%d}}";

  /** A consumer on Kafka's mocks, with one partition of topic "jobs" holding {@code values}. */
  static TriggerConsumer consumer(MockConsumer<byte[], byte[]> mc, MockProducer<byte[], byte[]> mp, String... values) {
    TopicPartition tp = new TopicPartition("jobs", 0);
    TriggerConsumer c = new TriggerConsumer(
        TriggerConsumer.Options.of("unused:9092", "g", List.of("jobs")).executionsTopic("execs").worker("w-1"), mc, mp);
    mc.rebalance(List.of(tp));
    mc.updateBeginningOffsets(Map.of(tp, 0L));
    for (int i = 0; i < values.length; i++) {
      mc.addRecord(new ConsumerRecord<>("jobs", 0, i, "j".getBytes(StandardCharsets.UTF_8),
          values[i].getBytes(StandardCharsets.UTF_8)));
    }
    return c;
  }

  static List<JsonNode> reports(MockProducer<byte[], byte[]> mp) throws Exception {
    List<JsonNode> out = new ArrayList<>();
    for (var r : mp.history()) {
      assertEquals("execs", r.topic());
      assertEquals("j", new String(r.key(), StandardCharsets.UTF_8));
      out.add(Command.JSON.readTree(r.value()));
    }
    return out;
  }

  @Test
  void reportsThenCommitsAndSkipsRepeats() throws Exception {
    MockConsumer<byte[], byte[]> mc = new MockConsumer<>(OffsetResetStrategy.EARLIEST);
    MockProducer<byte[], byte[]> mp = new MockProducer<>(true, new ByteArraySerializer(), new ByteArraySerializer());
    TriggerConsumer c = consumer(mc, mp, String.format(TRIGGER, 1), String.format(TRIGGER, 1));
    TopicPartition tp = new TopicPartition("jobs", 0);
    List<String> events = new ArrayList<>();
    Trigger t = c.poll(tr -> {
      events.add("handler, reports so far " + mp.history().size() + ", committed " + mc.committed(java.util.Set.of(tp)));
    }, Duration.ofMillis(100));
    assertNotNull(t);
    assertEquals(List.of("handler, reports so far 1, committed {}"), events);
    assertEquals(1, mc.committed(java.util.Set.of(tp)).get(tp).offset());
    assertNull(c.poll(tr -> events.add("repeat handled"), Duration.ofMillis(100)));
    assertEquals(1, events.size());
    assertEquals(2, mc.committed(java.util.Set.of(tp)).get(tp).offset());
    List<JsonNode> r = reports(mp);
    assertEquals(List.of("running", "succeeded"), r.stream().map(n -> n.get("status").asText()).toList());
    JsonNode done = r.get(1);
    assertEquals("2026-11-22T13:37:32.500Z", done.get("scheduledFor").asText());
    assertEquals("w-1", done.get("worker").asText());
    assertEquals(0, done.get("attempt").asInt());
    assertTrue(done.get("startedAt").asText().compareTo(done.get("finishedAt").asText()) <= 0);
  }

  @Test
  void aFailingHandlerIsReportedFailedAndCommitted() throws Exception {
    MockConsumer<byte[], byte[]> mc = new MockConsumer<>(OffsetResetStrategy.EARLIEST);
    MockProducer<byte[], byte[]> mp = new MockProducer<>(true, new ByteArraySerializer(), new ByteArraySerializer());
    TriggerConsumer c = consumer(mc, mp, String.format(TRIGGER, 2));
    c.poll(tr -> {
      throw new IllegalStateException("carrier said 503");
    }, Duration.ofMillis(100));
    List<JsonNode> r = reports(mp);
    assertEquals("failed", r.get(1).get("status").asText());
    assertEquals("carrier said 503", r.get(1).get("error").asText());
    TopicPartition tp = new TopicPartition("jobs", 0);
    assertEquals(1, mc.committed(java.util.Set.of(tp)).get(tp).offset());
  }

  @Test
  void aReportThatIsNotAcknowledgedLeavesTheTriggerUncommitted() {
    MockConsumer<byte[], byte[]> mc = new MockConsumer<>(OffsetResetStrategy.EARLIEST);
    // A producer whose reports all fail (the broker refused them): the trigger must not be committed.
    MockProducer<byte[], byte[]> mp = new MockProducer<>(false, new ByteArraySerializer(), new ByteArraySerializer()) {
      @Override
      public synchronized void flush() {
        while (errorNext(new org.apache.kafka.common.errors.TimeoutException("no broker"))) { }
      }
    };
    TriggerConsumer c = consumer(mc, mp, String.format(TRIGGER, 3));
    Map<String, Integer> calls = new HashMap<>();
    assertThrows(org.apache.kafka.common.KafkaException.class,
        () -> c.poll(tr -> calls.merge("handled", 1, Integer::sum), Duration.ofMillis(100)));
    assertEquals(1, calls.get("handled"));
    TopicPartition tp = new TopicPartition("jobs", 0);
    assertNull(mc.committed(java.util.Set.of(tp)).get(tp));
  }

  @Test
  void recordsOfARevokedPartitionAreNotHandled() {
    MockConsumer<byte[], byte[]> mc = new MockConsumer<>(OffsetResetStrategy.EARLIEST);
    MockProducer<byte[], byte[]> mp = new MockProducer<>(true, new ByteArraySerializer(), new ByteArraySerializer());
    TriggerConsumer c = consumer(mc, mp, String.format(TRIGGER, 5),
        String.format(TRIGGER, 6).replace("13:37:32.500Z", "13:38:32.500Z")); // the next slot, not a repeat
    List<Integer> handled = new ArrayList<>();
    c.poll(t -> handled.add(t.jobDetails().get("n").asInt()), Duration.ofMillis(100)); // buffers both, handles n=5
    mc.rebalance(List.of()); // partition 0 moves to another member
    assertNull(c.poll(t -> handled.add(t.jobDetails().get("n").asInt()), Duration.ofMillis(100)));
    assertEquals(List.of(5), handled);
  }

  /**
   * A producer on Kafka's mocks (commands to "cmds") whose results topic ("results", one
   * partition) holds {@code outcomes}; MockProducer puts the n-th command at partition 0, offset n.
   */
  static BelfryProducer producer(MockProducer<byte[], byte[]> mp, String actor, String... outcomes) {
    MockConsumer<byte[], byte[]> results = new MockConsumer<>(OffsetResetStrategy.EARLIEST);
    TopicPartition rp = new TopicPartition("results", 0);
    results.assign(List.of(rp));
    results.updateBeginningOffsets(Map.of(rp, 0L));
    for (int i = 0; i < outcomes.length; i++) {
      results.addRecord(new ConsumerRecord<>("results", 0, i, null, outcomes[i].getBytes(StandardCharsets.UTF_8)));
    }
    return new BelfryProducer(BelfryProducer.Options.of("unused:9092").topics("cmds", "results").actor(actor), mp, results);
  }

  @Test
  void encodesTriggerBackfillAndTombstone() {
    assertEquals("{\"op\":\"trigger\",\"id\":\"j\"}", json(new Command.Trigger("j").validate(Rules.DEFAULT).toJson()));
    assertEquals("{\"op\":\"trigger\",\"id\":\"j\",\"reason\":\"r\",\"actor\":\"a\"}",
        json(new Command.Trigger("j", "r", "a").toJson()));
    assertEquals("{\"op\":\"backfill\",\"id\":\"j\",\"from\":\"2026-11-20T00:00:00Z\",\"to\":\"2026-11-21T00:00:00Z\"}",
        json(Command.Backfill.of("j", "2026-11-20T00:00:00Z", "2026-11-21T00:00:00Z").toJson()));
    assertEquals("{\"op\":\"backfill\",\"id\":\"j\",\"from\":\"2026-11-20T00:00:00.000Z\",\"to\":\"2026-11-21T00:00:00.250Z\","
        + "\"ratePerMinute\":120,\"dryRun\":true,\"reason\":\"outage replay\",\"actor\":\"oncall-ana\"}",
        json(Command.Backfill.of("j", Instant.parse("2026-11-20T00:00:00Z"), Instant.parse("2026-11-21T00:00:00.250Z"))
            .withRate(120).withDryRun(true).withNote("outage replay", "oncall-ana").toJson()));
    Command.Tombstone t = new Command.Tombstone("j", "customer left", null).validate(Rules.DEFAULT);
    assertNull(t.toJson());
    assertEquals("delete", t.op());
  }

  @Test
  void backfillRangeRateAndIds() {
    long ts = IsoTime.parse("2026-11-27T08:00:00Z").getAsLong();
    java.util.function.Function<Command.Backfill, String> at = b -> {
      try {
        b.validate(Rules.DEFAULT, ts);
        return null;
      } catch (ValidationException e) {
        return e.reason();
      }
    };
    assertNull(at.apply(Command.Backfill.of("j", "2026-11-26T08:00:00Z", "2026-11-27T08:00:00Z")), "to = the timestamp");
    assertEquals("invalid_backfill", at.apply(Command.Backfill.of("j", "2026-11-26T08:00:00Z", "2026-11-27T08:00:00.001Z")));
    assertEquals("invalid_backfill", at.apply(Command.Backfill.of("j", "2026-11-20T00:00:00Z", "2026-11-20T00:00:00Z")));
    assertEquals("invalid_backfill", at.apply(Command.Backfill.of("j", "2026-11-20T00:00:01Z", "2026-11-20T00:00:00Z")));
    assertNull(at.apply(Command.Backfill.of("j", "2025-11-26T08:00:00Z", "2026-11-27T08:00:00Z")), "366 days");
    assertEquals("invalid_backfill", at.apply(Command.Backfill.of("j", "2025-11-26T07:59:59.999Z", "2026-11-27T08:00:00Z")));
    assertEquals("missing_field", at.apply(Command.Backfill.of("j", null, "2026-11-21T00:00:00Z")));
    assertEquals("missing_field", at.apply(Command.Backfill.of("j", "2026-11-20T00:00:00Z", null)));
    assertEquals("invalid_date", at.apply(Command.Backfill.of("j", "2026-11-20", "2026-11-21T00:00:00Z")));
    assertEquals("invalid_date", at.apply(Command.Backfill.of("j", "2026-11-20T00:00:00Z", "2026-11-31T00:00:00Z")));
    Command.Backfill day = Command.Backfill.of("j", "2026-11-20T00:00:00Z", "2026-11-21T00:00:00Z");
    assertNull(at.apply(day.withRate(1)));
    assertNull(at.apply(day.withRate(10_000)));
    assertEquals("invalid_rate", at.apply(day.withRate(0)));
    assertEquals("invalid_rate", at.apply(day.withRate(10_001)));
    assertEquals("invalid_id", at.apply(Command.Backfill.of("j#backfill#1", "2026-11-20T00:00:00Z", "2026-11-21T00:00:00Z")));
    assertEquals("invalid_reason", at.apply(day.withNote("a\nb", null)));
    // Without a timestamp: the client's clock.
    Instant now = Instant.now();
    assertNull(reason(Command.Backfill.of("j", now.minus(Duration.ofDays(1)), now.minusSeconds(60))));
    assertEquals("invalid_backfill", reason(Command.Backfill.of("j", now.minus(Duration.ofDays(1)), now.plusSeconds(3600))));
    assertEquals("missing_id", reason(new Command.Trigger("")));
    assertEquals("invalid_id", reason(new Command.Trigger("a#trigger#b")));
    assertEquals("invalid_actor", reason(new Command.Trigger("j", null, "a\tb")));
    assertEquals("missing_id", reason(new Command.Tombstone(null)));
    assertEquals("invalid_id", reason(new Command.Tombstone("a#retry#1")));
    assertEquals("invalid_reason", reason(new Command.Tombstone("j", "r".repeat(1025), null)));
  }

  @Test
  void triggerBackfillAndTombstoneAreSentAndTheirOutcomesRead() throws Exception {
    MockProducer<byte[], byte[]> mp = new MockProducer<>(true, new ByteArraySerializer(), new ByteArraySerializer());
    BelfryProducer p = producer(mp, "svc@host",
        "{\"id\":\"j\",\"op\":\"trigger\",\"status\":\"applied\",\"error\":null,\"slots\":1,\"partition\":0,\"offset\":0}",
        "{\"id\":\"j\",\"op\":\"backfill\",\"status\":\"applied\",\"error\":null,\"slots\":48,\"covered\":12,\"dryRun\":true,"
            + "\"partition\":0,\"offset\":1}",
        "{\"id\":\"j\",\"op\":\"delete\",\"status\":\"applied\",\"error\":null,\"partition\":0,\"offset\":2}",
        "{\"id\":\"j\",\"op\":\"delete\",\"status\":\"applied\",\"error\":null,\"partition\":0,\"offset\":3}");
    Outcome t = p.trigger("j", Duration.ofSeconds(5));
    assertEquals("trigger", t.op());
    assertEquals(1L, t.slots());
    assertNull(t.covered());
    assertNull(t.dryRun());
    Instant now = Instant.now();
    Outcome b = p.backfill(Command.Backfill.of("j", now.minus(Duration.ofDays(1)), now.minusSeconds(60)).withDryRun(true),
        Duration.ofSeconds(5));
    assertEquals(List.of(48L, 12L, true), List.of(b.slots(), b.covered(), b.dryRun()));
    Outcome d = p.deleteByTombstone("j", Duration.ofSeconds(5));
    assertEquals(List.of("delete", 2L), List.of(d.op(), d.offset()));
    assertNull(d.slots());
    Outcome noted = p.send(new Command.Tombstone("j", "customer left", "oncall-ana"), Duration.ofSeconds(5));
    assertEquals(3, noted.offset());

    var sent = mp.history();
    assertEquals(4, sent.size());
    for (var r : sent) {
      assertEquals("cmds", r.topic());
      assertEquals("j", new String(r.key(), StandardCharsets.UTF_8));
    }
    assertEquals("{\"op\":\"trigger\",\"id\":\"j\"}", json(sent.get(0).value()));
    assertEquals("svc@host", VectorsTest.header(sent.get(0), "belfry-actor"));
    JsonNode backfill = Command.JSON.readTree(sent.get(1).value());
    assertEquals("backfill", backfill.get("op").asText());
    assertTrue(backfill.get("dryRun").asBoolean());
    // A tombstone: no value; the producer's actor, or the command's note, in the headers.
    assertNull(sent.get(2).value());
    assertEquals("svc@host", VectorsTest.header(sent.get(2), "belfry-actor"));
    assertNull(sent.get(2).headers().lastHeader("belfry-reason"));
    assertNull(sent.get(3).value());
    assertEquals(2, sent.get(3).headers().toArray().length, "belfry-actor and belfry-reason, once each");
    assertEquals("oncall-ana", VectorsTest.header(sent.get(3), "belfry-actor"));
    assertEquals("customer left", VectorsTest.header(sent.get(3), "belfry-reason"));

    ValidationException e = assertThrows(ValidationException.class,
        () -> p.backfill(Command.Backfill.of("j", now.minusSeconds(60), now.minus(Duration.ofDays(1)))));
    assertEquals("invalid_backfill", e.reason());
    assertThrows(ValidationException.class, () -> p.deleteByTombstone("a#retry#1"));
    assertThrows(ValidationException.class, () -> p.trigger(""));
    assertEquals(4, mp.history().size(), "nothing invalid was sent");
  }

  @Test
  void theAwaitedOutcomeIsTheOneForThisCommandsPartitionAndOffset() throws Exception {
    MockProducer<byte[], byte[]> mp = new MockProducer<>(true, new ByteArraySerializer(), new ByteArraySerializer());
    MockConsumer<byte[], byte[]> results = new MockConsumer<>(OffsetResetStrategy.EARLIEST);
    TopicPartition rp = new TopicPartition("results", 0);
    results.assign(List.of(rp));
    results.updateBeginningOffsets(Map.of(rp, 0L));
    String[] outcomes = {
      // the same job's earlier command, then another id, then this command's (MockProducer: partition 0, offset 0)
      "{\"id\":\"j\",\"op\":\"pause\",\"status\":\"rejected\",\"error\":\"invalid_reason: earlier\",\"partition\":0,\"offset\":7}",
      "{\"id\":\"other\",\"op\":\"pause\",\"status\":\"applied\",\"error\":null,\"partition\":0,\"offset\":0}",
      "{\"id\":\"j\",\"op\":\"pause\",\"status\":\"applied\",\"error\":null,\"partition\":0,\"offset\":0}",
    };
    for (int i = 0; i < outcomes.length; i++) {
      results.addRecord(new ConsumerRecord<>("results", 0, i, "j".getBytes(StandardCharsets.UTF_8),
          outcomes[i].getBytes(StandardCharsets.UTF_8)));
    }
    BelfryProducer p = new BelfryProducer(
        BelfryProducer.Options.of("unused:9092").topics("cmds", "results").actor("svc@host"), mp, results);
    Outcome got = p.pause("j", "maintenance", Duration.ofSeconds(5));
    assertEquals("applied", got.status());
    assertEquals(0, got.offset());
    var sent = mp.history().get(0);
    assertEquals("cmds", sent.topic());
    assertEquals("j", new String(sent.key(), StandardCharsets.UTF_8));
    assertEquals("{\"op\":\"pause\",\"id\":\"j\",\"reason\":\"maintenance\"}", json(sent.value()));
    assertEquals("svc@host", new String(sent.headers().lastHeader("belfry-actor").value(), StandardCharsets.UTF_8));
    assertThrows(OutcomeTimeoutException.class, () -> p.resume("j", Duration.ofMillis(300)));
    assertThrows(ValidationException.class, () -> p.pause("bad#retry#id", null));
    assertEquals(2, mp.history().size());
  }
}
