package dev.belfry.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Against a running belfry (started by tests/clients/clients_itest.py, which passes its topics
 * and admin URL in BELFRY_IT_* variables): commands applied and rejected through the results
 * topic, a one-shot and an interval job fired, handled by the consumer helper, and the
 * executions recorded by belfry; a manual trigger (its outcome's slots, its trigger marked
 * manual), a backfill dry run (slots, covered, dryRun) and a delete by tombstone, awaited.
 */
@Tag("integration")
class IntegrationTest {
  static String env(String name) {
    String v = System.getenv(name);
    if (v == null || v.isEmpty()) fail(name + " is not set: run tests/clients/clients_itest.py");
    return v;
  }

  @Test
  void putsFiresConsumesAndRecords() throws Exception {
    String brokers = env("BELFRY_IT_BROKERS");
    String triggers = env("BELFRY_IT_TRIGGER_TOPIC");
    String admin = env("BELFRY_IT_ADMIN_URL");
    String run = UUID.randomUUID().toString().substring(0, 8);
    String once = "java-once-" + run;
    String every = "java-every-" + run;
    BelfryProducer.Options po = BelfryProducer.Options.of(brokers)
        .topics(env("BELFRY_IT_COMMANDS_TOPIC"), env("BELFRY_IT_RESULTS_TOPIC")).actor("clients-itest-java");
    try (BelfryProducer producer = new BelfryProducer(po)) {
      Duration wait = Duration.ofSeconds(60);
      Outcome a = producer.put(Upsert.builder(once).schedule(Schedule.Once.at(Instant.now())).topic(triggers)
          .jobDetails(Map.of("lib", "java")).build(), wait);
      assertTrue(a.applied(), a.toString());
      assertEquals("upsert", a.op());
      Outcome b = producer.put(Upsert.builder(every).every("EVERY_MINUTE").topic(triggers).build(), wait);
      assertTrue(b.applied(), b.toString());
      // A command only belfry can refuse: the outcome is matched to it and names the reason.
      Outcome never = producer.put(Upsert.builder("java-never-" + run).cron("0 0 30 2 *", "UTC").topic(triggers).build(), wait);
      assertEquals("rejected", never.status());
      assertEquals("cron_never_fires", never.reason());
      assertTrue(producer.pause(every, "itest", wait).applied());
      assertTrue(producer.resume(every, wait).applied());
      // Fire by hand: one trigger stored, delivered with "manual":"trigger" (below).
      Outcome fired = producer.trigger(every, wait);
      assertTrue(fired.applied(), fired.toString());
      assertEquals("trigger", fired.op());
      assertEquals(1L, fired.slots());
      // A backfill dry run of the last 10 minutes: one slot a minute of a one-minute job, none covered.
      Instant now = Instant.now();
      Outcome counted = producer.backfill(
          Command.Backfill.of(every, now.minus(Duration.ofMinutes(10)), now).withDryRun(true), wait);
      assertTrue(counted.applied(), counted.toString());
      assertEquals(List.of(10L, 0L, true), List.of(counted.slots(), counted.covered(), counted.dryRun()), counted.toString());

      List<Trigger> handled = new ArrayList<>();
      TriggerConsumer.Options co = TriggerConsumer.Options.of(brokers, "clients-itest-java-" + run, List.of(triggers))
          .executionsTopic(env("BELFRY_IT_EXECUTIONS_TOPIC")).worker("java-worker");
      try (TriggerConsumer consumer = new TriggerConsumer(co)) {
        long deadline = System.nanoTime() + Duration.ofSeconds(100).toNanos();
        while (System.nanoTime() < deadline
            && !(handled.stream().anyMatch(t -> t.jobId().equals(once))
                && handled.stream().anyMatch(t -> t.jobId().equals(every) && t.manual() == null)
                && handled.stream().anyMatch(t -> t.jobId().equals(every) && "trigger".equals(t.manual())))) {
          consumer.poll(handled::add, Duration.ofMillis(500));
        }
      }
      Trigger t1 = handled.stream().filter(t -> t.jobId().equals(once)).findFirst().orElse(null);
      Trigger t2 = handled.stream().filter(t -> t.jobId().equals(every) && t.manual() == null).findFirst().orElse(null);
      Trigger manual = handled.stream().filter(t -> t.jobId().equals(every) && "trigger".equals(t.manual()))
          .findFirst().orElse(null);
      assertNotNull(t1, "no trigger of the one-shot job; handled " + handled);
      assertNotNull(t2, "no trigger of the interval job; handled " + handled);
      assertNotNull(manual, "no manual trigger of the interval job; handled " + handled);
      assertEquals(1, manual.intervalMinutes());
      assertEquals(0, t1.intervalMinutes());
      assertEquals("java", t1.jobDetails().get("lib").asText());
      assertEquals(1, t2.intervalMinutes());
      for (Trigger t : List.of(t1, t2)) awaitRecorded(admin, t);
      assertTrue(producer.delete(once, wait).applied());
      Outcome tombstone = producer.deleteByTombstone(every, wait);
      assertTrue(tombstone.applied(), tombstone.toString());
      assertEquals("delete", tombstone.op());
    }
  }

  /** Waits until belfry's admin API lists a succeeded execution of {@code t} by this worker. */
  static void awaitRecorded(String admin, Trigger t) throws Exception {
    HttpClient http = HttpClient.newHttpClient();
    URI uri = URI.create(admin + "/v1/jobs/" + t.jobId() + "/executions?limit=20");
    String last = "";
    for (int i = 0; i < 150; i++) {
      HttpResponse<String> r = http.send(HttpRequest.newBuilder(uri).build(), HttpResponse.BodyHandlers.ofString());
      last = r.body();
      if (r.statusCode() == 200) {
        for (JsonNode e : Command.JSON.readTree(last).get("executions")) {
          if (e.get("status").asText().equals("succeeded") && e.get("worker").asText().equals("java-worker")
              && IsoTime.parse(e.get("scheduledFor").asText()).getAsLong() == t.scheduledForMs()) {
            return;
          }
        }
      }
      Thread.sleep(200);
    }
    fail("belfry did not record the execution of " + t + "; last answer: " + last);
  }
}
