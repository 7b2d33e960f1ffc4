package dev.belfry.client;

import com.fasterxml.jackson.core.JsonProcessingException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * Creates or replaces a job (an upsert keeps the job's paused flag). Build one with
 * {@link #builder(String)}:
 *
 * <pre>{@code
 * Upsert job = Upsert.builder("shipment-42-poll")
 *     .schedule(Schedule.Every.named("EVERY_15_MINUTES"))
 *     .topic("tracking.poll").key("shipment-42").jobDetails(Map.of("shipmentId", 42))
 *     .build();
 * }</pre>
 */
public record Upsert(
    String id,
    Schedule schedule,
    String topic,
    String key,
    String owner,
    Map<String, String> labels,
    Map<String, ?> jobDetails,
    Integer priority,
    Integer maxRetries,
    RetryBackoff retryBackoff,
    Integer maxFires,
    String reason,
    String actor)
    implements Command {

  /** {@code retryBackoff}: null members take belfry's defaults (60 s, 2, 3600 s). */
  public record RetryBackoff(Integer initialSeconds, Double multiplier, Integer maxSeconds) {}

  public static Builder builder(String id) {
    return new Builder(id);
  }

  @Override
  public String op() {
    return "upsert";
  }

  /** belfry's rules in belfry's order (docs/command-validation.md, "Order of checks"). */
  @Override
  public Upsert validate(Rules rules) {
    Validation.checkId(id);
    Command.IdOnly.checkNote(reason, actor);
    if (schedule instanceof Schedule.Cron c) {
      if (c.start() != null) IsoTime.check(c.start(), "startDateTime");
      if (c.end() != null) IsoTime.check(c.end(), "endDateTime");
      checkStartEnd(c.start(), c.end());
      if (c.expression() == null) throw new ValidationException("invalid_cron", "cron is missing");
      Validation.checkCron(c.expression());
      Validation.checkTimeZone(c.timeZone() == null ? "UTC" : c.timeZone());
    } else if (schedule instanceof Schedule.Once o) {
      if (o.runAt() == null) throw new ValidationException("missing_field", "a one-shot job needs runAt");
      IsoTime.check(o.runAt(), "runAt");
    } else if (schedule instanceof Schedule.Every e) {
      checkInterval(e, rules);
    } else {
      throw new ValidationException("missing_field", "upsert needs a schedule: Every, Cron or Once");
    }
    if (maxFires != null) {
      Validation.checkRange(maxFires, "invalid_max_fires", "maxFires", 1, Validation.MAX_FIRES);
      if (schedule instanceof Schedule.Once) {
        throw new ValidationException("invalid_max_fires", "a one-shot job fires once; it takes no maxFires");
      }
    }
    Validation.checkTopic(topic, rules);
    if (key != null && (Validation.utf8Length(key) > Validation.MAX_KEY_BYTES || key.indexOf('\0') >= 0)) {
      throw new ValidationException("invalid_key", "key is over 1024 bytes or contains NUL");
    }
    if (owner != null) Validation.checkText("invalid_owner", "owner", owner, Validation.MAX_OWNER_BYTES);
    if (priority != null) {
      Validation.checkRange(priority, "invalid_priority", "priority", -Validation.MAX_PRIORITY, Validation.MAX_PRIORITY);
    }
    if (maxRetries != null) Validation.checkRange(maxRetries, "invalid_retries", "maxRetries", 0, Validation.MAX_RETRIES);
    if (retryBackoff != null) checkBackoff(retryBackoff);
    if (labels != null) Validation.checkLabels(labels);
    if (jobDetails != null) {
      if (Validation.containsNul(jobDetails)) {
        throw new ValidationException("invalid_details", "jobDetails contains a NUL character");
      }
      int size;
      try {
        size = Command.JSON.writeValueAsString(jobDetails).getBytes(StandardCharsets.UTF_8).length;
      } catch (JsonProcessingException ex) {
        throw new ValidationException("invalid_details", "jobDetails is not JSON: " + ex.getOriginalMessage());
      }
      if (size > rules.maxDetailsBytes()) {
        throw new ValidationException(
            "details_too_large", "jobDetails is " + size + " bytes minified; the limit is " + rules.maxDetailsBytes());
      }
    }
    return this;
  }

  private static void checkStartEnd(String start, String end) {
    if (start != null && end != null
        && IsoTime.parse(end).getAsLong() <= IsoTime.parse(start).getAsLong()) {
      throw new ValidationException("end_before_start", "endDateTime is not after startDateTime");
    }
  }

  private static void checkInterval(Schedule.Every e, Rules rules) {
    long fromName = -1;
    if (e.executionInterval() != null) {
      fromName = Validation.parseExecutionInterval(e.executionInterval());
      if (fromName < 0) {
        throw new ValidationException(
            "unsupported_interval",
            "executionInterval '" + e.executionInterval()
                + "' is not EVERY_MINUTE, EVERY_<N>_MINUTES, EVERY_HOUR or EVERY_<N>_HOURS");
      }
    }
    if (e.intervalMinutes() != null && e.intervalMinutes() <= 0) {
      throw new ValidationException("unsupported_interval", "intervalMinutes " + e.intervalMinutes() + " is not positive");
    }
    if (fromName < 0 && e.intervalMinutes() == null) {
      throw new ValidationException("missing_field", "upsert needs an interval: executionInterval or intervalMinutes");
    }
    if (fromName >= 0 && e.intervalMinutes() != null && fromName != e.intervalMinutes()) {
      throw new ValidationException(
          "conflicting_interval",
          "executionInterval " + e.executionInterval() + " disagrees with intervalMinutes " + e.intervalMinutes());
    }
    long interval = e.intervalMinutes() != null ? e.intervalMinutes() : fromName;
    if (!rules.intervals().contains((int) interval) || interval > Integer.MAX_VALUE) {
      throw new ValidationException(
          "unsupported_interval", interval + " minutes is not one of the configured intervals " + rules.intervals());
    }
    if (e.offsetMinutes() != null) {
      Validation.checkRange(e.offsetMinutes(), "offset_out_of_range", "offsetMinutes", 0, interval - 1);
    }
    if (e.start() != null) IsoTime.check(e.start(), "startDateTime");
    if (e.end() != null) IsoTime.check(e.end(), "endDateTime");
    checkStartEnd(e.start(), e.end());
  }

  private static void checkBackoff(RetryBackoff b) {
    if (b.initialSeconds() != null) {
      Validation.checkRange(b.initialSeconds(), "invalid_retry_backoff", "initialSeconds", 1, Validation.MAX_BACKOFF_SECONDS);
    }
    if (b.maxSeconds() != null) {
      Validation.checkRange(b.maxSeconds(), "invalid_retry_backoff", "maxSeconds", 1, Validation.MAX_BACKOFF_SECONDS);
    }
    if (b.multiplier() != null && !(b.multiplier() >= 1 && b.multiplier() <= 10)) {
      throw new ValidationException("invalid_retry_backoff", "multiplier " + b.multiplier() + " must be a number in [1, 10]");
    }
    int initial = b.initialSeconds() != null ? b.initialSeconds() : 60;
    int max = b.maxSeconds() != null ? b.maxSeconds() : Math.max(3600, initial); // belfry's default
    if (max < initial) {
      throw new ValidationException("invalid_retry_backoff", "maxSeconds " + max + " is below initialSeconds " + initial);
    }
  }

  @Override
  public Map<String, Object> toMap() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("op", "upsert");
    m.put("id", id);
    if (schedule instanceof Schedule.Every e) {
      m.put("executionInterval", e.executionInterval());
      m.put("intervalMinutes", e.intervalMinutes());
      m.put("offsetMinutes", e.offsetMinutes());
      m.put("startDateTime", e.start());
      m.put("endDateTime", e.end());
    } else if (schedule instanceof Schedule.Cron c) {
      m.put("cron", c.expression());
      m.put("timeZone", c.timeZone());
      m.put("startDateTime", c.start());
      m.put("endDateTime", c.end());
    } else if (schedule instanceof Schedule.Once o) {
      m.put("runAt", o.runAt());
    }
    m.put("topic", topic);
    m.put("key", key);
    m.put("owner", owner);
    m.put("labels", labels);
    m.put("jobDetails", jobDetails);
    m.put("priority", priority);
    m.put("maxRetries", maxRetries);
    if (retryBackoff != null) {
      Map<String, Object> b = new LinkedHashMap<>();
      if (retryBackoff.initialSeconds() != null) b.put("initialSeconds", retryBackoff.initialSeconds());
      if (retryBackoff.multiplier() != null) b.put("multiplier", retryBackoff.multiplier());
      if (retryBackoff.maxSeconds() != null) b.put("maxSeconds", retryBackoff.maxSeconds());
      m.put("retryBackoff", b);
    }
    m.put("maxFires", maxFires);
    m.put("reason", reason);
    m.put("actor", actor);
    m.values().removeIf(Objects::isNull);
    return m;
  }

  /** Builds an {@link Upsert}; only {@code schedule} and {@code topic} are required. */
  public static final class Builder {
    private final String id;
    private Schedule schedule;
    private String topic;
    private String key;
    private String owner;
    private Map<String, String> labels;
    private Map<String, ?> jobDetails;
    private Integer priority;
    private Integer maxRetries;
    private RetryBackoff retryBackoff;
    private Integer maxFires;
    private String reason;
    private String actor;

    private Builder(String id) {
      this.id = id;
    }

    public Builder schedule(Schedule s) { this.schedule = s; return this; }
    public Builder every(String executionInterval) { return schedule(Schedule.Every.named(executionInterval)); }
    public Builder cron(String expression, String timeZone) { return schedule(Schedule.Cron.of(expression, timeZone)); }
    public Builder once(String runAt) { return schedule(new Schedule.Once(runAt)); }
    public Builder topic(String t) { this.topic = t; return this; }
    public Builder key(String k) { this.key = k; return this; }
    public Builder owner(String o) { this.owner = o; return this; }
    public Builder labels(Map<String, String> l) { this.labels = l; return this; }
    public Builder jobDetails(Map<String, ?> d) { this.jobDetails = d; return this; }
    public Builder priority(int p) { this.priority = p; return this; }
    public Builder maxRetries(int n) { this.maxRetries = n; return this; }
    public Builder retryBackoff(RetryBackoff b) { this.retryBackoff = b; return this; }
    public Builder maxFires(int n) { this.maxFires = n; return this; }
    public Builder reason(String r) { this.reason = r; return this; }
    public Builder actor(String a) { this.actor = a; return this; }

    public Upsert build() {
      return new Upsert(id, schedule, topic, key, owner, labels, jobDetails, priority, maxRetries, retryBackoff,
          maxFires, reason, actor);
    }
  }
}
