package dev.belfry.client;

import java.util.List;
import java.util.Set;

/**
 * The parts of belfry's configuration that client-side validation depends on; {@link #DEFAULT}
 * has belfry's defaults. What needs the server (the topic allowlist, whether a cron expression
 * can still fire before its end, the stored job) is left to belfry.
 *
 * @param intervals {@code scheduler.intervals}, in minutes
 * @param maxDetailsBytes {@code commands.max_details_bytes}
 * @param forbiddenTopics belfry's own topics, when known (a job may not fire into them)
 */
public record Rules(List<Integer> intervals, int maxDetailsBytes, Set<String> forbiddenTopics) {
  public static final List<Integer> DEFAULT_INTERVALS =
      List.of(1, 2, 3, 5, 10, 15, 20, 30, 60, 120, 180, 240, 360, 480, 720, 1440);
  public static final Rules DEFAULT = new Rules(DEFAULT_INTERVALS, 65536, Set.of());

  public Rules {
    intervals = List.copyOf(intervals);
    forbiddenTopics = Set.copyOf(forbiddenTopics);
  }
}
