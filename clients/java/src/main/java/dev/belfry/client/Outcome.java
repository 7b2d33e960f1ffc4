package dev.belfry.client;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * A command's outcome from the results topic: {@code status} is {@code applied} or
 * {@code rejected}; {@code error} is {@code <reason>: <message>} for a rejection.
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
