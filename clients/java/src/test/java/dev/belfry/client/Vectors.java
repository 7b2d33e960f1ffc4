package dev.belfry.client;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The shared test vectors (contracts/vectors; the pom passes their directory as the system
 * property belfry.vectors), and a reader that turns a vector's JSON command into the typed
 * command, the way belfry reads it (null and empty dates/keys absent, op defaulting to upsert),
 * and a tombstone (null value) into a {@link Command.Tombstone} of its key and headers.
 */
final class Vectors {
  private Vectors() {}

  static JsonNode load(String name) throws IOException {
    String dir = System.getProperty("belfry.vectors", "../../contracts/vectors");
    return Command.JSON.readTree(Path.of(dir, name).toFile());
  }

  static Rules rules(JsonNode config) {
    List<Integer> intervals = new ArrayList<>();
    config.get("intervals").forEach(n -> intervals.add(n.asInt()));
    Set<String> reserved = new java.util.HashSet<>();
    config.get("reservedTopics").forEach(n -> reserved.add(n.asText()));
    return new Rules(intervals, config.get("maxDetailsBytes").asInt(), reserved);
  }

  private static final Set<String> UPSERT_FIELDS = Set.of("op", "id", "owner", "startDateTime", "endDateTime",
      "executionInterval", "intervalMinutes", "offsetMinutes", "topic", "key", "jobDetails", "priority", "runAt",
      "maxRetries", "retryBackoff", "cron", "timeZone", "reason", "actor", "maxFires", "labels");
  private static final Set<String> OTHER_FIELDS = Set.of("from", "to", "ratePerMinute", "dryRun", "selector");

  /**
   * Whether this client builds the vector's JSON command (not bulk, a tombstone or raw bytes). An
   * upsert or backfill with a selector is expressible: belfry rejects it (invalid_selector).
   */
  static boolean expressible(JsonNode c) {
    JsonNode v = c.get("value");
    if (c.has("valueText") || v == null || !v.isObject()) return false;
    String op = v.path("op").isTextual() ? v.get("op").asText() : "upsert";
    boolean selector = v.has("selector") && !v.get("selector").isNull();
    return !selector || op.equals("upsert") || op.equals("backfill");
  }

  /** Whether the vector is a tombstone: a record with no value. */
  static boolean isTombstone(JsonNode c) {
    return !c.has("valueText") && c.has("value") && c.get("value").isNull();
  }

  /** A tombstone vector as the client's command: its key, and its note from the headers (empty: absent). */
  static Command.Tombstone tombstone(JsonNode c) {
    JsonNode h = c.path("headers");
    String reason = h.path("belfry-reason").asText("");
    String actor = h.path("belfry-actor").asText("");
    return new Command.Tombstone(c.get("key").isNull() ? null : c.get("key").asText(),
        reason.isEmpty() ? null : reason, actor.isEmpty() ? null : actor);
  }

  /** The vector's record timestamp (a backfill's {@code to} may not be after it). */
  static long timestampMs(JsonNode doc, JsonNode c) {
    return (c.has("timestampMs") ? c : doc.get("defaults")).get("timestampMs").asLong();
  }

  /** Validates {@code cmd} as belfry would the vector's record: a backfill against its timestamp. */
  static Command validate(Command cmd, Rules rules, long timestampMs) {
    return cmd instanceof Command.Backfill b ? b.validate(rules, timestampMs) : cmd.validate(rules);
  }

  private static String text(Map<String, JsonNode> d, String field) {
    JsonNode n = d.remove(field);
    if (n == null) return null;
    if (!n.isTextual()) throw new ValidationException("wrong_type", field + " must be a string");
    return n.asText();
  }

  private static Integer integer(Map<String, JsonNode> d, String field, String reason) {
    JsonNode n = d.remove(field);
    if (n == null) return null;
    if (!n.isNumber()) throw new ValidationException("wrong_type", field + " must be a number");
    if (!n.canConvertToInt() || !n.isIntegralNumber()) {
      throw new ValidationException(reason, field + " " + n + " is not an integer in range");
    }
    return n.asInt();
  }

  private static Boolean bool(Map<String, JsonNode> d, String field) {
    JsonNode n = d.remove(field);
    if (n == null) return null;
    if (!n.isBoolean()) throw new ValidationException("wrong_type", field + " must be a boolean");
    return n.asBoolean();
  }

  /** The typed command for a JSON command; throws belfry's reason for what it cannot express. */
  static Command fromJson(JsonNode value) {
    Map<String, JsonNode> d = new LinkedHashMap<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = value.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      if (e.getValue().isNull()) continue;
      if (Set.of("startDateTime", "endDateTime", "runAt", "key").contains(e.getKey()) && e.getValue().isTextual()
          && e.getValue().asText().isEmpty()) {
        continue;
      }
      d.put(e.getKey(), e.getValue());
    }
    for (String k : d.keySet()) {
      if (!UPSERT_FIELDS.contains(k) && !OTHER_FIELDS.contains(k)) {
        throw new ValidationException("unknown_field", "unknown field " + k);
      }
    }
    String op = d.containsKey("op") ? text(d, "op") : "upsert";
    if (!List.of("upsert", "delete", "pause", "resume", "trigger", "backfill").contains(op)) {
      throw new ValidationException("unknown_op", "op " + op + " is not built by this client");
    }
    String id = text(d, "id");
    String reason = text(d, "reason");
    String actor = text(d, "actor");
    switch (op) {
      case "delete":
        return new Command.Delete(id, reason, actor);
      case "pause":
        return new Command.Pause(id, reason, actor);
      case "resume":
        return new Command.Resume(id, reason, actor);
      case "trigger":
        return new Command.Trigger(id, reason, actor);
      default:
        break;
    }
    if (d.containsKey("selector")) throw new ValidationException("invalid_selector", op + " takes no selector");
    if (op.equals("backfill")) {
      // Other fields are ignored, as belfry ignores them.
      return new Command.Backfill(id, text(d, "from"), text(d, "to"), integer(d, "ratePerMinute", "invalid_rate"),
          bool(d, "dryRun"), reason, actor);
    }
    for (String k : OTHER_FIELDS) {
      if (d.containsKey(k)) throw new ValidationException("unknown_field", "upsert takes no " + k);
    }
    Schedule schedule;
    if (d.containsKey("cron")) {
      for (String other : List.of("executionInterval", "intervalMinutes", "offsetMinutes", "runAt")) {
        if (d.containsKey(other)) throw new ValidationException("conflicting_schedule", "a cron job has no " + other);
      }
      schedule = new Schedule.Cron(text(d, "cron"), text(d, "timeZone"), text(d, "startDateTime"), text(d, "endDateTime"));
    } else if (d.containsKey("timeZone")) {
      throw new ValidationException("invalid_time_zone", "timeZone applies only to cron jobs");
    } else if (d.containsKey("runAt") || "ONCE".equals(d.getOrDefault("executionInterval", Command.JSON.nullNode()).asText())) {
      boolean once = d.containsKey("executionInterval") && d.get("executionInterval").asText().equals("ONCE");
      if (!once && (d.containsKey("executionInterval") || d.containsKey("intervalMinutes"))) {
        throw new ValidationException("invalid_one_shot", "runAt cannot be combined with an interval");
      }
      if (once && d.containsKey("intervalMinutes")) {
        throw new ValidationException("conflicting_interval", "ONCE cannot have intervalMinutes");
      }
      if (d.containsKey("offsetMinutes") || d.containsKey("endDateTime")) {
        throw new ValidationException("invalid_one_shot", "a one-shot job has no offsetMinutes or endDateTime");
      }
      if (d.containsKey("runAt") && d.containsKey("startDateTime")) {
        throw new ValidationException("invalid_one_shot", "runAt or startDateTime, not both");
      }
      d.remove("executionInterval");
      String runAt = d.containsKey("runAt") ? text(d, "runAt") : text(d, "startDateTime");
      if (runAt == null) throw new ValidationException("missing_field", "ONCE needs runAt (or startDateTime)");
      schedule = new Schedule.Once(runAt);
    } else {
      schedule = new Schedule.Every(text(d, "executionInterval"), integer(d, "intervalMinutes", "unsupported_interval"),
          integer(d, "offsetMinutes", "offset_out_of_range"), text(d, "startDateTime"), text(d, "endDateTime"));
    }
    Upsert.Builder b = Upsert.builder(id).schedule(schedule).topic(text(d, "topic")).key(text(d, "key"))
        .owner(text(d, "owner")).reason(reason).actor(actor);
    Integer priority = integer(d, "priority", "invalid_priority");
    if (priority != null) b.priority(priority);
    Integer maxRetries = integer(d, "maxRetries", "invalid_retries");
    if (maxRetries != null) b.maxRetries(maxRetries);
    Integer maxFires = integer(d, "maxFires", "invalid_max_fires");
    if (maxFires != null) b.maxFires(maxFires);
    JsonNode rb = d.remove("retryBackoff");
    if (rb != null) {
      if (!rb.isObject()) throw new ValidationException("wrong_type", "retryBackoff must be an object");
      for (Iterator<String> it = rb.fieldNames(); it.hasNext(); ) {
        String k = it.next();
        if (!Set.of("initialSeconds", "multiplier", "maxSeconds").contains(k)) {
          throw new ValidationException("invalid_retry_backoff", "unknown member " + k);
        }
      }
      b.retryBackoff(new Upsert.RetryBackoff(rb.has("initialSeconds") ? rb.get("initialSeconds").asInt() : null,
          rb.has("multiplier") ? rb.get("multiplier").asDouble() : null,
          rb.has("maxSeconds") ? rb.get("maxSeconds").asInt() : null));
    }
    JsonNode labels = d.remove("labels");
    if (labels != null) {
      if (!labels.isObject()) throw new ValidationException("invalid_labels", "labels must be an object");
      Map<String, String> m = new LinkedHashMap<>();
      for (Iterator<Map.Entry<String, JsonNode>> it = labels.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        if (!e.getValue().isTextual()) throw new ValidationException("invalid_labels", "label " + e.getKey() + " must be a string");
        m.put(e.getKey(), e.getValue().asText());
      }
      b.labels(m);
    }
    JsonNode details = d.remove("jobDetails");
    if (details != null) {
      if (!details.isObject()) throw new ValidationException("invalid_details", "jobDetails must be an object");
      @SuppressWarnings("unchecked")
      Map<String, Object> m = Command.JSON.convertValue(details, Map.class);
      b.jobDetails(m);
    }
    return b.build();
  }

  /** A vector's report as the typed report; throws belfry's reason for what it cannot hold. */
  static ExecutionReport reportFromJson(JsonNode v) {
    if (!v.isObject()) throw new ValidationException("not_object", "a report is a JSON object");
    Set<String> known = Set.of("jobId", "scheduledFor", "status", "error", "startedAt", "finishedAt", "worker", "attempt");
    for (Iterator<String> it = v.fieldNames(); it.hasNext(); ) {
      String k = it.next();
      if (!known.contains(k)) throw new ValidationException("unknown_field", "unknown field " + k);
    }
    for (String k : List.of("jobId", "status", "error", "worker")) {
      if (v.hasNonNull(k) && !v.get(k).isTextual()) throw new ValidationException("wrong_type", k + " must be a string");
    }
    JsonNode sf = v.get("scheduledFor");
    String scheduledFor = null;
    if (sf != null && !sf.isNull()) {
      if (sf.isIntegralNumber()) {
        long ms = sf.asLong();
        if (ms < 0 || ms > IsoTime.LAST_INSTANT_MS) throw new ValidationException("invalid_date", "scheduledFor out of range");
        scheduledFor = IsoTime.format(ms);
      } else if (sf.isTextual()) {
        scheduledFor = sf.asText();
      } else {
        throw new ValidationException("wrong_type", "scheduledFor must be text or epoch ms");
      }
    }
    JsonNode attempt = v.get("attempt");
    if (attempt != null && !attempt.isNull() && !attempt.isIntegralNumber()) {
      throw new ValidationException("invalid_attempt", "attempt must be an integer");
    }
    return new ExecutionReport(v.hasNonNull("jobId") ? v.get("jobId").asText() : null, scheduledFor,
        v.hasNonNull("status") ? v.get("status").asText() : null,
        attempt == null || attempt.isNull() ? 0 : attempt.asInt(),
        v.hasNonNull("error") ? v.get("error").asText() : null, time(v.get("startedAt")), time(v.get("finishedAt")),
        v.hasNonNull("worker") ? v.get("worker").asText() : null);
  }

  private static Long time(JsonNode n) {
    if (n == null || n.isNull()) return null;
    if (n.isIntegralNumber()) return n.asLong();
    if (n.isTextual()) {
      return IsoTime.parse(n.asText()).orElseThrow(() -> new ValidationException("invalid_date", n + " is not a time"));
    }
    throw new ValidationException("wrong_type", "a time must be ISO-8601 text or epoch ms");
  }
}
