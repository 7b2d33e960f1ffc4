package dev.belfry.client;

import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Collection;
import java.util.Deque;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Consumes triggers and hands them to the application one at a time. For each trigger:
 *
 * <ol>
 *   <li>a repeat (its {@link Trigger#dedupeKey()} handled by this consumer within the dedupe
 *       window) is skipped: belfry is at-least-once;
 *   <li>{@code running} is reported (unless turned off), the handler runs, then {@code succeeded}
 *       is reported, or {@code failed} with the exception's message if the handler threw; each
 *       report has {@code startedAt}, {@code finishedAt}, {@code worker} and {@code attempt}, keyed
 *       by the job id, to {@code belfry.executions};
 *   <li>once the reports are acknowledged, the trigger's offset is committed.
 * </ol>
 *
 * A crash before the commit redelivers the trigger. A value that is not a trigger is skipped
 * (and committed): it can never be handled. Not thread-safe: call it from one thread.
 */
public final class TriggerConsumer implements AutoCloseable {
  /** The application's work for one trigger; throwing reports the execution as failed. */
  @FunctionalInterface
  public interface Handler {
    void handle(Trigger trigger) throws Exception;
  }

  /** Settings: brokers, group, trigger topics, the executions topic (belfry's default), worker name. */
  public record Options(String brokers, String groupId, Collection<String> topics, String executionsTopic,
      String worker, Duration dedupeWindow, boolean reportRunning, Properties kafka) {
    public static Options of(String brokers, String groupId, Collection<String> topics) {
      return new Options(brokers, groupId, topics, "belfry.executions", defaultWorker(), Duration.ofHours(1), true,
          new Properties());
    }

    public Options executionsTopic(String t) {
      return new Options(brokers, groupId, topics, t, worker, dedupeWindow, reportRunning, kafka);
    }

    public Options worker(String w) {
      return new Options(brokers, groupId, topics, executionsTopic, w, dedupeWindow, reportRunning, kafka);
    }

    public Options dedupeWindow(Duration d) {
      return new Options(brokers, groupId, topics, executionsTopic, worker, d, reportRunning, kafka);
    }

    public Options reportRunning(boolean r) {
      return new Options(brokers, groupId, topics, executionsTopic, worker, dedupeWindow, r, kafka);
    }
  }

  private final Options options;
  private final Consumer<byte[], byte[]> consumer;
  private final Producer<byte[], byte[]> producer;
  private final Deduper<Trigger.DedupeKey> dedupe;
  private final Deque<ConsumerRecord<byte[], byte[]>> buffered = new ArrayDeque<>();

  public TriggerConsumer(Options options) {
    this(options, newConsumer(options), newProducer(options));
  }

  /** With the given clients (tests: Kafka's MockConsumer and MockProducer). */
  TriggerConsumer(Options options, Consumer<byte[], byte[]> consumer, Producer<byte[], byte[]> producer) {
    this.options = options;
    this.consumer = consumer;
    this.producer = producer;
    consumer.subscribe(options.topics(), new ConsumerRebalanceListener() {
      @Override
      public void onPartitionsRevoked(Collection<TopicPartition> revoked) {
        // Their next owner reads them from the committed offset: do not handle them here too.
        buffered.removeIf(r -> revoked.contains(new TopicPartition(r.topic(), r.partition())));
      }

      @Override
      public void onPartitionsAssigned(Collection<TopicPartition> assigned) {}
    });
    this.dedupe = new Deduper<>(options.dedupeWindow(), 100_000);
  }

  private static Consumer<byte[], byte[]> newConsumer(Options options) {
    Properties c = new Properties();
    c.putAll(options.kafka());
    c.put("bootstrap.servers", options.brokers());
    c.put(ConsumerConfig.GROUP_ID_CONFIG, options.groupId());
    c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    c.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, "1000");
    return new KafkaConsumer<>(c, new ByteArrayDeserializer(), new ByteArrayDeserializer());
  }

  private static Producer<byte[], byte[]> newProducer(Options options) {
    Properties p = new Properties();
    p.putAll(options.kafka());
    p.put("bootstrap.servers", options.brokers());
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
    return new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
  }

  /** Handles at most one trigger; returns it, or null if none came or it was a repeat. */
  public Trigger poll(Handler handler, Duration timeout) {
    if (buffered.isEmpty()) consumer.poll(timeout).forEach(buffered::add);
    ConsumerRecord<byte[], byte[]> r = buffered.poll();
    if (r == null) return null;
    Trigger t;
    try {
      String key = r.key() == null ? null : new String(r.key(), StandardCharsets.UTF_8);
      t = Trigger.parse(r.value(), key, r.topic(), r.partition(), r.offset());
    } catch (ValidationException e) {
      System.getLogger("dev.belfry.client").log(System.Logger.Level.ERROR,
          "not a trigger at " + r.topic() + "[" + r.partition() + "]@" + r.offset() + ": " + e.getMessage());
      commit(r);
      return null;
    }
    if (dedupe.seen(t.dedupeKey())) {
      commit(r);
      return null;
    }
    long started = System.currentTimeMillis();
    if (options.reportRunning()) report(ExecutionReport.of(t, "running", null, started, null, options.worker()));
    ExecutionReport outcome;
    try {
      handler.handle(t);
      outcome = ExecutionReport.of(t, "succeeded", null, started, System.currentTimeMillis(), options.worker());
    } catch (Exception e) {
      String error = e.getMessage() != null ? e.getMessage() : e.getClass().getName();
      outcome = ExecutionReport.of(t, "failed", error, started, System.currentTimeMillis(), options.worker());
    }
    Future<RecordMetadata> sent = report(outcome);
    producer.flush();
    try {
      sent.get(30, TimeUnit.SECONDS);
    } catch (ExecutionException | TimeoutException e) {
      throw new KafkaException("the execution report of " + t.jobId() + " was not acknowledged", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new KafkaException("interrupted", e);
    }
    dedupe.remember(t.dedupeKey());
    commit(r);
    return t;
  }

  /** Calls {@link #poll} until {@code stop} is true. */
  public void run(Handler handler, BooleanSupplier stop) {
    while (!stop.getAsBoolean()) poll(handler, Duration.ofMillis(500));
  }

  private Future<RecordMetadata> report(ExecutionReport report) {
    return producer.send(new ProducerRecord<>(options.executionsTopic(),
        report.jobId().getBytes(StandardCharsets.UTF_8), report.toJson()));
  }

  private void commit(ConsumerRecord<byte[], byte[]> r) {
    try {
      consumer.commitSync(Map.of(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1)));
    } catch (CommitFailedException | RebalanceInProgressException e) {
      // The partition moved to another member: it reads the trigger again (at-least-once, same dedupe key).
      System.getLogger("dev.belfry.client").log(System.Logger.Level.WARNING,
          "could not commit " + r.topic() + "[" + r.partition() + "]@" + r.offset() + " (it will be delivered again): " + e);
    }
  }

  private static String defaultWorker() {
    String host;
    try {
      host = InetAddress.getLocalHost().getHostName();
    } catch (java.io.IOException e) {
      host = "unknown";
    }
    return host + "-" + ManagementFactory.getRuntimeMXBean().getPid();
  }

  @Override
  public void close() {
    producer.close(Duration.ofSeconds(10));
    consumer.close(Duration.ofSeconds(10));
  }
}
