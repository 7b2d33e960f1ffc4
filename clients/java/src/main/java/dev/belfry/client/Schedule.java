package dev.belfry.client;

/** When a job fires: {@link Every} (an interval), {@link Cron} (a calendar) or {@link Once}. */
public sealed interface Schedule permits Schedule.Every, Schedule.Cron, Schedule.Once {

  /**
   * An interval: {@code executionInterval} ("EVERY_15_MINUTES") and/or {@code intervalMinutes},
   * an optional offset (0 ≤ offset &lt; interval) and [start, end); null means absent. Times
   * are belfry date text ("2026-11-22T13:00:00Z"); {@link IsoTime#format} makes one.
   */
  record Every(String executionInterval, Integer intervalMinutes, Integer offsetMinutes, String start, String end)
      implements Schedule {
    public static Every named(String executionInterval) {
      return new Every(executionInterval, null, null, null, null);
    }

    public static Every minutes(int intervalMinutes) {
      return new Every(null, intervalMinutes, null, null, null);
    }

    public Every withOffset(int offsetMinutes) {
      return new Every(executionInterval, intervalMinutes, offsetMinutes, start, end);
    }

    public Every between(String start, String end) {
      return new Every(executionInterval, intervalMinutes, offsetMinutes, start, end);
    }
  }

  /** A 5-field cron expression (or macro) in an IANA zone (null: UTC), with optional [start, end). */
  record Cron(String expression, String timeZone, String start, String end) implements Schedule {
    public static Cron of(String expression, String timeZone) {
      return new Cron(expression, timeZone, null, null);
    }
  }

  /** A one-shot job: fires once, at its shard's second of {@code runAt}'s minute. */
  record Once(String runAt) implements Schedule {
    public static Once at(java.time.Instant runAt) {
      return new Once(IsoTime.of(runAt, "runAt"));
    }
  }
}
