package dev.belfry.client;

import com.fasterxml.jackson.core.JsonProcessingException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * One execution outcome report to {@code belfry.executions}, keyed by the job id (README.md,
 * "Execution outcome format"). Times are epoch milliseconds, sent as ISO-8601 text; null
 * members are left out.
 *
 * @param scheduledFor the trigger's scheduledFor text (belfry also takes epoch ms)
 * @param status {@code running}, {@code succeeded} or {@code failed}
 */
public record ExecutionReport(
    String jobId,
    String scheduledFor,
    String status,
    int attempt,
    String error,
    Long startedAtMs,
    Long finishedAtMs,
    String worker) {

  public static final Set<String> STATUSES = Set.of("running", "succeeded", "failed");

  public static ExecutionReport of(Trigger t, String status, String error, Long startedAtMs, Long finishedAtMs,
      String worker) {
    return new ExecutionReport(t.jobId(), t.scheduledFor(), status, t.attempt(), error, startedAtMs, finishedAtMs, worker);
  }

  /** belfry's report rules (docs/executions.md, "Validation"), in its order. */
  public ExecutionReport validate() {
    if (jobId == null || jobId.isEmpty()) throw new ValidationException("missing_field", "report has no jobId");
    if (Validation.utf8Length(jobId) > Validation.MAX_ID_BYTES || Validation.hasControlChar(jobId)) {
      throw new ValidationException("invalid_id", "jobId is over 255 bytes or has a control character");
    }
    if (scheduledFor == null) throw new ValidationException("missing_field", "report has no scheduledFor");
    IsoTime.check(scheduledFor, "scheduledFor");
    if (status == null) throw new ValidationException("missing_field", "report has no status");
    if (!STATUSES.contains(status)) {
      throw new ValidationException("invalid_status", "status '" + status + "' is not one of succeeded, failed, running");
    }
    for (Long t : new Long[] {startedAtMs, finishedAtMs}) {
      if (t != null && (t < 0 || t > IsoTime.LAST_INSTANT_MS)) {
        throw new ValidationException("invalid_date", "time " + t + " is outside years 1970-9999");
      }
    }
    if (worker != null && (Validation.utf8Length(worker) > Validation.MAX_WORKER_BYTES || Validation.hasControlChar(worker))) {
      throw new ValidationException("invalid_worker", "worker is over 255 bytes or has a control character");
    }
    Validation.checkRange(attempt, "invalid_attempt", "attempt", 0, Validation.MAX_ATTEMPT);
    return this;
  }

  public Map<String, Object> toMap() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("jobId", jobId);
    m.put("scheduledFor", scheduledFor);
    m.put("status", status);
    if (error != null) m.put("error", error);
    if (startedAtMs != null) m.put("startedAt", IsoTime.format(startedAtMs));
    if (finishedAtMs != null) m.put("finishedAt", IsoTime.format(finishedAtMs));
    if (worker != null) m.put("worker", worker);
    m.put("attempt", attempt);
    return m;
  }

  public byte[] toJson() {
    try {
      return Command.JSON.writeValueAsString(toMap()).getBytes(StandardCharsets.UTF_8);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }
}
