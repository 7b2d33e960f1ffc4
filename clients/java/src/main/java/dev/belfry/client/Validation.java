package dev.belfry.client;

import java.nio.charset.StandardCharsets;
import java.time.DateTimeException;
import java.time.ZoneId;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * belfry's command rules, as far as a client can check them (docs/command-validation.md). Each
 * check throws {@link ValidationException} with belfry's reason code.
 */
public final class Validation {
  static final int MAX_ID_BYTES = 255;
  static final int MAX_KEY_BYTES = 1024;
  static final int MAX_OWNER_BYTES = 255;
  static final int MAX_REASON_BYTES = 1024;
  static final int MAX_ACTOR_BYTES = 255;
  static final int MAX_PRIORITY = 1_000_000;
  static final int MAX_RETRIES = 100;
  static final int MAX_BACKOFF_SECONDS = 604_800;
  static final int MAX_FIRES = 100_000;
  static final int MAX_LABELS = 16;
  static final int MAX_LABEL_VALUE_BYTES = 255;
  static final int MAX_CRON_BYTES = 256;
  static final int MAX_TIME_ZONE_BYTES = 64;
  static final int MAX_WORKER_BYTES = 255;
  static final int MAX_ATTEMPT = 1000;
  static final int MAX_BACKFILL_RATE_PER_MINUTE = 10_000;
  static final long MAX_BACKFILL_SPAN_MS = 366L * 24 * 3600 * 1000;
  static final List<String> RESERVED_ID_MARKERS = List.of("#retry#", "#trigger#", "#backfill#");

  private static final Pattern TOPIC = Pattern.compile("[A-Za-z0-9._-]{1,249}");
  private static final Pattern INTERVAL = Pattern.compile("EVERY_(?:(MINUTE|HOUR)|([1-9][0-9]{0,8})_(MINUTES|HOURS))");
  private static final Pattern LABEL_KEY = Pattern.compile("[A-Za-z0-9](?:[A-Za-z0-9._/-]{0,61}[A-Za-z0-9])?");

  private Validation() {}

  static int utf8Length(String s) {
    return s.getBytes(StandardCharsets.UTF_8).length;
  }

  static boolean hasControlChar(String s) {
    return s.chars().anyMatch(c -> c < 0x20 || c == 0x7f);
  }

  private static boolean hasLoneSurrogate(String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (Character.isHighSurrogate(c)) {
        if (i + 1 >= s.length() || !Character.isLowSurrogate(s.charAt(i + 1))) return true;
        i++;
      } else if (Character.isLowSurrogate(c)) {
        return true;
      }
    }
    return false;
  }

  static void checkText(String reason, String what, String s, int maxBytes) {
    if (utf8Length(s) > maxBytes) {
      throw new ValidationException(reason, what + " is " + utf8Length(s) + " bytes; the limit is " + maxBytes);
    }
    if (hasControlChar(s)) throw new ValidationException(reason, what + " contains a control character");
    if (hasLoneSurrogate(s)) throw new ValidationException(reason, what + " is not valid UTF-8 (a lone surrogate)");
  }

  /** 1-255 bytes of UTF-8, no control characters, none of belfry's reserved markers. */
  public static void checkId(String id) {
    if (id == null || id.isEmpty()) throw new ValidationException("missing_id", "id is missing or empty");
    checkText("invalid_id", "id", id, MAX_ID_BYTES);
    for (String marker : RESERVED_ID_MARKERS) {
      if (id.contains(marker)) {
        throw new ValidationException("invalid_id", "id contains '" + marker + "', which belfry reserves");
      }
    }
  }

  /** A valid Kafka topic name, not Kafka-internal ({@code __*}), not one of belfry's own. */
  public static void checkTopic(String topic, Rules rules) {
    if (topic == null) throw new ValidationException("missing_field", "upsert needs a topic");
    if (!TOPIC.matcher(topic).matches() || topic.equals(".") || topic.equals("..")) {
      throw new ValidationException(
          "invalid_topic",
          "topic '" + topic + "' is not a valid Kafka topic name (1-249 characters of [a-zA-Z0-9._-], not . or ..)");
    }
    if (topic.startsWith("__")) throw new ValidationException("forbidden_topic", "topic '" + topic + "' is Kafka-internal");
    if (rules.forbiddenTopics().contains(topic)) {
      throw new ValidationException("forbidden_topic", "topic '" + topic + "' is one of belfry's own topics");
    }
  }

  /** {@code EVERY_MINUTE}, {@code EVERY_<N>_MINUTES}, {@code EVERY_HOUR}, {@code EVERY_<N>_HOURS} in minutes, or -1. */
  public static long parseExecutionInterval(String name) {
    Matcher m = INTERVAL.matcher(name);
    if (!m.matches()) return -1;
    if (m.group(1) != null) return m.group(1).equals("MINUTE") ? 1 : 60;
    long n = Long.parseLong(m.group(2)) * (m.group(3).equals("MINUTES") ? 1 : 60);
    return n <= Integer.MAX_VALUE ? n : -1;
  }

  static void checkRange(long value, String reason, String what, long lo, long hi) {
    if (value < lo || value > hi) {
      throw new ValidationException(reason, what + " " + value + " must be an integer in [" + lo + ", " + hi + "]");
    }
  }

  /**
   * A backfill's range (belfry's rule backfill_range, docs/manual-fires.md): {@code from < to},
   * {@code to} not after the command's timestamp, at most 366 days.
   */
  static void checkBackfillRange(long fromMs, long toMs, long timestampMs) {
    if (fromMs >= toMs) {
      throw new ValidationException(
          "invalid_backfill", "from " + IsoTime.format(fromMs) + " is not before to " + IsoTime.format(toMs));
    }
    if (toMs > timestampMs) {
      throw new ValidationException("invalid_backfill", "to " + IsoTime.format(toMs) + " is after the command's timestamp "
          + IsoTime.format(timestampMs) + ": a backfill fires past slots only");
    }
    if (toMs - fromMs > MAX_BACKFILL_SPAN_MS) {
      throw new ValidationException("invalid_backfill", "from " + IsoTime.format(fromMs) + " to " + IsoTime.format(toMs)
          + " is longer than 366 days");
    }
  }

  // ---- cron (docs/calendar-schedules.md, "Syntax") ----

  private record CronField(String name, int min, int max, int last, List<String> names) {}

  private static final List<CronField> CRON_FIELDS =
      List.of(
          new CronField("minute", 0, 59, 59, List.of()),
          new CronField("hour", 0, 23, 23, List.of()),
          new CronField("day-of-month", 1, 31, 31, List.of()),
          new CronField(
              "month", 1, 12, 12,
              List.of("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")),
          new CronField("day-of-week", 0, 7, 6, List.of("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")));
  private static final List<String> MACROS =
      List.of("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly");
  private static final List<String> MACRO_EXPANSIONS =
      List.of("0 0 1 1 *", "0 0 1 1 *", "0 0 1 * *", "0 0 * * 0", "0 0 * * *", "0 0 * * *", "0 * * * *");
  private static final Pattern CRON_ITEM = Pattern.compile("(\\*|[0-9]+|[A-Za-z]+)(?:-([0-9]+|[A-Za-z]+))?(?:/(.*))?");

  private static int cronValue(String text, CronField f) {
    if (text.chars().allMatch(Character::isDigit)) {
      long v = text.length() > 9 ? Long.MAX_VALUE : Long.parseLong(text);
      if (v < f.min() || v > f.max()) {
        throw new ValidationException("invalid_cron", f.name() + " field: " + text + " is outside " + f.min() + "-" + f.max());
      }
      return (int) v;
    }
    int i = f.names().indexOf(text.toUpperCase(Locale.ROOT));
    if (i < 0) throw new ValidationException("invalid_cron", f.name() + " field: '" + text + "' is not a value of the field");
    return f.min() + i;
  }

  /**
   * The expression's syntax: five fields or a macro; values, names, ranges, steps. Whether it
   * can ever fire ({@code cron_never_fires}) is belfry's to decide.
   */
  public static void checkCron(String expr) {
    if (utf8Length(expr) > MAX_CRON_BYTES) {
      throw new ValidationException("invalid_cron", "cron is " + utf8Length(expr) + " bytes, at most 256 allowed");
    }
    if (expr.chars().anyMatch(c -> !(c == '\t' || (c >= 0x20 && c < 0x7f)))) {
      throw new ValidationException("invalid_cron", "cron has a character other than printable ASCII or tab");
    }
    String trimmed = expr.strip();
    String[] tokens = trimmed.isEmpty() ? new String[0] : trimmed.split("[ \t]+");
    if (tokens.length > 0 && tokens[0].startsWith("@")) {
      if (!MACROS.contains(tokens[0].toLowerCase(Locale.ROOT))) {
        throw new ValidationException("invalid_cron", "unknown macro '" + tokens[0] + "'");
      }
      if (tokens.length > 1) throw new ValidationException("invalid_cron", "unexpected text after " + tokens[0]);
      return;
    }
    if (tokens.length != 5) {
      throw new ValidationException(
          "invalid_cron", "found " + tokens.length + " fields, expected 5 (minute hour day-of-month month day-of-week)");
    }
    for (int i = 0; i < 5; i++) {
      CronField f = CRON_FIELDS.get(i);
      for (String item : tokens[i].split(",", -1)) {
        Matcher m = CRON_ITEM.matcher(item);
        if (item.isEmpty() || !m.matches() || (m.group(1).equals("*") && m.group(2) != null)) {
          throw new ValidationException("invalid_cron", f.name() + " field: '" + item + "' is not a value, range or step");
        }
        if (!m.group(1).equals("*")) {
          int a = cronValue(m.group(1), f);
          if (m.group(2) != null && a > cronValue(m.group(2), f)) {
            throw new ValidationException("invalid_cron", f.name() + " field: range '" + item + "' is reversed");
          }
        }
        String step = m.group(3);
        if (step != null) {
          int span = f.last() - f.min() + 1;
          if (step.isEmpty() || !step.chars().allMatch(Character::isDigit)) {
            throw new ValidationException("invalid_cron", f.name() + " field: the step must be a number");
          }
          long s = step.length() > 9 ? Long.MAX_VALUE : Long.parseLong(step);
          if (s < 1 || s > span) {
            throw new ValidationException("invalid_cron", f.name() + " field: step " + step + " is not in 1-" + span);
          }
        }
      }
    }
  }

  /**
   * The expression as belfry stores and shows it: a macro expanded, the five fields
   * single-spaced, names and case as given.
   */
  public static String normalizeCron(String expr) {
    String trimmed = expr.strip();
    String[] tokens = trimmed.isEmpty() ? new String[0] : trimmed.split("[ \t]+");
    if (tokens.length == 1) {
      int i = MACROS.indexOf(tokens[0].toLowerCase(Locale.ROOT));
      if (i >= 0) return MACRO_EXPANSIONS.get(i);
    }
    return String.join(" ", tokens);
  }

  /** An IANA zone this JVM's tz database knows (belfry checks against its host's). */
  public static void checkTimeZone(String zone) {
    if (zone.isEmpty() || utf8Length(zone) > MAX_TIME_ZONE_BYTES || hasControlChar(zone)) {
      throw new ValidationException("invalid_time_zone", "timeZone '" + zone + "' is not an IANA zone name");
    }
    // Only region ids ("Europe/Berlin") and UTC: ZoneId also takes offsets ("+01:00"), which are
    // not tz database names.
    if (!zone.equals("UTC") && !ZoneId.getAvailableZoneIds().contains(zone)) {
      throw new ValidationException("invalid_time_zone", "timeZone '" + zone + "' is not a zone of the tz database");
    }
    try {
      ZoneId.of(zone);
    } catch (DateTimeException e) {
      throw new ValidationException("invalid_time_zone", "timeZone '" + zone + "' is not a zone of the tz database");
    }
  }

  static void checkLabels(Map<String, String> labels) {
    if (labels.size() > MAX_LABELS) throw new ValidationException("invalid_labels", "more than 16 labels");
    for (Map.Entry<String, String> e : labels.entrySet()) {
      if (e.getKey() == null || !LABEL_KEY.matcher(e.getKey()).matches()) {
        throw new ValidationException(
            "invalid_labels",
            "label key '" + e.getKey() + "' must be 1 to 63 bytes of letters, digits, '.', '_', '-', '/', "
                + "beginning and ending with a letter or digit");
      }
      String v = e.getValue();
      if (v == null) throw new ValidationException("invalid_labels", "label '" + e.getKey() + "' must be a string");
      if (utf8Length(v) > MAX_LABEL_VALUE_BYTES || hasControlChar(v)) {
        throw new ValidationException("invalid_labels", "label '" + e.getKey() + "': value over 255 bytes or with a control character");
      }
    }
  }

  static boolean containsNul(Object value) {
    if (value instanceof String s) return s.indexOf('\0') >= 0;
    if (value instanceof Map<?, ?> m) {
      for (Map.Entry<?, ?> e : m.entrySet()) {
        if (containsNul(String.valueOf(e.getKey())) || containsNul(e.getValue())) return true;
      }
    }
    if (value instanceof Iterable<?> it) {
      for (Object o : it) if (containsNul(o)) return true;
    }
    return false;
  }
}
