package dev.belfry.client;

import java.time.DateTimeException;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.OptionalLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** belfry's date rule and format (docs/command-validation.md, startDateTime). */
public final class IsoTime {
  /** 9999-12-31T23:59:59.999Z, the last instant belfry accepts. */
  public static final long LAST_INSTANT_MS = 253_402_300_799_999L;

  private static final Pattern ISO =
      Pattern.compile(
          "(\\d{4})-(\\d{2})-(\\d{2})[Tt ](\\d{2}):(\\d{2}):(\\d{2})(?:\\.(\\d{1,9}))?(?:([Zz])|([+-])(\\d{2}):(\\d{2}))?");
  private static final DateTimeFormatter FORMAT =
      DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'").withZone(ZoneOffset.UTC);

  private IsoTime() {}

  /**
   * {@code YYYY-MM-DDTHH:MM:SS[.f{1,9}][Z|±HH:MM]} (UTC when no zone; years 1970-9999; the
   * instant within 1970..9999 UTC) to epoch milliseconds, or empty.
   */
  public static OptionalLong parse(String text) {
    if (text == null) return OptionalLong.empty();
    Matcher m = ISO.matcher(text);
    if (!m.matches()) return OptionalLong.empty();
    int year = Integer.parseInt(m.group(1));
    int month = Integer.parseInt(m.group(2));
    int day = Integer.parseInt(m.group(3));
    int hour = Integer.parseInt(m.group(4));
    int minute = Integer.parseInt(m.group(5));
    int second = Integer.parseInt(m.group(6));
    String frac = m.group(7) == null ? "" : m.group(7);
    frac = (frac.length() > 3 ? frac.substring(0, 3) : frac + "000".substring(frac.length()));
    int offset = 0;
    if (m.group(9) != null) {
      int oh = Integer.parseInt(m.group(10));
      int om = Integer.parseInt(m.group(11));
      if (oh > 23 || om > 59) return OptionalLong.empty();
      offset = (oh * 60 + om) * (m.group(9).equals("-") ? -1 : 1);
    }
    if (year < 1970 || year > 9999 || hour > 23 || minute > 59 || second > 59) return OptionalLong.empty();
    long days;
    try {
      days = LocalDate.of(year, month, day).toEpochDay();
    } catch (DateTimeException e) {
      return OptionalLong.empty();
    }
    long ms = (days * 86400 + hour * 3600L + minute * 60L + second) * 1000 + Integer.parseInt(frac) - offset * 60_000L;
    if (ms < 0 || ms > LAST_INSTANT_MS) return OptionalLong.empty();
    return OptionalLong.of(ms);
  }

  /** belfry's own format, {@code 2026-11-22T13:37:32.500Z}. */
  public static String format(long epochMs) {
    return FORMAT.format(Instant.ofEpochMilli(epochMs));
  }

  /** Checks {@code text} by belfry's rule; returns it. */
  static String check(String text, String what) {
    if (parse(text).isEmpty()) {
      throw new ValidationException(
          "invalid_date",
          what + " '" + text + "' is not a valid UTC time like 2026-11-22T13:00:00Z "
              + "(YYYY-MM-DDTHH:MM:SS[.fff][Z|+HH:MM|-HH:MM], years 1970-9999)");
    }
    return text;
  }

  static String of(Instant t, String what) {
    long ms = t.toEpochMilli();
    if (ms < 0 || ms > LAST_INSTANT_MS) throw new ValidationException("invalid_date", what + " is outside 1970-9999");
    return format(ms);
  }
}
