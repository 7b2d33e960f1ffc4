package dev.belfry.client;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * A job command (README.md, "Command format"): the Kafka key is {@link #id()}, the value
 * {@link #toJson()}. {@link #validate(Rules)} applies belfry's rules client-side.
 */
public sealed interface Command
    permits Upsert, Command.Delete, Command.Pause, Command.Resume, Command.Trigger, Command.Backfill,
        Command.Tombstone {
  ObjectMapper JSON = new ObjectMapper();

  String id();

  String op();

  /** Why (the audit trail's {@code reason}), or null. */
  String reason();

  /** Who (the audit trail's {@code actor}), or null: the producer's {@code Options.actor} is sent instead. */
  String actor();

  /** Throws {@link ValidationException} with belfry's reason for the first rule that fails. */
  Command validate(Rules rules);

  /** The JSON object, fields in a fixed order, absent (null) fields left out. */
  Map<String, Object> toMap();

  /** The Kafka value: compact JSON in UTF-8 (null for a {@link Tombstone}). */
  default byte[] toJson() {
    try {
      return JSON.writeValueAsString(toMap()).getBytes(StandardCharsets.UTF_8);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("cannot encode command " + id() + ": " + e.getMessage(), e);
    }
  }

  /** Deletes the job (and its pending retries). */
  record Delete(String id, String reason, String actor) implements Command {
    public Delete(String id) {
      this(id, null, null);
    }

    public String op() {
      return "delete";
    }

    public Delete validate(Rules rules) {
      IdOnly.validate(id, reason, actor);
      return this;
    }

    public Map<String, Object> toMap() {
      return IdOnly.map(op(), id, reason, actor);
    }
  }

  /** Stops the job firing; {@code reason}/{@code actor} are stored as its pause note. */
  record Pause(String id, String reason, String actor) implements Command {
    public Pause(String id) {
      this(id, null, null);
    }

    public String op() {
      return "pause";
    }

    public Pause validate(Rules rules) {
      IdOnly.validate(id, reason, actor);
      return this;
    }

    public Map<String, Object> toMap() {
      return IdOnly.map(op(), id, reason, actor);
    }
  }

  /** Lets a paused job fire again. */
  record Resume(String id, String reason, String actor) implements Command {
    public Resume(String id) {
      this(id, null, null);
    }

    public String op() {
      return "resume";
    }

    public Resume validate(Rules rules) {
      IdOnly.validate(id, reason, actor);
      return this;
    }

    public Map<String, Object> toMap() {
      return IdOnly.map(op(), id, reason, actor);
    }
  }

  /**
   * Fires the job once, now, with its current topic, key and details, paused or not
   * (docs/manual-fires.md). Its trigger's {@code scheduledFor} is the command's Kafka timestamp
   * and it carries {@code "manual":"trigger"}. The outcome's {@code slots} is 1 (0 for a replay);
   * a job that does not exist is a rejected outcome ({@code not_found}).
   */
  record Trigger(String id, String reason, String actor) implements Command {
    public Trigger(String id) {
      this(id, null, null);
    }

    public String op() {
      return "trigger";
    }

    public Trigger validate(Rules rules) {
      IdOnly.validate(id, reason, actor);
      return this;
    }

    public Map<String, Object> toMap() {
      return IdOnly.map(op(), id, reason, actor);
    }
  }

  /**
   * Fires the job's slots in [{@code from}, {@code to}) by its schedule, each with its original
   * {@code scheduledFor}, oldest first, at most {@code ratePerMinute} (1..10,000; null: belfry's
   * default, 60) a minute; {@code dryRun} only counts (docs/manual-fires.md). Times are belfry
   * date text; {@link #of(String, Instant, Instant)} writes them. {@code to} may not be after the
   * command's timestamp and the range spans at most 366 days. Left to belfry (a rejected
   * outcome): a job that does not exist ({@code not_found}), a one-shot job or a range of more
   * than 10,000 of the job's slots ({@code invalid_backfill}).
   */
  record Backfill(String id, String from, String to, Integer ratePerMinute, Boolean dryRun, String reason, String actor)
      implements Command {
    public static Backfill of(String id, String from, String to) {
      return new Backfill(id, from, to, null, null, null, null);
    }

    public static Backfill of(String id, Instant from, Instant to) {
      return of(id, IsoTime.of(from, "from"), IsoTime.of(to, "to"));
    }

    public Backfill withRate(int perMinute) {
      return new Backfill(id, from, to, perMinute, dryRun, reason, actor);
    }

    public Backfill withDryRun(boolean dry) {
      return new Backfill(id, from, to, ratePerMinute, dry, reason, actor);
    }

    public Backfill withNote(String why, String who) {
      return new Backfill(id, from, to, ratePerMinute, dryRun, why, who);
    }

    public String op() {
      return "backfill";
    }

    /** By the client's clock: the record's timestamp, taken when it is sent, is no earlier. */
    public Backfill validate(Rules rules) {
      return validate(rules, System.currentTimeMillis());
    }

    /** belfry's rules in belfry's order, {@code to} against the record timestamp {@code timestampMs}. */
    public Backfill validate(Rules rules, long timestampMs) {
      IdOnly.validate(id, reason, actor);
      if (from != null) IsoTime.check(from, "from");
      if (to != null) IsoTime.check(to, "to");
      if (from == null || to == null) throw new ValidationException("missing_field", "backfill needs from and to");
      Validation.checkBackfillRange(IsoTime.parse(from).getAsLong(), IsoTime.parse(to).getAsLong(), timestampMs);
      if (ratePerMinute != null) {
        Validation.checkRange(ratePerMinute, "invalid_rate", "ratePerMinute", 1, Validation.MAX_BACKFILL_RATE_PER_MINUTE);
      }
      return this;
    }

    public Map<String, Object> toMap() {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("op", op());
      m.put("id", id);
      m.put("from", from);
      m.put("to", to);
      m.put("ratePerMinute", ratePerMinute);
      m.put("dryRun", dryRun);
      m.put("reason", reason);
      m.put("actor", actor);
      m.values().removeIf(Objects::isNull);
      return m;
    }
  }

  /**
   * Deletes the job by a tombstone: the job id as the Kafka key and a null value, what a
   * log-compacted commands topic keeps. {@code reason} and {@code actor} travel as the
   * {@code belfry-reason} and {@code belfry-actor} headers, the only way for a tombstone. belfry
   * answers it like a delete: an outcome with op {@code delete}, keyed by the id.
   */
  record Tombstone(String id, String reason, String actor) implements Command {
    public Tombstone(String id) {
      this(id, null, null);
    }

    public String op() {
      return "delete";
    }

    public Tombstone validate(Rules rules) {
      IdOnly.validate(id, reason, actor);
      return this;
    }

    /** The delete belfry reads from the key and headers (the record itself has no value). */
    public Map<String, Object> toMap() {
      return IdOnly.map(op(), id, reason, actor);
    }

    /** No value: a tombstone. */
    @Override
    public byte[] toJson() {
      return null;
    }
  }

  /** Shared by the id-only commands. */
  final class IdOnly {
    private IdOnly() {}

    static void validate(String id, String reason, String actor) {
      Validation.checkId(id);
      checkNote(reason, actor);
    }

    static void checkNote(String reason, String actor) {
      if (reason != null) Validation.checkText("invalid_reason", "reason", reason, Validation.MAX_REASON_BYTES);
      if (actor != null) Validation.checkText("invalid_actor", "actor", actor, Validation.MAX_ACTOR_BYTES);
    }

    static Map<String, Object> map(String op, String id, String reason, String actor) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("op", op);
      m.put("id", id);
      if (reason != null) m.put("reason", reason);
      if (actor != null) m.put("actor", actor);
      return m;
    }
  }
}
