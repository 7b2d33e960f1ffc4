package dev.belfry.client;

import java.time.Duration;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * Remembers keys for a window (and at most {@code maxKeys}, oldest dropped first), so that a
 * repeat delivered within the window is recognised. Not thread-safe.
 */
public final class Deduper<K> {
  private final long windowNanos;
  private final int maxKeys;
  private final LongSupplier clock;
  private final LinkedHashMap<K, Long> seen = new LinkedHashMap<>();

  public Deduper(Duration window, int maxKeys) {
    this(window, maxKeys, System::nanoTime);
  }

  Deduper(Duration window, int maxKeys, LongSupplier nanoClock) {
    this.windowNanos = window.toNanos();
    this.maxKeys = maxKeys;
    this.clock = nanoClock;
  }

  private void expire(long now) {
    Iterator<Map.Entry<K, Long>> it = seen.entrySet().iterator();
    while (it.hasNext()) {
      Map.Entry<K, Long> e = it.next();
      if (now - e.getValue() < windowNanos && seen.size() <= maxKeys) break;
      it.remove();
    }
  }

  /** True iff {@code key} was remembered within the window. */
  public boolean seen(K key) {
    expire(clock.getAsLong());
    return seen.containsKey(key);
  }

  public void remember(K key) {
    long now = clock.getAsLong();
    seen.remove(key);
    seen.put(key, now);
    expire(now);
  }
}
