package dev.belfry.client;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A job command (README.md, "Command format"): the Kafka key is {@link #id()}, the value
 * {@link #toJson()}. {@link #validate(Rules)} applies belfry's rules client-side.
 */
public sealed interface Command permits Upsert, Command.Delete, Command.Pause, Command.Resume {
  ObjectMapper JSON = new ObjectMapper();

  String id();

  String op();

  /** Throws {@link ValidationException} with belfry's reason for the first rule that fails. */
  Command validate(Rules rules);

  /** The JSON object, fields in a fixed order, absent (null) fields left out. */
  Map<String, Object> toMap();

  /** The Kafka value: compact JSON in UTF-8. */
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
