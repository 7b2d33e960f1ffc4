package dev.belfry.client;

import java.time.Duration;
import java.util.List;
import java.util.Map;

/** The README's examples, compiled with the tests (ReadmeTest checks they are the README's text). */
final class ReadmeExamples {
  private ReadmeExamples() {}

  static void produce() {
    try (var belfry = new BelfryProducer(BelfryProducer.Options.of("127.0.0.1:59092"))) {
      Outcome outcome = belfry.put(Upsert.builder("shipment-42-poll").every("EVERY_15_MINUTES")
          .topic("tracking.poll").key("shipment-42").jobDetails(Map.of("shipmentId", 42)).build(),
          Duration.ofSeconds(30));
      System.out.println(outcome.status() + " " + outcome.error());   // applied null
      belfry.put(Upsert.builder("report-berlin").cron("0 9 * * MON-FRI", "Europe/Berlin").topic("reports.daily").build());
      belfry.put(Upsert.builder("invoice-77-remind").once("2026-11-22T18:00:00Z").topic("billing.remind").build());
      belfry.pause("shipment-42-poll", "carrier API outage", Duration.ofSeconds(30));
      belfry.resume("shipment-42-poll");
    }
  }

  static void fireByHand() {
    try (var belfry = new BelfryProducer(BelfryProducer.Options.of("127.0.0.1:59092"))) {
      Outcome fired = belfry.trigger("shipment-42-poll", Duration.ofSeconds(30));
      System.out.println(fired.status() + " " + fired.slots());   // applied 1: fires once, now
      Outcome o = belfry.backfill(Command.Backfill.of("shipment-42-poll", "2026-11-20T00:00:00Z",
          "2026-11-21T00:00:00Z").withRate(120).withDryRun(true), Duration.ofSeconds(30));
      System.out.println(o.slots() + " " + o.covered() + " " + o.dryRun());   // 96 0 true
      belfry.deleteByTombstone("shipment-42-poll", Duration.ofSeconds(30));   // key = id, null value
    }
  }

  static void consume() {
    var options = TriggerConsumer.Options.of("127.0.0.1:59092", "tracking-pollers", List.of("tracking.poll"))
        .worker("poller-7");
    try (var consumer = new TriggerConsumer(options)) {
      consumer.run(trigger -> {                 // throw to report the execution as failed
        System.out.println(trigger.jobId() + " " + trigger.scheduledFor() + " " + trigger.jobDetails());
      }, () -> Thread.currentThread().isInterrupted());
    }
  }
}
