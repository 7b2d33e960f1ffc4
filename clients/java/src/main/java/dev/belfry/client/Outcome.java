package dev.belfry.client;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * A command's outcome from the results topic: {@code status} is {@code applied} or
 * {@code rejected}; {@code error} is {@code <reason>: <message>} for a rejection. An applied
 * {@code trigger} or {@code backfill} also has {@link #slots()}, a backfill {@link #covered()}
 * and {@link #dryRun()} (README.md, "Outcome and DLQ formats"); {@code raw} is the whole record.
 */
public record Outcome(String id, String op, String status, String error, int partition, long offset, JsonNode raw) {
  public boolean applied() {
    return "applied".equals(status);
  }

  /** The reason code of a rejection, or null. */
  public String reason() {
    if (error == null) return null;
    int colon = error.indexOf(':');
    return colon < 0 ? error : error.substring(0, colon);
  }

  /**
   * An applied trigger's or backfill's triggers stored (a dry run: that it would store; a
   * replayed trigger: 0), or null (other ops, rejections).
   */
  public Long slots() {
    return count("slots");
  }

  /** An applied backfill's slots that an earlier backfill of the job covered (not fired again), or null. */
  public Long covered() {
    return count("covered");
  }

  /** Whether a backfill (or a bulk operation) only counted, or null when the outcome does not say. */
  public Boolean dryRun() {
    JsonNode n = raw == null ? null : raw.get("dryRun");
    return n != null && n.isBoolean() ? n.asBoolean() : null;
  }

  private Long count(String field) {
    JsonNode n = raw == null ? null : raw.get(field);
    return n != null && n.isIntegralNumber() && n.canConvertToLong() ? n.asLong() : null;
  }

  static Outcome parse(byte[] value) {
    try {
      JsonNode v = Command.JSON.readTree(value);
      if (v == null || !v.path("id").isTextual() || !v.path("status").isTextual() || !v.path("partition").isInt()
          || !v.path("offset").canConvertToLong()) {
        return null;
      }
      return new Outcome(v.get("id").asText(), v.path("op").asText(""), v.get("status").asText(),
          v.path("error").isTextual() ? v.get("error").asText() : null, v.get("partition").asInt(),
          v.get("offset").asLong(), v);
    } catch (java.io.IOException e) {
      return null;
    }
  }
}
