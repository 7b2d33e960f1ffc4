package dev.belfry.client;

/** No outcome arrived in time (belfry down or far behind); the command may still apply. */
public final class OutcomeTimeoutException extends RuntimeException {
  public OutcomeTimeoutException(String message) {
    super(message);
  }
}
