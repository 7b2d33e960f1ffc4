package dev.belfry.client;

/** A command or report that belfry would reject; {@link #reason()} is belfry's reason code. */
public final class ValidationException extends IllegalArgumentException {
  private final String reason;

  public ValidationException(String reason, String message) {
    super(reason + ": " + message);
    this.reason = reason;
  }

  /** belfry's reason code (docs/command-validation.md), e.g. {@code invalid_cron}. */
  public String reason() {
    return reason;
  }
}
