package dev.belfry.client;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Publishes job commands to {@code belfry.commands} (keyed by job id) and, when asked, awaits
 * their outcomes on {@code belfry.command-results}.
 *
 * <p>belfry answers each command with one record keyed by its id whose value names the
 * command's own {@code partition} and {@code offset} (docs/kafka.md, "Results records"). This
 * producer learns that position from the broker's acknowledgement and returns the outcome with
 * the same id, partition and offset, so an earlier command's outcome for the same job is never
 * taken for this one's; a tombstone is answered the same way, as a {@code delete}. The results
 * reader is assigned at the topic's end before the first command is published (no consumer
 * group, nothing committed). Not thread-safe.
 */
public final class BelfryProducer implements AutoCloseable {
  private final Producer<byte[], byte[]> producer;
  private final Properties base;
  private final String commandsTopic;
  private final String resultsTopic;
  private final Rules rules;
  private final String actor;
  private Consumer<byte[], byte[]> results;
  private final Map<String, Integer> pendingIds = new HashMap<>();
  private final Map<String, Outcome> outcomes = new HashMap<>();

  /** Settings: the broker list, topic names (belfry's defaults) and extra Kafka properties. */
  public record Options(String brokers, String commandsTopic, String resultsTopic, Rules rules, String actor,
      Properties kafka) {
    public static Options of(String brokers) {
      return new Options(brokers, "belfry.commands", "belfry.command-results", Rules.DEFAULT, null, new Properties());
    }

    public Options topics(String commands, String results) {
      return new Options(brokers, commands, results, rules, actor, kafka);
    }

    /** Sent as the {@code belfry-actor} header (the audit trail's who) unless a command has its own. */
    public Options actor(String a) {
      return new Options(brokers, commandsTopic, resultsTopic, rules, a, kafka);
    }

    public Options rules(Rules r) {
      return new Options(brokers, commandsTopic, resultsTopic, r, actor, kafka);
    }
  }

  public BelfryProducer(Options options) {
    this(options, null, null);
  }

  /** With the given clients (tests: Kafka's MockProducer, and a MockConsumer already assigned). */
  BelfryProducer(Options options, Producer<byte[], byte[]> producer, Consumer<byte[], byte[]> results) {
    this.commandsTopic = options.commandsTopic();
    this.resultsTopic = options.resultsTopic();
    this.rules = options.rules();
    this.actor = options.actor();
    this.base = new Properties();
    base.putAll(options.kafka());
    base.put("bootstrap.servers", options.brokers());
    this.producer = producer != null ? producer : newProducer(base);
    this.results = results;
  }

  private static Producer<byte[], byte[]> newProducer(Properties base) {
    Properties p = new Properties();
    p.putAll(base);
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
    return new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
  }

  /** Publishes an upsert (no wait). */
  public RecordMetadata put(Upsert job) {
    return publish(job.validate(rules), deadline(Duration.ofSeconds(30)));
  }

  /** Publishes an upsert and returns its outcome. */
  public Outcome put(Upsert job, Duration timeout) {
    return send(job, timeout);
  }

  public RecordMetadata delete(String id) {
    return publish(new Command.Delete(id).validate(rules), deadline(Duration.ofSeconds(30)));
  }

  public Outcome delete(String id, Duration timeout) {
    return send(new Command.Delete(id), timeout);
  }

  public RecordMetadata pause(String id, String reason) {
    return publish(new Command.Pause(id, reason, null).validate(rules), deadline(Duration.ofSeconds(30)));
  }

  public Outcome pause(String id, String reason, Duration timeout) {
    return send(new Command.Pause(id, reason, null), timeout);
  }

  public RecordMetadata resume(String id) {
    return publish(new Command.Resume(id).validate(rules), deadline(Duration.ofSeconds(30)));
  }

  public Outcome resume(String id, Duration timeout) {
    return send(new Command.Resume(id), timeout);
  }

  /** Fires the job once, now (no wait). */
  public RecordMetadata trigger(String id) {
    return publish(new Command.Trigger(id).validate(rules), deadline(Duration.ofSeconds(30)));
  }

  /** Fires the job once, now; the applied outcome's {@link Outcome#slots()} is 1 (0 for a replay). */
  public Outcome trigger(String id, Duration timeout) {
    return send(new Command.Trigger(id), timeout);
  }

  /** Publishes a backfill (no wait). */
  public RecordMetadata backfill(Command.Backfill backfill) {
    return publish(backfill.validate(rules), deadline(Duration.ofSeconds(30)));
  }

  /** Publishes a backfill; the applied outcome has {@link Outcome#slots()}, {@code covered()} and {@code dryRun()}. */
  public Outcome backfill(Command.Backfill backfill, Duration timeout) {
    return send(backfill, timeout);
  }

  /** Deletes the job by a tombstone (key = id, null value; no wait). */
  public RecordMetadata deleteByTombstone(String id) {
    return publish(new Command.Tombstone(id).validate(rules), deadline(Duration.ofSeconds(30)));
  }

  /** Deletes the job by a tombstone and returns belfry's outcome (op {@code delete}). */
  public Outcome deleteByTombstone(String id, Duration timeout) {
    return send(new Command.Tombstone(id), timeout);
  }

  /**
   * Validates {@code command} (a {@link ValidationException} before anything is sent), publishes
   * it, and returns belfry's outcome, or throws {@link OutcomeTimeoutException} after {@code timeout}.
   */
  public Outcome send(Command command, Duration timeout) {
    command.validate(rules);
    long deadline = deadline(timeout);
    ensureResultsReader(deadline);
    pendingIds.merge(command.id(), 1, Integer::sum);
    try {
      RecordMetadata md = publish(command, deadline);
      return awaitOutcome(command.id(), md.partition(), md.offset(), deadline);
    } finally {
      pendingIds.computeIfPresent(command.id(), (k, n) -> n > 1 ? n - 1 : null);
    }
  }

  private static long deadline(Duration timeout) {
    return System.nanoTime() + timeout.toNanos();
  }

  private RecordMetadata publish(Command command, long deadline) {
    ProducerRecord<byte[], byte[]> record =
        new ProducerRecord<>(commandsTopic, command.id().getBytes(StandardCharsets.UTF_8), command.toJson());
    // The JSON fields win over the headers; a tombstone has no JSON, so its note is in the headers.
    boolean tombstone = command instanceof Command.Tombstone;
    String headerActor = command.actor() == null ? actor : tombstone ? command.actor() : null;
    if (headerActor != null) record.headers().add("belfry-actor", headerActor.getBytes(StandardCharsets.UTF_8));
    if (tombstone && command.reason() != null) {
      record.headers().add("belfry-reason", command.reason().getBytes(StandardCharsets.UTF_8));
    }
    try {
      return producer.send(record).get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      throw new OutcomeTimeoutException("the broker did not acknowledge command " + command.id() + " in time");
    } catch (ExecutionException e) {
      throw new KafkaException("could not publish command " + command.id(), e.getCause());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new KafkaException("interrupted while publishing command " + command.id(), e);
    }
  }

  private void ensureResultsReader(long deadline) {
    if (results != null) return;
    Properties p = new Properties();
    p.putAll(base);
    p.put(ConsumerConfig.GROUP_ID_CONFIG, "belfry-client-results-" + UUID.randomUUID());
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    try {
      List<PartitionInfo> infos = c.partitionsFor(resultsTopic, Duration.ofNanos(Math.max(1, deadline - System.nanoTime())));
      if (infos == null || infos.isEmpty()) {
        throw new OutcomeTimeoutException("results topic " + resultsTopic + " does not exist (run belfry migrate)");
      }
      List<TopicPartition> parts = new ArrayList<>();
      for (PartitionInfo i : infos) parts.add(new TopicPartition(resultsTopic, i.partition()));
      c.assign(parts);
      c.seekToEnd(parts);
      for (TopicPartition tp : parts) c.position(tp); // resolve the end now, before publishing
    } catch (RuntimeException e) {
      c.close();
      throw e;
    }
    results = c;
  }

  private static String outcomeKey(String id, int partition, long offset) {
    return partition + ":" + offset + ":" + id;
  }

  private Outcome awaitOutcome(String id, int partition, long offset, long deadline) {
    String want = outcomeKey(id, partition, offset);
    while (!outcomes.containsKey(want)) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        throw new OutcomeTimeoutException(
            "no outcome for command " + id + " (partition " + partition + ", offset " + offset + ") in time");
      }
      for (ConsumerRecord<byte[], byte[]> r : results.poll(Duration.ofNanos(Math.min(left, 200_000_000L)))) {
        if (r.value() == null) continue;
        Outcome o = Outcome.parse(r.value());
        if (o != null && pendingIds.containsKey(o.id())) outcomes.put(outcomeKey(o.id(), o.partition(), o.offset()), o);
      }
    }
    return outcomes.remove(want);
  }

  @Override
  public void close() {
    producer.close(Duration.ofSeconds(10));
    if (results != null) results.close();
  }
}
