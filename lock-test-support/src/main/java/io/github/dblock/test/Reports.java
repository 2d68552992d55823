package io.github.dblock.test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/** Where the test reports ({@link Reliability}, {@link TopologyReport}) are written. */
final class Reports {

	private Reports() {
	}

	/**
	 * Writes {@code markdown} to {@code target/<fileName>} of the module and, when the system property
	 * {@code property} names a path (the Maven profiles that regenerate the docs set it), there too.
	 * @param what the report's name in the line printed for each file written
	 * @throws UncheckedIOException if a file cannot be written
	 */
	static void publish(String what, String markdown, String fileName, String property) {
		write(what, Path.of("target", fileName), markdown);
		String target = System.getProperty(property);
		if (target != null && !target.isBlank() && !target.startsWith("${")) { // an unset Maven property arrives as ${…}
			write(what, Path.of(target.trim()), markdown);
		}
	}

	private static void write(String what, Path path, String markdown) {
		try {
			if (path.getParent() != null) {
				Files.createDirectories(path.getParent());
			}
			Files.writeString(path, markdown, StandardCharsets.UTF_8);
			System.out.println("[lock tests] " + what + " written to " + path.toAbsolutePath().normalize());
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
	}

}
