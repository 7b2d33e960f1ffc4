package dev.belfry.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The README's Java blocks are ReadmeExamples' method bodies, so they compile; each is ~10 lines. */
class ReadmeTest {
  static String normalize(String code) {
    return code.lines().map(String::strip).filter(l -> !l.isEmpty()).reduce("", (a, b) -> a + b + "\n");
  }

  @Test
  void readmeExamplesCompile() throws Exception {
    String readme = Files.readString(Path.of(System.getProperty("belfry.readme", "README.md")));
    String examples = normalize(Files.readString(Path.of("src/test/java/dev/belfry/client/ReadmeExamples.java")));
    Matcher m = Pattern.compile("```java\n(.*?)```", Pattern.DOTALL).matcher(readme);
    List<String> blocks = new ArrayList<>();
    while (m.find()) blocks.add(m.group(1));
    assertEquals(3, blocks.size()); // produce, consume, fire by hand
    for (String block : blocks) {
      String code = normalize(block);
      assertTrue(examples.contains(code), "README block not in ReadmeExamples.java:\n" + code);
      assertTrue(code.lines().count() <= 12, "a README example is over 12 lines:\n" + code);
    }
  }
}
