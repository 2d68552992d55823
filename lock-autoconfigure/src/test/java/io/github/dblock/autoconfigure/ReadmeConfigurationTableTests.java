package io.github.dblock.autoconfigure;

import java.io.InputStream;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The README's configuration table lists exactly the properties in the generated configuration metadata, with
 * the same defaults, so the documentation cannot drift from the code.
 */
class ReadmeConfigurationTableTests {

	private static final Pattern ROW = Pattern.compile("^\\| `(distributed-lock\\.[a-z0-9.-]+)` \\|([^|]*)\\|",
			Pattern.MULTILINE);

	@Test
	void theReadmeTableMatchesTheGeneratedMetadata() throws Exception {
		Map<String, String> metadata = metadataDefaults();
		Map<String, String> readme = readmeDefaults();
		assertThat(readme.keySet()).as("properties in the README table").isEqualTo(metadata.keySet());
		metadata.forEach((name, value) -> {
			if (value != null) {
				assertThat(readme.get(name)).as("default of %s", name).isEqualTo(value);
			}
		});
	}

	private static Map<String, String> metadataDefaults() throws Exception {
		Map<String, String> defaults = new TreeMap<>();
		for (URL url : Collections.list(ReadmeConfigurationTableTests.class.getClassLoader().getResources("META-INF/spring-configuration-metadata.json"))) {
			try (InputStream in = url.openStream()) {
				JsonNode root = new ObjectMapper().readTree(in);
				for (JsonNode property : root.path("properties")) {
					String name = property.path("name").asString();
					if (name.startsWith("distributed-lock.")) {
						JsonNode value = property.get("defaultValue");
						defaults.put(name, (value == null || value.isNull()) ? null : value.asString());
					}
				}
			}
		}
		return defaults;
	}

	private static Map<String, String> readmeDefaults() throws Exception {
		String readme = Files.readString(Path.of("..", "README.md"), StandardCharsets.UTF_8);
		Map<String, String> defaults = new TreeMap<>();
		Matcher m = ROW.matcher(readme);
		while (m.find()) {
			defaults.put(m.group(1), m.group(2).trim().replace("`", ""));
		}
		return defaults;
	}

}
