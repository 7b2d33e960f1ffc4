package dev.belfry.client;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.util.Map;
import java.util.OptionalLong;

/**
 * One trigger (README.md, "Trigger format"): job {@code jobId}'s slot {@code scheduledFor}. A
 * retry has {@code attempt} ≥ 1; a trigger asked for by a command has {@code manual}.
 *
 * @param scheduledFor as belfry wrote it, e.g. {@code 2026-11-22T13:37:32.500Z}
 * @param jobDetails the job's details, as a JSON tree
 */
public record Trigger(
    String jobId,
    String scheduledFor,
    long scheduledForMs,
    int intervalMinutes,
    int attempt,
    String manual,
    JsonNode jobDetails,
    String key,
    String topic,
    int partition,
    long offset) {

  /**
   * (jobId, scheduledFor, attempt): a repeat of a delivery (belfry re-firing a shard-minute
   * after a crash) has the same key; a retry (attempt n) is a new delivery.
   */
  public record DedupeKey(String jobId, long scheduledForMs, int attempt) {}

  public DedupeKey dedupeKey() {
    return new DedupeKey(jobId, scheduledForMs, attempt);
  }

  /** Parses a trigger's value; throws {@link ValidationException} if it is not one. */
  public static Trigger parse(byte[] value, String key, String topic, int partition, long offset) {
    JsonNode d;
    try {
      d = Command.JSON.readTree(value);
    } catch (IOException | RuntimeException e) {
      throw new ValidationException("invalid_json", "trigger value is not JSON: " + e.getMessage());
    }
    if (d == null || !d.isObject()) throw new ValidationException("not_object", "trigger value is not an object");
    JsonNode id = d.get("jobId");
    if (id == null || !id.isTextual() || id.asText().isEmpty()) {
      throw new ValidationException("missing_field", "trigger has no jobId");
    }
    JsonNode sf = d.get("scheduledFor");
    OptionalLong ms = sf != null && sf.isTextual() ? IsoTime.parse(sf.asText()) : OptionalLong.empty();
    if (ms.isEmpty()) throw new ValidationException("invalid_date", "trigger scheduledFor " + sf + " is not a time");
    JsonNode interval = d.path("intervalMinutes");
    JsonNode attempt = d.path("attempt");
    JsonNode details = d.get("jobDetails");
    if ((!interval.isMissingNode() && !interval.isInt()) || (!attempt.isMissingNode() && !attempt.isInt())
        || (details != null && !details.isObject())) {
      throw new ValidationException("wrong_type", "trigger intervalMinutes/attempt/jobDetails have the wrong type");
    }
    JsonNode manual = d.get("manual");
    return new Trigger(id.asText(), sf.asText(), ms.getAsLong(), interval.asInt(0), attempt.asInt(0),
        manual != null && manual.isTextual() ? manual.asText() : null,
        details != null ? details : Command.JSON.createObjectNode(), key, topic, partition, offset);
  }

  /** The job details as a map. */
  @SuppressWarnings("unchecked")
  public Map<String, Object> jobDetailsMap() {
    return Command.JSON.convertValue(jobDetails, Map.class);
  }
}
